"""Anthropic: Claude's explicit prompt cache, hits only at the breakpoints a request wrote."""

from __future__ import annotations

from kcost.pricing.providers import wire
from kcost.pricing.providers.base import CacheRule, Provider

PROVIDER = Provider(
    id="anthropic",
    name="Anthropic",
    cache="anthropic",
    rule=CacheRule(
        anywhere=False,
        step=1,
        least=1024,
        minimums=(("haiku", 2048),),
        lifetimes=(300.0, 3600.0),
        bills_writes=True,
        placement="breakpoints: tools and system, the newest message",
        source="https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching (explicit cache_control "
        "breakpoints, as Claude Code places them: after the tools and system prompt and on the newest message; at "
        "least 1,024 tokens (2,048 on Haiku: min=2048); 5-minute writes at 1.25x input, 1-hour (ttl=1h) at 2x, "
        "reads at 0.1x)",
    ),
    usage=wire.ANTHROPIC,
    compare=("claude-sonnet-4-5",),
    prices="anthropic.json",
)
