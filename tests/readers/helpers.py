"""What the agents' reader tests share: a bill as JSON through the command line, each call's counts as its log
gives them, and an empty home to lay an agent's files out in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers.registry import READERS


def bill(*args: str) -> dict[str, Any]:
    """`kcost bill ARGS --format json`, which must succeed."""
    result = CliRunner().invoke(cli, ["bill", *args, "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def counts(session: Any) -> list[tuple[int, int, int, int]]:
    """(prompt, cached, written, output) of each call as logged."""
    return [(u.prompt, u.cached, u.written, u.output) for u in session.reported if u is not None]


def summed(sessions: list[Any]) -> tuple[int, int, int, int]:
    """`counts` added up over every call of the sessions."""
    rows = [c for s in sessions for c in counts(s)]
    return (sum(r[0] for r in rows), sum(r[1] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows))


def as_home(folder: Path, monkeypatch: pytest.MonkeyPatch, *more: str) -> Path:
    """`folder` made the home, every agent's variable unset (the XDG folders and `more` too)."""
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: folder))
    for e in READERS:
        if e.home is not None:
            monkeypatch.delenv(e.home.env, raising=False)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", *more):
        monkeypatch.delenv(name, raising=False)
    return folder


def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home, as `as_home` makes it."""
    folder = tmp_path / "home"
    folder.mkdir()
    return as_home(folder, monkeypatch)
