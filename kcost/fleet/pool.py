"""The unified paged pool: MLA KV blocks and KDA checkpoints in pages of one size, with one allocator.

Every entry occupies whole pages and carries a type tag; a read of the wrong kind raises (the seed lesson's
zero-overhead sanity check, made loud). Entries are evicted least-recently-used; an entry pinned by the
request in flight is never evicted; an entry unused for longer than the TTL is gone. Sizes are the K3 figures
of `docs/design/cache-model.md` section 1, and settable. An entry is a small list, `[kind, key, pages, last used,
pins]`, and is its own handle.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from enum import Enum
from typing import Any

from kcost.model.k3 import HASH_BLOCK, KDA_CHECKPOINT_BYTES, MLA_BYTES_PER_TOKEN, PAGE_BYTES

Entry = list[Any]  # [kind, key, pages, last used, pins]
KIND, KEY, PAGES, LAST, PINS = range(5)


class EntryKind(str, Enum):
    KV = "mla-kv"
    CHECKPOINT = "kda-checkpoint"


class PoolTypeError(RuntimeError):
    """A page was read as the wrong kind of entry: the pool's layouts differ, so this is always a bug."""


def pages_for(kind: EntryKind, page_bytes: int = PAGE_BYTES, checkpoint_bytes: int = KDA_CHECKPOINT_BYTES) -> int:
    """Pages one entry of `kind` takes: a KV block fills one; a checkpoint, about 64 (as much as 32,500 tokens)."""
    size = HASH_BLOCK * MLA_BYTES_PER_TOKEN if kind is EntryKind.KV else checkpoint_bytes
    return max(1, math.ceil(size / page_bytes))


class Pool:
    """Entries by kind and key, in pages; `capacity` in pages (None: unlimited, nothing is ever evicted)."""

    def __init__(self, capacity: int | None, ttl: float | None) -> None:
        self.capacity = capacity
        self.ttl = ttl
        self.used = 0
        self.evictions = 0
        self.entries: dict[EntryKind, dict[int, Entry]] = {EntryKind.KV: {}, EntryKind.CHECKPOINT: {}}
        # least recently used first, keyed 2 x key (+1 for a checkpoint): no tuple built per touch; kept for an
        # unlimited pool with a TTL too, whose expired entries are freed from its old end as time goes on
        self._lru: OrderedDict[int, Entry] | None = OrderedDict() if capacity is not None or ttl is not None else None
        self._sweep = capacity is None and ttl is not None

    def find(self, kind: EntryKind, key: int, now: float) -> Entry | None:
        """The live entry, touched; None if it is absent or expired (an expired one is freed)."""
        entry = self.entries[kind].get(key)
        if entry is None:
            return None
        if self.ttl is not None and now - entry[LAST] > self.ttl:
            self._free(entry)
            return None
        entry[LAST] = now
        if self._lru is not None:
            self._lru.move_to_end(2 * key + (kind is EntryKind.CHECKPOINT))
        return entry

    def read(self, entry: Entry, kind: EntryKind) -> int:
        """The key an entry holds, checked against the kind the caller expects."""
        if entry[KIND] is not kind:
            raise PoolTypeError(f"an entry holding {entry[KIND].value} read as {kind.value}")
        return int(entry[KEY])

    def put(self, kind: EntryKind, key: int, pages: int, now: float) -> Entry | None:
        """A new entry, pinned (one already there is touched and pinned instead: the request just computed it
        again); None when it cannot fit without evicting a pinned one."""
        table = self.entries[kind]
        entry = table.get(key)
        if entry is not None:
            entry[LAST] = now
            entry[PINS] += 1
            if self._lru is not None:
                self._lru.move_to_end(2 * key + (kind is EntryKind.CHECKPOINT))
            return entry
        if self._sweep:
            self._expire(now)
        if self.capacity is not None and self.used + pages > self.capacity and not self._make_room(pages, now):
            return None
        entry = [kind, key, pages, now, 1]
        table[key] = entry
        if self._lru is not None:
            self._lru[2 * key + (kind is EntryKind.CHECKPOINT)] = entry
        self.used += pages
        return entry

    def clear(self) -> None:
        """Everything gone (a failed cluster), pinned entries too."""
        for table in self.entries.values():
            table.clear()
        if self._lru is not None:
            self._lru.clear()
        self.used = 0

    def _make_room(self, pages: int, now: float) -> bool:
        """Evict the least recently used unpinned entries until `pages` fit; False if they cannot. Entries past
        their TTL are freed, not counted as evictions."""
        assert self.capacity is not None and self._lru is not None
        need = self.used + pages - self.capacity
        victims = []
        for entry in self._lru.values():  # oldest first; the request in flight pins the newest
            if need <= 0:
                break
            if entry[PINS] == 0:
                victims.append(entry)
                need -= entry[PAGES]
        if need > 0:
            return False
        oldest_live = now - self.ttl if self.ttl is not None else float("-inf")
        for entry in victims:
            self._free(entry)
            if entry[LAST] >= oldest_live:
                self.evictions += 1
        return True

    def _expire(self, now: float) -> None:
        """Free the entries unused for longer than the TTL, oldest first (an unlimited pool: memory stays bounded
        by what the TTL keeps alive, not by everything the trace ever held)."""
        assert self._lru is not None and self.ttl is not None
        oldest_live = now - self.ttl
        lru = self._lru
        while lru:
            entry = next(iter(lru.values()))
            if entry[LAST] >= oldest_live or entry[PINS]:
                break
            self._free(entry)

    def _free(self, entry: Entry) -> None:
        kind, key = entry[KIND], entry[KEY]
        del self.entries[kind][key]
        if self._lru is not None:
            del self._lru[2 * key + (kind is EntryKind.CHECKPOINT)]
        self.used -= entry[PAGES]
