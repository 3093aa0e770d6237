"""OpenClaw's sessions: pi's transcripts (`kcost.readers.agents.pi_agent`), in an agent's sessions folder (up to
2026.5) or its `openclaw-agent.sqlite` (2026.9), one call per `assistant` message entry with usage.

OpenClaw 2026.9.6 logged a prompt of 12,500 tokens, 11,900 cached, as `input: 600, cacheRead: 11900`, and a
completion of 300 tokens, 40 of them reasoning, as `output: 300, reasoningTokens: 40`; OpenClaw's own reader sums
`input + cacheRead + cacheWrite` (openclaw/openclaw `src/agents/usage.ts`, `derivePromptTokens`). The five calls
the stub served: input 37,500, output 1,035, cache read 11,900. Reference figures are ccusage 20.0.24's
(`HOME=<fixture home> ccusage openclaw session --json --offline`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers.discover import read_all
from kcost.readers.registry import READERS
from tests.readers.helpers import bill, counts, summed

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw"
SESSION = "e2370bf6-c5f3-45d8-877c-348ac90473fd"
TRANSCRIPT = FIXTURES / f"{SESSION}.jsonl"
DATABASE = FIXTURES / "sqlite" / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
LEGACY = FIXTURES / "legacy" / ".openclaw" / "agents" / "main" / "sessions"
ARCHIVE = FIXTURES / "zstd" / ".openclaw" / "agents" / "main" / "sessions"
CALLS = [(12_000, 0, 0, 300), (12_500, 11_900, 0, 120), (900, 0, 0, 15), (12_000, 0, 0, 300),
         (12_000, 0, 0, 300)]  # fmt: skip


def test_a_transcript_is_openclaws_not_pis() -> None:
    (session,) = read_all([str(TRANSCRIPT)]).sessions
    assert session.agent == "openclaw" and session.name == SESSION and session.project == "/home/dev/claw-demo"
    assert counts(session) == CALLS
    assert [r.reported.reasoning for r in session.records if r.reported] == [40, 0, 0, 40, 40]
    assert summed([session]) == (37_500 + 11_900, 11_900, 0, 1_035)


def test_the_database_bills_its_compressed_events_too() -> None:
    (session,) = read_all([str(DATABASE)]).sessions
    assert session.agent == "openclaw" and session.name == SESSION and session.project == "/home/dev/claw-demo"
    # OpenClaw 2026.9.6 stored the fifth reply (3,872 bytes) compressed with zstd (`event_zstd`, its
    # `event_json` NULL): kcost reads it. ccusage 20.0.24 reads only `event_json` and skips it without a word:
    # input 25,500, output 735, cache read 11,900, where the five calls are 37,500 / 1,035 / 11,900
    assert counts(session) == CALLS
    assert summed([session]) == (37_500 + 11_900, 11_900, 0, 1_035)
    assert all(r.request is not None for r in session.records)  # the prompts rebuilt from the events


def test_a_checkpoint_copy_is_not_billed_again() -> None:
    sessions = read_all([str(LEGACY)]).sessions
    assert [s.name for s in sessions] == ["abc", SESSION, "session"]
    abc, main, reset = sessions
    assert counts(main) == CALLS
    # ccusage's own test lines: the model from the `model_change` before, a line written twice counted once
    assert counts(abc) == [(1_660 + 108_928, 108_928, 0, 55)] and abc.records[0].model == "gpt-5.2"
    assert counts(reset) == [(1, 0, 0, 1)]  # the reset archive's line, written twice
    # ccusage 20.0.24: input 51,761, output 1,511, cache read 132,728: it bills the compaction's copy
    # (`<session>.checkpoint.<uuid>.jsonl`, OpenClaw's `artifacts.ts`: the transcript as it was before a
    # compaction, its calls the transcript's) as a session of its own: 12,600 / 420 / 11,900 again
    assert summed(sessions) == (51_761 - 12_600 + 132_728 - 11_900, 132_728 - 11_900, 0, 1_511 - 420)


def test_a_compressed_archive_is_read() -> None:
    # ccusage 20.0.24 reads `<session>.jsonl.deleted.<time>.zst` as text and bills nothing, without a word
    result = CliRunner().invoke(cli, ["bill", str(ARCHIVE), "--usage", "reported", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    (session,) = json.loads(result.stdout)["runs"][0]["sessions"]
    assert session["summary"]["turns"] > 0 and ".jsonl.deleted.2026-12-05T03-00-00.000Z.zst" in session["source"]


def test_a_zstd_bomb_is_refused(tmp_path: Path) -> None:
    """An archive that would inflate past any transcript is one error line, not memory exhausted."""
    import zstandard

    from kcost.readers.agents import openclaw

    bomb = zstandard.ZstdCompressor().compress(b"\n" * (2 * 2**20))
    with pytest.raises(ValueError, match="inflates past"):
        openclaw._unzstd(bomb, 2**20)
    assert openclaw._unzstd(bomb, 4 * 2**20) == b"\n" * (2 * 2**20)


def test_the_default_bill_simulates() -> None:
    simulated = bill(str(TRANSCRIPT))["runs"][0]["sessions"][0]
    assert simulated["usage"] == "simulated" and simulated["agreement"] is not None
    reported = bill(str(TRANSCRIPT), "--usage", "reported")["runs"][0]["sessions"][0]
    assert [(t["input_tokens"], t["hit_tokens"], t["output_tokens"]) for t in reported["turns"]] == [
        (p, c, o) for p, c, _, o in CALLS]  # fmt: skip


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
    assert list(rows) == ["openclaw"] and rows["openclaw"]["sessions"] == 1 and rows["openclaw"]["turns"] == 5
    # the database of 2026.9 beside it: its session read too
    shutil.copytree(DATABASE.parent, home / ".openclaw" / "agents" / "work" / "agent")
    sessions = bill("--input-format", "openclaw", "--usage", "reported")["runs"][0]["sessions"]
    assert sorted(len(s["turns"]) for s in sessions) == [5, 5]  # the compressed reply read too
    # OPENCLAW_STATE_DIR moves the state folder (`resolveStateDir`)
    moved = tmp_path / "state"
    shutil.move(str(home / ".openclaw"), str(moved))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(moved))
    assert len(bill("--input-format", "openclaw")["runs"][0]["sessions"]) == 2
