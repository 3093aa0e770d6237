"""DeepSeek: the on-disk context cache, writes free. Before V4: any cached prefix, in 64-token units. V4 (and
V4.1: `deepseek-v4-*`, `deepseek-flash`; `deepseek-v4`): cache prefix units, each hit whole or not at all, saved
at the end of each user input (the prompt), at the end of each answer, and at a prefix two requests were found
to share.

Source, read 2026-12-04: https://api-docs.deepseek.com/guides/kv_cache (stored copy, (c) 2026): "Each cached
prefix is an independent, complete unit. A subsequent request can only hit the cache if it fully matches a cache
prefix unit"; "Each request will produce two cache prefix units at the end position of the user input and the end
position of the model output"; "When the system detects a common prefix across multiple requests, it will persist
that common prefix as an independent cache prefix unit"; units also "at fixed token intervals" for long inputs or
outputs (the interval is not published: `every=N` blocks sets one); entries cleared "usually within a few hours to a
few days" once unused (an hour here, the least kcost assumes). The 64-token unit of the earlier models is from
https://api-docs.deepseek.com/news/news0802 (2024), which the current page no longer states.
"""

from __future__ import annotations

from kcost.pricing.providers import wire
from kcost.pricing.providers.base import CacheRule, Provider, Variant

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
        source="https://api-docs.deepseek.com/news/news0802 (models before V4: automatic, on disk, in 64-token "
        "units; unused entries cleared within hours: an hour here)",
    ),
    usage=wire.OPENAI,
    compare=("deepseek-chat",),
    prices="deepseek.json",
    variants=(
        Variant(
            cache="deepseek-v4",
            models=("deepseek-v4", "deepseek-flash", "deepseek-pro"),
            rule=CacheRule(
                anywhere=False,
                step=1,
                lifetimes=(3600.0,),
                bills_writes=False,
                turn_start=False,
                junctions=True,
                output=True,
                placement="prefix units: the end of each prompt and of each answer, and common prefixes",
                source="https://api-docs.deepseek.com/guides/kv_cache (V4: a hit needs a whole cache prefix unit; "
                "units at the end of each user input and each answer, at detected common prefixes and at fixed "
                "intervals; unused entries cleared within hours: an hour here)",
            ),
        ),
    ),
)
