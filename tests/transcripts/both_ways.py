"""Logs read with a compiled part and with its Python oracle in its place: what the compiled builder's and the
compiled calibration's tests hold to be the same."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kcost.errors import InputError
from kcost.readers import read_all
from tests.conftest import generate_claude_logs, project_logs, without

Read = list[tuple[Any, ...]]  # each session's source, records (as a tuple: a turn spec's do not compare), notes


def read_both_ways(path: Path, module: ModuleType, name: str) -> tuple[Read, Read]:
    """The sessions of `path` with prompts rebuilt, read with `module.name` and with it set aside."""
    out = []
    for compiled in (True, False):
        if compiled:
            sessions = read_all([str(path)], workers=1, lenient=True).sessions
        else:
            with without(module, name):
                sessions = read_all([str(path)], workers=1, lenient=True).sessions
        out.append([(s.source, tuple(s.records), s.build_notes, s.token_counts, s.sized) for s in sessions])
    return out[0], out[1]


def every_log_both_ways(folder: Path, seed: int, module: ModuleType, name: str) -> list[Read]:
    """Every log of the project and 2 MB of the benchmark's generated logs (in `folder`), each read the same
    both ways; what each read."""
    generate_claude_logs(folder, 2.0, seed)
    read = []
    for path in [*project_logs(), folder]:
        try:
            compiled, python = read_both_ways(path, module, name)
        except InputError:
            continue  # not a log (a trace, a price file) or a bad one, as its own tests say
        assert compiled == python, path
        read.append(compiled)
    return read


def made_log_both_ways(log: tuple[str, list[dict[str, Any]]], module: ModuleType, name: str) -> None:
    """A made log (its file name and lines) read the same both ways, or refused with the same error."""
    file_name, lines = log
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, file_name)
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        try:
            compiled, python = read_both_ways(path, module, name)
        except InputError as exc:
            with without(module, name), pytest.raises(InputError, match=str(exc)):
                read_all([str(path)], workers=1, lenient=True)
            return
    assert compiled == python
