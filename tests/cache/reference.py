"""The cache rules transcribed directly, for checking `kcost.cache.Simulator`: slow on purpose.

Every prompt is materialised token by token, its blocks are hashed from scratch, and every entry on a prompt's
chain is touched explicitly. `ideal` is the same machinery with one-token blocks and a checkpoint wherever a
block is cached. A session whose calls switch models runs each model's requests in that model's own cache, on
the prompt as a whole (no translation between caches). Tests compare it with the simulator on random sessions;
it is never used for a bill.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator

from kcost.cache.model import CacheModel, Kind
from kcost.model.requests import Request, Span

Token = tuple[int, int]  # (run, offset): a token's identity


class ReferenceCache:
    def __init__(self, model: CacheModel) -> None:
        self.model = model
        self.ideal = model.kind is Kind.IDEAL
        self.block = 1 if self.ideal else model.block
        self._ids: dict[tuple[int, tuple[Token, ...]], int] = {}
        self.block_time: dict[int, float] = {}
        self.ckpt_time: dict[int, float] = {}
        self.prompt: list[Token] = []
        self.tokens_seen: dict[tuple[int, tuple[Token, ...]], int] = {}  # token-level chain, for `shared`
        self.token_time: dict[int, float] = {}

    # chained block ids, computed from scratch for every prompt
    def _chain(self, tokens: list[Token], size: int, ids: dict[tuple[int, tuple[Token, ...]], int]) -> list[int]:
        out: list[int] = []
        prev = -1
        for i in range(0, len(tokens) - size + 1, size):
            key = (prev, tuple(tokens[i : i + size]))
            prev = ids.setdefault(key, len(ids))
            out.append(prev)
        return out

    def _live(self, t: float | None, now: float, ttl: float | None) -> bool:
        return t is not None and (ttl is None or now - t <= ttl)

    def run(self, req: Request, prompt: list[Token] | None = None) -> tuple[int, int, int]:
        """(hit, shared, shared ignoring the TTL) for one request; `prompt`: its whole prompt (else built from the
        previous one this cache saw, as `req` says)."""
        now, ttl = req.time, self.model.ttl
        if prompt is None:
            prompt = self.prompt[: req.keep] + [tok for s in req.append for tok in _tokens(s)]
        self.prompt = prompt
        length = len(self.prompt)
        per_token = self._chain(self.prompt, 1, self.tokens_seen)
        shared = _leading(per_token, lambda i: self._live(self.token_time.get(i), now, ttl))
        shared_any = _leading(per_token, lambda i: i in self.token_time)
        blocks = self._chain(self.prompt, self.block, self._ids)
        if self.model.kind is Kind.NONE:
            hit = 0
        else:
            cached = _leading(blocks, lambda i: self._live(self.block_time.get(i), now, ttl))
            cap = (length - 1) // self.block * self.block
            hit = 0
            for n in range(min(cached * self.block, cap) // self.block, 0, -1):
                key = blocks[n - 1]
                if self.ideal or self._live(self.ckpt_time.get(key), now, ttl):
                    hit = n * self.block
                    break
            self._retain(req, blocks, hit, cap, now)
        self._touch(req, now)
        return hit, shared, shared_any

    def _retain(self, req: Request, blocks: list[int], hit: int, cap: int, now: float) -> None:
        if self.ideal:
            return
        h = self.block
        wanted = {min(req.turn_start // h * h, cap), cap}
        if self.model.every:
            step = self.model.every * h
            wanted.update(range((hit // step + 1) * step, cap + 1, step))
        for b in wanted:
            if b > hit:
                self.ckpt_time[blocks[b // h - 1]] = now

    def _touch(self, req: Request, now: float) -> None:
        """Every entry on the request's chain is used now: its blocks, and the checkpoints between them."""
        path = list(self.prompt)
        if self.model.output and self.model.kind is not Kind.NONE:
            path += [tok for s in req.output for tok in _tokens(s)]
            if not self.ideal:
                end = len(path) // self.block * self.block
                blocks = self._chain(path, self.block, self._ids)
                if end > (len(self.prompt) - 1) // self.block * self.block and end:
                    self.ckpt_time[blocks[end // self.block - 1]] = now
        for i in self._chain(path, 1, self.tokens_seen):
            self.token_time[i] = now
        for i in self._chain(path, self.block, self._ids):
            self.block_time[i] = now
            if i in self.ckpt_time:  # alive: used again now; expired: gone, not revived by passing over it
                if self._live(self.ckpt_time[i], now, self.model.ttl):
                    self.ckpt_time[i] = now
                else:
                    del self.ckpt_time[i]


def reference_run(
    requests: Iterable[Request], model: CacheModel, caches: Iterable[Hashable] | None = None
) -> Iterator[tuple[int, int, int]]:
    """(hit, shared, shared ignoring the TTL) of every billed request; `caches`: the cache each runs in (every
    key named: one cache per key, each seeing only its own requests)."""
    requests = list(requests)
    keys = list(caches) if caches is not None else [None] * len(requests)
    by_key: dict[Hashable, ReferenceCache] = {}
    prompt: list[Token] = []
    for req, key in zip(requests, keys, strict=True):
        prompt = prompt[: req.keep] + [tok for s in req.append for tok in _tokens(s)]
        cache = by_key.get(key) or by_key.setdefault(key, ReferenceCache(model))
        result = cache.run(req, list(prompt))
        if req.billed:
            yield result


def _tokens(span: Span) -> Iterator[Token]:
    return ((span.seg, span.start + i) for i in range(span.length))


def _leading(ids: list[int], ok: object) -> int:
    n = 0
    for i in ids:
        if not ok(i):  # type: ignore[operator]
            break
        n += 1
    return n
