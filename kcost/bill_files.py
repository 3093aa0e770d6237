"""A bill written by `kcost bill --format json`, read back (a baseline for `check`, a side of `diff`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from kcost.document import load_json
from kcost.errors import InputError, pydantic_error
from kcost.files import read_text
from kcost.results import BillReport, adapter


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


def _hold(report: BillReport, path: str, lines: dict[tuple[object, ...], int]) -> None:
    """A bill read back is held to what kcost guarantees of the bills it writes: no negative money (a declared
    write discount apart), each session's total the sum of its turns', each run's total the sum of its
    sessions'. A bill that breaks one was edited or is not kcost's: named, not compared."""
    for r, run in enumerate(report.runs):
        for s, bill in enumerate(run.sessions):
            where = ("runs", r, "sessions", s, "summary")
            for name in ("total", "hit_cost", "miss_cost", "output_cost", "input_cost"):
                if getattr(bill.summary, name) < 0:
                    raise InputError("money cannot be negative", source=path, line=lines.get((*where, name)),
                                     field=".".join(map(str, (*where, name))))  # fmt: skip
            if bill.turns and sum(t.total for t in bill.turns) != bill.summary.total:
                field = ".".join(map(str, (*where, "total")))
                raise InputError("the session's total is not the sum of its turns", source=path,
                                 line=lines.get((*where, "total")), field=field)  # fmt: skip
        if sum(b.summary.total for b in run.sessions) != run.total.total:
            raise InputError("the run's total is not the sum of its sessions", source=path,
                             line=lines.get(("runs", r, "total", "total")), field=f"runs.{r}.total.total")  # fmt: skip
