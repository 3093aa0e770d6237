"""One parser for the usage records of every provider kcost reads, under each one's field names.

- `openai` (Kimi, OpenAI, DeepSeek): prompt = `prompt_tokens` (cached included); cached = `cached_tokens` (Kimi,
  top level), else `prompt_tokens_details.cached_tokens`, else `prompt_cache_hit_tokens`; output =
  `completion_tokens`; reasoning = `completion_tokens_details.reasoning_tokens`.
- `anthropic` (Claude Code): prompt = `input_tokens + cache_creation_input_tokens + cache_read_input_tokens`;
  cached = `cache_read_input_tokens`; written = `cache_creation_input_tokens`; output = `output_tokens`.
- `kimi-cli`: prompt = `input_other + input_cache_read + input_cache_creation`; cached = `input_cache_read`;
  written = `input_cache_creation`; output = `output`.
- `kimi-code`: the same in camelCase (`inputOther`, `inputCacheRead`, `inputCacheCreation`, `output`).
- `codex`: prompt = `input_tokens` (cached included); cached = `cached_input_tokens`; output = `output_tokens`;
  reasoning = `reasoning_output_tokens`.

Output counts include reasoning in every scheme. Every count must be a whole number from 0 to `MAX_COUNT`: a
count past a thousand context windows is a broken log, not a bill.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from kcost.errors import InputError, Leniency
from kcost.options import MAX_TOKENS
from kcost.transcripts.calls import Usage

Scheme = Literal["openai", "anthropic", "kimi-cli", "kimi-code", "codex"]
MAX_COUNT = MAX_TOKENS

# scheme -> (fields summed into the prompt, the cached field, the written field, output, reasoning, optional)
_FIELDS: dict[str, tuple[tuple[str, ...], str | None, str | None, str, str | None, frozenset[str]]] = {
    "anthropic": (
        ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
        None,
        frozenset({"cache_creation_input_tokens", "cache_read_input_tokens"}),
    ),
    "kimi-cli": (
        ("input_other", "input_cache_read", "input_cache_creation"),
        "input_cache_read",
        "input_cache_creation",
        "output",
        None,
        frozenset(),
    ),
    "kimi-code": (
        ("inputOther", "inputCacheRead", "inputCacheCreation"),
        "inputCacheRead",
        "inputCacheCreation",
        "output",
        None,
        frozenset(),
    ),
    "codex": (
        ("input_tokens",),
        "cached_input_tokens",
        None,
        "output_tokens",
        "reasoning_output_tokens",
        frozenset({"cached_input_tokens", "reasoning_output_tokens"}),
    ),
}


def parse_usage(raw: Any, scheme: Scheme, *, where: str = "usage", leniency: Leniency) -> Usage | None:
    """`raw` as a `Usage`; an `InputError` naming the field (`where.name`) when a count is missing or bad (None:
    a lenient read skipped it)."""
    try:
        return _parse_usage(raw, scheme, where)
    except InputError as exc:
        leniency.forgive(exc)
        return None


def _parse_usage(raw: Any, scheme: Scheme, where: str) -> Usage:
    if not isinstance(raw, Mapping):
        raise InputError(f"expected an object, got {type(raw).__name__}", field=where)
    if scheme == "openai":
        return _openai(raw, where)
    summed, cached_name, written_name, output_name, reasoning_name, optional = _FIELDS[scheme]
    if scheme == "anthropic":  # the common case, checked at once
        fresh, written, read, output = (raw.get(k) for k in (*summed, output_name))
        if type(fresh) is type(written) is type(read) is type(output) is int and (
            min(fresh, written, read, output) >= 0 and fresh + written + read <= MAX_COUNT and output <= MAX_COUNT
        ):
            return Usage(prompt=fresh + written + read, cached=read, output=output, written=written)
    values = {name: _count(raw, name, where, name in optional) for name in (*summed, output_name)}
    cached = values[cached_name] if cached_name in values else _count(raw, cached_name or "", where, True)
    prompt = sum(values[name] for name in summed)
    if cached > prompt:
        raise InputError(f"cached tokens ({cached}) exceed the prompt ({prompt})", field=f"{where}.{cached_name}")
    reasoning = _count(raw, reasoning_name, where, True, absent=None) if reasoning_name else None
    return Usage(
        prompt=_bounded(prompt, where),
        cached=cached,
        output=values[output_name],
        written=values.get(written_name or "", 0),
        reasoning=reasoning if reasoning is None else min(reasoning, values[output_name]),
    )


def _openai(raw: Mapping[str, Any], where: str) -> Usage:
    details = raw.get("prompt_tokens_details")
    cached_at = f"{where}.cached_tokens"
    cached_raw = raw.get("cached_tokens")
    if cached_raw is None and isinstance(details, Mapping) and details.get("cached_tokens") is not None:
        cached_raw, cached_at = details["cached_tokens"], f"{where}.prompt_tokens_details.cached_tokens"
    if cached_raw is None and raw.get("prompt_cache_hit_tokens") is not None:
        cached_raw, cached_at = raw["prompt_cache_hit_tokens"], f"{where}.prompt_cache_hit_tokens"
    prompt = _count(raw, "prompt_tokens", where, False)
    output = _count(raw, "completion_tokens", where, True)
    cached = 0 if cached_raw is None else _checked(cached_raw, cached_at)
    if cached > prompt:
        raise InputError(f"cached tokens ({cached}) exceed prompt tokens ({prompt})", field=cached_at)
    out_details = raw.get("completion_tokens_details")
    reasoning = None
    if isinstance(out_details, Mapping) and out_details.get("reasoning_tokens") is not None:
        reasoning = min(_checked(out_details["reasoning_tokens"], f"{where}.completion_tokens_details"), output)
    return Usage(prompt=prompt, cached=cached, output=output, reasoning=reasoning)


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
    parts = (now.prompt - before.prompt, now.cached - before.cached, now.output - before.output)
    if min(parts) < 0:
        leniency.forgive(InputError("a running total went down", field=where))
        return None
    return Usage(prompt=parts[0], cached=min(parts[1], parts[0]), output=parts[2])
