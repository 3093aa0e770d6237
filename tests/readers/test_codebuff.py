"""Codebuff's chats: one call per reply that logged usage (a turn's, billed as reported), the usage's two shapes,
replies that logged only credits, and the chat's start standing in for a reply's time.

Reference figures are ccusage 20.0.24's (`ccusage codebuff session --json --offline -z UTC`, HOME pointing at a
folder holding `tests/fixtures/codebuff/home/.config/manicode` as `.config/manicode`, CODEBUFF_DATA_DIR unset).
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

CHANNEL = Path(__file__).resolve().parent.parent / "fixtures" / "codebuff" / "home" / ".config" / "manicode"
CHATS = CHANNEL / "projects" / "acme-api" / "chats"
FIRST, SECOND = "2026-01-02T03-04-05.000Z", "2026-01-05T09-30-00.000Z"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def bill(*args: str) -> dict[str, Any]:
    code, out, err = run("bill", *args, "--format", "json")
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def counts(session: dict[str, Any]) -> list[tuple[int, int, int, int]]:
    """Each call's (prompt, cached, written, output) as the chat reports it."""
    return [(t["input_tokens"], t["hit_tokens"], t["written_tokens"], t["output_tokens"]) for t in session["turns"]]


def test_the_two_shapes_and_ccusage() -> None:
    sessions = {s["name"]: s for s in bill(str(CHANNEL), "--usage", "reported")["runs"][0]["sessions"]}
    # Anthropic's shape (`metadata.usage`): inputTokens 100 beside 10 read and 20 written: a prompt of 130.
    # ccusage 20.0.24: inputTokens 100, outputTokens 50, cacheReadTokens 10, cacheCreationTokens 20. Token for
    # token.
    assert counts(sessions[FIRST]) == [(130, 10, 20, 50)]
    # OpenAI's shape (the run state's `providerOptions.codebuff.usage`, as OpenRouter returns it): `prompt_tokens`
    # 100 holds its 10 cached tokens (`prompt_tokens_details.cached_tokens` is a part of `prompt_tokens` in the
    # chat-completions API), so the prompt is 100, 90 of them uncached. ccusage 20.0.24 reads inputTokens 100 and
    # cacheReadTokens 10 and bills them apart: 110 prompt tokens, the cached ones twice.
    assert counts(sessions[SECOND]) == [(100, 10, 0, 50)]
    assert sessions[SECOND]["turns"][0]["logged_model"] == "openai/gpt-5"


def test_a_reply_of_credits_only_is_not_billed_and_said() -> None:
    (session,) = bill(str(CHATS / FIRST / "chat-messages.json"))["runs"][0]["sessions"]
    # ccusage 20.0.24 makes it a row of no tokens under `codebuff-unknown` (its 7 credits in `credits`)
    assert len(session["turns"]) == 1 and session["usage"] == "reported"
    assert "1 reply logged only the credits spent (7), no tokens: not billed" in session["notes"]
    assert "Codebuff logs a turn's usage, not each call's: billed as reported" in session["notes"]
    assert "the log holds no prompts: billed as reported" in session["notes"]


def test_a_reply_with_no_time_is_at_the_chats_start() -> None:
    found = read_all([str(CHANNEL)], prompts=False)
    by_name = {s.name: s for s in found.sessions}
    assert sorted(by_name) == [FIRST, SECOND] and not found.skipped and not found.foreign
    (record,) = by_name[SECOND].records
    assert record.time == pytest.approx(1_767_605_400.0)  # 2026-01-05T09:30:00Z, the chat's id
    (record,) = by_name[FIRST].records
    assert record.time == pytest.approx(1_767_323_046.0)  # its own `timestamp`
    assert by_name[FIRST].project == "acme-api" and by_name[FIRST].agent == "codebuff"


def test_a_chat_caught_mid_write_is_passed_over(tmp_path: Path) -> None:
    shutil.copytree(CHANNEL, tmp_path / "manicode")
    chat = tmp_path / "manicode" / "projects" / "acme-api" / "chats" / FIRST / "chat-messages.json"
    chat.write_text(chat.read_text()[:300])  # Codebuff writes it whole, not atomically (`saveChatState`)
    found = read_all([str(tmp_path)])
    assert [s.name for s in found.sessions] == [SECOND] and len(found.skipped) == 1 and FIRST in found.skipped[0]


def test_a_bad_count_names_its_field(tmp_path: Path) -> None:
    chat = json.loads((CHATS / FIRST / "chat-messages.json").read_text())
    chat[2]["metadata"]["usage"]["cacheReadInputTokens"] = 1.5
    folder = tmp_path / "chats" / FIRST
    folder.mkdir(parents=True)
    (folder / "chat-messages.json").write_text(json.dumps(chat))
    code, _, err = run("bill", str(folder / "chat-messages.json"))
    assert code == 2 and "[2].metadata.usage.cacheReadInputTokens" in err, err


def test_not_a_turn_spec_nor_any_json_list(tmp_path: Path) -> None:
    (tmp_path / "chat-messages.json").write_text('[{"role": "user", "content": "hi"}]')
    found = read_all([str(tmp_path)], required=False)
    assert not found.sessions and found.foreign


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding the chats where Codebuff keeps them, every agent's variable unset."""
    folder = tmp_path / "home"
    shutil.copytree(CHANNEL, folder / ".config" / "manicode")
    as_home(folder, monkeypatch)
    return folder


def test_discovery_finds_the_chats(home: Path) -> None:
    code, out, err = run("bill", "--format", "json")
    assert code == 0, err
    assert "read 2 sessions from ~/.config/manicode/projects (codebuff)" in err
    assert sorted(s["name"] for s in json.loads(out)["runs"][0]["sessions"]) == [FIRST, SECOND]
    code, out, err = run("bill", "--input-format", "codebuff", "--format", "json")
    assert code == 0 and len(json.loads(out)["runs"][0]["sessions"]) == 2, err
    (row,) = bill("--by", "agent")["rows"]
    assert row["group"] == "codebuff" and row["sessions"] == 2 and row["output_tokens"] == 100
    (row,) = bill("--by", "project")["rows"]
    assert row["group"] == "acme-api"


def test_the_variable_names_channels_or_their_projects(tmp_path: Path) -> None:
    (tmp_path / "a" / "projects").mkdir(parents=True)
    (tmp_path / "b" / "projects").mkdir(parents=True)
    env = {"CODEBUFF_DATA_DIR": f"{tmp_path / 'a'},{tmp_path / 'b' / 'projects'}"}
    folders, _ = places("codebuff", env)
    assert [f.path for f in folders] == [tmp_path / "a" / "projects", tmp_path / "b" / "projects"]
