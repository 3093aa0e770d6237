"""Bills at a glance: the rows of `kcost bill --by ...`, grouped from the per-turn bills, so that every grouping's
totals are the same sums of the same turns (by session, hour, day, week, month, usage window, model, project or
agent).

A session is placed in day, week and month by its first logged call, in the report's time zone; a session with no
logged time is placed under `no date`. By hour and by window each call is placed by its own time (a call with
none under `no date`), into usage windows by the plans' rule (`kcost.analysis.windows`), the active one marked.

By project, a session goes under the working folder or project its agent records
(`Reader.project`), else under `no project`: never under a folder of the agent's log layout (a Codex day folder,
Gemini CLI's `chats`), which names no project. By model, each turn goes to the model it ran on (as logged, else
the model it was priced at); `breakdown` adds, under each group, one row per model (none by model, where each row
is one model already). Builds the report; renders nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from decimal import Decimal
from functools import lru_cache
from typing import Any

from kcost.analysis.windows import HOUR, Spent, active, iso, label, starts
from kcost.model.calls import on_clock
from kcost.model.limits import Limit
from kcost.model.session import Session
from kcost.results.bill import BillReport, SessionBill, TurnBill
from kcost.results.grouping import WINDOW_HOURS
from kcost.results.overview import ActiveWindow, OverviewReport, OverviewRow, OverviewTotal

NO_DATE = "no date"
NO_PROJECT = "no project"
THIS_MACHINE = "this machine"  # the machine of the sessions read here (an import names its own)
# the order of each sort, and the sort of each grouping when none is asked
_DEFAULT_SORT = {"session": "cost", "hour": "time", "day": "time", "week": "time", "month": "time",
                 "window": "time", "model": "cost", "project": "cost", "agent": "cost", "machine": "cost"}  # fmt: skip


@dataclass
class _Sum:
    """What a row adds up."""

    sessions: dict[int, None] = field(default_factory=dict)  # by position in the run, in order of first use
    agents: dict[str, None] = field(default_factory=dict)
    models: dict[str, None] = field(default_factory=dict)
    source: str | None = None
    name: str | None = None  # by session: the session's name (its key is its place, as two may share a name)
    started: float | None = None
    ended: float | None = None
    turns: int = 0
    input_tokens: int = 0
    hit_tokens: int = 0
    miss_tokens: int = 0
    output_tokens: int = 0
    input_cost: Decimal = Decimal(0)
    output_cost: Decimal = Decimal(0)

    def add(self, index: int, session: Session, turn: TurnBill, model: str) -> None:
        self.sessions[index] = None
        if session.agent:
            self.agents[session.agent] = None
        self.models[model] = None
        self.turns += 1
        self.input_tokens += turn.input_tokens
        self.hit_tokens += turn.hit_tokens
        self.miss_tokens += turn.miss_tokens
        self.output_tokens += turn.output_tokens
        self.input_cost += turn.total - turn.output_cost
        self.output_cost += turn.output_cost

    def span(self, start: float | None, end: float | None) -> None:
        if start is not None:
            self.started = start if self.started is None else min(self.started, start)
        if end is not None:
            self.ended = end if self.ended is None else max(self.ended, end)

    @property
    def cost(self) -> Decimal:
        return self.input_cost + self.output_cost

    @property
    def hit_rate(self) -> float:
        return round(self.hit_tokens / self.input_tokens, 6) if self.input_tokens else 0.0


def overview(
    report: BillReport,
    sessions: Sequence[Session],
    *,
    by: str = "session",
    sort: str | None = None,
    breakdown: bool = False,
    zone: tzinfo | None = None,
    zone_name: str = "UTC",
    since: str | None = None,
    until: str | None = None,
    left_out: int = 0,
    window_hours: int = WINDOW_HOURS,
    now: float | None = None,
    limit: Limit | None = None,
) -> OverviewReport:
    """The rows of `report` (bills of `sessions`, in order) grouped `by`, ordered by `sort`, in time zone `zone`
    (None: the machine's). By window: windows of `window_hours`, the active one judged at `now` (Unix seconds;
    None: none is active), held to `limit`."""
    order = sort or _DEFAULT_SORT[by]
    length = window_hours * HOUR
    opened_now: list[ActiveWindow] = []
    split = breakdown and by != "model"  # by model, a row per model of a model's row would repeat it
    rows: list[OverviewRow] = []
    totals: list[OverviewTotal] = []
    for run in report.runs:
        groups: dict[str, _Sum] = {}
        parts: dict[str, dict[str, _Sum]] = {}
        whole = _Sum()
        calls = _calls(run.sessions) if by == "window" else []
        spent = [Spent(at, turn.total, turn.input_tokens + turn.output_tokens) for at, _, turn in calls]
        begun = starts(spent, length)
        opened = {(id(bill), turn.turn): start for (_, bill, turn), start in zip(calls, begun, strict=True)}
        for index, (session, bill) in enumerate(zip(sessions, run.sessions, strict=True)):
            start, end = session.span
            whole.sessions[index] = None
            for turn, model in _turns(bill):
                key = _key(by, index, session, bill, model, zone, turn, opened)
                for target in (groups.setdefault(key, _Sum()), whole, *_part(split, parts, key, model)):
                    target.add(index, session, turn, model)
                    target.span(start, end)
            if by == "session":  # a session of no billed turn is a row too
                row = groups.setdefault(f"{index:09d}", _Sum())  # the key of its turns' rows
                name = f"{bill.name} (log gone)" if session.gone else bill.name
                row.sessions[index], row.source, row.name = None, session.source, name
                row.span(start, end)
        cache = run.cache.label
        ends = {label(w, zone): w + length for w in set(begun)}
        if by == "window" and now is not None:
            found = active(spent, begun, length, now, zone, limit, cache)
            if found is not None:
                opened_now.append(found)
        for key, total in _sorted(groups, order):
            rows.append(_row(total.name or key, None, cache, total, zone, ends.get(key)))
            rows += [_row(total.name or key, m, cache, part, zone) for m, part in _sorted(parts.get(key, {}), "cost")]
        totals.append(_total(cache, whole))
    return OverviewReport(
        prices=report.prices,
        by=by,  # type: ignore[arg-type]
        sort=order,
        timezone=zone_name,
        since=since,
        until=until,
        usage=sorted({b.usage for run in report.runs for b in run.sessions}),
        left_out=left_out,
        rows=rows,
        totals=totals,
        window_hours=window_hours if by == "window" else None,
        now=iso(now, zone) if by == "window" else None,
        active=opened_now,
    )


def _turns(bill: SessionBill) -> Iterator[tuple[TurnBill, str]]:
    """Each turn with the model it ran on: as the log names it, else the one it was priced at."""
    for turn in bill.turns:
        yield turn, turn.logged_model or turn.priced_model or bill.model


def _key(by: str, index: int, session: Session, bill: SessionBill, model: str, zone: tzinfo | None,
         turn: TurnBill, opened: dict[tuple[int, int], float]) -> str:  # fmt: skip
    if by == "session":
        return f"{index:09d}"  # as a session of no billed turn is keyed (`overview`)
    if by in ("hour", "window"):
        at = call_time(turn)
        if at is None:
            return NO_DATE
        if by == "window":
            return label(opened[(id(bill), turn.turn)], zone)
        when = on_clock(at, zone)
        return f"{when.year:04d}-{when.month:02d}-{when.day:02d} {when.hour:02d}:00"
    if by == "model":
        return model
    if by == "agent":
        return session.agent or "unknown"
    if by == "machine":
        return session.machine or THIS_MACHINE
    if by == "project":
        return session.project or NO_PROJECT
    start = session.span[0]
    if start is None:
        return NO_DATE
    when = on_clock(start, zone)  # at the calendar's edge, its first or last day
    if by == "day":  # not `strftime`, which writes the year 1 as `1`
        return f"{when.year:04d}-{when.month:02d}-{when.day:02d}"
    if by == "week":
        year, week, _ = when.isocalendar()
        return f"{year:04d}-W{week:02d}"
    return f"{when.year:04d}-{when.month:02d}"


def call_time(turn: TurnBill) -> float | None:
    """A call's time (Unix seconds), where its log says."""
    return None if turn.time is None else _seconds(turn.time)


@lru_cache(maxsize=1 << 16)
def _seconds(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _calls(bills: Sequence[SessionBill]) -> list[tuple[float, SessionBill, TurnBill]]:
    """Every call of a logged time, in time order."""
    calls = [(at, bill, turn) for bill in bills for turn in bill.turns if (at := call_time(turn)) is not None]
    calls.sort(key=lambda c: c[0])
    return calls


def _part(breakdown: bool, parts: dict[str, dict[str, _Sum]], key: str, model: str) -> tuple[_Sum, ...]:
    if not breakdown:
        return ()
    return (parts.setdefault(key, {}).setdefault(model, _Sum()),)


_ORDERS: dict[str, Callable[[tuple[str, _Sum]], Any]] = {
    "cost": lambda kv: (-kv[1].cost, kv[0]),
    "time": lambda kv: (kv[1].started is None, kv[1].started or 0.0, kv[0]),
    "name": lambda kv: (kv[1].name or kv[0], kv[0]),
    "turns": lambda kv: (-kv[1].turns, kv[0]),
    "input": lambda kv: (-kv[1].input_tokens, kv[0]),
    "hit-rate": lambda kv: (kv[1].hit_rate, kv[0]),  # the worst first: where the cache did least
}


def _sorted(groups: dict[str, _Sum], order: str) -> list[tuple[str, _Sum]]:
    return sorted(groups.items(), key=_ORDERS[order])


def _figures(s: _Sum) -> dict[str, Any]:
    """What a row and a total both carry, from the same sum."""
    return {"sessions": len(s.sessions), "turns": s.turns, "input_tokens": s.input_tokens,
            "hit_tokens": s.hit_tokens, "miss_tokens": s.miss_tokens, "output_tokens": s.output_tokens,
            "hit_rate": s.hit_rate, "input_cost": s.input_cost, "output_cost": s.output_cost,
            "cost": s.cost}  # fmt: skip


def _row(key: str, model: str | None, cache: str, s: _Sum, zone: tzinfo | None,
         ends: float | None = None) -> OverviewRow:  # fmt: skip
    return OverviewRow(group=key, model=model, cache=cache, source=s.source, agents=list(s.agents),
                       models=list(s.models), started=iso(s.started, zone), ended=iso(s.ended, zone),
                       ends=iso(ends, zone), **_figures(s))  # fmt: skip


def _total(cache: str, s: _Sum) -> OverviewTotal:
    return OverviewTotal(cache=cache, **_figures(s))
