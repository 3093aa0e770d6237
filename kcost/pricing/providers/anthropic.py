"""Anthropic: Claude's explicit prompt cache, hits only at the breakpoints a request wrote.

Source, read 2026-12-04: https://platform.claude.com/docs/en/build-with-claude/prompt-caching (stored copy,
undated; it lists Claude Fable 5.1 and Mythos 5.1). The least cacheable prompt is per model: "512 tokens for
Claude Fable 5.1, Claude Mythos 5.1, Claude Opus 5, Claude Fable 5, and Claude Mythos 5; 2,048 tokens for Claude
Mythos Preview and Claude Opus 4.7; 4,096 tokens for Claude Opus 4.6 and Claude Opus 4.5; 1,024 tokens for Claude
Opus 4.8, Claude Sonnet 5, Claude Sonnet 4.6, Claude Sonnet 4.5, Claude Opus 4.1, Claude Opus 4, and Claude Sonnet
4; 4,096 tokens for Claude Haiku 4.5; 2,048 tokens for Claude Haiku 3.5". "5-minute cache write tokens are 1.25
times the base input tokens price; 1-hour cache write tokens are 2 times ...; Cache read tokens are 0.1 times".
"""

from __future__ import annotations

from kcost.pricing.providers import wire
from kcost.pricing.providers.base import CacheRule, Provider

# Parts of the model ids (`claude-opus-4-6`, `claude-3-5-haiku-20241022`), the first found wins: the longer before
# the shorter they contain.
MINIMUMS = (
    ("fable", 512), ("opus-5", 512), ("mythos-preview", 2048), ("mythos", 512),
    ("opus-4-8", 1024), ("opus-4-7", 2048), ("opus-4-6", 4096), ("opus-4-5", 4096),
    ("haiku-4-5", 4096), ("3-5-haiku", 2048), ("haiku-3-5", 2048), ("3-haiku", 2048),
)  # fmt: skip

PROVIDER = Provider(
    id="anthropic",
    name="Anthropic",
    cache="anthropic",
    rule=CacheRule(
        anywhere=False,
        step=1,
        least=1024,
        minimums=MINIMUMS,
        lifetimes=(300.0, 3600.0),
        bills_writes=True,
        placement="breakpoints: tools and system, the newest message",
        source="https://platform.claude.com/docs/en/build-with-claude/prompt-caching (explicit cache_control "
        "breakpoints, as Claude Code places them: after the tools and system prompt and on the newest message; the "
        "least cacheable prompt per model, 512 to 4,096 tokens, 1,024 where not listed (min=N); 5-minute writes at "
        "1.25x input, 1-hour (ttl=1h) at 2x, reads at 0.1x)",
    ),
    usage=wire.ANTHROPIC,
    compare=("claude-sonnet-4-5",),
    prices="anthropic.json",
)
