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
    return report
