"""Google: Gemini's implicit cache, automatic, its least prompt set per model generation, writes free."""

from __future__ import annotations

from kcost.pricing.providers.base import CacheRule, Provider

PROVIDER = Provider(
    id="google",
    name="Google",
    cache="gemini",
    rule=CacheRule(
        anywhere=True,
        step=1,
        least=2048,
        # Gemini 2.5 and earlier 2.x: 2,048; Gemini 3 and later: 4,096 (the first part found wins)
        minimums=(("gemini-2.", 2048), ("gemini", 4096)),
        lifetimes=(300.0,),
        bills_writes=False,
        source="https://ai.google.dev/gemini-api/docs/caching (implicit caching: at least 2,048 tokens on Gemini "
        "2.5, 4,096 on Gemini 3 and later (min=4096), in its table of 2026-10-13; its lifetime is not published)",
    ),
    usage=None,  # kcost reads no Gemini logs
    compare=(),
    prices="google.json",
)
