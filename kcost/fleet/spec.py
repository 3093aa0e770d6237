"""What a fleet run is asked to do: the fleet, its cache capacity, its failures, its prefill budget; and the
parsers of the option values that say so."""

from __future__ import annotations

import re

from kcost.cache.model import parse_duration
from kcost.errors import InputError
from kcost.model.frozen import frozen
from kcost.model.k3 import HASH_BLOCK, KDA_CHECKPOINT_BYTES, PAGE_BYTES

LONG_FROM = 2_048  # the lesson's short class: requests under about 2K tokens
PREFILL_RATE = 50_000.0  # tokens a second a cluster prefills: an assumption, settable


@frozen
class Failure:
    cluster: int
    start: float  # seconds
    end: float


@frozen
class FleetSpec:
    clusters: int = 1
    capacity_pages: int | None = None
    failures: tuple[Failure, ...] = ()
    secondary: str = "consistent"  # or "successor", the naive baseline
    prefill_rate: float = PREFILL_RATE
    long_from: int = LONG_FROM
    long_share: float | None = None  # the long class's budget, 0..1; None: no budget
    checkpoint_bytes: int = KDA_CHECKPOINT_BYTES  # one KDA checkpoint in the pool (K3: about 449 MB)


_CAPACITY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def parse_capacity(text: str) -> tuple[str, int | None]:
    """(label, pages): `inf`; tokens of MLA KV (`10M`, `3000000`); bytes (`80GiB`, `500GB`)."""
    raw = text.strip()
    if raw.lower() in ("inf", "unlimited", "none"):
        return "inf", None
    match = _CAPACITY.match(raw)
    if not match:
        raise InputError(f"not a capacity: {text!r}", hint="10M (tokens), 80GiB, 500GB, inf")
    number, unit, byte = float(match.group(1)), match.group(2).upper(), match.group(3)
    if byte:  # bytes: KiB, MiB, GiB, TiB are powers of 1024; KB, MB, GB, TB of 1000
        binary = byte.lower() == "ib" and unit
        factor = 1024 ** ("KMGT".index(unit) + 1) if binary else _SCALE[unit]
        pages = int(number * factor // PAGE_BYTES)
    else:
        pages = int(number * _SCALE[unit] // HASH_BLOCK)
    if pages < 1:
        raise InputError(f"holds less than one {HASH_BLOCK}-token block: {text!r}")
    return raw, pages


def parse_failure_text(text: str) -> Failure:
    """`3@600-1200` (seconds) or `3@10m-20m`: cluster 3 down from the first time to the second."""
    match = re.match(r"^\s*(\d{1,6})\s*@\s*([^-]+)-(.+)$", text)
    if not match:
        raise InputError(f"not a failure: {text!r}", hint="CLUSTER@START-END, e.g. 3@600-1200")
    start, end = (parse_duration(match.group(i).strip()) for i in (2, 3))
    if start is None or end is None or end <= start:
        raise InputError(f"needs a start before its end: {text!r}")
    return Failure(int(match.group(1)), start, end)


def check_failure(failure: Failure, clusters: int) -> Failure:
    """A failure of one of `clusters` clusters, with another to fail over to."""
    if clusters < 2:
        raise InputError("a failure needs another cluster to fail over to", hint="give 16 clusters, say")
    if failure.cluster >= clusters:
        raise InputError(f"cluster {failure.cluster} of {clusters} (they count from 0)")
    return failure


def parse_class_budget(text: str) -> float:
    """`long=30%` or `long=0.3`: the long class's share of prefill while short requests wait."""
    name, _, value = text.partition("=")
    raw = value.strip().removesuffix("%")
    if name.strip() != "long" or not raw.replace(".", "", 1).isdecimal():
        raise InputError(f"not a class budget: {text!r}", hint="long=30% or long=0.3")
    share = float(raw) / 100 if value.strip().endswith("%") else float(raw)  # 30% or a fraction, 0.3
    if not 0 < share <= 1:
        raise InputError(f"must be above 0 and at most 100% (got {text})")
    return share
