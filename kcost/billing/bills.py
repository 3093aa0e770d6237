"""Outcomes x prices -> bills, in `Decimal`.

`bill(session, cache=..., prices=...)` runs one session through one cache model and prices every turn;
`report(sessions, caches, prices)` does it for every pair and adds the totals. Nothing here reads files,
knows about argv or prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import date, datetime, timezone
from decimal import Decimal, localcontext
from itertools import chain, islice, tee
from typing import Literal

from kcost.cache.model import CacheModel
from kcost.cache.simulator import simulate
from kcost.errors import InputError
from kcost.model.bounds import PER, PRECISION
from kcost.model.calls import Usage
from kcost.model.requests import MissPart, Outcome, Reason
from kcost.model.session import CallRecord, Session
from kcost.pricing.charges import Pricer, Sums, charge, costs, per_million, rate
from kcost.results import (
    Agreement,
    BillReport,
    CacheInfo,
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
from kcost.results.bill import TurnDigest, WrittenTurns
from kcost.results.common import money_text, write_data
from kcost.results.prices import ModelPrice, PriceTable
from kcost.version import __version__


def bill(
    session: Session,
    *,
    cache: CacheModel,
    prices: PriceTable,
    usage: str = "auto",
    model: str | None = None,
    at: date | None = None,
    json_turns: bool | None = None,
) -> SessionBill:
    """One session's bill under one cache model. `json_turns` (True: money as JSON numbers): its turns as the JSON
    writer writes them (`WrittenTurns`, each from the turn's plain figures: `Billing.written`), the bill a run that
    writes JSON takes from where its log was read."""
    with localcontext() as exact:  # every amount exact: see kcost.model.bounds
        exact.prec = PRECISION
        billing = Billing(session, cache=cache, prices=prices, usage=usage, model=model, at=at)
        if json_turns is None:
            return billing.bill(list(billing.turns()))
        turns = WrittenTurns(billing.written(json_turns))
        turns.priced = list(billing.pricer.used)  # every billed turn is priced, in order: its models, each once
        return billing.bill(turns)  # type: ignore[arg-type]  # written, as the writer takes them


class Billing:
    """One session's bill under one cache model, a turn at a time: `turns()` bills each turn once, in order, and
    keeps none of them (the session's records are read once, the simulator's outcomes taken as they come); then
    `bill(turns)` is the session's bill, with the turns given (none, for a bill streamed past). Under `k3:auto`
    (or the default bill of a Kimi log) the rule is fitted to the session first."""

    def __init__(self, session: Session, *, cache: CacheModel, prices: PriceTable, usage: str = "auto",
                 model: str | None = None, at: date | None = None) -> None:  # fmt: skip
        self.session, self.cache, self.prices, self.usage, self.model, self.at = (
            session,
            cache,
            prices,
            usage,
            model,
            at,
        )
        self.fitted = None
        with localcontext() as exact:
            exact.prec = PRECISION
            if (cache.auto or cache.fit_own) and _mode(session, usage) != "reported":
                if cache.auto or any(session.reported):
                    from kcost.cache.fit import fit  # the rule fitted to this session's logged cached counts

                    self.fitted = fit(session, cache, _Comparable(prices, session.comparable).of)
                    self.cache = self.fitted.model
                else:  # the default bill of a session that logs no cached count: the published rule, unfitted
                    self.cache = replace(cache, auto=False, fit_own=False)
            self._start()

    def _start(self) -> None:
        session, model = self.session, self.model
        named = session.model if model is None or model == "logged" else model
        if model == "logged":  # the first model the log names that the table prices: what its calls are priced at
            named = next((m for m in session.logged_models if self.prices.find(m) is not None), named)
        try:
            self.entry = self.prices.entry(named)[1]
        except InputError as exc:
            if model is not None:  # the run's model, not the session's
                exc.field = "model"
                raise
            raise exc.located(source=session.source, line=session.model_line) from None
        when = pricing_date(session, self.at)
        self.pricer = Pricer(
            self.prices, self.entry, when, session, by_log=model == "logged", fixed=self.at is not None
        )
        self.mode = _mode(session, self.usage)
        self.sums = Sums()
        self.agree = self.compared = self.unbilled = self.sized = 0

    @property
    def name(self) -> str:
        return self.session.name

    @property
    def source(self) -> str:
        return self.session.source

    @property
    def priced(self) -> str:
        """The id of the model the session is priced at."""
        return self.entry.id

    def turns(self) -> Iterator[TurnBill]:
        """Each turn's bill, in order; the session's `usage` says which calls have one.

        `usage`: `simulated` bills the cache hits the simulator finds in the prompts; `reported` bills exactly the
        tokens the log says the provider billed; `auto` simulates where the log has prompts. Where a turn has both,
        its bill carries the other figure too."""
        cache, pricer, reported, sums = self.cache, self.pricer, self.mode == "reported", self.sums
        cumulative = Decimal(0)
        entry_id = self.entry.id
        for number, record, sim, check in self._billed():
            logged = record.reported
            outcome = sim if sim is not None else _reported_outcome(logged)
            assert outcome is not None
            with localcontext() as exact:
                exact.prec = PRECISION
                own, price = pricer.price(record.model, outcome.input, record.time)
                written = _written(outcome, cache, logged if reported else None)
                kept_1h = pricer.lifetimes(written, logged) if reported else None
                turn = turn_bill(number, record.label, outcome, price, cumulative, check, record.time, record.model,
                             priced=own if own != entry_id else None, written=written, hour=cache.hour_writes,
                             charged=cache.bills_writes, kept_1h=kept_1h,
                             reasoning=logged.reasoning if logged is not None else None)  # fmt: skip
                sums.add(turn, price.miss_cost(outcome.input) + turn.output_cost)
            cumulative = turn.cumulative
            yield turn

    def written(self, numbers: bool) -> Iterator[str]:
        """`turns()`, each as the JSON writer writes it alone (`kcost.results.common.written`), from each turn's
        plain figures (`costs`): no `TurnBill`, `Charge` or `MissLine` made, the same text. Worked out a batch of
        turns at a time in one exact decimal context; the sums take the turns once the last is written."""
        billed = self._billed()
        cumulative = [Decimal(0)]  # what the turns written so far cost
        while True:
            with localcontext() as exact:
                exact.prec = PRECISION
                batch = [self._written_turn(turn, cumulative, numbers) for turn in islice(billed, _BATCH)]
            yield from batch
            if len(batch) < _BATCH:
                break

    def _written_turn(self, billed: tuple[int, CallRecord, Outcome | None, Check | None], cumulative: list[Decimal],
                      numbers: bool) -> str:  # fmt: skip
        """One turn as the JSON writer writes it, its figures added to the session's sums."""
        number, record, sim, check = billed
        cache, logged = self.cache, record.reported
        parts: tuple[tuple[str, int, int], ...]  # each miss part's reason, tokens and first token
        if sim is None:  # as `_reported_outcome` has it, no object made
            assert logged is not None
            prompt, hit, output = logged.prompt, logged.cached, logged.output
            parts = ((_REPORTED, prompt - hit, hit),) if prompt != hit else ()
            stored = min(logged.written or 0, prompt - hit)  # `_written`'s
        else:
            prompt, hit, output = sim.input, sim.hit, sim.output
            parts = tuple([(m.reason.value, m.tokens, m.at) for m in sim.misses])
            stored = cache.stored(prompt, hit)
        own, price = self.pricer.price(record.model, prompt, record.time)
        rates = per_million(price)
        kept_1h = self.pricer.lifetimes(stored, logged) if self.mode == "reported" else None
        hit_cost, miss_cost, output_cost, premium = costs(
            prompt, hit, output, rates, written=stored, hour=cache.hour_writes, charged=cache.bills_writes,
            kept_1h=kept_1h,
        )
        total = hit_cost + miss_cost + premium + output_cost
        cumulative[0] = so_far = cumulative[0] + total
        miss_r, sums = rates[1], self.sums
        sums.add_counts(1, prompt, hit, output, stored)
        sums.hit_cost += hit_cost
        sums.miss_cost += miss_cost
        sums.output_cost += output_cost
        sums.premium += premium
        sums.uncached += prompt * miss_r / PER + output_cost
        money = _float if numbers else money_text
        misses = []
        for reason, n, at in parts:
            cost = n * miss_r / PER
            misses.append({"reason": reason, "tokens": n, "at": at, "cost": money(cost)})
            sums.add_cause(reason, n, cost)
        return write_data({"turn": number, "label": record.label, "input_tokens": prompt, "hit_tokens": hit,
                           "miss_tokens": prompt - hit, "output_tokens": output, "hit_rate": rate(hit, prompt),
                           "hit_cost": money(hit_cost), "miss_cost": money(miss_cost),
                           "output_cost": money(output_cost), "total": money(total),
                           "cumulative": money(so_far), "reason": _costliest(parts), "misses": misses,
                           "check": check, "time": iso_time(record.time), "logged_model": record.model,
                           "priced_model": own if own != self.entry.id else None, "written_tokens": stored,
                           "write_premium": money(premium),
                           "reasoning_tokens": logged.reasoning if logged is not None else None},
                          numbers)  # fmt: skip

    def _billed(self) -> Iterator[tuple[int, CallRecord, Outcome | None, Check | None]]:
        """Each billed turn's number, record, simulated outcome (None where the mode bills the log's usage: see
        `_reported_outcome`) and check (reported beside simulated), in order; the calls a reported bill has no
        usage for counted, not yielded."""
        session, mode, priced = self.session, self.mode, self.pricer.priced
        # The cache follows the models the log names, whatever `model` prices the calls at: a switch is what the API
        # served, and each model's cache is its own (`kcost.model.session.one_model` bills the main conversation
        # kept on one; a switch's misses are told against that, `Session.steady_keys`).
        records: Iterator[CallRecord] = iter(session.records)
        outcomes: Iterator[Outcome] | None = None
        if has_requests(session):
            records, fed = tee(records)  # one read of the records, for the simulator and for the bills: in step
            requests = chain(session.warmup, (r.request for r in fed if r.request is not None))
            outcomes = simulate(requests, self.cache, session.cache_keys, session.steady_keys)
        comparable = _Comparable(self.prices, session.comparable)
        known, of = comparable.known, comparable.of
        for number, record in enumerate(records, start=1):
            logged = billed_usage(record.reported)
            sim = next(outcomes) if outcomes is not None else None
            self.unbilled += logged is None
            self.sized += logged is None and record.reported is not None
            if mode == "reported" and logged is None:
                continue  # the log has no usage for this call
            if not priced(record.model):
                continue  # under `--model logged`, a model the price table lacks: named in a note
            check = None
            if logged is not None and sim is not None:
                fits = known.get(record.model)  # each model's answer found once
                if fits if fits is not None else of(record.model):
                    check = Check(reported_input_tokens=logged.prompt, reported_cached_tokens=logged.cached,
                                  simulated_cached_tokens=sim.hit, agree=logged.cached == sim.hit)  # fmt: skip
                    self.compared += 1
                    self.agree += check.agree
            yield number, record, sim if mode == "simulated" else None, check

    def bill(self, turns: list[TurnBill]) -> SessionBill:
        """The session's bill, once every turn is billed (`turns`: those kept of them)."""
        session, pricer, mode = self.session, self.pricer, self.mode
        if not self.sums.turns and pricer.lacking:
            raise InputError(f"nothing to bill: no model the log names is in the price table ("
                             f"{', '.join(pricer.lacking)})", source=session.source, field="model",
                             hint="`--prices FILE` can price them; `kcost prices` lists the ids")  # fmt: skip
        if not self.sums.turns:
            raise InputError("nothing to bill: no call in the log has usage", source=session.source,
                             hint="bill the simulated usage")  # fmt: skip
        compared, agree = self.compared, self.agree
        with localcontext() as exact:
            exact.prec = PRECISION
            billed = SessionBill(
                source=session.source,
                name=session.name,
                model=self.entry.id,
                usage=mode,
                token_counts=session.token_counts,
                warm_prefix_tokens=session.warm_prefix,
                notes=[
                    *session.read_notes,
                    *_priced_note(session, pricer.used),
                    *pricer.lifetime_note(),
                    *pricer.window_note(),
                    *pricer.lacking_note(),
                    *session.build_notes,
                    *_skipped_note(mode, self.unbilled, self.sized),
                ],  # fmt: skip
                logged_models=list(session.logged_models),
                started=iso_time(session.span[0]),
                ended=iso_time(session.span[1]),
                calls_sized_from_usage=session.sized[0],
                calls_estimated=session.sized[1],
                unbilled_calls=self.unbilled if mode == "reported" else 0,
                unpriced_calls=sum(pricer.lacking.values()),
                agreement=Agreement(turns=compared, agree=agree, rate=rate(agree, compared)) if compared else None,
                turns=turns,
                summary=summary_of(self.sums),
                cache=self.cache.info() if mode == "simulated" else None,
            )
        fitted = self.fitted
        if fitted is None or fitted.fit is None or fitted.note is None:
            return billed
        return replace(billed, notes=[fitted.note, *billed.notes], cache_fit=fitted.fit)


def pricing_date(session: Session, at: date | None) -> date:
    """The day whose rates a session is billed at: `at` if given, else the day it started, else today (UTC)."""
    if at is not None:
        return at
    start = session.span[0]
    moment = datetime.fromtimestamp(start, timezone.utc) if start is not None else datetime.now(timezone.utc)
    return moment.date()


def billed_usage(usage: Usage | None) -> Usage | None:
    """What a reported bill bills of a call's logged usage: what the provider billed, as the log says; None where
    the log records only sizes with no cached count (`Usage.cached_logged`: a Kimi CLI call's `_usage` counts),
    which say nothing of what was cached: such a call is simulated, or left out of a reported bill and named."""
    return usage if usage is not None and usage.cached_logged else None


def _reports(session: Session) -> bool:
    """Whether any call of the session logs usage to bill: read up to the first that does, or as the session's class
    answers it without making its calls (a turn spec's)."""
    if type(session).reported is not Session.reported:
        return any(billed_usage(u) is not None for u in session.reported)
    return any(billed_usage(r.reported) is not None for r in session.records)


def has_requests(session: Session) -> bool:
    """Whether the session has prompts to simulate (its first record says it of all), without reading them all."""
    return bool(session.warmup) or any(r.request is not None for r in islice(session.records, 1))


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
            # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
            from kcost.pricing.providers.moonshot import PROVIDER

            found = self.prices.find(model) if model else None
            self.known[model] = self.default if found is None else found[0].provider == PROVIDER.id
        return self.known[model]


def _priced_note(session: Session, priced: Iterable[str]) -> list[str]:
    """The models the log names, and the rates billing priced its calls at (written here, where that is decided:
    K3's by default, each logged model's own under `--model logged`)."""
    named = session.named_models
    if not named:
        return []
    # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
    from kcost.pricing.providers import short_name

    rates = [short_name(m) for m in priced]
    listed = rates[0] if len(rates) == 1 else f"{', '.join(rates[:-1])} and {rates[-1]}"
    return [f"logged on {', '.join(named)}: priced at {listed} rates"]


def unbillable(session: Session, usage: str) -> str | None:
    """Why `session` cannot be billed in the `usage` mode asked (as `_mode` would say it, in a line that follows
    "passed over N session(s) with"), or None when it can: no usage to bill as reported, no prompts to simulate."""
    if usage == "simulated" and not has_requests(session):
        return "no prompts to simulate"
    if (usage == "reported" or (usage == "auto" and not has_requests(session))) and not _reports(session):
        return "no usage to bill as reported"
    return None


def _mode(session: Session, usage: str) -> Literal["simulated", "reported"]:
    if usage == "simulated" and not has_requests(session):
        raise InputError("the log holds no prompts to simulate", source=session.source, field="usage",
                         hint="bill the reported usage")  # fmt: skip
    if usage == "reported" and not _reports(session):
        raise InputError("the log reports no usage", source=session.source, field="usage",
                         hint="bill the simulated usage")  # fmt: skip
    if usage == "auto":
        return "simulated" if has_requests(session) else "reported"
    return "reported" if usage == "reported" else "simulated"


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


_REPORTED = Reason.REPORTED.value
_BATCH = 256  # turns written in one decimal context


def _float(value: Decimal) -> float:
    return float(value)


def _skipped_note(mode: str, missing: int, sized: int) -> list[str]:
    if mode != "reported" or not missing:
        return []
    out = [f"{missing - sized} call(s) without reported usage not billed"] if missing > sized else []
    if sized:
        out.append(f"{sized} call(s) whose log records their sizes but no usage (no cached count) not billed as "
                   "reported: `--usage simulated` bills them")  # fmt: skip
    return out


def report(
    sessions: Sequence[Session],
    caches: Sequence[CacheModel],
    prices: PriceTable,
    usage: str = "auto",
    model: str | None = None,
    at: date | None = None,
    json_turns: bool | None = None,
) -> BillReport:
    """Every session under every cache model, with totals per model. `model`: price every call at this model
    (`logged`: each at the one its log names); `at`: the rates in force that day (default: each session's);
    `json_turns`: each bill's turns written (`bill`'s)."""
    with localcontext() as exact:
        exact.prec = PRECISION
        runs = []
        for cache in caches:
            bills = [bill(s, cache=cache, prices=prices, usage=usage, model=model, at=at, json_turns=json_turns)
                     for s in sessions]  # fmt: skip
            runs.append(Run(cache=cache.info(), sessions=bills, total=combine(bills)))
        return BillReport(generator=f"kcost {__version__}", prices=prices_used(prices, runs, sessions, at), runs=runs)


class Streamed:
    """`report` a turn at a time, for a writer that holds none (JSON Lines, CSV, a summary): iterate `events()`
    once, in the order `report` lays the report out; then `report()` is the report with every session's bill
    but none of its turns, each bill with its `TurnDigest` (what a summary shows of its turns). For JSON, which
    holds the text of every turn, `written()` is the report with each turn written as it is billed."""

    def __init__(self, sessions: Sequence[Session], caches: Sequence[CacheModel], prices: PriceTable,
                 usage: str = "auto", model: str | None = None, at: date | None = None) -> None:  # fmt: skip
        self.sessions, self.caches, self.prices, self.usage, self.model, self.at = (
            sessions,
            caches,
            prices,
            usage,
            model,
            at,
        )
        self.runs: list[Run] = []
        self.priced: dict[str, None] = {}

    def events(self) -> Iterator[tuple[CacheInfo, Billing, TurnBill] | tuple[CacheInfo, SessionBill] | Run]:
        """(cache, the session's billing, a turn) for each turn, (cache, the session's bill) after its turns, and
        the run (its bills without turns, its total) after its sessions."""
        for cache in self.caches:
            info, bills = cache.info(), []
            for session in self.sessions:
                billing = Billing(session, cache=cache, prices=self.prices, usage=self.usage, model=self.model,
                                  at=self.at)  # fmt: skip
                digest = TurnDigest(_billed_count(session, billing.mode))
                for turn in billing.turns():
                    digest.add(turn, billing.priced)
                    yield info, billing, turn
                billed = digest.attach(billing.bill([]))
                self.priced.update(dict.fromkeys(digest.priced))
                bills.append(billed)
                yield info, billed
            with localcontext() as exact:
                exact.prec = PRECISION
                run = Run(cache=info, sessions=bills, total=combine(bills))
            self.runs.append(run)
            yield run

    def written(self, numbers: bool) -> BillReport:
        """`report()` billed whole instead, every bill with its turns as the JSON writer writes them (`bill`'s
        `json_turns`): what a JSON bill holds, the text of every turn and none of the turns."""
        return report(self.sessions, self.caches, self.prices, self.usage, self.model, self.at, json_turns=numbers)

    def report(self) -> BillReport:
        at, sessions = self.at, self.sessions
        info = self.prices.info(list(self.priced) or None, pricing_date(sessions[0], at) if sessions else at)
        return BillReport(generator=f"kcost {__version__}", prices=info, runs=self.runs)


def _billed_count(session: Session, mode: str) -> int:
    """How many turns of `session` a bill in `mode` has (as reported, those with usage)."""
    if mode == "simulated":
        return len(session.records)
    return sum(billed_usage(r.reported) is not None for r in session.records)


def prices_used(prices: PriceTable, runs: Sequence[Run], sessions: Sequence[Session], at: date | None) -> PriceInfo:
    """The prices a report was billed at: every model its turns were priced at (a session's own model only where
    a turn was priced at it: under `--model logged`, the models the log names), on the first session's day."""
    used = [name for r in runs for b in r.sessions for name in b.priced_models()]
    return prices.info(used or None, pricing_date(sessions[0], at) if sessions else at)


def turn_bill(
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
    reasoning: int | None = None,
) -> TurnBill:
    """One turn's bill: its `charge`s (`kept_1h`: of the `written` tokens those the log says were kept an hour,
    each write then priced at its logged lifetime; None: every write at the cache model's, an hour if `hour`)."""
    c = charge(o, price, written=written, hour=hour, charged=charged, kept_1h=kept_1h)
    misses = [MissLine(reason=m.reason, tokens=m.tokens, at=m.at, cost=m.cost) for m in c.misses]
    return TurnBill(
        turn=number,
        label=label,
        input_tokens=o.input,
        hit_tokens=o.hit,
        miss_tokens=o.miss,
        output_tokens=o.output,
        hit_rate=rate(o.hit, o.input),
        hit_cost=c.hit_cost,
        miss_cost=c.miss_cost,
        output_cost=c.output_cost,
        total=c.total,
        cumulative=before + c.total,
        reason=main_reason(misses),
        misses=misses,
        check=check,
        time=iso_time(time),
        logged_model=model,
        priced_model=priced,
        written_tokens=written,
        write_premium=c.write_premium,
        reasoning_tokens=reasoning,
    )


def main_reason(misses: Sequence[MissLine]) -> str:
    """The cause that cost the most tokens, new input only when nothing else missed."""
    return _costliest([(m.reason, m.tokens) for m in misses])


def _costliest(parts: Sequence[tuple[str, int] | tuple[str, int, int]]) -> str:
    """`main_reason` of a turn's miss parts, each its reason and tokens (and where it starts)."""
    if len(parts) == 1:  # the usual turn
        return parts[0][0]
    causes = [p for p in parts if p[0] != _NEW_INPUT]
    if causes:
        return max(causes, key=lambda p: p[1])[0]
    return _NEW_INPUT if parts else ""


_NEW_INPUT = Reason.NEW_INPUT.value


def summary_of(sums: Sums) -> Summary:
    """The summary of a session's sums."""
    return _summary(turns=sums.turns, inputs=sums.inputs, hits=sums.hits, outputs=sums.outputs,
                    hit_cost=sums.hit_cost, miss_cost=sums.miss_cost, output_cost=sums.output_cost,
                    uncached=sums.uncached, lines=[(r, n, sums.costs[r]) for r, n in sums.tokens.items()],
                    written=sums.written, premium=sums.premium)  # fmt: skip


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
        hit_rate=rate(hits, inputs),
        hit_cost=hit_cost,
        miss_cost=miss_cost,
        input_cost=input_cost,
        output_cost=output_cost,
        total=total,
        blended_input_per_mtok=blended(input_cost, inputs),
        uncached_total=uncached,
        saved=uncached - total,
        saved_share=rate(uncached - total, uncached),
        miss_by_reason=dict(sorted(by_reason.items(), key=lambda kv: (-kv[1].cost, kv[0]))),
        written_tokens=written,
        write_premium=premium,
    )
