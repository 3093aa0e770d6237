"""The pi coding agent's sessions: one call per `assistant` message entry with usage, its prompt the entries along
the `parentId`s (from the last compaction), and what pi's counts mean.

pi's `usage` (badlogic/pi-mono `packages/ai/src/types.ts`) keeps the cache beside `input`: every provider adapter
leaves the cache reads and writes out of it (`providers/anthropic.ts` copies Anthropic's `input_tokens`,
`providers/openai-completions.ts` subtracts `cached_tokens`), so the prompt is `input + cacheRead + cacheWrite`;
`output` holds the reasoning (pi 0.73.1 stored a completion of 300 tokens, 40 of them reasoning, as 300).
Reference figures are ccusage 20.0.24's (`HOME=<fixture home> ccusage pi session --json --offline`), which
reads the four counts the same way.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers.discover import read_all
from kcost.readers.registry import READERS
from tests.readers.helpers import bill, counts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pi-agent"
EDGES = FIXTURES / "2026-01-02T00-00-00-000Z_0199a1b2-0000-7000-8000-000000000001.jsonl"
REAL = FIXTURES / "real-run" / "--home-dev-pi-demo--"
PARENT = REAL / "2026-12-05T02-20-33-639Z_01a24400-cfe6-727c-846f-a8833dde1b33.jsonl"
FORK = REAL / "2026-12-05T02-20-53-395Z_01a24401-1d12-72f9-9a2d-3fcc0ba05ab1.jsonl"
PI_MONO = FIXTURES / "pi-mono"


def summed(sessions: list[Any]) -> tuple[int, int, int, int]:
    rows = [c for s in sessions for c in counts(s)]
    return tuple(sum(r[n] for r in rows) for n in range(4))  # type: ignore[return-value]


def test_the_counts_mean_what_pi_logged() -> None:
    (session,) = read_all([str(PARENT)]).sessions
    assert session.agent == "pi-agent" and session.project == "/home/dev/pi-demo"
    # the stub answered 12,000 prompt / 0 cached / 300 out (40 reasoning), 12,500 / 11,900 / 120, 900 / 0 / 15:
    # pi 0.73.1 logged them as input 12,000, input 600 + cacheRead 11,900, input 900
    assert counts(session) == [(12_000, 0, 0, 300), (12_500, 11_900, 0, 120), (900, 0, 0, 15), (900, 0, 0, 15)]
    assert [r.model for r in session.records] == ["kimi-k3"] * 4
    # ccusage 20.0.24, session 01a24400: input 14,400, output 450, cache read 11,900, cache create 0
    assert summed([session]) == (14_400 + 11_900, 11_900, 0, 450)


def test_a_fork_bills_only_its_own_calls_where_its_parent_lies_beside_it(tmp_path: Path) -> None:
    parent, fork = read_all([str(REAL)]).sessions
    assert counts(fork) == [(12_000, 0, 0, 300), (12_500, 11_900, 0, 120)]
    assert "3 call(s) copied from the session this one was forked from: billed there" in fork.notes
    # ccusage 20.0.24 bills the fork 26,100 / 855 / 23,800 (input, output, cache read): the 3 calls `--fork` copied
    # (pi's `createBranchedSession` keeps each entry's `id`, time and usage) a second time, as its dedup key holds
    # the session id (ccusage `adapter/pi/parser.rs`). The 6 calls the stub served: 27,000 / 870 / 23,800.
    assert summed([parent, fork]) == (27_000 + 23_800, 23_800, 0, 870)
    assert summed([fork]) == (26_100 - 13_500 + 11_900, 11_900, 0, 855 - 435)
    # without its parent beside it, the fork bills the copies (none is billed elsewhere)
    shutil.copy(FORK, tmp_path / FORK.name)
    (alone,) = read_all([str(tmp_path / FORK.name)]).sessions
    assert summed([alone]) == (26_100 + 23_800, 23_800, 0, 855)


def test_the_prompt_is_the_path_from_the_header_and_a_compaction_replaces_it() -> None:
    (session,) = read_all([str(PARENT)]).sessions
    calls = session.records
    assert len(calls) == 4
    (session,) = read_all([str(PI_MONO)]).sessions
    # pi-mono's own test session (v1: no ids, a line after another): a compaction after the tenth call
    from kcost.errors import Leniency
    from kcost.readers.agents.pi_agent import PiAgent
    from kcost.readers.source import open_source

    (file,) = PI_MONO.rglob("*.jsonl")
    read = list(PiAgent().read(open_source(str(file)), [], leniency=Leniency(False)))
    before, after = read[9], read[10]
    assert before.messages is not None and [m.role for m in before.messages][:3] == ["assistant", "tool", "assistant"]
    assert after.messages is not None and after.messages[0].content.startswith(
        "The conversation history before this point was compacted"
    )
    assert [m.role for m in after.messages] == ["user", "user", "assistant", "user"]  # summary, then what followed
    assert after.output is not None and after.output.tool_calls and after.unlogged == "system prompt and tools"


def test_the_pi_mono_session_equals_ccusage() -> None:
    (session,) = read_all([str(PI_MONO)]).sessions
    # ccusage 20.0.24: input 44, output 2,762, cache read 2,012,837, cache create 33,743 (its parent session is not
    # beside it: the calls it copied are billed here, as ccusage bills them); 2 aborted calls of no tokens skipped
    assert summed([session]) == (44 + 2_012_837 + 33_743, 2_012_837, 33_743, 2_762)
    assert len(session.records) == 17
    assert {r.model for r in session.records} == {"claude-opus-4-5"}


def test_edge_cases() -> None:
    (session,) = read_all([str(EDGES)]).sessions
    assert counts(session) == [(14_003, 0, 14_000, 250), (14_905, 14_000, 900, 400), (0, 0, 0, 333), (100, 0, 0, 10)]
    assert [r.model for r in session.records] == ["claude-sonnet-4-5", "claude-sonnet-4-5", "gpt-5", "kimi-k3"]
    # the error entry (no tokens) is no call; the last line, cut short mid-write, is left out and said
    assert "its last line (line 10) was cut short, still being written: left out" in session.notes
    # ccusage 20.0.24: claude-sonnet-4-5 8 / 650 / 14,000 / 14,900 and gpt-5 0 / 333 (its totalTokens as output);
    # it drops the kimi-k3 call because its time has microseconds (ccusage `date_utils.rs` takes ISO times of 20,
    # 24, 25 or 29 characters only): pi wrote it, it is a call, billed here (100 in, 10 out)
    assert summed([session]) == (8 + 14_000 + 14_900 + 100, 14_000, 14_900, 650 + 333 + 10)


def test_a_broken_line_that_is_not_the_last_is_an_error(tmp_path: Path) -> None:
    lines = EDGES.read_text().splitlines()
    broken = tmp_path / "s.jsonl"
    broken.write_text("\n".join([*lines[:3], lines[-1], *lines[3:6]]) + "\n")
    result = CliRunner().invoke(cli, ["bill", str(broken)])
    assert result.exit_code != 0 and "s.jsonl:4" in result.stderr and "not valid JSON" in result.stderr


def test_the_default_bill_simulates_and_reported_bills_as_logged() -> None:
    simulated = bill(str(PARENT))["runs"][0]["sessions"][0]
    assert simulated["usage"] == "simulated" and simulated["agreement"] is not None
    reported = bill(str(PARENT), "--usage", "reported")["runs"][0]["sessions"][0]
    assert reported["usage"] == "reported"
    assert [(t["input_tokens"], t["hit_tokens"], t["output_tokens"]) for t in reported["turns"]] == [
        (12_000, 0, 300), (12_500, 11_900, 120), (900, 0, 15), (900, 0, 15)]  # fmt: skip


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
    assert list(rows) == ["pi-agent"] and rows["pi-agent"]["sessions"] == 1 and rows["pi-agent"]["turns"] == 4
    alone = bill("--input-format", "pi-agent", "--usage", "reported")["runs"][0]["sessions"]
    assert [s["name"] for s in alone] == [PARENT.stem]
    # PI_CODING_AGENT_DIR moves the agent folder, as pi's `getAgentDir` reads it
    moved = tmp_path / "elsewhere"
    shutil.move(str(home / ".pi" / "agent"), str(moved))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(moved))
    assert [s["name"] for s in bill("--input-format", "pi-agent")["runs"][0]["sessions"]] == [PARENT.stem]
