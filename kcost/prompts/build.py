"""Calls -> a session of simulator requests: each prompt rendered in the K3 chat format, cut into parts.

Every rendered part of a prompt (the part the log leaves out, the tool declaration, the thinking-effort
message, the system prompt, each message) is a span whose identity is its content, so a request shares with
the one before exactly the parts that are the same, in the same order. Prompts are built incrementally: a
request that re-sends the previous conversation plus new messages costs what its new messages cost, and each
distinct part is rendered and estimated once, however many requests re-send it.

This module finds the structure (`Shape`: which parts each prompt keeps and adds); `calibrate` then sizes the
parts from the logged usage, which wins over any estimate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from operator import attrgetter
from typing import NamedTuple

from kcost.model.calls import Call, Message, ToolCall, Usage
from kcost.model.causes import Cause, Change
from kcost.model.session import CallRecord, Session
from kcost.prompts import chat_format
from kcost.prompts.calibrate import Shape, calibrate
from kcost.prompts.tokenizer import TokenCounter, pieces_count

Key = tuple[object, ...]
_MESSAGE_FIELDS = tuple(f.name for f in fields(Message))  # a message's content, in order
_CALL_FIELDS = tuple(f.name for f in fields(ToolCall))
_TOOL_CALLS = _MESSAGE_FIELDS.index("tool_calls")
_message_fields, _call_fields = attrgetter(*_MESSAGE_FIELDS), attrgetter(*_CALL_FIELDS)
_LOOKAHEAD = 3  # parts past the kept messages that can still match (an assistant header before a changed body)


def identity(m: Message) -> Key:
    """A message's content as a part's key holds it: its fields' values in order, each tool call's as a tuple of
    its own. Equal exactly where the messages are equal, and hashed and compared as a tuple is (a message's own
    hash and equality are Python calls, its tool calls' too)."""
    values = list(_message_fields(m))
    values[_TOOL_CALLS] = tuple(map(_call_fields, values[_TOOL_CALLS]))
    return tuple(values)


class Parts:
    """Rendered parts by content: an id each (0, 1, 2, ...) and its estimate, counted once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._whole: Callable[[chat_format.Pieces], int] | None = getattr(counter, "pieces", None)
        self.ids: dict[Hashable, int] = {}
        self.estimates: list[int] = []
        self._tools: dict[int, tuple[tuple[object, ...], str]] = {}

    def tools_key(self, tools: tuple[object, ...]) -> str:
        """Tool tables by content; a table re-sent as the same object is serialised once."""
        held = self._tools.get(id(tools))
        if held is None or held[0] is not tools:
            held = self._tools[id(tools)] = (tools, json.dumps(tools, sort_keys=True, ensure_ascii=False))
        return held[1]

    def seg(self, key: Hashable, render: Callable[[], chat_format.Pieces] | chat_format.Pieces) -> int:
        """The part's id; rendered and counted the first time its content is seen (`key`: its content, or what
        stands for it)."""
        seg = self.ids.get(key)
        if seg is None:
            seg = self.ids[key] = len(self.ids)
            pieces = render() if callable(render) else render
            self.estimates.append(self._count(pieces))
        return seg

    def _count(self, pieces: chat_format.Pieces) -> int:
        """A rendered part's tokens: each text piece counted, each control token one (by the counter's own count
        of a whole part, where it has one)."""
        return self._whole(pieces) if self._whole is not None else pieces_count(self.counter.count, pieces)


class _Where(NamedTuple):
    """What a part of a prompt is, to say what changed: `tools`, `effort`, `system`, `generation`, or a message
    (a tuple: a prompt's every part has one, made as fast as a tuple is)."""

    kind: str
    number: int = -1  # a message's, from 1
    message: Message | None = None


_GENERATION = _Where("generation")  # the header that opens the reply, at the end of a closed prompt


_Head = tuple[Key, list[tuple[Key, Callable[[], chat_format.Pieces], _Where]]]  # a prompt's leading parts


@dataclass
class _Prompt:
    """The latest prompt, part by part (the closing generation prompt apart), with what each message left."""

    head: Key = ()  # the identity of the leading parts: tools, effort, system prompt
    head_parts: int = 0
    messages: tuple[Message, ...] = ()
    segs: list[int] = field(default_factory=list)
    where: list[_Where] = field(default_factory=list)
    after: list[int] = field(default_factory=list)  # parts after message i
    turn: list[int] = field(default_factory=list)  # the part where the newest turn starts, after message i
    names: list[dict[str, tuple[str, int]]] = field(default_factory=list)  # tool call id -> (name, index)
    closed: bool = True  # ends with the generation prompt (not a partial assistant message)

    def parts_after(self, k: int) -> int:
        return self.after[k - 1] if k else self.head_parts

    def tail(self, start: int, header: int) -> list[tuple[int, _Where]]:
        """The parts from `start` on (a few), generation prompt included."""
        out = list(zip(self.segs[start : start + _LOOKAHEAD], self.where[start : start + _LOOKAHEAD], strict=True))
        if self.closed and len(out) < _LOOKAHEAD and start + len(out) == len(self.segs):
            out.append((header, _GENERATION))
        return out


def to_session(
    calls: Iterable[Call],
    *,
    counter: TokenCounter,
    source: str,
    name: str,
    notes: Sequence[str] = (),
    prompts: bool = True,
    comparable: bool = True,
    agent: str = "",
    project: str | None = None,
) -> Session:
    """The session the calls make: one request per call, in order, each sized from its logged usage.

    Calls are taken one at a time (a reader may stream them). A record with usage but no prompt (a response
    logged apart from its request) is the usage of the request before it; a log of such records only is billed
    as reported, and so is every log when `prompts` is False (`--usage reported`: no prompt is rebuilt).
    `comparable`: the logged cache hits come from a Kimi cache. `notes` (the reader's) is read once the calls
    are consumed (a reader may add to it meanwhile). `agent` and `project`: whose log it is (its reader's name)
    and the project it records. What the calls are priced at is billing's to say.
    """
    builder = Builder(Parts(counter))
    shapes: list[Shape] = []
    alone: list[Call] = []  # usage with no request to attach it to
    times: list[float | None] = []  # of each shape's call
    models: list[str | None] = []
    lines: list[int | None] = []
    replies = 0
    for call in calls:
        if call.messages is None or not prompts:
            if prompts and shapes and shapes[-1].usage is None and call.reported is not None:
                # a response logged apart from its request: its usage, and its reply, are that request's
                output = shapes[-1].output if shapes[-1].output is not None else builder.attach(call)
                shapes[-1] = replace(shapes[-1], usage=call.reported, output=output)
                models[-1] = models[-1] or call.model
                times[-1] = times[-1] if times[-1] is not None else call.time
                replies += call.output is not None
            else:
                alone.append(call)
            continue
        shapes.append(builder.add(call))
        times.append(call.time)
        models.append(call.model)
        lines.append(call.line)
        replies += call.output is not None or call.reported is not None
    read_notes = tuple(notes)
    built: list[str] = []  # what building the session guessed or left out
    unbilled = tuple(dict.fromkeys(c.model for c in alone if c.model))
    if not shapes:
        if prompts:
            built.append("the log holds no prompts: billed as reported")
        return _reported_only(alone, source=source, name=name, notes=(read_notes, built), comparable=comparable,
                              whose=(agent, project))  # fmt: skip
    if alone:
        built.append(f"{len(alone)} usage record(s) with no request before them not billed")
    if not replies:
        built.append("the log holds no replies: output tokens are not billed")
    shapes = _timed(shapes, times, built)
    sized = calibrate(shapes, builder.parts.estimates, counter.source)
    main = shapes[0].prefix  # the main conversation's: the first call's
    records = tuple(
        CallRecord(request=request, reported=shape.usage, change=change, time=time, model=model,
                   conversation=None if shape.prefix == main else shape.prefix, line=line)
        for request, shape, change, time, model, line in zip(sized.requests, shapes, sized.changes, times, models,
                                                             lines, strict=True)
    )  # fmt: skip
    return Session(
        source=source,
        name=name,
        model=None,
        records=records,
        token_counts=sized.token_counts,
        read_notes=read_notes,
        build_notes=(*built, *sized.notes),
        comparable=comparable,
        sized=(sized.logged, sized.estimated),
        unbilled_models=unbilled,
        agent=agent,
        project=project,
    )


def _timed(shapes: list[Shape], times: list[float | None], notes: list[str]) -> list[Shape]:
    """Every call at a time: a call the log gives none is taken to come with the one before it (or, at the
    start, with the first that has one), so an unlogged time never makes a gap of its own; a call logged earlier
    than the one before it (merged logs have them) comes with that one too, and is counted in the notes."""
    known = [t for t in times if t is not None]
    last = known[0] if known else 0.0
    out, backwards = [], 0
    for shape, time in zip(shapes, times, strict=True):
        if time is not None and time < last:
            backwards += 1
        last = max(time, last) if time is not None else last
        out.append(shape if shape.time == last else replace(shape, time=last))
    if backwards:
        notes.append(f"{backwards} call(s) logged earlier than the call before them: no idle time counted for them")
    return out


def _reported_only(
    calls: list[Call],
    *,
    source: str,
    name: str,
    notes: tuple[tuple[str, ...], list[str]],
    comparable: bool,
    whose: tuple[str, str | None],
) -> Session:
    """A log with no prompts to rebuild (or none wanted): what it says each call cost, as it says it. `notes`:
    the reader's, and the building's; `whose`: its agent and project."""
    records = tuple(CallRecord(reported=c.reported, time=c.time, model=c.model, line=c.line) for c in calls)
    return Session(
        source=source,
        name=name,
        model=None,
        records=records,
        token_counts="reported",
        read_notes=notes[0],
        build_notes=tuple(notes[1]),
        comparable=comparable,
        sized=(sum(r.reported is not None for r in records), 0),
        agent=whose[0],
        project=whose[1],
    )


class Builder:
    """Calls -> shapes: which parts each prompt keeps of the previous one, and which it adds."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.header = parts.seg(("assistant-header",), chat_format.ASSISTANT_HEADER)
        # each conversation's latest prompt (by the prefix its calls carry: the main one, each sub-agent's), which
        # its next call is compared with; and the parts of the prompt sent last, whichever conversation sent it,
        # which the simulator's request is made relative to
        self.prompts: dict[str | None, _Prompt] = {}
        self.prompt = _Prompt()
        self.sent: list[int] = []
        self.conversation: str | None = None
        self.first = True
        self.last_output: Message | None = None
        self.last_output_seg: int | None = None
        self.last_usage: Usage | None = None
        # the last reply of each agent (by the prefix its calls carry): a sub-agent's calls between two of the
        # main agent's do not hide the main agent's reply from its next prompt
        self.replies: dict[str | None, tuple[Message | None, int | None, Usage | None]] = {}
        self.agent: str | None = None
        self._heads: dict[tuple[object, ...], tuple[tuple[object, ...] | None, _Head]] = {}

    def add(self, call: Call) -> Shape:
        """The shape of one call's prompt: the parts it keeps of the previous prompt, those it adds and why it
        differs. The prompt is then this call's, for the next call to be compared with."""
        conversation = call.unlogged
        p = self.prompts.get(conversation)
        first = p is None  # the first call of its conversation
        if p is None:
            p = self.prompts[conversation] = _Prompt()
        self.prompt = p
        self.agent = conversation
        self.last_output, self.last_output_seg, self.last_usage = self.replies.get(conversation, (None, None, None))
        messages, previous_messages = call.messages or (), len(p.messages)
        head, head_render = self._head(call)
        same_head = head == p.head
        k = self._same_messages(messages) if same_head else 0
        kept = p.parts_after(k) if same_head else 0
        before = p.tail(kept, self.header) if not first else []
        self._rebuild(messages, k, kept, None if same_head else (head, head_render))
        segs, where = self._sent()
        keep_parts = kept + _same_parts(before, segs, kept)
        # a conversation's first call follows no prompt of its own: what it carries before its newest turn is
        # its conversation's start (another agent's, where it is not the session's first)
        change = _change(before, where, keep_parts - kept, keep_parts) if not first else _opened(self.first, call)
        if call.compacted and change is not None and change.cause is Cause.MESSAGE_EDITED:
            change = Change(Cause.CUT_SHORT, f"compacted since the call before: {change.detail}")
        turn_part = p.turn[-1] if p.turn else p.head_parts
        extends = not first and same_head and k == previous_messages and keep_parts - kept == len(before)
        reply = self._previous_output(where, keep_parts, extends, turn_part)
        output = self._output(call)
        if conversation != self.conversation or first:  # relative to another conversation's prompt, sent last
            keep_parts = _common(self.sent, segs)
        shape = Shape(
            keep=keep_parts,
            new=tuple(segs[keep_parts:]),
            turn=turn_part,
            reply=reply,
            reply_tokens=self._reply_tokens(where, reply),
            output=output,
            usage=call.reported,
            time=call.time or 0.0,  # filled in once every call is read
            prefix=call.unlogged,
            change=change,
            line=call.line,
        )
        self.first, self.sent, self.conversation = False, segs, conversation
        self.replies[conversation] = (call.output, output, call.reported)
        return shape

    def attach(self, call: Call) -> int | None:
        """A reply logged apart from its request (the request just added): its part, and the agent's last reply."""
        output = self._output(call)
        self.replies[self.agent] = (call.output, output, call.reported)
        return output

    def _same_messages(self, messages: tuple[Message, ...]) -> int:
        """How many of `messages`, from the first, the previous prompt holds the same."""
        held = self.prompt.messages
        n = len(held)
        if messages[:n] == held:  # the common case, compared at C speed
            return n
        k = 0
        while k < min(n, len(messages)) and messages[k] == held[k]:
            k += 1
        return k

    def _rebuild(self, messages: tuple[Message, ...], k: int, kept: int, head: _Head | None) -> None:
        """The prompt rebuilt from part `kept` (message `k`) on: its new head, if it has one, then every message
        past the `k` kept."""
        p = self.prompt
        del p.segs[kept:], p.where[kept:], p.after[k:], p.turn[k:], p.names[k:]
        if head is not None:
            p.head = head[0]
            for key, render, what in head[1]:
                p.segs.append(self.parts.seg(key, render))
                p.where.append(what)
            p.head_parts = len(p.segs)
        for i in range(k, len(messages)):
            self._message(i, messages[i])
        p.messages = messages
        p.closed = not (messages and messages[-1].role == "assistant" and messages[-1].partial)

    def _sent(self) -> tuple[list[int], list[_Where]]:
        """The prompt's parts as sent: closed by the header that opens the reply, unless it ends in a partial
        reply to go on with."""
        p = self.prompt
        if not p.closed:
            return list(p.segs), list(p.where)
        return [*p.segs, self.header], [*p.where, _GENERATION]

    def _output(self, call: Call) -> int | None:
        """The part of the call's reply, where it logs one."""
        if call.output is None or call.output.role != "assistant":
            return None
        output = call.output
        return self.parts.seg(("assistant", identity(output)), partial(chat_format.assistant_body, output))

    def _reply_tokens(self, where: list[_Where], reply: int | None) -> int | None:
        """What the log says the previous reply cost, as sent back: its output tokens, less its reasoning where
        the prompt does not carry it (the logged reasoning count, else the reasoning's share of the estimate)."""
        usage, last = self.last_usage, self.last_output
        if reply is None or usage is None or last is None:
            return None
        sent = where[reply].message
        tokens = usage.output
        if last.reasoning and sent is not None and not sent.reasoning:
            if usage.reasoning is not None:
                tokens -= usage.reasoning
            elif self.last_output_seg is not None:
                whole = max(self.parts.estimates[self.last_output_seg], 1)
                thought = self.parts.counter.count(last.reasoning)
                tokens -= min(tokens, tokens * thought // whole)
        return max(tokens, 0)

    def _head(self, call: Call) -> _Head:
        """The call's leading parts (the part the log leaves out, tools, effort, system prompt): their identity,
        and each part's key, rendering and what it is; made once for each head the calls carry (their tools by
        the table sent: a table re-sent as the same object is the same)."""
        tools = call.tools
        key = (call.unlogged, id(tools), call.effort, call.system)
        held = self._heads.get(key)
        if held is not None and held[0] is tools:
            return held[1]
        made = _made_head(self.parts, call)
        self._heads[key] = (tools, made)
        return made

    def _message(self, i: int, m: Message) -> None:
        p, parts = self.prompt, self.parts
        names = p.names[-1] if p.names else {}
        turn = p.turn[-1] if p.turn else p.head_parts
        if m.role == "assistant":
            p.segs += [self.header, parts.seg(("assistant", identity(m)), partial(chat_format.assistant_body, m))]
            p.where += [_Where("message", i + 1, m)] * 2
            names = {c.id: (c.name, n) for n, c in enumerate(m.tool_calls, start=1)}
            turn = len(p.segs)
        else:
            tool = names.get(m.tool_call_id or "") if m.role == "tool" else None
            p.segs.append(parts.seg(("message", identity(m), tool), partial(chat_format.message, m, tool)))
            p.where.append(_Where("system" if m.role == "system" else "message", i + 1, m))
        p.after.append(len(p.segs))
        p.turn.append(turn)
        p.names.append(names)

    def _previous_output(self, where: list[_Where], keep_parts: int, extends: bool, turn_part: int) -> int | None:
        """The part holding the previous reply, sent back, if this prompt carries it."""
        last = self.last_output
        if turn_part >= 2 and where[turn_part - 1].message is not None:
            m = where[turn_part - 1].message
            if last is not None and m == last and turn_part - 1 >= keep_parts:
                return turn_part - 1
            if extends and turn_part - 1 == keep_parts and m is not None and m.role == "assistant":
                # the reply, right where the last prompt ended: as logged (a log without replies), or sent back
                # altered (its reasoning dropped, say), which costs nothing while outputs are not cached
                return keep_parts
        return None


def _made_head(parts: Parts, call: Call) -> _Head:
    """A call's leading parts (`Builder._head`'s, made)."""
    out: list[tuple[Key, Callable[[], chat_format.Pieces], _Where]] = []
    if call.unlogged:  # sized by calibration, from the logged usage
        out.append((("unlogged", call.unlogged), _nothing, _Where("unlogged")))
    if call.tools:
        tools = call.tools
        out.append((("tools", parts.tools_key(tools)), partial(chat_format.tool_declaration, tools),
                    _Where("tools")))  # fmt: skip
    out.append((("effort", call.effort), partial(chat_format.thinking_effort, call.effort), _Where("effort")))
    if call.system:
        out.append((("system", call.system), partial(chat_format.system, call.system), _Where("system")))
    return tuple(key for key, _, _ in out), out


def _common(a: list[int], b: list[int]) -> int:
    """How many parts `a` and `b` share from the first."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _opened(first: bool, call: Call) -> Change | None:
    """The change of a conversation's first call: none for the session's first, else another agent's start."""
    if first:
        return None
    return Change(Cause.ANOTHER_AGENT, f"a call of another agent, with its own {call.unlogged or 'prompt'}")


def _same_parts(before: list[tuple[int, _Where]], segs: list[int], at: int) -> int:
    """How many of the new prompt's parts from `at` on equal the previous prompt's there (`before`), in a row."""
    n = 0
    for seg, _ in before:
        if at + n < len(segs) and segs[at + n] == seg:
            n += 1
        else:
            break
    return n


def _nothing() -> chat_format.Pieces:
    return ()


_CHANGED = {"tools": Cause.TOOL_LIST_CHANGED, "effort": Cause.EFFORT_CHANGED, "system": Cause.SYSTEM_PROMPT_CHANGED,
            "unlogged": Cause.UNLOGGED_PREFIX_CHANGED}  # fmt: skip


_NAMES = {"tools": "tool list", "unlogged": "part the log leaves out (system prompt, tools)"}


def _change(before: list[tuple[int, _Where]], after: list[_Where], offset: int, at: int) -> Change | None:
    """How a prompt differs from the previous one at part `at`; None if it extends it. `before` holds the
    previous prompt's parts from `at - offset` on."""
    old = before[offset][1] if offset < len(before) else None
    if old is None or old.kind == "generation":
        return None
    return _changed(old, after[at] if at < len(after) else None)


def _changed(old: _Where, new: _Where | None) -> Change:
    """How a prompt differs from the previous one where the previous held `old` (no generation prompt) and this
    one holds `new` (None: nothing)."""
    if new is None or new.kind == "generation":
        return Change(Cause.CUT_SHORT, f"the prompt ends before message {old.number}")
    for kind in (old.kind, new.kind):
        if kind in _CHANGED:
            return Change(_CHANGED[kind], f"the {_NAMES.get(kind, kind)} differs")
    a, b = old.message, new.message
    same_reply = a is not None and b is not None and a.role == b.role == "assistant" and a.content == b.content
    if same_reply and a is not None and b is not None and a.reasoning and not b.reasoning:
        return Change(Cause.REASONING_DROPPED, f"message {new.number} (assistant) lost its reasoning")
    return Change(Cause.MESSAGE_EDITED, f"message {new.number} ({b.role if b else '?'}) differs")

