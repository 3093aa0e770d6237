"""OpenAI: two prompt caches. Models before GPT-5.6: the automatic prefix cache, hits in 128-token increments
on any cached prefix of 1,024 tokens or more, writes free. GPT-5.6 and later (`openai-5.6`): entries only at
breakpoints (by default one, at the end of the newest message), a hit only where a stored breakpoint's prefix
matches exactly (no fallback to a shorter prefix), writes billed at 1.25x input, a 30-minute lifetime.

Sources, read 2026-12-04 (stored copies of the pages; the guide is undated, its text describes GPT-5.6):
- https://developers.openai.com/api/docs/guides/prompt-caching: "Cache writes have no additional fee on models
  before the GPT-5.6 family. For GPT-5.6 models and later model families, cache writes cost 1.25x the uncached input
  token rate ... OpenAI reports writes in cache_write_tokens"; "On these models a cached prefix is matched exactly at
  a breakpoint, without falling back to a shorter unmarked prefix"; the implicit mode: "OpenAI places a breakpoint
  at the end of the newest eligible message". The older guide ("applies only to models before GPT-5.6"): prompts of
  1,024 tokens or more, hits in 128-token increments, entries kept 5 to 10 minutes idle.
- openai-python 3.60.0, `responses/response_create_params.py`, `prompt_cache_options`: "By default, OpenAI
  automatically chooses one implicit cache breakpoint ... The `ttl` defaults to `30m`" (`"30m"` or `"12h"`);
  `response_usage.py`: `input_tokens_details.cache_write_tokens`.
The least cacheable prompt of GPT-5.6 is not in the text read; the earlier models' 1,024 is kept for it.
"""

from __future__ import annotations

from kcost.pricing.providers import wire
from kcost.pricing.providers.base import CacheRule, Provider, Variant

PROVIDER = Provider(
    id="openai",
    name="OpenAI",
    cache="openai",
    rule=CacheRule(
        anywhere=True,
        step=128,
        least=1024,
        lifetimes=(300.0,),
        bills_writes=False,
        source="https://developers.openai.com/api/docs/guides/prompt-caching (models before GPT-5.6: automatic; "
        "prompts of 1,024 tokens or more, hits in 128-token increments; kept 5 to 10 minutes idle; writes free)",
    ),
    usage=wire.OPENAI,
    compare=("gpt-5.1",),
    prices="openai.json",
    variants=(
        Variant(
            cache="openai-5.6",
            models=("gpt-5.6", "gpt-5.7", "gpt-5.8", "gpt-5.9", "gpt-6"),
            rule=CacheRule(
                anywhere=False,
                step=1,
                least=1024,
                lifetimes=(1800.0, 43200.0),
                bills_writes=True,
                turn_start=False,
                placement="breakpoints: the end of the newest message",
                source="https://developers.openai.com/api/docs/guides/prompt-caching (GPT-5.6 and later: one "
                "implicit breakpoint at the end of the newest message; a hit only at a stored breakpoint, no "
                "fallback to a shorter prefix; writes at 1.25x input; kept 30 minutes, ttl=12h on request)",
            ),
        ),
    ),
)
