"""DeepSeek: the automatic on-disk context cache, in 64-token units, writes free."""

from __future__ import annotations

from kcost.pricing.providers import wire
from kcost.pricing.providers.base import CacheRule, Provider

PROVIDER = Provider(
    id="deepseek",
    name="DeepSeek",
    cache="deepseek",
    rule=CacheRule(
        anywhere=True,
        step=64,
        least=64,
        lifetimes=(3600.0,),
        bills_writes=False,
        source="https://api-docs.deepseek.com/guides/kv_cache (automatic, on disk, in 64-token units; unused "
        "entries cleared within hours: an hour here)",
    ),
    usage=wire.OPENAI,
    compare=("deepseek-chat",),
    prices="deepseek.json",
)
