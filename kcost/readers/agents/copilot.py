"""GitHub Copilot CLI sessions (`~/.copilot/session-state/<session>/events.jsonl`), and its OpenTelemetry file
export where one was turned on: what each session would cost on K3.

Copilot CLI (closed source) keeps its state under `COPILOT_HOME`, else `~/.copilot`: each session's events, one a
line, in `session-state/<session id>/events.jsonl` (`{type, id, timestamp, parentId, data}`; the event types are
those of github/copilot-sdk `nodejs/src/generated/session-events.ts`). The usage of each model call
(`assistant.usage`) is ephemeral, never written to the file; what the file holds is the totals a session's process
writes as it exits: `session.shutdown`'s `data.modelMetrics`, per model, `usage.inputTokens` (the cache reads and
writes included), `cacheReadTokens`, `cacheWriteTokens`, `outputTokens` (the reasoning included) and
`reasoningTokens` (as ccusage reads them: ccusage/ccusage `rust/adapters/copilot/`: its README and `src/parser.rs`).
These run on over a resumed session's later shutdowns (`loader.rs`, `reconcile_session_state_entries`), so each
model's usage between two shutdowns is the later total less the earlier; a total that went down was written by a
Copilot that started its totals again on resuming, and counts whole. So a session is billed as one call per model
and run, as reported: prompt `inputTokens`, of which `cacheReadTokens` were read and `cacheWriteTokens` written,
output `outputTokens`, reasoning `reasoningTokens`. A session that never shut down has no usage. A model's `-1m`
suffix (its long-context variant) is dropped, as ccusage drops it.

Where the user turned OpenTelemetry's file export on (`COPILOT_OTEL_ENABLED`, `COPILOT_OTEL_EXPORTER_TYPE=file`),
the file (`~/.copilot/otel/*.jsonl` by ccusage's convention) holds a `chat` span per model call with the GenAI
conventions' counts: `gen_ai.usage.input_tokens` (the cache reads and writes included), `cache_read.input_tokens`,
`cache_creation.input_tokens` (or `cache_write`), `output_tokens`, `reasoning.output_tokens`. Each is one call,
billed as reported; an inference log, agent turn or `invoke_agent` summary sharing a chat span's trace or response
counts no more (nor, where no chat span was kept, more than the best kind of them), a span exported twice (its
response id and counts) once, and one the session's `session.shutdown` already counts (of its model, dated no
later than the model's last shutdown) not at all: as ccusage does. ccusage 20.0.24 keeps the duplicate spans and
counts a span's cache writes both in its input and as writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import STRICT, InputError, Leniency
from kcost.model.calls import Call, Usage, timestamp
from kcost.readers.jsonl import as_text
from kcost.readers.registry import Part, Reader
from kcost.readers.source import Source
from kcost.readers.usage import MAX_COUNT

_EVENTS = ("session.", "user.", "assistant.", "tool.", "subagent.", "system.", "hook.", "skill.")
_SESSION = ("gen_ai.conversation.id", "copilot_chat.session_id", "copilot_chat.chat_session_id", "session.id",
            "github.copilot.interaction_id", "gen_ai.response.id")  # fmt: skip
_LONG = re.compile(r"-1m(-internal)?$")
_STATE_COUNTS = ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens", "reasoningTokens")
_SPAN_COUNTS = {  # what each of a span's counts is, under each name the GenAI conventions have had
    "input": ("gen_ai.usage.input_tokens",),
    "read": ("gen_ai.usage.cache_read.input_tokens",),
    "written": ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_write.input_tokens"),
    "output": ("gen_ai.usage.output_tokens",),
    "reasoning": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens"),
}

# A span (or log record) as `claim` parses it: its session, kind (4 a chat span, 3 an inference log, 2 an agent
# turn, 1 an invoke_agent summary), trace and response ids, model, time, line and counts as logged (with, where
# its time is no date, that error as `time`: raised where the span is read).
Span = tuple[str, int, str | None, str | None, str | None, float | None, int, dict[str, Any]]


def is_event(first: Any) -> bool:
    """A line of a session's events: a Copilot event type, its `data`, and its place in the chain (`parentId`)."""
    kind = first.get("type") if isinstance(first, Mapping) else None
    return (isinstance(kind, str) and kind.startswith(_EVENTS) and isinstance(first.get("data"), Mapping)
            and isinstance(first.get("id"), str) and "parentId" in first)  # fmt: skip


def is_export(first: Any) -> bool:
    """A line of an OpenTelemetry file export: a span, a log record, or a GenAI metric."""
    if not isinstance(first, Mapping):
        return False
    if isinstance(first.get("traceId"), str) and "spanId" in first:
        return True
    if "hrTime" in first and isinstance(first.get("attributes"), Mapping):
        return True
    name = first.get("name")
    return first.get("type") == "metric" and isinstance(name, str) and name.startswith("gen_ai.")


class GithubCopilot(Reader):
    name = "github-copilot"
    one_call = "a model's usage between two `session.shutdown`s; an OpenTelemetry `chat` span"
    usage_read = (
        "`modelMetrics.<model>.usage`: `inputTokens` (holds `cacheReadTokens` and `cacheWriteTokens`), "
        "`outputTokens` (holds `reasoningTokens`), running totals; a span's `gen_ai.usage.*` alike"
    )
    source_read = "github/copilot-sdk `session-events.ts`; ccusage `rust/adapters/copilot` (closed agent)"
    comparable = False  # the model provider's cache: its hits say nothing of K3's

    def detect(self, first: Any) -> bool:
        return is_event(first) or is_export(first)

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Part:
        """A session's shutdown totals, or an export's spans, parsed now: which spans a session's totals hold
        already is known once the run's every file is."""
        if not isinstance(unit, Source):
            raise InputError("not a Copilot log: give a session's events.jsonl", source=str(unit))
        if is_event(unit.first_record):
            return Part(unit, ("state", *_state(unit)))
        return Part(unit, ("otel", _spans(unit)))

    def join(self, parts: list[Part]) -> list[list[Part]]:
        """A session of each events file, with its spans its totals do not hold; a session of the spans of each
        session no events file of the run holds."""
        ordered = sorted(parts, key=lambda p: p.source.name)
        states = [p for p in ordered if p.parsed[0] == "state"]
        last: dict[tuple[str, str], float] = {}  # (session, model) -> its last shutdown
        for part in states:
            _, session, _, shutdowns = part.parsed
            for _, _, time, metrics in shutdowns:
                for model in metrics:
                    key = (session, _model(model))
                    last[key] = max(last.get(key, 0.0), time or 0.0)
        spans = [(p.source.name, s) for p in ordered if p.parsed[0] == "otel" for s in p.parsed[1]]
        kept = [(f, s) for f, s in _best(spans) if s[5] is None or s[5] > last.get((s[0], s[4] or ""), -1.0)]
        out = []
        held = {p.parsed[1] for p in states}
        for part in states:
            _, session, cwd, shutdowns = part.parsed
            out.append([Part(part.source, ("state", session, cwd, shutdowns, [s for _, s in kept if s[0] == session]))])
        alone: dict[str, tuple[str, list[Span]]] = {}
        for file, span in kept:
            if span[0] not in held:
                alone.setdefault(span[0], (file, []))[1].append(span)
        for session, (file, found) in alone.items():
            out.append([Part(Source(f"{file}#{session}", b""), ("otel", found))])
        return out

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        calls: list[Call] = []
        for part in parts:
            where = part.source.name.partition("#")[0]
            if part.parsed[0] == "state":
                _, _, _, shutdowns, spans = part.parsed
                calls += _shutdown_calls(shutdowns, where, notes, leniency)
                if shutdowns:
                    notes.append("Copilot logs each model's totals when a session exits, not its calls: one call "
                                 "per model and run, billed as reported")  # fmt: skip
            else:
                spans = part.parsed[1]
            calls += _span_calls(spans, where, leniency)
            if spans:
                notes.append("Copilot's OpenTelemetry spans hold each call's counts, not its prompt: billed as "
                             "reported")  # fmt: skip
        calls.sort(key=lambda c: c.time or 0.0)
        return iter(calls)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        groups = self.join([self.claim(unit)])
        return (c for group in groups for c in self.read_parts(group, notes, prompts=prompts, leniency=leniency))

    def reads_again(self, parts: list[Part]) -> bool:
        return False  # read from what `claim` parsed

    def session_name(self, unit: Source | Path) -> str:
        """The session's id: its folder's name (an export's: after `#`)."""
        if isinstance(unit, Path):
            return unit.name
        file, _, session = unit.name.partition("#")
        return session or Path(file).parent.name or unit.stem

    def project(self, unit: Source | Path) -> str | None:
        """The working directory `session.start` records (`data.context.cwd`)."""
        if not isinstance(unit, Source) or "#" in unit.name:
            return None
        return unit.first_string("cwd")


def _model(name: str) -> str:
    return _LONG.sub("", name)


def _state(src: Source) -> tuple[str, str | None, list[tuple[int, str, float | None, dict[str, Any]]]]:
    """A session's id (its folder's name, else `session.start`'s), its working directory and its shutdowns:
    (line, event id, time, `modelMetrics`)."""
    session = Path(src.name).parent.name if src.name != "-" else ""
    cwd = None
    shutdowns = []
    for line, record in src.records():
        if not isinstance(record, Mapping):
            raise InputError("expected an object", source=src.name, line=line)
        data = record.get("data")
        if not isinstance(data, Mapping):
            continue
        if record.get("type") == "session.start":
            session = session or str(data.get("sessionId") or "")
            context = data.get("context")
            if isinstance(context, Mapping) and isinstance(context.get("cwd"), str):
                cwd = cwd or context["cwd"]
        if record.get("type") != "session.shutdown":
            continue
        metrics = data.get("modelMetrics")
        if not isinstance(metrics, Mapping):
            continue
        try:
            time = timestamp(record.get("timestamp"), field="timestamp", leniency=Leniency())
        except InputError as exc:
            raise exc.located(source=src.name, line=line) from None
        shutdowns.append((line, str(record.get("id", line)), time, dict(metrics)))
    return session or src.stem, cwd, shutdowns


def _shutdown_calls(shutdowns: list[tuple[int, str, float | None, dict[str, Any]]], where: str, notes: list[str],
                    leniency: Leniency) -> list[Call]:  # fmt: skip
    """Each model's usage between one shutdown and the one before it."""
    before: dict[str, Usage] = {}
    calls = []
    restarted = False
    for line, event, time, metrics in sorted(shutdowns, key=lambda s: (s[2] or 0.0, s[0])):
        for raw_model, metric in metrics.items():
            model = _model(str(raw_model))
            field = f"data.modelMetrics.{raw_model}.usage"
            try:
                usage = metric.get("usage") if isinstance(metric, Mapping) else None
                if not isinstance(usage, Mapping):
                    raise InputError("expected an object", field=field)
                total = _usage({k: usage.get(k) for k in _STATE_COUNTS}, _STATE_COUNTS, field)
            except InputError as exc:
                leniency.forgive(exc.located(source=where, line=line))
                continue
            previous = before.get(model, Usage(0, 0, 0))
            parts = (total.prompt - previous.prompt, total.cached - previous.cached, total.output - previous.output,
                     total.written - previous.written)  # fmt: skip
            if min(parts) < 0:  # totals started again on resuming
                restarted, added = True, total
            else:
                reasoning = None if total.reasoning is None else max(0, total.reasoning - (previous.reasoning or 0))
                added = Usage(prompt=parts[0], cached=min(parts[1], parts[0]), output=parts[2],
                              written=min(parts[3], parts[0] - min(parts[1], parts[0])),
                              reasoning=None if reasoning is None else min(reasoning, parts[2]))  # fmt: skip
            before[model] = total
            if added.prompt or added.output:
                calls.append(Call(messages=None, time=time, model=model, reported=added, line=line,
                                  id=f"{event}:{model}"))  # fmt: skip
    if restarted:
        notes.append("a shutdown's totals went down (a Copilot that starts them again on resuming): counted whole")
    return calls


def _spans(src: Source) -> list[Span]:
    """The export's spans and log records that carry usage."""
    found: list[Span] = []
    for line, record in src.records():
        if not isinstance(record, Mapping):
            raise InputError("expected an object", source=src.name, line=line)
        attributes = record.get("attributes")
        if not isinstance(attributes, Mapping):
            continue
        counts = {k: next((attributes[n] for n in names if attributes.get(n) is not None), None)
                  for k, names in _SPAN_COUNTS.items()}  # fmt: skip
        if counts["input"] is None and counts["output"] is None:
            continue
        operation, name, event = attributes.get("gen_ai.operation.name"), record.get("name"), attributes.get(
            "event.name")  # fmt: skip
        if record.get("type") == "span" or "spanId" in record:
            kind = 4 if operation == "chat" or str(name).startswith("chat ") else 1 if operation == "invoke_agent" \
                else 0  # fmt: skip
            named = "endTime" if record.get("endTime") else "startTime"
        else:
            kind = {"gen_ai.client.inference.operation.details": 3, "copilot_chat.agent.turn": 2}.get(str(event), 0)
            named = "hrTime"
        if kind == 0:
            continue
        try:
            time = _hr_time(record.get(named), named)
        except InputError as exc:  # said where the span is read, as the read's leniency has it
            time, counts = None, {**counts, "time": exc.located(source=src.name, line=line)}
        context = record.get("spanContext")
        trace = record.get("traceId") or (context.get("traceId") if isinstance(context, Mapping) else None)
        session = next((str(attributes[k]) for k in _SESSION if attributes.get(k)), None) or str(trace or "")
        model = attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model")
        response = attributes.get("gen_ai.response.id")
        found.append((session, kind, str(trace) if trace else None, str(response) if response else None,
                      _model(str(model)) if model else None, time, line,
                      {"at": "attributes", **counts}))  # fmt: skip
    return found


def _hr_time(moment: Any, field: str) -> float | None:
    """An OpenTelemetry `[seconds, nanoseconds]` time as Unix seconds; one that is no date is an error."""
    if isinstance(moment, list) and len(moment) == 2 and all(isinstance(n, int) for n in moment):
        return timestamp(moment[0] * 10**9 + moment[1], field=field, per_second=10**9, leniency=STRICT)
    return None


def _best(spans: list[tuple[str, Span]]) -> list[tuple[str, Span]]:
    """The spans that count: of those sharing a trace or a response id, the best kind only; a response exported
    twice with the same counts, once."""
    best: dict[str, int] = {}
    for _, span in spans:
        for key in (f"trace:{span[2]}" if span[2] else None, f"response:{span[3]}" if span[3] else None):
            if key:
                best[key] = max(best.get(key, 0), span[1])
    kept, seen = [], set()
    for file, span in spans:
        keys = [k for k in (f"trace:{span[2]}" if span[2] else None, f"response:{span[3]}" if span[3] else None) if k]
        if any(best[k] > span[1] for k in keys):
            continue
        again = (span[3], span[4], tuple(sorted((k, as_text(v)) for k, v in span[7].items()))) if span[3] else None
        if again in seen:
            continue
        if again is not None:
            seen.add(again)
        kept.append((file, span))
    return kept


def _span_calls(spans: list[Span], where: str, leniency: Leniency) -> list[Call]:
    calls = []
    for _, _, _, response, model, time, line, counts in spans:
        try:
            if isinstance(counts.get("time"), InputError):
                raise counts["time"]
            usage = _usage({k: counts[k] for k in _SPAN_COUNTS}, tuple(_SPAN_COUNTS), "attributes")
        except InputError as exc:
            leniency.forgive(exc.located(source=where, line=line))
            continue
        if usage.prompt or usage.output:
            calls.append(Call(messages=None, time=time, model=model, reported=usage, line=line, id=response))
    return calls


def _usage(counts: Mapping[str, Any], names: tuple[str, ...], where: str) -> Usage:
    """Counts named (prompt, read, written, output, reasoning) as a `Usage`: the reads and writes inside the
    prompt, the reasoning inside the output."""
    prompt, read, written, output, reasoning = (_count(counts[n], f"{where}.{n}") for n in names)
    cached = min(read, prompt)
    return Usage(prompt=prompt, cached=cached, output=output, written=min(written, prompt - cached),
                 reasoning=None if counts[names[4]] is None else min(reasoning, output))  # fmt: skip


def _count(value: Any, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InputError(f"expected a whole number of tokens >= 0, got {as_text(value, 40)!r}", field=field)
    return value
