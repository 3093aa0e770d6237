"""Amp threads (`~/.local/share/amp/threads/T-<uuid>.json`): what the thread would cost on K3.

Amp (Sourcegraph's `amp` CLI) is closed source; its format is known from the readers that bill it: ccusage
(ryoppippi/ccusage `rust/crates/ccusage/src/adapter/amp/`: `paths.rs`, `parser.rs`, `README.md`) and tokscale
(junhoyeo/tokscale `crates/tokscale-core/src/sessions/amp.rs`), and from real files quoted in ccusage/ccusage#1138.
Amp keeps one JSON document per thread, rewritten whole as the thread grows: `v` (its schema's version), `id`
(`T-...`), `created` (epoch milliseconds), `title`, `messages` (each `role`, `messageId`, `content` blocks) and, in
older threads, `usageLedger.events`. ccusage looks in `~/.local/share/amp`, or in the folders `AMP_DATA_DIR` names
(a comma-separated list); kcost looks where ccusage does.

Each assistant message with `usage` is one call (`inputTokens`, `outputTokens`, `cacheCreationInputTokens`,
`cacheReadInputTokens`, `model`, `timestamp`). The counts are Anthropic's: `inputTokens` is what neither read nor
wrote the cache (`totalInputTokens = inputTokens + cacheCreationInputTokens + cacheReadInputTokens` in every file
seen), so the prompt is the three together, the cached tokens `cacheReadInputTokens`, the writes
`cacheCreationInputTokens` (their lifetime is not logged) and the output `outputTokens` (thinking included, as
Anthropic counts it). An older thread's ledger event (`tokens.input`, `tokens.output`, `toMessageId`) is the usage
of the message it names where that message logged none (its cache counts then unknown: 0), and gives that message
its time and model where it logged none; ccusage 20.0.24 reads the ledger alone when a thread has one and joins
only the cache counts from the messages, so a message the ledger misses is lost there (tokscale merges the two,
as kcost does). The prompt is rebuilt from the messages before each call; the system prompt and tools are not
logged. The project is the first worktree a thread records (`env.initial.trees`), where it records one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Message, ToolCall, Usage, content_text, timestamp
from kcost.pricing.providers import wire as providers_wire
from kcost.readers.jsonl import compact_json
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage

# Amp's (Anthropic's, in camelCase) counts under the names of Anthropic's API, whose scheme `parse_usage` knows
ANTHROPIC = {
    "inputTokens": "input_tokens",
    "cacheCreationInputTokens": "cache_creation_input_tokens",
    "cacheReadInputTokens": "cache_read_input_tokens",
    "outputTokens": "output_tokens",
}
LEDGER = {"input": "input_tokens", "output": "output_tokens"}  # a ledger event's `tokens`


def looks_like(first: Any) -> bool:
    """A thread: its `messages`, and the ledger or the `T-` id and schema version only Amp writes."""
    if not isinstance(first, Mapping) or not isinstance(first.get("messages"), list):
        return False
    thread = first.get("id")
    return isinstance(first.get("usageLedger"), Mapping) or (
        isinstance(thread, str) and thread.startswith("T-") and type(first.get("v")) is int
    )


def anthropic_usage(raw: Any, names: Mapping[str, str], *, where: str, leniency: Leniency) -> Usage | None:
    """Counts an agent logs under its own names (`names`: each of them -> Anthropic's) as a `Usage`, prompt =
    input + cache writes + cache reads; a bad or missing count is named by the agent's field (None: a lenient read
    skipped it). A missing input or output count is 0, as ccusage reads them."""
    if not isinstance(raw, Mapping):
        leniency.forgive(InputError(f"expected an object, got {type(raw).__name__}", field=where))
        return None
    wire = {"input_tokens": 0, "output_tokens": 0} | {names[k]: v for k, v in raw.items() if k in names}
    try:
        return parse_usage(wire, providers_wire.ANTHROPIC.scheme, where=where)
    except InputError as exc:
        theirs = {f"{where}.{ours}": f"{where}.{agent}" for agent, ours in names.items() if agent in raw}
        exc.field = theirs.get(exc.field or "", exc.field)
        leniency.forgive(exc)
        return None


class Amp(Reader):
    name = "amp"
    one_call = "an assistant message with `usage` (or, in an older thread, the ledger event naming it)"
    usage_read = (
        "`usage.inputTokens + cacheCreationInputTokens + cacheReadInputTokens` (the first holds neither), "
        "`outputTokens` (holds the thinking)"
    )
    source_read = "ccusage's `adapter/amp` and tokscale's `sessions/amp.rs` (Amp is closed source)"
    comparable = False  # Anthropic's cache (or whichever provider's): its hits say nothing of K3's
    suffixes = (".json",)

    def detect(self, first: Any) -> bool:
        return looks_like(first)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        thread = unit.first_record
        if not isinstance(thread, Mapping) or not isinstance(thread.get("messages"), list):
            raise InputError("not an Amp thread: expected an object with `messages`", source=unit.name)
        return read_calls(thread, unit.name, notes, prompts=prompts, leniency=leniency)

    def project(self, unit: Source | Path) -> str | None:
        """The workspace the thread was started in, as real threads record it (and other readers of them take
        it): the first of `env.initial.trees`, its `file://` URI as a path, else its `displayName`."""
        if not isinstance(unit, Source):
            return None
        try:
            thread = unit.first_record
        except InputError:
            return None
        return workspace(thread)


def workspace(thread: Any) -> str | None:
    """A thread's first workspace tree: its `file://` URI as a path, else its display name."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from urllib.parse import unquote, urlparse

    env = thread.get("env") if isinstance(thread, Mapping) else None
    initial = env.get("initial") if isinstance(env, Mapping) else None
    trees = initial.get("trees") if isinstance(initial, Mapping) else None
    for tree in trees if isinstance(trees, list) else ():
        if not isinstance(tree, Mapping):
            continue
        uri, name = tree.get("uri"), tree.get("displayName")
        if isinstance(uri, str) and uri.startswith("file:") and unquote(urlparse(uri).path):
            return unquote(urlparse(uri).path)
        if isinstance(name, str) and name:
            return name
    return None


def _ledger(thread: Mapping[str, Any], source: str) -> list[tuple[int, Mapping[str, Any]]]:
    """The older threads' ledger events, each with its index."""
    ledger = thread.get("usageLedger")
    events = ledger.get("events") if isinstance(ledger, Mapping) else None
    if events is None:
        return []
    if not isinstance(events, list):
        raise InputError("expected a list", source=source, field="usageLedger.events")
    for n, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise InputError("expected an object", source=source, field=f"usageLedger.events[{n}]")
    return list(enumerate(events))


def read_calls(
    thread: Mapping[str, Any], source: str, notes: list[str], *, prompts: bool, leniency: Leniency
) -> Iterator[Call]:
    """One call per assistant message with usage (or a ledger event naming it), in the thread's order."""
    events = _ledger(thread, source)
    by_message = {e["toMessageId"]: (n, e) for n, e in events if type(e.get("toMessageId")) is int}
    used: set[int] = set()  # the ledger events a message took
    created = _time(thread.get("created"), "created", source, leniency)
    history: list[Message] = []
    for n, message in enumerate(thread["messages"]):
        at = f"messages[{n}]"
        if not isinstance(message, Mapping):
            raise InputError("expected an object", source=source, field=at)
        role = message.get("role")
        if role != "assistant":
            if prompts and role == "user":
                history += _user(message.get("content"))
            continue
        reply = _reply(message.get("content")) if prompts else None
        mid = message.get("messageId")
        n_event, event = by_message.get(mid, (None, None)) if type(mid) is int else (None, None)
        if n_event is not None:
            used.add(n_event)
        call = _call(message, event, at, n_event, source, leniency)
        if call is not None:
            time = call[1] if call[1] is not None else created
            yield Call(messages=tuple(history) if prompts else None, output=reply, time=time, model=call[2],
                       reported=call[0], id=str(mid) if mid is not None else None,
                       unlogged="system prompt and tools")  # fmt: skip
        if reply is not None:
            history.append(reply)
    for n, event in events:
        if n in used:
            continue
        call = _call({}, event, f"usageLedger.events[{n}]", n, source, leniency)
        if call is not None:  # an event naming no message of the thread: its usage alone
            notes.append("a usage ledger event names no message of the thread: billed as reported")
            yield Call(messages=None, time=call[1] if call[1] is not None else created, model=call[2],
                       reported=call[0], id=str(event.get("id", n)))  # fmt: skip


def _call(
    message: Mapping[str, Any],
    event: Mapping[str, Any] | None,
    at: str,
    n_event: int | None,
    source: str,
    leniency: Leniency,
) -> tuple[Usage, float | None, str | None] | None:
    """A message's usage, time and model: its own `usage`, else its ledger event's; None: none logged (or, in
    a lenient read, a bad one), or nothing billed."""
    raw = message.get("usage")
    logged = event.get("tokens") if event is not None else None
    try:
        if raw is not None:
            usage = anthropic_usage(raw, ANTHROPIC, where=f"{at}.usage", leniency=leniency)
        elif logged is not None:
            usage = anthropic_usage(logged, LEDGER, where=f"usageLedger.events[{n_event}].tokens",
                                    leniency=leniency)  # fmt: skip
        else:
            return None
    except InputError as exc:
        raise exc.located(source=source) from None
    if usage is None or usage.empty:
        return None
    own = raw if isinstance(raw, Mapping) else {}
    ledger = event or {}
    when = own.get("timestamp") or message.get("timestamp") or ledger.get("timestamp")
    time = _time(when, f"{at}.usage.timestamp", source, leniency)
    model = own.get("model") or message.get("model") or ledger.get("model")
    return usage, time, model if isinstance(model, str) and model else None


def _time(value: Any, field: str, source: str, leniency: Leniency) -> float | None:
    try:
        return timestamp(value, field=field, leniency=leniency)
    except InputError as exc:
        raise exc.located(source=source) from None


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _user(content: Any) -> list[Message]:
    """A user message as sent: its tool results as tool messages, the rest as the user's text."""
    out: list[Message] = []
    text = []
    for block in _blocks(content):
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            call_id = block.get("tool_use_id", block.get("toolUseID"))
            result = block.get("content", block.get("output"))
            out.append(Message(role="tool", tool_call_id=call_id if isinstance(call_id, str) else None,
                               content=result if isinstance(result, str) else content_text(
                                   result if isinstance(result, list) else None)))  # fmt: skip
        else:
            text.append(block)
    if text:
        out.append(Message(role="user", content=content_text(text)))
    return out


def _reply(content: Any) -> Message:
    """An assistant message: its text, thinking and tool calls."""
    text, reasoning, calls = [], [], []
    for block in _blocks(content):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            reasoning.append(block["thinking"])
        elif kind == "tool_use":
            calls.append(ToolCall(str(block.get("id", "")), str(block.get("name", "")),
                                  compact_json(block.get("input", {}))))  # fmt: skip
    return Message(role="assistant", content="".join(text), reasoning="".join(reasoning) or None,
                   tool_calls=tuple(calls))  # fmt: skip
