"""Hermes Agent's database (`~/.hermes/state.db`; `tests/fixtures/hermes/home/.hermes/state.db`, built by
`make_state_db.py`): each session's running totals billed as reported, one call a session (a model, where
`session_model_usage` splits it), what the counters mean, the profiles' databases, a database Hermes is writing.

Reference figures are ccusage 20.0.24's (`ccusage hermes session --json --offline -z UTC`, HOME pointing at a
folder holding the fixture as `.hermes/state.db`, HERMES_HOME unset).
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
from kcost.readers.homes import places
from tests.readers.helpers import as_home

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "hermes"

# ccusage 20.0.24: (inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens) a session; it skips the
# session with no model and the one that spent nothing, as kcost skips the latter (the former spent nothing too)
CCUSAGE = {
    "session-1": (1_200, 300, 50, 20),
    "20250615_152000_c0ffee": (800, 150, 300, 0),  # session-1 continued after a compaction: counts of its own
    "subscription-included": (244_075, 10_019, 3_339_776, 0),
    "20260519_000500_5ub4g3": (5_000, 700, 20_000, 0),  # a delegated sub-agent: counts of its own
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def bill(*args: str) -> dict[str, Any]:
    code, out, err = run("bill", *args, "--format", "json")
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def as_ccusage(turns: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    hit, written = sum(t["hit_tokens"] for t in turns), sum(t["written_tokens"] for t in turns)
    return sum(t["input_tokens"] for t in turns) - hit - written, sum(t["output_tokens"] for t in turns), hit, written


def home_at(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE / "home" / ".hermes" / "state.db", folder / "state.db")
    return folder


def test_each_session_is_its_totals_equal_to_ccusages_token_for_token(tmp_path: Path) -> None:
    sessions = bill(str(home_at(tmp_path / ".hermes")))["runs"][0]["sessions"]
    assert {s["name"]: as_ccusage(s["turns"]) for s in sessions} == CCUSAGE
    assert all(s["usage"] == "reported" and len(s["turns"]) == 1 for s in sessions)
    # `reasoning_tokens` is of `output_tokens` (OpenAI's completion_tokens_details.reasoning_tokens, which Hermes
    # prices no further): the 3,216 are inside the 10,019. ccusage 20.0.24 adds them to the output's cost and to
    # its totalTokens (3,597,086 = 244,075 + 10,019 + 3,339,776 + 3,216).
    gpt = next(s for s in sessions if s["name"] == "subscription-included")
    assert gpt["turns"][0]["reasoning_tokens"] == 3_216 and gpt["turns"][0]["output_tokens"] == 10_019
    assert 3_597_086 == 244_075 + 10_019 + 3_339_776 + 3_216
    # dated at its start (`started_at`, epoch seconds), with the model the session row names
    first = next(s for s in sessions if s["name"] == "session-1")
    assert first["turns"][0]["time"].startswith("2025-06-15T15:06:40") and \
        first["turns"][0]["logged_model"] == "claude-sonnet-4-20250514"  # fmt: skip
    assert "Hermes keeps running totals a session (12 model calls): billed as reported, dated at its start" in \
        first["notes"] and "the log holds no prompts: billed as reported" in first["notes"]  # fmt: skip


def test_the_database_given_alone_is_read_through_its_home(tmp_path: Path) -> None:
    home = home_at(tmp_path / "h")
    found = read_all([str(home / "state.db")])
    assert sorted(s.name for s in found.sessions) == sorted(CCUSAGE) and not found.skipped
    assert {s.agent for s in found.sessions} == {"hermes"}
    assert found.sessions[0].source == f"{home / 'state.db'}#session-1"


def test_a_session_with_tokens_and_no_model_is_billed(tmp_path: Path) -> None:
    # ccusage 20.0.24 skips a row whose `model` was never set (WHERE model IS NOT NULL), tokens or none
    home = home_at(tmp_path / "h")
    with sqlite3.connect(home / "state.db") as db:
        db.execute("UPDATE sessions SET input_tokens = 70, output_tokens = 7 WHERE id = '20260519_010000_empty1'")
    db.close()
    by_name = {s.name: s for s in read_all([str(home)]).sessions}
    (record,) = by_name["20260519_010000_empty1"].records
    assert record.reported is not None and record.reported.prompt == 70 and record.model is None


def test_the_split_by_model_is_read_where_hermes_keeps_it(tmp_path: Path) -> None:
    """Newer databases keep each session's counters by model (`session_model_usage`, hermes_state_usage.py): a
    call each, dated when its model was first seen."""
    home = home_at(tmp_path / "h")
    with sqlite3.connect(home / "state.db") as db:
        db.execute("CREATE TABLE session_model_usage (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE "
                   "CASCADE, model TEXT NOT NULL, billing_provider TEXT NOT NULL DEFAULT '', billing_base_url TEXT "
                   "NOT NULL DEFAULT '', billing_mode TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '', "
                   "api_call_count INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0, "
                   "output_tokens INTEGER NOT NULL DEFAULT 0, cache_read_tokens INTEGER NOT NULL DEFAULT 0, "
                   "cache_write_tokens INTEGER NOT NULL DEFAULT 0, reasoning_tokens INTEGER NOT NULL DEFAULT 0, "
                   "estimated_cost_usd REAL NOT NULL DEFAULT 0, actual_cost_usd REAL NOT NULL DEFAULT 0, "
                   "cost_status TEXT, cost_source TEXT, first_seen REAL, last_seen REAL, PRIMARY KEY (session_id, "
                   "model, billing_provider, billing_base_url, billing_mode, task))")  # fmt: skip
        db.executemany("INSERT INTO session_model_usage (session_id, model, billing_provider, api_call_count, "
                       "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, "
                       "first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
            ("session-1", "claude-sonnet-4-20250514", "anthropic", 8, 1000, 200, 50, 20, 10, 1750000000.25),
            ("session-1", "claude-haiku-4-5", "anthropic", 4, 200, 100, 0, 0, 0, 1750000400.0),
        ])  # fmt: skip
    db.close()
    by_name = {s.name: s for s in read_all([str(home)]).sessions}
    first, second = by_name["session-1"].records
    assert (first.model, second.model) == ("claude-sonnet-4-20250514", "claude-haiku-4-5")
    assert first.reported is not None and second.reported is not None
    assert (first.reported.prompt, second.reported.prompt) == (1_070, 200) and second.time == 1_750_000_400.0
    assert any("a session and model (12 model calls)" in n for n in by_name["session-1"].read_notes)
    # the sessions it does not split are read from their rows
    (record,) = by_name["subscription-included"].records
    assert record.reported is not None and record.reported.output == 10_019


def test_a_database_hermes_is_writing(tmp_path: Path) -> None:
    """Hermes writes in WAL mode: what it committed is read (even while only in the `-wal` file), what it has not
    is not, and the reader never blocks it nor changes the file."""
    home = home_at(tmp_path / "h")
    writer = sqlite3.connect(home / "state.db", isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE sessions SET input_tokens = 1500 WHERE id = 'session-1'")  # committed
        writer.execute("BEGIN")
        writer.execute("UPDATE sessions SET output_tokens = 999 WHERE id = 'session-1'")  # not yet
        assert (home / "state.db-wal").stat().st_size > 0
        before = (home / "state.db").read_bytes()
        by_name = {s.name: s for s in read_all([str(home)]).sessions}
        (record,) = by_name["session-1"].records
        assert record.reported is not None and (record.reported.prompt, record.reported.output) == (1_570, 300)
        assert (home / "state.db").read_bytes() == before
        writer.execute("COMMIT")
    finally:
        writer.close()


def test_a_state_db_of_another_program_is_none(tmp_path: Path) -> None:
    from kcost.readers.agents.hermes import Hermes

    folder = tmp_path / "other"
    folder.mkdir()
    with sqlite3.connect(folder / "state.db") as db:
        db.execute("CREATE TABLE sessions (id TEXT, data TEXT)")
    db.close()
    assert not Hermes().is_session_folder(folder) and Hermes().is_session_folder(home_at(tmp_path / "h"))
    (folder / "notes.txt").write_text("hi")
    assert not read_all([str(folder)], required=False).sessions


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding the database where Hermes keeps it, every agent's variable unset."""
    folder = tmp_path / "home"
    home_at(folder / ".hermes")
    as_home(folder, monkeypatch)
    return folder


def test_discovery_finds_the_database_and_its_profiles(home: Path) -> None:
    code, out, err = run("bill", "--format", "json")
    assert code == 0, err
    assert "read 4 sessions from ~/.hermes (hermes)" in err
    assert {s["name"]: as_ccusage(s["turns"]) for s in json.loads(out)["runs"][0]["sessions"]} == CCUSAGE
    code, out, err = run("bill", "--input-format", "hermes", "--format", "json")
    assert code == 0 and len(json.loads(out)["runs"][0]["sessions"]) == 4, err
    (row,) = bill("--by", "agent")["rows"]
    # ccusage's totals: input 251,075, output 11,169, cache read 3,360,126, cache create 20
    assert row["group"] == "hermes" and row["sessions"] == 4 and row["output_tokens"] == 11_169
    assert (row["input_tokens"], row["hit_tokens"]) == (251_075 + 3_360_126 + 20, 3_360_126)
    # a named profile keeps its own database (`~/.hermes/profiles/<name>/state.db`): read too (ccusage 20.0.24
    # reads only `<home>/state.db`)
    profile = home_at(home / ".hermes" / "profiles" / "work")
    with sqlite3.connect(profile / "state.db") as db:
        db.execute("DELETE FROM sessions WHERE id != 'session-1'")
        db.execute("UPDATE sessions SET id = 'work-1' WHERE id = 'session-1'")
    db.close()
    code, out, err = run("bill", "--format", "json")
    assert code == 0, err
    assert "read 5 sessions from ~/.hermes (hermes)" in err


def test_the_variable_moves_the_home(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    folders, _ = places("hermes", {"HERMES_HOME": str(tmp_path / "elsewhere")})
    assert [f.path for f in folders] == [tmp_path / "elsewhere"]
