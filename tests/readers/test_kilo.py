"""Kilo's sessions: its `kilo.db`, OpenCode's tables under Kilo's name, read as OpenCode's database is, a session
each (a sub-agent's its own), one call per step.

Kilo 7.7.9 logs `tokens.input` without the cache (a prompt of 12,500 tokens, 11,900 cached: `input: 600,
cache.read: 11900`) and the reasoning beside the output (a completion of 300 tokens, 40 of them reasoning:
`output: 260, reasoning: 40, total: 12300`): Kilo-Org/kilo `packages/opencode/src/session/index.ts` (`getUsage`).
Reference figures are ccusage 20.0.24's (`HOME=<fixture home> ccusage kilo session --json --offline`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kcost.readers.discover import read_all
from kcost.readers.registry import READERS
from tests.readers.helpers import bill, counts, summed

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "kilo"
CHAT = FIXTURES / "home" / ".local" / "share" / "kilo" / "kilo.db"
REAL = FIXTURES / "real-run" / "kilo.db"
TRICKY = FIXTURES / "tricky" / "kilo.db"


def test_the_counts_mean_what_kilo_logged() -> None:
    (session,) = read_all([str(CHAT)]).sessions
    assert session.agent == "kilo" and session.name == "ses_dbc036e57ffeG5ykDBDJRElW3A"
    assert session.project == "/home/dev/kilo-demo"
    # the stub served 12,000 / 0 cached / 300 out (40 reasoning), 12,500 / 11,900 / 120, 900 / 0 / 15
    assert counts(session) == [(12_000, 0, 0, 300), (12_500, 11_900, 0, 120), (900, 0, 0, 15)]
    assert [r.reported.reasoning for r in session.records if r.reported] == [40, 0, 0]
    # ccusage 20.0.24, this session: input 13,500, output 395, cache read 11,900: the 40 reasoning tokens Kilo
    # logged apart only in its total (ccusage `adapter/kilo/parser.rs` leaves `tokens.reasoning` out of the output)
    assert summed([session]) == (13_500 + 11_900, 11_900, 0, 395 + 40)


def test_the_real_run_equals_ccusage_with_the_reasoning_in_the_output() -> None:
    sessions = read_all([str(REAL)]).sessions
    assert [s.name for s in sessions] == ["ses_dbc036e57ffeG5ykDBDJRElW3A", "ses_dbc021d9dffe5AI0swlKSuvRy4",
                                          "ses_dbc02098dffe14ap5lHs4eVYQU"]  # fmt: skip
    assert [len(s.records) for s in sessions] == [3, 7, 1]  # the sub-agent's session apart, the compaction a call
    # ccusage 20.0.24: input 63,600, output 1,540, cache read 293,700, cache create 0, total 359,000: its total
    # holds the 160 reasoning tokens (4 calls of 40), which belong in the output
    assert summed(sessions) == (63_600 + 293_700, 293_700, 0, 1_540 + 160)
    assert 359_000 == 63_600 + 293_700 + 1_540 + 160
    # per session: 13,500 / 395 / 11,900, 38,100 / 885 / 281,800, 12,000 / 260 / 0
    assert [summed([s]) for s in sessions] == [(25_400, 11_900, 0, 435), (319_900, 281_800, 0, 965),
                                               (12_000, 0, 0, 300)]  # fmt: skip
    # the `event` table holds 161 intermediate states of these messages: not read


def test_the_prompt_is_rebuilt_from_the_parts() -> None:
    from kcost.errors import Leniency
    from kcost.readers.agents.kilo import Kilo
    from kcost.readers.source import open_source

    reader = Kilo()
    (unit,) = reader.claim(open_source(str(CHAT)))
    first, second, third = reader.read(unit, [], leniency=Leniency(False))
    assert first.messages is not None and [m.role for m in first.messages] == ["user"]
    assert "Say hello" in first.messages[0].content
    assert third.messages is not None and [m.role for m in third.messages] == ["user", "assistant"] * 2 + ["user"]
    assert first.model == "kimi-k3" and first.unlogged == "system prompt and tools"


def test_edge_cases() -> None:
    parent, child = read_all([str(TRICKY)]).sessions
    # an aborted call (no tokens, `error` set) is no call; a time in seconds is read as seconds
    assert counts(parent) == [(1, 0, 0, 1), (130, 10, 20, 55), (0, 0, 0, 234), (42_000, 40_000, 0, 1_000),
                              (1_000, 0, 0, 500)]  # fmt: skip
    assert counts(child) == [(20_100, 19_800, 0, 200)]
    times = [r.time for r in parent.records]
    assert times[0] is None and times[-1] == 1_767_312_360.0
    # ccusage 20.0.24: input 3,400, output 1,984, cache read 59,810, cache create 20 (and 5 reasoning in its
    # total). It drops the row without `time` (1 in, 1 out): Kilo made that call, so it is billed here, undated
    assert summed([parent, child]) == (3_400 + 59_810 + 20 + 1, 59_810, 20, 1_984 + 5 + 1)


def test_the_default_bill_simulates_and_reported_bills_as_logged() -> None:
    simulated = bill(str(CHAT))["runs"][0]["sessions"][0]
    assert simulated["usage"] == "simulated"
    reported = bill(str(CHAT), "--usage", "reported")["runs"][0]["sessions"][0]
    assert [(t["input_tokens"], t["hit_tokens"], t["output_tokens"]) for t in reported["turns"]] == [
        (12_000, 0, 300), (12_500, 11_900, 120), (900, 0, 15)]  # fmt: skip


def test_an_opencode_database_is_not_kilos(tmp_path: Path) -> None:
    # the same tables, under OpenCode's name and without Kilo's own: read as OpenCode's
    import sqlite3

    db = tmp_path / "store.db"
    shutil.copy(CHAT, db)
    with sqlite3.connect(db) as connection:
        for (table,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                           "AND name LIKE 'kilo%'").fetchall():  # fmt: skip
            connection.execute(f"DROP TABLE {table}")
    connection.close()
    from kcost.readers.agents.kilo import Kilo
    from kcost.readers.source import open_source

    assert not Kilo().recognise(open_source(str(db)))
    assert Kilo().recognise(open_source(str(CHAT)))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    shutil.copytree(FIXTURES / "home", folder)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: folder))
    for entry in READERS:
        if entry.home is not None:
            monkeypatch.delenv(entry.home.env, raising=False)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    return folder


def test_the_home_is_found(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = {r["group"]: r for r in bill("--by", "agent", "--usage", "reported")["rows"]}
    assert list(rows) == ["kilo"] and rows["kilo"]["sessions"] == 1 and rows["kilo"]["turns"] == 3
    alone = bill("--input-format", "kilo")["runs"][0]["sessions"]
    assert [s["name"] for s in alone] == ["ses_dbc036e57ffeG5ykDBDJRElW3A"]
    # XDG_DATA_HOME moves Kilo's data folder (`Global.Path.data`)
    moved = tmp_path / "data"
    shutil.move(str(home / ".local" / "share"), str(moved))
    monkeypatch.setenv("XDG_DATA_HOME", str(moved))
    assert [s["name"] for s in bill("--input-format", "kilo")["runs"][0]["sessions"]] == [
        "ses_dbc036e57ffeG5ykDBDJRElW3A"]  # fmt: skip
