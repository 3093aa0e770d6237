"""Goose's sessions database: one call per `usage_ledger` row (schema version 15 on), else a session's running
totals (`accumulated_*`), else its last call; each billed as reported.

Goose's `input_tokens` holds the cache: block/goose `crates/goose-providers/src/formats/anthropic.rs` stores
`input_tokens + cache_creation_input_tokens + cache_read_input_tokens` and the two apart in `cache_read_tokens` and
`cache_write_tokens` (its test `test_parse_text_response`: input 12 and creation 12 give `input_tokens == 24`).
The databases are built with Goose's own DDL (`tests/fixtures/goose/make_fixture.py`); reference figures are
ccusage 20.0.24's (`HOME=<fixture home> ccusage goose session --json --offline`).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from kcost.readers.discover import read_all
from kcost.readers.registry import READERS
from tests.readers.helpers import bill, counts, summed

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "goose"
CHAT = FIXTURES / "home" / ".local" / "share" / "goose" / "sessions" / "sessions.db"
V17 = FIXTURES / "v17" / "sessions.db"
V6 = FIXTURES / "v6" / "sessions.db"


def test_the_ledger_counts_the_cache_inside_the_input() -> None:
    (session,) = read_all([str(CHAT)]).sessions
    assert session.agent == "goose" and session.name == "20260105_1" and session.project == "/home/dev/app"
    # three Anthropic calls: 3 fresh + 14,000 written; 5 fresh + 14,000 read + 900 written; 20 + 14,900 read (the
    # compaction's summary, `is_compaction` 1)
    assert counts(session) == [(14_003, 0, 14_000, 250), (14_905, 14_000, 900, 400), (14_920, 14_900, 0, 1_200)]
    assert [r.time for r in session.records] == [1_767_600_005.0, 1_767_600_040.0, 1_767_600_900.0]
    assert all(r.request is None for r in session.records)  # billed as reported


def test_ccusage_bills_the_cached_tokens_as_input() -> None:
    sessions = read_all([str(V17)], required=False).sessions
    assert [s.name for s in sessions] == ["20260105_1", "20260105_2"]  # the copy (no usage) is no session
    # ccusage 20.0.24: input 48,838, output 2,150, cache read 0, cache create 0. It reads the session rows'
    # `accumulated_input_tokens`, which hold the 28,900 cache reads and 19,900 writes, and no cache column
    # (ccusage `adapter/goose/parser.rs`): the same prompt tokens, all billed as uncached
    assert summed(sessions) == (48_838, 28_900, 19_900, 2_150)
    assert counts(sessions[1]) == [(5_010, 0, 5_000, 300)]  # the sub-agent's session, its own


def test_older_databases_give_running_totals_or_the_last_call() -> None:
    sessions = read_all([str(V6)]).sessions
    assert [(s.name, counts(s)) for s in sessions] == [
        ("20251015_1", [(52_000, 0, 0, 2_100)]),  # its running totals
        ("20251015_2", [(12_000, 0, 0, 400)]),  # its last call alone
        ("20251016_1", [(25_000, 0, 0, 5_500)]),  # the total counts 3,000 past input and output
        ("20251017_1", [(900, 0, 0, 100)]),
    ]
    assert "Goose kept only this session's last call: the calls before it are not billed" in sessions[1].notes
    assert "Goose kept this session's running totals, not its calls: one call of its totals" in sessions[0].notes
    # ccusage 20.0.24: input 89,000, output 5,000, total 97,000 (the 3,000 past input and output as reasoning,
    # priced as output, as here); it drops 20251017_1, whose `model_config_json` is NULL (its query's filter): its
    # 900 / 100 tokens were spent all the same
    assert summed(sessions) == (89_000 + 900, 0, 0, 5_000 + 3_000 + 100)
    assert [r.model for s in sessions for r in s.records] == ["gpt-4o", "gpt-4o", "o3", None]


def test_a_carried_forward_row_is_dated_when_its_session_began(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    shutil.copy(CHAT, db)
    with sqlite3.connect(db) as connection:
        connection.execute(
            "INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens, "
            "output_tokens, total_tokens, cache_read_tokens, cache_write_tokens, cost, cost_source) "
            "VALUES ('20260105_1', 1800000000, NULL, 1000, 50, 1050, 0, 0, 0, 'carried_forward')"
        )
    connection.close()
    (session,) = read_all([str(db)]).sessions
    carried = session.records[-1]
    assert counts(session)[-1] == (1_000, 0, 0, 50)
    assert carried.time == 1_767_600_000.0 and carried.model == "claude-sonnet-4-5"


def test_the_default_bill_is_as_reported() -> None:
    session = bill(str(CHAT))["runs"][0]["sessions"][0]
    assert [(t["input_tokens"], t["hit_tokens"], t["output_tokens"]) for t in session["turns"]] == [
        (14_003, 0, 250), (14_905, 14_000, 400), (14_920, 14_900, 1_200)]  # fmt: skip
    assert any("billed as reported" in n for n in session["notes"])


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
    assert list(rows) == ["goose"] and rows["goose"]["sessions"] == 1 and rows["goose"]["turns"] == 3
    assert [s["name"] for s in bill("--input-format", "goose")["runs"][0]["sessions"]] == ["20260105_1"]
    # GOOSE_PATH_ROOT moves the data folder to its `data` (`Paths::data_dir`)
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    shutil.move(str(home / ".local" / "share" / "goose" / "sessions"), str(root / "data" / "sessions"))
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(root))
    assert [s["name"] for s in bill("--input-format", "goose")["runs"][0]["sessions"]] == ["20260105_1"]
