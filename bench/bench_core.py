"""Benchmark: billing a long session, and kcost's cold start. Prints its figures; asserts nothing about time.

1. A 1,000-turn append-only session that grows to about 1M tokens, billed under `k3`:
   - kcost: each distinct span of tokens is interned once; a request costs what is new in it;
   - naive: the same rules, but every prompt is hashed from scratch in chained 512-token blocks (blake2b over
     the token ids), the way a direct implementation re-sends and re-hashes its prefix on every turn.
   Both must find the same hit tokens on every turn; the script checks that before printing times.
2. Cold start: `kcost --version` and `kcost bill` on the lesson's sample, beside `python -c pass` (the floor
   any Python CLI pays), as the median of several runs.

Run: python bench/bench_core.py [--turns 1000] [--runs 7]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import time
from array import array
from pathlib import Path

from kcost.billing.bills import bill
from kcost.cache.model import CacheModel, Kind
from kcost.cache.simulator import simulate
from kcost.model.k3 import HASH_BLOCK
from kcost.model.requests import Request
from kcost.pricing.prices import load_prices
from kcost.readers.specs.models import Prefix, SessionSpec, Turn
from kcost.readers.specs.turnspec import build

ROOT = Path(__file__).resolve().parent.parent


def long_session(turns: int) -> SessionSpec:
    """2,000 tokens of system prompt, then turns of 600 new tokens and 400 output tokens sent back."""
    return SessionSpec(
        name=f"{turns}-turn append-only session",
        prefix=Prefix(tokens=2_000),
        turns=[Turn(new=600, output=400, reasoning=250, repeat=turns)],
    )


def naive_hits(requests: tuple[Request, ...], block: int = HASH_BLOCK) -> list[int]:
    """`k3` (no TTL, outputs not cached) with every prompt's blocks hashed from scratch."""
    tokens = array("q")
    cached: set[bytes] = set()
    checkpoints: set[bytes] = set()
    hits = []
    for req in requests:
        del tokens[req.keep :]
        for span in req.append:
            first = span.seg << 32 | span.start
            tokens.extend(range(first, first + span.length))
        raw = tokens.tobytes()
        size = block * tokens.itemsize
        chain: list[bytes] = []
        prev = b""
        for i in range(len(tokens) // block):  # every block of every prompt, every time
            prev = hashlib.blake2b(prev + raw[i * size : (i + 1) * size], digest_size=16).digest()
            chain.append(prev)
        length = len(tokens)
        cap = (length - 1) // block * block
        n_cached = 0
        while n_cached < len(chain) and chain[n_cached] in cached:
            n_cached += 1
        hit = 0
        for n in range(min(n_cached * block, cap) // block, 0, -1):
            if chain[n - 1] in checkpoints:
                hit = n * block
                break
        for b in {min(req.turn_start // block * block, cap), cap}:
            if b > hit:
                checkpoints.add(chain[b // block - 1])
        cached.update(chain)
        hits.append(hit)
    return hits


def timed(fn, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def median_run(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7, help="runs per cold-start figure (median)")
    args = parser.parse_args()

    spec = long_session(args.turns)
    session = build(spec, source="bench", name=spec.name or "bench")
    model = CacheModel(Kind.K3, ttl=None)
    prices = load_prices()

    t_sim, outcomes = timed(lambda: list(simulate(session.requests, model)))
    t_bill, result = timed(lambda: bill(session, cache=model, prices=prices))
    t_naive, naive = timed(naive_hits, session.requests)
    assert [o.hit for o in outcomes] == naive, "naive and kcost disagree"
    print(
        f"session: {args.turns} turns, last prompt {outcomes[-1].input:,} tokens, "
        f"{sum(o.input for o in outcomes):,} prompt tokens sent in all; both find the same hits"
    )
    print(f"bill total under k3: ${result.summary.total} ({result.summary.hit_rate:.1%} hits)")
    print()
    print(f"{'1,000-turn session, k3':<44}{'seconds':>10}")
    print(f"{'  kcost: simulate (incremental spans)':<44}{t_sim:>10.3f}")
    print(f"{'  kcost: simulate + price + bill models':<44}{t_bill:>10.3f}")
    print(f"{'  naive: re-hash every prompt from scratch':<44}{t_naive:>10.3f}")
    print(f"{'  speed-up (naive / kcost bill)':<44}{t_naive / t_bill:>9.0f}x")
    print()
    python = median_run([sys.executable, "-c", "pass"], args.runs)
    version = median_run([sys.executable, "-m", "kcost", "--version"], args.runs)
    lesson = median_run(
        [sys.executable, "-m", "kcost", "bill", "sample_sessions/coding-400k.yaml", "--width", "100"],
        args.runs,
    )
    print(f"{'cold start, median of ' + str(args.runs):<44}{'ms':>10}")
    print(f"{'  python -c pass (the floor)':<44}{python * 1000:>10.0f}")
    print(f"{'  kcost --version':<44}{version * 1000:>10.0f}")
    print(f"{'  kcost bill sample_sessions/coding-400k.yaml':<44}{lesson * 1000:>10.0f}")


if __name__ == "__main__":
    main()
