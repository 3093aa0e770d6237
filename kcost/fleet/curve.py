"""One cluster's prefix cache at every capacity of a curve at once: Mattson's stack pass, with the pool's rules.

Every capacity's pool sees the same KV references: each request touches or puts its full blocks in order whatever
the pool holds (`ClusterCache.serve`: the finds, then the puts of the rest). So there is one recency list of KV
blocks for all of them, and at each capacity the blocks it holds are a prefix of that list (its newest ones): an
entry leaves a pool only from its old end (evicted, or swept past its TTL by an unlimited pool) and enters only
at its new end. Each capacity keeps where its prefix ends (its oldest block), its own checkpoints (which a
request touches or keeps by its hit, so by the capacity) on a list of their own, and its used pages; the two lists
are merged by the tick of their last touch wherever the pool would take its least recently used entry. The block
ids a K3 cluster has seen are, again, a prefix of the same list per capacity (the seen memory is an LRU of the
same references). One hash lookup a block serves every capacity; what is per capacity is a bit a block and the
walk of each prefix's end, as long as the pool's.

Exact, rule for rule, against `ClusterCache` at each capacity, with one exception it reports: a request that
cannot put a block because its own pinned entries fill the pool (a capacity smaller than one request) leaves that
capacity's pool off the shared list; the capacity is then `dropped` and replayed on its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kcost.cache.model import CacheModel, Kind
from kcost.cache.rules import hit_cap, kept_checkpoints
from kcost.fleet.cluster import check_trace_model, seen_memory
from kcost.fleet.pool import EntryKind, pages_for
from kcost.model.k3 import HASH_BLOCK

if TYPE_CHECKING:
    from kcost.fleet.requests import TraceRequest

# a block's node: [id, last used, tick of its last touch, older, newer, KV bits, seen bits, checkpoint bits,
# the request that looked it up, on the list]; bit k: held by capacity k
Node = list[Any]
KEY, LAST, TICK, OLDER, NEWER, KV, SEEN, CK, SERIAL, LINKED = range(10)


class CurveCache:
    """`ClusterCache` at each of `capacities` (pages; None: unlimited) at once; `serve` gives each one's hit."""

    def __init__(
        self, model: CacheModel, capacities: Sequence[int | None], checkpoint_pages: int | None = None
    ) -> None:
        self.model = check_trace_model(model)
        self.capacities = list(capacities)
        n = len(self.capacities)
        self.kv_pages = pages_for(EntryKind.KV)
        self.ckpt_pages = checkpoint_pages or pages_for(EntryKind.CHECKPOINT)
        self.ttl = model.ttl
        self.nodes: dict[int, Node] = {}
        self.oldest: Node | None = None  # the recency list's ends
        self.newest: Node | None = None
        self.tick = 0
        self.serial = 0
        self.live = list(range(n))  # the capacities still on the shared list
        self.dropped: set[int] = set()
        self.used = [0] * n
        self.evictions = [0] * n
        self.end: list[Node | None] = [None] * n  # each capacity's oldest KV block
        self.ckpts: list[OrderedDict[int, list[float]]] = [OrderedDict() for _ in range(n)]  # id -> [last, tick]
        self.seen_on = model.kind is Kind.K3
        memory = [seen_memory(model, c) for c in self.capacities]
        self.seen_limit = [m[0] for m in memory]
        self.seen_window = [m[1] for m in memory]
        self.seen_end: list[Node | None] = [None] * n
        self.seen_count = [0] * n

    # -- the shared list

    def _unlink(self, node: Node) -> None:
        older, newer = node[OLDER], node[NEWER]
        if older is not None:
            older[NEWER] = newer
        else:
            self.oldest = newer
        if newer is not None:
            newer[OLDER] = older
        else:
            self.newest = older
        node[LINKED] = False

    def _to_newest(self, node: Node) -> None:
        """The node moved to the new end; every prefix that ended at it now ends at its newer neighbour."""
        if node[LINKED]:
            if node is self.newest:
                return
            kv, seen = node[KV], node[SEEN]
            if kv or seen:
                newer = node[NEWER]
                for k in self.live:
                    if self.end[k] is node:
                        self.end[k] = newer
                    if self.seen_end[k] is node:
                        self.seen_end[k] = newer
            self._unlink(node)
        node[OLDER], node[NEWER] = self.newest, None
        if self.newest is not None:
            self.newest[NEWER] = node
        else:
            self.oldest = node
        self.newest = node
        node[LINKED] = True

    def _release(self, node: Node) -> None:
        """A node no capacity holds any more leaves the list (and the table, unless a checkpoint or the request
        in flight still names it)."""
        if node[KV] or node[SEEN]:
            return
        if node[LINKED]:
            self._unlink(node)
        if not node[CK] and node[SERIAL] != self.serial:
            del self.nodes[node[KEY]]

    # -- a capacity's pool

    def _oldest_entry(self, k: int, base: int) -> tuple[Node | None, list[float] | None, int]:
        """The least recently used unpinned entry of capacity k: (its KV node or None, its checkpoint or None,
        its checkpoint id); (None, None, 0) when every entry is pinned (touched by the request in flight)."""
        kv = self.end[k]
        if kv is not None and kv[TICK] > base:
            kv = None
        ck: list[float] | None = None
        key = 0
        if self.ckpts[k]:
            key, ck = next(iter(self.ckpts[k].items()))
            if ck[1] > base:
                ck = None
        if kv is not None and ck is not None:
            if ck[1] < kv[TICK]:
                kv = None
            else:
                ck = None
        return kv, ck, key

    def _free(self, k: int, kv: Node | None, ck: list[float] | None, key: int) -> float:
        """One entry out of capacity k's pool; its last use."""
        bit = 1 << k
        if kv is not None:
            self.end[k] = kv[NEWER]
            kv[KV] &= ~bit
            self.used[k] -= self.kv_pages
            self._release(kv)
            return float(kv[LAST])
        assert ck is not None
        del self.ckpts[k][key]
        node = self.nodes[key]
        node[CK] &= ~bit
        self.used[k] -= self.ckpt_pages
        self._release(node)
        return ck[0]

    def _room(self, k: int, pages: int, pinned: int, now: float, base: int) -> bool:
        """`Pool._make_room`: the least recently used unpinned entries evicted until `pages` fit; False (nothing
        evicted) when they cannot."""
        capacity = self.capacities[k]
        assert capacity is not None
        need = self.used[k] + pages - capacity
        if need <= 0:
            return True
        if self.used[k] - pinned < need:
            return False
        oldest_live = now - self.ttl if self.ttl is not None else float("-inf")
        while need > 0:
            kv, ck, key = self._oldest_entry(k, base)
            need -= self.kv_pages if kv is not None else self.ckpt_pages
            if self._free(k, kv, ck, key) >= oldest_live:
                self.evictions[k] += 1
        return True

    def _sweep(self, k: int, now: float, base: int) -> None:
        """`Pool._expire` of an unlimited pool: the entries past their TTL freed, oldest first."""
        assert self.ttl is not None
        oldest_live = now - self.ttl
        while True:
            kv, ck, key = self._oldest_entry(k, base)
            if kv is None and ck is None:
                return
            if (kv[LAST] if kv is not None else ck[0]) >= oldest_live:  # type: ignore[index]
                return
            self._free(k, kv, ck, key)

    def _drop(self, k: int) -> None:
        """Capacity k off the shared list (its pool is replayed on its own): its bits cleared."""
        self.live.remove(k)
        self.dropped.add(k)
        bit = ~(1 << k)
        for node in list(self.nodes.values()):
            node[KV] &= bit
            node[SEEN] &= bit
            node[CK] &= bit
            self._release(node)
        self.end[k] = self.seen_end[k] = None
        self.ckpts[k].clear()

    # -- serving

    def clear(self) -> None:
        """Every capacity's pool emptied (a failed cluster); the seen memory stays, as `Pool.clear` leaves it."""
        for node in list(self.nodes.values()):
            node[KV] = node[CK] = 0
            self._release(node)
        for k in range(len(self.capacities)):
            self.used[k] = 0
            self.end[k] = None
            self.ckpts[k].clear()

    def serve(self, req: TraceRequest) -> list[int]:
        """The hit tokens of one request at each capacity (0 at one dropped); every pool updated."""
        n = len(self.capacities)
        hits = [0] * n
        kind = self.model.kind
        if kind is Kind.NONE:
            return hits
        length, now = req.input, req.time
        full = length // HASH_BLOCK
        cap = hit_cap(length, HASH_BLOCK) // HASH_BLOCK
        step = self.model.block // HASH_BLOCK if kind is Kind.SHARED else 1
        if kind is Kind.SHARED:
            cap = hit_cap(length, self.model.block) // HASH_BLOCK
        self.serial += 1
        base = self.tick
        row = self._row(req.blocks[:full])
        seen, cached = self._found(row, now)
        pinned_ck = [0] * n  # each capacity's checkpoint pages the request holds
        for k in self.live:
            hits[k] = self._checkpoint_hit(k, row, cached[k], cap, step, now, base, pinned_ck)
        swept = [False] * n  # the unlimited pools swept of expired entries during this request
        put = self._put_blocks(row, cached, pinned_ck, swept, now, base)
        if put is None:
            return hits
        live, distinct = put
        tick = base + 2 * (full + 1) + 1
        if kind is not Kind.IDEAL:
            most = 0
            for k in live:
                kept = (
                    kept_checkpoints(cap, cap, hits[k], step)
                    if kind is Kind.SHARED
                    else kept_checkpoints(seen[k], cap, hits[k], self.model.every)
                )
                most = max(most, len(kept))
                self._keep_checkpoints(k, row, kept, full, tick, distinct, pinned_ck, swept, now, base)
            tick += most
        self.tick = tick + 1
        if self.seen_on:
            for k in live:
                self._forget(k, now)
        for k in live:
            hits[k] *= HASH_BLOCK
        return hits

    def _row(self, blocks: Sequence[int]) -> list[Node]:
        """The request's full blocks as nodes of the shared list (new ones made), each marked with its serial."""
        nodes, serial = self.nodes, self.serial
        row: list[Node] = []
        for b in blocks:
            node = nodes.get(b)
            if node is None:
                node = nodes[b] = [b, 0.0, -1, None, None, 0, 0, 0, serial, False]
            else:
                node[SERIAL] = serial
            row.append(node)
        return row

    def _found(self, row: list[Node], now: float) -> tuple[list[int], list[int]]:
        """Per capacity: the leading blocks of the row seen before (where seen memory is kept), and the leading
        blocks cached and alive."""
        n, ttl, full = len(self.capacities), self.ttl, len(row)
        seen = [0] * n
        cached = [0] * n
        for k in self.live:
            bit = 1 << k
            if self.seen_on:
                s = 0
                while s < full and row[s][SEEN] & bit:
                    s += 1
                seen[k] = s
            c = 0
            while c < full and row[c][KV] & bit and not (ttl is not None and now - row[c][LAST] > ttl):
                c += 1
            cached[k] = c
        return seen, cached

    def _checkpoint_hit(self, k: int, row: list[Node], cached: int, cap: int, step: int, now: float, base: int,
                        pinned_ck: list[int]) -> int:  # fmt: skip
        """The blocks capacity k hits of the `cached` it found: all of them (to the cap) under `IDEAL`, else up to
        its last live checkpoint within them (touched, between the last found block and the first put one);
        expired ones freed."""
        usable = min(cached, cap)
        if self.model.kind is Kind.IDEAL:
            return usable
        bit, table, ttl = 1 << k, self.ckpts[k], self.ttl
        for m in range(usable // step * step, 0, -step):
            node = row[m - 1]
            if not node[CK] & bit:
                continue
            entry = table[node[KEY]]
            if ttl is not None and now - entry[0] > ttl:  # `Pool.find`: an expired one is freed
                del table[node[KEY]]
                node[CK] &= ~bit
                self.used[k] -= self.ckpt_pages
                continue
            entry[0], entry[1] = now, base + 2 * cached + 1
            table.move_to_end(node[KEY])
            pinned_ck[k] += self.ckpt_pages
            return m
        return 0

    def _put_blocks(self, row: list[Node], cached: list[int], pinned_ck: list[int], swept: list[bool], now: float,
                    base: int) -> tuple[list[int], int] | None:  # fmt: skip
        """The row's KV blocks, in order, put in every pool that lacks them at once (room made, or the capacity
        dropped where its own pins fill it); the capacities still live and the blocks the request pinned, or
        None where none is left live."""
        live = list(self.live)
        distinct = 0  # KV blocks the request has pinned so far
        for i, node in enumerate(row):
            first = node[TICK] <= base
            puts = self._puts(i, node, live, cached, pinned_ck, swept, distinct, now, base)
            if not self.live:
                return None
            live = list(self.live)
            self.tick = tick = base + 2 * (i + 1)
            self._to_newest(node)
            node[TICK], node[LAST] = tick, now
            for k in puts:
                if k in self.dropped:
                    continue
                if not node[KV] & (1 << k):
                    node[KV] |= 1 << k
                    self.used[k] += self.kv_pages
                if self.end[k] is None:
                    self.end[k] = node
            if self.seen_on:
                self._see(node, live)
            if first:
                distinct += 1
        return live, distinct

    def _puts(self, i: int, node: Node, live: list[int], cached: list[int], pinned_ck: list[int], swept: list[bool],
              distinct: int, now: float, base: int) -> list[int]:  # fmt: skip
        """The capacities block `i` of the row is put in (those that did not find it, with room made)."""
        ttl = self.ttl
        puts = []
        for k in live:
            if i < cached[k]:
                continue  # found: touched below
            held = node[KV] & (1 << k)
            if self.capacities[k] is None:
                # an unlimited pool frees an expired first miss in its find, and sweeps before a new put
                if not held or (i == cached[k] and ttl is not None and now - node[LAST] > ttl):
                    if ttl is not None and not swept[k]:
                        self._sweep(k, now, base)
                        swept[k] = True
                    puts.append(k)
                continue
            if held:
                continue  # a put of an entry there (or one its find freed: the same pages back) touches it
            if not self._room(k, self.kv_pages, distinct * self.kv_pages + pinned_ck[k], now, base):
                self._drop(k)  # its own pins fill the pool: its list is no longer the shared one
                continue
            puts.append(k)
        return puts

    def _see(self, node: Node, live: list[int]) -> None:
        """The block seen by every live capacity (the seen memory's newest)."""
        for k in live:
            bit = 1 << k
            if not node[SEEN] & bit:
                node[SEEN] |= bit
                self.seen_count[k] += 1
                if self.seen_end[k] is None:
                    self.seen_end[k] = node

    def _keep_checkpoints(self, k: int, row: list[Node], kept: Sequence[int], full: int, tick: int, distinct: int,
                          pinned_ck: list[int], swept: list[bool], now: float, base: int) -> None:  # fmt: skip
        """The checkpoints the request keeps at capacity k: touched where held, else put (room made; none past
        the first that finds no room, as the pool puts nothing then)."""
        bit, table, capacity, ttl = 1 << k, self.ckpts[k], self.capacities[k], self.ttl
        for j, m in enumerate(kept):
            if m > full:
                continue
            node = row[m - 1]
            key = node[KEY]
            if node[CK] & bit:
                entry = table[key]
                if entry[1] <= base:
                    pinned_ck[k] += self.ckpt_pages
                entry[0], entry[1] = now, tick + j
                table.move_to_end(key)
                continue
            if capacity is None:
                if ttl is not None and not swept[k]:
                    self._sweep(k, now, base)
                    swept[k] = True
            elif not self._room(k, self.ckpt_pages, distinct * self.kv_pages + pinned_ck[k], now, base):
                break  # no room: the pool is full of pinned entries (as the pool does, nothing put)
            table[key] = [now, tick + j]
            node[CK] |= bit
            self.used[k] += self.ckpt_pages
            pinned_ck[k] += self.ckpt_pages

    def _forget(self, k: int, now: float) -> None:
        """`_Recent.update`'s trimming: the ids seen longest ago past the limit, or before the window."""
        bit, limit, window = 1 << k, self.seen_limit[k], self.seen_window[k]
        while True:
            node = self.seen_end[k]
            if node is None:
                return
            over = limit is not None and self.seen_count[k] > limit
            if not over and not (window is not None and node[LAST] < now - window):
                return
            self.seen_end[k] = node[NEWER]
            node[SEEN] &= ~bit
            self.seen_count[k] -= 1
            self._release(node)
