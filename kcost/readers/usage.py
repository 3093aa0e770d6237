"""One parser for the usage records of every provider and agent log kcost reads, under each one's field names.

The providers' API wire schemes are theirs (`kcost.pricing.providers.wire`, which each provider module points at):
`openai` (Kimi, OpenAI, DeepSeek's chat completions) and `anthropic` (Claude Code logs Anthropic's). The agent logs'
own schemes are here:

- `kimi-cli`: prompt = `input_other + input_cache_read + input_cache_creation`; cached = `input_cache_read`;
  written = `input_cache_creation`; output = `output`.
- `kimi-code`: the same in camelCase (`inputOther`, `inputCacheRead`, `inputCacheCreation`, `output`).
- `codex`: prompt = `input_tokens` (cached and written included); cached = `cached_input_tokens`; written =
  `cache_write_input_tokens` (Codex 0.145.0 on, from the Responses API's `cache_write_tokens`: the `TokenUsage` of
  `codex-rs/protocol/src/protocol.rs`); output = `output_tokens`; reasoning = `reasoning_output_tokens` (of the
  output, as Codex prints `output (reasoning n)`).

Where a scheme names the writes kept an hour (`anthropic`: `cache_creation.ephemeral_1h_input_tokens`), their
count is `Usage.written_1h` (at most the writes; absent: None, the log does not say). Output counts include
reasoning in every scheme. Every count must be a whole number from 0 to `MAX_COUNT`: a
count past a thousand context windows is a broken log, not a bill.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from typing import Any

from kcost.errors import STRICT, InputError, Leniency
from kcost.model.bounds import MAX_TOKENS
from kcost.model.calls import Usage
from kcost.pricing import providers
from kcost.pricing.providers.base import UsageFields

Scheme = str  # a provider's wire scheme (`kcost.pricing.providers.wire`) or an agent log's (`READER_SCHEMES`)
MAX_COUNT = MAX_TOKENS

# The agent logs' own schemes: how each reader's format counts.
READER_SCHEMES: tuple[UsageFields, ...] = (
    UsageFields(
        scheme="kimi-cli",
        layout="flat",
        prompt=("input_other", "input_cache_read", "input_cache_creation"),
        cached=("input_cache_read",),
        written="input_cache_creation",
        output="output",
    ),
    UsageFields(
        scheme="kimi-code",
        layout="flat",
        prompt=("inputOther", "inputCacheRead", "inputCacheCreation"),
        cached=("inputCacheRead",),
        written="inputCacheCreation",
        output="output",
    ),
    UsageFields(
        scheme="codex",
        layout="flat",
        prompt=("input_tokens",),
        cached=("cached_input_tokens",),
        output="output_tokens",
        written="cache_write_input_tokens",
        reasoning="reasoning_output_tokens",
        optional=frozenset({"cached_input_tokens", "cache_write_input_tokens", "reasoning_output_tokens"}),
    ),
)


@lru_cache(maxsize=1)
def schemes() -> dict[str, UsageFields]:
    """Every scheme `parse_usage` takes, by name: the providers' and the agent logs'."""
    return providers.usage_schemes() | {f.scheme: f for f in READER_SCHEMES}


def parse_usage(raw: Any, scheme: Scheme, *, where: str = "usage", leniency: Leniency = STRICT) -> Usage | None:
    """`raw` as a `Usage`; an `InputError` naming the field (`where.name`) when a count is missing or bad (None:
    a lenient read skipped it; strict unless `leniency` says otherwise)."""
    try:
        return _parse_usage(raw, scheme, where)
    except InputError as exc:
        leniency.forgive(exc)
        return None


def _parse_usage(raw: Any, scheme: Scheme, where: str) -> Usage:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise InputError(f"expected an object, got {type(raw).__name__}", field=where)
    fields = schemes()[scheme]
    if fields.layout == "chat":
        return _chat(raw, fields, where)
    usage = _flat_at_once(raw, fields, where, _plan(scheme))
    return usage if usage is not None else _flat(raw, fields, where)


def _hour(raw: Mapping[str, Any], fields: UsageFields, where: str, written: int) -> int | None:
    """Of a record's `written` tokens those kept an hour, where its scheme and the record hold the count (None:
    it does not say)."""
    path = fields.written_1h
    found = _dig(raw, path) if path else None
    if found is None:
        return None
    if type(found) is int and 0 <= found <= MAX_COUNT:  # the common case, checked at once
        return found if found < written else written
    return min(_checked(found, f"{where}.{path}"), written)


def _flat_at_once(raw: Mapping[str, Any], fields: UsageFields, where: str, plan: _Plan | None) -> Usage | None:
    """The common case of a flat usage record, checked at once: every count a whole number in range, the cached
    one among the summed, no reasoning count. None when it is not that case (or a count is bad): `_flat` says."""
    if plan is None:
        return None
    summed, cached_name, written_name, output_name = plan
    get: Callable[[str], Any] = raw.get
    prompt = 0
    for name in summed:
        n = get(name)
        if type(n) is not int or n < 0:
            return None
        prompt += n
    output = get(output_name)
    if type(output) is not int or output < 0 or prompt > MAX_COUNT or output > MAX_COUNT:
        return None
    written: int = get(written_name) if written_name else 0  # among the summed: checked
    hours = _hour(raw, fields, where, written) if fields.written_1h else None
    return Usage(prompt=prompt, cached=get(cached_name), output=output, written=written, written_1h=hours)


# What `_flat_at_once` reads of a scheme's records: the summed counts, the cached, written and output ones.
_Plan = tuple[tuple[str, ...], str, str | None, str]


@cache
def _plan(scheme: Scheme) -> _Plan | None:
    """What `_flat_at_once` reads of the scheme's records, once a scheme (by name: hashing its fields each record
    costs more than reading it); None where its records are never the common case."""
    fields = schemes()[scheme]
    summed, (cached_name,), written_name = fields.prompt, fields.cached, fields.written
    if fields.reasoning is not None or cached_name not in summed or written_name not in (None, *summed):
        return None
    return summed, cached_name, written_name, fields.output


def _flat(raw: Mapping[str, Any], fields: UsageFields, where: str) -> Usage:
    """A flat usage record, each count checked and named when bad: the prompt the sum of its parts."""
    summed, (cached_name,), written_name, output_name = fields.prompt, fields.cached, fields.written, fields.output
    values = {name: _count(raw, name, where, name in fields.optional) for name in (*summed, output_name)}
    cached = values[cached_name] if cached_name in values else _count(raw, cached_name, where, True)
    prompt = sum(values[name] for name in summed)
    if cached > prompt:
        raise InputError(f"cached tokens ({cached}) exceed the prompt ({prompt})", field=f"{where}.{cached_name}")
    reasoning_name = fields.reasoning
    reasoning = _count(raw, reasoning_name, where, True, absent=None) if reasoning_name else None
    written = values.get(written_name or "", 0)
    if written_name and written_name not in values:  # a part of the prompt's count, as the cached one is
        written = _count(raw, written_name, where, written_name in fields.optional)
        if cached + written > prompt:
            raise InputError(f"cached ({cached}) and written ({written}) tokens exceed the prompt ({prompt})",
                             field=f"{where}.{written_name}")  # fmt: skip
    return Usage(
        prompt=_bounded(prompt, where),
        cached=cached,
        output=values[output_name],
        written=written,
        reasoning=reasoning if reasoning is None else min(reasoning, values[output_name]),
        written_1h=_hour(raw, fields, where, written),
    )


def _chat(raw: Mapping[str, Any], fields: UsageFields, where: str) -> Usage:
    """A chat-completions usage record: the cached count in the first of its places that has one."""
    cached_raw, cached_at = None, f"{where}.{fields.cached[0]}"
    for path in fields.cached:
        cached_raw = _dig(raw, path)
        if cached_raw is not None:
            cached_at = f"{where}.{path}"
            break
    (prompt_name,) = fields.prompt
    prompt = _count(raw, prompt_name, where, prompt_name in fields.optional)
    output = _count(raw, fields.output, where, fields.output in fields.optional)
    cached = 0 if cached_raw is None else _checked(cached_raw, cached_at)
    if cached > prompt:
        raise InputError(f"cached tokens ({cached}) exceed prompt tokens ({prompt})", field=cached_at)
    reasoning = None
    found = _dig(raw, fields.reasoning) if fields.reasoning else None
    if fields.reasoning and found is not None:
        # a bad count names the object it is in (`usage.completion_tokens_details`), as it always has
        reasoning = min(_checked(found, f"{where}.{fields.reasoning.rpartition('.')[0]}"), output)
    return Usage(prompt=prompt, cached=cached, output=output, reasoning=reasoning)


def _dig(raw: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path, None where it or an object on the way is absent."""
    value: Any = raw
    for key in _keys(path):
        if type(value) is not dict and not isinstance(value, Mapping):  # parsed JSON: a dict, told at once
            return None
        value = value.get(key)
    return value


@cache
def _keys(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def _count(raw: Mapping[str, Any], name: str, where: str, optional: bool, absent: int | None = 0) -> Any:
    value = raw.get(name)
    if value is None:
        if optional:
            return absent
        raise InputError("missing", field=f"{where}.{name}")
    return _checked(value, f"{where}.{name}")


def _checked(value: Any, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise InputError(f"a token count cannot be negative, got {_show(value)}", field=field)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"expected a whole number >= 0, got {_show(value)}", field=field)
    return _bounded(value, field)


def _bounded(value: int, field: str) -> int:
    if value > MAX_COUNT:
        raise InputError(f"{value:.3g} tokens is past any context window (at most {MAX_COUNT:,})", field=field)
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"


def difference(now: Usage, before: Usage, *, where: str, leniency: Leniency) -> Usage | None:
    """What a running total added since the previous one; a total that went down is an error (None: a lenient
    read skipped it)."""
    parts = (now.prompt - before.prompt, now.cached - before.cached, now.output - before.output,
             now.written - before.written)  # fmt: skip
    if min(parts) < 0:
        leniency.forgive(InputError("a running total went down", field=where))
        return None
    reasoning = None
    if now.reasoning is not None:
        reasoning = min(max(0, now.reasoning - (before.reasoning or 0)), parts[2])
    cached = min(parts[1], parts[0])
    return Usage(prompt=parts[0], cached=cached, output=parts[2], written=min(parts[3], parts[0] - cached),
                 reasoning=reasoning)  # fmt: skip


# The schemes of the agent logs read since (each reader's module says where the agent's source defines them):
#
# - `opencode`: a message's `tokens` with its `cache` object read as `cache.read` and `cache.write`: prompt =
#   `input + cache.read + cache.write` (OpenCode's `input` is what neither read nor wrote the cache); cached =
#   `cache.read`; written = `cache.write`; output = `output` as the reader gives it (reasoning included: the reader
#   adds `reasoning` where OpenCode logged it apart); reasoning = `reasoning`.
# - `gemini-cli`: a chat message's `tokens`: prompt = `input + tool` (`input` holds the cached tokens); cached =
#   `cached`; output = `output` as the reader gives it (`thoughts` added); reasoning = `thoughts`.
# - `qwen-code`: a record's `usageMetadata`: prompt = `promptTokenCount` (cached included); cached =
#   `cachedContentTokenCount`; output = `candidatesTokenCount` (thoughts included); reasoning =
#   `thoughtsTokenCount`. A count the API left out (zero) is absent.
READER_SCHEMES = (
    *READER_SCHEMES,
    UsageFields(
        scheme="opencode",
        layout="flat",
        prompt=("input", "cache.read", "cache.write"),
        cached=("cache.read",),
        written="cache.write",
        output="output",
        reasoning="reasoning",
        optional=frozenset({"cache.read", "cache.write", "reasoning"}),
    ),
    UsageFields(
        scheme="gemini-cli",
        layout="flat",
        prompt=("input", "tool"),
        cached=("cached",),
        output="output",
        reasoning="thoughts",
        optional=frozenset({"cached", "tool", "thoughts"}),
    ),
    UsageFields(
        scheme="qwen-code",
        layout="flat",
        prompt=("promptTokenCount",),
        cached=("cachedContentTokenCount",),
        output="candidatesTokenCount",
        reasoning="thoughtsTokenCount",
        optional=frozenset(
            {"promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount"}
        ),  # fmt: skip
    ),
)
