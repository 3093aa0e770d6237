"""Cline's task folders and SDK sessions: one call per `api_req_started` row (per SDK assistant message with
`metrics`), what each count means for the provider that filled it, the prompts rebuilt from the API history,
and where `kcost bill` finds them.

ccusage 20.0.24 does not read Cline: the reference totals are those its own code gives (cline/cline v3.89.2
`shared/getApiMetrics.ts`, summed into the task's `taskHistory.json` item, and the SDK's per-message `metrics`),
derived in the research notes of issue 48. tokscale (junhoyeo/tokscale v4.6.0 `sessions/roocode.rs`, which
reads Cline's tasks with Roo's parser) takes `tokensIn` as the uncached input whatever the provider, finds no
model (Cline writes no `<model>`), ignores `subagent_usage`, reads no Cursor folder and no SDK session.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import Leniency
from kcost.readers.agents.cline import Cline
from kcost.readers.discover import read_all
from tests.readers.helpers import as_home, bill, counts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cline"
ANTHROPIC, DEEPSEEK = FIXTURES / "1781250000000", FIXTURES / "1781337600000"  # a VS Code task, a Cursor task
SESSIONS = FIXTURES / "sessions"  # ~/.cline/data/sessions
SDK, FORK = SESSIONS / "1783376866212_p8pzo", SESSIONS / "1784094124598_rruoq"


def sessions(report: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = report["runs"][0]["sessions"]
    return found


def test_an_anthropic_task_adds_the_cache_to_tokens_in() -> None:
    (session,) = read_all([str(ANTHROPIC)]).sessions
    assert session.agent == "cline" and session.name == "1781250000000" and session.project == "/home/dev/reportgen"
    # Anthropic's handler gives the tokens that neither read nor wrote the cache: prompt = in + writes + reads
    assert counts(session) == [(4 + 13_842, 0, 13_842, 687), (6 + 15_380, 0, 15_380, 412),
                               (5 + 2_210 + 15_380, 15_380, 2_210, 955), (4 + 3_950 + 17_590, 17_590, 3_950, 161),
                               (3 + 220 + 21_540, 21_540, 220, 57)]  # fmt: skip
    # each row's model: its `modelInfo` (plan mode on Opus, act mode on Sonnet)
    assert session.call_models == ("claude-opus-4-5-20251101", *["claude-sonnet-4-5-20250929"] * 4)
    prompt, cached, written, output = (sum(c[i] for c in counts(session)) for i in range(4))
    assert (prompt, cached, written, output) == (90_134, 54_510, 35_602, 2_272)
    # tokscale: input 22 (tokensIn as is), cache_read 54,510, cache_write 35,602: the same prompt, 22 + 54,510 +
    # 35,602 = 90,134, but model `unknown`; the retried third request and the cancelled last one are one row each
    assert sum(p - c - w for p, c, w, _ in counts(session)) == 22
    # the `use_subagents` batch is a total of calls logged nowhere one by one: no prompt, so not in the simulation
    assert any("`subagent_usage`" in n and "40,917 prompt tokens" in n for n in session.notes)


def test_billed_as_reported_the_task_totals_are_clines_own() -> None:
    """`--usage reported` bills the sub-agents' total too: the sums are the task's `taskHistory.json` item,
    which Cline adds up from the same rows (`getApiMetrics`)."""
    (item,) = json.loads((FIXTURES / "state" / "taskHistory.json").read_text())
    (session,) = sessions(bill(str(ANTHROPIC), "--usage", "reported"))
    turns = session["turns"]
    assert len(turns) == 6
    assert sum(t["input_tokens"] for t in turns) == item["tokensIn"] + item["cacheWrites"] + item["cacheReads"]
    assert sum(t["hit_tokens"] for t in turns) == item["cacheReads"] == 85_554
    assert sum(t["written_tokens"] for t in turns) == item["cacheWrites"] == 45_472
    assert sum(t["output_tokens"] for t in turns) == item["tokensOut"] == 3_476


def test_an_openai_compatible_task_holds_the_cache_in_tokens_in() -> None:
    """The "OpenAI Compatible" provider pointed at DeepSeek: `tokensIn` is `prompt_tokens` (the hits in it) and
    `cacheWrites` holds DeepSeek's misses (`prompt_cache_miss_tokens`): no writes."""
    (session,) = read_all([str(DEEPSEEK)]).sessions
    assert counts(session) == [(11_234, 0, 0, 389), (12_010, 11_008, 0, 244), (12_575, 11_968, 0, 97)]
    assert session.call_models == ("deepseek-chat",) * 3
    assert sum(c[0] for c in counts(session)) == 35_819  # not 35,819 + 12,843 + 22,976 as an exclusive reading


def test_an_sdk_session_and_its_sub_agent_and_a_fork() -> None:
    found = read_all([str(SESSIONS)])
    (session,) = found.sessions  # the fork copied every call of its source: none of its own
    assert session.name == SDK.name and session.project == "/Users/example/dev/cline"
    assert counts(session) == [(34_334, 0, 0, 741), (9_120, 0, 9_110, 61), (35_912, 34_332, 0, 164),
                               (9_410, 9_110, 290, 38), (36_673, 35_910, 0, 290), (12_238, 12_224, 0, 10)]  # fmt: skip
    prompt, cached, written, output = (sum(c[i] for c in counts(session)) for i in range(4))
    assert (prompt, cached, written, output) == (137_687, 91_576, 9_400, 1_304)
    assert session.call_models[1] == session.call_models[3] == "anthropic/claude-haiku-4.5"
    assert any(FORK.name in s and "no model calls" in s for s in found.skipped)
    # tokscale's newer reader counts the fork's copies of the lead's calls again: 10 messages, input 73,402
    # (inputTokens less the cache's)
    lead = [c for c, m in zip(counts(session), session.call_models, strict=True) if m and "haiku" not in m]
    sub = [c for c, m in zip(counts(session), session.call_models, strict=True) if m and "haiku" in m]
    assert 2 * sum(p - c - w for p, c, w, _ in lead) + sum(p - c - w for p, c, w, _ in sub) == 73_402


def test_a_fork_whose_source_is_gone_bills_what_it_copied(tmp_path: Path) -> None:
    shutil.copytree(FORK, tmp_path / FORK.name)
    (session,) = read_all([str(tmp_path / FORK.name)]).sessions
    assert len(counts(session)) == 4 and sum(c[0] for c in counts(session)) == 34_334 + 35_912 + 36_673 + 12_238
    assert any("not beside it" in n for n in session.notes)


def test_the_prompts_are_rebuilt_from_the_api_history() -> None:
    calls = list(Cline().read(ANTHROPIC, [], leniency=Leniency(False)))
    first, second, third = calls[:3]
    assert first.messages is not None and [m.role for m in first.messages] == ["user"]
    assert "<task>" in first.messages[0].content and first.output is not None
    assert first.output.content.startswith("<thinking>")
    roles = ["user", "assistant", "user", "assistant", "user"]  # XML tool use: results in the user's text
    assert third.messages is not None and [m.role for m in third.messages] == roles
    assert second.messages is not None and third.messages[:4] == (*second.messages, second.output)
    assert all(c.unlogged == "system prompt and tools" for c in calls if c.messages is not None)
    sdk = list(Cline().read(SDK, [], leniency=Leniency(False)))
    assert sdk[0].system is not None and sdk[0].system.startswith("You are Cline") and sdk[0].unlogged == "tools"
    assert sdk[1].unlogged == "sub-agent agent_1783376874012_k3x9qa's system prompt and tools"
    assert sdk[2].messages is not None and [m.role for m in sdk[2].messages] == ["user", "assistant", "tool"]
    assert sdk[2].messages[1].tool_calls[0].name == "editor"


def test_the_default_bill_simulates_the_cache() -> None:
    (session,) = sessions(bill(str(ANTHROPIC)))
    assert len(session["turns"]) == 5 and session["usage"] == "simulated"
    assert [t["input_tokens"] for t in session["turns"]] == [13_846, 15_386, 17_595, 21_544, 21_763]


def _task(tmp_path: Path, rows: list[dict[str, Any]], name: str = "1781250000000") -> Path:
    folder = tmp_path / name
    shutil.copytree(ANTHROPIC, folder)
    ui = json.loads((folder / "ui_messages.json").read_text())
    (folder / "ui_messages.json").write_text(json.dumps(ui + rows))
    return folder


def test_a_request_still_streaming_is_no_call(tmp_path: Path) -> None:
    placeholder = {"ts": 1781250410000, "type": "say", "say": "api_req_started",
                   "text": json.dumps({"request": "...Loading..."})}  # fmt: skip
    (session,) = read_all([str(_task(tmp_path, [placeholder]))]).sessions
    assert len(session.records) == 5


def test_an_old_task_logs_its_counts_in_api_req_finished(tmp_path: Path) -> None:
    """Before 2024-08 the counts came in an `api_req_finished` row after the request's (`combineApiRequests`)."""
    finished = {"tokensIn": 7, "tokensOut": 30, "cacheWrites": 100, "cacheReads": 21_763}
    rows = [{"ts": 1781250410000, "type": "say", "say": "api_req_started", "text": json.dumps({"request": "go"})},
            {"ts": 1781250411000, "type": "say", "say": "api_req_finished", "text": json.dumps(finished)}]  # fmt: skip
    (session,) = read_all([str(_task(tmp_path, rows))]).sessions
    assert counts(session)[-1] == (7 + 100 + 21_763, 21_763, 100, 30)


def test_a_file_cut_short_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "1781250000000"
    shutil.copytree(ANTHROPIC, folder)
    raw = (folder / "ui_messages.json").read_bytes()
    (folder / "ui_messages.json").write_bytes(raw[: len(raw) // 2])
    result = CliRunner().invoke(cli, ["bill", str(folder)])
    assert result.exit_code == 2 and "ui_messages.json" in result.stderr and "cut short" in result.stderr


def test_a_bad_count_is_named(tmp_path: Path) -> None:
    bad = {"ts": 1781250410000, "type": "say", "say": "api_req_started", "text": json.dumps({"tokensIn": -4})}
    folder = _task(tmp_path, [bad])
    result = CliRunner().invoke(cli, ["bill", str(folder)])
    assert result.exit_code == 2 and "[20].text.tokensIn" in result.stderr
    (session,) = sessions(bill(str(folder), "--lenient"))
    assert len(session["turns"]) == 5


def test_a_file_given_alone_is_read_as_its_folder() -> None:
    (session,) = read_all([str(ANTHROPIC / "api_conversation_history.json")]).sessions
    assert session.source == str(ANTHROPIC) and session.agent == "cline"
    (session,) = read_all([str(SDK / f"{SDK.name}.messages.json")]).sessions
    assert session.source == str(SDK)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding Cline's tasks in VS Code's and Cursor's globalStorage and the SDK's sessions in ~/.cline, the
    agents' variables unset."""
    folder = tmp_path / "home"
    storage = "User/globalStorage/saoudrizwan.claude-dev"
    shutil.copytree(ANTHROPIC, folder / ".config/Code" / storage / "tasks" / ANTHROPIC.name)
    shutil.copytree(FIXTURES / "state", folder / ".config/Code" / storage / "state")
    shutil.copytree(DEEPSEEK, folder / ".config/Cursor" / storage / "tasks" / DEEPSEEK.name)
    shutil.copytree(SESSIONS, folder / ".cline/data/sessions")
    as_home(folder, monkeypatch, "APPDATA", "LOCALAPPDATA")
    return folder


def test_kcost_finds_every_home(home: Path) -> None:
    for args in ((), ("--input-format", "cline")):
        found = sessions(bill(*args, "--usage", "reported"))
        assert sorted(s["name"] for s in found) == [ANTHROPIC.name, DEEPSEEK.name, SDK.name]
    result = CliRunner().invoke(cli, ["bill", "--by", "agent", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)["rows"]
    assert row["group"] == "cline" and row["sessions"] == 3 and row["turns"] == 5 + 3 + 6


def test_cline_dir_moves_its_own_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.move(home / ".cline", home / "elsewhere")
    monkeypatch.setenv("CLINE_DIR", str(home / "elsewhere"))
    (session,) = sessions(bill("--input-format", "cline"))
    assert session["name"] == SDK.name
