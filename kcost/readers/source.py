"""Input sources: a file path or `-` for stdin, read once as text, with a format guess from name or content."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from kcost.errors import InputError, file_error

TURN_FIELDS = {"new", "output", "reasoning", "keep", "edit_at", "repeat", "idle", "previous_output", "session"}
_BY_SUFFIX = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class Source:
    name: str  # as the user wrote it, for messages
    text: str
    suffix: str = ""

    @property
    def stem(self) -> str:
        return "stdin" if self.name == "-" else Path(self.name).stem

    def sniff(self) -> str:
        """The format by file suffix; for stdin or an unknown suffix, by content (JSONL is never one JSON)."""
        if self.suffix in _BY_SUFFIX:
            return _BY_SUFFIX[self.suffix]
        body = self.text.lstrip()
        if not body.startswith(("{", "[")):
            return "yaml"
        try:
            value = json.loads(body)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data":
                return "jsonl"
            return "yaml"  # YAML flow style, or broken JSON, which the YAML parser locates as well
        if isinstance(value, dict) and "turns" not in value and value.keys() & TURN_FIELDS:
            return "jsonl"  # a one-line stream of turns
        return "json"


def open_source(path: str) -> Source:
    """Read `path` (or stdin for `-`) as UTF-8; an unreadable or empty input raises `InputError`."""
    if path == "-":
        try:
            text = sys.stdin.read().removeprefix("\ufeff")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", source="-") from None
        source = Source("-", text)
    else:
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise file_error(exc, path, "session file") from None
        source = Source(path, text, file.suffix.lower())
    if not source.text.strip():
        raise InputError("is empty", source=source.name)
    return source
