"""Grok Build CLI sessions (`~/.grok/sessions/<cwd>/<session>/updates.jsonl`): what each would cost on K3.

Grok Build (xAI's coding agent; closed source) keeps its state under `GROK_HOME`, else `~/.grok`: each session in
`sessions/<its working directory, URL-encoded>/<session id>/`, as `updates.jsonl` (the session's Agent Client
Protocol notifications, one a line: `{"method": "_x.ai/session/update", "timestamp": <Unix seconds>, "params":
{"sessionId", "update": {"sessionUpdate": <kind>, ...}, "_meta": {"eventId", "agentTimestampMs"}}}`) beside a
`summary.json` (`info.id`, `info.cwd`, `git_root_dir`, `current_model_id`). The layout, the fields and what they
mean are ccusage's (ccusage/ccusage `rust/adapters/grok/src/parser.rs`, `loader.rs`, `paths.rs`), which checked
them against xAI's list prices and Grok's own request log: only a `turn_completed` update carries usage, the sum
of the turn's model calls (not a running total), overall and per model (`modelUsage`): `inputTokens` holds the
cache reads (`cachedReadTokens`) and the writes (`cacheCreationTokens`, only ever seen 0), `outputTokens` holds
the reasoning (`reasoningTokens`; `totalTokens` = input + output) and `costUsdTicks` is the turn's cost in units of
1e-10 USD. So each turn is one call per model: prompt `inputTokens`, of which `cachedReadTokens` were read and
`cacheCreationTokens` written, output `outputTokens`, reasoning `reasoningTokens`. A turn without `modelUsage` is
the summary's `current_model_id`'s. A turn's calls are summed, so no prompt can be rebuilt call by call: each is
billed as reported. The same turn can be logged in two sessions (a forked or imported one): as ccusage does, a
turn's `eventId` (else its time and counts) and model count once in a run, in the first file by path. A turn
still running has no usage yet, and is billed once it completes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson

from kcost.errors import InputError, Leniency
from kcost.inputs.files import read_bytes
from kcost.model.calls import Call, Usage, timestamp
from kcost.readers.jsonl import as_text, dumps
from kcost.readers.registry import Part, Reader
from kcost.readers.source import Source
from kcost.readers.usage import MAX_COUNT

_METHODS = ("_x.ai/session/update", "session/update")
_COUNTS = ("inputTokens", "cachedReadTokens", "cacheCreationTokens", "outputTokens", "reasoningTokens")

# A turn's usage of one model as `claim` parses it: the key it counts once by, its line, model, time (the value,
# its field and its units a second) and its usage record as logged.
Turn = tuple[str, int, str, tuple[Any, str, int], dict[str, Any]]


def looks_like(first: Any) -> bool:
    """A session update notification of Grok's (the Agent Client Protocol's `session/update`)."""
    if not isinstance(first, Mapping) or first.get("method") not in _METHODS:
        return False
    params = first.get("params")
    update = params.get("update") if isinstance(params, Mapping) else None
    return isinstance(update, Mapping) and isinstance(update.get("sessionUpdate"), str)


def is_summary(first: Any) -> bool:
    """A session's `summary.json`: its `info` and its model."""
    return isinstance(first, Mapping) and isinstance(first.get("info"), Mapping) and "current_model_id" in first


class Grok(Reader):
    name = "grok"
    one_call = "a `turn_completed` update's usage of one model (the turn's calls summed)"
    usage_read = (
        "`inputTokens` (holds `cachedReadTokens` and `cacheCreationTokens`), `outputTokens` (holds `reasoningTokens`)"
    )
    source_read = "ccusage `rust/adapters/grok/src/parser.rs` (closed agent)"
    comparable = False  # xAI's cache: its hits say nothing of K3's

    def detect(self, first: Any) -> bool:
        return looks_like(first) or is_summary(first)

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Part | list[Any]:
        """The session's completed turns, parsed now: which another session logs too is known once the run's
        every session is. A session's `summary.json` is none (its updates are read with it)."""
        if not isinstance(unit, Source):
            raise InputError("not a Grok session: give its updates.jsonl", source=str(unit))
        if is_summary(unit.first_record):
            return []
        return Part(unit, _turns(unit))

    def join(self, parts: list[Part]) -> list[list[Part]]:
        """Each file a session of its own, a turn logged in several counted in the first (by path)."""
        seen: set[str] = set()
        out = []
        for part in sorted(parts, key=lambda p: p.source.name):
            turns, pending = part.parsed
            kept = [t for t in turns if t[0] not in seen]
            seen.update(t[0] for t in turns)
            out.append([Part(part.source, (kept, pending))])
        return out

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        notes.append("Grok logs each turn's usage summed over its model calls, not its prompts: one call per turn "
                     "and model, billed as reported")  # fmt: skip
        for part in parts:
            turns, pending = part.parsed
            if pending:
                notes.append("its last turn was still running: not billed")
            for key, line, model, (raw_time, field, per_second), usage in turns:
                try:
                    time = timestamp(raw_time, field=field, per_second=per_second, leniency=leniency)
                    reported = _usage(usage)
                except InputError as exc:
                    leniency.forgive(exc.located(source=part.source.name, line=line))
                    continue
                if not reported.empty:
                    yield Call(messages=None, time=time, model=model, reported=reported, line=line, id=key)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        claimed = self.claim(unit)
        return self.read_parts(claimed if isinstance(claimed, list) else [claimed], notes, prompts=prompts,
                               leniency=leniency)  # fmt: skip

    def reads_again(self, parts: list[Part]) -> bool:
        return False  # read from what `claim` parsed

    def session_name(self, unit: Source | Path) -> str:
        """The session's folder (its id)."""
        return Path(unit.name).parent.name or unit.stem if isinstance(unit, Source) else unit.name

    def project(self, unit: Source | Path) -> str | None:
        """The summary's working directory (`info.cwd`), else its `git_root_dir`, else the folder the session lies
        in, decoded."""
        if not isinstance(unit, Source) or unit.name == "-":
            return None
        summary = _summary(unit)
        info = summary.get("info")
        for found in (info.get("cwd") if isinstance(info, Mapping) else None, summary.get("git_root_dir")):
            if isinstance(found, str) and found:
                return found
        folder = Path(unit.name).parent.parent.name
        return unquote(folder) if folder and folder != "sessions" else None


def _summary(src: Source) -> Mapping[str, Any]:
    """The `summary.json` beside the session's updates, where there is one that reads."""
    try:  # through the one opener: a FIFO or a device named so is never opened
        summary = orjson.loads(read_bytes(Path(src.path).parent / "summary.json", "Grok session summary"))
    except (OSError, InputError, orjson.JSONDecodeError):
        return {}
    return summary if isinstance(summary, Mapping) else {}


def _turns(src: Source) -> tuple[list[Turn], bool]:
    """The completed turns, each model's usage once (by its key), and whether a turn was still running when the
    log ended (asked after its last completed one)."""
    model = None
    if src.name != "-":
        current = _summary(src).get("current_model_id")
        model = current if isinstance(current, str) and current else None
    turns: list[Turn] = []
    seen: set[str] = set()
    asked = False
    for line, record in src.records():
        if not isinstance(record, Mapping):
            raise InputError("expected an object", source=src.name, line=line)
        params = record.get("params")
        update = params.get("update") if isinstance(params, Mapping) else None
        if not isinstance(update, Mapping):
            continue
        kind = update.get("sessionUpdate")
        if kind == "user_message_chunk":
            asked = True
        if kind != "turn_completed" or not isinstance(update.get("usage"), Mapping):
            continue
        asked = False
        assert isinstance(params, Mapping)
        meta = params.get("_meta") if isinstance(params.get("_meta"), Mapping) else {}
        assert isinstance(meta, Mapping)
        event = meta.get("eventId")
        when = (meta["agentTimestampMs"], "params._meta.agentTimestampMs", 1000) if meta.get(
            "agentTimestampMs") is not None else (record.get("timestamp"), "timestamp", 1)  # fmt: skip
        usage = update["usage"]
        by_model = usage.get("modelUsage")
        entries = list(by_model.items()) if isinstance(by_model, Mapping) and by_model else [(model, usage)]
        for name, counts in entries:
            name = str(name).removeprefix("[grok] ") if name else "unknown"
            if not isinstance(counts, Mapping):
                raise InputError("expected an object", source=src.name, line=line,
                                 field=f"params.update.usage.modelUsage.{name}")  # fmt: skip
            if isinstance(event, str) and event:
                key = f"{event}|{name}"
            else:
                key = "|".join([str(params.get("sessionId")), dumps(when[0], ensure_ascii=True), name,
                                *(dumps(counts.get(c), ensure_ascii=True) for c in _COUNTS)])  # fmt: skip
            if key not in seen:
                seen.add(key)
                where = "params.update.usage" + (f".modelUsage.{name}" if counts is not usage else "")
                turns.append((key, line, name, when, {"at": where, **{c: counts.get(c) for c in _COUNTS}}))
    return turns, asked


def _usage(usage: Mapping[str, Any]) -> Usage:
    """A turn's usage of one model: the cache reads and writes inside `inputTokens`, the reasoning inside
    `outputTokens`."""
    where = usage["at"]
    prompt, read, written, output, reasoning = (_count(usage, c, where) for c in _COUNTS)
    cached = min(read, prompt)
    return Usage(prompt=prompt, cached=cached, output=output, written=min(written, prompt - cached),
                 reasoning=min(reasoning, output) if usage.get("reasoningTokens") is not None else None)  # fmt: skip


def _count(usage: Mapping[str, Any], name: str, where: str) -> int:
    value = usage.get(name)
    if value is None:
        if name in ("inputTokens", "outputTokens"):
            raise InputError("missing", field=f"{where}.{name}")
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InputError(f"expected a whole number of tokens >= 0, got {as_text(value, 40)!r}", field=f"{where}.{name}")
    return value
