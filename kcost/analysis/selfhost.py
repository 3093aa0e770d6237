"""Self-hosting arithmetic: what it takes to serve a model's open weights, and above what monthly volume a fleet
costs less than the API. Pure functions of figures and a workload; reads only the shipped data files.

The figures are data, each with its source, its date and whether it is an estimate: the model's architecture in
`kcost/analysis/data/architectures/<id>.json`, the accelerators, the published expert-parallel deployments and the
fleet's assumptions in `kcost/analysis/data/accelerators.json`. Any of them can be overridden by name (`--set
KEY=VALUE`, or the config's `[selfhost]` table); an override is checked against the figure's bounds, which keep
every figure the arithmetic divides by or scales with away from 0, and the figures it derives from them (an
accelerator's throughput, the accelerators the memory floor needs) are checked before they are used: a value
whose result would overflow, vanish or take unbounded time is refused, naming it, never computed.

The arithmetic (the seed lesson's "Why 64 accelerators", made into numbers):

- weights: total parameters x (weight bits + scale bits / scale block) / 8 bytes; MXFP4 is 4 + 8/32 = 4.25 bits;
- the state of the workload's concurrent contexts: per context, its tokens x the MLA KV a token plus one KDA
  state; concurrency by Little's law (each request holds its state while it decodes at a stream's speed);
- the memory floor is their sum; the least accelerators that hold it, and the recommended supernode (64 or more,
  in whole interconnect domains);
- throughput an accelerator: a published deployment's per-node figures, per accelerator, scaled by active
  parameters (the work a token is proportional to them) and by the accelerator's FP8 compute (prefill) or memory
  bandwidth (decode) against the deployment's; a prefix-cache hit costs no prefill, on the fleet as on the API;
- the fleet's monthly cost at volume V: the recommended supernode all month, or, past what it serves at the
  utilisation, the accelerator-hours V needs; the API's: V at the workload's blended price a token. They cross at
  the break-even volume: the supernode's monthly cost / the API's price a token, where the API's price a token is
  above the fleet's (else self-hosting never costs less).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import ROUND_CEILING, Context, Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError
from kcost.model.frozen import frozen
from kcost.results.selfhost import CostPoint, FigureUsed, Fleet, Holding, MemoryFloor, SelfhostReport
from kcost.results.selfhost import Workload as WorkloadInfo

if TYPE_CHECKING:
    from kcost.results.selfhost import SelfhostReport

DATA = Path(__file__).parent / "data"
PRICINGS = ("reserved", "on-demand")
SECONDS_PER_HOUR = 3600

# Each figure's bounds: (least, most, whole number, whether the least itself is allowed). Past the most a value is
# a typo, not a what-if; below the least (0 only for the shares and sizes that can be 0) the arithmetic the figure
# feeds (a division, a scaling of throughput or of the fleet) would run to a result past what the report can
# state, or to nothing.
BOUNDS: dict[str, tuple[Decimal, Decimal, bool, bool]] = {
    # key: (least, most, whole, least allowed)
    "total_params": (Decimal(1_000_000), Decimal("1e15"), False, True),
    "active_params": (Decimal(1_000_000), Decimal("1e15"), False, True),
    "experts": (Decimal(1), Decimal(100_000), True, True),
    "active_experts": (Decimal(1), Decimal(100_000), True, True),
    "mla_layers": (Decimal(0), Decimal(10_000), True, True),
    "kda_layers": (Decimal(0), Decimal(10_000), True, True),
    "weight_bits": (Decimal(1), Decimal(64), False, True),
    "scale_bits": (Decimal(0), Decimal(64), False, True),
    "scale_block": (Decimal(1), Decimal(1_000_000), True, True),
    "kv_bytes_per_token": (Decimal(0), Decimal("1e9"), False, True),
    "kda_state_bytes": (Decimal(0), Decimal("1e12"), False, True),
    "supernode": (Decimal(1), Decimal(1_000_000), True, True),
    "memory_gb": (Decimal(1), Decimal(100_000), False, True),
    "domain": (Decimal(1), Decimal(1_000_000), True, True),
    "fp8_tflops": (Decimal(1), Decimal(1_000_000), False, True),
    "hbm_tbps": (Decimal("0.1"), Decimal(10_000), False, True),
    "on_demand_low": (Decimal("0.01"), Decimal(1000), False, True),
    "on_demand_high": (Decimal("0.01"), Decimal(1000), False, True),
    "reserved_low": (Decimal("0.01"), Decimal(1000), False, True),
    "reserved_high": (Decimal("0.01"), Decimal(1000), False, True),
    "hourly": (Decimal("0.01"), Decimal(1000), False, True),
    "prefill_per_node": (Decimal(1), Decimal("1e9"), False, True),
    "decode_per_node": (Decimal(1), Decimal("1e9"), False, True),
    "node_size": (Decimal(1), Decimal(100_000), True, True),
    "deployed_active_params": (Decimal(1_000_000), Decimal("1e15"), False, True),
    "prefill_hit_share": (Decimal(0), Decimal("0.99"), False, True),
    "utilization": (Decimal("0.0001"), Decimal(1), False, True),
    "stream_tokens_per_second": (Decimal("0.1"), Decimal(1_000_000), False, True),
    "hours_per_month": (Decimal(1), Decimal(744), False, True),
    "accelerators": (Decimal(1), Decimal(10_000_000), True, True),
    "concurrent": (Decimal(1), Decimal(100_000_000), True, True),
    "context_tokens": (Decimal(1), Decimal(100_000_000), True, True),
}
# An override's text: at most this long, its exponent (in scientific notation) within this many places of 0, both
# checked before it is compared or computed with (`1e-999990` would make a division run for minutes).
MAX_TEXT = 64
MAX_EXPONENT = 30
# The least a figure that can be 0 may be above it (a size of `1e-40` bytes is 0 written as a typo).
SMALLEST = Decimal("1e-9")
# The tokens a second one accelerator may prefill or decode, as the figures scale the deployment's: outside, the
# fleet's cost a token (and the volume its floor serves) runs past what the report states, or to nothing.
THROUGHPUT = (Decimal("0.001"), Decimal("1e9"))
# What the report's figures are rounded in: wide enough for any the checked figures make (a quantize in the
# default context fails past 28 digits).
WIDE = Context(prec=80)
# Figures that come from the run, not the data (given by a flag, else worked out from the workload).
DERIVED = ("hourly", "accelerators", "concurrent", "context_tokens")


@frozen(slots=True)
class Figure:
    """One figure: its value, unit, where it comes from and when, whether it is an estimate, whether the run
    overrode it."""

    key: str
    value: Decimal
    unit: str
    source: str
    date: str | None
    estimate: bool
    overridden: bool = False


@lru_cache(maxsize=1)
def catalogue() -> dict[str, Any]:
    """The accelerators, deployments and fleet figures that ship with kcost."""
    data: dict[str, Any] = json.loads((DATA / "accelerators.json").read_text(encoding="utf-8"))
    return data


def architectures() -> list[str]:
    """The model ids that have an architecture file."""
    return sorted(p.stem for p in (DATA / "architectures").glob("*.json"))


@lru_cache(maxsize=8)
def architecture(model: str) -> dict[str, Any]:
    """One model's architecture file; an unknown model is an error naming the ones there are."""
    if model not in architectures():
        raise InputError(f"no architecture figures for model {model!r}", field="selfhost-model",
                         hint=f"known: {', '.join(architectures())}")  # fmt: skip
    data: dict[str, Any] = json.loads((DATA / "architectures" / f"{model}.json").read_text(encoding="utf-8"))
    return data


def _figure(key: str, raw: Mapping[str, Any]) -> Figure:
    return Figure(key=key, value=Decimal(str(raw["value"])), unit=raw["unit"], source=raw["source"],
                  date=raw.get("date"), estimate=bool(raw.get("estimate", False)))  # fmt: skip


def defaults(model: str, accelerator: str, deployment: str) -> dict[str, Figure]:
    """Every default figure for one model on one accelerator, scaled from one deployment."""
    cat = catalogue()
    arch = architecture(model)
    if accelerator not in cat["accelerators"]:
        raise InputError(f"no such accelerator {accelerator!r}", field="accelerator",
                         hint=f"known: {', '.join(cat['accelerators'])}")  # fmt: skip
    if deployment not in cat["deployments"]:
        raise InputError(f"no such deployment {deployment!r}", field="deployment",
                         hint=f"known: {', '.join(cat['deployments'])}")  # fmt: skip
    out = {k: _figure(k, v) for k, v in arch["figures"].items()}
    out["supernode"] = _figure("supernode", arch["supernode"])
    out.update({k: _figure(k, v) for k, v in cat["accelerators"][accelerator]["figures"].items()})
    dep = cat["deployments"][deployment]
    out.update({k: _figure(k, v) for k, v in dep["figures"].items()})
    base = cat["accelerators"][dep["accelerator"]]["figures"]
    out["base_fp8_tflops"] = replace(_figure("base_fp8_tflops", base["fp8_tflops"]), key="base_fp8_tflops")
    out["base_hbm_tbps"] = replace(_figure("base_hbm_tbps", base["hbm_tbps"]), key="base_hbm_tbps")
    out.update({k: _figure(k, v) for k, v in cat["fleet"].items()})
    return out


def parse_value(key: str, text: object, source: str | None = None) -> Decimal:
    """An override of figure `key`, checked: a finite number within the figure's bounds (a whole one where the
    figure counts things), its text and exponent checked first (`MAX_TEXT`, `MAX_EXPONENT`); else an
    `InputError` naming it and the range it may take."""
    field = f"selfhost.{key}" if source else key
    if key not in BOUNDS:
        # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
        import difflib

        near = difflib.get_close_matches(key, list(BOUNDS), n=2, cutoff=0.5)
        raise InputError(f"no such figure {key!r}", source=source, field=field,
                         hint=f"did you mean {' or '.join(near)}?" if near else
                         "`kcost selfhost --format json` lists every figure by key")  # fmt: skip
    least, most, whole, allowed = BOUNDS[key]
    valid = f"from {least:,f} to {most:,f}" if allowed else f"more than {least:,f} and at most {most:,f}"
    written = str(text).strip().replace("_", "")
    if len(written) > MAX_TEXT:
        raise InputError(f"not a figure: {len(written):,} characters (must be {valid})", source=source,
                         field=field)  # fmt: skip
    try:
        value = Decimal(written)
    except (InvalidOperation, ValueError):
        raise InputError(f"not a number: {str(text)[:40]!r}", source=source, field=field) from None
    if not value.is_finite():
        raise InputError(f"must be a finite number (got {text})", source=source, field=field)
    if value and abs(value.adjusted()) > MAX_EXPONENT:
        raise InputError(f"must be {valid} (got {written}: its exponent is past {MAX_EXPONENT} places)",
                         source=source, field=field)  # fmt: skip
    if value < least or (value == least and not allowed):
        raise InputError(f"must be {valid} (got {text})", source=source, field=field)
    if least == 0 and 0 < value < SMALLEST:
        raise InputError(f"must be 0 or from {SMALLEST:f} to {most:,f} (got {text}: too small to be other than 0)",
                         source=source, field=field)  # fmt: skip
    if value > most:
        raise InputError(f"must be at most {most:,f} (got {text})", source=source, field=field,
                         hint="a figure past this is a typo, not a what-if")  # fmt: skip
    if whole and value != value.to_integral_value():
        raise InputError(f"must be a whole number (got {text})", source=source, field=field)
    return value


def apply(figures: dict[str, Figure], overrides: Mapping[str, Decimal]) -> dict[str, Figure]:
    """`figures` with each override in place, marked as overridden (its source: the run)."""
    out = dict(figures)
    for key, value in overrides.items():
        old = out.get(key)
        out[key] = Figure(key=key, value=value, unit=old.unit if old else "", source="given for this run",
                          date=None, estimate=False, overridden=True)  # fmt: skip
    return out


# ---- the workload ---------------------------------------------------------------------------------------------


@frozen(slots=True)
class Call:
    """One call of the workload: when (seconds, any origin; None: not logged), its input and output tokens."""

    time: float | None
    input: int
    output: int


@frozen(slots=True)
class Workload:
    """What was billed: tokens, the API's bill, the calls (for concurrency and span), and how many contexts
    there are when the calls carry no times (each session one)."""

    kind: str  # sessions or trace
    source: str
    units: int  # sessions, or requests
    input_tokens: int
    hit_tokens: int
    output_tokens: int
    api_cost: Decimal
    cache: str
    calls: Sequence[Call]
    contexts_without_times: int

    @property
    def miss_tokens(self) -> int:
        return self.input_tokens - self.hit_tokens

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def span(self) -> float | None:
        """Seconds from the first logged call to the last, None where fewer than two are timed or all at once."""
        times = [c.time for c in self.calls if c.time is not None]
        if len(times) < 2 or max(times) <= min(times):
            return None
        return max(times) - min(times)


def concurrency(work: Workload, stream: Decimal) -> tuple[int, int, str]:
    """The contexts in flight and their mean size (tokens), and how they were found: by Little's law over the
    logged span (each call holds its state while its output decodes at `stream` tokens a second), else every
    context at once at the largest call."""
    span = work.span
    largest = max((c.input + c.output for c in work.calls), default=0)
    if span is None:
        return (
            max(1, work.contexts_without_times),
            max(1, largest),
            "no span logged: every context at once, each at the largest call",
        )  # noqa: E501
    held = [(Decimal(c.output) / stream, c.input + c.output) for c in work.calls]
    busy = sum((d for d, _ in held), Decimal(0))
    if busy == 0:
        return 1, max(1, largest), "no output decoded: one context at the largest call"
    concurrent = max(1, int((busy / Decimal(repr(span))).to_integral_value(rounding=ROUND_CEILING)))
    mean = sum((d * t for d, t in held), Decimal(0)) / busy
    return (
        concurrent,
        max(1, int(mean.to_integral_value(rounding=ROUND_CEILING))),
        ("Little's law over the logged span: output time at the stream speed / span; tokens weighted by that time"),
    )


# ---- the arithmetic -------------------------------------------------------------------------------------------


def ceil(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_CEILING))


@frozen(slots=True)
class Memory:
    bits_per_weight: Decimal
    weights_bytes: Decimal
    state_bytes: Decimal
    floor_bytes: Decimal


def memory(f: Mapping[str, Figure], concurrent: int, context_tokens: int) -> Memory:
    """The memory floor: the weights at the serving precision and the concurrent contexts' KV and KDA state."""
    bits = f["weight_bits"].value + f["scale_bits"].value / f["scale_block"].value
    weights = f["total_params"].value * bits / 8
    state = concurrent * (context_tokens * f["kv_bytes_per_token"].value + f["kda_state_bytes"].value)
    return Memory(bits_per_weight=bits, weights_bytes=weights, state_bytes=state, floor_bytes=weights + state)


def least_accelerators(floor_bytes: Decimal, memory_gb: Decimal) -> int:
    """The fewest accelerators of `memory_gb` (decimal GB, as vendors state it) whose memory holds the floor."""
    return ceil(floor_bytes / (memory_gb * 1_000_000_000))


def recommended(least: int, supernode: int, domain: int) -> int:
    """The supernode the model is recommended on: at least `supernode` accelerators and at least the least that
    hold it, in whole interconnect domains."""
    return ceil(Decimal(max(least, supernode)) / domain) * domain


def throughput(f: Mapping[str, Figure]) -> tuple[Decimal, Decimal]:
    """Tokens a second one accelerator prefills (computed, not hit) and decodes, scaled from the deployment."""
    params = f["deployed_active_params"].value / f["active_params"].value
    prefill = (f["prefill_per_node"].value * (1 - f["prefill_hit_share"].value) / f["node_size"].value * params
               * f["fp8_tflops"].value / f["base_fp8_tflops"].value)  # fmt: skip
    decode = (f["decode_per_node"].value / f["node_size"].value * params
              * f["hbm_tbps"].value / f["base_hbm_tbps"].value)  # fmt: skip
    return prefill, decode


def hourly(f: Mapping[str, Figure], pricing: str) -> Decimal:
    """The hourly price an accelerator is costed at: the one given, else the middle of the pricing's range."""
    if "hourly" in f:
        return f["hourly"].value
    prefix = "reserved" if pricing == "reserved" else "on_demand"
    return (f[f"{prefix}_low"].value + f[f"{prefix}_high"].value) / 2


@frozen(slots=True)
class Lines:
    """The two cost lines against monthly volume (tokens a month: input + output)."""

    api_per_token: Decimal  # the workload's API bill / its tokens
    fleet_per_token: Decimal  # accelerator-hours a token at the utilisation x the hourly price
    fleet_floor: Decimal  # the recommended supernode, all month

    def api(self, volume: Decimal) -> Decimal:
        return volume * self.api_per_token

    def fleet(self, volume: Decimal) -> Decimal:
        return max(self.fleet_floor, volume * self.fleet_per_token)

    @property
    def floor_capacity(self) -> Decimal:
        """The monthly volume the recommended supernode serves at the utilisation."""
        return self.fleet_floor / self.fleet_per_token if self.fleet_per_token else Decimal(0)

    @property
    def break_even(self) -> Decimal | None:
        """The monthly volume where the lines cross (past it the fleet costs less), or None: never."""
        if self.api_per_token <= self.fleet_per_token:
            return None
        return self.fleet_floor / self.api_per_token


def lines(f: Mapping[str, Figure], work: Workload, pricing: str, accelerators: int) -> Lines:
    prefill, decode = throughput(f)
    seconds = Decimal(work.miss_tokens) / prefill + Decimal(work.output_tokens) / decode  # accelerator-seconds
    price = hourly(f, pricing)
    tokens = Decimal(work.tokens) or Decimal(1)
    fleet_per_token = seconds / SECONDS_PER_HOUR / f["utilization"].value * price / tokens
    floor = accelerators * price * f["hours_per_month"].value
    return Lines(api_per_token=work.api_cost / tokens, fleet_per_token=fleet_per_token, fleet_floor=floor)


def curve(lines: Lines, workload_monthly: Decimal | None, points: int = 9) -> list[Decimal]:
    """Monthly volumes to draw the lines at: from 0 to past the break-even, the floor's capacity and the
    workload's own volume (the larger of twice the largest of them), evenly."""
    marks = [m for m in (lines.break_even, lines.floor_capacity, workload_monthly) if m]
    top = Decimal(2) * max(marks) if marks else Decimal(1_000_000_000)
    top = Decimal(_nice(float(top)))
    return [top * i / (points - 1) for i in range(points)]


def _nice(value: float) -> float:
    """`value` rounded up to 1, 2, 2.5 or 5 times a power of ten."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    return float(next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= value))


# ---- the report -----------------------------------------------------------------------------------------------

PLACES = Decimal("1E-10")


def report(
    work: Workload,
    *,
    model: str | None = None,
    accelerator: str | None = None,
    deployment: str | None = None,
    pricing: str = "reserved",
    overrides: Mapping[str, Decimal] | None = None,
) -> SelfhostReport:
    """The self-hosting report of `work` (None: the catalogue's default model, accelerator and deployment):
    `overrides` by figure key (checked again with `parse_value`, whoever made them). What the figures derive is
    checked before it is used (`_check_derived`)."""
    chosen = catalogue()["defaults"]
    model, accelerator, deployment = (model or chosen["model"], accelerator or chosen["accelerator"],
                                      deployment or chosen["deployment"])  # fmt: skip
    if pricing not in PRICINGS:
        raise InputError(f"pricing must be one of {', '.join(PRICINGS)} (got {pricing!r})", field="pricing")
    given = {key: parse_value(key, value) for key, value in (overrides or {}).items()}
    f = apply(defaults(model, accelerator, deployment), given)
    _check_ranges(f)
    if "concurrent" in given or "context_tokens" in given:
        found = concurrency(work, f["stream_tokens_per_second"].value)
        concurrent = int(given.get("concurrent", found[0]))
        context = int(given.get("context_tokens", found[1]))
        how = "given"
    else:
        concurrent, context, how = concurrency(work, f["stream_tokens_per_second"].value)
    mem = memory(f, concurrent, context)
    _check_derived(f, mem, given, accelerator)
    cat = catalogue()["accelerators"]
    holdings = []
    for name, acc in cat.items():
        gb = f["memory_gb"].value if name == accelerator else Decimal(acc["figures"]["memory_gb"]["value"])
        domain = int(f["domain"].value if name == accelerator else Decimal(acc["figures"]["domain"]["value"]))
        least = least_accelerators(mem.floor_bytes, gb)
        holdings.append(Holding(accelerator=name, name=acc["name"], memory_gb=gb, domain=domain, least=least,
                                recommended=recommended(least, int(f["supernode"].value), domain)))  # fmt: skip
    own = next(h for h in holdings if h.accelerator == accelerator)
    count = int(given["accelerators"]) if "accelerators" in given else own.recommended
    if count < own.least:
        raise InputError(f"{count} accelerators cannot hold the memory floor: {own.least} at least",
                         field="accelerators")  # fmt: skip
    ln = lines(f, work, pricing, count)
    prefill, decode = throughput(f)
    span = work.span
    month = f["hours_per_month"].value * SECONDS_PER_HOUR
    monthly = _round(Decimal(work.tokens) * month / Decimal(repr(span)), Decimal(1)) if span else None
    prefix = "reserved" if pricing == "reserved" else "on_demand"
    even = ln.break_even
    volumes = curve(ln, monthly)
    notes = [
        "the API bill and the fleet's prefill both count the same simulated prefix cache: a hit is billed at the "
        "hit rate on the API and costs no prefill on the fleet",
        f"throughput scaled from {deployment} by active parameters "
        f"({f['deployed_active_params'].value:.4g} / {f['active_params'].value:.4g}) and by FP8 compute (prefill) "
        "and memory bandwidth (decode) against its accelerator: an estimate",
        "past the floor the fleet grows by the accelerator-hour (real fleets grow by the node)",
        "memory in decimal GB, as vendors state it; no room is kept for activations, the runtime or fragmentation: "
        "a floor, not a plan",
    ]
    if even is None:
        notes.append("the API costs less a token than the fleet at this utilisation: self-hosting never breaks even")
    figures = [FigureUsed(key=x.key, value=x.value, unit=x.unit, source=x.source, date=x.date, estimate=x.estimate,
                          overridden=x.overridden) for x in f.values()]  # fmt: skip
    arch = architecture(model)
    return SelfhostReport(
        model=model,
        model_name=arch["name"],
        weights_open=arch["weights_open"]["date"],
        workload=WorkloadInfo(
            kind="trace" if work.kind == "trace" else "sessions",
            source=work.source,
            units=work.units,
            cache=work.cache,
            input_tokens=work.input_tokens,
            hit_tokens=work.hit_tokens,
            miss_tokens=work.miss_tokens,
            output_tokens=work.output_tokens,
            api_cost=work.api_cost,
            span_seconds=span,
            monthly_tokens=monthly,
            concurrent_contexts=concurrent,
            context_tokens=context,
            concurrency_from=how,
        ),  # fmt: skip
        memory=MemoryFloor(
            bits_per_weight=mem.bits_per_weight,
            weights_bytes=mem.weights_bytes,
            state_bytes=mem.state_bytes,
            floor_bytes=mem.floor_bytes,
            by_accelerator=holdings,
        ),  # fmt: skip
        fleet=Fleet(
            accelerator=accelerator,
            accelerators=count,
            deployment=deployment,
            prefill_tokens_per_second=_round(prefill, Decimal("0.01")),
            decode_tokens_per_second=_round(decode, Decimal("0.01")),
            pricing="reserved" if pricing == "reserved" else "on-demand",
            hourly=hourly(f, pricing),
            hourly_low=f[f"{prefix}_low"].value,
            hourly_high=f[f"{prefix}_high"].value,
            utilization=f["utilization"].value,
            monthly_floor=ln.fleet_floor,
            floor_capacity_tokens=_round(ln.floor_capacity, Decimal(1)),
        ),  # fmt: skip
        api_per_mtok=_round(ln.api_per_token * 1_000_000, PLACES),
        fleet_per_mtok=_round(ln.fleet_per_token * 1_000_000, PLACES),
        break_even_tokens=_round(even, Decimal(1)) if even is not None else None,
        break_even_cost=ln.fleet_floor if even is not None else None,
        workload_monthly_api=_round(ln.api(monthly), Decimal("0.01")) if monthly is not None else None,
        workload_monthly_fleet=_round(ln.fleet(monthly), Decimal("0.01")) if monthly is not None else None,
        curve=[
            CostPoint(
                monthly_tokens=v, api=_round(ln.api(v), Decimal("0.01")), fleet=_round(ln.fleet(v), Decimal("0.01"))
            )
            for v in volumes
        ],  # fmt: skip
        figures=figures,
        estimates=[x.key for x in f.values() if x.estimate],
        notes=notes,
    )


def _round(value: Decimal, places: Decimal) -> Decimal:
    """`value` rounded to `places`, in a context wide enough for any figure the checked figures make."""
    return value.quantize(places, context=WIDE)


# The figures each derived one is made of (the first of them the run gave is the one an error names).
FLOOR_FIGURES = ("memory_gb", "concurrent", "context_tokens", "kv_bytes_per_token", "kda_state_bytes",
                 "total_params", "weight_bits", "scale_bits", "scale_block")  # fmt: skip
PREFILL_FIGURES = ("active_params", "fp8_tflops", "prefill_per_node", "prefill_hit_share", "node_size",
                   "deployed_active_params")  # fmt: skip
DECODE_FIGURES = ("active_params", "hbm_tbps", "decode_per_node", "node_size", "deployed_active_params")


def _check_derived(f: Mapping[str, Figure], mem: Memory, given: Mapping[str, Decimal], accelerator: str) -> None:
    """What the figures derive, checked before it is divided by or counted: the accelerators the memory floor
    needs (at most `BOUNDS["accelerators"]`'s most) and an accelerator's throughput (within `THROUGHPUT`). An
    `InputError` names the first figure the run gave of those it is made of, and what it would be."""

    def refuse(message: str, figures: Sequence[str], otherwise: str) -> InputError:
        named = [k for k in figures if k in given]
        hint = f"from the figures given: {', '.join(named)}" if named else otherwise
        return InputError(message, field=named[0] if named else None, hint=hint)

    most = BOUNDS["accelerators"][1]
    needed = mem.floor_bytes / (f["memory_gb"].value * 1_000_000_000)
    if needed > most:
        raise refuse(f"the memory floor ({mem.floor_bytes:.3g} bytes) would need {needed:.3g} accelerators of "
                     f"{f['memory_gb'].value} GB ({accelerator}): more than {most:,}", FLOOR_FIGURES,
                     "from the workload's contexts in flight: give --concurrent and --context-tokens")  # fmt: skip
    prefill, decode = throughput(f)
    low, high = THROUGHPUT
    for what, value, figures in (("prefill", prefill, PREFILL_FIGURES), ("decode", decode, DECODE_FIGURES)):
        if not low <= value <= high:
            raise refuse(f"an accelerator would {what} {value:.3g} tokens a second: the figures must make it "
                         f"from {low:f} to {high:,f}", figures, "from the shipped figures")  # fmt: skip


def _check_ranges(f: Mapping[str, Figure]) -> None:
    """Figures that must agree with each other: a range's low end at most its high end, no more active experts or
    parameters than there are."""
    for prefix in ("on_demand", "reserved"):
        low, high = f[f"{prefix}_low"].value, f[f"{prefix}_high"].value
        if low > high:
            raise InputError(f"{prefix}_low {low} is above {prefix}_high {high}", field=f"{prefix}_low")
    if f["active_experts"].value > f["experts"].value:
        raise InputError("more active experts than experts", field="active_experts")
    if f["active_params"].value > f["total_params"].value:
        raise InputError("more active parameters than parameters", field="active_params")
