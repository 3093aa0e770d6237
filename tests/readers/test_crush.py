"""Crush's project databases: one call per assistant row, no usage logged but the last call's size each session
keeps, a root session read with its sub-agents' sessions, and where `kcost bill` finds the projects.

The fixture (`tests/fixtures/crush/make_fixture.py`) replays two of Crush's own VCR cassettes
(charmbracelet/crush `internal/agent/testdata/TestCoderAgent/deepseek-v4/`), whose per-call usage is known
although Crush stores none of it: session 1's three steps had prompts of 8,978, 9,054 and 9,159 tokens. ccusage
20.0.24 does not read Crush; tokscale v4.6.0 (`sessions/crush.rs`) reports the root sessions' costs alone, no
tokens: $0.02756278 + $0.0126252 + $0.02186576 = $0.06205374.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers.discover import read_all
from tests.readers.helpers import as_home, bill

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "crush"
PROJECT = FIXTURES / "projects" / "testproject" / ".crush"  # sessions 1 and 3 (and 3's sub-agent)
HOME_PROJECT = FIXTURES / ".crush"  # session 2, of a project started in the home itself
S1, S2, S3 = (f"6b1f3a2e-9c4d-4e8f-a1b2-3c4d5e6f7a8{n}" for n in range(3))
CHILD = "0c9e1d7a-3333-4a2b-8c3d-000000000002$$call_4f0b2c9d7e1a3b58"


def sessions(report: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = report["runs"][0]["sessions"]
    return found


def by_name(found: list[Any]) -> dict[str, Any]:
    return {s.name: s for s in found}


def test_an_assistant_row_is_a_call_and_only_the_last_is_sized() -> None:
    got = by_name(read_all([str(PROJECT)]).sessions)
    assert sorted(got) == [S1, S3]
    one = got[S1]
    assert one.agent == "crush" and one.project == str(PROJECT.parent)
    assert one.call_models == ("deepseek-v4-pro-0813",) * 3
    assert one.times == (1787170340.0, 1787170342.0, 1787170344.0)  # created_at: seconds, not milliseconds
    # no call's usage is stored: the session's `prompt_tokens`/`completion_tokens` are its last call's (9,159
    # in, 18 out in the cassette), kept with no cached count
    assert [None if u is None else (u.prompt, u.output, u.cached_logged) for u in one.reported] == [
        None, None, (9_159, 18, False)]  # fmt: skip
    assert any("$0.02756278 " in n for n in one.notes)


def test_the_last_calls_size_sizes_the_system_prompt_of_every_call() -> None:
    """The cassette's prompts were 8,978, 9,054 and 9,159 tokens: the system prompt and tools (not stored) are
    sized from the last one, so the first two land within a few dozen tokens of what was sent."""
    (session,) = [s for s in sessions(bill(str(PROJECT))) if s["name"] == S1]
    sent = [8_978, 9_054, 9_159]
    got = [t["input_tokens"] for t in session["turns"]]
    assert got[-1] == sent[-1] and all(abs(g - s) < 100 for g, s in zip(got, sent, strict=True))


def test_a_sub_agent_and_a_summary() -> None:
    three = by_name(read_all([str(PROJECT)]).sessions)[S3]
    # the root's two steps, the sub-agent's two in between, the `/summarize` row, the step after it
    assert len(three.records) == 6 and any("1 sub-agent session(s)" in n for n in three.notes)
    from kcost.errors import Leniency
    from kcost.readers.agents.crush import Crush, _sessions

    (unit,) = [u for u in _sessions(PROJECT) if u.session == S3]
    assert unit.family == (S3, CHILD)
    calls = list(Crush().read(unit, [], leniency=Leniency(False)))
    assert [c.unlogged for c in calls] == ["system prompt and tools", f"sub-agent {CHILD}'s system prompt and tools",
                                           f"sub-agent {CHILD}'s system prompt and tools",
                                           *["system prompt and tools"] * 3]  # fmt: skip
    summary, after = calls[4], calls[5]
    assert summary.output is not None and summary.output.content.startswith("Summary:")
    assert after.compacted and after.messages is not None and after.messages[0].content == summary.output.content
    assert [m.role for m in after.messages] == ["user", "user"]
    assert after.reported is not None and after.reported.prompt == 8_402
    assert calls[2].reported is not None and calls[2].reported.prompt == 7_689  # the sub-agent's own last call


def test_crushs_own_costs_are_tokscales() -> None:
    """tokscale bills each root session's `cost` (its sub-agents' and title calls included): kcost names it in
    the session's notes, the sub-agent's not counted again."""
    found = read_all([str(PROJECT), str(HOME_PROJECT)]).sessions
    named = [float(n.split("$")[1].split(" ")[0]) for s in found for n in s.notes if n.startswith("Crush's own cost")]
    assert len(named) == 3 and round(sum(named), 8) == 0.06205374


def test_a_live_database_is_read_with_its_wal(tmp_path: Path) -> None:
    """Crush keeps its database in WAL mode: while it runs, the newest rows may be in `crush.db-wal` only."""
    shutil.copytree(PROJECT, tmp_path / ".crush")
    writer = sqlite3.connect(tmp_path / ".crush" / "crush.db")
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        parts = json.dumps([{"type": "text", "data": {"text": "One more thing."}},
                            {"type": "finish", "data": {"reason": "end_turn", "time": 1787170360}}])  # fmt: skip
        row = ("late", S1, "assistant", parts, "deepseek-v4-pro-0813", "hyper", 0, 1787170359, 1787170360, 1787170360)
        writer.execute("INSERT INTO messages (id, session_id, role, parts, model, provider, is_summary_message, "
                       "created_at, updated_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)  # fmt: skip
        writer.commit()
        assert (tmp_path / ".crush" / "crush.db-wal").stat().st_size > 0
        one = by_name(read_all([str(tmp_path / ".crush")]).sessions)[S1]
        assert len(one.records) == 4
    finally:
        writer.close()


def test_a_file_given_alone_is_read_as_its_store() -> None:
    (session,) = read_all([str(HOME_PROJECT / "crush.db")]).sessions
    assert session.name == S2 and session.source.endswith(f"crush.db#{S2}")


def test_no_usage_to_bill_as_reported() -> None:
    result = CliRunner().invoke(cli, ["bill", str(HOME_PROJECT), "--usage", "reported"])
    assert result.exit_code == 2 and "reports no usage" in result.stderr


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture's home, its `projects.json` pointing at where it now lies; the agents' variables unset."""
    folder = tmp_path / "home"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("*.py"))
    registry = folder / ".local/share/crush/projects.json"
    registry.write_text(registry.read_text().replace("/home/dev", str(folder)))
    as_home(folder, monkeypatch, "APPDATA", "LOCALAPPDATA")
    return folder


def test_kcost_finds_the_projects_its_registry_lists(home: Path) -> None:
    for args in ((), ("--input-format", "crush")):
        found = sessions(bill(*args))
        assert sorted(s["name"] for s in found) == [S1, S2, S3]
    result = CliRunner().invoke(cli, ["bill", "--by", "agent", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)["rows"]
    assert row["group"] == "crush" and row["turns"] == 3 + 1 + 6


def test_its_variable_moves_the_global_data_folder(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.move(home / ".local/share/crush", home / "crush-data")
    monkeypatch.setenv("CRUSH_GLOBAL_DATA", str(home / "crush-data"))
    found = sessions(bill("--input-format", "crush"))
    assert sorted(s["name"] for s in found) == [S1, S2, S3]
