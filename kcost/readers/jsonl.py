"""JSON Lines, read one record at a time with its line number; a broken line is `file:line: ...`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kcost.errors import InputError, file_error


def records(path: Path | str, text: str | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line."""
    name = str(path)
    if text is None:
        text = read_text(path)
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=name, line=number) from None
        except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
            raise InputError(f"cannot read this record: {type(exc).__name__}", source=name, line=number) from None


def read_text(path: Path | str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise file_error(exc, str(path)) from None


def field(record: Any, name: str, kind: type | tuple[type, ...], *, source: str, line: int, where: str = "") -> Any:
    """`record[name]`, checked to be of `kind`; otherwise an error naming the field."""
    value = record.get(name) if isinstance(record, dict) else None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # True is not a count
        label = f"{where}.{name}" if where else name
        expected = " or ".join(k.__name__ for k in kinds)
        raise InputError(f"expected {expected}, got {type(value).__name__}", source=source, line=line, field=label)
    return value
