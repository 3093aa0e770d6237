"""Turn specs through the reader contract: which files are turn specs, and in which notation (YAML, JSON or JSON
Lines), one reader each in `registry.TURN_SPECS`. A turn spec's session is the requests it describes, built by
kcost.readers.specs.turnspec as soon as the run finds the file (it holds no calls to rebuild). This module is light:
the spec's parser and its models are imported only when a spec is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError
from kcost.inputs.documents import load_yaml
from kcost.readers.registry import Reader
from kcost.readers.specs.turnspec import read_turnspec

if TYPE_CHECKING:
    from pathlib import Path

    from kcost.model.session import Session
    from kcost.readers.source import Source

_TURN_KEYS = {"new", "output", "keep", "edit_at", "repeat"}


def _turns_like(data: Any) -> bool:
    """Does a whole document look like a turn spec's: a mapping with `turns`, or a list of turns (each a mapping
    with a turn's key: a JSON array of other records, Gemini CLI's `logs.json` say, is none)?"""
    if isinstance(data, dict):
        return "turns" in data
    return isinstance(data, list) and bool(data) and all(isinstance(t, dict) and t.keys() & _TURN_KEYS for t in data)


def _spec_like(first: Any) -> bool:
    """Does a first record look like a turn spec's: a list of turns, a spec, a header line or a turn line?"""
    if isinstance(first, list):
        return True
    return isinstance(first, dict) and bool("turns" in first or "session" in first or first.keys() & _TURN_KEYS)


class TurnSpec(Reader):
    """A turn spec in the notation `name`, known by its file's suffix (`named_by`) or by a first record that looks
    like a spec's in a file whose notation (`Source.sniff`: by suffix, else by content) is this one."""

    named_by: tuple[str, ...] = ()  # suffixes that make a file this notation by its name alone

    def recognise(self, source: Source) -> bool:
        if source.suffix in self.named_by:
            return True
        if not (_spec_like(source.first_record) and source.sniff() == self.name):
            return False
        if source.name == "-" or not source.suffix:
            return True  # stdin, or a file named for no notation: its content decides
        try:  # a file named for something else (README.md, notes.txt): a spec only if it reads as one
            self.vet(source)
        except InputError:
            return False
        return True

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Session:
        assert not isinstance(unit, Path)  # a turn spec is one file: no folder is ever claimed for one
        return read_turnspec(unit, self.name)


class Yaml(TurnSpec):
    name = "yaml"
    suffixes = named_by = (".yaml", ".yml")

    def vet(self, source: Source) -> None:
        """A YAML file found in a folder is a turn spec only if it looks like one: a list, or a mapping with
        `turns` (other YAML, a config, is passed over)."""
        data, _ = load_yaml(source.text, source.name)
        if not _turns_like(data):
            raise InputError("a YAML file that is no turn spec", source=source.name)


class Json(TurnSpec):
    name = "json"
    suffixes = (".json",)

    def vet(self, source: Source) -> None:
        """A JSON document is a turn spec only if it looks like one (`_turns_like`); any other, found in a folder
        or named for JSON, is no session."""
        if not _turns_like(source.first_record):
            raise InputError("a JSON document that is no turn spec", source=source.name)


class Jsonl(TurnSpec):
    name = "jsonl"
    suffixes = (".jsonl", ".ndjson")
