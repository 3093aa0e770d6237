"""Bills against budgets (`kcost check`), and two bills side by side (`kcost diff`).

Every comparison is exact: a limit is a `Decimal`, a measured value is computed from the bill's exact amounts
and token counts, and the comparison cross-multiplies instead of dividing (a hit rate passes when
`hits >= limit x inputs`). Nothing here reads files or prints.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from typing import Literal

from kcost.model.budgets import Budgets
from kcost.results import BillReport, SessionBill, Summary
from kcost.results.check import TOTAL, CheckReport, DiffReport, Result, SessionDiff, Side


def check(
    report: BillReport, budgets: Budgets, baseline: BillReport | None = None, baseline_name: str | None = None
) -> CheckReport:
    """Every budget against every session of the report's first run (and the total)."""
    run = report.runs[0]
    results: list[Result] = []
    match = _matcher(baseline.runs[0].sessions if baseline else [])
    with localcontext() as exact:
        exact.prec = 80  # products of limits and token counts, never rounded
        for bill in run.sessions:
            results += _session(bill, budgets, match(bill, run.sessions))
        results += _total(run.total, budgets, baseline.runs[0].total if baseline else None)
    failed = sorted((r for r in results if not r.passed), key=lambda r: -past(r))
    return CheckReport(
        prices=report.prices,
        cache=run.cache,
        budgets=budgets,
        baseline=baseline_name,
        passed=not failed,
        failures=len(failed),
        results=failed + [r for r in results if r.passed],
        total=run.total,
    )


def past(r: Result) -> Decimal:
    """How far a result lies past its limit, as a share of the limit (negative: within it), so that failures of
    budgets in dollars and in percent rank against each other: $7.70 against a $0.30 limit is 24.7 past it, a 0%
    hit rate against 80% is 1. A limit of 0 is passed by any share at all."""
    beyond = r.value - r.limit if r.budget.startswith("max") else r.limit - r.value
    if r.limit:
        return beyond / abs(r.limit)
    return Decimal("Infinity") if beyond > 0 else Decimal(0) if not beyond else Decimal("-Infinity")


def _result(bill: SessionBill | None, budget: str, limit: Decimal, value: Decimal, passed: bool, what: str) -> Result:
    session = bill.name if bill else TOTAL
    verdict = "within" if passed else "over" if budget.startswith("max") else "under"
    return Result(
        session=session,
        source=bill.source if bill else None,
        budget=budget,
        limit=limit,
        value=value,
        passed=passed,
        message=f"{session}: {what} {_show(budget, value.normalize())} is {verdict} the {budget} budget of "
        f"{_show(budget, limit)}",
    )


def _show(budget: str, value: Decimal) -> str:
    """A limit as the user wrote it, a measured value without trailing zeros."""
    if budget.endswith("usd") or budget.endswith("mtok"):
        return f"${value:f}"
    return f"{value:f}%" if budget.endswith("pct") else f"{value:f}"


def _session(bill: SessionBill, b: Budgets, base: SessionBill | None) -> Iterable[Result]:
    s = bill.summary
    if b.max_session_usd is not None:
        yield _result(bill, "max-session-usd", b.max_session_usd, s.total, s.total <= b.max_session_usd, "cost")
    if b.max_turn_usd is not None:
        worst = max(bill.turns, key=lambda t: t.total)
        yield _result(bill, "max-turn-usd", b.max_turn_usd, worst.total, worst.total <= b.max_turn_usd,
                      f"turn {worst.turn} cost")  # fmt: skip
    yield from _rates(bill, s, b)
    if base is not None:
        yield from _increase(bill, s.total, base.summary.total, b)


def _rates(bill: SessionBill | None, s: Summary, b: Budgets) -> Iterable[Result]:
    if b.min_hit_rate is not None and s.input_tokens:
        rate = _measured(Decimal(s.hit_tokens) / s.input_tokens, up=False)
        ok = s.hit_tokens >= b.min_hit_rate * s.input_tokens
        yield _result(bill, "min-hit-rate", b.min_hit_rate, rate, ok, "hit rate")
    if b.max_blended_usd_per_mtok is not None and s.input_tokens:
        ok = s.input_cost * 1_000_000 <= b.max_blended_usd_per_mtok * s.input_tokens
        blended = _measured(s.input_cost * 1_000_000 / s.input_tokens, up=True)
        yield _result(bill, "max-blended-usd-per-mtok", b.max_blended_usd_per_mtok, blended, ok,
                      "blended input price")  # fmt: skip


def _increase(bill: SessionBill | None, now: Decimal, then: Decimal, b: Budgets) -> Iterable[Result]:
    grew = now - then
    if b.max_increase_usd is not None:
        yield _result(bill, "max-increase-usd", b.max_increase_usd, grew, grew <= b.max_increase_usd,
                      f"increase over the baseline (${then.normalize():f} -> ${now.normalize():f})")  # fmt: skip
    if b.max_increase_pct is not None:
        pct = _measured(grew * 100 / then, up=True) if then else Decimal(0) if not grew else Decimal(100)
        ok = grew * 100 <= b.max_increase_pct * then if then else grew <= 0
        yield _result(bill, "max-increase-pct", b.max_increase_pct, pct, ok,
                      f"increase over the baseline (${then.normalize():f} -> ${now.normalize():f})")  # fmt: skip


def _total(s: Summary, b: Budgets, base: Summary | None) -> Iterable[Result]:
    if b.max_total_usd is not None:
        yield _result(None, "max-total-usd", b.max_total_usd, s.total, s.total <= b.max_total_usd, "cost")
    if base is not None:
        yield from _increase(None, s.total, base.total, b)


def _measured(value: Decimal, *, up: bool) -> Decimal:
    """A ratio to 10 decimals, rounded toward failing (up for a maximum, down for a minimum), so the figure
    shown never contradicts the verdict."""
    return value.quantize(Decimal("1E-10"), rounding=ROUND_CEILING if up else ROUND_FLOOR)


def _relative(bills: Sequence[SessionBill]) -> dict[str, SessionBill]:
    """Sessions by their path below the folder all of them share (`../base/sessions/a.yaml` -> `a.yaml`)."""
    sources = [b.source for b in bills if b.source not in ("", "-")]
    if not sources:
        return {}
    if len({os.path.isabs(s) for s in sources}) > 1:  # absolute and relative paths share no folder: by name only
        return {}
    root = (
        os.path.commonpath([os.path.dirname(s) or "." for s in sources])
        if len(sources) > 1
        else os.path.dirname(sources[0])
    )
    return {os.path.relpath(b.source, root or "."): b for b in bills if b.source not in ("", "-")}


def _matcher(old: Sequence[SessionBill]) -> Callable[[SessionBill, Sequence[SessionBill]], SessionBill | None]:
    """The baseline session of a session: same file, else same path below the bill's folder, else same name
    where that name is unique on both sides."""
    by_source = {b.source: b for b in old}
    by_relative = _relative(old)
    counts = Counter(b.name for b in old)
    by_name = {b.name: b for b in old if counts[b.name] == 1}
    seen: dict[int, tuple[dict[int, str], Counter[str]]] = {}  # per list of new sessions: worked out once

    def match(bill: SessionBill, new: Sequence[SessionBill]) -> SessionBill | None:
        if bill.source in by_source:
            return by_source[bill.source]
        if id(new) not in seen:
            seen[id(new)] = ({id(b): key for key, b in _relative(new).items()}, Counter(b.name for b in new))
        relatives, new_names = seen[id(new)]
        relative = relatives.get(id(bill))
        if relative is not None and relative in by_relative:
            return by_relative[relative]
        if new_names[bill.name] == 1:
            return by_name.get(bill.name)
        return None

    return match


# ---- diff -------------------------------------------------------------------------------------------------


def diff(a: BillReport, b: BillReport, *, before: str, after: str) -> DiffReport:
    old, new = a.runs[0], b.runs[0]
    match = _matcher(old.sessions)
    matched: set[str] = set()
    rows = []
    for bill in new.sessions:
        prior = match(bill, new.sessions)
        if prior is not None:
            matched.add(prior.source)
        rows.append(_row(bill.name, bill.source, prior.summary if prior else None, bill.summary))
    rows += [_row(p.name, p.source, p.summary, None) for p in old.sessions if p.source not in matched]
    order = {"new": 0, "removed": 0, "changed": 1, "unchanged": 2}
    rows.sort(key=lambda r: (order[r.status], -abs(r.change or Decimal(0))))
    return DiffReport(
        before=before,
        after=after,
        cache_before=old.cache.label,
        cache_after=new.cache.label,
        sessions=rows,
        total=_row(TOTAL, "", old.total, new.total),
    )


def _side(s: Summary) -> Side:
    return Side(total=s.total, hit_rate=s.hit_rate, blended_input_per_mtok=s.blended_input_per_mtok, turns=s.turns)


def _row(name: str, source: str, then: Summary | None, now: Summary | None) -> SessionDiff:
    change = pct = None
    if then is not None and now is not None:
        change = now.total - then.total
        pct = (change * 100 / then.total).quantize(Decimal("0.01")) if then.total else None
        status: Literal["changed", "unchanged", "new", "removed"] = (
            "changed" if change or now.turns != then.turns else "unchanged"
        )
    else:
        status = "new" if then is None else "removed"
    return SessionDiff(
        session=name,
        source=source,
        status=status,
        before=_side(then) if then else None,
        after=_side(now) if now else None,
        change=change,
        change_pct=pct,
    )
