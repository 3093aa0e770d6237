"""Calls -> a session of simulator requests: each prompt rendered in the K3 chat format, cut into parts.

Every rendered part of a prompt (the tool declaration, the thinking-effort message, the system prompt, each
message) is a span whose identity is its content, so a request shares with the one before exactly the parts
that are the same, in the same order. Prompts are built incrementally: a request that re-sends the previous
conversation plus new messages costs what its new messages cost, and each distinct part is rendered and
counted once, however many requests re-send it.

Token counts, best source first: the provider's reported prompt totals (a request's new parts share out what
its reported total adds to the parts already counted, in proportion to their estimates), the Kimi tokenizer,
or an estimate.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from kcost import chat_format
from kcost.cache.simulator import Request, Span
from kcost.calls import Call, Message, Usage
from kcost.models import Session
from kcost.tokenizer import TokenCounter

Key = tuple[object, ...]
_LOOKAHEAD = 3  # parts past the kept messages that can still match (an assistant header before a changed body)


class _Parts:
    """Rendered parts by content: an id each, its estimate, and the token count it was first given."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.ids: dict[Key, int] = {}
        self.estimates: dict[int, int] = {}
        self.tokens: dict[int, int] = {}
        self._tools: dict[int, tuple[tuple[object, ...], str]] = {}

    def tools_key(self, tools: tuple[object, ...]) -> str:
        """Tool tables by content; a table re-sent as the same object is serialised once."""
        held = self._tools.get(id(tools))
        if held is None or held[0] is not tools:
            held = self._tools[id(tools)] = (tools, json.dumps(tools, sort_keys=True, ensure_ascii=False))
        return held[1]

    def seg(self, key: Key, render: Callable[[], chat_format.Pieces] | chat_format.Pieces) -> int:
        """The part's id; rendered and counted the first time its content is seen."""
        seg = self.ids.get(key)
        if seg is None:
            seg = self.ids[key] = len(self.ids)
            pieces = render() if callable(render) else render
            self.estimates[seg] = sum(1 if isinstance(p, int) else self.counter.count(p) for p in pieces)
        return seg


@dataclass(frozen=True)
class _Where:
    """What a part of a prompt is, to say what changed: `tools`, `effort`, `system`, `generation`, or a message."""

    kind: str
    index: int = -1
    message: Message | None = None


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
            out.append((header, _Where("generation")))
        return out


def to_session(
    calls: Iterable[Call],
    *,
    counter: TokenCounter,
    source: str,
    name: str,
    calibrate: bool = True,
    notes: Sequence[str] = (),
) -> Session:
    """The session the calls make: one request per call, in order, with its reported usage.

    Calls are taken one at a time (a reader may stream them). `calibrate`: fit token counts to the reported
    prompt totals (False when another vendor's tokenizer counted them). A record with usage but no prompt (a
    response logged apart from its request) is the usage of the request before it; a log of such records only
    is billed as reported. `notes` is read once the calls are consumed (a reader may add to it meanwhile).
    """
    builder = _Builder(_Parts(counter), calibrate)
    reported: list[Usage | None] = []
    usage_only: list[Usage | None] = []
    models: set[str] = set()
    replies = 0
    for call in calls:
        if call.model:
            models.add(call.model)
        if call.messages is None:
            if builder.requests and reported[-1] is None and call.reported is not None:
                reported[-1] = call.reported
                builder.requests[-1] = replace(builder.requests[-1], output_tokens=call.reported.output)
            else:
                usage_only.append(call.reported)
            continue
        builder.add(call)
        reported.append(call.reported)
        replies += call.output is not None or call.reported is not None
    notes = list(notes)
    if models:
        notes.append(f"logged model {', '.join(sorted(models))}: priced at K3 rates")
    if not builder.requests:
        return Session(
            source=source,
            name=name,
            model=None,
            requests=(),
            labels=tuple(None for _ in usage_only),
            reported=tuple(usage_only),
            token_counts="reported",
            notes=(*notes, "the log holds no prompts: billed as reported"),
        )
    if usage_only:
        notes.append(f"{len(usage_only)} usage record(s) with no request before them not billed")
    if not replies:
        notes.append("the log holds no replies: output tokens are not billed")
    if builder.calibrated and not builder.estimated:
        counts = "reported"
    elif builder.calibrated:
        counts = f"reported where logged ({builder.calibrated} requests), else {counter.source}"
    else:
        counts = counter.source
    return Session(
        source=source,
        name=name,
        model=None,
        requests=tuple(builder.requests),
        labels=tuple(None for _ in builder.requests),
        reported=tuple(reported),
        token_counts=counts,
        notes=tuple(notes),
        changes=tuple(builder.changes),
        comparable=calibrate,
    )


class _Builder:
    def __init__(self, parts: _Parts, calibrate: bool) -> None:
        self.parts = parts
        self.calibrate = calibrate
        self.header = parts.seg(("assistant-header",), chat_format.ASSISTANT_HEADER)
        self.prompt = _Prompt()
        self.ends: list[int] = []  # token position after each part of the latest prompt
        self.requests: list[Request] = []
        self.changes: list[tuple[str, str] | None] = []
        self.last_output: Message | None = None
        self.last_time = 0.0
        self.calibrated = self.estimated = 0

    def add(self, call: Call) -> None:
        p, parts, first = self.prompt, self.parts, not self.requests
        messages, previous_messages = call.messages or (), len(self.prompt.messages)
        head, head_render = self._head(call)
        same_head = head == p.head
        k = 0
        if same_head:
            n = len(p.messages)
            if messages[:n] == p.messages:  # the common case, compared at C speed
                k = n
            else:
                while k < min(n, len(messages)) and messages[k] == p.messages[k]:
                    k += 1
        kept = p.parts_after(k) if same_head else 0
        before = p.tail(kept, self.header) if not first else []
        # rebuild from part `kept` on
        del p.segs[kept:], p.where[kept:], p.after[k:], p.turn[k:], p.names[k:]
        if not same_head:
            p.head = head
            for key, render, what in head_render:
                p.segs.append(parts.seg(key, render))
                p.where.append(what)
            p.head_parts = len(p.segs)
        for i in range(k, len(messages)):
            self._message(i, messages[i])
        p.messages = messages
        p.closed = not (messages and messages[-1].role == "assistant" and messages[-1].partial)
        segs = p.segs + ([self.header] if p.closed else [])
        where = p.where + ([_Where("generation")] if p.closed else [])

        # how many of the new prompt's parts equal the previous prompt's, past the kept messages
        keep_parts = kept
        for seg, _ in before:
            if keep_parts < len(segs) and segs[keep_parts] == seg:
                keep_parts += 1
            else:
                break
        self.changes.append(None if first else _change(before, where, keep_parts - kept, keep_parts))

        self._count(segs, keep_parts, call.reported)
        del self.ends[keep_parts:]
        for s in segs[len(self.ends) :]:
            self.ends.append((self.ends[-1] if self.ends else 0) + parts.tokens[s])
        keep = self.ends[keep_parts - 1] if keep_parts else 0
        turn_part = p.turn[-1] if p.turn else p.head_parts
        extends = not first and same_head and k == previous_messages and keep_parts - kept == len(before)
        output_at = self._previous_output(where, keep_parts, extends, turn_part)
        resent = (self.ends[output_at - 1], self.ends[output_at]) if output_at is not None else None
        output: tuple[Span, ...] = ()
        if call.output is not None and call.output.role == "assistant":
            body = parts.seg(("assistant", call.output), partial(chat_format.assistant_body, call.output))
            # sized for output caching only; its count is fixed when a prompt carries it back
            output = (Span(body, 0, parts.tokens.get(body, parts.estimates[body])),)
        time = call.time if call.time is not None else self.last_time
        self.requests.append(
            Request(
                time=time,
                keep=keep,
                append=tuple(Span(s, 0, parts.tokens[s]) for s in segs[keep_parts:] if parts.tokens[s]),
                turn_start=self.ends[turn_part - 1] if turn_part else 0,
                output=output,
                resent_output=resent,
                output_tokens=call.reported.output if call.reported else None,
            )
        )
        self.last_output, self.last_time = call.output, time

    def _head(self, call: Call) -> tuple[Key, list[tuple[Key, Callable[[], chat_format.Pieces], _Where]]]:
        parts = self.parts
        out: list[tuple[Key, Callable[[], chat_format.Pieces], _Where]] = []
        if call.tools:
            tools = call.tools
            out.append((("tools", parts.tools_key(tools)), partial(chat_format.tool_declaration, tools),
                        _Where("tools")))  # fmt: skip
        out.append((("effort", call.effort), partial(chat_format.thinking_effort, call.effort), _Where("effort")))
        if call.system:
            out.append((("system", call.system), partial(chat_format.system, call.system), _Where("system")))
        return tuple(key for key, _, _ in out), out

    def _message(self, i: int, m: Message) -> None:
        p, parts = self.prompt, self.parts
        names = p.names[-1] if p.names else {}
        turn = p.turn[-1] if p.turn else p.head_parts
        if m.role == "assistant":
            p.segs += [self.header, parts.seg(("assistant", m), partial(chat_format.assistant_body, m))]
            p.where += [_Where("message", i + 1, m)] * 2
            names = {c.id: (c.name, n) for n, c in enumerate(m.tool_calls, start=1)}
            turn = len(p.segs)
        else:
            tool = names.get(m.tool_call_id or "") if m.role == "tool" else None
            p.segs.append(parts.seg(("message", m, tool), partial(chat_format.message, m, tool)))
            p.where.append(_Where("system" if m.role == "system" else "message", i + 1, m))
        p.after.append(len(p.segs))
        p.turn.append(turn)
        p.names.append(names)

    def _count(self, segs: list[int], keep_parts: int, reported: Usage | None) -> None:
        """Fix the token counts of parts seen for the first time, from the reported total where there is one."""
        parts = self.parts
        fresh = Counter(s for s in segs[keep_parts:] if s not in parts.tokens)
        for s, times in fresh.items():  # a part that recurs within one prompt keeps its estimate
            if times > 1:
                parts.tokens[s] = parts.estimates[s]
        new = [s for s in fresh if s not in parts.tokens]
        if not new:
            return
        if reported is not None and self.calibrate:
            known = (self.ends[keep_parts - 1] if keep_parts else 0) + sum(
                parts.tokens[s] for s in segs[keep_parts:] if s in parts.tokens
            )
            if _share(new, reported.prompt - known, parts):
                self.calibrated += 1
                return
        self.estimated += 1
        for s in new:
            parts.tokens[s] = parts.estimates[s]

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


_CHANGED = {"tools": "tool list changed", "effort": "reasoning effort changed", "system": "system prompt changed"}


def _change(before: list[tuple[int, _Where]], after: list[_Where], offset: int, at: int) -> tuple[str, str] | None:
    """(cause, detail) of how a prompt differs from the previous one at part `at`; None if it extends it.
    `before` holds the previous prompt's parts from `at - offset` on."""
    old = before[offset][1] if offset < len(before) else None
    new = after[at] if at < len(after) else None
    if old is None or old.kind == "generation":
        return None
    if new is None or new.kind == "generation":
        return "conversation cut short", f"the prompt ends before message {old.index}"
    for kind in (old.kind, new.kind):
        if kind in _CHANGED:
            return _CHANGED[kind], f"the {kind if kind != 'tools' else 'tool list'} differs"
    a, b = old.message, new.message
    same_reply = a is not None and b is not None and a.role == b.role == "assistant" and a.content == b.content
    if same_reply and a is not None and b is not None and a.reasoning and not b.reasoning:
        return "reasoning not passed back", f"message {new.index} (assistant) lost its reasoning"
    return "message edited", f"message {new.index} ({b.role if b else '?'}) differs"


def _share(new: Sequence[int], total: int, parts: _Parts) -> bool:
    """Give the new parts `total` tokens in proportion to their estimates; False if that cannot be done."""
    weights = [max(parts.estimates[s], 1) for s in new]
    if total < len(new):
        return False
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    order = sorted(range(len(new)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    for s, n in zip(new, shares, strict=True):
        parts.tokens[s] = n
    return True
