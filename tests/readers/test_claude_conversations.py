"""Claude Code's conversations, as Claude Code writes them (`tests/claude_logs.parallel_session`): one response is
one call however its lines fall, each sub-agent's calls are billed on its own prefix, and a sub-agent's calls that
only its parent's progress lines hold are billed once."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost import api
from kcost.analysis import fixes
from kcost.api.settings import Settings
from kcost.billing.bills import bill
from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.model.session import Session
from kcost.pricing.prices import load_prices
from kcost.readers.agents.claude_code import read_calls
from kcost.readers.source import Source
from tests.claude_logs import parallel_session

AGENTS = 5
MAIN = "system prompt and tools"  # the main conversation's unlogged prefix
PRICES = load_prices()
CALLS = 6 + AGENTS * 5  # the main conversation's and each sub-agent's


def sessions(path: Path, usage: str) -> list[Session]:
    return api.sessions([str(path)], Settings(usage=usage))


def hits(path: Path, usage: str) -> tuple[int, int]:
    """The calls billed and their hit tokens, in the usage mode."""
    (session,) = sessions(path, usage)
    bill = api.bill(session, usage=usage)
    return bill.summary.turns, bill.summary.hit_tokens


@pytest.mark.parametrize("interleaved", [True, False], ids=["interleaved", "in-blocks"])
@pytest.mark.parametrize("request_ids", [True, False], ids=["request-ids", "no-request-ids"])
@pytest.mark.parametrize("agent_ids", [True, False], ids=["agent-ids", "no-agent-ids"])
def test_parallel_sub_agents_in_one_file_are_each_billed_on_their_own_prefix(
    tmp_path: Path, agent_ids: bool, request_ids: bool, interleaved: bool
) -> None:
    """Five sub-agents logged into the parent's file as they ran at once (or each written when it ended), with and
    without the agent ids and request ids: each of their calls is one call, and the default bill's cache hits are
    within 10% of what the log says was cached (the log's usage is what a cache of each conversation's own
    prefix bills, as K3's does)."""
    path = parallel_session(tmp_path, AGENTS, agent_ids=agent_ids, request_ids=request_ids, interleaved=interleaved)
    logged_calls, logged = hits(path, "reported")
    simulated_calls, simulated = hits(path, "simulated")
    assert logged_calls == simulated_calls == CALLS
    assert abs(simulated - logged) <= 0.1 * logged, (simulated, logged)


def test_a_response_whose_blocks_its_tool_results_split_is_one_call(tmp_path: Path) -> None:
    """Claude Code runs a tool while the response streams: its result is logged between the response's blocks.
    With no request id logged, the blocks that repeat the response's input-side usage are still the response's:
    one call, its output the last block's count."""
    path = parallel_session(tmp_path, 0, request_ids=False)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(i for i, r in enumerate(records) if r["type"] == "assistant")
    result = next(i for i, r in enumerate(records) if i > first and r["type"] == "user")
    records.insert(first + 1, records.pop(result))  # the tool's result, right after the response's first block
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (session,) = sessions(path, "reported")
    assert len(session.records) == 6
    assert [r.reported.output for r in session.records if r.reported] == [180] * 6


def test_a_gateways_one_message_id_is_told_apart_by_the_usage(tmp_path: Path) -> None:
    """A gateway that answers every response with one message id and no request id: each response is a call of
    its own (its input-side usage differs from the one before), a response's blocks one call."""
    path = parallel_session(tmp_path, 0, request_ids=False)
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "assistant":
            record["message"]["id"] = "msg_gateway"
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    (session,) = sessions(path, "reported")
    assert len(session.records) == 6


def test_calls_only_in_progress_lines_are_billed(tmp_path: Path) -> None:
    """Claude Code 2.1.8 to 2.1.84 copied a sub-agent's calls into its parent's log as progress lines: where the
    sub-agent's own log is gone, those calls are billed from the copies, with their logged usage."""
    path = parallel_session(tmp_path, AGENTS, files=True, progress=True)
    whole, _ = hits(tmp_path, "reported")  # the parent's log and the sub-agents'
    shutil.rmtree(tmp_path / path.stem)  # the sub-agents' own logs
    (session,) = sessions(tmp_path, "reported")
    assert whole == len(session.records) == CALLS
    sub_agents = [r for r in session.records if r.model == "claude-haiku-4-5-20251001"]
    assert len(sub_agents) == AGENTS * 5
    assert all(r.reported is not None and r.reported.output == 180 for r in sub_agents)
    calls, simulated = hits(tmp_path, "simulated")  # their prompts rebuilt from the copies: tasks, tool calls, results
    assert calls == CALLS and simulated > 0


def test_progress_copies_beside_the_sub_agents_logs_are_counted_once(tmp_path: Path) -> None:
    """Where the sub-agents' own logs are there, the parent's progress copies of their calls bill nothing more."""
    copied, bare = tmp_path / "copied", tmp_path / "bare"
    parallel_session(copied, AGENTS, files=True, progress=True)
    parallel_session(bare, AGENTS, files=True, progress=False)
    for usage in ("reported", "simulated"):
        assert hits(copied, usage) == hits(bare, usage)
    assert hits(copied, "reported")[0] == CALLS


def test_a_sub_agents_task_copied_in_progress_lines_is_sent_once(tmp_path: Path) -> None:
    """Claude Code copies a sub-agent's first message (its task) as a progress line and names the task again in
    every copy's `prompt`: the rebuilt prompt holds it once."""
    path = parallel_session(tmp_path, AGENTS, files=True, progress=True)
    shutil.rmtree(tmp_path / path.stem)
    calls = [c for c in read_calls(Source(path.name, path.read_bytes(), ".jsonl"), []) if c.unlogged != MAIN]
    assert len(calls) == AGENTS * 5
    for call in calls:
        assert call.messages is not None
        tasks = [m for m in call.messages if m.role == "user" and str(m.content).startswith("Task ")]
        assert len(tasks) == 1 and call.messages[0] is tasks[0]


def explained(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["explain", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    (session,) = json.loads(result.stdout)
    return session  # type: ignore[no-any-return]


def test_sub_agents_on_a_model_of_their_own_are_no_model_switch(tmp_path: Path) -> None:
    """Sub-agents on Haiku beside a main conversation on Opus: another conversation, in its own model's cache,
    not the main conversation switching; no miss is a switch's and `one-model` is not offered."""
    path = parallel_session(tmp_path, AGENTS, agent_ids=True)
    (session,) = sessions(path, "simulated")
    assert {r.model for r in session.records if r.conversation is not None} == {"claude-haiku-4-5-20251001"}
    found = explained(path)
    assert "model switched" not in {r["cause"] for r in found["ranked"]}
    assert "one-model" not in {f["fix"] for f in found["fixes"]}


def test_the_main_conversation_changing_model_is_a_switch(tmp_path: Path) -> None:
    """The main conversation's last two calls on Sonnet (a skill naming its own model): a switch, whose fix keeps
    the main conversation on Opus and touches its calls alone, saving at most what the switch's misses cost."""
    path = parallel_session(tmp_path, AGENTS, agent_ids=True)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line["type"] == "assistant" and line["message"]["id"] in ("msg_main_04", "msg_main_05"):
            line["message"]["model"] = "claude-sonnet-4-5-20250929"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (session,) = sessions(path, "simulated")
    moved = [i for i, r in enumerate(session.records, 1) if r.model == "claude-sonnet-4-5-20250929"]
    assert len(moved) == 2 and session.main_model == "claude-opus-4-6"
    found = explained(path)
    (switch,) = [r for r in found["ranked"] if r["cause"] == "model switched"]
    (fix,) = [f for f in found["fixes"] if f["fix"] == "one-model"]
    assert fix["turns"] == moved
    assert Decimal(0) < Decimal(fix["saving"]) <= Decimal(switch["cost"])


@pytest.mark.parametrize("interleaved", [True, False], ids=["interleaved", "in-blocks"])
def test_a_fix_that_touches_no_call_bills_the_session_as_it_was(tmp_path: Path, interleaved: bool) -> None:
    """Each conversation is rewritten against its own prompt: a fix for a cause no call has (no message edited,
    no reasoning dropped, no compaction) changes nothing, however the conversations' calls interleave."""
    path = parallel_session(tmp_path, AGENTS, agent_ids=True, interleaved=interleaved)
    (session,) = sessions(path, "simulated")
    cache = parse_cache_model("k3")
    plan = fixes.plan(session, cache, ["append", "pass-reasoning", "compaction"])
    assert plan.turns == ()
    assert bill(plan.session, cache=cache, prices=PRICES).turns == bill(session, cache=cache, prices=PRICES).turns


def test_the_call_after_a_compact_boundary_follows_a_compaction_not_an_edit(tmp_path: Path) -> None:
    """Auto-compaction writes a `compact_boundary` with no parent, then the summary: the next call's prompt is the
    summary where the conversation was, which is the compaction's doing, not an edited message; it alone says so."""
    import random

    from kcost.model.causes import Cause
    from tests.claude_logs import Corpus, write_session

    path = tmp_path / "11111111-2222-4333-8444-555555555555.jsonl"
    rng = random.Random(3)
    write_session(path, "/home/dev/x", path.stem, 200, 1.77e9, rng, Corpus(rng))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    boundary = next(i for i, x in enumerate(lines, 1) if x.get("subtype") == "compact_boundary")
    calls = list(read_calls(Source(path.name, path.read_bytes(), ".jsonl"), []))
    compacted = [c for c in calls if c.compacted]
    assert len(compacted) == 1 and compacted[0].line == min(c.line for c in calls if c.line > boundary)
    (session,) = sessions(path, "simulated")
    assert Cause.MESSAGE_EDITED not in {r.change.cause for r in session.records if r.change is not None}
    (after,) = [r for r, c in zip(session.records, calls, strict=True) if c.compacted]
    assert after.change is not None and after.change.cause is Cause.CUT_SHORT
