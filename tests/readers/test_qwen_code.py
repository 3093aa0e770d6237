"""Qwen Code's chats: one call per `assistant` record with `usageMetadata`, its prompt the chain of
`parentUuid`s, and what Qwen Code's counts mean.

Qwen Code fills Gemini's `usageMetadata` from an OpenAI-compatible response (QwenLM/qwen-code
`packages/core/src/core/openaiContentGenerator/converter.ts`): `promptTokenCount` is `prompt_tokens`, which holds
the cached tokens (`cachedContentTokenCount`), and `candidatesTokenCount` is `completion_tokens`, which holds the
reasoning (`thoughtsTokenCount`): `totalTokenCount` = prompt + candidates, nothing more. Reference figures are
ccusage 20.0.24's output (`ccusage qwen session --json --offline`, QWEN_DATA_DIR pointing at a folder holding
the fixture under `projects/<project>/chats/`), which adds both again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcost.readers.discover import read_all
from kcost.readers.homes import places

SESSION = "7d2e9a4c-1b3f-4e5d-8a6b-9c0d1e2f3a4b"
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "qwen-code" / f"{SESSION}.jsonl"


def totals(session: Any) -> list[tuple[int, int, int, int | None]]:
    return [(u.prompt, u.cached, u.output, u.reasoning) for u in (r.reported for r in session.records) if u]


def test_the_counts_mean_what_qwen_code_filled_them_with() -> None:
    (session,) = read_all([str(FIXTURE)]).sessions
    assert session.agent == "qwen-code" and session.project == "/home/user/demo"
    assert totals(session) == [(12_000, 11_264, 180, 120), (12_800, 12_032, 260, 40), (13_400, 12_800, 45, None)]
    # each record's total is prompt + candidates: the cached tokens are in the prompt, the thoughts in the output
    assert (12_000 + 180, 12_800 + 260, 13_400 + 45) == (12_180, 13_060, 13_445)
    # ccusage 20.0.24: inputTokens 38200, cacheReadTokens 36096, outputTokens 485, totalTokens 74941: it bills
    # the 38,200 prompt tokens as uncached and the 36,096 cached on top (74,296 in all), and adds the 160 thoughts
    # to the 485. kcost: 38,200 prompt of which 36,096 cached, 485 output.
    assert 74_941 == 38_200 + 36_096 + 485 + 160
    assert sum(p for p, *_ in totals(session)) == 38_200 and sum(o for _, _, o, _ in totals(session)) == 485


def test_the_prompt_follows_the_chain() -> None:
    from kcost.errors import Leniency
    from kcost.readers.agents.qwen_code import QwenCode
    from kcost.readers.source import open_source

    first, second, third = QwenCode().read(open_source(str(FIXTURE)), [], leniency=Leniency(False))
    assert first.messages is not None and [m.role for m in first.messages] == ["user"]
    assert first.output is not None and first.output.reasoning and first.output.tool_calls[0].name == "read_file"
    assert second.messages is not None and [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert "argparse" in second.messages[2].content and second.messages[2].tool_call_id == "call_0_read"
    assert third.messages is not None and [m.role for m in third.messages] == ["user", "assistant", "tool",
                                                                              "assistant", "tool"]  # fmt: skip
    assert third.model == "kimi-k2.5" and third.unlogged == "system prompt and tools"


def test_a_compression_checkpoint_replaces_the_history(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    checkpoint = ('{"uuid":"c0a1b2c3-00c0-4d5e-8f6a-7b8c9d0e1f2a","parentUuid":"c0a1b2c3-0004-4d5e-8f6a-7b8c9d0e1f2a",'
                  '"sessionId":"7d2e9a4c-1b3f-4e5d-8a6b-9c0d1e2f3a4b","timestamp":"2026-02-01T08:00:07.000Z",'
                  '"type":"system","subtype":"chat_compression","cwd":"/home/user/demo","version":"0.10.1",'
                  '"systemPayload":{"info":{"originalTokenCount":12180,"newTokenCount":300,"compressionStatus":1},'
                  '"compressedHistory":[{"role":"user","parts":[{"text":"Summary: add --verbose to cli.py."}]}]'
                  '}}')  # fmt: skip
    lines.insert(4, checkpoint)
    lines[5] = lines[5].replace('"parentUuid":"c0a1b2c3-0004-4d5e-8f6a-7b8c9d0e1f2a"',
                                '"parentUuid":"c0a1b2c3-00c0-4d5e-8f6a-7b8c9d0e1f2a"')  # fmt: skip
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    from kcost.errors import Leniency
    from kcost.readers.agents.qwen_code import QwenCode
    from kcost.readers.source import open_source

    _, second, _ = QwenCode().read(open_source(str(tmp_path / "s.jsonl")), [], leniency=Leniency(False))
    assert second.messages is not None and [m.content for m in second.messages] == ["Summary: add --verbose to cli.py."]


def test_not_a_claude_code_log() -> None:
    # Qwen Code's records carry Claude Code's keys (uuid, parentUuid, sessionId, cwd, version, type): detection
    # tells them apart by the Gemini `Content` (`parts`) they hold
    (session,) = read_all([str(FIXTURE)]).sessions
    assert session.agent == "qwen-code"


@pytest.mark.parametrize("env", [{}, {"QWEN_HOME": "elsewhere"}])
def test_the_home(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    home = tmp_path / env["QWEN_HOME"] if env else tmp_path / ".qwen"
    (home / "projects").mkdir(parents=True)
    folders, _ = places("qwen-code", {k: str(tmp_path / v) for k, v in env.items()})
    assert [f.path for f in folders] == [home / "projects"]
