"""One cluster's prefix cache serving trace requests: 512-token blocks in a paged pool of finite capacity.

A trace request carries its blocks' chained hash ids (the last, partial block has its own id and is never
shareable). The rules are the session simulator's (`docs/design/cache-model.md` sections 2 to 4), on blocks:

- `k3`: the hit ends at the deepest block boundary whose blocks are all cached and that holds a live KDA
  checkpoint, at most `floor((L-1)/512)` blocks. A request retains checkpoints at the start of its newest
  turn (the end of the prefix it shares with earlier requests: its leading blocks seen before) and at the
  end of its prompt (capped the same way), plus every `every` blocks it computed;
- `ideal`: the hit is every cached leading block, capped the same way;
- `shared:S`: the hit ends on a multiple of S tokens (an approximation on 512-token blocks: S must be one);
- `none`: no hit.

Entries live in a `Pool`: KV blocks a page each, a checkpoint as many pages as its bytes take; the blocks and
checkpoints a request uses are pinned while it runs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kcost.cache.model import CacheModel, Kind
from kcost.cache.rules import hit_cap, kept_checkpoints
from kcost.errors import InputError
from kcost.fleet.pool import PINS, EntryKind, Pool, pages_for
from kcost.model.k3 import HASH_BLOCK

if TYPE_CHECKING:
    from kcost.fleet.requests import TraceRequest

SEEN_SECONDS = 3600.0  # the least time an unlimited pool remembers the block ids it has seen


class _Recent:
    """Block ids requests carried, kept while they are recent: seen within the TTL (when there is one) and, with a
    `limit`, among the `limit` most recently seen. Memory is bounded by what a window of the trace holds."""

    def __init__(self, limit: int | None, ttl: float | None) -> None:
        self.limit = limit
        self.ttl = ttl
        self._members: OrderedDict[int, float] = OrderedDict()  # id -> last seen, oldest first

    def __contains__(self, item: int) -> bool:
        return item in self._members

    def update(self, items: Iterable[int], now: float) -> None:
        """Add or refresh every item, seen at `now`; forget those no longer recent."""
        members = self._members
        for item in items:
            members[item] = now
            members.move_to_end(item)
        if self.limit is not None:
            while len(members) > self.limit:
                members.popitem(last=False)
        if self.ttl is not None:
            oldest = now - self.ttl
            while members and next(iter(members.values())) < oldest:
                members.popitem(last=False)


def seen_memory(model: CacheModel, capacity_pages: int | None) -> tuple[int | None, float | None]:
    """How many block ids a cluster remembers having seen, and for how many seconds (None: no limit)."""
    if capacity_pages is not None:
        return max(4 * capacity_pages, 65_536), None
    return None, None if model.ttl is None else max(4 * model.ttl, SEEN_SECONDS)


def check_trace_model(model: CacheModel) -> CacheModel:
    """`model` if a trace can be replayed under it (its blocks are 512 tokens); else an `InputError`."""
    if model.kind is Kind.SHARED and model.block % HASH_BLOCK:
        raise InputError(f"a trace's blocks are {HASH_BLOCK} tokens: shared:{model.block} is not a multiple",
                         field="cache")  # fmt: skip
    if model.kind not in (Kind.K3, Kind.SHARED, Kind.IDEAL, Kind.NONE):
        raise InputError(f"{model.kind.value}'s cache rule is simulated for sessions, not traces",
                         field="cache", hint="k3, shared:S, ideal or none")  # fmt: skip
    if model.mtp:
        raise InputError("k3:mtp=on is simulated for sessions, not traces", field="cache", hint="k3")
    if model.kind is Kind.K3 and model.block != HASH_BLOCK:
        raise InputError(f"a trace's blocks are {HASH_BLOCK} tokens: k3:hash={model.block} cannot be simulated",
                         field="cache")  # fmt: skip
    return model


class ClusterCache:
    def __init__(self, model: CacheModel, capacity_pages: int | None, checkpoint_pages: int | None = None) -> None:
        self.model = check_trace_model(model)
        self.pool = Pool(capacity_pages, model.ttl)
        self.kv_pages = pages_for(EntryKind.KV)
        self.ckpt_pages = checkpoint_pages or pages_for(EntryKind.CHECKPOINT)
        # block ids requests carried ("seen before": where a request's newest turn starts), remembered as a
        # server keeps metadata longer than the KV it describes: four pools' worth with a finite pool, four TTLs
        # (an hour at least) with an unlimited one, every id with neither: memory stays bounded on a trace of any
        # length
        self.seen = _Recent(*seen_memory(model, capacity_pages))

    def serve(self, req: TraceRequest) -> int:
        """The hit tokens of one request; the cache updated as serving it leaves it."""
        kind = self.model.kind
        blocks, length, now = req.blocks, req.input, req.time
        full = length // HASH_BLOCK
        cap = hit_cap(length, HASH_BLOCK) // HASH_BLOCK  # blocks that may hit
        if kind is Kind.NONE:
            return 0
        seen = 0
        if kind is Kind.K3:  # only K3 keeps a checkpoint where the newest turn starts
            known = self.seen
            while seen < full and blocks[seen] in known:
                seen += 1
            known.update(blocks[:full], now)  # all of them: a recent-only memory keeps the hot ones
        pool = self.pool
        find, pinned = pool.find, []
        cached = 0
        while cached < full:
            entry = find(EntryKind.KV, blocks[cached], now)
            if entry is None:
                break
            entry[PINS] += 1
            pinned.append(entry)
            cached += 1
        # `shared:S`: one block size for both caches, so a checkpoint can sit only on an S boundary
        step = self.model.block // HASH_BLOCK if kind is Kind.SHARED else 1
        if kind is Kind.SHARED:
            cap = hit_cap(length, self.model.block) // HASH_BLOCK
        usable = min(cached, cap)
        if kind is Kind.IDEAL:
            hit = usable
        else:
            hit = 0
            checkpoints = pool.entries[EntryKind.CHECKPOINT]
            for n in range(usable // step * step, 0, -step):
                if blocks[n - 1] in checkpoints and (entry := find(EntryKind.CHECKPOINT, blocks[n - 1], now)):
                    pool.read(entry, EntryKind.CHECKPOINT)
                    entry[PINS] += 1
                    pinned.append(entry)
                    hit = n
                    break
        put, stored = pool.put, cached  # leading blocks of this request in the pool
        for i in range(cached, full):  # the blocks this request computed
            entry = put(EntryKind.KV, blocks[i], self.kv_pages, now)
            if entry is None:
                break  # no room even after evicting everything unpinned
            pinned.append(entry)
            stored += 1
        if kind is not Kind.IDEAL:
            # `shared:S` keeps one on every S boundary it computed
            kept = (
                kept_checkpoints(cap, cap, hit, step)
                if kind is Kind.SHARED
                else kept_checkpoints(seen, cap, hit, self.model.every)
            )
            for n in kept:
                if n <= stored:
                    entry = put(EntryKind.CHECKPOINT, blocks[n - 1], self.ckpt_pages, now)
                    if entry is None:
                        break  # no room: the pool is full of pinned entries
                    pinned.append(entry)
        for entry in pinned:
            entry[PINS] -= 1
        return hit * HASH_BLOCK
