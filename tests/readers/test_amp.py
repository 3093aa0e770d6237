"""Amp's threads: one call per assistant message with `usage`, its prompt the messages before it, and what Amp's
counts mean.

Amp's `usage` is Anthropic's in camelCase: `inputTokens` leaves out the cache's reads and writes
(`totalInputTokens = inputTokens + cacheCreationInputTokens + cacheReadInputTokens` in every thread), so the
prompt is the three together. Reference figures are ccusage 20.0.24's (`ccusage amp session --json --offline -z
UTC`, HOME pointing at `tests/fixtures/amp/home`, AMP_DATA_DIR unset): its `inputTokens` is the prompt's
uncached, unwritten part, `cacheReadTokens` the cached and `cacheCreationTokens` the written.
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
from kcost.readers.registry import READERS
from tests.readers.helpers import as_home

THREADS = Path(__file__).resolve().parent.parent / "fixtures" / "amp" / "home" / ".local" / "share" / "amp" / "threads"
CURRENT = "T-5f1c9a2e-8b7d-4c3e-9a10-2d4e6f8a0b1c"  # `usage` on each assistant message
LEDGER = "T-test-thread-123"  # an older thread: `usageLedger.events` beside the messages' `usage`
TOOLS = "T-9c4e7b20-3d1a-4f6e-b8a2-5e0c1d2f3a4b"  # tool calls, their results, thinking

# ccusage 20.0.24 on the three threads: (inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens)
CCUSAGE = {
    CURRENT: (15, 220, 23_372, 986),
    LEDGER: (300, 130, 3_200, 1_500),
    TOOLS: (13, 254, 18_450, 9_490),
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def reported(*args: str) -> dict[str, Any]:
    code, out, err = run("bill", *args, "--usage", "reported", "--format", "json")
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def as_ccusage(session: dict[str, Any]) -> tuple[int, int, int, int]:
    """A session's reported totals as ccusage counts them: uncached unwritten input, output, reads, writes."""
    turns = session["turns"]
    prompt = sum(t["input_tokens"] for t in turns)
    hit, written = sum(t["hit_tokens"] for t in turns), sum(t["written_tokens"] for t in turns)
    return prompt - hit - written, sum(t["output_tokens"] for t in turns), hit, written


def calls(thread: str | Path) -> list[Any]:
    from kcost.errors import Leniency
    from kcost.readers.agents.amp import Amp
    from kcost.readers.source import open_source

    path = thread if isinstance(thread, Path) else THREADS / f"{thread}.json"
    return list(Amp().read(open_source(str(path)), [], leniency=Leniency(False)))


def test_the_counts_are_anthropics_and_equal_ccusages_token_for_token() -> None:
    report = reported(str(THREADS))
    sessions = {s["name"]: s for s in report["runs"][0]["sessions"]}
    assert {name: as_ccusage(s) for name, s in sessions.items()} == CCUSAGE
    # each call as Amp logged it: prompt = inputTokens + cacheCreationInputTokens + cacheReadInputTokens, which is
    # Amp's own `totalInputTokens` (12,368 and 12,005)
    first, second = calls(CURRENT)
    assert first.reported is not None and second.reported is not None
    assert (first.reported.prompt, first.reported.cached, first.reported.written, first.reported.output) == (
        12_368, 11_372, 986, 178)  # fmt: skip
    assert (second.reported.prompt, second.reported.cached, second.reported.written) == (12_005, 12_000, 0)
    assert first.model == "claude-haiku-4-5-20251001" and first.time == pytest.approx(1_768_822_930.652)


def test_the_default_bill_simulates_the_rebuilt_prompts() -> None:
    code, out, err = run("bill", str(THREADS / f"{TOOLS}.json"), "--format", "json")
    assert code == 0, err
    (session,) = json.loads(out)["runs"][0]["sessions"]
    assert session["usage"] == "simulated" and len(session["turns"]) == 3
    assert any("system prompt and tools not in the log" in n for n in session["notes"])
    # the later calls find the earlier prompt in the cache
    assert session["turns"][1]["hit_tokens"] > 0


def test_the_prompt_is_rebuilt_from_the_messages() -> None:
    first, second, third = calls(TOOLS)
    assert first.messages is not None and [m.role for m in first.messages] == ["user"]
    assert first.output is not None and first.output.reasoning == "Read the test first."
    assert first.output.tool_calls[0].name == "Read" and '"tests/test_dates.py"' in first.output.tool_calls[0].arguments
    assert second.messages is not None and [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[2].tool_call_id == "toolu_01" and "next_month" in second.messages[2].content
    assert third.messages is not None and third.messages[-1].content == "Edited src/dates.py"
    assert third.unlogged == "system prompt and tools" and third.model == "claude-sonnet-4-5-20250929"


def test_an_older_threads_ledger_dates_and_fills_its_messages(tmp_path: Path) -> None:
    # the messages' usage holds the cache counts the ledger lacks; the ledger event names its message
    # (`toMessageId`) and gives its time: ccusage reads the ledger's input and output and the message's cache
    # counts, the same figures (300 / 130 / 3,200 / 1,500 above)
    first, second = calls(LEDGER)
    assert first.reported is not None and (first.reported.prompt, first.reported.cached) == (800, 200)
    assert first.time == pytest.approx(1_763_892_000.0) and second.time == pytest.approx(1_763_892_300.0)
    # a message with no usage of its own is billed from its ledger event (input and output only); ccusage reads
    # the ledger alone when there is one, so it loses a message the ledger misses, as kcost does not
    thread = json.loads((THREADS / f"{LEDGER}.json").read_text())
    del thread["messages"][3]["usage"]
    thread["usageLedger"]["events"] = thread["usageLedger"]["events"][1:]
    (tmp_path / "T-edited.json").write_text(json.dumps(thread))
    first, second = calls(tmp_path / "T-edited.json")
    assert first.reported is not None and (first.reported.prompt, first.reported.output) == (800, 50)
    assert second.reported is not None and (second.reported.prompt, second.reported.cached) == (200, 0)
    assert second.model == "claude-sonnet-4-5-20250929" and first.time is not None and first.time < second.time


def test_a_call_with_no_time_is_at_the_threads_creation(tmp_path: Path) -> None:
    # ccusage 20.0.24 drops a call whose time is missing (parser.rs: no timestamp, no entry); kcost bills it at
    # the thread's `created`
    thread = json.loads((THREADS / f"{CURRENT}.json").read_text())
    del thread["messages"][1]["usage"]["timestamp"]
    (tmp_path / "T-x.json").write_text(json.dumps(thread))
    first, _ = calls(tmp_path / "T-x.json")
    assert first.time == pytest.approx(1_768_822_925.0)


def test_a_bad_count_names_amps_field(tmp_path: Path) -> None:
    thread = json.loads((THREADS / f"{CURRENT}.json").read_text())
    thread["messages"][3]["usage"]["cacheReadInputTokens"] = -5
    (tmp_path / "T-bad.json").write_text(json.dumps(thread))
    code, _, err = run("bill", str(tmp_path / "T-bad.json"))
    assert code == 2 and "messages[3].usage.cacheReadInputTokens" in err and "T-bad.json" in err, err
    report = reported(str(tmp_path / "T-bad.json"), "--lenient")
    assert len(report["runs"][0]["sessions"][0]["turns"]) == 1


def test_a_thread_caught_mid_write_is_passed_over(tmp_path: Path) -> None:
    shutil.copy(THREADS / f"{CURRENT}.json", tmp_path / f"{CURRENT}.json")
    text = (THREADS / f"{TOOLS}.json").read_text()
    (tmp_path / f"{TOOLS}.json").write_text(text[: len(text) // 2])  # Amp rewrites the whole file
    found = read_all([str(tmp_path)])
    assert [s.name for s in found.sessions] == [CURRENT]
    assert len(found.skipped) == 1 and TOOLS in found.skipped[0]


def test_not_a_kimi_api_request() -> None:
    # a thread is a JSON document with `messages`, as a chat-completions request is: Amp's reader is asked first
    (session,) = read_all([str(THREADS / f"{CURRENT}.json")]).sessions
    assert session.agent == "amp"
    names = [e.name for e in READERS]
    assert names.index("amp") < names.index("kimi-api")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding the threads where Amp keeps them, every agent's variable unset."""
    folder = tmp_path / "home"
    shutil.copytree(THREADS, folder / ".local" / "share" / "amp" / "threads")
    as_home(folder, monkeypatch)
    return folder


def test_discovery_finds_the_threads(home: Path) -> None:
    code, out, err = run("bill", "--usage", "reported", "--format", "json")
    assert code == 0, err
    assert "read 3 sessions from ~/.local/share/amp/threads (amp)" in err
    sessions = json.loads(out)["runs"][0]["sessions"]
    assert {s["name"]: as_ccusage(s) for s in sessions} == CCUSAGE
    code, out, err = run("bill", "--input-format", "amp", "--usage", "reported", "--format", "json")
    assert code == 0 and len(json.loads(out)["runs"][0]["sessions"]) == 3, err
    code, out, err = run("bill", "--by", "agent", "--usage", "reported", "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert row["group"] == "amp" and row["sessions"] == 3 and row["output_tokens"] == 604


def test_the_variable_names_several_folders(tmp_path: Path) -> None:
    (tmp_path / "a" / "threads").mkdir(parents=True)
    (tmp_path / "b" / "threads").mkdir(parents=True)
    folders, _ = places("amp", {"AMP_DATA_DIR": f"{tmp_path / 'a'},{tmp_path / 'b'}"})
    assert [f.path for f in folders] == [tmp_path / "a" / "threads", tmp_path / "b" / "threads"]
