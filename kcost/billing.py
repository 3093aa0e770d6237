"""Outcomes x prices -> bills, in `Decimal`.

`bill(session, cache=..., prices=...)` runs one session through one cache model and prices every turn;
`report(sessions, caches, prices)` does it for every pair and adds the totals. Nothing here reads files,
knows about argv or prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import date, datetime, timezone
from decimal import Decimal, localcontext
from typing import Literal

from kcost.bounds import PRECISION
from kcost.cache import CacheModel, MissPart, Outcome, Reason, simulate
from kcost.calls import Usage
from kcost.errors import InputError
from kcost.results import (
    Agreement,
    BillReport,
    Check,
    MissLine,
    PriceInfo,
    ReasonTotal,
    Run,
    SessionBill,
    Summary,
    TurnBill,
    blended,
    iso_time,
)
from kcost.results.prices import ModelPrice, ModelPrices, Period, PriceTable
from kcost.session import Session
from kcost.version import __version__


def bill(
    session: Session,
    *,
    cache: CacheModel,
    prices: PriceTable,
    usage: str = "auto",
    model: str | None = None,
    at: date | None = None,
) -> SessionBill:
    with localcontext() as exact:  # every amount exact: see kcost.bounds
        exact.prec = PRECISION
        if not (cache.auto or cache.fit_own) or _mode(session, usage) == "reported":
            return _bill(session, cache=cache, prices=prices, usage=usage, model=model, at=at)
        from kcost.cache.fit import fit  # the rule fitted to this session's logged cached counts

        fitted = fit(session, cache, _Comparable(prices, session.comparable).of)
        billed = _bill(session, cache=fitted.model, prices=prices, usage=usage, model=model, at=at)
        if fitted.fit is None or fitted.note is None:
            return billed
        return replace(billed, notes=[fitted.note, *billed.notes], cache_fit=fitted.fit)


def pricing_date(session: Session, at: date | None) -> date:
    """The day whose rates a session is billed at: `at` if given, else the day it started, else today (UTC)."""
    if at is not None:
        return at
    start = session.span[0]
    moment = datetime.fromtimestamp(start, timezone.utc) if start is not None else datetime.now(timezone.utc)
    return moment.date()


def _bill(
    session: Session, *, cache: CacheModel, prices: PriceTable, usage: str, model: str | None, at: date | None
) -> SessionBill:
    """The bill for one session under one cache model.

    `usage`: `simulated` bills the cache hits the simulator finds in the prompts; `reported` bills exactly the
    tokens the log says the provider billed; `auto` simulates where the log has prompts. Where a turn has both,
    its bill carries the other figure too.
    """
    named = session.model if model is None or model == "logged" else model
    try:
        entry = prices.entry(named)[1]
    except InputError as exc:
        if model is not None:  # the run's model, not the session's
            exc.field = "model"
            raise
        raise exc.located(source=session.source, line=session.model_line) from None
    pricer = _Pricer(prices, entry, pricing_date(session, at), session, by_log=model == "logged", fixed=at is not None)
    mode = _mode(session, usage)
    # The cache follows the models the log names, whatever `model` prices the calls at: a switch is what the API
    # served, and each model's cache is its own (`kcost.session.one_model` bills the session kept on one).
    simulated = list(simulate(session.requests, cache, session.cache_keys)) if session.requests else []
    turns: list[TurnBill] = []
    cumulative = uncached = Decimal(0)
    agree = compared = 0
    comparable = _Comparable(prices, session.comparable)
    for number, record in enumerate(session.records, start=1):
        logged = record.reported
        sim = simulated[number - 1] if simulated else None
        outcome = sim if mode == "simulated" else _reported_outcome(logged)
        if outcome is None:
            continue  # reported mode, and the log has no usage for this call
        check = None
        if logged is not None and sim is not None and comparable.of(record.model):
            check = Check(reported_input_tokens=logged.prompt, reported_cached_tokens=logged.cached,
                          simulated_cached_tokens=sim.hit, agree=logged.cached == sim.hit)  # fmt: skip
            compared += 1
            agree += check.agree
        own, price = pricer.price(record.model, outcome.input, record.time)
        written = _written(outcome, cache, logged if mode == "reported" else None)
        kept_1h = pricer.lifetimes(written, logged) if mode == "reported" else None
        turn = _turn(number, record.label, outcome, price, cumulative, check, record.time, record.model,
                     priced=own if own != entry.id else None, written=written, hour=cache.hour_writes,
                     charged=cache.bills_writes, kept_1h=kept_1h)  # fmt: skip
        uncached += price.miss_cost(outcome.input) + turn.output_cost
        cumulative = turn.cumulative
        turns.append(turn)
    if not turns:
        raise InputError("nothing to bill: no call in the log has usage", source=session.source,
                         hint="bill the simulated usage")  # fmt: skip
    reported = session.reported
    return SessionBill(
        source=session.source,
        name=session.name,
        model=entry.id,
        usage=mode,
        token_counts=session.token_counts,
        warm_prefix_tokens=session.warm_prefix,
        notes=[
            *session.read_notes,
            *_priced_note(session, pricer.used),
            *pricer.lifetime_note(),
            *pricer.window_note(),
            *session.build_notes,
            *_skipped_note(mode, reported),
        ],  # fmt: skip
        logged_models=list(session.logged_models),
        started=iso_time(session.span[0]),
        ended=iso_time(session.span[1]),
        calls_sized_from_usage=session.sized[0],
        calls_estimated=session.sized[1],
        unbilled_calls=sum(u is None for u in reported) if mode == "reported" else 0,
        agreement=Agreement(turns=compared, agree=agree, rate=_rate(agree, compared)) if compared else None,
        turns=turns,
        summary=summarize(turns, uncached),
    )


class _Comparable:
    """Whether a call's logged cache hits can be set beside the simulated ones: they can where a Kimi model
    served it (one the table's Moonshot provider prices), whatever agent logged it (Claude Code pointed at Kimi's
    Anthropic-compatible endpoint); not where another provider's model did; where the log names no model the
    table prices, as its reader says of its format (`Session.comparable`)."""

    def __init__(self, prices: PriceTable, default: bool) -> None:
        self.prices, self.default = prices, default
        self.known: dict[str | None, bool] = {}

    def of(self, model: str | None) -> bool:
        if model not in self.known:
            from kcost.providers.moonshot import PROVIDER

            found = self.prices.find(model) if model else None
            self.known[model] = self.default if found is None else found[0].provider == PROVIDER.id
        return self.known[model]


class _Pricer:
    """The flat rates each call is billed at: the session's model's, or under `--model logged` (`by_log`) the
    model each call's log names; each model's period and each tier's rates are looked up once."""

    def __init__(self, prices: PriceTable, entry: ModelPrices, when: date, session: Session, *, by_log: bool,
                 fixed: bool = False) -> None:  # fmt: skip
        self.prices, self.entry, self.when, self.session, self.by_log = prices, entry, when, session, by_log
        self.fixed = fixed  # every call at `when`'s rates (`--prices-at`), else each at its own day's
        self.periods: dict[tuple[str, date], Period] = {}  # by model id and day: the rates in force that day
        self.owned: dict[str, str] = {}  # logged id -> the priced model's id
        self.flat: dict[tuple[int, int, tuple[int, ...]], ModelPrice] = {}  # by period, window and tier: built once
        self.used: dict[str, None] = {}  # the ids calls were priced at, in order of first use
        self.kept = [0, 0]  # tokens written at their logged lifetimes: kept 5 minutes, kept an hour
        self.windows: dict[str, int] = {}  # calls priced in a window of the day, by its label
        self.untimed = 0  # calls with no logged time in a period with windows of the day

    def lifetimes(self, written: int, logged: Usage | None) -> int | None:
        """Of a reported call's `written` tokens, those kept an hour, where each write is priced at its logged
        lifetime (under `--model logged`, where the log says: Claude Code's `cache_creation`); None: every write
        at the cache model's lifetime."""
        if not self.by_log or logged is None or logged.written_1h is None or not written:
            return None
        hour = min(logged.written_1h, written)
        self.kept[0] += written - hour
        self.kept[1] += hour
        return hour

    def lifetime_note(self) -> list[str]:
        """What the writes priced at their logged lifetimes were, where any were."""
        five, hour = self.kept
        if not five and not hour:
            return []
        return [f"cache writes priced at their logged lifetimes: {five:,} tokens at 5-minute write rates, "
                f"{hour:,} at 1-hour write rates"]  # fmt: skip

    def price(self, logged: str | None, prompt: int, time: float | None = None) -> tuple[str, ModelPrice]:
        """The id of the model a call of `prompt` tokens logged on `logged` at `time` is priced at, and its rates:
        those in force on the call's own day (or the run's `--prices-at`), in the window of the day it fell in."""
        own = self.entry.id
        if self.by_log and logged:
            own = self.owned.get(logged) or self.owned.setdefault(logged, _own(self.prices, logged, self.session))
        day = self.when if self.fixed or time is None else datetime.fromtimestamp(time, timezone.utc).date()
        period = self.periods.get((own, day))
        if period is None:
            entry = self.entry if own == self.entry.id else self.prices.entry(own)[1]
            period = self.periods.setdefault((own, day), entry.period(day))
        window = period.window(time)
        if period.hours:
            if time is None:
                self.untimed += 1
            elif window is not None:
                self.windows[window.label] = self.windows.get(window.label, 0) + 1
        key = (id(period), id(window), period.tier(prompt) if window is None else ())
        self.used[own] = None
        return own, self.flat.get(key) or self.flat.setdefault(key, period.at(prompt, window))

    def window_note(self) -> list[str]:
        """How many calls were priced in a window of the day, and at which rates the untimed ones were."""
        said = [f"{n:,} call(s) priced at {label} rates by their logged time" for label, n in self.windows.items()]
        if self.untimed:
            said.append(f"{self.untimed:,} call(s) with no logged time priced at the rates of the first window of "
                        "the day (peak, where the provider has one): an upper bound")  # fmt: skip
        return said


def _priced_note(session: Session, priced: Iterable[str]) -> list[str]:
    """The models the log names, and the rates billing priced its calls at (written here, where that is decided:
    K3's by default, each logged model's own under `--model logged`)."""
    named = session.named_models
    if not named:
        return []
    from kcost.providers import short_name

    rates = [short_name(m) for m in priced]
    listed = rates[0] if len(rates) == 1 else f"{', '.join(rates[:-1])} and {rates[-1]}"
    return [f"logged on {', '.join(named)}: priced at {listed} rates"]


def unbillable(session: Session, usage: str) -> str | None:
    """Why `session` cannot be billed in the `usage` mode asked (as `_mode` would say it, in a line that follows
    "passed over N session(s) with"), or None when it can: no usage to bill as reported, no prompts to simulate."""
    if usage == "simulated" and not session.requests:
        return "no prompts to simulate"
    if (usage == "reported" or (usage == "auto" and not session.requests)) and not any(session.reported):
        return "no usage to bill as reported"
    return None


def _mode(session: Session, usage: str) -> Literal["simulated", "reported"]:
    if usage == "simulated" and not session.requests:
        raise InputError("the log holds no prompts to simulate", source=session.source, field="usage",
                         hint="bill the reported usage")  # fmt: skip
    if usage == "reported" and not any(session.reported):
        raise InputError("the log reports no usage", source=session.source, field="usage",
                         hint="bill the simulated usage")  # fmt: skip
    if usage == "auto":
        return "simulated" if session.requests else "reported"
    return "reported" if usage == "reported" else "simulated"


def _own(prices: PriceTable, logged: str, session: Session) -> str:
    """The id of the model a logged id names (an unknown one is an error at the session's source)."""
    try:
        return prices.entry(logged)[1].id
    except InputError as exc:
        raise exc.located(source=session.source) from None


def _written(outcome: Outcome, cache: CacheModel, logged: Usage | None) -> int:
    """Missed tokens the cache stored, as the cache model says; billed as reported, the writes the log reports."""
    if logged is not None:
        return min(logged.written or 0, outcome.input - outcome.hit)
    return cache.stored(outcome.input, outcome.hit)


def _reported_outcome(usage: Usage | None) -> Outcome | None:
    if usage is None:
        return None
    missed = usage.prompt - usage.cached
    parts = (MissPart(Reason.REPORTED, missed, usage.cached),) if missed else ()
    return Outcome(usage.prompt, usage.cached, usage.output, parts)


def _skipped_note(mode: str, reported: Sequence[Usage | None]) -> list[str]:
    missing = sum(u is None for u in reported)
    if mode == "reported" and missing:
        return [f"{missing} call(s) without reported usage not billed"]
    return []


def report(
    sessions: Sequence[Session],
    caches: Sequence[CacheModel],
    prices: PriceTable,
    usage: str = "auto",
    model: str | None = None,
    at: date | None = None,
) -> BillReport:
    """Every session under every cache model, with totals per model. `model`: price every call at this model
    (`logged`: each at the one its log names); `at`: the rates in force that day (default: each session's)."""
    with localcontext() as exact:
        exact.prec = PRECISION
        runs = []
        for cache in caches:
            bills = [bill(s, cache=cache, prices=prices, usage=usage, model=model, at=at) for s in sessions]
            runs.append(Run(cache=cache.info(), sessions=bills, total=combine(bills)))
        return BillReport(generator=f"kcost {__version__}", prices=prices_used(prices, runs, sessions, at), runs=runs)


def prices_used(prices: PriceTable, runs: Sequence[Run], sessions: Sequence[Session], at: date | None) -> PriceInfo:
    """The prices a report was billed at: every model its turns were priced at (a session's own model only where
    a turn was priced at it: under `--model logged`, the models the log names), on the first session's day."""
    used = [t.priced_model or b.model for r in runs for b in r.sessions for t in b.turns]
    return prices.info(used or None, pricing_date(sessions[0], at) if sessions else at)


def _turn(
    number: int,
    label: str | None,
    o: Outcome,
    price: ModelPrice,
    before: Decimal,
    check: Check | None = None,
    time: float | None = None,
    model: str | None = None,
    *,
    priced: str | None = None,
    written: int = 0,
    hour: bool = False,
    charged: bool = True,
    kept_1h: int | None = None,
) -> TurnBill:
    """One turn's bill; `kept_1h`: of the `written` tokens those the log says were kept an hour, each write then
    priced at its logged lifetime (None: every write at the cache model's, an hour if `hour`)."""
    hit_cost = price.hit_cost(o.hit)
    miss_cost = price.miss_cost(o.miss)
    output_cost = price.output_cost(o.output)
    if not charged:
        premium = Decimal(0)
    elif kept_1h is not None:
        premium = price.write_premium(written - kept_1h, False) + price.write_premium(kept_1h, True)
    else:
        premium = price.write_premium(written, hour)
    total = hit_cost + miss_cost + premium + output_cost
    misses = [
        MissLine(reason=m.reason.value, tokens=m.tokens, at=m.at, cost=price.miss_cost(m.tokens)) for m in o.misses
    ]
    return TurnBill(
        turn=number,
        label=label,
        input_tokens=o.input,
        hit_tokens=o.hit,
        miss_tokens=o.miss,
        output_tokens=o.output,
        hit_rate=_rate(o.hit, o.input),
        hit_cost=hit_cost,
        miss_cost=miss_cost,
        output_cost=output_cost,
        total=total,
        cumulative=before + total,
        reason=main_reason(misses),
        misses=misses,
        check=check,
        time=iso_time(time),
        logged_model=model,
        priced_model=priced,
        written_tokens=written,
        write_premium=premium,
    )


def main_reason(misses: Sequence[MissLine]) -> str:
    """The cause that cost the most tokens, new input only when nothing else missed."""
    causes = [m for m in misses if m.reason != Reason.NEW_INPUT.value]
    if causes:
        return max(causes, key=lambda m: m.tokens).reason
    return Reason.NEW_INPUT.value if misses else ""


def summarize(turns: Sequence[TurnBill], uncached: Decimal) -> Summary:
    """Session totals: the sums of its turns (`uncached`: the same turns with every input token a miss)."""
    lines = [m for t in turns for m in t.misses]
    return _summary(
        turns=len(turns),
        inputs=sum(t.input_tokens for t in turns),
        hits=sum(t.hit_tokens for t in turns),
        outputs=sum(t.output_tokens for t in turns),
        hit_cost=sum((t.hit_cost for t in turns), Decimal(0)),
        miss_cost=sum((t.miss_cost for t in turns), Decimal(0)),
        output_cost=sum((t.output_cost for t in turns), Decimal(0)),
        uncached=uncached,
        lines=[(m.reason, m.tokens, m.cost) for m in lines],
        written=sum(t.written_tokens for t in turns),
        premium=sum((t.write_premium for t in turns), Decimal(0)),
    )


def combine(bills: Sequence[SessionBill]) -> Summary:
    """Totals over sessions: the sums of their summaries."""
    sums = [b.summary for b in bills]
    return _summary(
        turns=sum(s.turns for s in sums),
        inputs=sum(s.input_tokens for s in sums),
        hits=sum(s.hit_tokens for s in sums),
        outputs=sum(s.output_tokens for s in sums),
        hit_cost=sum((s.hit_cost for s in sums), Decimal(0)),
        miss_cost=sum((s.miss_cost for s in sums), Decimal(0)),
        output_cost=sum((s.output_cost for s in sums), Decimal(0)),
        uncached=sum((s.uncached_total for s in sums), Decimal(0)),
        lines=[(r, m.tokens, m.cost) for s in sums for r, m in s.miss_by_reason.items()],
        written=sum(s.written_tokens for s in sums),
        premium=sum((s.write_premium for s in sums), Decimal(0)),
    )


def _summary(
    *,
    turns: int,
    inputs: int,
    hits: int,
    outputs: int,
    hit_cost: Decimal,
    miss_cost: Decimal,
    output_cost: Decimal,
    uncached: Decimal,
    lines: Iterable[tuple[str, int, Decimal]],
    written: int = 0,
    premium: Decimal = Decimal(0),
) -> Summary:
    tokens: dict[str, int] = {}
    costs: dict[str, Decimal] = {}
    for reason, n, cost in lines:
        tokens[reason] = tokens.get(reason, 0) + n
        costs[reason] = costs.get(reason, Decimal(0)) + cost
    by_reason = {r: ReasonTotal(tokens=tokens[r], cost=costs[r]) for r in tokens}
    input_cost = hit_cost + miss_cost + premium
    total = input_cost + output_cost
    return Summary(
        turns=turns,
        input_tokens=inputs,
        hit_tokens=hits,
        miss_tokens=inputs - hits,
        output_tokens=outputs,
        hit_rate=_rate(hits, inputs),
        hit_cost=hit_cost,
        miss_cost=miss_cost,
        input_cost=input_cost,
        output_cost=output_cost,
        total=total,
        blended_input_per_mtok=blended(input_cost, inputs),
        uncached_total=uncached,
        saved=uncached - total,
        saved_share=_rate(uncached - total, uncached),
        miss_by_reason=dict(sorted(by_reason.items(), key=lambda kv: (-kv[1].cost, kv[0]))),
        written_tokens=written,
        write_premium=premium,
    )


def _rate(part: int | Decimal, whole: int | Decimal) -> float:
    return round(float(part) / float(whole), 6) if whole else 0.0
