"""The compiled prompt builder (`kcost/transcripts/_builder.c`) against the Python `Builder` it writes again: the
same shapes (parts kept and added, the turn, the reply sent back and what it cost, the change and its cause) and
the same parts (ids and estimates) over made calls that take every path of a build (conversations that grow, are
edited, cut short, re-sent without reasoning; heads that change: tools, effort, system prompt, the unlogged part of
another agent; tool results that name their calls; partial replies; replies logged apart), over every log of the
project, logs of the benchmark's Claude Code generator, and made Claude Code and Kimi API logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.calls import Call, Message, ToolCall, Usage
from kcost.transcripts import prompts
from kcost.transcripts.prompts import Builder, Parts, new_builder
from kcost.transcripts.tokenizer import Estimate
from tests.conftest import without
from tests.transcripts.both_ways import every_log_both_ways, made_log_both_ways
from tests.transcripts.test_calibration import api_logs, claude_logs

pytestmark = pytest.mark.skipif(prompts._builder is None, reason="the compiled prompt builder is not built")


def built(calls: list[Call], compiled: bool) -> tuple[list[Any], dict[Any, int], list[int]]:
    """The calls' shapes (a reply logged apart attached, as `to_session` attaches it), and the parts made."""
    parts = Parts(Estimate())
    builder = new_builder(parts)
    assert (type(builder) is not Builder) == compiled
    out: list[Any] = []
    for call in calls:
        if call.messages is None:
            out.append(("attached", builder.attach(call)))
        else:
            out.append(builder.add(call))
    return out, dict(parts.ids), list(parts.estimates)


def both(calls: list[Call]) -> None:
    compiled = built(calls, True)
    with without(prompts, "_builder"):
        python = built(calls, False)
    assert compiled == python


# ---- made calls ----------------------------------------------------------------------------------------------

TEXTS = ["", "hello", "fix the failing test", "done: 3 files changed", "x" * 300, "漢字とかな", "a\nb"]
REASONING = [None, "", "think first", "let me look at the file"]
TOOLS = [None, (), ({"name": "Read"},), ({"name": "Read"}, {"name": "Bash"})]
AGENTS = [None, None, "system prompt and tools", "the sub-agent's system prompt", ""]


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[ToolCall, ...]:
    ids = draw(st.lists(st.sampled_from(["t1", "t2", "t3", ""]), max_size=3))
    names, arguments = st.sampled_from(["Read", "Bash", 'Ed"it&']), st.sampled_from(["{}", '{"a":1}'])
    return tuple(ToolCall(i, draw(names), draw(arguments)) for i in ids)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "tool", "system", "assistant", "tool"]))
    if role == "assistant":
        return Message(role=role, content=draw(st.sampled_from(TEXTS)), reasoning=draw(st.sampled_from(REASONING)),
                       tool_calls=draw(tool_calls()), partial=draw(st.integers(0, 5)) == 0)  # fmt: skip
    return Message(role=role, content=draw(st.sampled_from(TEXTS)),
                   tool_call_id=draw(st.sampled_from([None, "", "t1", "t2", "t9"])) if role == "tool" else None,
                   name=draw(st.sampled_from([None, "Read"])) if role == "tool" else None)  # fmt: skip


@st.composite
def calls(draw: st.DrawFn) -> list[Call]:
    """Calls whose prompts grow by a message or two, are edited, cut, re-sent with a reply's reasoning dropped,
    or start over; heads that change now and then; replies, some logged apart."""
    pool = draw(st.lists(messages(), min_size=1, max_size=8))
    tools = draw(st.sampled_from(TOOLS))
    shared_tools = tools  # the same table object, re-sent
    out: list[Call] = []
    held: list[Message] = []
    for n in range(draw(st.integers(1, 9))):
        step = draw(st.sampled_from(["grow", "grow", "grow", "edit", "cut", "restart", "strip", "same", "apart"]))
        if step == "grow" or not held:
            held = held + draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2))
        elif step == "edit":
            at = draw(st.integers(0, len(held) - 1))
            held = [*held[:at], draw(st.sampled_from(pool)), *held[at + 1 :]]
        elif step == "cut":
            held = held[: draw(st.integers(0, len(held)))]
        elif step == "restart":
            held = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        elif step == "strip":  # a reply sent back without its reasoning
            held = [Message(role=m.role, content=m.content, tool_calls=m.tool_calls) if m.role == "assistant" else m
                    for m in held]  # fmt: skip
        if step == "apart" and out:  # a reply logged apart from the request before it
            out.append(
                Call(
                    messages=None,
                    output=draw(st.sampled_from(pool)),
                    reported=Usage(prompt=10, cached=0, output=draw(st.integers(0, 50)), reasoning=None),
                )
            )
            continue  # fmt: skip
        if draw(st.integers(0, 4)) == 0:
            tools = draw(st.sampled_from([*TOOLS, shared_tools]))
        reply = draw(st.none() | st.sampled_from(pool))
        usage = draw(st.none() | st.builds(Usage, prompt=st.integers(0, 5_000), cached=st.just(0),
                                           output=st.integers(0, 400),
                                           reasoning=st.none() | st.integers(0, 100)))  # fmt: skip
        out.append(Call(messages=tuple(held), unlogged=draw(st.sampled_from(AGENTS)),
                        system=draw(st.sampled_from([None, "", "You are Kimi.", "You are Kimi. Today is Monday."])),
                        tools=tools, effort=draw(st.sampled_from([None, None, "low", "max"])), output=reply,
                        reported=usage, time=draw(st.none() | st.just(float(n)) | st.just(0)), line=n + 1))  # fmt: skip
        if reply is not None and reply.role == "assistant" and draw(st.booleans()):
            held = [*held, reply]  # the reply sent back in the next prompt, the same object
    return out


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made=calls())
def test_made_calls_are_built_as_the_python_builder_builds_them(made: list[Call]) -> None:
    both(made)


def test_an_edited_prompt_ending_in_the_last_reply_sends_it_back() -> None:
    """An earlier reply replaced by the last call's own: the reply is found sent back though the prompt does not
    extend the one before (a case the made calls reach rarely)."""
    u1, u2 = Message(role="user", content="first"), Message(role="user", content="second")
    a0, a1 = Message(role="assistant", content="an answer"), Message(role="assistant", content="another", reasoning="r")
    usage = Usage(prompt=100, cached=0, output=40, reasoning=None)
    made = [Call(messages=(u1, a0, u2), output=a1, reported=usage), Call(messages=(u1, a1), reported=usage)]
    both(made)
    shapes, _, _ = built(made, True)
    assert shapes[1].reply is not None and shapes[1].reply == shapes[1].keep


def test_a_list_of_messages_is_built_as_a_tuple_of_them() -> None:
    """A reader that hands its messages as a list: the same shapes (the Python builder compares them alike)."""
    m = [Message(role="user", content="hi"), Message(role="assistant", content="hello")]
    both([Call(messages=tuple(m)), Call(messages=[*m, Message(role="user", content="more")])])  # type: ignore[arg-type]


# ---- logs --------------------------------------------------------------------------------------------------------


def test_every_log_of_the_project_is_built_as_the_python_builder_builds_it(tmp_path: Path) -> None:
    read = every_log_both_ways(tmp_path, 4, prompts, "_builder")
    rebuilt = sum(any(r.request is not None for r in records) for found in read for _, records, *_ in found)
    assert rebuilt > 40  # 45 of the project's own, more with the shared samples beside it


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(claude_logs().map(lambda lines: ("log.jsonl", lines)),
                 api_logs().map(lambda lines: ("api.jsonl", lines))))  # fmt: skip
def test_made_logs_are_built_as_the_python_builder_builds_them(log: tuple[str, list[dict[str, Any]]]) -> None:
    made_log_both_ways(log, prompts, "_builder")
