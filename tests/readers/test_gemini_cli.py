"""Gemini CLI's chats: the JSONL it writes now (a message's line written again as its tokens and tool calls
arrive, `$set` updates, a `$rewindTo`) and the one JSON document it wrote before.

Reference figures are ccusage 20.0.24's output (`ccusage gemini session --json --offline`, GEMINI_DATA_DIR
pointing at a folder holding the fixtures under `<hash>/chats/`).
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

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gemini-cli"
JSONL = FIXTURES / "session-2026-01-10T09-30-5f0c2f3e.jsonl"
LEGACY = FIXTURES / "session-2025-11-03T14-20-9b1c2d3e.json"


def totals(session: Any) -> list[tuple[int, int, int, int | None]]:
    return [(u.prompt, u.cached, u.output, u.reasoning) for u in (r.reported for r in session.records) if u]


def calls(path: Path) -> list[Any]:
    from kcost.errors import Leniency
    from kcost.readers.agents.gemini_cli import GeminiCli
    from kcost.readers.source import open_source

    return list(GeminiCli().read(open_source(str(path)), [], prompts=True, leniency=Leniency(False)))


def test_jsonl_each_message_once() -> None:
    (session,) = read_all([str(JSONL)]).sessions
    assert session.agent == "gemini-cli" and session.call_models == ("gemini-2.5-pro",) * 4
    # The first reply's line is written three times (as sent, with its tokens, with its tool call): one call.
    # The third reply was rewound away (`$rewindTo` its question) but had been billed: a call.
    # ccusage 20.0.24: inputTokens 5204 (input less cached), cacheReadTokens 12416, outputTokens 235,
    # totalTokens 18161 (its thoughts, 306, counted there). Token for token: 5,204 + 12,416 = 17,620 prompt,
    # 235 + 306 = 541 output.
    assert totals(session) == [(4_210, 0, 114, 96), (4_380, 3_968, 152, 0), (4_610, 4_096, 250, 210),
                               (4_420, 4_352, 25, 0)]  # fmt: skip
    assert sum(p for p, *_ in totals(session)) == 5_204 + 12_416 and sum(o for _, _, o, _ in totals(session)) == 541
    assert 18_161 == 17_620 + 235 + 306


def test_the_rewind_drops_the_history_not_the_call() -> None:
    first, second, third, fourth = calls(JSONL)
    assert first.messages is not None and [m.role for m in first.messages] == ["user"]
    assert first.output is not None and first.output.tool_calls[0].name == "list_directory"
    assert second.messages is not None and [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert "core.py" in second.messages[2].content
    assert third.messages is not None and third.messages[-1].content == "Now rename util.py to helpers.py."
    # after the rewind to that question, the next prompt has neither it nor its reply
    assert fourth.messages is not None and [m.content for m in fourth.messages if m.role == "user"] == [
        "List the files in src and explain the layout.", "Instead, just summarise the layout in one line."]  # fmt: skip


def test_the_older_json_document() -> None:
    (session,) = read_all([str(LEGACY)]).sessions
    # ccusage 20.0.24: inputTokens 4152, cacheReadTokens 2048, outputTokens 130, totalTokens 6350 (20 thoughts).
    assert totals(session) == [(3_000, 0, 70, 20), (3_200, 2_048, 80, 0)]
    assert 4_152 + 2_048 == 6_200 and 6_350 == 6_200 + 130 + 20
    # the `info` message is the CLI's own, never sent
    assert any("info, error or warning" in n for n in session.notes)


def test_tool_use_prompt_tokens_are_prompt(tmp_path: Path) -> None:
    file = tmp_path / "session-x.jsonl"
    file.write_text('{"sessionId":"s","projectHash":"h","startTime":"2026-01-01T00:00:00.000Z"}\n'
                    '{"id":"g","timestamp":"2026-01-01T00:00:01.000Z","type":"gemini","content":"ok","model":"m",'
                    '"tokens":{"input":100,"output":5,"cached":0,"thoughts":0,"tool":30,"total":135}}\n')  # fmt: skip
    (session,) = read_all([str(file)]).sessions
    assert totals(session) == [(130, 0, 5, 0)]


@pytest.mark.parametrize("env", [{}, {"GEMINI_CLI_HOME": "elsewhere"}])
def test_the_home(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    base = tmp_path / env["GEMINI_CLI_HOME"] if env else tmp_path
    (base / ".gemini" / "tmp").mkdir(parents=True)
    folders, _ = places("gemini-cli", {k: str(tmp_path / v) for k, v in env.items()})
    assert [f.path for f in folders] == [base / ".gemini" / "tmp"]


# Gemini CLI's Logger (packages/core/src/core/logger.ts) keeps every user prompt of a project in `logs.json` beside
# its `chats/`: a JSON array of {sessionId, messageId, type, message, timestamp}, written JSON.stringify(_, null, 2).
PROMPTS_LOG = [{"sessionId": "5f0c2f3e-8a1b-4c2d-9e3f-0a1b2c3d4e5f", "messageId": 0, "type": "user",
                "message": "explain this repo", "timestamp": "2026-01-10T09:30:00.000Z"}]  # fmt: skip


def test_a_tree_walk_passes_over_the_prompt_log_beside_the_chats(tmp_path: Path) -> None:
    """`kcost bill ~/.gemini/tmp` bills the chats; `logs.json`, of no format kcost reads, is passed over: counted,
    and named under --verbose (it used to stop the run, read as a turn spec that was none)."""
    project = tmp_path / ".gemini" / "tmp" / "0f1e2d3c"
    (project / "chats").mkdir(parents=True)
    shutil.copy(JSONL, project / "chats" / JSONL.name)
    (project / "logs.json").write_text(json.dumps(PROMPTS_LOG, indent=2))
    root = str(tmp_path / ".gemini" / "tmp")
    quiet = CliRunner().invoke(cli, ["bill", root])
    assert quiet.exit_code == 0, quiet.output + quiet.stderr
    assert quiet.stderr == "kcost: passed over 1 file(s) of no format kcost reads (--verbose names them)\n"
    assert quiet.stdout.startswith(JSONL.stem)
    told = CliRunner().invoke(cli, ["bill", root, "--verbose"])
    assert told.stderr == f"kcost: passed over {project / 'logs.json'}: of no format kcost reads\n"
    alone = CliRunner().invoke(cli, ["bill", str(project / "logs.json")])  # given by name: an error, exit 2
    assert alone.exit_code == 2 and "no session: not a format kcost reads" in alone.stderr


def test_a_bare_list_of_turns_is_still_a_turn_spec(tmp_path: Path) -> None:
    spec = tmp_path / "turns.json"
    spec.write_text(json.dumps([{"new": 2000, "output": 100}, {"new": 500, "output": 80}]))
    result = CliRunner().invoke(cli, ["bill", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["runs"][0]["total"]["turns"] == 2
