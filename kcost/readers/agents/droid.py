"""Factory's Droid sessions (`~/.factory/sessions/<cwd slug>/<session>.settings.json`): what they cost, as logged.

Droid is closed source; its files are known from the readers that bill it: ccusage (ryoppippi/ccusage
`rust/crates/ccusage/src/adapter/droid/`: `paths.rs`, `parser.rs`, `loader.rs`), tokscale (junhoyeo/tokscale
`crates/tokscale-core/src/sessions/droid.rs`) and RunMaestro/Maestro (`src/main/storage/
factory-droid-session-storage.ts`, "verified against Factory Droid session files"). Droid keeps two files a
session in a folder named after its working directory (`/home/dev/api` -> `-home-dev-api`): `<session>.jsonl`, the
transcript (a `session_start` line with `cwd`, then the messages in Anthropic's block shape, with no usage), and
`<session>.settings.json`, the session's settings and its `tokenUsage`. ccusage looks in `~/.factory/sessions`, or
in the folders its own `DROID_SESSIONS_DIR` names (Droid has no variable of its own); kcost looks where ccusage does.

`tokenUsage` is one running total for the whole session, rewritten in place as tokens are spent (tokscale's
`resolve_usage_timestamp`; aovestdipaperino/tokensave#352): nothing logs a call's usage, so a session is billed as
reported, as one call. Its counts: `inputTokens` is what neither read nor wrote the cache (real files hold more
`cacheReadTokens` than `inputTokens`: xiufengsun/TokenTracker#204), so the prompt is `inputTokens +
cacheReadTokens + cacheCreationTokens`, the cached tokens `cacheReadTokens`, the writes `cacheCreationTokens` and
the output `outputTokens`. `thinkingTokens` is taken to be of the output, as every provider Droid calls counts its
reasoning (Anthropic's `output_tokens`, OpenAI's `completion_tokens`); Droid's source would say, and is closed:
ccusage 20.0.24 adds it to the output's cost (not to its `outputTokens`). `inclusiveTokenUsage` (newer files)
adds the session's sub-agents, whose own settings files are read as sessions of their own: it is not read.

The session's model is `model` (`custom:<name>` for a model the user brought), named as ccusage names it
(`normalize_droid_model_name`); where the file has none, the `Model: ...` line the transcript's first message
carries. Its time is `providerLockTimestamp` (when its provider was first locked: the session's start), as
ccusage dates it, else the file's modification time. A session found twice (a copy under another folder) is
counted once: the copy with the largest counts (ccusage keeps the path that sorts last).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Usage, timestamp
from kcost.model.frozen import frozen
from kcost.readers.agents.amp import anthropic_usage
from kcost.readers.registry import Part, Reader
from kcost.readers.source import Source, open_source

SETTINGS = ".settings.json"
DROID = {  # Droid's counts under the names of Anthropic's API
    "inputTokens": "input_tokens",
    "cacheCreationTokens": "cache_creation_input_tokens",
    "cacheReadTokens": "cache_read_input_tokens",
    "outputTokens": "output_tokens",
}
_SETTINGS_KEYS = {"providerLock", "providerLockTimestamp", "autonomyMode", "assistantActiveTimeMs", "reasoningEffort"}
_MODEL_LINE = re.compile(r"^Model: *(.+)$", re.M)
_MODEL_LINES = 500  # how far into the transcript ccusage looks for the model


@frozen
class Snapshot:
    """What `claim` reads of a settings file: the session it totals and how much (to keep the largest copy)."""

    session: str
    spent: int


def session_of(name: str) -> str:
    """The session a settings file totals: its name without `.settings.json`."""
    return Path(name).name.removesuffix(SETTINGS)


def is_transcript(first: Any) -> bool:
    """A Droid transcript's first line: `session_start` with the fields only Droid writes there."""
    return (isinstance(first, Mapping) and first.get("type") == "session_start" and isinstance(first.get("id"), str)
            and bool(first.keys() & {"sessionTitle", "owner", "cwd"}))  # fmt: skip


class Droid(Reader):
    name = "droid"
    one_call = "a session: its `.settings.json`'s running total (no call's usage is logged)"
    usage_read = (
        "`tokenUsage.inputTokens + cacheReadTokens + cacheCreationTokens` (the first holds neither), "
        "`outputTokens` (taken to hold `thinkingTokens`)"
    )
    source_read = "ccusage's `adapter/droid`, tokscale's `sessions/droid.rs`, Maestro's reader (Droid is closed source)"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def recognise(self, source: Source) -> bool:
        """A settings file (`<session>.settings.json` holding `tokenUsage`), or a transcript beside one."""
        first = source.first_record
        if source.name.endswith(SETTINGS):
            return isinstance(first, Mapping) and isinstance(first.get("tokenUsage"), Mapping) and bool(
                first.keys() & (_SETTINGS_KEYS | {"model"}))  # fmt: skip
        return is_transcript(first)

    def claim(self, unit: Source | Path, *, prompts: bool = True) -> Source | Path | Part | list[Any]:
        """A settings file: a part of its session (found once, or in several copies); a transcript: nothing (its
        session's counts are in the settings file beside it)."""
        assert isinstance(unit, Source)
        if not unit.name.endswith(SETTINGS):
            return []
        settings = _settings(unit)
        usage = settings.get("tokenUsage")
        counts = [v for v in usage.values() if type(v) is int] if isinstance(usage, Mapping) else []
        return Part(unit, Snapshot(session_of(unit.name), sum(counts)))

    def join(self, parts: list[Part]) -> list[list[Part]]:
        """Each session's copies together, the one with the largest counts first (the first found where equal)."""
        sessions: dict[str, list[Part]] = {}
        for part in parts:
            sessions.setdefault(part.parsed.session, []).append(part)
        return [sorted(copies, key=lambda p: -p.parsed.spent) for copies in sessions.values()]

    def read_parts(
        self, parts: list[Part], notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if len(parts) > 1:
            notes.append(f"found in {len(parts)} copies, counted once: {parts[0].source.name}, the largest")
        return self.read(parts[0].source, notes, prompts=prompts, leniency=leniency)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        if not unit.name.endswith(SETTINGS):
            raise InputError("a Droid transcript logs no usage: give its session's .settings.json", source=unit.name)
        settings = _settings(unit)
        try:
            usage = anthropic_usage(settings.get("tokenUsage"), DROID, where="tokenUsage", leniency=leniency)
            time = timestamp(settings.get("providerLockTimestamp"), field="providerLockTimestamp", leniency=leniency)
            thinking = _thinking(settings.get("tokenUsage"), leniency)
        except InputError as exc:
            raise exc.located(source=unit.name) from None
        if usage is None or usage.empty:
            return
        if thinking:
            usage = Usage(prompt=usage.prompt, cached=usage.cached, output=usage.output, written=usage.written,
                          reasoning=min(thinking, usage.output))  # fmt: skip
        if time is None:
            time = _modified(unit)
        notes.append("Droid logs one running total a session (tokenUsage): one call, dated at the session's start")
        model = settings.get("model")
        yield Call(
            messages=None,
            time=time,
            model=normalized(model) if isinstance(model, str) and model else _transcript_model(unit),
            reported=usage,
            id=session_of(unit.name),
        )

    def session_name(self, unit: Source | Path) -> str:
        return session_of(unit.name) if isinstance(unit, Source) else unit.name

    def project(self, unit: Source | Path) -> str | None:
        """The working directory the transcript beside the settings file starts with (`session_start.cwd`)."""
        first = _transcript_first(unit)
        cwd = first.get("cwd") if isinstance(first, Mapping) else None
        return cwd if isinstance(cwd, str) and cwd else None


def _settings(unit: Source) -> Mapping[str, Any]:
    settings = unit.first_record
    if not isinstance(settings, Mapping):
        raise InputError("expected an object", source=unit.name)
    return settings


def _thinking(raw: Any, leniency: Leniency) -> int | None:
    value = raw.get("thinkingTokens") if isinstance(raw, Mapping) else None
    if value is None:
        return None
    if type(value) is not int or value < 0:
        leniency.forgive(InputError(f"expected a whole number >= 0, got {value!r}"[:80],
                                    field="tokenUsage.thinkingTokens"))  # fmt: skip
        return None
    return value


def normalized(model: str) -> str:
    """A Droid model's name as ccusage names it (`normalize_droid_model_name`): `custom:` and `[...]` dropped,
    lower case, dots and spaces as dashes, one dash at a time (`custom:Claude-Opus-4.5-Thinking-[Anthropic]-0`
    -> `claude-opus-4-5-thinking-0`)."""
    name = re.sub(r"\[[^\]]*\]", "", model.removeprefix("custom:")).lower()
    name = re.sub(r"[.\s]", "-", name)
    return re.sub(r"-{2,}", "-", name).strip("-")


def _transcript(unit: Source | Path) -> Path | None:
    if not isinstance(unit, Source) or not unit.name.endswith(SETTINGS):
        return None
    path = Path(unit.path)
    sibling = path.with_name(path.name.removesuffix(SETTINGS) + ".jsonl")
    return sibling if sibling.is_file() else None


def _transcript_first(unit: Source | Path) -> Any:
    sibling = _transcript(unit)
    if sibling is None:
        return None
    try:
        return open_source(str(sibling)).first_record
    except InputError:
        return None


def _transcript_model(unit: Source) -> str | None:
    """The model the transcript's first lines name (`Model: ...` in the first message's system reminder)."""
    sibling = _transcript(unit)
    if sibling is None:
        return None
    try:
        for line, record in open_source(str(sibling)).records():
            if line > _MODEL_LINES:
                break
            message = record.get("message") if isinstance(record, Mapping) else None
            content = message.get("content") if isinstance(message, Mapping) else None
            for block in content if isinstance(content, list) else ():
                text = block.get("text") if isinstance(block, Mapping) else None
                found = _MODEL_LINE.search(text) if isinstance(text, str) else None
                if found:
                    return normalized(found.group(1).strip())
    except InputError:
        return None
    return None


def _modified(unit: Source) -> float | None:
    try:
        return Path(unit.path).stat().st_mtime
    except OSError:
        return None
