"""The Kimi CLI and Kimi Code logs read as the agents write and replay them (issue 19).

Kimi CLI: every size the logs record is used (the wire's `StatusUpdate`, else the context's `_usage` counts
around the reply), steps are matched to replies by what they record, a step whose reply never reached the
context is kept and named, and a calibration clamp that binds is a note. Kimi Code: wire protocol 1.5 writes
`usage.record` before the step's content; every `context.apply_compaction` form replays as agent-core does;
`swarm_mode.exit` takes back its reminder. Each fixture is written as the agent writes it (see
`tests/fixtures/README.md`); every figure below is worked out from the fixture's own records.
"""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers import read

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLI, CODE = FIXTURES / "kimi-cli", FIXTURES / "kimi-code"


def bill(*paths: Path | str, usage: str | None = None) -> list[dict[str, Any]]:
    """`kcost bill PATHS --format json` (the default bill, or `--usage USAGE`): its sessions."""
    args = ["bill", *map(str, paths), "--format", "json", *(("--usage", usage) if usage else ())]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output + result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)["runs"][0]["sessions"]
    return found


def per_call(session: dict[str, Any]) -> list[tuple[int, int]]:
    return [(t["input_tokens"], t["output_tokens"]) for t in session["turns"]]


def calls(path: Path) -> list[Any]:
    from kcost.errors import STRICT
    from kcost.readers.agents.kimi_code import KimiCode
    from kcost.readers.source import open_source

    return list(KimiCode().read(open_source(str(path)), [], leniency=STRICT))


# ---- Kimi CLI: `_usage` counts --------------------------------------------------------------------------------


def usage_pairs(context: Path) -> list[tuple[int, int]]:
    """(prompt, output) from the `_usage` counts around each reply, as `kimisoul.py` writes them: `usage.input`
    just before the reply, `usage.total` just after."""
    rows = [json.loads(line) for line in context.read_text().splitlines() if line.strip()]
    out = []
    for i, row in enumerate(rows):
        before, after = rows[i - 1] if i else {}, rows[i + 1] if i + 1 < len(rows) else {}
        if row["role"] == "assistant" and before.get("role") == after.get("role") == "_usage":
            out.append((before["token_count"], after["token_count"] - before["token_count"]))
    return out


def test_usage_counts_size_the_calls_the_wire_logs_no_usage_for() -> None:
    # the session: 22 replies, 15 of them with a `StatusUpdate`; the wire ends at step 13 of the second
    # turn, so the last 7 calls are known only by their `_usage` counts (57,722-63,363 in, 74-651 out), which
    # kcost used to skip, estimating them at the clamp's x8 instead
    folder = CLI / "large-100msgs"
    (session,) = bill(folder)
    logged = usage_pairs(folder / "context.jsonl")
    assert len(logged) == 22
    assert per_call(session) == logged  # the StatusUpdates agree with the counts where both are logged
    assert logged[15:] == [(57722, 242), (60288, 481), (61388, 311), (62379, 265), (63162, 174), (63363, 651),
                           (62754, 74)]  # fmt: skip
    assert session["calls_sized_from_usage"] == 22 and session["calls_estimated"] == 0
    assert any("7 call(s) with no usage in the wire sized from the context's `_usage` counts" in n
               for n in session["notes"])  # fmt: skip


def test_reported_means_logged_usage_counts_alone_are_not_reported() -> None:
    # the same session billed as reported: the 7 calls the `_usage` counts size (no cached count) are left out
    # and named, not billed as reported with 0 cached ($1.73 where the 15 logged calls cost $0.41); the default
    # bill compares reported and simulated hits on the 15 logged calls alone (13 of 15, not "13 of 22")
    folder = CLI / "large-100msgs"
    (reported,) = bill(folder, usage="reported")
    assert reported["summary"]["turns"] == 15 and reported["unbilled_calls"] == 7
    assert [t["turn"] for t in reported["turns"]] == list(range(1, 16))
    assert any(n.startswith("7 call(s) whose log records their sizes but no usage") for n in reported["notes"])
    assert Decimal(reported["summary"]["total"]).quantize(Decimal("0.01")) == Decimal("0.41")
    assert "cache" not in reported  # billed as reported: no rule simulated
    (default,) = bill(folder)
    checked = [t["check"] is not None for t in default["turns"]]
    assert checked == [True] * 15 + [False] * 7
    assert (default["agreement"]["turns"], default["agreement"]["agree"]) == (15, 13)


def test_the_json_names_the_rule_each_session_was_billed_under() -> None:
    # the default bill of a log of K3's own fits the rule to its cached counts: 256-token blocks here, while the
    # run's rule is the published 512
    result = CliRunner().invoke(cli, ["bill", str(CLI / "large-100msgs"), "--format", "json"])
    run = json.loads(result.stdout)["runs"][0]
    (session,) = run["sessions"]
    assert run["cache"]["hash_block"] == 512
    assert session["cache"]["hash_block"] == 256 and session["cache"]["label"] == session["cache_fit"]["label"]


def test_a_usage_count_with_no_reply_after_it_is_a_call_and_a_note() -> None:
    # step 2 returned (the CLI wrote its `_usage` of 11,286) but the log ends before its StatusUpdate and reply
    (session,) = bill(CLI / "legacy-protocol-1.3")
    assert per_call(session) == [(9665, 57), (11286, 0)]
    assert any(n.startswith("context line 10: a call's `_usage` (11,286 tokens in)") for n in session["notes"])


def test_an_interrupted_step_keeps_its_usage_and_every_later_call_its_own() -> None:
    # wire: step 1 logs 1,020 in / 30 out; step 2 logs 1,070 (46 + 1,024 cached) / 32 and is interrupted while
    # its tool runs, so its reply never reaches the context; the next turn's step logs 1,096 / 12. Paired by
    # position, the second reply took step 2's 1,070 / 32 and step 3 was dropped without a word.
    folder = CLI / "interrupted"
    (session,) = bill(folder)
    assert per_call(session) == [(1020, 30), (1070, 32), (1096, 12)]
    assert [t["check"]["reported_cached_tokens"] for t in session["turns"]] == [0, 1024, 1024]
    (note,) = [n for n in session["notes"] if "never reached the context" in n]
    assert note.startswith("wire.jsonl line 8: a call logged usage (1,070 in, 32 out)")
    # its prompt is the context where its `_usage` stands: the first call's prompt, reply and tool result
    (read_session,) = read(folder)
    first, interrupted, last = read_session.requests
    assert interrupted.keep == 1020 and sum(s.length for s in interrupted.append) == 1070 - 1020
    assert last.keep > 0


def test_a_clamp_that_binds_is_a_note() -> None:
    # the screenshot's tool result is logged at 3,600 tokens (6,020 - 2,400 - the reply's 20) but its text is
    # a placeholder of a few: the measured ratio is far past x8, and the call with no usage is sized at x8
    (session,) = bill(CLI / "clamp")
    assert per_call(session)[:2] == [(2400, 20), (6020, 12)]
    assert session["calls_estimated"] == 1
    (note,) = [n for n in session["notes"] if "past the bound" in n]
    assert re.search(r"the session's ratio of logged to estimated tokens is x\d+(\.\d+)?, past the bound of x8: "
                     r"the 1 call\(s\) without logged usage are sized by .* x8", note)  # fmt: skip


# ---- Kimi Code: wire protocol 1.5 ------------------------------------------------------------------------------


# ---- Kimi CLI 0.10 to 0.58: the flat layout ---------------------------------------------------------------

FLAT_ID = "5f1c2d3e-aaaa-4bbb-8ccc-123456789abc"
FLAT = FIXTURES / "kimi-cli-flat" / "sessions" / "dd0c022ef00773147dda34d1fd025338"  # md5 of its work dir


def flat_calls() -> list[tuple[int, int]]:
    """The fixture's calls from its `_usage` counts, in the order made: the main context's first call (its
    reply starts the sub-agent), the sub-agent's calls, the main context's other calls before compaction
    (`_1.jsonl`), then the call after it (the live file, whose copy of the kept reply is not a call)."""
    before, sub, after = (usage_pairs(FLAT / f"{FLAT_ID}{x}.jsonl") for x in ("_1", "_sub_1", ""))
    return [before[0], *sub, *before[1:], *after]


def test_the_flat_layout_is_one_session_of_its_main_and_sub_agent_contexts() -> None:
    result = CliRunner().invoke(cli, ["bill", str(FLAT.parent), "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    (session,) = json.loads(result.stdout)["runs"][0]["sessions"]
    assert session["name"] == FLAT_ID
    assert per_call(session) == flat_calls() == [(9120, 48), (6020, 21), (6070, 33), (9201, 14), (9240, 12),
                                                 (9131, 22)]  # fmt: skip
    assert session["calls_sized_from_usage"] == 6 and session["calls_estimated"] == 0
    assert any(n.startswith(f"{FLAT_ID}.jsonl line 2: a compaction's summary") for n in session["notes"])
    # a session the CLI created and never ran is an empty file: passed over, said
    assert "0a9b8c7d-1111-4222-8333-444455556666.jsonl: is empty" in result.stderr
    (read_back,) = [s for s in read(str(FLAT)) if s.name == FLAT_ID]
    assert read_back.project == "/home/dev/kprices"  # kimi.json names the work dir the bucket is the md5 of


@pytest.mark.parametrize("name", ["", "_1", "_sub_1"])
def test_any_file_of_a_flat_session_bills_the_whole_session(name: str) -> None:
    (session,) = bill(FLAT / f"{FLAT_ID}{name}.jsonl")
    assert session["name"] == FLAT_ID and per_call(session) == flat_calls()


def test_a_flat_sub_agent_is_its_own_conversation() -> None:
    # the sub-agent's first call starts from its own system prompt and tools: another agent's cold start, no
    # fix; the main context's next call is compared with the main context's last, not with the sub-agent's; the
    # call after the compaction follows a rewritten context, not an edited message, and keeps the cached head
    result = CliRunner().invoke(cli, ["explain", str(FLAT / f"{FLAT_ID}.jsonl"), "--detail"])
    assert result.exit_code == 0, result.output
    assert "another agent $0.0179 (1 turn)" in result.stdout and "no fix saves money here" in result.stdout
    assert "compacted since the call before" in result.stdout and "message edited" not in result.stdout


def test_a_flat_session_of_0_15_names_its_sub_agent_with_hyphens(tmp_path: Path) -> None:
    for file in FLAT.glob(f"{FLAT_ID}*.jsonl"):
        (tmp_path / file.name.replace("_sub_", "-sub-")).write_bytes(file.read_bytes())
    (session,) = bill(tmp_path)
    assert per_call(session) == flat_calls()


def test_the_flat_layout_is_found_in_the_kimi_cli_home(tmp_path: Path) -> None:
    share = tmp_path / "share"
    shutil.copytree(FIXTURES / "kimi-cli-flat", share)
    result = CliRunner().invoke(cli, ["bill", "--format", "json"],
                                env={"HOME": str(tmp_path), "KIMI_SHARE_DIR": str(share)})  # fmt: skip
    assert result.exit_code == 0, result.output + result.stderr
    (session,) = json.loads(result.stdout)["runs"][0]["sessions"]
    assert per_call(session) == flat_calls()


def test_usage_before_the_content_attaches_to_its_step() -> None:
    path = CODE / "v2-usage-first.wire.jsonl"
    first, second = calls(path)
    assert (first.reported.prompt, first.reported.output) == (1210, 24)
    assert first.output.content == "I'll count them." and first.output.tool_calls[0].id == "call_count"
    assert (second.reported.prompt, second.reported.output) == (1380, 9)
    assert second.output.content == "There are 7 Python files."
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]  # messageCount 3
    assert second.system.startswith("You are Kimi Code")  # from `profile.bind`
    (session,) = bill(path)
    assert per_call(session) == [(1210, 24), (1380, 9)]
    assert not any("skipped" in n for n in session["notes"])  # every 1.5 record type is known


def last_prompt(name: str) -> list[tuple[str, str]]:
    *_, last = calls(CODE / name)
    return [(m.role, m.content) for m in last.messages]


def test_a_legacy_compaction_keeps_the_tail_after_the_compacted_messages() -> None:
    # {summary, compactedCount: 2}: [summary, ...history[2:]] (agent-core's legacy restore)
    assert last_prompt("compaction-legacy-tail.wire.jsonl") == [
        ("user", "Summary: the user read the README (a CLI) and asked about the tests (pytest)."),
        ("user", "Now the tests?"),
        ("assistant", "They use pytest."),
        ("user", "Which test runner flags?"),
    ]


def test_a_compaction_with_kept_user_messages_keeps_them_then_the_context_summary() -> None:
    # {contextSummary, keptUserMessageCount: 2}: the user's messages, then the summary the model sees
    assert last_prompt("compaction-kept-users.wire.jsonl") == [
        ("user", "Read the README."),
        ("user", "Now the tests?"),
        ("user", "<compaction summary>\nThe user read the README (a CLI) and asked about the tests (pytest)."),
        ("user", "Which test runner flags?"),
    ]


def test_a_head_and_tail_compaction_elides_the_middle_of_an_overflowing_pool() -> None:
    # three pasted logs of about 7,500 estimated tokens each overflow the 20,000-token pool: the tail (18,000)
    # holds the third, the second and the end of the first; the head (2,000) the first 8,000 characters of it
    path = CODE / "compaction-head-tail.wire.jsonl"
    pastes = [json.loads(line)["message"]["content"][0]["text"] for line in path.read_text().splitlines()
              if '"context.append_message"' in line][:3]  # fmt: skip
    prompt = last_prompt(path.name)
    assert [role for role, _ in prompt] == ["user"] * 7  # the llm.request's messageCount
    head, elision, tail_first, second, third, summary, question = (text for _, text in prompt)
    assert head == pastes[0][:8000]
    assert pastes[0].endswith(tail_first) and len(head) + len(tail_first) < len(pastes[0])
    assert (second, third) == (pastes[1], pastes[2])
    assert elision.startswith("<system-reminder>\nSome of this conversation's user messages were omitted")
    assert summary == "<compaction summary>\nThree pasted worker logs; all requests ok." and question == "Any errors?"
    (session,) = bill(path)
    assert not any("messageCount" in n for n in session["notes"])


def test_a_summary_given_as_a_message_object_is_that_message() -> None:
    prompt = last_prompt("compaction-message-summary.wire.jsonl")
    assert prompt[0] == ("user", "Summary: the README describes a CLI; the tests use pytest.")
    assert not any("{'role'" in text or '"role"' in text for _, text in prompt)  # never a dict's text
    assert prompt[1:] == [("assistant", "They use pytest."), ("user", "Which test runner flags?")]  # count: 3


def test_swarm_mode_exit_takes_back_its_reminder() -> None:
    prompt = last_prompt("swarm-exit.wire.jsonl")
    assert prompt == [("user", "Read the README."), ("assistant", "It describes a CLI."), ("user", "Now the tests?")]


def test_swarm_mode_exit_in_agent_core_v1_leaves_a_tool_swarm_alone(tmp_path: Path) -> None:
    # agent-core's `SwarmMode.exit` pops the reminder only for a swarm not entered by the AgentSwarm tool
    text = (CODE / "swarm-exit.wire.jsonl").read_text()
    text = text.replace('"protocol_version":"1.5"', '"protocol_version":"1.4"').replace('"manual"', '"tool"')
    (tmp_path / "w.wire.jsonl").write_text(text)
    *_, last = calls(tmp_path / "w.wire.jsonl")
    assert [m.content[:17] for m in last.messages][2] == "<system-reminder>"


# ---- every shipped sample ------------------------------------------------------------------------------------

API = FIXTURES / "kimi-api"
SAMPLES = [
    pytest.param((API / "pairs.jsonl",), id="kimi-api-pairs"),
    pytest.param((API / "batch_input.jsonl", API / "batch_output.jsonl"), id="kimi-api-batch"),
    pytest.param((API / "openai_batch_request_line.jsonl", API / "openai_batch_output_line.jsonl"), id="kimi-api-line"),
    pytest.param((API / "moonshot_chat_response_nonstream.json",), id="kimi-api-nonstream"),
    pytest.param((API / "moonshot_stream_final_chunk.json",), id="kimi-api-chunk"),
    *(pytest.param((p,), id=f"kimi-cli-{p.name}") for p in sorted(CLI.glob("*/")) if p.name != "sessions"),
    pytest.param((CLI / "sessions",), id="kimi-cli-sessions"),
    *(pytest.param((p,), id=f"kimi-code-{p.name}") for p in sorted(CODE.glob("*.jsonl"))),
    *(pytest.param((p,), id=f"claude-code-{p.name}") for p in sorted((FIXTURES / "claude-code").glob("*.jsonl"))),
    *(pytest.param((p,), id=f"codex-{p.name}") for p in sorted((FIXTURES / "codex").glob("*.jsonl"))),
]


@pytest.mark.parametrize("paths", SAMPLES)
def test_the_default_bill_uses_every_logged_size(paths: tuple[Path, ...]) -> None:
    """On every shipped sample with usage, the default bill's per-call input and output equal the logged sizes
    (the `--usage reported` bill's, call by call)."""
    default = {(s["source"], s["name"]): s for s in bill(*paths)}
    for session in bill(*paths, usage="reported"):
        turns = {t["turn"]: t for t in default[(session["source"], session["name"])]["turns"]}
        assert session["turns"], session["name"]
        for logged in session["turns"]:
            billed = turns[logged["turn"]]
            assert (billed["input_tokens"], billed["output_tokens"]) == (
                logged["input_tokens"], logged["output_tokens"]), (session["name"], logged["turn"])  # fmt: skip


# ---- a log of requests read a record at a time -------------------------------------------------------------


@pytest.mark.parametrize("key", ["custom_id", "custom\\u005fid"], ids=["plain", "escaped"])
def test_batch_lines_after_a_pair_are_read_with_each_other(tmp_path: Path, key: str) -> None:
    """A JSON Lines log read a record at a time (its first line no batch line) still joins the batch input and
    output lines it holds further down on `custom_id`, a key spelled with an escape too: its calls are those of
    the same lines with a batch line first, read whole."""
    lines = [*(API / "pairs.jsonl").read_text().splitlines(),
             *(API / "batch_input.jsonl").read_text().splitlines(),
             *(API / "batch_output.jsonl").read_text().splitlines()]  # fmt: skip
    lines = [line.replace('"custom_id"', f'"{key}"') for line in lines]
    streamed, whole = tmp_path / "pairs-first.jsonl", tmp_path / "batch-first.jsonl"
    streamed.write_text("\n".join(lines) + "\n")
    whole.write_text("\n".join(lines[2:] + lines[:2]) + "\n")
    (first,) = read(str(streamed))
    (second,) = read(str(whole))
    assert len(first.records) == len(second.records) == 4  # two pairs, two batch requests (the third failed)
    assert sorted(map(repr, (r.reported for r in first.records))) == sorted(
        map(repr, (r.reported for r in second.records))
    )
    assert "1 failed request(s) left out (an error response: not billed)" in first.read_notes


def test_a_log_of_growing_requests_is_held_a_record_at_a_time(tmp_path: Path) -> None:
    """Each line of a request log repeats the conversation so far, so the log grows in the square of its turns:
    reading it holds its bytes once and what one request needs at a time, never every record parsed (which took
    2.4 times the file) nor a second copy of the file."""
    import tracemalloc

    log = tmp_path / "requests.jsonl"
    messages: list[dict[str, str]] = [{"role": "system", "content": "You are Kimi. " * 100}]
    with log.open("w") as out:
        for i in range(120):
            messages.append({"role": "user", "content": f"question {i} " + "word " * 150})
            reply = {"role": "assistant", "content": "answer " * 60}
            usage = {"prompt_tokens": 2000 + 300 * i, "completion_tokens": 80, "cached_tokens": 300 * i}
            response = {"id": f"c{i}", "object": "chat.completion", "model": "kimi-k3",
                        "choices": [{"index": 0, "message": reply}], "usage": usage}  # fmt: skip
            out.write(json.dumps({"request": {"model": "kimi-k3", "messages": messages}, "response": response}) + "\n")
            messages.append(reply)
    size = log.stat().st_size
    assert size > 8 * 2**20
    tracemalloc.start()
    try:
        (session,) = read(str(log))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(session.records) == 120
    assert peak < 2 * size, (peak, size)  # every record parsed at once peaked at 3.6 times


def test_a_message_sent_again_is_the_same_json_not_an_equal_value(tmp_path: Path) -> None:
    """A request's messages that the request before sent at the same place are not read again; "the same" is the
    same JSON, so a tool call's arguments `1`, then `true` (equal in Python), then `1.0` are three texts."""
    log = tmp_path / "requests.jsonl"
    lines = []
    for args in (1, True, 1.0, 1.0):
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}
        messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "", "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": "done"}]  # fmt: skip
        lines.append(json.dumps({"model": "kimi-k3", "messages": messages}))
    log.write_text("\n".join(lines) + "\n")
    from kcost.readers.agents.kimi_api import read_calls
    from kcost.readers.source import open_source

    src = open_source(str(log))
    calls = list(read_calls([(str(log), n, json.loads(line)) for n, line in enumerate(lines, start=1)]))
    assert [c.messages[1].tool_calls[0].arguments for c in calls] == ["1", "true", "1.0", "1.0"]
    assert calls[3].messages[1] is calls[2].messages[1]  # sent again: the message read before
    (session,) = read(str(log))
    assert len(session.records) == 4 and src.size == log.stat().st_size


def test_a_message_nested_past_what_orjson_writes_is_read_each_time(tmp_path: Path) -> None:
    """A message nested deeper than orjson writes (254 levels; kcost reads 1,024) cannot be told the same as the
    one sent before it: it is read anew each time, and the log is billed."""
    deep: Any = "x"
    for _ in range(400):
        deep = [deep]
    log = tmp_path / "deep.jsonl"
    messages = [{"role": "user", "content": "hi", "extra": deep}]
    with log.open("w") as out:
        for i in range(3):
            out.write(json.dumps({"model": "kimi-k3", "messages": messages}) + "\n")
            messages = [*messages, {"role": "assistant", "content": f"answer {i}"}]
    (session,) = read(str(log))
    assert len(session.records) == 3


@pytest.mark.parametrize("usage", [None, "reported", "simulated"])
def test_a_tools_snapshot_that_is_a_string_is_a_note_not_a_refusal(tmp_path: Path, usage: str | None) -> None:
    # a real wire's snapshot held its tools as a string: the session was refused whole, even under --usage reported
    # (which needs no tool); now the requests naming it are sized with their tools left out, and a note says so
    lines = [json.loads(x) for x in (CODE / "tool-turn.wire.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("type") == "llm.tools_snapshot":
            line["tools"] = "Bash, Read, Write"
    log = tmp_path / "wire.jsonl"
    log.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    (good,) = bill(CODE / "tool-turn.wire.jsonl", usage=usage)
    (session,) = bill(log, usage=usage)
    assert per_call(session) == per_call(good)  # the logged sizes, as before
    if usage != "reported":
        notes = [n for n in session["notes"] if "a tools snapshot whose tools are str, not a list" in n]
        assert len(notes) == 1 and not any("no tools snapshot for toolsHash" in n for n in session["notes"])


def test_a_tools_snapshot_written_as_a_json_string_is_read(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in (CODE / "tool-turn.wire.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("type") == "llm.tools_snapshot":
            line["tools"] = json.dumps(line["tools"])
    log = tmp_path / "wire.jsonl"
    log.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    (good,) = bill(CODE / "tool-turn.wire.jsonl")
    (session,) = bill(log)
    assert session["turns"] == good["turns"] and session["notes"] == good["notes"]


@pytest.mark.parametrize("name", ["compaction-legacy-tail", "compaction-message-summary"])
def test_the_request_after_a_kimi_code_compaction_follows_a_compaction_not_an_edit(name: str) -> None:
    result = CliRunner().invoke(cli, ["explain", str(CODE / f"{name}.wire.jsonl"), "--detail"])
    assert result.exit_code == 0, result.output
    assert "compacted since the call before: message 1 (user) differs" in result.stdout
    assert "message edited" not in result.stdout and "append" not in result.stdout
