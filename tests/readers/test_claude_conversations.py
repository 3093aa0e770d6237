"""Claude Code's conversations, as Claude Code writes them (`tests/claude_logs.parallel_session`): one response is
one call however its lines fall, each sub-agent's calls are billed on its own prefix, and a sub-agent's calls that
only its parent's progress lines hold are billed once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kcost import api
from kcost.api.settings import Settings
from kcost.model.session import Session
from tests.claude_logs import parallel_session

AGENTS = 5
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
