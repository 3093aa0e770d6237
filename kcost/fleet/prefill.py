"""Each cluster's prefill queue and the times to first token it gives, per traffic class
(`docs/design/cache-model.md` section 5).

Each cluster prefills at `prefill_rate` tokens a second (cache hits are free); requests wait first come, first
served. With a budget, the long class (inputs of `long_from` tokens or more) gets at most its share of the rate
while short requests wait, and all of it otherwise. Time to first token = the wait + the prefill of the
request's misses.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Iterable

EXACT_TIMES = 65_536  # times to first token kept exactly, per class; past that, a sketch
SKETCH_ACCURACY = 0.001  # relative error of a sketched percentile


class Percentiles:
    """Times whose nearest-rank percentiles are wanted, in memory that does not grow with their number: kept
    exactly up to `EXACT_TIMES`, then in a log-bucket sketch (DDSketch, Masson, Rim and Lee, VLDB 2019) whose
    percentiles are within `SKETCH_ACCURACY` of the true value, relative. Bucket `i` holds the values in
    (gamma^(i-1), gamma^i], gamma = (1 + a) / (1 - a); its value is 2 gamma^i / (gamma + 1). A merge gives the
    same structure whatever the order of its parts."""

    GAMMA = (1 + SKETCH_ACCURACY) / (1 - SKETCH_ACCURACY)
    LOG_GAMMA = math.log(GAMMA)

    __slots__ = ("buckets", "count", "exact", "zeros")

    def __init__(self) -> None:
        self.count = 0
        self.exact: array[float] | None = array("d")
        self.buckets: dict[int, int] = {}  # in use once `exact` is None
        self.zeros = 0  # values of 0 (or less) once sketched

    def add(self, value: float) -> None:
        self.count += 1
        if self.exact is not None:
            self.exact.append(value)
            if len(self.exact) > EXACT_TIMES:
                self._sketch()
        else:
            self._bucket(value)

    @classmethod
    def merged(cls, parts: Iterable[Percentiles]) -> Percentiles:
        out = cls()
        parts = list(parts)
        for part in parts:
            out.count += part.count
        if out.count <= EXACT_TIMES and all(p.exact is not None for p in parts):
            out.exact = array("d", sorted(x for p in parts for x in p.exact or ()))
            return out
        out.exact = None
        for part in parts:
            for value in part.exact or ():
                out._bucket(value)
            out.zeros += part.zeros
            for key, n in part.buckets.items():
                out.buckets[key] = out.buckets.get(key, 0) + n
        return out

    def percentile(self, q: float) -> float:
        """The nearest-rank percentile `q` (0 to 1); 0.0 for no values."""
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(q * self.count))
        if self.exact is not None:
            return sorted(self.exact)[rank - 1]
        seen = self.zeros
        if rank <= seen:
            return 0.0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if rank <= seen:
                return 2 * self.GAMMA**key / (self.GAMMA + 1)
        raise AssertionError("a rank past the count")  # pragma: no cover

    def _sketch(self) -> None:
        exact, self.exact = self.exact or (), None
        for value in exact:
            self._bucket(value)

    def _bucket(self, value: float) -> None:
        if value <= 0:
            self.zeros += 1
            return
        key = math.ceil(math.log(value) / self.LOG_GAMMA)
        self.buckets[key] = self.buckets.get(key, 0) + 1


def by_class() -> dict[str, Percentiles]:
    return {"short": Percentiles(), "long": Percentiles()}


class Prefill:
    """One cluster's prefill queue: FCFS within a class; with a budget, the long class gets at most its share
    of the rate while short requests wait. Completion times are computed as arrivals come (a fluid model)."""

    def __init__(self, rate: float, long_share: float | None) -> None:
        self.rate = rate
        self.share = long_share
        self.now = 0.0
        self.queues: dict[str, deque[list[float]]] = {"short": deque(), "long": deque()}  # [arrival, work left]
        self.done = by_class()

    def arrive(self, time: float, tokens: int, cls: str) -> None:
        self._advance(time)
        self.queues[cls if self.share is not None else "short"].append([time, tokens / self.rate, cls])  # type: ignore[list-item]

    def finish(self) -> dict[str, Percentiles]:
        self._advance(float("inf"))
        return self.done

    def _rates(self) -> dict[str, float]:
        busy = [c for c, q in self.queues.items() if q]
        if len(busy) == 2 and self.share is not None:
            return {"long": self.share, "short": 1 - self.share}
        return {c: 1.0 for c in busy}

    def _advance(self, until: float) -> None:
        while True:
            rates = self._rates()
            if not rates:
                self.now = max(self.now, until) if until != float("inf") else self.now
                return
            # the next head to finish, in wall-clock seconds, at its share of the rate
            cls, left = min(((c, self.queues[c][0][1] / r) for c, r in rates.items() if r > 0), key=lambda x: x[1])
            if self.now + left > until:
                for c, r in rates.items():
                    self.queues[c][0][1] -= (until - self.now) * r
                self.now = until
                return
            for c, r in rates.items():
                self.queues[c][0][1] -= left * r
            self.now += left
            arrival, _, kind = self.queues[cls].popleft()
            self.done[str(kind)].add(self.now - float(arrival))
