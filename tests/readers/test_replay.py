"""How readers replay what tools do to a conversation: streams, retries, undo, rotations, branches, compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kcost.readers import read
from kcost.readers.agents import claude_code
from kcost.readers.source import open_source


def jsonl(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def calls(path: str, **kw: Any) -> Any:
    (session,) = read(path, **kw)
    return session


# ---- Kimi API --------------------------------------------------------------------------------------------


def test_a_streamed_reply_is_billed_once_from_its_final_chunk(tmp_path: Path) -> None:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    final = {**chunk, "choices": [{"index": 0, "delta": {}, "usage": {"prompt_tokens": 8, "completion_tokens": 11,
                                                                      "cached_tokens": 8}}]}  # fmt: skip
    session = calls(jsonl(tmp_path / "stream.jsonl", [chunk, chunk, final, final]))
    assert [(u.prompt, u.cached, u.output) for u in session.reported] == [(8, 8, 11)]


def test_a_response_logged_after_its_request_is_its_usage(tmp_path: Path) -> None:
    request = {"model": "kimi-k3", "messages": [{"role": "user", "content": "hello " * 50}]}
    reply = {"index": 0, "message": {"role": "assistant", "content": "hi"}}
    usage = {"prompt_tokens": 70, "completion_tokens": 3, "cached_tokens": 0}
    response = {"id": "r1", "object": "chat.completion", "choices": [reply], "usage": usage}
    session = calls(jsonl(tmp_path / "mixed.jsonl", [request, response]))
    assert len(session.requests) == 1 and session.reported[0].prompt == 70
    assert session.requests[0].output_tokens == 3


def test_mid_conversation_tools_stay_where_they_were_declared(tmp_path: Path) -> None:
    base = [{"role": "system", "content": "You are Kimi."}, {"role": "user", "content": "list files " * 40}]
    more = {"role": "system", "content": "", "tools": [{"type": "function", "function": {"name": "grep"}}]}
    requests = [{"messages": base}, {"messages": [*base, {"role": "assistant", "content": "ok"}, more,
                                                  {"role": "user", "content": "now grep"}]}]  # fmt: skip
    session = calls(jsonl(tmp_path / "tools.jsonl", requests))
    # the second request keeps all of the first prompt: the new tools come after it, not before it
    assert session.requests[1].keep == sum(s.length for s in session.requests[0].append)


def test_inline_images_count_as_a_placeholder_not_as_base64_text(tmp_path: Path) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 200_000}}
    session = calls(jsonl(tmp_path / "img.jsonl", [{"messages": [{"role": "user", "content": [image]}]}]))
    assert sum(s.length for s in session.requests[0].append) < 200


# ---- legacy Kimi CLI -------------------------------------------------------------------------------------


def kimi_cli(folder: Path, contexts: list[list[dict[str, Any]]], wire: list[dict[str, Any]]) -> str:
    folder.mkdir()
    names = [f"context_{i}.jsonl" for i in range(1, len(contexts))] + ["context.jsonl"]
    for name, records in zip(names, contexts, strict=True):
        jsonl(folder / name, records)
    jsonl(folder / "wire.jsonl", [{"type": "metadata", "protocol_version": "1.10"}, *wire])
    return str(folder)


def step(n: int, usage: int | None, interrupted: bool = False) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"timestamp": float(n), "message": {"type": "StepBegin", "payload": {"n": 1}}}]
    if interrupted:
        events.append({"timestamp": n + 0.5, "message": {"type": "StepInterrupted", "payload": {}}})
    if usage is not None:
        token_usage = {"input_other": usage, "output": 5, "input_cache_read": 0, "input_cache_creation": 0}
        events.append(
            {"timestamp": n + 0.9, "message": {"type": "StatusUpdate", "payload": {"token_usage": token_usage}}}
        )
    return events


SYSTEM = {"role": "_system_prompt", "content": "You are Kimi CLI."}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def test_a_rotated_context_does_not_bill_the_replies_it_copies(tmp_path: Path) -> None:
    old = [SYSTEM, {"role": "user", "content": "a"}, reply("A1"), {"role": "user", "content": "b"}, reply("A2")]
    new = [SYSTEM, {"role": "user", "content": "a"}, reply("A1"), {"role": "user", "content": "c"}, reply("A3")]
    session = calls(kimi_cli(tmp_path / "s", [old, new], [*step(1, 100), *step(2, 200), *step(3, 300)]))
    assert [u.prompt for u in session.reported] == [100, 200, 300]  # A1, A2, A3: A1's copy is no call


def test_an_interrupted_step_does_not_shift_the_usage_of_later_ones(tmp_path: Path) -> None:
    context = [SYSTEM, {"role": "user", "content": "a"}, reply("A1"), {"role": "user", "content": "b"}, reply("A2")]
    wire = [*step(1, 100), *step(2, None, interrupted=True), *step(3, 700)]
    session = calls(kimi_cli(tmp_path / "s", [context], wire))
    assert [u.prompt for u in session.reported] == [100, 700]


# ---- Kimi Code -------------------------------------------------------------------------------------------


def kimi_code(path: Path, records: list[dict[str, Any]]) -> str:
    meta = {"type": "metadata", "protocol_version": "1.4", "created_at": 1}
    return jsonl(path, [meta, {"type": "config.update", "systemPrompt": "You are Kimi.", "time": 1}, *records])


def user(text: str) -> dict[str, Any]:
    return {"type": "context.append_message", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def request(step: str, count: int) -> dict[str, Any]:
    return {"type": "llm.request", "kind": "loop", "model": "kimi-k3", "turnStep": step, "messageCount": count}


def answer(step: int, text: str, prompt: int) -> list[dict[str, Any]]:
    usage = {"inputOther": prompt, "output": 4, "inputCacheRead": 0, "inputCacheCreation": 0}
    return [
        {
            "type": "context.append_loop_event",
            "event": {"type": "content.part", "step": step, "part": {"type": "text", "text": text}},
        },  # fmt: skip
        {"type": "context.append_loop_event", "event": {"type": "step.end", "step": step, "usage": usage}},
        {"type": "usage.record", "model": "kimi-k3", "usage": usage, "usageScope": "turn"},
    ]


def begin(step: int) -> dict[str, Any]:
    return {"type": "context.append_loop_event", "event": {"type": "step.begin", "step": step}}


def test_a_retried_request_is_billed_once(tmp_path: Path) -> None:
    path = kimi_code(tmp_path / "w.jsonl", [user("hi"), begin(1), request("0.1", 1), request("0.1", 1),
                                            *answer(1, "hello", 40)])  # fmt: skip
    session = calls(path)
    assert len(session.requests) == 1 and session.reported[0].prompt == 40


def test_undo_takes_back_user_prompts(tmp_path: Path) -> None:
    path = kimi_code(tmp_path / "w.jsonl", [
        user("one"), begin(1), request("0.1", 1), *answer(1, "first", 30),
        user("two"), begin(2), request("1.1", 3), *answer(2, "second", 50),
        {"type": "context.undo", "count": 1},
        user("three"), begin(3), request("2.1", 3), *answer(3, "third", 52),
    ])  # fmt: skip
    session = calls(path)
    assert not any("messageCount" in note for note in session.notes), session.notes
    assert session.changes[2] == ("message edited", "message 3 (user) differs")


# ---- Claude Code -----------------------------------------------------------------------------------------


def claude(uuid: str, parent: str | None, role: str, content: Any, mid: str | None = None, **extra: Any) -> dict:  # type: ignore[type-arg]
    message: dict[str, Any] = {"role": role, "content": content}
    if mid:
        message |= {"id": mid, "model": extra.pop("model", "claude-x"),
                    "usage": {"input_tokens": 3, "output_tokens": 2}}  # fmt: skip
    return {"type": role, "uuid": uuid, "parentUuid": parent, "message": message, "requestId": f"r-{mid}", **extra}


def test_claude_prompts_follow_the_parent_chain_past_a_side_question(tmp_path: Path) -> None:
    lines = [
        claude("u1", None, "user", "fix the bug"),
        claude("a1", "u1", "assistant", [{"type": "text", "text": "looking"}], "m1"),
        claude("b1", "a1", "user", "btw, what time is it?", isSidechain=True),
        claude("b2", "b1", "assistant", [{"type": "text", "text": "noon"}], "m2", isSidechain=True),
        claude("u2", "a1", "user", "and the tests?"),
        claude("a2", "u2", "assistant", [{"type": "text", "text": "passing"}], "m3"),
    ]
    path = jsonl(tmp_path / "c.jsonl", lines)
    prompts = [[m.content for m in c.messages] for c in claude_code.read_calls(open_source(path), [])]
    assert prompts == [["fix the bug"], ["fix the bug", "looking", "btw, what time is it?"],
                       ["fix the bug", "looking", "and the tests?"]]  # fmt: skip


def test_claude_synthetic_messages_are_no_requests(tmp_path: Path) -> None:
    lines = [
        claude("u1", None, "user", "hi"),
        claude("a1", "u1", "assistant", [{"type": "text", "text": "API error"}], "m1", model="<synthetic>"),
        claude("u2", "a1", "user", "again"),
        claude("a2", "u2", "assistant", [{"type": "text", "text": "hello"}], "m2"),
    ]
    session = calls(jsonl(tmp_path / "c.jsonl", lines))
    assert len(session.requests) == 1
    assert any("<synthetic>" in note for note in session.notes)


# ---- Codex -----------------------------------------------------------------------------------------------


def codex(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2026-05-13T09:00:{second:02d}.000Z", "type": kind, "payload": payload}


def count(prompt: int, total: int, second: int) -> dict[str, Any]:
    last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 10}
    cumulative = {"input_tokens": total, "cached_input_tokens": 0, "output_tokens": 10}
    return codex("event_msg", {"type": "token_count", "info": {"last_token_usage": last,
                                                               "total_token_usage": cumulative}}, second)  # fmt: skip


def test_codex_items_of_one_response_are_one_reply(tmp_path: Path) -> None:
    message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do it " * 30}]}
    think = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]}
    say = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    more = {**message, "content": [{"type": "input_text", "text": "more"}]}
    lines = [codex("response_item", message), codex("response_item", think), codex("response_item", say),
             count(100, 100, 1), codex("response_item", more), count(130, 230, 2)]  # fmt: skip
    session = calls(jsonl(tmp_path / "r.jsonl", lines))
    assert len(session.requests) == 2
    assert session.changes[1] is None  # the reply came back as it went out: nothing changed


def test_codex_sub_agent_replays_are_skipped(tmp_path: Path) -> None:
    meta = codex("session_meta", {"id": "x", "source": {"subagent": {"thread_spawn": {"parent": "p"}}}})
    lines = [meta, count(900, 900, 0), count(950, 1850, 0), count(40, 1890, 7)]
    session = calls(jsonl(tmp_path / "sub.jsonl", lines))
    assert [u.prompt for u in session.reported] == [40]
