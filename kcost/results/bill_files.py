"""A bill written by `kcost bill --format json`, read back (a baseline for `check`, a side of `diff`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from kcost.errors import InputError, pydantic_error
from kcost.inputs.documents import Lines, load_json
from kcost.inputs.files import read_text
from kcost.results import BillReport, adapter
from kcost.results.bill import Summary, TurnBill


def is_bill(path: str) -> bool:
    """A JSON file that says it is a kcost bill (cheap: looks at its start)."""
    p = Path(path)
    if path == "-" or p.suffix != ".json" or not p.is_file():
        return False
    with p.open("rb") as fh:
        head = fh.read(200)
    return b'"schema_version"' in head and b'"generator"' in head


def load_bill(path: str) -> BillReport:
    data, lines = load_json(read_text(path, "bill"), path)
    if not isinstance(data, dict) or "runs" not in data:
        raise InputError("not a kcost bill (kcost bill --format json writes one)", source=path)
    try:
        report: BillReport = adapter(BillReport).validate_python(data)
    except ValidationError as exc:
        raise pydantic_error(exc, path, lines) from None
    if not report.runs:
        raise InputError("the bill has no runs", source=path, field="runs")
    _hold(report, path, lines)
    return report


def _hold(report: BillReport, path: str, lines: Lines) -> None:
    """A bill read back is held to what kcost guarantees of the bills it writes, at every level (each turn, each
    session's summary, each run's total): no negative money or tokens (a declared write discount apart), hits and
    misses that make up the input, a hit rate within 0-100%, a total that is the sum of its parts; and each
    session's total the sum of its turns', each run's total the sum of its sessions'. A bill that breaks one was
    edited or is not kcost's: named, not compared."""

    def fail(message: str, where: tuple[object, ...]) -> None:
        raise InputError(message, source=path, line=lines.get(where), field=".".join(map(str, where)))

    for r, run in enumerate(report.runs):
        for s, bill in enumerate(run.sessions):
            where = ("runs", r, "sessions", s, "summary")
            _signs(bill.summary, where, fail)
            if bill.turns and sum(t.total for t in bill.turns) != bill.summary.total:
                fail("the session's total is not the sum of its turns", (*where, "total"))
            for t, turn in enumerate(bill.turns):
                _signs(turn, ("runs", r, "sessions", s, "turns", t), fail)
                _sums(turn, ("runs", r, "sessions", s, "turns", t), fail)
            _sums(bill.summary, where, fail)
        if sum(b.summary.total for b in run.sessions) != run.total.total:
            fail("the run's total is not the sum of its sessions", ("runs", r, "total", "total"))
        _signs(run.total, ("runs", r, "total"), fail)
        _sums(run.total, ("runs", r, "total"), fail)


Fail = Callable[[str, tuple[object, ...]], None]


def _signs(figures: TurnBill | Summary, where: tuple[object, ...], fail: Fail) -> None:
    """No negative money (a write premium apart: a declared discount makes it negative) or tokens."""
    for name in ("total", "hit_cost", "miss_cost", "output_cost", "input_cost"):
        if getattr(figures, name, 0) < 0:
            fail("money cannot be negative", (*where, name))
    for name in ("input_tokens", "hit_tokens", "miss_tokens", "output_tokens"):
        if getattr(figures, name) < 0:
            fail("tokens cannot be negative", (*where, name))


def _sums(figures: TurnBill | Summary, where: tuple[object, ...], fail: Fail) -> None:
    """Hits and misses make up the input, the hit rate is a share, the total is the sum of its parts."""
    if figures.hit_tokens + figures.miss_tokens != figures.input_tokens:
        fail("hit_tokens and miss_tokens do not add up to input_tokens", (*where, "input_tokens"))
    if not 0 <= figures.hit_rate <= 1:
        fail("a hit rate is a share, from 0 to 1", (*where, "hit_rate"))
    if figures.hit_cost + figures.miss_cost + figures.write_premium + figures.output_cost != figures.total:
        fail("the total is not the sum of hit_cost, miss_cost, write_premium and output_cost", (*where, "total"))
