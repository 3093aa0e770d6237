"""Turn specs: token counts per turn, in YAML, JSON or JSONL, turned into the simulator's requests.

A turn spec carries no text, so each run of tokens gets a synthetic identity: the prefix is run 0, and every
turn's new tokens, edited tokens and output are runs of their own. Identical prefixes are then identical runs
and hash identically; anything new hashes differently. The format is described in the README ("Turn specs")
and by `kcost schema turns`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from kcost.cache.simulator import Request, Span
from kcost.errors import InputError, format_loc, pydantic_error
from kcost.models import PreviousOutput, Session, SessionSpec, Turn
from kcost.readers.source import Source

Lines = dict[tuple[object, ...], int]


def read_turnspec(source: Source, fmt: str) -> Session:
    """Parse and validate a turn spec, then build its requests; every problem is an `InputError`."""
    data, lines = _load(source, fmt)
    if isinstance(data, list):  # a bare list of turns
        data = {"turns": data}
        lines = {("turns", *key): line for key, line in lines.items()}
    if not isinstance(data, dict):
        raise InputError("expected a turn spec: a mapping with `turns`, or a list of turns", source=source.name)
    try:
        spec = SessionSpec.model_validate(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source.name, lines) from None
    return build(spec, source=source.name, name=spec.name or source.stem, lines=lines)


def build(spec: SessionSpec, *, source: str, name: str, lines: Lines | None = None) -> Session:
    """The requests a turn spec describes, with the rules in the README's "Turn specs" section."""
    lines = lines or {}
    requests: list[Request] = []
    labels: list[str | None] = []
    next_seg = 1
    time = 0.0
    prefix = spec.prefix
    prev_len = 0  # length of the previous request's prompt
    head: tuple[Span, ...] = ()  # carried-over spans not yet sent to the simulator (a cold prefix)
    if prefix and prefix.tokens:
        if prefix.warm:
            requests.append(Request(time, 0, (Span(0, 0, prefix.tokens),), turn_start=0, billed=False))
            prev_len = prefix.tokens
        else:
            head = (Span(0, 0, prefix.tokens),)
    sent: tuple[Span, ...] = ()  # the previous output, as it would be sent back
    last: Turn | None = None
    for index, turn, repeat in _expanded(spec.turns):
        where = ("turns", index)

        def bad(field: str, message: str, where: tuple[object, ...] = where) -> InputError:
            return InputError(message, source=source, line=lines.get(where), field=format_loc((*where, field)))

        time += turn.idle
        if last is not None and last.output:
            out_seg = next_seg - 1  # the previous turn's output run
            sent = {
                PreviousOutput.FULL: (Span(out_seg, 0, last.output),),
                PreviousOutput.CONTENT: (Span(out_seg, last.reasoning, last.output - last.reasoning),),
                PreviousOutput.NONE: (),
            }[turn.previous_output]
        else:
            sent = ()
        carried = (prev_len if requests else 0) + _length(head) + _length(sent)
        cut = carried
        if turn.keep is not None:
            if turn.keep > carried:
                raise bad("keep", f"keeps {turn.keep} tokens but only {carried} are carried over (turn {repeat})")
            cut = turn.keep
        unchanged = cut
        if turn.edit_at is not None:
            if turn.edit_at > cut:
                raise bad("edit_at", f"edits at token {turn.edit_at} but the prompt carries {cut} (turn {repeat})")
            unchanged = turn.edit_at
        base = prev_len if requests else 0
        keep = min(base, unchanged)
        append = list(_clip(head + sent, unchanged - keep)) if unchanged > keep else []
        resent = None
        if sent and unchanged > base + _length(head):
            resent = (base + _length(head), min(unchanged, base + _length(head) + _length(sent)))
        for tokens in (cut - unchanged, turn.new):
            if tokens:
                append.append(Span(next_seg, 0, tokens))
                next_seg += 1
        length = keep + _length(append)
        if length < 1:
            raise bad("new", f"the prompt of turn {repeat} is empty: it needs at least one input token")
        output = (Span(next_seg, 0, turn.output),) if turn.output else ()
        next_seg += 1  # the output run's id, used or not, so `out_seg` is always the one before
        requests.append(Request(time, keep, tuple(append), cut, output, resent))
        labels.append(turn.label)
        prev_len, head, last = length, (), turn
    return Session(
        source=source,
        name=name,
        model=spec.model,
        requests=tuple(requests),
        labels=tuple(labels),
        warm_prefix=prefix.tokens if prefix and prefix.warm else 0,
    )


def _expanded(turns: list[Turn]) -> Iterator[tuple[int, Turn, int]]:
    """(index in the file, turn, 1-based turn number in the session)."""
    number = 0
    for index, turn in enumerate(turns):
        for _ in range(turn.repeat):
            number += 1
            yield index, turn, number


def _length(spans: tuple[Span, ...] | list[Span]) -> int:
    return sum(s.length for s in spans)


def _clip(spans: tuple[Span, ...], tokens: int) -> Iterator[Span]:
    for span in spans:
        if tokens <= 0:
            return
        take = min(span.length, tokens)
        yield Span(span.seg, span.start, take)
        tokens -= take


# ---- loading, with the line of every field ------------------------------------------------------------


def _load(source: Source, fmt: str) -> tuple[Any, Lines]:
    text = source.text
    if fmt == "auto":
        fmt = source.sniff()
    if fmt == "jsonl":
        return _load_jsonl(source)
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=source.name, line=exc.lineno) from None
        try:
            _, lines = _load_yaml(text, source.name)  # JSON is YAML: its nodes know their lines
        except InputError:
            lines = {}
        return data, lines
    return _load_yaml(text, source.name)


def _load_jsonl(source: Source) -> tuple[Any, Lines]:
    turns: list[Any] = []
    lines: Lines = {}
    header: dict[str, Any] = {}
    for number, raw in enumerate(source.text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=source.name, line=number) from None
        if isinstance(record, dict) and "session" in record and not turns and not header:
            if set(record) != {"session"} or not isinstance(record["session"], dict):
                raise InputError(
                    "a header line holds only {\"session\": {...}}", source=source.name, line=number, field="session"
                )
            header = record["session"]
            if "turns" in header:
                raise InputError("turns go on lines of their own", source=source.name, line=number, field="turns")
            for key in header:
                lines[(key,)] = number
            continue
        lines[("turns", len(turns))] = number
        turns.append(record)
    return {**header, "turns": turns}, lines


def _load_yaml(text: str, name: str) -> tuple[Any, Lines]:
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot parse"
        raise InputError(f"not valid YAML: {problem}", source=name, line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", source=name) from None
    finally:
        loader.dispose()
    lines: Lines = {}
    if node is not None:
        _walk(node, (), lines, name)
    return data, lines


def _walk(node: Any, path: tuple[object, ...], lines: Lines, name: str) -> None:
    import yaml

    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise InputError(
                    "duplicate key", source=name, line=key_node.start_mark.line + 1, field=format_loc((*path, key))
                )
            seen.add(key)
            _walk(value_node, (*path, key), lines, name)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, name)
