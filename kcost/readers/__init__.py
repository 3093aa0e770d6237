"""Readers: one module per input format, each turning a file (or a folder of them) into sessions of requests.

`read_all(paths)` finds each format by name and content: turn specs (YAML, JSON, JSONL), Kimi API logs,
legacy Kimi CLI session folders, Kimi Code wires, Claude Code logs and Codex rollouts. A folder is walked:
every session in it is read, and files that are none of these are passed over and counted.
`--input-format` overrides the guess.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcost.errors import InputError
from kcost.models import Session
from kcost.options import TURN_FORMATS
from kcost.readers.document import Lines
from kcost.readers.source import Source, open_source
from kcost.tokenizer import Estimate, TokenCounter

_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".ndjson")


@dataclass
class Found:
    """What a read produced: the sessions, and the files passed over (with why)."""

    sessions: list[Session] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def read(path: str, fmt: str = "auto", *, counter: TokenCounter | None = None) -> list[Session]:
    """Every session in `path` (`-` for stdin, a file, or a folder)."""
    return read_all([path], fmt, counter=counter).sessions


def read_all(paths: list[str], fmt: str = "auto", *, counter: TokenCounter | None = None) -> Found:
    from kcost.readers import kimi_api

    counter = counter or Estimate()
    found = Found()
    batch: list[tuple[str, int, Any]] = []  # Batch API input and output files are joined on custom_id
    for path in paths:
        for kind, unit in _units(path, fmt, found):
            if kind == "kimi-api":
                items, lines = _items(unit)
                if all(kimi_api.kind_of(r) in ("batch-input", "batch-output") for _, _, r in items):
                    batch += items
                    continue
                found.sessions.append(_session(kind, unit, counter, items, lines))
            else:
                found.sessions.append(_session(kind, unit, counter))
    if batch:
        first = Source(batch[0][0], "")
        found.sessions.append(_session("kimi-api", first, counter, batch))
    empty = [s for s in found.sessions if not s.requests and not any(s.reported)]
    found.skipped += [f"{s.source}: no model calls in it" for s in empty]
    found.sessions = [s for s in found.sessions if s not in empty]
    if not found.sessions:
        raise InputError("no sessions found", source=", ".join(paths), hint="give a session file or folder")
    return found


def _units(path: str, fmt: str, found: Found) -> Iterator[tuple[str, Source | Path]]:
    """(format, source or Kimi CLI folder) for each session under `path`."""
    if path == "-":
        source = open_source("-")
        yield _classify(source, fmt), source
        return
    p = Path(path)
    if p.is_dir():
        yield from _walk(p, fmt, found)
        return
    if p.exists() and fmt in ("auto", "kimi-cli") and _in_kimi_cli_folder(p):
        yield "kimi-cli", p.parent
        return
    source = open_source(path)
    yield _classify(source, fmt), source


def _in_kimi_cli_folder(p: Path) -> bool:
    from kcost.readers import kimi_cli

    named = p.name == "wire.jsonl" or (p.name.startswith("context") and p.suffix == ".jsonl")
    return named and kimi_cli.is_session_dir(p.parent)


def _walk(root: Path, fmt: str, found: Found) -> Iterator[tuple[str, Source | Path]]:
    from kcost.readers import kimi_cli

    claimed: set[Path] = set()
    if fmt in ("auto", "kimi-cli"):
        for folder in sorted([root, *(d for d in root.rglob("*") if d.is_dir())]):
            if kimi_cli.is_session_dir(folder):
                claimed.update(f for f in folder.iterdir() if f.is_file())
                yield "kimi-cli", folder
    if fmt == "kimi-cli":
        return
    for file in sorted(f for f in root.rglob("*") if f.is_file() and f.suffix in _SUFFIXES and f not in claimed):
        try:
            source = open_source(str(file))
            kind = _classify(source, fmt)
            if kind == "yaml" and fmt == "auto" and not _turn_spec(source):
                raise InputError("a YAML file that is no turn spec", source=source.name)
        except InputError as exc:
            found.skipped.append(str(exc))
            continue
        yield kind, source


def _turn_spec(source: Source) -> bool:
    """In a folder walk: does this YAML file look like a turn spec (a list, or a mapping with `turns`)?"""
    from kcost.readers.document import load_yaml

    data, _ = load_yaml(source.text, source.name)
    return isinstance(data, list) or (isinstance(data, dict) and "turns" in data)


def _classify(source: Source, fmt: str) -> str:
    """The format of one file: by suffix for YAML, else by its first record."""
    if fmt != "auto":
        return fmt
    if source.suffix in (".yaml", ".yml"):
        return "yaml"
    from kcost.readers import claude_code, codex, kimi_api

    first = _first_record(source)
    if isinstance(first, list):
        return source.sniff()
    if isinstance(first, dict):
        if first.get("role") == "_system_prompt":
            raise InputError("a Kimi CLI context file needs its wire.jsonl beside it", source=source.name,
                             hint="give the session folder")  # fmt: skip
        if first.get("type") == "metadata" and "protocol_version" in first:
            if "created_at" in first:
                return "kimi-code"
            raise InputError("a Kimi CLI wire needs its context files beside it", source=source.name,
                             hint="give the session folder")  # fmt: skip
        if "turns" in first or "session" in first or set(first) & {"new", "output", "keep", "edit_at", "repeat"}:
            return source.sniff()
        if codex.looks_like(first):
            return "codex"
        if claude_code.looks_like(first):
            return "claude-code"
        if kimi_api.kind_of(first) is not None:
            return "kimi-api"
    raise InputError("not a format kcost reads", source=source.name, hint="see kcost bill --help, --input-format")


def _first_record(source: Source) -> Any:
    """The whole document if it is one JSON value, else its first line's (JSON Lines)."""
    if not source.text.lstrip().startswith(("{", "[")):
        return []  # not JSON: a YAML turn spec
    try:
        return json.loads(source.text)
    except (ValueError, RecursionError) as whole:  # JSONDecodeError is a ValueError
        filled = [(n, s) for n, s in enumerate(source.text.splitlines(), start=1) if s.strip()]
        number, first = filled[0]
        try:
            return json.loads(first)
        except (ValueError, RecursionError) as exc:
            # JSON Lines (a first line that looks whole, or a next line that starts a record): name the line;
            # else the document's own error
            one_per_line = first.rstrip().endswith("}") or (len(filled) > 1 and filled[1][1].startswith("{"))
            if one_per_line or not isinstance(whole, json.JSONDecodeError):
                bad, line = exc, number
            else:
                bad, line = whole, whole.lineno
            what = f"not valid JSON: {bad.msg}" if isinstance(bad, json.JSONDecodeError) else "cannot read this record"
            raise InputError(what, source=source.name, line=line) from None


def _items(source: Source | Path) -> tuple[list[tuple[str, int, Any]], Lines | None]:
    """(source, line, record) of a Kimi API log, and for one JSON document the line of each of its values."""
    from kcost.readers.document import load_json
    from kcost.readers.jsonl import records

    assert isinstance(source, Source)
    if Source(source.name, source.text).sniff() == "json":  # by content: JSON Lines saved as .json too
        data, lines = load_json(source.text, source.name)
        return [(source.name, 1, data)], lines
    return [(source.name, line, record) for line, record in records(source.name, source.text)], None


def _session(
    kind: str, unit: Source | Path, counter: TokenCounter, items: list[Any] | None = None, lines: Lines | None = None
) -> Session:
    from kcost.prompts import to_session

    if isinstance(unit, Path):  # a legacy Kimi CLI session folder
        from kcost.readers import kimi_cli

        return to_session(kimi_cli.read_calls(unit), counter=counter, source=str(unit), name=unit.resolve().name,
                          notes=("tools are not stored by the legacy Kimi CLI: not counted",))  # fmt: skip
    if kind in TURN_FORMATS:
        from kcost.readers.turnspec import read_turnspec

        return read_turnspec(unit, kind)
    if kind == "kimi-api":
        from kcost.readers import kimi_api

        if items is None:
            items, lines = _items(unit)
        notes: list[str] = []
        calls = kimi_api.read_calls(items, lines, notes)
        return to_session(calls, counter=counter, source=unit.name, name=unit.stem, notes=notes)
    if kind == "kimi-code":
        from kcost.readers import kimi_code

        code_notes: list[str] = []
        calls = kimi_code.read_calls(unit, code_notes)
        return to_session(calls, counter=counter, source=unit.name, name=_kimi_code_name(unit), notes=code_notes)
    if kind in ("claude-code", "codex"):
        from kcost.readers import claude_code, codex

        found: list[str] = []
        calls = (claude_code if kind == "claude-code" else codex).read_calls(unit, found)
        return to_session(calls, counter=counter, source=unit.name, name=unit.stem, calibrate=False, notes=found)
    if kind == "kimi-cli":
        raise InputError("give the Kimi CLI session folder", source=unit.name, field="--input-format")
    raise InputError(f"unknown input format {kind!r}", field="--input-format")


def _kimi_code_name(source: Source) -> str:
    """`<session id>/<agent>` for `.../<session id>/agents/<agent>/wire.jsonl`, else the file's name."""
    p = Path(source.name)
    if p.name == "wire.jsonl" and p.parent.parent.name == "agents":
        return f"{p.parent.parent.parent.name}/{p.parent.name}"
    return p.name.removesuffix(".wire.jsonl").removesuffix(".jsonl")
