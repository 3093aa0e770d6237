"""The types that cross module boundaries: turn specs in, sessions between reader and simulator, bills out.

Input models reject unknown fields (a typo must not silently change a bill); result models are frozen.
Money in bills is `Decimal`, written to JSON as an exact decimal string (`"0.1323456"`): never rounded, no
exponent, no trailing zeros. The only rounded figures are ratios: hit rates (6 decimals) and the blended input
price per million tokens (10 decimals, half-even).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from enum import Enum
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from kcost.cache.model import DURATION, parse_duration
from kcost.cache.simulator import Request
from kcost.errors import InputError
from kcost.options import MAX_REPEAT, MAX_TOKENS
from kcost.transcripts.calls import Usage

# ---- turn specs (input) ------------------------------------------------------------------------------


class PreviousOutput(str, Enum):
    FULL = "full"  # reasoning and content, as K3 requires
    CONTENT = "content"  # the reasoning dropped
    NONE = "none"  # nothing of the previous output


Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS, strict=True)]


class Turn(BaseModel):
    """One turn (or `repeat` identical turns) of a session."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    new: Tokens = Field(0, description="New input tokens this turn appends (the user message, tool results).")
    output: Tokens = Field(0, description="Tokens the model generates this turn, reasoning included.")
    reasoning: Tokens = Field(0, description="How many of the output tokens are reasoning (they come first).")
    previous_output: PreviousOutput = Field(
        PreviousOutput.FULL,
        description="What of the previous turn's output is sent back: full, content, none.",
    )
    keep: Tokens | None = Field(
        None,
        description="Keep only the first N tokens of what is carried over (the previous prompt and output): "
        "a truncation or compaction; everything after is dropped.",
    )
    edit_at: Tokens | None = Field(
        None,
        description="The carried-over tokens from this position on are changed (an edited or reordered "
        "message): same length, new to the cache.",
    )
    strip_reasoning: bool = Field(
        False,
        description="The harness removes reasoning from earlier assistant messages (K2-style history): the "
        "prompt changes at the first reasoning it carried, and everything after it is new to the cache.",
    )
    idle: Annotated[
        float,
        WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": DURATION}]}),
    ] = Field(0, description="Seconds idle before this turn, or a duration: 90s, 30m, 1.5h.")
    repeat: int = Field(1, ge=1, le=MAX_REPEAT, strict=True, description="Run this turn N times.")
    label: str | None = Field(None, description="A name for the turn, shown in the bill.")

    @field_validator("idle", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be seconds or a duration like 90s, 30m")
        if isinstance(value, (int, float, str)):
            try:
                seconds = parse_duration(value, field="idle")
            except InputError as exc:
                raise ValueError(exc.message) from None
            if seconds is None:
                raise ValueError("must be a finite duration")
            return seconds
        return value

    @field_validator("reasoning")
    @classmethod
    def _reasoning_in_output(cls, value: int, info: ValidationInfo) -> int:
        output = info.data.get("output", 0)
        if value > output:
            raise ValueError(f"reasoning ({value}) cannot exceed output ({output})")
        return value


class Prefix(BaseModel):
    """Tokens at the front of the first prompt: a system prompt, tools, a repository's context."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    tokens: Tokens = Field(description="Length of the prefix in tokens.")
    warm: bool = Field(
        False, description="Already cached when the session starts (sent by an earlier request, unbilled)."
    )


class SessionSpec(BaseModel):
    """A session as token counts per turn: kcost's turn-spec format (YAML, JSON, or JSONL with a header)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="kcost turn spec", defer_build=True)

    version: Literal[1] = Field(1, description="Turn-spec format version.")
    name: str | None = Field(None, description="Session name shown in the bill (default: the file name).")
    model: str | None = Field(None, description="Model to price at (default: the price table's default).")
    prefix: Prefix | None = None
    turns: list[Turn] = Field(min_length=1)


# ---- sessions (reader -> simulator) -----------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """What a reader hands on: requests for the simulator, and what the bill shows about them."""

    source: str
    name: str
    model: str | None
    requests: tuple[Request, ...]
    labels: tuple[str | None, ...]  # one per billed request
    warm_prefix: int = 0  # tokens cached before the first billed request
    model_line: int | None = None  # where the session names its model, for a price-lookup error
    reported: tuple[Usage | None, ...] = ()  # what the log says each billed request cost, where it says
    token_counts: str = "turn spec"  # where the token counts come from
    notes: tuple[str, ...] = ()  # what the reader skipped, guessed or could not check
    comparable: bool = True  # reported cache hits can be set beside simulated ones (a Kimi provider's, not another's)
    changes: tuple[tuple[str, str] | None, ...] = ()  # per request: (cause, detail) of how its prompt differs
    times: tuple[float | None, ...] = ()  # per billed request: when it was made (Unix seconds), where logged
    call_models: tuple[str | None, ...] = ()  # per billed request: the model the log names
    sized: tuple[int, int] = (0, 0)  # calls sized from their logged usage, calls sized by estimate

    @property
    def logged_models(self) -> tuple[str, ...]:
        """The models the log names, in order of first use."""
        return tuple(dict.fromkeys(m for m in self.call_models if m))

    @property
    def span(self) -> tuple[float | None, float | None]:
        """The first and last logged time."""
        when = [t for t in self.times if t is not None]
        return (min(when), max(when)) if when else (None, None)


# ---- bills (output) -----------------------------------------------------------------------------------


def iso_time(seconds: float | None) -> str | None:
    """Unix seconds as ISO 8601 in UTC, to the millisecond: `2026-02-10T21:11:59.186Z`."""
    if seconds is None:
        return None
    from datetime import datetime, timezone

    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def money_text(value: Decimal) -> str:
    """Exact decimal string: `1.212`, `60.6`, `0`, never `6E+1`."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


Money = Annotated[
    Decimal,
    PlainSerializer(money_text, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "pattern": r"^-?\d+(\.\d+)?$", "description": "USD, exact decimal"}),
]
BLENDED_PLACES = Decimal("1E-10")


def blended(cost: Decimal, tokens: int) -> Decimal:
    """USD per million input tokens, to 10 decimals."""
    if tokens == 0:
        return Decimal(0)
    return (cost * 1_000_000 / tokens).quantize(BLENDED_PLACES, rounding=ROUND_HALF_EVEN)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MissLine(_Frozen):
    reason: str = Field(description="Why these tokens missed (see README, 'Miss reasons').")
    tokens: int
    at: int = Field(description="Position of the first of these tokens in the prompt.")
    cost: Money = Field(description="What these tokens cost at the miss price.")


class Check(_Frozen):
    """A turn whose log reports usage, beside what the simulator found."""

    reported_input_tokens: int
    reported_cached_tokens: int
    simulated_cached_tokens: int
    agree: bool = Field(description="The simulator's cached tokens equal the reported ones.")


class Agreement(_Frozen):
    turns: int = Field(description="Turns with both reported and simulated cached tokens.")
    agree: int
    rate: float


class TurnBill(_Frozen):
    turn: int = Field(description="1-based turn number.")
    label: str | None
    input_tokens: int
    hit_tokens: int
    miss_tokens: int
    output_tokens: int
    hit_rate: float
    hit_cost: Money
    miss_cost: Money
    output_cost: Money
    total: Money
    cumulative: Money
    reason: str = Field(description="The costliest cause of this turn's misses, or new-input.")
    misses: list[MissLine]
    check: Check | None = Field(None, description="Reported vs simulated cached tokens, where the log has both.")
    time: str | None = Field(None, description="When the call was made (ISO 8601, UTC), where the log says.")
    logged_model: str | None = Field(None, description="The model the log names for this call.")


class ReasonTotal(_Frozen):
    tokens: int
    cost: Money


class Summary(_Frozen):
    turns: int
    input_tokens: int
    hit_tokens: int
    miss_tokens: int
    output_tokens: int
    hit_rate: float
    hit_cost: Money
    miss_cost: Money
    input_cost: Money
    output_cost: Money
    total: Money
    blended_input_per_mtok: Money = Field(description="Input cost per million input tokens, 10 decimals.")
    uncached_total: Money = Field(description="The same tokens with every input token a miss.")
    saved: Money = Field(description="uncached_total - total.")
    saved_share: float = Field(description="saved / uncached_total, 6 decimals (0 when nothing was billed).")
    miss_by_reason: dict[str, ReasonTotal] = Field(description="Missed tokens and their cost, by reason.")


class SessionBill(_Frozen):
    source: str
    name: str
    model: str
    usage: Literal["simulated", "reported"] = Field(
        description="simulated: cache hits from the simulator; reported: the tokens the log says were billed."
    )
    token_counts: str = Field(
        description="Where the token counts come from (turn spec, reported, tokenizer, estimate)."
    )
    warm_prefix_tokens: int = Field(description="Tokens already cached when the session started.")
    notes: list[str] = Field(description="What the reader skipped, guessed or could not check.")
    logged_models: list[str] = Field([], description="The models the log names, in order of first use.")
    started: str | None = Field(None, description="The first call's time (ISO 8601, UTC), where logged.")
    ended: str | None = Field(None, description="The last call's time (ISO 8601, UTC), where logged.")
    calls_sized_from_usage: int = Field(0, description="Calls whose prompt size is the logged one.")
    calls_estimated: int = Field(0, description="Calls sized by the tokenizer or the estimate (scaled).")
    unbilled_calls: int = Field(0, description="Calls left out in reported mode: the log has no usage for them.")
    agreement: Agreement | None = Field(description="How often reported and simulated cached tokens agree.")
    turns: list[TurnBill]
    summary: Summary


class CacheInfo(_Frozen):
    name: str
    label: str = Field(description="The --cache text that reproduces this model.")
    hash_block: int | None
    checkpoints: str
    ttl_seconds: float | None
    output_cached: bool


class Run(_Frozen):
    cache: CacheInfo
    sessions: list[SessionBill]
    total: Summary


class Rates(_Frozen):
    input_cache_hit: Money
    input_cache_miss: Money
    output: Money


class PriceInfo(_Frozen):
    name: str
    currency: str
    effective: date
    source: str
    per: Literal["1M tokens"] = "1M tokens"
    rates: dict[str, Rates]


class BillReport(_Frozen):
    """`kcost bill --format json`: one run per cache model, each with every session's bill."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="kcost bill")

    schema_version: Literal[1] = 1
    generator: str
    prices: PriceInfo
    runs: list[Run]
