"""Codebuff chats (`~/.config/manicode/projects/<project>/chats/<chat id>/chat-messages.json`): what they cost, as
logged.

Codebuff (CodebuffAI/codebuff, formerly Manicode) keeps its data in `~/.config/manicode` (`manicode-<env>` for its
dev and staging builds: `cli/src/utils/config-dir.ts`), a folder a chat under `projects/<basename of the project
root>/chats/<chat id>/` (`cli/src/project-files.ts`), the chat id its start time (`2026-01-02T03-04-05.000Z`).
`chat-messages.json` is the chat's `ChatMessage[]` (`cli/src/types/chat.ts`: `id`, `variant` `ai` | `user` |
`agent` | `error`, `content`, `blocks`, `timestamp`, `credits`, `metadata`), rewritten whole on each save
(`cli/src/utils/run-state-storage.ts`, `saveChatState`). Codebuff has no variable that moves it; ccusage's
`CODEBUFF_DATA_DIR` (a comma-separated list of channel folders or `projects` folders) does, and kcost looks where
ccusage does (`rust/crates/ccusage/src/adapter/codebuff/paths.rs`).

A run's reply (an `ai` or `agent` message) gets the credits it spent when the run ends (`credits`,
`cli/src/hooks/helpers/send-message.ts`, `handleRunCompletion`) and its run state; Codebuff logs no token counts of
its own. Where a reply holds usage it is one turn's, which may have taken several model calls and sub-agents:
billed as reported. kcost looks where ccusage 20.0.24 does (`parser.rs`), taking the first that holds one:
`metadata.usage`, `metadata.codebuff.usage`, then the last assistant entry of the run state's
`sessionState.mainAgentState.messageHistory` with `providerOptions.usage` or `providerOptions.codebuff.usage`
(ccusage fills the counts one place lacks from the next). Two shapes are met. Anthropic's, in camelCase
(`inputTokens`, `cacheReadInputTokens`, `cacheCreationInputTokens`, `outputTokens`): `inputTokens` is what
neither read nor wrote the cache, so the prompt is the three together. OpenAI's (`prompt_tokens`, or
`promptTokens`, with `prompt_tokens_details.cached_tokens`, and `completion_tokens`), as OpenRouter returns it:
`prompt_tokens` holds the cached tokens, so it is the prompt; ccusage 20.0.24 adds the cached tokens to it again.
A reply that logged credits only is not billed (said in the notes, with the credits). A reply's time is its
`timestamp` where that is a time, else the chat's start (its id). The system prompt and tools are not logged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Usage, timestamp
from kcost.pricing.providers import wire as providers_wire
from kcost.readers.agents.amp import anthropic_usage
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import parse_usage

FILE = "chat-messages.json"
_VARIANTS = {"ai", "user", "agent", "error"}
_REPLIES = {"ai", "agent"}
_CHAT_ID = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2}(?:\.\d+)?)Z")
ANTHROPIC = {  # Anthropic's counts in either case, under the names of Anthropic's API
    "inputTokens": "input_tokens",
    "input_tokens": "input_tokens",
    "cacheCreationInputTokens": "cache_creation_input_tokens",
    "cache_creation_input_tokens": "cache_creation_input_tokens",
    "cacheReadInputTokens": "cache_read_input_tokens",
    "cache_read_input_tokens": "cache_read_input_tokens",
    "outputTokens": "output_tokens",
    "output_tokens": "output_tokens",
}
_OPENAI_CAMEL = {"promptTokens": "prompt_tokens", "completionTokens": "completion_tokens"}


def looks_like(first: Any) -> bool:
    """A chat's messages: a list of objects each with a `variant` Codebuff's `ChatMessage` has."""
    return (isinstance(first, list) and bool(first)
            and all(isinstance(m, Mapping) and m.get("variant") in _VARIANTS for m in first))  # fmt: skip


class Codebuff(Reader):
    name = "codebuff"
    one_call = "a reply (`ai` or `agent` message) that logged usage: a turn's, however many calls it took"
    usage_read = (
        "Anthropic's shape: `inputTokens + cacheReadInputTokens + cacheCreationInputTokens`, `outputTokens`; "
        "OpenAI's: `prompt_tokens` (holds `prompt_tokens_details.cached_tokens`), `completion_tokens`"
    )
    source_read = "CodebuffAI/codebuff `cli/src/types/chat.ts`, `send-message.ts`; ccusage's `adapter/codebuff`"
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's
    suffixes = (".json",)

    def recognise(self, source: Source) -> bool:
        return Path(source.name).name == FILE and looks_like(source.first_record)

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        assert isinstance(unit, Source)
        chat = unit.first_record
        if not isinstance(chat, list):
            raise InputError("not a Codebuff chat: expected a list of messages", source=unit.name)
        return read_calls(chat, unit.name, _chat_start(unit.name), notes, leniency=leniency)

    def session_name(self, unit: Source | Path) -> str:
        """The chat's id: its folder's name."""
        return Path(unit.name).parent.name if isinstance(unit, Source) else unit.name

    def project(self, unit: Source | Path) -> str | None:
        """The project the chat was in, as Codebuff names its folder: the project root's last name."""
        if not isinstance(unit, Source):
            return None
        path = Path(unit.name)
        return path.parents[2].name if len(path.parents) > 3 and path.parents[1].name == "chats" else None


def _chat_start(name: str) -> float | None:
    """The chat's start, from its id (`2026-01-02T03-04-05.000Z`)."""
    found = _CHAT_ID.fullmatch(Path(name).parent.name)
    if found is None:
        return None
    day, hour, minute, second = found.groups()
    return timestamp(f"{day}T{hour}:{minute}:{second}Z", field="chat id", leniency=Leniency(True))


def read_calls(
    chat: list[Any], source: str, start: float | None, notes: list[str], *, leniency: Leniency
) -> Iterator[Call]:
    """One call per reply that logged usage, in the chat's order."""
    credits_only, credits, billed = 0, 0.0, 0
    for n, message in enumerate(chat):
        at = f"[{n}]"
        if not isinstance(message, Mapping):
            raise InputError("expected an object", source=source, field=at)
        if message.get("variant") not in _REPLIES:
            continue
        found = _usage_of(message)
        spent = message.get("credits")
        if found is None:
            if isinstance(spent, (int, float)) and not isinstance(spent, bool) and spent > 0:
                credits_only, credits = credits_only + 1, credits + spent
            continue
        raw, where, model = found
        try:
            usage = _usage(raw, f"{at}.{where}", leniency)
        except InputError as exc:
            raise exc.located(source=source) from None
        if usage is None or usage.empty:
            continue
        billed += 1
        yield Call(messages=None, time=_time(message, start), model=model, reported=usage,
                   id=str(message.get("id", n)))  # fmt: skip
    if credits_only:
        notes.append(f"{credits_only} repl{'y' if credits_only == 1 else 'ies'} logged only the credits spent "
                     f"({credits:g}), no tokens: not billed")  # fmt: skip
    if billed:
        notes.append("Codebuff logs a turn's usage, not each call's: billed as reported")


def _usage_of(message: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str | None] | None:
    """Where a reply's usage is (the first place that holds one), where that is, and its model."""
    metadata = message.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    model = metadata.get("model")
    named = model if isinstance(model, str) and model else None
    codebuff = metadata.get("codebuff")
    for raw, where in (
        (metadata.get("usage"), "metadata.usage"),
        (codebuff.get("usage") if isinstance(codebuff, Mapping) else None, "metadata.codebuff.usage"),
    ):
        if isinstance(raw, Mapping):
            own = raw.get("model")
            return raw, where, named or (own if isinstance(own, str) and own else None)
    state = _dig(metadata, "runState", "sessionState", "mainAgentState")
    history = state.get("messageHistory") if isinstance(state, Mapping) else None
    if not isinstance(history, list):
        return None
    for n in range(len(history) - 1, -1, -1):
        entry = history[n]
        options = entry.get("providerOptions") if isinstance(entry, Mapping) else None
        if not isinstance(options, Mapping) or entry.get("role") != "assistant":
            continue
        inner = options.get("codebuff")
        for raw, where in ((options.get("usage"), "providerOptions.usage"),
                           (inner.get("usage") if isinstance(inner, Mapping) else None,
                            "providerOptions.codebuff.usage")):  # fmt: skip
            if isinstance(raw, Mapping):
                own = inner.get("model") if isinstance(inner, Mapping) else None
                path = f"metadata.runState.sessionState.mainAgentState.messageHistory[{n}].{where}"
                return raw, path, named or (own if isinstance(own, str) and own else None)
    return None


def _dig(raw: Mapping[str, Any], *keys: str) -> Any:
    value: Any = raw
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _usage(raw: Mapping[str, Any], where: str, leniency: Leniency) -> Usage | None:
    """A usage record of either shape as a `Usage`: OpenAI's (the prompt holds the cached tokens), else
    Anthropic's (the cache's counts beside the input)."""
    if "prompt_tokens" in raw or "promptTokens" in raw:
        wire = {_OPENAI_CAMEL.get(k, k): v for k, v in raw.items() if k != "promptTokensDetails"}
        details = raw.get("promptTokensDetails")
        if isinstance(details, Mapping) and "cachedTokens" in details and "prompt_tokens_details" not in raw:
            wire["prompt_tokens_details"] = {"cached_tokens": details["cachedTokens"]}
        return parse_usage(wire, providers_wire.OPENAI.scheme, where=where, leniency=leniency)
    return anthropic_usage(raw, ANTHROPIC, where=where, leniency=leniency)


def _time(message: Mapping[str, Any], start: float | None) -> float | None:
    """The reply's own time where it logged one that is a time, else the chat's start."""
    for key in ("timestamp", "createdAt"):
        try:
            time = timestamp(message.get(key), field=key, leniency=Leniency(False))
        except InputError:
            continue
        if time is not None:
            return time
    return start
