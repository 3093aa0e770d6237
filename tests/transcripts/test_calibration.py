"""Logged usage sizes every rebuilt prompt: on the shipped samples, on a Kimi CLI session whose tool results the
estimate gets badly wrong, through an unlogged system prompt that changes, and as hypothesis properties over
random Kimi API logs (sizes are whole, non-negative, sum to the logged totals, keep the order of the parts)."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.billing.bills import bill
from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.model.session import Session
from kcost.pricing.prices import load_prices
from kcost.readers import read
from tests.conftest import SHARED, project_logs

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["bill", *args, "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


# ---- the shipped samples: the default bill carries exactly the logged sizes ------------------------------------

# the samples that log usage; the first four hold no prompts, so their default bill is the reported one
WITH_USAGE = [
    "api/moonshot_chat_response_nonstream.json",
    "api/moonshot_stream_final_chunk.json",
    "claude-code/ccusage-chat-alpha.jsonl",
    "codex/ccusage-session-alpha.jsonl",
    "kimi-cli/with-thinking",
    "kimi-cli/with-tool-calls",
    "kimi-code/sample-main.wire.jsonl",
    "kimi-code/tool-turn.wire.jsonl",
    "claude-code/spotter-short.jsonl",
]
NO_PROMPTS = set(WITH_USAGE[:4])


def _roots() -> list[Path]:
    """The team's shared samples where they are beside the repo; the fixtures' copies always."""
    shared = SHARED / "samples"
    return [shared, FIXTURES] if shared.is_dir() else [FIXTURES]


def _sample(root: Path, rel: str) -> Path | None:
    if root == FIXTURES:  # the fixtures keep the Kimi CLI samples in a sessions tree, the API files apart
        rel = rel.replace("kimi-cli/", "kimi-cli/sessions/0b7c55b8e1d46a1f3c2e9d8a7b6c5d4e/").replace(
            "api/", "kimi-api/"
        )
    path = root / rel
    return path if path.exists() else None


@pytest.mark.parametrize("rel", WITH_USAGE)
@pytest.mark.parametrize("root", _roots(), ids=lambda p: p.name)
def test_default_bill_has_the_logged_prompt_sizes(root: Path, rel: str) -> None:
    path = _sample(root, rel)
    if path is None:
        pytest.skip(f"{rel} is not under {root.name}")
    default = run(str(path))["runs"][0]["sessions"]
    reported = run(str(path), "--usage", "reported")["runs"][0]["sessions"]
    assert len(default) == len(reported) == 1
    (d,), (r,) = default, reported
    assert d["usage"] == ("reported" if rel in NO_PROMPTS else "simulated")  # simulated wherever there are prompts
    logged = {t["turn"]: t for t in r["turns"]}
    assert logged, "the sample logs usage"
    for turn in d["turns"]:
        if turn["turn"] in logged:
            assert turn["input_tokens"] == logged[turn["turn"]]["input_tokens"]
            assert turn["output_tokens"] == logged[turn["turn"]]["output_tokens"]
    assert d["calls_sized_from_usage"] == len(logged)
    if d["calls_estimated"] == 0:
        for key in ("turns", "input_tokens", "output_tokens"):
            assert d["summary"][key] == r["summary"][key]
    assert d["logged_models"] == r["logged_models"]
    assert d["started"] == r["started"] and d["ended"] == r["ended"]


def test_claude_code_bill_holds_the_unlogged_system_prompt() -> None:
    (s,) = run(str(FIXTURES / "claude-code/spotter-short.jsonl"))["runs"][0]["sessions"]
    assert s["usage"] == "simulated"
    assert s["turns"][0]["input_tokens"] == 3 + 13_835 + 11_515  # the log's own usage, not the 81 rebuilt
    assert any("system prompt and tools not in the log: sized from the logged usage" in n for n in s["notes"])
    assert s["logged_models"] == ["claude-opus-4-6"] and s["started"] == "2026-02-10T21:11:59.186Z"


# ---- a Kimi CLI session the estimate gets wrong --------------------------------------------------------------

CODE = """def parse(path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, line in enumerate(open(path)):
        k, _, v = line.partition("=")
        out[k.strip()] = int(v or 0) + i
    return out
"""
CHINESE = "缓存命中时输入价格为每百万词元零点三美元，未命中时为三美元。长上下文中缓存决定了全部成本。"


def true_tokens(text: str) -> int:
    """What the API counted: code at about 2 characters a token, Chinese about 1 (the estimate says 4 and 1.5)."""
    cjk = sum(1 for ch in text if ord(ch) > 0x2E80)
    return (len(text) - cjk) // 2 + cjk


def kimi_cli_session(folder: Path, steps: int) -> list[int]:
    """A session whose usage follows the API's observed rule (formats.md section 8): each step reads
    256 x floor(previous prompt / 256) tokens from the cache. Tool results are source code and Chinese text.
    Prompt sizes are kept off exact multiples of 256, where K3 recomputes a last block (the simulator's
    one-token rule) and the public API was not measured. Returns the logged cached tokens."""
    folder.mkdir()
    system = "You are Kimi CLI. " + "Follow the rules. " * 60
    context: list[dict[str, Any]] = [
        {"role": "_system_prompt", "content": system},
        {"role": "user", "content": "Fix the parser, then summarise the notes."},
    ]
    wire: list[dict[str, Any]] = [{"type": "metadata", "protocol_version": "1.10"}]
    prompt, previous, t, cached_log = 4_100 + true_tokens(system), 0, 1_776_000_000.0, []
    for step in range(steps):
        cached = 0 if step == 0 else previous // 256 * 256
        output = 90 + 13 * (step % 7)
        usage = {
            "input_other": prompt - cached,
            "output": output,
            "input_cache_read": cached,
            "input_cache_creation": 0,
        }
        wire.append({"timestamp": t, "message": {"type": "StepBegin", "payload": {"n": step + 1}}})
        wire.append({"timestamp": t + 2, "message": {"type": "StatusUpdate", "payload": {"token_usage": usage}}})
        cached_log.append(cached)
        call = {"type": "function", "id": f"Shell:{step}", "function": {"name": "Shell", "arguments": '{"c": "cat"}'}}
        context.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "think", "think": "Read the file first. " * 3},
                    {"type": "text", "text": f"Step {step}."},
                ],
                "tool_calls": [call],
            }
        )
        result = (CODE if step % 2 == 0 else CHINESE) * (1 + step % 4)
        context.append({"role": "tool", "content": result, "tool_call_id": f"Shell:{step}"})
        previous = prompt
        prompt += output + true_tokens(result) + 25
        if prompt % 256 == 0:
            prompt += 1
        t += 40
    (folder / "context.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in context))
    (folder / "wire.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wire))
    return cached_log


def test_calibrated_kimi_cli_session_agrees_with_the_logged_cache_hits(tmp_path: Path) -> None:
    logged = kimi_cli_session(tmp_path / "session", steps=30)
    (session,) = read(str(tmp_path / "session"))
    assert session.sized == (30, 0)
    result = bill(session, cache=parse_cache_model("k3:hash=256"), prices=load_prices())
    assert [t.hit_tokens for t in result.turns] == logged
    assert result.agreement is not None and (result.agreement.agree, result.agreement.turns) == (30, 30)
    # the estimate alone is far off on these tool results: the calibration is what makes them agree
    estimated = bill(
        read_without_usage(tmp_path / "session", tmp_path / "bare"),
        cache=parse_cache_model("k3:hash=256"),
        prices=load_prices(),
    )
    assert [t.input_tokens for t in estimated.turns] != [t.input_tokens for t in result.turns]


def read_without_usage(folder: Path, to: Path) -> Session:
    to.mkdir()
    (to / "context.jsonl").write_text((folder / "context.jsonl").read_text())
    lines = [json.loads(x) for x in (folder / "wire.jsonl").read_text().splitlines()]
    for record in lines:
        if record.get("message", {}).get("type") == "StatusUpdate":
            record["message"]["payload"]["token_usage"] = None
    (to / "wire.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (session,) = read(str(to))
    assert session.sized == (0, 30)
    return session


# ---- what the log leaves out: sized once, changed only when a logged size proves it ---------------------------


def claude_line(i: int, parent: str | None, usage: dict[str, int] | None, content: Any, role: str) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": role,
        "uuid": f"u{i}",
        "parentUuid": parent,
        "sessionId": "s",
        "isSidechain": False,
        "timestamp": f"2026-03-01T10:{i:02d}:00Z",
        "message": {"role": role, "content": content},
    }
    if role == "assistant":
        line["requestId"] = f"req{i}"
        line["message"].update(id=f"msg{i}", model="claude-sonnet-4-5", usage=usage)
    return line


def claude_log(path: Path, prompts: list[int], *, repeat_last: int | None = None) -> None:
    """A tool loop: each response calls a tool, each result comes back; prompt sizes as given. With
    `repeat_last`, the last request is sent again unchanged but logs that prompt size (its system prompt grew)."""
    lines, parent, i = [], None, 0
    lines.append(claude_line(i, parent, None, "Please look at the parser.", "user"))
    parent = "u0"
    sizes = [*prompts, repeat_last] if repeat_last else prompts
    for n, size in enumerate(sizes):
        i += 1
        usage = {
            "input_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": size - 5,
            "output_tokens": 40,
        }
        if repeat_last and n == len(sizes) - 1:  # the same request again: the same parent
            parent = lines[-2]["uuid"]
        tool = [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file": f"f{i}.py"}}]
        lines.append(claude_line(i, parent, usage, tool, "assistant"))
        parent = f"u{i}"
        if n < len(prompts) - 1:
            i += 1
            result = [{"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "x = 1\n" * 40}]
            lines.append(claude_line(i, parent, None, result, "user"))
            parent = f"u{i}"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_unlogged_prefix_is_sized_from_the_first_call_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    claude_log(path, [20_000, 20_600, 21_350, 22_000])
    (s,) = run(str(path), "--cache", "ideal")["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [20_000, 20_600, 21_350, 22_000]
    # every follow-up hits the whole previous prompt: the prefix kept its identity and size
    assert [t["hit_tokens"] for t in s["turns"]] == [0, 20_000, 20_600, 21_350]


def test_a_logged_size_that_proves_the_prefix_changed_is_a_prefix_change(tmp_path: Path) -> None:
    path = tmp_path / "retry.jsonl"
    claude_log(path, [20_000, 20_600, 21_350], repeat_last=21_900)
    (s,) = run(str(path), "--cache", "ideal")["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [20_000, 20_600, 21_350, 21_900]
    last = s["turns"][-1]
    assert last["hit_tokens"] == 0 and last["reason"] == "prefix-changed"
    result = CliRunner().invoke(cli, ["explain", str(path), "--format", "json", "--cache", "ideal"])
    assert result.exit_code == 0, result.output
    assert "changed (+550 tokens)" in result.stdout


def test_without_logged_usage_the_unlogged_prefix_is_not_counted_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "bare.jsonl"
    claude_log(path, [20_000, 20_600])
    path.write_text(path.read_text().replace('"usage": {', '"usage": null, "u": {'))
    (s,) = run(str(path))["runs"][0]["sessions"]
    assert s["calls_estimated"] == 2 and s["calls_sized_from_usage"] == 0
    assert s["turns"][0]["input_tokens"] < 200  # the messages only, as estimated
    assert "system prompt and tools not in the log, and no call logged usage to size them by: not counted" in s["notes"]


def test_a_logged_size_smaller_than_the_sized_parts_is_named_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "shrunk.jsonl"
    claude_log(path, [20_000, 20_600, 19_000, 21_000])
    (s,) = run(str(path))["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [20_000, 20_600, 19_000, 21_000]
    assert any(n.startswith("call 3 (line ") and "smaller than" in n for n in s["notes"]), s["notes"]


# ---- properties over random Kimi API logs ---------------------------------------------------------------------


@st.composite
def api_logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Request/response pairs of one conversation that grows, is edited, cut short or re-sent, with usage on most
    responses (sizes anywhere from far below to far above what the messages hold)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are Kimi. " * draw(st.integers(1, 30))}]
    lines: list[dict[str, Any]] = []
    prompt = draw(st.integers(1, 3_000))
    for i in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(["append", "append", "append", "edit", "cut", "resend"]))
        if op == "append" or len(messages) < 3:
            messages.append(
                {
                    "role": "user",
                    "content": draw(st.sampled_from(["hi", "explain ", "代码 "])) * draw(st.integers(1, 200)),
                }
            )
        elif op == "edit":
            k = draw(st.integers(1, len(messages) - 1))
            messages[k] = {**messages[k], "content": messages[k]["content"] + " (edited)"}
        elif op == "cut":
            del messages[draw(st.integers(2, len(messages) - 1)) :]
        reply = {
            "role": "assistant",
            "content": "ok " * draw(st.integers(0, 50)),
            "reasoning_content": "thinking " * draw(st.integers(0, 30)) or None,
        }
        request = {"model": "kimi-k3", "messages": [dict(m) for m in messages]}
        if draw(st.integers(0, 5)) == 0:
            lines.append(request)  # a request logged without its response
        else:
            prompt = max(1, prompt + draw(st.integers(-400, 2_500)))
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": draw(st.integers(0, 600)),
                "cached_tokens": draw(st.integers(0, prompt)),
            }
            response = {
                "id": f"r{i}",
                "created": 1_776_000_000 + 60 * i,
                "usage": usage,
                "choices": [{"message": reply}],
            }
            lines.append({"request": request, "response": response})
        messages.append({k: v for k, v in reply.items() if v is not None})
    return lines


def prompts_of(session: Session) -> list[list[tuple[int, int]]]:
    """Each request's whole prompt as (part, tokens), rebuilt from what it keeps and what it appends."""
    out, spans = [], []
    for request in session.requests:
        kept, n = [], 0
        for seg, length in spans:
            if n >= request.keep:
                break
            kept.append((seg, min(length, request.keep - n)))
            n += kept[-1][1]
        spans = kept + [(s.seg, s.length) for s in request.append]
        out.append(spans)
    return out


def order(spans: list[tuple[int, int]]) -> list[int]:
    segs: list[int] = []
    for seg, _ in spans:
        if not segs or segs[-1] != seg:
            segs.append(seg)
    return segs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(api_logs())
def test_calibrated_sizes_are_whole_sum_to_the_logged_totals_and_keep_order(lines: list[dict[str, Any]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        logged_path, bare_path = Path(tmp, "log.jsonl"), Path(tmp, "bare.jsonl")
        logged_path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        bare = [
            {**x, "response": {k: v for k, v in x["response"].items() if k != "usage"}} if "request" in x else x
            for x in lines
        ]  # the same log with its usage left out
        bare_path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in bare))
        (session,) = read(str(logged_path))
        (plain,) = read(str(bare_path))
    usage = [x["response"]["usage"]["prompt_tokens"] if "response" in x else None for x in lines]
    calibrated, estimated = prompts_of(session), prompts_of(plain)
    sized = {seg for spans in calibrated for seg, _ in spans}  # the parts calibration gave tokens
    for spans, plain_spans, logged in zip(calibrated, estimated, usage, strict=True):
        assert all(isinstance(n, int) and n > 0 for _, n in spans)
        if logged is not None:
            assert sum(n for _, n in spans) == logged
        # calibration changes sizes, never the order of the parts: its prompt is the estimated prompt's parts in
        # order (less those it sized at zero), cut where a logged size is smaller, plus any tokens the log
        # counts that the rebuilt prompt does not hold (parts of its own, at the end)
        known = {seg for seg, _ in plain_spans}
        mine = order([(seg, n) for seg, n in spans if seg in known])
        theirs = order([(seg, n) for seg, n in plain_spans if seg in sized])
        assert mine == theirs[: len(mine)]
    outcome = bill(session, cache=parse_cache_model("k3"), prices=load_prices())
    for turn, logged in zip(outcome.turns, usage, strict=True):
        if logged is not None:
            assert turn.input_tokens == logged
    assert session.sized == (sum(u is not None for u in usage), sum(u is None for u in usage))


# ---- what review found: each once a wrong bill or a traceback ---------------------------------------------------


def claude_lines(path: Path, rounds: list[tuple[str, str, int | None]], *, first_untimed: bool = False) -> None:
    """A plain chat: each round a user message, then a reply whose usage logs the given prompt size (None: no
    usage logged)."""
    lines, parent = [], None
    for i, (user, reply, size) in enumerate(rounds):
        u = claude_line(2 * i, parent, None, user, "user")
        usage = None if size is None else {"input_tokens": 3, "cache_creation_input_tokens": 0,
                                           "cache_read_input_tokens": size - 3, "output_tokens": 12}  # fmt: skip
        a = claude_line(2 * i + 1, u["uuid"], usage, [{"type": "text", "text": reply}], "assistant")
        if first_untimed and i == 0:
            del u["timestamp"], a["timestamp"]
        lines += [u, a]
        parent = a["uuid"]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_repeated_identical_messages_are_no_prefix_change(tmp_path: Path) -> None:
    path = tmp_path / "repeat.jsonl"
    claude_lines(path, [("continue", "Done.", 20_000 + 40 * i) for i in range(4)])
    (s,) = run(str(path), "--cache", "ideal")["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [20_000, 20_040, 20_080, 20_120]
    # each follow-up hits the previous prompt (less the few tokens the log counts and the K3 rendering of these
    # short messages does not hold, which are billed where they fall, at the end)
    hits = [t["hit_tokens"] for t in s["turns"]]
    assert all(
        previous - 8 <= hit <= previous for hit, previous in zip(hits[1:], [20_000, 20_040, 20_080], strict=True)
    )
    assert all(t["reason"] != "prefix-changed" for t in s["turns"])


def test_a_call_without_usage_before_the_first_logged_one_stays_positive(tmp_path: Path) -> None:
    path = tmp_path / "early.jsonl"
    claude_lines(path, [("x" * 20_000, "ok", None), ("more", "ok", 50), ("again " * 800, "ok", None)])
    (s,) = run(str(path))["runs"][0]["sessions"]
    assert s["turns"][1]["input_tokens"] == 50
    assert all(t["input_tokens"] > 0 and t["output_tokens"] >= 0 for t in s["turns"])
    assert all(not t["total"].startswith("-") for t in s["turns"])


def test_a_first_call_without_a_time_makes_no_gap(tmp_path: Path) -> None:
    path = tmp_path / "untimed.jsonl"
    claude_lines(path, [("hi", "ok", 20_000), ("more", "ok", 20_100)], first_untimed=True)
    (s,) = run(str(path), "--cache", "ideal")["runs"][0]["sessions"]
    assert s["turns"][1]["hit_tokens"] == 20_000 and s["turns"][1]["reason"] != "expired"


def test_each_sub_agent_has_its_own_unlogged_prefix(tmp_path: Path) -> None:
    lines = [claude_line(0, None, None, "main task", "user")]
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 0, "output_tokens": 30}
    lines.append(claude_line(1, "u0", {**usage, "cache_read_input_tokens": 19_995}, [{"type": "text", "text": "a"}],
                             "assistant"))  # fmt: skip
    for agent, (at, size) in enumerate(((2, 5_000), (4, 12_000)), start=1):
        side_user = claude_line(at, None, None, f"sub task {agent}", "user")
        side_reply = claude_line(at + 1, f"u{at}", {**usage, "cache_read_input_tokens": size - 5},
                                 [{"type": "text", "text": "b"}], "assistant")  # fmt: skip
        for line in (side_user, side_reply):
            line["isSidechain"] = True
        lines += [side_user, side_reply]
    path = tmp_path / "agents.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (s,) = run(str(path))["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [20_000, 5_000, 12_000]
    sized = [n for n in s["notes"] if "not in the log: sized" in n]
    assert len(sized) == 3 and any("sub-agent 1" in n for n in sized) and any("sub-agent 2" in n for n in sized)
    result = CliRunner().invoke(cli, ["explain", str(path), "--format", "json"])
    assert '"another agent"' in result.stdout and "unlogged prefix changed" not in result.stdout


def test_a_response_logged_apart_from_its_request_sizes_the_reply(tmp_path: Path) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "question " * 50}]
    lines = []
    for i in range(3):
        reply = {"role": "assistant", "content": f"answer {i} " * 60}
        lines.append({"model": "kimi-k3", "messages": list(messages)})
        lines.append({"id": f"r{i}", "object": "chat.completion", "created": 1_776_000_000 + 10 * i,
                      "choices": [{"message": reply}],
                      "usage": {"prompt_tokens": 1_000 + 400 * i, "completion_tokens": 77}})  # fmt: skip
        messages += [reply, {"role": "user", "content": "next " * 40}]
    path = tmp_path / "apart.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (s,) = run(str(path))["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [1_000, 1_400, 1_800]
    assert [t["output_tokens"] for t in s["turns"]] == [77, 77, 77]
    assert not any("no replies" in n for n in s["notes"])
    (session,) = read(str(path))
    # the reply sent back takes its logged 77 output tokens (as the part of the next prompt it is)
    assert session.requests[1].resent_output is not None
    lo, hi = session.requests[1].resent_output
    assert hi - lo == 77


def test_a_logged_prompt_of_zero_is_simulated_as_one_token_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "zero.jsonl"
    claude_lines(path, [("hi", "ok", 3)])
    path.write_text(path.read_text().replace('"input_tokens": 3', '"input_tokens": 0'))
    (s,) = run(str(path))["runs"][0]["sessions"]
    assert s["turns"][0]["input_tokens"] == 1
    assert any("logged a prompt of 0 tokens" in n for n in s["notes"])


@pytest.mark.parametrize(
    "lines",
    [
        ['{"type":{},"payload":{}}'],  # a type that is an object
        ['{"type":["user"],"uuid":"u","message":{"role":"user","content":"x"}}'],
    ],
)
def test_odd_types_in_detection_are_one_error(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli, ["bill", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.startswith(f"kcost: error: {path}: ")


def test_a_kimi_code_clear_while_a_step_is_open_is_replayed(tmp_path: Path) -> None:
    records = [
        {"type": "metadata", "protocol_version": "1.4", "created_at": 1779256791000},
        {"type": "context.append_message", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}},
        {"type": "context.append_loop_event", "event": {"type": "step.begin", "uuid": "s1"}},
        {"type": "context.clear"},
        {"type": "context.append_loop_event", "event": {"type": "content.part", "part": {"type": "text", "text": "x"}}},
        {"type": "usage.record", "usage": {"inputOther": 5, "output": 1, "inputCacheRead": 0, "inputCacheCreation": 0}},
    ]
    path = tmp_path / "clear.wire.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    for mode in ("auto", "reported"):
        result = CliRunner().invoke(cli, ["bill", str(path), "--usage", mode, "--format", "json"])
        assert result.exit_code == 0, result.output


def test_a_claude_code_line_logged_twice_on_its_chain(tmp_path: Path) -> None:
    path = tmp_path / "twice.jsonl"
    claude_lines(path, [("hi", "ok", 20_000), ("more", "ok", 20_100)])
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:2], lines[0].replace('"parentUuid": null', '"parentUuid": "u1"'), *lines[2:]]))
    (s,) = run(str(path))["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [20_000, 20_100]


@st.composite
def claude_logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Claude Code logs (an unlogged system prompt and tools; sub-agents on sidechains) whose logged sizes grow,
    shrink, or are missing."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    size = draw(st.integers(1, 30_000))
    n = 0
    for _ in range(draw(st.integers(1, 10))):
        side = draw(st.integers(0, 5)) == 0
        text = draw(st.sampled_from(["ok", "look at the parser ", "def f(x): return x\n", "代码 "]))
        user = claude_line(n, None if side else parent, None, text * draw(st.integers(1, 300)), "user")
        size = max(0, size + draw(st.integers(-2_000, 6_000)))
        usage = None
        if draw(st.integers(0, 4)):
            fresh = min(size, 7)
            usage = {"input_tokens": fresh, "cache_creation_input_tokens": 0, "cache_read_input_tokens": size - fresh,
                     "output_tokens": draw(st.integers(0, 900))}  # fmt: skip
        blocks = [{"type": "thinking", "thinking": "hmm " * draw(st.integers(0, 50))},
                  {"type": "text", "text": "done " * draw(st.integers(0, 80))}]  # fmt: skip
        reply = claude_line(n + 1, user["uuid"], usage, blocks, "assistant")
        for line in (user, reply):
            line["isSidechain"] = side
        lines += [user, reply]
        if not side:
            parent = reply["uuid"]
        n += 2
    return lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claude_logs())
def test_logs_with_an_unlogged_prefix_bill_whole_non_negative_logged_sizes(lines: list[dict[str, Any]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "log.jsonl")
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        (session,) = read(str(path))
        outcome = bill(session, cache=parse_cache_model("k3"), prices=load_prices())
    logged = [x["message"]["usage"] for x in lines if x["type"] == "assistant"]
    for spans in prompts_of(session):
        assert all(isinstance(n, int) and n > 0 for _, n in spans)
    for turn, usage in zip(outcome.turns, logged, strict=True):
        if usage is not None:
            prompt = usage["input_tokens"] + usage["cache_read_input_tokens"]
            assert turn.input_tokens == max(prompt, 1)
            assert turn.output_tokens == usage["output_tokens"]
        assert turn.input_tokens > 0 and turn.output_tokens >= 0
        assert turn.total >= 0 and turn.hit_tokens <= turn.input_tokens


# ---- one pass where the last would size every part as the first did ---------------------------------------------


def _read_both_ways(path: Path, taken: Counter[bool]) -> tuple[list[Session], list[Session]]:
    """The sessions of `path` as read (calibrated in one pass where `Pass.as_last` says the first is the last),
    and as read with both passes always walked; `taken` counts each first pass's answer."""
    from unittest import mock

    from kcost.prompts.calibrate import Pass
    from kcost.readers import read_all

    asked = Pass.as_last

    def spied(self: Pass, ratio: Fraction) -> bool:
        answer = asked(self, ratio)
        taken[answer] += 1
        return answer

    with mock.patch.object(Pass, "as_last", spied):
        once = read_all([str(path)], workers=1).sessions
    with mock.patch.object(Pass, "as_last", lambda self, ratio: False):
        twice = read_all([str(path)], workers=1).sessions
    return once, twice


def test_one_calibration_pass_sizes_every_log_of_the_project_as_two_do() -> None:
    """Where the first pass sized every part as the last would (`Pass.as_last`), its sizes are the session's:
    every log of the project read so is the session both passes make, to the last request and note; and the
    logs hold sessions of both kinds."""
    from kcost.errors import InputError

    taken: Counter[bool] = Counter()
    read = 0
    for path in project_logs():
        try:
            once, twice = _read_both_ways(path, taken)
        except InputError:
            continue  # not a log (a trace, a price file) or a bad one, as its own tests say
        logs = [(a, b) for a, b in zip(once, twice, strict=True) if type(a) is Session]  # a turn spec: none
        assert [a for a, _ in logs] == [b for _, b in logs], path
        read += len(logs)
    assert read > 30 and taken[True] > 10 and taken[False] > 3, (read, taken)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(claude_logs().map(lambda lines: ("log.jsonl", lines)),
                 api_logs().map(lambda lines: ("api.jsonl", lines))))  # fmt: skip
def test_one_calibration_pass_sizes_made_logs_as_two_do(log: tuple[str, list[dict[str, Any]]]) -> None:
    """The same over made Claude Code logs (an unlogged prefix, sub-agents, calls with no usage) and Kimi API
    logs (edits, cuts, requests with no response): one pass or two, the same session."""
    import tempfile

    name, lines = log
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, name)
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        once, twice = _read_both_ways(path, Counter())
    assert once == twice


@pytest.mark.parametrize(
    ("estimates", "reply_tokens"),
    [([0, 10, 10], 5), ([0, 0, 10], None)],
    ids=["the-reply-among-the-new-parts", "a-part-estimated-at-0"],
)
def test_a_prefix_the_last_pass_would_share_otherwise_is_sized_by_both_passes(
    estimates: list[int], reply_tokens: int | None
) -> None:
    """The first logged call of a prefix: the first pass gives its new parts their estimates and the prefix the
    rest; the last, knowing the prefix, shares what the call adds, giving the previous reply its logged size and
    each part at least a token. Where those differ, both passes are walked: one gives what two give."""
    from unittest import mock

    from kcost.model.calls import Usage
    from kcost.prompts.calibrate import Pass, Shape, calibrate

    first = Shape(keep=0, new=(0, 1, 2), turn=1, reply=2, reply_tokens=reply_tokens, output=None,
                  usage=Usage(prompt=100, cached=0, output=1), time=0.0, prefix="tools", change=None,
                  line=1)  # fmt: skip
    shapes = [first, Shape(keep=3, new=(), turn=3, reply=None, reply_tokens=None, output=None,
                           usage=Usage(prompt=100, cached=90, output=1), time=1.0, prefix="tools", change=None,
                           line=2)]  # fmt: skip
    once = calibrate(shapes, estimates, "the estimate")
    with mock.patch.object(Pass, "as_last", lambda self, ratio: False):
        twice = calibrate(shapes, estimates, "the estimate")
    assert once == twice
    as_first = [100 - sum(estimates), *estimates[1:]]  # what the first pass gave the prefix and the new parts
    assert [span.length for span in twice.requests[0].append if span.length] != [n for n in as_first if n]
