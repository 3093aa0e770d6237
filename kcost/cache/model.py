"""Cache models and their parameters: the one place every cache default lives.

`--cache` takes `NAME[:PARAMS]`, PARAMS a comma-separated list of `key=value` (for `shared`, a bare number is
the block size): `k3`, `k3:hash=256,ttl=1800`, `k3:every=1`, `k3:output=on`, `shared:6144`, `ideal`, `none`.
See `../../README.md` ("Cache models") for what each one shows and where each default comes from.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum

from kcost.errors import InputError
from kcost.options import MAX_TOKENS
from kcost.results.common import CacheInfo

# K3 hashes prefixes in 512-token blocks (seed lesson, Figure 12 of the report: "fine 512-token hash blocks").
HASH_BLOCK = 512
# The naive single-block design the lesson calls "nearly useless": 1024 to 6144 tokens; 6144 is K3's physical
# block, so `shared` alone means that.
SHARED_BLOCK = 6144
# Sizes in a serving pool (`notes/cache-model.md` section 1): MLA KV pages hold one hash block each.
MLA_BYTES_PER_TOKEN = 13_824  # 576 values x 24 MLA layers at FP8 (never x 93 layers: that overstates KV 3.9x)
KDA_CHECKPOINT_BYTES = 449_000_000  # 96 heads x 128 x 128 FP32 + conv state, x 69 KDA layers: about 449 MB
PAGE_BYTES = HASH_BLOCK * MLA_BYTES_PER_TOKEN  # one page holds one hash block of MLA KV: 7,077,888 bytes
# The public API kept prefixes for at least 300 s and at most 1800 s (formats.md section 8); 300 s is the
# conservative end: kcost never predicts a hit the API was not observed to give.
DEFAULT_TTL = 300.0
# K3's two cache-write lifetimes are 5 minutes and an hour (the price page of 2026-10-15): a TTL of an hour or more
# is the 1-hour choice, and its writes cost the 1-hour rate.
HOUR_WRITES = 3600.0
# The public API did not count the previous turn's output as cached (formats.md section 8).
DEFAULT_OUTPUT_CACHED = False


class Kind(str, Enum):
    K3 = "k3"
    SHARED = "shared"
    IDEAL = "ideal"
    NONE = "none"
    # other providers' rules, to price the same session elsewhere (`kcost compare`); sources in RULES
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    DEEPSEEK = "deepseek"
    GEMINI = "gemini"


# Each provider's cache rule: (hits anywhere on a cached prefix, or only at breakpoints a request wrote), the
# step hits are counted in, the least prompt that is cached, the TTL, and where that is documented.
RULES: dict[Kind, tuple[bool, int, int, float | None, str]] = {
    Kind.ANTHROPIC: (False, 1, 1024, 300.0, "https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching "
                     "(explicit cache_control breakpoints, as Claude Code places them: after the tools and system "
                     "prompt and on the newest message; at least 1,024 tokens (2,048 on Haiku: min=2048); "
                     "5-minute writes at 1.25x input, 1-hour (ttl=1h) at 2x, reads at 0.1x)"),
    Kind.OPENAI: (True, 128, 1024, 300.0, "https://platform.openai.com/docs/guides/prompt-caching (automatic; "
                  "prompts of 1,024 tokens or more, hits in 128-token increments; kept 5 to 10 minutes idle)"),
    Kind.DEEPSEEK: (True, 64, 64, 3600.0, "https://api-docs.deepseek.com/guides/kv_cache (automatic, on disk, "
                    "in 64-token units; unused entries cleared within hours: an hour here)"),
    Kind.GEMINI: (True, 1, 2048, 300.0, "https://ai.google.dev/gemini-api/docs/caching (implicit caching: "
                  "at least 2,048 tokens on Gemini 2.5, 4,096 on Gemini 3 and later (min=4096), in its table of "
                  "2026-10-13; its lifetime is not published)"),
}  # fmt: skip


@dataclass(frozen=True)
class CacheModel:
    """One cache design with all the parameters that change a bill.

    `block`: hash-block tokens (k3) or the one shared block size (shared); hits end on its multiples.
    `every`: besides turn boundaries, keep a KDA checkpoint every this many blocks (shared: every block).
    `ttl`: seconds an unused entry lives (None: forever). `output`: the previous output can be a hit.
    """

    kind: Kind
    block: int = 0  # 0: the kind's default (HASH_BLOCK for k3, SHARED_BLOCK for shared, a rule's own step)
    every: int | None = None
    ttl: float | None = DEFAULT_TTL
    output: bool = DEFAULT_OUTPUT_CACHED
    min_tokens: int = 0  # a hit shorter than this is no hit (a provider's least cacheable prompt); 0: the rule's

    def __post_init__(self) -> None:
        rule = RULES.get(self.kind)
        if rule is not None:
            object.__setattr__(self, "block", self.block or rule[1])
            object.__setattr__(self, "min_tokens", self.min_tokens or rule[2])
        if not self.block:
            object.__setattr__(self, "block", SHARED_BLOCK if self.kind is Kind.SHARED else HASH_BLOCK)
        if self.kind is Kind.SHARED:
            object.__setattr__(self, "every", 1)  # one block size for both caches: a checkpoint at every block

    @property
    def anywhere(self) -> bool:
        """Hits on any cached prefix (ideal, and the automatic prefix caches), not only at checkpoints."""
        return self.kind is Kind.IDEAL or (self.kind in RULES and RULES[self.kind][0])

    @property
    def checkpointed(self) -> bool:
        """Hits only where an earlier request left a checkpoint (K3's KDA state, Anthropic's breakpoints)."""
        return self.kind in (Kind.K3, Kind.SHARED, Kind.ANTHROPIC)

    @property
    def hour_writes(self) -> bool:
        """Entries kept an hour or more: writes cost the 1-hour write rate."""
        return self.ttl is not None and self.ttl >= HOUR_WRITES

    def stored(self, length: int, hit: int) -> int:
        """Prompt tokens a request of `length` tokens that hit `hit` writes to the cache: the full blocks it
        computed (every computed token where hits may end anywhere, and up to the newest breakpoint under
        `anthropic`); none under `none` or below a provider's least cacheable prompt."""
        if self.kind is Kind.NONE or length < self.min_tokens:
            return 0
        if self.anywhere:
            return length - hit
        return max(0, length // self.block * self.block - hit)

    @property
    def bills_writes(self) -> bool:
        """Whether a write costs its own rate: K3's published write rates and Anthropic's explicit writes; the
        automatic caches (OpenAI, DeepSeek, Gemini) charge nothing for writing."""
        return self.kind not in (Kind.OPENAI, Kind.DEEPSEEK, Kind.GEMINI)

    @property
    def step(self) -> int:
        """Hits are counted in whole multiples of this many tokens (1: any length)."""
        return self.block if self.kind in RULES else 1

    @property
    def source(self) -> str | None:
        """Where a provider's rule is documented (None for kcost's own models)."""
        return RULES[self.kind][4] if self.kind in RULES else None

    @property
    def checkpoints(self) -> str:
        if self.kind is Kind.ANTHROPIC:
            return "breakpoints: tools and system, the newest message"
        if self.anywhere:
            return "anywhere" if self.step == 1 else f"anywhere, in steps of {self.step} tokens"
        if self.kind is Kind.NONE:
            return "none"
        if self.every == 1:
            return "every block"
        if self.every:
            return f"turn boundaries + every {self.every} blocks"
        return "turn boundaries"

    @property
    def label(self) -> str:
        """The canonical `--cache` text that reproduces this model."""
        if self.kind is Kind.NONE:
            return "none"
        params = []
        if self.kind is Kind.K3:
            params.append(f"hash={self.block}")
            if self.every:
                params.append(f"every={self.every}")
        elif self.kind is Kind.SHARED:
            params.append(str(self.block))
        elif self.kind in RULES:
            params.append(f"min={self.min_tokens}")
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
            hint="e.g. k3, k3:hash=256,ttl=1800, shared:6144, ideal, none; anthropic, openai, deepseek, gemini",
        )

    name, _, rest = text.strip().partition(":")
    try:
        kind = Kind(name.strip().lower())
    except ValueError:
        raise bad(f"unknown cache model {name!r}") from None
    fields: dict[str, object] = {"kind": kind}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq and kind is Kind.SHARED and item.isdecimal():
            key, value = "block", item
        allowed = {
            Kind.K3: {"hash", "every", "ttl", "output"},
            Kind.SHARED: {"block", "ttl", "output"},
            Kind.IDEAL: {"ttl", "output"},
            Kind.NONE: set(),
        }.get(kind, {"min", "ttl", "output"})
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
                raise bad("output must be on or off")
            fields["output"] = value.lower() in ("on", "true", "yes")
    if kind in RULES and "ttl" not in fields:
        fields["ttl"] = RULES[kind][3]  # the provider's own lifetime
    return CacheModel(**fields)  # type: ignore[arg-type]


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
