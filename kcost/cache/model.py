"""Cache models and their parameters: the one place every cache default lives.

`--cache` takes `NAME[:PARAMS]`, PARAMS a comma-separated list of `key=value` (for `shared`, a bare number is
the block size): `k3`, `k3:hash=256,ttl=1800`, `k3:every=1`, `k3:output=on`, `k3:mtp=on`, `shared:6144`, `ideal`,
`none`; `k3:auto` is K3's rule fitted to each session's logged cached counts (`kcost.cache.fit`).
See `../../README.md` ("Cache models") for what each one shows and where each default comes from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from kcost.errors import InputError
from kcost.model.bounds import MAX_TOKENS
from kcost.model.frozen import frozen
from kcost.model.k3 import HASH_BLOCK
from kcost.pricing import providers
from kcost.results.common import CacheInfo

if TYPE_CHECKING:
    from kcost.pricing.providers.base import CacheRule


class _Kinds(type):
    def __iter__(cls) -> Iterator[Kind]:
        """Every kind, kcost's own first, then the providers' rules in the registry's order."""
        yield from _OWN.values()
        yield from (_provider_kind(name) for name in _rule_names())


@frozen(eq=False, repr=False)
class Kind(metaclass=_Kinds):
    """A cache design by its `--cache` name: kcost's own (`k3` and its variant `shared`, and the bounds `ideal` and
    `none`) or a provider's rule (`kcost.pricing.providers`). One instance per name, so kinds compare with `is`;
    `list(Kind)` is every one. `rule`: the rule it runs under (K3's own for `k3`); None for the variant and the
    bounds."""

    value: str
    rule: CacheRule | None = None

    K3: ClassVar[Kind]
    SHARED: ClassVar[Kind]
    IDEAL: ClassVar[Kind]
    NONE: ClassVar[Kind]

    @classmethod
    def named(cls, name: str) -> Kind:
        """The kind `--cache NAME` names; a `ValueError` for a name no design or provider has."""
        own = _OWN.get(name)
        if own is not None:
            return own
        return _provider_kind(name)

    def __repr__(self) -> str:
        return f"Kind({self.value!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Kind.named, (self.value,))  # a copy in another process is the same kind


@cache
def _provider_kind(name: str) -> Kind:
    rule = providers.rule_named(name)
    if rule is None:
        raise ValueError(name)
    return Kind(name, rule)


Kind.K3 = Kind("k3", providers.rule_named("k3"))
Kind.SHARED = Kind("shared")
Kind.IDEAL = Kind("ideal")
Kind.NONE = Kind("none")
_OWN = {k.value: k for k in (Kind.K3, Kind.SHARED, Kind.IDEAL, Kind.NONE)}
_K3 = Kind.K3.rule
if _K3 is None:
    raise ImportError("no provider in kcost.pricing.providers has the k3 rule")

# `shared` alone means the naive single-block design the lesson calls "nearly useless" (1024 to 6144 tokens) at
# 6144, K3's physical block.
SHARED_BLOCK = 6144
# Every design's default lifetime is K3's (its rule says why): kcost never predicts a hit the API was not
# observed to give.
DEFAULT_TTL = _K3.lifetimes[0]
# A TTL of an hour or more is the 1-hour write choice, and its writes cost the 1-hour rate.
HOUR_WRITES = 3600.0
# The public API did not count the previous turn's output as cached (`docs/design/formats.md` section 8).
DEFAULT_OUTPUT_CACHED = False
# `k3:auto` fits a rule only to a log with at least this many follow-up requests (every request after the first)
# that log a cached count: fewer cannot tell the block sizes apart.
FIT_MIN_FOLLOW_UPS = 3


@frozen
class CacheModel:
    """One cache design with all the parameters that change a bill.

    `block`: hash-block tokens (k3) or the one shared block size (shared); hits end on its multiples.
    `every`: besides turn boundaries, keep a KDA checkpoint every this many blocks (shared: every block).
    `mtp`: the engine serves K3 with multi-token prediction, whose drafter needs the block after a checkpoint
    recomputed: the checkpoints a request keeps at its turn boundaries sit one block below the block boundary at
    or before each (vLLM's hybrid cache manager, `get_mamba_prefill_checkpoint_position` under EAGLE/MTP:
    `num_tokens // block * block - block`, the block dropped leaving the token the logits need).
    `ttl`: seconds an unused entry lives (None: forever). `output`: the previous output can be a hit.
    `auto` (`k3:auto`): each session is billed under the rule fitted to its logged cached counts, this one where
    none fits (`kcost.cache.fit`). `fit_own`: the default bill's rule, which is the fitted one for a log of K3's
    own whose fit is unambiguous; not compared, since for every other log it is the rule `k3` names.
    """

    kind: Kind
    block: int = 0  # 0: the kind's default (HASH_BLOCK for k3, SHARED_BLOCK for shared, a rule's own step)
    every: int | None = None
    ttl: float | None = DEFAULT_TTL
    output: bool = DEFAULT_OUTPUT_CACHED
    min_tokens: int = 0  # a hit shorter than this is no hit (a provider's least cacheable prompt); 0: the rule's
    mtp: bool = False  # K3 served with speculative decoding (MTP): each checkpoint kept one block lower
    auto: bool = False
    fit_own: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        rule = self.kind.rule
        if rule is not None:
            object.__setattr__(self, "block", self.block or rule.step)
            object.__setattr__(self, "min_tokens", self.min_tokens or rule.least)
        if not self.block:
            object.__setattr__(self, "block", SHARED_BLOCK if self.kind is Kind.SHARED else HASH_BLOCK)
        if self.kind is Kind.SHARED:
            object.__setattr__(self, "every", 1)  # one block size for both caches: a checkpoint at every block

    @property
    def anywhere(self) -> bool:
        """Hits on any cached prefix (ideal, and the automatic prefix caches), not only at checkpoints."""
        rule = self.kind.rule
        return self.kind is Kind.IDEAL or (rule is not None and rule.anywhere)

    @property
    def checkpointed(self) -> bool:
        """Hits only where an earlier request left a checkpoint (K3's KDA state, Anthropic's breakpoints)."""
        rule = self.kind.rule
        return self.kind is Kind.SHARED or (rule is not None and not rule.anywhere)

    @property
    def hour_writes(self) -> bool:
        """Entries kept an hour or more: writes cost the 1-hour write rate."""
        return self.ttl is not None and self.ttl >= HOUR_WRITES

    def stored(self, length: int, hit: int) -> int:
        """Prompt tokens a request of `length` tokens that hit `hit` writes to the cache: the full blocks it
        computed (every computed token where hits may end anywhere, and up to the newest breakpoint under
        a rule with breakpoints); none under `none` or below a provider's least cacheable prompt."""
        if self.kind is Kind.NONE or length < self.min_tokens:
            return 0
        if self.anywhere:
            return length - hit
        return max(0, length // self.block * self.block - hit)

    @property
    def bills_writes(self) -> bool:
        """Whether a write costs its own rate, as the rule says (kcost's variant and bounds bill K3's write rates);
        the automatic caches charge nothing for writing."""
        rule = self.kind.rule
        return rule is None or rule.bills_writes

    @property
    def step(self) -> int:
        """Hits are counted in whole multiples of this many tokens (1: any length)."""
        rule = self.kind.rule
        return self.block if rule is not None and rule.anywhere else 1  # checkpoints: at turn boundaries too

    @property
    def source(self) -> str | None:
        """Where a provider's rule is documented (None for kcost's own models)."""
        rule = self.kind.rule
        return rule.source if rule is not None else None

    @property
    def checkpoints(self) -> str:
        rule = self.kind.rule
        if rule is not None and rule.placement:
            return rule.placement
        if self.anywhere:
            return "anywhere" if self.step == 1 else f"anywhere, in steps of {self.step} tokens"
        if self.kind is Kind.NONE:
            return "none"
        lower = ", one block lower (MTP)" if self.mtp else ""
        if self.every == 1:
            return "every block" + lower
        if self.every:
            return f"turn boundaries + every {self.every} blocks" + lower
        return "turn boundaries" + lower

    @property
    def label(self) -> str:
        """The canonical `--cache` text that reproduces this model."""
        if self.kind is Kind.NONE:
            return "none"
        if self.auto:
            return "k3:auto" + (f",every={self.every}" if self.every else "") + (",mtp=on" if self.mtp else "")
        params = []
        if self.kind is Kind.K3:
            params.append(f"hash={self.block}")
            if self.every:
                params.append(f"every={self.every}")
            if self.mtp:
                params.append("mtp=on")
        elif self.kind is Kind.SHARED:
            params.append(str(self.block))
        elif self.kind.rule is not None:
            params.append(f"min={self.min_tokens}")
            if self.every:
                params.append(f"every={self.every}")
        params.append(f"ttl={_fmt_ttl(self.ttl)}")
        params.append(f"output={'on' if self.output else 'off'}")
        return f"{self.kind.value}:{','.join(params)}"

    def info(self) -> CacheInfo:
        """Every parameter of this model that changes a bill, as a report states it."""
        caching = self.kind is not Kind.NONE
        return CacheInfo(
            name=self.kind.value,
            label=self.label,
            hash_block=self.block if self.kind in (Kind.K3, Kind.SHARED) else None,
            source=self.source,
            checkpoints=self.checkpoints,
            ttl_seconds=self.ttl if caching else None,
            output_cached=self.output and caching,
        )


def parse_cache_model(text: str) -> CacheModel:
    """`k3:hash=256,ttl=1800` -> CacheModel; anything else raises `InputError`."""

    def bad(why: str) -> InputError:
        return InputError(
            f"{why} in {text!r}",
            hint=f"e.g. k3, k3:hash=256,ttl=1800, k3:auto, shared:6144, ideal, none; {', '.join(_rule_names())}",
        )

    name, _, rest = text.strip().partition(":")
    try:
        kind = Kind.named(name.strip().lower())
    except ValueError:
        raise bad(f"unknown cache model {name!r}") from None
    fields: dict[str, object] = {"kind": kind}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq and kind is Kind.SHARED and item.isdecimal():
            key, value = "block", item
        if not eq and kind is Kind.K3 and key == "auto":
            fields["auto"] = True
            continue
        allowed = {
            Kind.K3: {"hash", "every", "ttl", "output", "mtp"},
            Kind.SHARED: {"block", "ttl", "output"},
            Kind.IDEAL: {"ttl", "output"},
            Kind.NONE: set(),
        }.get(kind, {"min", "ttl", "output", *(("every",) if kind.rule and not kind.rule.anywhere else ())})
        if key not in allowed:
            raise bad(f"unknown parameter {key!r} for {kind.value}")
        if key in ("hash", "block", "every", "min"):
            if not value.isdecimal() or len(value) > 10 or not 1 <= int(value) <= MAX_TOKENS:
                raise bad(f"{key} must be a whole number from 1 to {MAX_TOKENS}")
            fields["block" if key == "hash" else "min_tokens" if key == "min" else key] = int(value)
        elif key == "ttl":
            fields["ttl"] = parse_duration(value)
        else:
            if value.lower() not in ("on", "off", "true", "false", "yes", "no"):
                raise bad(f"{key} must be on or off")
            fields[key] = value.lower() in ("on", "true", "yes")
    fitted = [given for key, given in (("block", "hash"), ("output", "output"), ("ttl", "ttl")) if key in fields]
    if fields.get("auto") and fitted:
        raise bad(f"k3:auto fits {', '.join(fitted)} to the log: give auto alone (or with every, mtp)")
    if kind.rule is not None and "ttl" not in fields:
        fields["ttl"] = kind.rule.lifetimes[0]  # the rule's own lifetime
    if kind.rule is not None and kind.rule.output and "output" not in fields:
        fields["output"] = True  # the rule keeps each answer's end
    return CacheModel(**fields)  # type: ignore[arg-type]


def _rule_names() -> list[str]:
    """The providers' rules `--cache` takes besides kcost's own designs, in the registry's order."""
    return [name for name in providers.rule_names() if name not in _OWN]


DURATION = r"^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?$"  # seconds, or with a unit
_DURATION = re.compile(DURATION)
_UNIT = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: str | float, *, field: str | None = None) -> float | None:
    """Seconds from `300`, `90s`, `30m`, `1.5h`; `inf`/`none` mean never (None)."""
    if isinstance(value, (int, float)):
        try:
            seconds = float(value)
        except OverflowError:
            raise InputError("too large", field=field, hint="use inf for never") from None
        if seconds < 0 or math.isnan(seconds):
            raise InputError(f"must be >= 0 (got {value!r})", field=field)
        if math.isinf(seconds):
            return None
        return seconds
    text = value.strip().lower()
    if text in ("inf", "none", "never", "off"):
        return None
    match = _DURATION.match(text)
    if not match:
        raise InputError(f"not a duration: {value!r}", field=field, hint="seconds, or 90s, 30m, 1.5h, inf")
    seconds = float(match.group(1)) * _UNIT[match.group(2)]
    if math.isinf(seconds):
        raise InputError(f"too large: {text[:20]}", field=field, hint="use inf for never")
    return seconds


def _fmt_ttl(ttl: float | None) -> str:
    if ttl is None:
        return "inf"
    return str(int(ttl)) if ttl == int(ttl) else str(ttl)
