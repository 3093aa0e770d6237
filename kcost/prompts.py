"""Calls -> a session of simulator requests: each prompt rendered in the K3 chat format, cut into spans.

Every rendered part of a prompt (the tool declaration, the thinking-effort message, the system prompt, each
message) is a span whose identity is its content, so a request shares with the one before exactly the parts
that are the same, in the same order. What a request keeps of the previous prompt is found by comparing parts,
and each distinct part is rendered and counted once, however many requests re-send it.

Token counts, best source first: the provider's reported prompt totals (a request's new parts share out what
its reported total adds to the parts already counted, in proportion to their estimates), the Kimi tokenizer,
or an estimate.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from kcost import chat_format
from kcost.cache.simulator import Request, Span
from kcost.calls import Call, Message, Usage
from kcost.models import Session
from kcost.tokenizer import TokenCounter

Key = tuple[object, ...]


@dataclass(frozen=True)
class Part:
    seg: int
    tokens: int


class _Parts:
    """Rendered parts by content: an id each, and the token count it was first given."""

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

    `calibrate`: fit token counts to the reported prompt totals (False when another vendor's tokenizer counted
    them). A log with no prompt for some call gives a session with reported usage only.
    """
    calls = list(calls)
    if any(c.messages is None for c in calls):
        return Session(
            source=source,
            name=name,
            model=None,
            requests=(),
            labels=tuple(None for _ in calls),
            reported=tuple(c.reported for c in calls),
            token_counts="reported",
            notes=(*notes, "the log holds no prompts: billed as reported"),
        )
    parts = _Parts(counter)
    changes: list[tuple[str, str] | None] = []
    previous_where: list[_Where] = []
    requests: list[Request] = []
    reported: list[Usage | None] = []
    lines: list[int | None] = []
    previous: list[Part] = []
    last_output: Message | None = None
    last_time = 0.0
    calibrated = estimated = 0
    first_model = None
    for call in calls:
        segs, where, turn_start_index, output_index = _segments(call, parts, last_output)
        seen = Counter(segs)
        for s, times in seen.items():  # a part that recurs within one prompt keeps its estimate
            if times > 1:
                parts.tokens.setdefault(s, parts.estimates[s])
        new = [s for s in seen if s not in parts.tokens]
        if new and call.reported is not None and calibrate:
            known = sum(parts.tokens[s] for s in segs if s in parts.tokens)
            if _share(new, call.reported.prompt - known, parts):
                calibrated += 1
            else:
                estimated += 1
        elif new:
            estimated += 1
        for s in new:
            parts.tokens.setdefault(s, parts.estimates[s])
        prompt = [Part(s, parts.tokens[s]) for s in segs]
        keep_parts = _common(previous, prompt)
        changes.append(_change(previous_where, where, keep_parts) if previous else None)
        keep = sum(p.tokens for p in prompt[:keep_parts])
        starts = _positions(prompt)
        after_last = where[keep_parts] if previous and keep_parts == len(previous) < len(prompt) else None
        if output_index is None and after_last and after_last.message and after_last.message.role == "assistant":
            output_index = keep_parts  # a log without replies: the reply is what follows the last prompt
        resent = None
        if output_index is not None:
            resent = (starts[output_index], starts[output_index] + prompt[output_index].tokens)
        output: tuple[Span, ...] = ()
        if call.output is not None and call.output.role == "assistant":
            body = parts.seg(("assistant", call.output), partial(chat_format.assistant_body, call.output))
            # sized for output caching only; its count is fixed when a prompt carries it back
            output = (Span(body, 0, parts.tokens.get(body, parts.estimates[body])),)
        time = call.time if call.time is not None else last_time
        requests.append(
            Request(
                time=time,
                keep=keep,
                append=tuple(Span(p.seg, 0, p.tokens) for p in prompt[keep_parts:] if p.tokens),
                turn_start=starts[turn_start_index],
                output=output,
                resent_output=resent,
                output_tokens=call.reported.output if call.reported else None,
            )
        )
        reported.append(call.reported)
        lines.append(call.line)
        first_model = first_model or call.model
        previous, previous_where, last_output, last_time = prompt, where, call.output, time
    if calibrated and not estimated:
        counts = "reported"
    elif calibrated:
        counts = f"reported where logged ({calibrated} requests), else {counter.source}"
    else:
        counts = counter.source
    if first_model:
        notes = (*notes, f"logged model {first_model}: priced at K3 rates")
    return Session(
        source=source,
        name=name,
        model=None,
        requests=tuple(requests),
        labels=tuple(None for _ in requests),
        reported=tuple(reported),
        token_counts=counts,
        notes=tuple(notes),
        changes=tuple(changes),
    )


@dataclass(frozen=True)
class _Where:
    """What a part of a prompt is, to say what changed: `tools`, `effort`, `system`, or message `index`."""

    kind: str
    index: int = -1
    message: Message | None = None


def _segments(
    call: Call, parts: _Parts, last_output: Message | None
) -> tuple[list[int], list[_Where], int, int | None]:
    """The prompt's parts in order, what each is, where the newest turn starts, where the previous output is."""
    segs: list[int] = []
    where: list[_Where] = []
    if call.tools:
        key = ("tools", parts.tools_key(call.tools))
        segs.append(parts.seg(key, lambda: chat_format.tool_declaration(call.tools or ())))
        where.append(_Where("tools"))
    segs.append(parts.seg(("effort", call.effort), lambda: chat_format.thinking_effort(call.effort)))
    where.append(_Where("effort"))
    if call.system:
        segs.append(parts.seg(("system", call.system), lambda: chat_format.system(call.system or "")))
        where.append(_Where("system"))
    header = parts.seg(("assistant-header",), chat_format.ASSISTANT_HEADER)
    turn_start = len(segs)
    output_index = None
    names: dict[str, tuple[str, int]] = {}
    for i, m in enumerate(call.messages or (), start=1):
        if m.role == "assistant":
            segs.append(header)
            segs.append(parts.seg(("assistant", m), partial(chat_format.assistant_body, m)))
            where += [_Where("message", i, m), _Where("message", i, m)]
            turn_start = len(segs)
            names = {c.id: (c.name, k) for k, c in enumerate(m.tool_calls, start=1)}
            output_index = len(segs) - 1 if m == last_output else None
        else:
            tool = names.get(m.tool_call_id or "") if m.role == "tool" else None
            segs.append(parts.seg(("message", m, tool), partial(chat_format.message, m, tool)))
            where.append(_Where("system" if m.role == "system" else "message", i, m))
    if not call.messages or call.messages[-1].role != "assistant" or not call.messages[-1].partial:
        segs.append(header)  # the generation prompt (a partial assistant message is its own)
        where.append(_Where("generation"))
    if output_index is not None and output_index < turn_start - 1:
        output_index = None
    return segs, where, turn_start, output_index


_CHANGED = {"tools": "tool list changed", "effort": "reasoning effort changed", "system": "system prompt changed"}


def _change(before: list[_Where], after: list[_Where], at: int) -> tuple[str, str] | None:
    """(cause, detail) of how a prompt differs from the previous one at part `at`; None if it extends it."""
    old = before[at] if at < len(before) else None
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


def _common(a: list[Part], b: list[Part]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _positions(prompt: list[Part]) -> list[int]:
    out, pos = [], 0
    for p in prompt:
        out.append(pos)
        pos += p.tokens
    out.append(pos)
    return out
