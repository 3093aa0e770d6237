"""A prompt as the cache simulator sees it, and what a cache made of it: runs of tokens (`Span`), one model call
relative to the previous one (`Request`), and its outcome (`Outcome`: hit and missed tokens, each miss part with its
`Reason`)."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from kcost.model.frozen import frozen


class Reason(str, Enum):
    """Why a span of a prompt was billed as a miss."""

    NEW_INPUT = "new-input"  # what this turn added: a miss under any cache
    COLD = "cold"  # nothing of this session was cached yet
    PREFIX_CHANGED = "prefix-changed"  # the prompt differs from everything cached from token `at` on
    OUTPUT_NOT_CACHED = "output-not-cached"  # the previous turn's output, sent back but never cached
    EXPIRED = "expired"  # it was cached, but unused for longer than the TTL
    NO_CHECKPOINT = "no-checkpoint"  # MLA blocks were cached, but no KDA checkpoint at a later boundary
    BLOCK_GRANULARITY = "block-granularity"  # the cached prefix ends inside a block; only full blocks count
    LAST_TOKEN = "last-token"  # the prompt was all cached; at least one token is computed for the logits
    BELOW_MINIMUM = "below-minimum"  # cached, but shorter than the least prompt the provider caches
    CACHING_OFF = "caching-off"  # the `none` model
    REPORTED = "reported"  # billed as a miss by the provider, as the log says (no cause known)
    MODEL_SWITCH = "model-switch"  # the session's one cache would have served it: the call switched models


@frozen(slots=True)
class Span:
    """Tokens `start .. start+length` of the token run `seg`."""

    seg: int
    start: int
    length: int


@frozen(slots=True)
class Request:
    """One model call, relative to the previous call of the same session.

    `keep`: tokens of the previous prompt kept at the front (0 for the first request); `append`: what follows.
    `turn_start`: where the newest turn begins (the end of what was carried over from the conversation).
    `output`: the tokens generated (for output caching; billed as output). `resent_output`: the token range of
    this prompt that is the previous turn's output sent back, if any. `billed`: False for a warm-up.
    """

    time: float
    keep: int
    append: tuple[Span, ...]
    turn_start: int
    output: tuple[Span, ...] = ()
    resent_output: tuple[int, int] | None = None
    billed: bool = True
    output_tokens: int | None = None  # billed output, where it differs from the spans (a log's reported count)


class MissPart(NamedTuple):
    """Tokens of a prompt that missed for one reason (a value made for every part of every request: a named tuple,
    made at a third of a frozen dataclass's cost)."""

    reason: Reason
    tokens: int
    at: int  # the first token of the part


class Outcome(NamedTuple):
    """What a cache made of one request: its prompt's tokens, those it hit, its output, and why the rest missed."""

    input: int
    hit: int
    output: int
    misses: tuple[MissPart, ...]

    @property
    def miss(self) -> int:
        return self.input - self.hit
