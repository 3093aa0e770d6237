"""Moonshot AI: Kimi K3, the cache kcost is built to model (`k3`: KDA checkpoints over 512-token MLA hash blocks,
with the parameters the README's "Cache models" section describes)."""

from __future__ import annotations

from kcost.model.k3 import HASH_BLOCK
from kcost.pricing.providers import wire
from kcost.pricing.providers.base import CacheRule, Provider

# The public API kept prefixes for at least 300 s and at most 1800 s (`docs/design/formats.md` section 8); 300 s is the
# conservative end: kcost never predicts a hit the API was not observed to give. K3's two cache-write lifetimes
# are 5 minutes and an hour (the price page of 2026-10-15).
LIFETIMES = (300.0, 3600.0)

PROVIDER = Provider(
    id="moonshotai",
    name="Moonshot AI",
    cache="k3",
    # hits only where a KDA checkpoint was kept (turn boundaries, and every N blocks with `every=N`); writes at
    # the published write rates; no source page: kcost's own model, from the team's cache-model notes
    rule=CacheRule(anywhere=False, step=HASH_BLOCK, lifetimes=LIFETIMES, bills_writes=True, source=None),
    usage=wire.OPENAI,
    compare=("kimi-k3", "kimi-k3.1-pro"),
    prices="moonshotai.json",
    short_names=(("kimi-k3", "K3"),),
)
