"""K3's cache rule fitted to a log's own cached counts: `--cache k3:auto`, and the default bill of a log of K3's own.

Where a log records the cached tokens of the cache kcost models (Kimi's own formats, or any agent's log served by
a Kimi model), those counts are evidence of the rule's parameters, and kcost reads them rather than taking the
published ones as given. Every block size of `kcost.model.k3.FIT_BLOCKS`, with the newest output cached and not, is
run over the session without expiry first: a request after an idle gap that still hit more than half of what
that run gives proves the TTL at least that gap, one that hit no more than half proves it shorter (what stays is
a prefix others keep warm, such as the agent's system prompt). Each candidate is then run at a TTL within those
bounds (the asked one where it lies within them) and scored by its agreement: the requests whose simulated hit
equals the logged cached count, among those with a logged count. The best candidate wins; a tie between
different rules is an ambiguous fit, settled for the default rule where it is among them, else the smallest block.

A log with too few counts (`FIT_MIN_FOLLOW_UPS`), or whose counts come from another provider's cache, is billed
under the default rule, and the bill says why. The default bill fits only a log of K3's own (a Kimi format, every
logged model a Kimi one) and uses the fit only where it is unambiguous; otherwise it says nothing. Pure: no I/O and
no prices (whether a call's model is a Kimi one is billing's to say, as it says for the agreement).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from kcost.cache.model import DEFAULT_OUTPUT_CACHED, FIT_MIN_FOLLOW_UPS, HOUR_WRITES, CacheModel
from kcost.cache.simulator import simulate
from kcost.model.calls import Usage
from kcost.model.frozen import frozen
from kcost.model.k3 import FIT_BLOCKS, HASH_BLOCK
from kcost.model.requests import Request
from kcost.results.bill import CacheFit, FitCandidate

Kimi = Callable[[str | None], bool]  # whether a call logged on this model was served by a Kimi cache


class _Record(Protocol):
    """What the fit reads of a billed call (`kcost.model.session.CallRecord`, which sits above the cache)."""

    @property
    def request(self) -> Request | None: ...
    @property
    def reported(self) -> Usage | None: ...
    @property
    def model(self) -> str | None: ...


class Session(Protocol):
    """What the fit reads of a session (`kcost.model.session.Session`)."""

    @property
    def records(self) -> Sequence[_Record]: ...
    @property
    def requests(self) -> Sequence[Request]: ...
    @property
    def times(self) -> Sequence[float | None]: ...
    @property
    def comparable(self) -> bool: ...
    @property
    def agent(self) -> str: ...
    @property
    def logged_models(self) -> Sequence[str]: ...
    @property
    def cache_keys(self) -> tuple[str | None, ...]: ...


@frozen
class Fitted:
    """The rule a session is billed under, what the bill reports of the fit (None: nothing to say) and its note."""

    model: CacheModel
    fit: CacheFit | None = None
    note: str | None = None


@frozen
class _Candidate:
    model: CacheModel
    agree: int
    bounds: tuple[float | None, float | None]  # the longest gap that still hit, the shortest that missed
    kept: bool  # the asked TTL lies within the bounds (else one within them was chosen)

    @property
    def default(self) -> bool:
        return self.model.block == HASH_BLOCK and self.model.output == DEFAULT_OUTPUT_CACHED

    @property
    def params(self) -> str:
        return f"hash={self.model.block},output={'on' if self.model.output else 'off'}"


def fit(session: Session, cache: CacheModel, kimi: Kimi) -> Fitted:
    """The rule `cache` (`k3:auto`, or the default bill's `fit_own`) bills `session` under."""
    default = replace(cache, auto=False, fit_own=False)
    own = not cache.auto
    if own and not (session.comparable and all(kimi(r.model) for r in session.records)):
        return Fitted(default)  # not K3's own log: the default bill is the published rule, as ever
    logged = _logged(session, kimi)
    why = _unfit(session, logged)
    if why is not None:
        if own:
            return Fitted(default)
        fitted = CacheFit(asked="k3:auto", fitted=False, label=default.label, reason=why, requests=len(logged), agree=0)
        return Fitted(default, fitted, f"k3:auto: billed under the default rule {default.label}: {why}")
    tried = sorted(_candidates(session, default, logged), key=lambda c: (-c.agree, c.model.block, c.model.output))
    best = [c for c in tried if c.agree == tried[0].agree]
    if own and len(best) > 1:
        return Fitted(default)  # an ambiguous fit: the default bill stays the published rule
    chosen = next((c for c in best if c.default), best[0])  # sorted: else the smallest block
    reference = next((c.agree for c in tried if c.default), None)
    n = len(logged)
    reason = None
    if len(best) > 1:
        which = "the default rule" if chosen.default else "the smallest block"
        tied = _listed([c.params for c in best])
        reason = f"an ambiguous fit: {tied} agree on {chosen.agree} of {n} each; {which} among them"
    lo, hi = chosen.bounds
    candidates = [FitCandidate(label=c.model.label, hash_block=c.model.block, output_cached=c.model.output,
                               agree=c.agree) for c in tried]  # fmt: skip
    report = CacheFit(asked="default" if own else "k3:auto", fitted=True, label=chosen.model.label, reason=reason,
                      requests=n, agree=chosen.agree, default_agree=reference, ttl_at_least=lo, ttl_below=hi,
                      candidates=candidates)  # fmt: skip
    what = f"{_what(chosen)} from {n} logged requests: agrees on {chosen.agree} of {n}"
    versus = f" (the default hash={HASH_BLOCK} on {reference})" if reference is not None else ""
    if own:
        note = (f"cache rule fitted to this log of K3's own (k3:auto, the default for one; --cache k3 for the "
                f"published rule): {what}{versus}")  # fmt: skip
    elif reason:
        note = f"k3:auto: {reason}: {what}"
    else:
        note = f"k3:auto fitted {what}{versus}"
    return Fitted(chosen.model, report, note)


def _logged(session: Session, kimi: Kimi) -> list[int]:
    """The billed calls (by index) whose log gives a cached count from a Kimi cache that can be set beside a
    simulated hit."""
    return [i for i, r in enumerate(session.records) if r.request is not None and r.reported is not None
            and r.reported.cached_logged and kimi(r.model)]  # fmt: skip


def _unfit(session: Session, logged: Sequence[int]) -> str | None:
    """Why no rule can be fitted to the session, or None."""
    if not session.requests:
        return "the log holds no prompts to simulate"
    if not logged and any(r.reported is not None and r.reported.cached_logged for r in session.records):
        models = ", ".join(session.logged_models)
        return (f"its cached counts come from another provider's cache ({session.agent} log"
                f"{f' on {models}' if models else ''}): they say nothing of K3's rule")  # fmt: skip
    follow_ups = sum(i > 0 for i in logged)
    if follow_ups < FIT_MIN_FOLLOW_UPS:
        some = (
            f"only {follow_ups} follow-up requests log"
            if follow_ups > 1
            else f"{'one' if follow_ups else 'no'} follow-up request logs"
        )
        return f"{some} a cached count ({FIT_MIN_FOLLOW_UPS} needed to fit)"
    return None


def _candidates(session: Session, default: CacheModel, logged: Sequence[int]) -> list[_Candidate]:
    """Every block size with the newest output cached and not, each at a TTL the idle gaps allow."""
    cached, gaps = {}, {}  # by call: the logged cached count; the idle gap before it, where both times are logged
    times = session.times
    for i in logged:
        reported = session.records[i].reported
        cached[i] = reported.cached if reported is not None else 0
        now, before = times[i], times[i - 1] if i else None
        if now is not None and before is not None:
            gaps[i] = now - before
    when = [r.time for r in session.requests]  # as the simulator sees them, the warm-up's included
    longest = max((b - a for a, b in zip(when, when[1:], strict=False)), default=0.0)
    out = []
    keys = session.cache_keys  # the hits alone are fitted: no switch's misses told apart (`steady` the same)
    for block in FIT_BLOCKS:
        for output in (False, True):
            forever = replace(default, block=block, output=output, ttl=None)
            endless = [o.hit for o in simulate(session.requests, forever, keys, keys)]
            hit_after = [g for i, g in gaps.items() if endless[i] and 2 * cached[i] > endless[i]]
            missed_after = [g for i, g in gaps.items() if endless[i] and 2 * cached[i] <= endless[i]]
            bounds = (_ms(max(hit_after, default=None)), _ms(min(missed_after, default=None)))
            ttl, kept = _ttl(*bounds, default.ttl)
            model = replace(default, block=block, output=output, ttl=ttl)
            hits = endless
            if ttl is not None and longest > ttl:  # an entry can expire: run again
                hits = [o.hit for o in simulate(session.requests, model, keys, keys)]
            out.append(_Candidate(model, sum(hits[i] == cached[i] for i in logged), bounds, kept))
    return out


def _ttl(lo: float | None, hi: float | None, wanted: float | None) -> tuple[float | None, bool]:
    """The TTL a candidate runs at: `wanted` where it lies within the bounds the gaps prove (at least `lo`, below
    `hi`) or is kept an hour or more (1-hour writes are another lifetime than the log's writes had), else the
    shortest the hits prove (0 where nothing hit after any gap); where the gaps contradict each other (a longer
    one hit, a shorter one missed), `wanted`."""
    if wanted is None or wanted >= HOUR_WRITES:
        return wanted, True
    if lo is not None and hi is not None and lo >= hi:
        return wanted, True
    if (lo is None or wanted >= lo) and (hi is None or wanted < hi):
        return wanted, True
    if lo is None:
        return 0.0, False
    whole = float(math.ceil(lo))
    return (whole if hi is None or whole < hi else lo), False


def _what(c: _Candidate) -> str:
    """`hash=256, output=off, ttl between 30 s and 20.5 min (ttl=300 kept)`."""
    m = c.model
    lo, hi = c.bounds
    if lo is not None and hi is not None and lo >= hi:
        ttl = f"the idle gaps bound no ttl (one of {_span(lo)} hit, a shorter one of {_span(hi)} missed)"
    elif lo is not None and hi is not None:
        ttl = f"ttl between {_span(lo)} and {_span(hi)}"
    elif lo is not None:
        ttl = f"ttl at least {_span(lo)}"
    elif hi is not None:
        ttl = f"ttl below {_span(hi)}"
    else:
        ttl = "no idle gap bounds the ttl"
    at = m.label.rpartition("ttl=")[2].partition(",")[0]
    return f"hash={m.block}, output={'on' if m.output else 'off'}, {ttl} (ttl={at} {'kept' if c.kept else 'chosen'})"


def _span(seconds: float) -> str:
    """A duration as a person reads it: `30 s`, `20.5 min`, `2 h`."""
    if seconds < 120:
        return f"{round(seconds, 1):g} s"
    if seconds < 7200:
        return f"{round(seconds / 60, 1):g} min"
    return f"{round(seconds / 3600, 1):g} h"


def _ms(seconds: float | None) -> float | None:
    """A gap to the millisecond, as logs time their calls."""
    return None if seconds is None else round(seconds, 3)


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
