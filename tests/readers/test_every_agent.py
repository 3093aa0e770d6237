"""Every agent kcost reads, in one home: with no path, `kcost bill --by agent` gives one row per agent, and each row
is what billing that agent's homes alone gives (`--input-format <agent>`, which reads only its homes).

An agent's fixtures are placed in the home where the agent writes them: those of the first agents as the tests of
discovery place them (`PLACED`); any other agent's from `tests/fixtures/<agent>/home/`, a tree laid out from the
home folder down (`.local/share/amp/threads/T-....json`; a JSON index naming the folders of the home it was made in
names them under `/home/dev`), so a new reader's fixtures join this test by being laid out so, with no line here."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers.registry import READERS
from tests.readers.test_discovery import claude, codex, kimi_cli, kimi_code

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
AGENTS = [e.name for e in READERS if e.home is not None]
MADE_IN = "/home/dev"  # the home the fixtures' own indexes (Crush's `projects.json`) name


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy(source, target)


PLACED: dict[str, Callable[[Path], object]] = {
    "kimi-cli": lambda home: kimi_cli(home / ".kimi"),
    "kimi-code": lambda home: kimi_code(home / ".kimi-code"),
    "codex": lambda home: codex(home / ".codex"),
    "claude-code": lambda home: claude(home / ".claude", "-home-u-spotter", "spotter-short.jsonl"),
    "opencode": lambda home: _copy(FIXTURES / "opencode" / "storage", home / ".local/share/opencode/storage"),
    "gemini-cli": lambda home: _copy(FIXTURES / "gemini-cli" / "session-2026-01-10T09-30-5f0c2f3e.jsonl",
                                     home / ".gemini/tmp/5f0c2f3e/chats/session-2026-01-10T09-30-5f0c2f3e.jsonl"),
    "qwen-code": lambda home: _copy(FIXTURES / "qwen-code" / "7d2e9a4c-1b3f-4e5d-8a6b-9c0d1e2f3a4b.jsonl",
                                    home / ".qwen/projects/demo/chats/7d2e9a4c-1b3f-4e5d-8a6b-9c0d1e2f3a4b.jsonl"),
}  # fmt: skip


def place(agent: str, home: Path) -> None:
    if agent in PLACED:
        PLACED[agent](home)
        return
    tree = FIXTURES / agent / "home"
    assert tree.is_dir(), f"{agent}: no tests/fixtures/{agent}/home/ laid out as the agent's home"
    shutil.copytree(tree, home, dirs_exist_ok=True)
    for placed in home.rglob("*.json"):  # an index naming folders of the home it was made in names this one
        text = placed.read_text(encoding="utf-8")
        if MADE_IN in text:
            placed.write_text(text.replace(f'"{MADE_IN}', f'"{home}'), encoding="utf-8")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding every agent's fixtures where the agent writes them, every agent's variable unset."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: folder))
    for entry in READERS:
        if entry.home is not None:
            monkeypatch.delenv(entry.home.env, raising=False)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    for agent in AGENTS:
        place(agent, folder)
    return folder


def by_agent(*args: str) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["bill", *args, "--by", "agent", "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    return {row["group"]: row for row in json.loads(result.stdout)["rows"]}


FIGURES = ("sessions", "turns", "input_tokens", "hit_tokens", "miss_tokens", "output_tokens", "cost")


@pytest.mark.parametrize("usage", ["auto", "reported"])
def test_one_row_per_agent_each_its_homes_billed_alone(home: Path, usage: str) -> None:
    """Simulated, every agent has its row; as reported, every agent whose log reports usage (one that logs none,
    as Crush logs no call's usage, is passed over, and billed alone says why)."""
    rows = by_agent("--usage", usage)
    for agent in AGENTS:
        if agent not in rows and usage == "reported":
            result = CliRunner().invoke(cli, ["bill", "--usage", "reported", "--input-format", agent])
            assert result.exit_code == 2 and "the log reports no usage" in result.stderr, (agent, result.stderr)
            continue
        alone = by_agent("--usage", usage, "--input-format", agent)
        assert list(alone) == [agent]
        assert {k: alone[agent][k] for k in FIGURES} == {k: rows[agent][k] for k in FIGURES}, agent
        assert rows[agent]["turns"] > 0, agent
    assert sorted(rows) == sorted(AGENTS) if usage == "auto" else len(rows) >= len(AGENTS) - 1
