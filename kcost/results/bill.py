"""What a bill says: plain frozen dataclasses, written to JSON without pydantic.

The machine-readable path (`kcost bill --format json`, JSONL, CSV) imports neither pydantic nor rich: a bill is
built from these dataclasses and written by orjson (`kcost.results.common.to_data`). The types still describe
themselves to pydantic, lazily, for what needs a validator or a schema: reading a bill back (`check --baseline`,
`diff`), `kcost schema bill`, and the reports that embed a bill's parts.

Money is `Decimal`, written as an exact decimal string (`"0.1323456"`): never rounded, no exponent, no trailing
zeros. The only rounded figures are ratios: hit rates (6 decimals) and the blended input price per million tokens
(10 decimals, half-even).
"""

from __future__ import annotations

from dataclasses import field
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.common import CLOSED, OMIT_NONE, CacheInfo, Doc, Money, PriceInfo, Written

BLENDED_PLACES = Decimal("1E-10")


def blended(cost: Decimal, tokens: int) -> Decimal:
    """USD per million input tokens, to 10 decimals."""
    if tokens == 0:
        return Decimal(0)
    return (cost * 1_000_000 / tokens).quantize(BLENDED_PLACES, rounding=ROUND_HALF_EVEN)


# ---- the bill -----------------------------------------------------------------------------------------------


@frozen(slots=True, kw_only=True)
class MissLine:
    __pydantic_config__ = CLOSED
    reason: Annotated[str, Doc("Why these tokens missed (see README, 'Miss reasons').")]
    tokens: int
    at: Annotated[int, Doc("Position of the first of these tokens in the prompt.")]
    cost: Annotated[Money, Doc("What these tokens cost at the miss price.")]


@frozen(slots=True, kw_only=True)
class Check:
    """A turn whose log reports usage, beside what the simulator found."""

    __pydantic_config__ = CLOSED
    reported_input_tokens: int
    reported_cached_tokens: int
    simulated_cached_tokens: int
    agree: Annotated[bool, Doc("The simulator's cached tokens equal the reported ones.")]


@frozen(slots=True, kw_only=True)
class Agreement:
    __pydantic_config__ = CLOSED
    turns: Annotated[int, Doc("Turns with both reported and simulated cached tokens.")]
    agree: int
    rate: float


@frozen(slots=True, kw_only=True)
class FitCandidate:
    """One rule `k3:auto` tried, and how many logged requests it agrees with."""

    __pydantic_config__ = CLOSED
    label: Annotated[str, Doc("The --cache text of the rule tried.")]
    hash_block: int
    output_cached: bool
    agree: int


@frozen(slots=True, kw_only=True)
class CacheFit:
    """K3's rule fitted to the session's logged cached counts (`--cache k3:auto`, or the default bill of a log of
    K3's own): what was fitted, from how many requests, and the agreement it reaches."""

    __pydantic_config__ = CLOSED
    asked: Annotated[
        Literal["k3:auto", "default"], Doc("k3:auto: asked for; default: the default bill of a log of K3's own.")
    ]
    fitted: Annotated[bool, Doc("The session is billed under the fitted rule (false: the default rule, see reason).")]
    label: Annotated[str, Doc("The --cache text of the rule the session is billed under.")]
    reason: Annotated[str | None, Doc("Why the default rule is billed, or why an ambiguous fit chose as it did.")]
    requests: Annotated[int, Doc("Requests with a logged cached count the fit could use.")]
    agree: Annotated[int, Doc("Of those, the requests whose simulated hit equals the logged cached count.")]
    default_agree: Annotated[int | None, Doc("The same under the default rule (null: no fit was tried).")] = None
    ttl_at_least: Annotated[
        float | None, Doc("Seconds: the longest idle gap after which a request still hit what was cached.")
    ] = None
    ttl_below: Annotated[float | None, Doc("Seconds: the shortest idle gap after which a request missed it.")] = None
    candidates: Annotated[list[FitCandidate], Doc("Every rule tried, most agreement first.")] = field(
        default_factory=list
    )


@frozen(slots=True, kw_only=True)
class TurnBill:
    __pydantic_config__ = CLOSED
    turn: Annotated[int, Doc("1-based turn number.")]
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
    reason: Annotated[str, Doc("The costliest cause of this turn's misses, or new-input.")]
    misses: list[MissLine]
    check: Annotated[Check | None, Doc("Reported vs simulated cached tokens, where the log has both.")] = None
    time: Annotated[str | None, Doc("When the call was made (ISO 8601, UTC), where the log says.")] = None
    logged_model: Annotated[str | None, Doc("The model the log names for this call.")] = None
    priced_model: Annotated[str | None, Doc("The model this call is priced at, where it is not the session's.")] = None
    written_tokens: Annotated[int, Doc("Missed tokens the cache stored (writes): full blocks computed.")] = 0
    write_premium: Annotated[
        Money, Doc("What those writes cost above the miss rate (0 where a write costs a miss); in total.")
    ] = Decimal(0)
    reasoning_tokens: Annotated[
        int | None, Doc("Of output_tokens, the reasoning the log counts apart (None: the log does not).")
    ] = None


@frozen(slots=True, kw_only=True)
class ReasonTotal:
    __pydantic_config__ = CLOSED
    tokens: int
    cost: Money


@frozen(slots=True, kw_only=True)
class Summary:
    __pydantic_config__ = CLOSED
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
    blended_input_per_mtok: Annotated[Money, Doc("Input cost per million input tokens, 10 decimals.")]
    uncached_total: Annotated[Money, Doc("The same tokens with every input token a miss.")]
    saved: Annotated[Money, Doc("uncached_total - total.")]
    saved_share: Annotated[float, Doc("saved / uncached_total, 6 decimals (0 when nothing was billed).")]
    miss_by_reason: Annotated[dict[str, ReasonTotal], Doc("Missed tokens and their cost, by reason.")]
    written_tokens: Annotated[int, Doc("Missed tokens the cache stored (writes).")] = 0
    write_premium: Annotated[Money, Doc("What the writes cost above the miss rate; in input_cost and total.")] = (
        Decimal(0)
    )


@frozen(slots=True, kw_only=True)
class SessionBill:
    __pydantic_config__ = CLOSED
    source: str
    name: str
    model: str
    usage: Annotated[
        Literal["simulated", "reported"],
        Doc("simulated: cache hits from the simulator; reported: the tokens the log says were billed."),
    ]
    token_counts: Annotated[str, Doc("Where the token counts come from (turn spec, logged usage, estimate).")]
    warm_prefix_tokens: Annotated[int, Doc("Tokens already cached when the session started.")]
    notes: Annotated[list[str], Doc("What the reader skipped, guessed or could not check.")]
    logged_models: Annotated[list[str], Doc("The models the log names, in order of first use.")] = field(
        default_factory=list
    )
    started: Annotated[str | None, Doc("The first call's time (ISO 8601, UTC), where logged.")] = None
    ended: Annotated[str | None, Doc("The last call's time (ISO 8601, UTC), where logged.")] = None
    calls_sized_from_usage: Annotated[int, Doc("Calls whose prompt size is the logged one.")] = 0
    calls_estimated: Annotated[int, Doc("Calls sized by the tokenizer or the estimate (scaled).")] = 0
    unbilled_calls: Annotated[int, Doc("Calls left out in reported mode: the log has no usage for them.")] = 0
    unpriced_calls: Annotated[
        int, Doc("Calls left out under --model logged: the price table lacks their logged model (the notes name it).")
    ] = 0
    agreement: Annotated[Agreement | None, Doc("How often reported and simulated cached tokens agree.")]
    turns: list[TurnBill]
    summary: Summary
    cache_fit: Annotated[
        CacheFit | None, Doc("The cache rule fitted to the log's cached counts, where one was fitted or asked for.")
    ] = field(default=None, metadata=OMIT_NONE)
    cache: Annotated[
        CacheInfo | None,
        Doc("The cache rule the session was billed under: its run's, or the one fitted to its log (absent: billed "
            "as reported, no rule simulated)."),
    ] = field(default=None, metadata=OMIT_NONE)

    def priced_models(self) -> list[str]:
        """The models its turns were priced at, each once, in order (what a report's prices name)."""
        if isinstance(self.turns, WrittenTurns):
            return self.turns.priced
        return _priced(self.turns, self.model)


def _priced(turns: list[TurnBill], model: str) -> list[str]:
    return list(dict.fromkeys(turn.priced_model or model for turn in turns))


class WrittenTurns(Written):
    """A bill's turns as the JSON writer writes them (`Written`), and the models they were priced at: what a
    bill made where its log was read brings back to a run that writes it as JSON (`Settings.json_turns`)."""

    priced: list[str]  # set by its maker (`kcost.billing.bills.bill`)


@frozen(slots=True, kw_only=True)
class Run:
    __pydantic_config__ = CLOSED
    cache: CacheInfo
    sessions: list[SessionBill]
    total: Summary


@frozen(slots=True, kw_only=True)
class BillReport:
    """`kcost bill --format json`: one run per cache model, each with every session's bill."""

    __pydantic_config__ = {**CLOSED, "title": "kcost bill"}
    schema_version: Literal[1] = 1
    generator: str
    prices: PriceInfo
    runs: list[Run]


# ---- a bill's turns as a summary shows them, where they were streamed past ---------------------------------------

# The widths a sparkline of a session's turns is drawn at: the table's (its width less 14, at most 60), markdown's 60.
SPARK_WIDTHS = range(1, 61)


class TurnDigest:
    """What a bill's summary shows of its turns, kept a turn at a time where the turns themselves are not: the
    cumulative cost at every turn a sparkline of up to 60 characters ends a bin at (the bins of `n` turns at
    width w are `ceil(n / w)` turns each), and the models the turns were priced at, with whether each wrote at a
    premium. Not written to JSON: a bill of streamed turns is shown, never stored."""

    __slots__ = ("n", "done", "ends", "cumulative", "priced")

    def __init__(self, n: int) -> None:
        self.n, self.done = n, 0
        self.ends = {min(k, n) for w in SPARK_WIDTHS for k in range(0, n + 1, max(1, -(-n // w)))} | {n}
        self.cumulative: dict[int, Decimal] = {0: Decimal(0)}
        self.priced: dict[str, bool] = {}  # priced model -> any of its turns wrote at a premium

    def add(self, turn: TurnBill, model: str) -> None:
        """The next turn, priced at `model` where it names none of its own."""
        self.done += 1
        if self.done in self.ends:
            self.cumulative[self.done] = turn.cumulative
        own = turn.priced_model or model
        self.priced[own] = self.priced.get(own, False) or bool(turn.write_premium)

    def bins(self, width: int) -> list[Decimal]:
        """The turns' costs summed in bins as `kcost.render.text.sparkline` bins them at `width`."""
        n, cum = self.done, self.cumulative
        per = -(-n // max(width, 1))
        return [cum[min(i + per, n)] - cum[i] for i in range(0, n, per)]

    def attach(self, bill: SessionBill) -> SessionBill:
        """`bill` (of these turns, none kept) with this digest."""
        out = DigestBill(**{f: getattr(bill, f) for f in SessionBill.__dataclass_fields__})
        object.__setattr__(out, "digest", self)  # a frozen type: set once, here
        return out


class DigestBill(SessionBill):
    """A session's bill whose turns were streamed past: its `TurnDigest` stands for them in a summary."""

    __slots__ = ("digest",)
    digest: TurnDigest
