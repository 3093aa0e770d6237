"""`kcost bill --by project` names each session's project as the user knows it: the working folder (or project
name) its agent records, read from the agent's own files, and never a folder of the agent's log layout (a Codex
day folder `09`, Gemini CLI's `chats`, Amp's `threads`); a session whose agent records none is under `no
project`.

The home holds every agent's fixtures where the agent writes them (`tests/readers/test_every_agent.py`), and
besides them: a Codex rollout that records its `cwd`, Gemini CLI chats under a project's short id (with the
`.project_root` the CLI writes beside them) and under the SHA-256 of its path (with the `projects.json` naming
it), and an Amp thread that records its workspace (`env.initial.trees`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers.registry import READERS
from tests.readers.test_every_agent import AGENTS, place

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHOP = "/home/dev/shop"  # the Codex fixture's recorded `cwd`
WIDGETS = "/home/dev/src/widgets"  # a Gemini CLI project kept under its short id
OLD = "/home/dev/old-gemini"  # a Gemini CLI project kept under the SHA-256 of its path
AMP = "/home/dev/my app"  # an Amp thread's workspace, `file:///home/dev/my%20app`


def _copy(source: Path, target: Path, text: tuple[str, str] | None = None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    data = source.read_text(encoding="utf-8")
    target.write_text(data.replace(*text) if text else data, encoding="utf-8")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("projects") / "home"
    folder.mkdir()
    for agent in AGENTS:
        place(agent, folder)
    _copy(FIXTURES / "codex" / "thread-spawn-subagent.jsonl",
          folder / ".codex/sessions/2026/05/09/rollout-2026-05-09T10-00-00-0a1b2c3d.jsonl")  # fmt: skip
    gemini = FIXTURES / "gemini-cli"
    slug = folder / ".gemini/tmp/widgets"
    _copy(gemini / "session-2025-11-03T14-20-9b1c2d3e.json", slug / "chats/session-2025-11-03T14-20-9b1c2d3e.json")
    (slug / ".project_root").write_text(WIDGETS, encoding="utf-8")
    hashed = folder / ".gemini/tmp" / hashlib.sha256(OLD.encode()).hexdigest()
    _copy(gemini / "session-2026-01-10T09-30-5f0c2f3e.jsonl", hashed / "chats/session-2026-01-10T09-30-0e0e0e0e.jsonl",
          ("5f0c2f3e-8a1d-4b7e-9c61-2d3e4f5a6b7c", "0e0e0e0e-8a1d-4b7e-9c61-2d3e4f5a6b7c"))  # fmt: skip
    (folder / ".gemini/projects.json").write_text(json.dumps({"projects": {OLD: "old-gemini"}}), encoding="utf-8")
    threads = folder / ".local/share/amp/threads"
    thread = json.loads((threads / "T-test-thread-123.json").read_text(encoding="utf-8"))
    thread |= {
        "id": "T-project-thread",
        "env": {"initial": {"trees": [{"displayName": "my app", "uri": "file:///home/dev/my%20app"}]}},
    }
    (threads / "T-project-thread.json").write_text(json.dumps(thread), encoding="utf-8")
    return folder


@pytest.fixture
def at_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The home as the user's, every agent's variable unset."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    for entry in READERS:
        if entry.home is not None:
            monkeypatch.delenv(entry.home.env, raising=False)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    return home


def rows(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["bill", *args, "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)["rows"]
    return found


def test_every_agent_s_sessions_are_under_the_project_it_records(at_home: Path) -> None:
    """Per agent, its sessions by project: none under a folder of its logs' layout, the ones whose agent records
    a working folder under it."""
    for agent in AGENTS:
        sessions = rows("--input-format", agent, "--by", "session")
        projects = rows("--input-format", agent, "--by", "project")
        layout = {part for s in sessions for part in Path(s["source"].split("#")[0]).relative_to(at_home).parts[:-1]}
        if agent == "codebuff":  # Codebuff names a project's folder after the project: its record of it
            layout -= {"acme-api"}
        named = {r["group"] for r in projects}
        assert not named & layout, (agent, named & layout)
        assert sum(r["sessions"] for r in projects) == len(sessions), agent


def test_codex_gemini_and_amp_sessions_are_named_as_their_agents_record_them(at_home: Path) -> None:
    projects = {r["group"]: r for r in rows("--by", "project")}
    assert projects[SHOP]["agents"] == ["codex"]  # `session_meta.cwd`, not the day folder `09`
    assert projects[WIDGETS]["agents"] == ["gemini-cli"]  # `.project_root` beside `chats`
    assert projects[OLD]["agents"] == ["gemini-cli"]  # `projects.json`, by the SHA-256 its folder is named
    assert projects[AMP]["agents"] == ["amp"]  # `env.initial.trees`
    assert "droid" in projects["/home/dev/acme-api"]["agents"]  # its transcript's `session_start.cwd`
    unknown = projects["no project"]
    assert {"gemini-cli", "amp", "codex", "droid"} <= set(unknown["agents"])  # the fixtures that record none
    for name in ("09", "13", "chats", "threads", "tasks", "otel", ".hermes", "-home-dev-acme-api", "."):
        assert name not in projects, name


def test_the_project_table_names_them_too(at_home: Path) -> None:
    result = CliRunner().invoke(cli, ["bill", "--by", "project", "--width", "200", "--color", "never"])
    assert result.exit_code == 0, result.stderr
    firsts = [line.split("  ")[0] for line in result.stdout.splitlines()]
    assert SHOP in firsts and WIDGETS in firsts and AMP in firsts and "no project" in firsts
    assert "chats" not in firsts and "09" not in firsts
