"""OpenAI: the automatic prefix cache, hits in 128-token increments, writes free."""

from __future__ import annotations

from kcost.pricing.providers import wire
from kcost.pricing.providers.base import CacheRule, Provider

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
        source="https://platform.openai.com/docs/guides/prompt-caching (automatic; prompts of 1,024 tokens or "
        "more, hits in 128-token increments; kept 5 to 10 minutes idle)",
    ),
    usage=wire.OPENAI,
    compare=("gpt-5.1",),
    prices="openai.json",
)
