"""Kimi / OpenAI-compatible chat-completions logs.

Accepted, one JSON document or one record per line:
- a request body (`{"model", "messages", "tools", ...}`), or a stream of them;
- `{"request": {...}, "response": {...}}` pairs (a common proxy-log shape);
- OpenAI Batch API input lines (`{"custom_id", "body"}`) and output lines (`{"custom_id", "response"}`),
  joined on `custom_id` when both files are given; output order is not input order. An output file alone is
  a session of usage only, one call per output line in its order, billed as reported (an output with no input
  among inputs given is left out and counted: its request is not known);
- responses (`chat.completion`) and streaming chunks (`chat.completion.chunk`), which carry usage but no prompt;
- `kimi --print --output-format=stream-json` output: one message per line, each assistant message the reply to
  every line before it, no usage.

Usage is normalised as Moonshot's CLIs do: cached = `usage.cached_tokens` (Kimi, top level), else
`usage.prompt_tokens_details.cached_tokens` (OpenAI), else `usage.prompt_cache_hit_tokens`, else 0;
prompt = `prompt_tokens` (cached included); output = `completion_tokens` (reasoning included). A streaming
chunk's usage is read from `chunk.usage`, then `choices[0].usage`. A response logged twice (a final chunk and
an assembled response) counts once, by its `id`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from kcost.errors import STRICT, InputError, Leniency
from kcost.inputs.documents import Lines, line_for, load_json
from kcost.model.calls import Call, Message, Usage, message_from_openai, timestamp
from kcost.pricing.providers import wire
from kcost.readers.agents.gemini_cli import looks_like as gemini_chat
from kcost.readers.jsonl import records
from kcost.readers.registry import Part, Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage


class KimiApi(Reader):
    name = "kimi-api"
    one_call = "a request, a response or a batch line"
    usage_read = (
        "`usage.prompt_tokens` (cached: `cached_tokens`, `prompt_tokens_details.cached_tokens` or "
        "`prompt_cache_hit_tokens`), `completion_tokens`"
    )
    source_read = "the Moonshot and OpenAI API references"

    def detect(self, first: Any) -> bool:
        return kind_of(first) is not None

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Source | Path | Part:
        """A Batch API input or output file (every record a batch line) is a part of the run's batch, joined with
        the others on `custom_id`; one JSON document is read alone from what was parsed here; any other log (JSON
        Lines whose first record is no batch line) is read alone, a record at a time: a log of requests repeats
        each request's history, so all its records at once would hold every prompt in full."""
        assert isinstance(unit, Source)
        one = _one_document(unit)
        if not one and kind_of(unit.first_record) not in ("batch-input", "batch-output"):
            return unit
        items, lines = items_of(unit, one)
        if all(kind_of(r) in ("batch-input", "batch-output") for _, _, r in items):
            return Part(unit, items)
        return _Parsed(unit.name, unit.data, unit.suffix, items=items, lines=lines)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        if isinstance(unit, _Parsed):
            return read_calls(unit.items, unit.lines, notes, leniency=leniency)
        if _one_document(unit):
            return read_calls(*items_of(unit, True), notes, leniency=leniency)
        return read_calls(_Streamed(unit), None, notes, leniency=leniency)

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        items = [item for part in parts for item in part.parsed]
        return read_calls(items, None, notes, leniency=leniency)


Item = tuple[str, int, Any]  # (source, line, record)


class _Parsed(Source):
    """A log as `claim` parsed it: its records, and for one JSON document the line of each of its values."""

    def __init__(self, name: str, data: bytes, suffix: str = "", *, items: list[Item], lines: Lines | None) -> None:
        super().__init__(name, data, suffix)
        self.items, self.lines = items, lines


class _Streamed:
    """A JSON Lines log's (source, line, record) items, parsed anew each time they are gone through (held one at a
    time); `batch`: whether a record could be a batch line, which a first pass then looks for."""

    def __init__(self, source: Source) -> None:
        self.source = source
        data = source.data  # a key `custom_id` is in the bytes as it is, unless a \u escape spells it
        self.batch = b"custom_id" in data or b"\\u" in data

    def __iter__(self) -> Iterator[Item]:
        name = self.source.name
        return ((name, line, record) for line, record in records(name, self.source.data))


def _one_document(source: Source) -> bool:
    """Whether the log is one JSON document, by content (JSON Lines saved as .json too): a document is parsed
    whole to tell, so this is asked once a log."""
    return Source(source.name, source.data).sniff() == "json"


def items_of(source: Source, one: bool) -> tuple[list[Item], Lines | None]:
    """(source, line, record) of a log, and for one JSON document (`one`: `_one_document`'s answer) the line of
    each of its values."""
    if one:
        data, lines = load_json(source.text, source.name)
        return [(source.name, 1, data)], lines
    return [(source.name, line, record) for line, record in records(source.name, source.data)], None


def kind_of(record: Any) -> str | None:
    """What a Kimi API log record is, or None when it is none of them."""
    if not isinstance(record, Mapping):
        return None
    if "request" in record and "response" in record:
        return "pair"
    if "custom_id" in record:
        return "batch-output" if "response" in record or "error" in record else "batch-input"
    if isinstance(record.get("messages"), list):
        return None if gemini_chat(record) else "request"
    if record.get("object") in ("chat.completion", "chat.completion.chunk") or (
        "choices" in record and "usage" in record
    ):
        return "response"
    if isinstance(record.get("role"), str) and ("content" in record or "tool_calls" in record):
        return "message"
    return None


def read_calls(
    items: Iterable[Item], lines: Lines | None = None, notes: list[str] | None = None, *, leniency: Leniency = STRICT
) -> Iterator[Call]:
    """Calls from (source, line, record) items of one log (or a batch's input and output files together).

    `lines`: for a log that is one JSON document, the line of each of its values, to name a bad field's line.
    Failed requests (an error response, a failed batch line) were not billed: they are left out, and counted
    in `notes`.
    """
    asked, outputs = _batches(items if not isinstance(items, _Streamed) or items.batch else (), leniency)
    log = _Log(outputs, leniency, asked)
    for source, line, record in items:
        try:
            call = log.take(kind_of(record), record, line)
        except InputError as exc:
            raise exc.located(source=source, line=line_for(lines, exc.field) if lines else line) from None
        if call is not None:
            yield call
    if log.failed and notes is not None:
        notes.append(f"{log.failed} failed request(s) left out (an error response: not billed)")
    if log.unasked and notes is not None:
        notes.append(f"{log.unasked} batch output(s) with no input line left out (their requests are not known)")


def _batches(items: Iterable[Item], leniency: Leniency) -> tuple[set[str], dict[str, Mapping[str, Any] | None]]:
    """The `custom_id`s of the batch input lines among `items`, and the batch output lines by `custom_id`: each
    response body, checked (None if it failed)."""
    asked: set[str] = set()
    outputs: dict[str, Mapping[str, Any] | None] = {}
    for source, line, record in items:
        kind = kind_of(record)
        if kind == "batch-input":
            asked.add(str(record["custom_id"]))
        elif kind == "batch-output":
            if str(record["custom_id"]) in outputs:
                raise InputError("a custom_id seen before: each batch request has one output", source=source,
                                 line=line, field="custom_id")  # fmt: skip
            try:
                outputs[str(record["custom_id"])] = _batch_body(record, leniency)
            except InputError as exc:
                raise exc.located(source=source, line=line) from None
    return asked, outputs


class _Log:
    """One log's records read in order: what each makes (a call, or none), with what the reading keeps between
    records: the batch outputs, the batch inputs and response ids seen, stream-json's messages so far, and the
    failed requests left out."""

    def __init__(self, outputs: dict[str, Mapping[str, Any] | None], leniency: Leniency, asked: set[str]) -> None:
        self.outputs, self.leniency = outputs, leniency
        self.asked = asked  # the custom_ids of the batch input lines given
        self.failed = self.unasked = 0
        self.history: list[Message] = []  # for stream-json message lines
        self.inputs: set[str] = set()
        self.seen: set[str] = set()
        self.sent = _Sent()

    def take(self, kind: str | None, record: Any, line: int) -> Call | None:
        """The call a record of `kind` makes, if any."""
        if kind == "request":
            return _call(record, None, line, self.leniency, self.sent)
        if kind == "pair":
            return self._pair(record, line)
        if kind == "batch-input":
            return self._batch_input(record, line)
        if kind == "response":
            return self._response(record, line)
        if kind == "message":
            return self._message(record, line)
        if kind is None:
            raise InputError(
                "a line of no known shape: expected a request (`messages`), a message (`role`), "
                "a `request`/`response` pair, a batch line (`custom_id`), or a response (`choices`)"
            )
        return self._batch_output(record, line)

    def _batch_output(self, record: Mapping[str, Any], line: int) -> Call | None:
        """A batch output line: read with its input line where the run has inputs; of an output file alone, a
        call of its usage (the request is not in the file)."""
        custom_id = str(record["custom_id"])
        if custom_id in self.asked:
            return None  # read with its input
        if self.asked:
            self.unasked += 1
            return None
        body = self.outputs.get(custom_id)
        if body is None:
            self.failed += 1
            return None
        return Call(messages=None, model=_model(body), reported=_usage(body, self.leniency), line=line,
                    id=body.get("id") if isinstance(body.get("id"), str) else None,
                    time=_created(body, self.leniency), output=_reply(body))  # fmt: skip

    def _pair(self, record: Mapping[str, Any], line: int) -> Call | None:
        response = _object(record["response"], "response")
        if response.get("error"):
            self.failed += 1
            return None
        return _call(_object(record["request"], "request"), response, line, self.leniency, self.sent)

    def _batch_input(self, record: Mapping[str, Any], line: int) -> Call | None:
        custom_id = str(record["custom_id"])
        if custom_id in self.inputs:
            raise InputError("a custom_id seen before: each batch request is billed once", field="custom_id")
        self.inputs.add(custom_id)
        if custom_id in self.outputs and self.outputs[custom_id] is None:
            self.failed += 1
            return None
        return _call(_object(record.get("body"), "body"), self.outputs.get(custom_id), line, self.leniency, self.sent)

    def _response(self, record: Mapping[str, Any], line: int) -> Call | None:
        rid = record.get("id")
        usage = _usage(record, self.leniency)
        if usage is None or (isinstance(rid, str) and rid in self.seen):
            return None
        if isinstance(rid, str):
            self.seen.add(rid)  # a final chunk and an assembled response for one reply: count it once
        return Call(messages=None, model=_model(record), reported=usage, line=line, id=rid,
                    time=_created(record, self.leniency), output=_reply(record))  # fmt: skip

    def _message(self, record: Mapping[str, Any], line: int) -> Call | None:
        message = message_from_openai(record)
        call = Call(messages=tuple(self.history), output=message, line=line) if message.role == "assistant" else None
        self.history.append(message)
        return call


def _batch_body(record: Mapping[str, Any], leniency: Leniency) -> Mapping[str, Any] | None:
    """A batch output line's response body, checked; None when the request failed (it has no usage)."""
    response = record.get("response")
    if record.get("error") or not isinstance(response, Mapping) or response.get("status_code", 200) != 200:
        return None
    body = _object(response.get("body"), "response.body")
    try:
        _usage(body, leniency)
        _reply(body)
    except InputError as exc:
        exc.field = f"response.body.{exc.field}" if exc.field else "response.body"
        raise
    return body


def _object(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError("expected an object", field=name)
    return value


class _Sent:
    """The messages of the request before, as JSON and as read: a request repeats the conversation so far, and
    each message the one before it sent at its place (the same JSON) is that message again, not read anew."""

    def __init__(self) -> None:
        self.texts: list[bytes | None] = []
        self.messages: tuple[Message, ...] = ()

    def read(self, raw: list[Any]) -> tuple[Message, ...]:
        texts = [_json(m) for m in raw]  # the same JSON, the same message: 1 and true differ here
        same = 0
        for now, before in zip(texts, self.texts, strict=False):
            if now is None or now != before:
                break
            same += 1
        messages = self.messages[:same] + tuple(
            message_from_openai(m, where=f"messages[{i}]") for i, m in enumerate(raw[same:], start=same)
        )
        self.texts, self.messages = texts, messages
        return messages


def _json(message: Any) -> bytes | None:
    """A message as JSON; None for one nested past what orjson writes (read anew each time)."""
    try:
        return orjson.dumps(message)
    except TypeError:
        return None


def _call(
    body: Mapping[str, Any], response: Mapping[str, Any] | None, line: int, leniency: Leniency, sent: _Sent
) -> Call:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InputError("expected a non-empty list", field="messages")
    messages = sent.read(raw)
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise InputError("expected a list", field="tools")
    effort = body.get("reasoning_effort")
    return Call(
        messages=messages,
        tools=tuple(tools) or None if tools else None,
        effort=effort if isinstance(effort, str) else None,
        model=_model(body) or (_model(response) if response else None),
        time=_created(response, leniency) if response else None,
        output=_reply(response) if response else None,
        reported=_usage(response, leniency) if response else None,
        line=line,
        id=response.get("id") if response else None,
    )


def _model(record: Mapping[str, Any]) -> str | None:
    model = record.get("model")
    return model if isinstance(model, str) and model else None


def _created(response: Mapping[str, Any], leniency: Leniency) -> float | None:
    return timestamp(response.get("created"), field="created", leniency=leniency)


def _reply(response: Mapping[str, Any]) -> Message | None:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    message = choices[0].get("message")
    if isinstance(message, Mapping) and "role" in message:
        return message_from_openai(message, where="choices[0].message")
    return None


def _usage(response: Mapping[str, Any], leniency: Leniency) -> Usage | None:
    usage = response.get("usage")
    if usage is None:
        choices = response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            usage = choices[0].get("usage")  # Kimi streams put it inside the choice
    if usage is None:
        return None
    return parse_usage(usage, wire.OPENAI.scheme, leniency=leniency)
