"""Factory Droid's sessions: one running total a session (`<session>.settings.json`), billed as reported as one
call at the session's start; a copy of a session counted once; the transcript beside it naming the model and the
working directory.

Droid's `tokenUsage` counts as Anthropic does: `inputTokens` leaves out the cache's reads and writes, so the prompt
is `inputTokens + cacheReadTokens + cacheCreationTokens`. Reference figures are ccusage 20.0.24's (`ccusage droid
session --json --offline -z UTC`, HOME pointing at a folder holding `tests/fixtures/droid/home/.factory/sessions` as
`.factory/sessions`, DROID_SESSIONS_DIR unset).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers.discover import read_all
from kcost.readers.homes import places
from tests.readers.helpers import as_home

SESSIONS = Path(__file__).resolve().parent.parent / "fixtures" / "droid" / "home" / ".factory" / "sessions"
PROJECT = SESSIONS / "-home-dev-acme-api"
OPUS = "11111111-2222-3333-4444-555555555555"  # with its transcript
KIMI = "99999999-aaaa-bbbb-cccc-dddddddddddd"

# ccusage 20.0.24: (inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens), and its model
CCUSAGE = {
    OPUS: ((1_234, 567, 12, 89), "claude-opus-4-5-thinking-0"),
    KIMI: ((1_000, 200, 0, 0), "kimi-k3-(free)-0"),
    "session-a": ((100, 50, 10, 20), "claude-sonnet-4"),
    "session-b": ((10, 20, 0, 0), "claude-opus-4-5-thinking"),  # no `model`: the transcript's `Model:` line
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def bill(*args: str) -> dict[str, Any]:
    code, out, err = run("bill", *args, "--format", "json")
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def as_ccusage(session: dict[str, Any]) -> tuple[tuple[int, int, int, int], str]:
    (turn,) = session["turns"]
    hit, written = turn["hit_tokens"], turn["written_tokens"]
    return (turn["input_tokens"] - hit - written, turn["output_tokens"], hit, written), turn["logged_model"]


def test_each_session_is_its_running_total_equal_to_ccusages_token_for_token() -> None:
    sessions = bill(str(SESSIONS), "--usage", "reported")["runs"][0]["sessions"]
    assert {s["name"]: as_ccusage(s) for s in sessions} == CCUSAGE
    # `thinkingTokens` (34 for the Opus session) is taken as of the output, as the providers count reasoning:
    # ccusage 20.0.24 keeps its `outputTokens` at 567 too but adds the 34 to the output's cost (and its
    # totalTokens, 1,936 = 1,234 + 567 + 12 + 89 + 34)
    opus = next(s for s in sessions if s["name"] == OPUS)
    assert opus["turns"][0]["reasoning_tokens"] == 34 and opus["turns"][0]["output_tokens"] == 567
    assert 1_936 == 1_234 + 567 + 12 + 89 + 34


def test_the_default_bill_is_as_reported_and_says_so() -> None:
    report = bill(str(PROJECT / f"{OPUS}.settings.json"))
    (session,) = report["runs"][0]["sessions"]
    assert session["usage"] == "reported" and len(session["turns"]) == 1
    assert "the log holds no prompts: billed as reported" in session["notes"]
    assert any("one running total a session" in n for n in session["notes"])
    # dated at the session's start, `providerLockTimestamp`, as ccusage dates it
    assert session["turns"][0]["time"].startswith("2024-12-26T12:00:00")


def test_the_transcript_names_the_project_and_is_no_session_of_its_own() -> None:
    found = read_all([str(PROJECT)])
    assert sorted(s.name for s in found.sessions) == sorted(CCUSAGE) and not found.skipped and not found.foreign
    by_name = {s.name: s for s in found.sessions}
    assert by_name[OPUS].project == "/home/dev/acme-api" and by_name["session-a"].project is None
    assert all(s.agent == "droid" for s in found.sessions)


def test_a_copy_of_a_session_is_counted_once_the_largest(tmp_path: Path) -> None:
    # the live file and a stale copy of it (Droid rewrites the live one as it spends): ccusage 20.0.24 keeps the
    # path that sorts last (`archive/...` after `-home-...`: the stale 23,558), kcost the largest counts
    live = tmp_path / "-home-dev-acme-api"
    live.mkdir()
    settings = json.loads((PROJECT / "session-a.settings.json").read_text())
    (live / "sess-x.settings.json").write_text(json.dumps(settings | {"tokenUsage": {
        "inputTokens": 910_888, "outputTokens": 9_000, "cacheReadTokens": 4_380_091}}))  # fmt: skip
    (tmp_path / "archive").mkdir()
    (tmp_path / "archive" / "sess-x.settings.json").write_text(json.dumps(settings | {"tokenUsage": {
        "inputTokens": 23_558, "outputTokens": 400}}))  # fmt: skip
    (session,) = read_all([str(tmp_path)], prompts=False).sessions
    (record,) = session.records
    assert record.reported is not None and record.reported.prompt == 910_888 + 4_380_091
    assert any("2 copies" in n for n in session.read_notes)


def test_a_settings_file_caught_mid_write_is_passed_over(tmp_path: Path) -> None:
    shutil.copytree(PROJECT, tmp_path / "p")
    text = (PROJECT / "session-a.settings.json").read_text()
    (tmp_path / "p" / "session-a.settings.json").write_text(text[:60])
    found = read_all([str(tmp_path)])
    assert "session-a" not in {s.name for s in found.sessions} and len(found.sessions) == 3
    assert len(found.skipped) == 1 and "session-a.settings.json" in found.skipped[0]


def test_a_bad_count_names_droids_field(tmp_path: Path) -> None:
    settings = json.loads((PROJECT / "session-a.settings.json").read_text())
    settings["tokenUsage"]["cacheReadTokens"] = "12"
    (tmp_path / "s.settings.json").write_text(json.dumps(settings))
    code, _, err = run("bill", str(tmp_path / "s.settings.json"))
    assert code == 2 and "tokenUsage.cacheReadTokens" in err and "s.settings.json" in err, err


def test_the_models_name(tmp_path: Path) -> None:
    from kcost.readers.agents.droid import normalized

    assert normalized("custom:Claude-Opus-4.5-Thinking-[Anthropic]-0") == "claude-opus-4-5-thinking-0"
    assert normalized("gpt-5.5") == "gpt-5-5" and normalized("Claude Opus 4.5 Thinking [Anthropic]") == \
        "claude-opus-4-5-thinking"  # fmt: skip


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding the sessions where Droid keeps them, every agent's variable unset."""
    folder = tmp_path / "home"
    shutil.copytree(SESSIONS, folder / ".factory" / "sessions")
    as_home(folder, monkeypatch)
    return folder


def test_discovery_finds_the_sessions(home: Path) -> None:
    code, out, err = run("bill", "--format", "json")
    assert code == 0, err
    assert "read 4 sessions from ~/.factory/sessions (droid)" in err
    assert {s["name"]: as_ccusage(s) for s in json.loads(out)["runs"][0]["sessions"]} == CCUSAGE
    code, out, err = run("bill", "--input-format", "droid", "--format", "json")
    assert code == 0 and len(json.loads(out)["runs"][0]["sessions"]) == 4, err
    (row,) = bill("--by", "agent")["rows"]
    # ccusage's totals: input 2,344, output 837, cache read 22, cache create 109
    assert row["group"] == "droid" and row["sessions"] == 4
    assert (row["input_tokens"], row["hit_tokens"], row["output_tokens"]) == (2_344 + 22 + 109, 22, 837)


def test_the_variable_names_the_sessions_folder(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    folders, _ = places("droid", {"DROID_SESSIONS_DIR": f"{tmp_path / 'elsewhere'},{tmp_path / 'nowhere'}"})
    assert [f.path for f in folders] == [tmp_path / "elsewhere"]
