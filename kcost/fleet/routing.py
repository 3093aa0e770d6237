"""Cache affinity with failover (`docs/design/cache-model.md` section 5).

Each session (a trace without session ids: each chain of shared prefixes, keyed by its first `AFFINITY_BLOCKS`
blocks) is pinned by consistent hashing, a ring with virtual nodes, to a primary cluster and a distinct
secondary: the next other cluster clockwise from the primary's virtual node, so the secondaries of one cluster's
sessions spread over the ring. The naive baseline takes the ring successor. A cluster down from T1 to T2 loses
its cache; its sessions go to their first fallback that is up, which re-prefills from scratch, and come back
after T2.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from kcost.fleet.requests import TraceRequest
from kcost.model.k3 import HASH_BLOCK

AFFINITY_BLOCKS = 4  # a trace's session key: its first 2,048 tokens (system prompt and opening turn)
VIRTUAL_NODES = 64


def _hash(text: str) -> int:
    """A key's place on the ring. A session id may hold a lone surrogate (valid JSON, `"\\ud800"`): it is
    hashed as the code point it is (UTF-8 with surrogates passed), the same in both engines."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import hashlib

    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


class Ring:
    """Consistent hashing with virtual nodes: a primary and a distinct secondary for every key."""

    def __init__(self, clusters: int, vnodes: int = VIRTUAL_NODES) -> None:
        points = sorted((_hash(f"cluster-{c}/vnode-{v}"), c) for c in range(clusters) for v in range(vnodes))
        self.positions = [p for p, _ in points]
        self.owners = [c for _, c in points]
        self.clusters = clusters

    def place(self, key: str, how: str = "consistent") -> tuple[int, int]:
        """(primary, secondary) of a key."""
        primary, fallbacks = self.route(key, how)
        return primary, next(fallbacks, primary)

    def route(self, key: str, how: str = "consistent") -> tuple[int, Iterator[int]]:
        """The primary, and the other clusters in the order a session falls back to them: clockwise from the
        primary's virtual node (consistent), or the primary's successors (the naive ring)."""
        i = bisect.bisect(self.positions, _hash(key)) % len(self.positions)
        primary = self.owners[i]
        if how == "successor":
            return primary, ((primary + k) % self.clusters for k in range(1, self.clusters))

        def clockwise() -> Iterator[int]:
            seen = {primary}
            for k in range(1, len(self.owners)):
                owner = self.owners[(i + k) % len(self.owners)]
                if owner not in seen:
                    seen.add(owner)
                    yield owner

        return primary, clockwise()


def session_key(req: TraceRequest) -> str:
    """The session id, or for a trace without one the id of its `AFFINITY_BLOCKS`-th full block (or its last
    full block, or for a request shorter than one block its only, unshared one)."""
    if req.session is not None:
        return req.session
    full = req.input // HASH_BLOCK
    return str(req.blocks[max(0, min(full, AFFINITY_BLOCKS) - 1)])
