"""A session's bill kept running: each call built, sized, simulated and priced once, as it is appended.

`kcost bill` reads a whole log, builds every prompt (`kcost.prompts.build`), sizes them in two passes
(`kcost.prompts.calibrate`), runs the simulator over every request and prices every turn. Each of those
stages walks the calls in order and keeps a small state, so a log that grew by a call needs only that call's
step of each, from the state the calls before it left: what `Running` keeps between status-line calls.

One thing makes earlier calls' figures depend on later ones: calibration's second pass sizes every call with
what the first pass found over the whole session, known from the start: the ratio of logged to estimated tokens
and each unlogged prefix's size. So a later call changes an earlier call's sizes only where

- the ratio moved and the second pass used it so far (a part sized by its scaled estimate: a call without
  logged usage, a part recurring within one prompt, a logged size too small for the new parts), or
- a prefix the second pass met before any logged call sized it is sized now.

`extend` tells either case (and a session it cannot follow call by call: a call with no time, a second model's
cache, one without a prompt) by answering False; the caller then builds the whole session again (`batch`),
exactly as `kcost bill` does. Only the default bill's simulated usage is kept running: `k3:auto` (a rule fitted
to the whole session) and reported usage are billed whole each time (`supports`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from datetime import date, datetime, timezone
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import TYPE_CHECKING

from kcost.inputs.files import blake2b
from kcost.live.clock import missed
from kcost.prompts import chat_format
from kcost.prompts.build import Builder, Parts
from kcost.prompts.calibrate import Pass, Shape
from kcost.prompts.tokenizer import load_counter

if TYPE_CHECKING:
    from kcost.api.settings import Settings
    from kcost.cache.model import CacheModel
    from kcost.live.clock import Figures
    from kcost.model.calls import Call
    from kcost.results.prices import PriceTable

# ids for the parts calibration makes (a changed prefix, tokens the log counts past the rebuilt prompt): a whole
# read numbers them after every part of the session, which a running one cannot know yet; any ids apart from the
# builder's do, since the simulator only tells parts apart
_FRESH = 1 << 48


class _DigestParts(Parts):
    """The prompt builder's parts, known by a digest of their content rather than by the content itself: the
    state keeps a few bytes a part, not every message of the session (the builder looks a part up only to know
    whether the same content was seen before, and renders only parts it has not seen)."""

    def seg(self, key: Hashable, render: Callable[[], chat_format.Pieces] | chat_format.Pieces) -> int:
        # a part's key is made of strings, numbers, None and tuples and frozen dataclasses of them, whose repr
        # tells equal contents from unequal ones
        digest = blake2b(repr(key).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        return super().seg(digest, render)


class _LivePass(Pass):
    """A calibration pass whose own parts take ids past any part's (`_FRESH`); whether it used its ratio is
    `scaled_parts` (parts sized by their scaled estimate)."""

    def __init__(self, estimates: list[int], ratio: Fraction, prefixes: dict[str, int] | None) -> None:
        super().__init__(estimates, ratio, prefixes)
        self.fresh = _FRESH


def supports(settings: Settings) -> bool:
    """Whether the run's bill can be kept running: the default bill (or a named rule), simulated usage, every call
    priced at one model (under `--model logged` the bill names and prices each call's own: built whole)."""
    return not settings.cache.auto and settings.usage in ("auto", "simulated") and settings.model != "logged"


class Running:
    """The session so far, through every stage of its bill; `extend` goes on with more calls."""

    def __init__(self, source: str, settings: Settings) -> None:
        from kcost.cache.simulator import Simulator

        self.source = source
        self.cache: CacheModel = replace(settings.cache, auto=False, fit_own=False)
        self.model, self.at = settings.model, settings.at
        self.builder = Builder(_DigestParts(load_counter(settings.tokenizer)))  # the bill's counter
        estimates = self.builder.parts.estimates
        self.first = _LivePass(estimates, Fraction(1), None)
        self.final = _LivePass(estimates, Fraction(1), {})
        self.sim = Simulator(self.cache)
        from kcost.pricing.charges import Sums

        self.totals = Sums()  # the bill's own running sums, a turn at a time
        self.last: tuple[int, int, Decimal] = (0, 0, Decimal(0))  # the last turn's input, output and cost
        self.last_miss: tuple[str, float | None] | None = None  # why the latest call that missed did, and when
        self.latest: float | None = None  # the running latest time (`prompts._timed`)
        self.span: tuple[float, float] | None = None
        self.key: str | None = None  # the cache the calls ran in (the first model named)
        # where a window's limit is set, each call's time, cost and tokens (`Figures.recent`); else none kept
        self.calls: list[tuple[float | None, Decimal, int]] | None = [] if settings.window.limit is not None else None

    # ---- building

    @classmethod
    def batch(cls, source: str, calls: Sequence[Call], settings: Settings, prices: PriceTable) -> Running | None:
        """The calls of the log at `source` as a whole read bills them (None: a session `Running` cannot follow)."""
        run = cls(source, settings)
        shapes = [s for s in map(run._shape, calls) if s is not None]
        if len(shapes) != len(calls):
            return None
        for shape in shapes:
            run.first.step(shape)
        run.final = _LivePass(run.builder.parts.estimates, run.first.ratio(), dict(run.first.prefix_sizes))
        pricer = run._pricer(prices)
        with localcontext() as exact:
            from kcost.model.bounds import PRECISION

            exact.prec = PRECISION
            for call, shape in zip(calls, shapes, strict=True):
                if not run._bill(call, shape, pricer):
                    return None
        return run

    def extend(self, calls: Sequence[Call], prices: PriceTable) -> bool:
        """Go on with `calls`, appended; False where the calls before them would now be sized otherwise (or the
        session cannot be followed call by call): then nothing is to be trusted, and the session is built anew."""
        if not calls:
            return True
        pricer = self._pricer(prices)
        with localcontext() as exact:
            from kcost.model.bounds import PRECISION

            exact.prec = PRECISION
            for call in calls:
                shape = self._shape(call)
                if shape is None:
                    return False
                self.first.step(shape)
                final, ratio, sizes = self.final, self.first.ratio(), self.first.prefix_sizes
                if ratio != final.scale:
                    if final.scaled_parts:  # a part sized at the ratio before
                        return False
                    final.scale = ratio
                if any(name in sizes for name in final.unsized):
                    return False
                final.given = dict(sizes)
                if not self._bill(call, shape, pricer):
                    return False
        return True

    def _shape(self, call: Call) -> Shape | None:
        """The call's prompt as parts, at its time as a whole read times it; None where it has no prompt or time."""
        if call.messages is None or call.time is None:
            return None
        shape = self.builder.add(call)
        self.latest = call.time if self.latest is None else max(self.latest, call.time)
        self.span = (call.time, call.time) if self.span is None else (min(self.span[0], call.time),
                                                                       max(self.span[1], call.time))  # fmt: skip
        return shape if shape.time == self.latest else replace(shape, time=self.latest)

    def _pricer(self, prices: PriceTable) -> object:
        from kcost.model.session import Session
        from kcost.pricing.charges import Pricer

        named = None if self.model is None or self.model == "logged" else self.model
        entry = prices.entry(named)[1]
        # the pricer reads the session only to name it in an error: the session's calls are not needed
        stub = Session(source=self.source, name="", model=None, records=())
        self.entry_id = entry.id
        return Pricer(prices, entry, self.at or date.today(), stub, by_log=self.model == "logged",
                       fixed=self.at is not None)  # fmt: skip

    def _bill(self, call: Call, shape: Shape, pricer: object) -> bool:
        """The call's request sized, simulated and priced, into the totals (False: a second model's cache)."""
        from kcost.pricing.charges import Pricer, charge

        assert isinstance(pricer, Pricer)
        request = self.final.step(shape, emit=True)
        self.final.changes.clear()  # the session's changes are not shown: not worth keeping
        assert request is not None
        if call.model is not None:
            if self.key is not None and call.model != self.key:
                return False  # a model switch: each model's cache is simulated apart (`simulate`'s keys)
            self.key = call.model
        outcome = self.sim.run(request)
        price = pricer.price(call.model, outcome.input, call.time)[1]
        written = self.cache.stored(outcome.input, outcome.hit)
        turn = charge(outcome, price, written=written, hour=self.cache.hour_writes, charged=self.cache.bills_writes)
        self.totals.add(turn, Decimal(0))  # what the turn would cost all missed: not shown
        self.last = (turn.input_tokens, turn.output_tokens, turn.total)
        if self.calls is not None:
            self.calls.append((call.time, turn.total, turn.input_tokens + turn.output_tokens))
        cause = missed((m.reason.value, m.tokens) for m in outcome.misses)
        if cause is not None:
            self.last_miss = (cause, call.time)
        return True

    # ---- the figures

    def figures(self, prices: PriceTable) -> Figures:
        """The figures `kcost.live.clock.figures` gives of the bill of the calls so far."""
        from kcost.live.clock import Figures, recent
        from kcost.model.bounds import PRECISION
        from kcost.pricing.charges import rate

        t = self.totals
        assert self.span is not None and t.turns
        with localcontext() as exact:
            exact.prec = PRECISION
            total = t.total
        # the next turn's prices at the default precision, as `clock.figures` gives them
        when = self.at or datetime.fromtimestamp(self.span[0], timezone.utc).date()
        last_input, last_output, last_total = self.last
        resent = last_input + last_output
        price = prices.lookup(self.entry_id, when, prompt=resent)
        info = self.cache.info()
        kept = recent(self.calls) if self.calls is not None else ()
        if self.calls is not None:
            self.calls = list(kept)  # older calls are of no window: not kept in the state
        return Figures(model=self.entry_id, total=total, hit_rate=rate(t.hits, t.inputs), turns=t.turns,
                       last_call=self.span[1], ttl=info.ttl_seconds, caching=info.name != "none",
                       warm_next=price.hit_cost(last_input) + price.miss_cost(last_output),
                       cold_next=price.miss_cost(resent), last_turn_cost=last_total,
                       last_miss=self.last_miss[0] if self.last_miss else None,
                       last_miss_at=self.last_miss[1] if self.last_miss else None,
                       recent=kept)  # fmt: skip
