"""Real prompts through the simulator: an edit, dropped reasoning and a re-send each miss where they should."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kcost.cli import cli

SYSTEM = {"role": "system", "content": "You are Kimi, a coding agent. " * 40}
TOOLS = [{"type": "function", "function": {"name": "shell", "description": "Run a command. " * 20,
                                           "parameters": {"type": "object", "properties": {}}}}]  # fmt: skip


def user(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"Step {i}: please look at module_{i}.py and explain it. " * 30}


def assistant(i: int, reasoning: bool = True) -> dict[str, Any]:
    m: dict[str, Any] = {"role": "assistant", "content": f"Module {i} parses the config and calls run(). " * 25}
    if reasoning:
        m["reasoning_content"] = f"The user asks about module {i}; I should read it first. " * 20
    return m


def conversation(turns: int, *, edit_turn: int | None = None, strip_from: int | None = None) -> list[list[Any]]:
    """The `messages` of each request of an append-only chat; optionally message 3 (counting from 1, the system
    message first: the first reply) is edited from `edit_turn` on, or reasoning is dropped from earlier replies
    from `strip_from` on."""
    requests = []
    for t in range(1, turns + 1):
        messages: list[Any] = [SYSTEM]
        for i in range(1, t + 1):
            messages.append(user(i))
            if i < t:
                messages.append(assistant(i, reasoning=not (strip_from and t >= strip_from)))
        if edit_turn and t >= edit_turn:
            messages[2] = {**messages[2], "content": "Module 1 is a test helper, nothing more. " * 30}
        requests.append(messages)
    return requests


def log(tmp_path: Path, requests: list[list[Any]], name: str = "log.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"model": "kimi-k3", "messages": m, "tools": TOOLS}) + "\n" for m in requests))
    return str(path)


def bill(path: str, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["bill", path, "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"][0]["sessions"][0]


def explain(path: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["explain", path, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


def changed(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in turn["misses"] if m["reason"] == "prefix-changed"]


def test_append_only_conversation_never_changes_its_prefix(tmp_path: Path) -> None:
    session = bill(log(tmp_path, conversation(6)), "--cache", "ideal")
    assert not any(changed(t) for t in session["turns"])
    for before, turn in zip(session["turns"], session["turns"][1:], strict=False):
        assert turn["hit_tokens"] == before["input_tokens"]  # the whole previous prompt, to the token


def test_an_edit_at_message_3_misses_from_its_first_token(tmp_path: Path) -> None:
    plain = bill(log(tmp_path, conversation(6), "plain.jsonl"), "--cache", "ideal")
    edited = bill(log(tmp_path, conversation(6, edit_turn=5), "edited.jsonl"), "--cache", "ideal")
    # message 3, the first reply, starts where request 1's prompt ended (its opening tokens are the generation
    # prompt, the same in both): the miss begins there, and the ideal cache hits exactly what request 2 hit
    turn = edited["turns"][4]
    miss = changed(turn)
    assert miss and miss[0]["at"] == turn["hit_tokens"] == plain["turns"][1]["hit_tokens"]
    assert plain["turns"][4]["hit_tokens"] > turn["hit_tokens"]
    assert not changed(edited["turns"][5])  # request 6 carries the edit forward: it hits again
    why = explain(str(tmp_path / "edited.jsonl"))
    causes = [c for t in why["turns"] for c in t["causes"] if c["cause"] == "message edited"]
    assert len(causes) == 1 and causes[0]["detail"].startswith("message 3 (assistant) differs")


def test_dropping_reasoning_misses_from_the_first_reply_that_lost_it(tmp_path: Path) -> None:
    path = log(tmp_path, conversation(6, strip_from=4), "stripped.jsonl")
    session = bill(path, "--cache", "ideal")
    turn = session["turns"][3]
    assert changed(turn) and changed(turn)[0]["at"] == turn["hit_tokens"]
    why = explain(path)
    ranked = {r["cause"]: r for r in why["ranked"]}
    assert "reasoning not passed back" in ranked
    assert ranked["reasoning not passed back"]["fix"].startswith("pass reasoning_content back")


def test_an_identical_resend_hits_all_it_can(tmp_path: Path) -> None:
    messages = conversation(3)[-1]
    path = log(tmp_path, [messages, messages])
    ideal = bill(path, "--cache", "ideal")["turns"][1]
    assert ideal["hit_tokens"] == ideal["input_tokens"] - 1  # one token is always computed
    assert [m["reason"] for m in ideal["misses"]] == ["last-token"]
    k3 = bill(path)["turns"][1]
    assert k3["hit_tokens"] == (k3["input_tokens"] - 1) // 512 * 512
    assert {m["reason"] for m in k3["misses"]} <= {"block-granularity", "last-token"}


def test_a_changed_system_prompt_or_tool_list_misses_everything_after_it(tmp_path: Path) -> None:
    first, second = conversation(2)
    second = [{**SYSTEM, "content": "You are Kimi. Today is Monday. " + SYSTEM["content"]}, *second[1:]]
    why = explain(log(tmp_path, [first, second]))
    assert [c["cause"] for t in why["turns"] for c in t["causes"]][-1] == "system prompt changed"
