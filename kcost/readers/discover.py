"""Finding sessions: each path's format, from its name and first record, and the session every unit makes.

Turn specs are chosen by suffix or content; a log by the first reader of `registry.READERS` whose `detect`
takes its first record. A folder is walked: folders a reader claims as sessions (a legacy Kimi CLI session)
first, then every file. Kimi Batch API input and output files given together are joined into one session.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import InputError
from kcost.options import TURN_FORMATS
from kcost.readers.document import Lines
from kcost.readers.registry import READERS, Reader, entry
from kcost.readers.source import Source, open_source
from kcost.session import Session
from kcost.transcripts.tokenizer import Estimate, TokenCounter

_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".ndjson")


@dataclass
class Found:
    """What a read produced: the sessions, and the files passed over (with why)."""

    sessions: list[Session] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def read_all(
    paths: list[str], fmt: str = "auto", *, counter: TokenCounter | None = None, prompts: bool = True
) -> Found:
    from kcost.readers import kimi_api

    counter = counter or Estimate()
    readers = _Readers()
    found = Found()
    batch: list[tuple[str, int, Any]] = []  # Batch API input and output files are joined on custom_id
    for path in paths:
        for kind, unit in _units(path, fmt, found, readers):
            if kind == "kimi-api":
                assert isinstance(unit, Source)
                items, lines = kimi_api.items_of(unit)
                if all(kimi_api.kind_of(r) in ("batch-input", "batch-output") for _, _, r in items):
                    batch += items
                    continue
                found.sessions.append(_transcript(readers.get(kind), unit, counter, prompts, (items, lines)))
            elif kind in TURN_FORMATS:
                from kcost.readers.turnspec import read_turnspec

                assert isinstance(unit, Source)
                found.sessions.append(read_turnspec(unit, kind))
            else:
                found.sessions.append(_transcript(readers.get(kind), unit, counter, prompts))
    if batch:
        first = Source(batch[0][0], b"")
        found.sessions.append(_transcript(readers.get("kimi-api"), first, counter, prompts, (batch, None)))
    empty = [s for s in found.sessions if not s.labels]  # no model call in it
    found.skipped += [f"{s.source}: no model calls in it" for s in empty]
    found.sessions = [s for s in found.sessions if s not in empty]
    if not found.sessions:
        raise InputError("no sessions found", source=", ".join(paths), hint="give a session file or folder")
    return found


class _Readers:
    """The registry's readers, each loaded once when first needed."""

    def __init__(self) -> None:
        self._loaded: dict[str, Reader] = {}

    def get(self, name: str) -> Reader:
        if name not in self._loaded:
            try:
                self._loaded[name] = entry(name).load()
            except KeyError:
                raise InputError(f"unknown input format {name!r}", field="--input-format") from None
        return self._loaded[name]

    def all(self) -> Iterator[Reader]:
        for e in READERS:
            yield self.get(e.name)


def _transcript(
    reader: Reader,
    unit: Source | Path,
    counter: TokenCounter,
    prompts: bool,
    items: tuple[list[tuple[str, int, Any]], Lines | None] | None = None,
) -> Session:
    from kcost.transcripts.prompts import to_session

    notes: list[str] = []
    if items is not None:  # a Kimi API log already parsed to find batch files
        from kcost.readers.kimi_api import KimiApi

        assert isinstance(reader, KimiApi)
        calls = reader.read_items(items[0], items[1], notes, prompts=prompts)
    else:
        calls = reader.read(unit, notes, prompts=prompts)
    name = reader.session_name(unit)
    source = str(unit) if isinstance(unit, Path) else unit.name
    return to_session(calls, counter=counter, source=source, name=name, notes=notes, prompts=prompts,
                      comparable=reader.comparable)  # fmt: skip


def _units(path: str, fmt: str, found: Found, readers: _Readers) -> Iterator[tuple[str, Source | Path]]:
    """(format, source or session folder) for each session under `path`."""
    if path == "-":
        source = open_source("-")
        yield _classify(source, fmt, readers), source
        return
    p = Path(path)
    if p.is_dir():
        yield from _walk(p, fmt, found, readers)
        return
    if p.exists():
        for reader in _folder_readers(fmt, readers):
            folder = reader.folder_of(p)
            if folder is not None:
                yield reader.name, folder
                return
    source = open_source(path)
    yield _classify(source, fmt, readers), source


def _folder_readers(fmt: str, readers: _Readers) -> list[Reader]:
    """The readers that may claim folders: the one named, or all of them."""
    if fmt == "auto":
        return list(readers.all())
    if fmt in TURN_FORMATS:
        return []
    return [readers.get(fmt)]


def _walk(root: Path, fmt: str, found: Found, readers: _Readers) -> Iterator[tuple[str, Source | Path]]:
    claimed: set[Path] = set()
    folder_readers = [
        r for r in _folder_readers(fmt, readers) if type(r).is_session_folder is not Reader.is_session_folder
    ]
    if folder_readers:
        for folder in sorted([root, *(d for d in root.rglob("*") if d.is_dir())]):
            for reader in folder_readers:
                if reader.is_session_folder(folder):
                    claimed.update(f for f in folder.iterdir() if f.is_file())
                    yield reader.name, folder
                    break
        if fmt != "auto" and fmt not in TURN_FORMATS:
            named = readers.get(fmt)
            if type(named).is_session_folder is not Reader.is_session_folder:
                return  # a folder format: its files are read through their folders
    for file in sorted(f for f in root.rglob("*") if f.is_file() and f.suffix in _SUFFIXES and f not in claimed):
        try:
            source = open_source(str(file))
            kind = _classify(source, fmt, readers)
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


_TURN_KEYS = {"new", "output", "keep", "edit_at", "repeat"}


def _classify(source: Source, fmt: str, readers: _Readers) -> str:
    """The format of one file: by suffix for YAML, else by its first record."""
    if fmt != "auto":
        return fmt
    if source.suffix in (".yaml", ".yml"):
        return "yaml"
    first = _first_record(source)
    if isinstance(first, list):
        return source.sniff()
    if isinstance(first, dict):
        if "turns" in first or "session" in first or first.keys() & _TURN_KEYS:
            return source.sniff()
        for reader in readers.all():
            try:
                if reader.detect(first):
                    return reader.name
            except InputError as exc:
                raise exc.located(source=source.name) from None
    raise InputError("not a format kcost reads", source=source.name, hint="see kcost bill --help, --input-format")


def _first_record(source: Source) -> Any:
    """The first line's JSON value (JSON Lines), else the whole document's; `[]` for what is not JSON."""
    if source.lead() not in (b"{", b"["):
        return []  # not JSON: a YAML turn spec
    number, first = source.first_line()
    try:
        return orjson.loads(first)
    except orjson.JSONDecodeError as at_first:
        try:
            return orjson.loads(source.data)
        except orjson.JSONDecodeError as whole:
            # JSON Lines (a first line that looks whole): name that line; else the document's own error
            after = source.data.index(first) + len(first)
            one_per_line = first.rstrip().endswith(b"}") or source.data[after : after + 4096].lstrip().startswith(b"{")
            if one_per_line:
                raise InputError(f"not valid JSON: {at_first.msg}", source=source.name, line=number) from None
            raise InputError(f"not valid JSON: {whole.msg}", source=source.name, line=whole.lineno) from None
