"""Benchmark: sessions at the declared bounds (`kcost/model/bounds.py`: `MAX_TURNS` turns, prompts of `MAX_TOKENS`
tokens) billed under every cache model, beside the same sessions with prompts of 10^4 tokens in the same run.

`bounds.py` promises such a session is "billed in seconds": the simulator's work grows with turns and with the
spans and checkpoints a request touches, never with the tokens it re-sends, so the "x small" column (the time at
10^9 tokens over the time at 10^4) stays near 1 wherever that holds. Shapes, each `MAX_TURNS` turns:

- resend: a 10^9-token prefix, every turn adds 1,000 tokens and 1,000 of output (the long-context agent);
- edit: the same, but every turn edits the prompt at its first token (every turn misses, all of it);
- idle: the same, with an hour's idle before every turn (every turn finds the cache expired);
- grow: every turn appends 10^9 new tokens and 10^9 of output (the prompt passes 10^14 tokens).

Times `kcost.api.bill` in this process (reading the spec, simulating, pricing: what every report is made of),
the median of `--runs`; then one whole `kcost bill --format json` process per shape at the bounds, as a user
runs it. Asserts nothing about time.

Run: python bench/bench_bounds.py [--turns N] [--runs 1] [--models k3,anthropic]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kcost import api
from kcost.cache.model import Kind
from kcost.model.bounds import MAX_TOKENS, MAX_TURNS
from kcost.readers.specs.models import SessionSpec
from kcost.readers.specs.turnspec import build

EXTRA_MODELS = ["k3:every=1"]  # a checkpoint at every block: the most checkpoints a model keeps


def spec(shape: str, tokens: int, turns: int) -> dict[str, Any]:
    small = max(1, tokens // 10**6)  # 1,000 at the bounds
    first = {"new": small, "output": small}
    rest: dict[str, Any] = {
        "resend": {"new": small, "output": small},
        "edit": {"edit_at": 0, "new": small, "output": small},
        "idle": {"idle": "1h", "new": small, "output": small},
        "grow": {"new": tokens, "output": tokens},
    }[shape]
    return {"name": f"{shape} at {tokens:,} tokens", "prefix": {"tokens": tokens},
            "turns": [first, {**rest, "repeat": turns - 1}]}  # fmt: skip


def timed_bill(data: dict[str, Any], cache: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session = build(SessionSpec.model_validate(data), source="bench", name=data["name"])
        api.bill(session, cache=cache)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=MAX_TURNS)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--models", help="comma-separated --cache values (default: every model)")
    parser.add_argument("--shapes", default="resend,edit,idle,grow")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else [k.value for k in Kind] + EXTRA_MODELS
    shapes = args.shapes.split(",")
    print(f"{args.turns:,} turns a session; seconds to read, simulate and price it (median of {args.runs})")
    print(f"{'cache':<12} {'shape':<7} {'10^9 tokens':>12} {'10^4 tokens':>12} {'x small':>8}")
    worst = 0.0
    for model in models:
        for shape in shapes:
            big = timed_bill(spec(shape, MAX_TOKENS, args.turns), model, args.runs)
            small = timed_bill(spec(shape, 10**4, args.turns), model, args.runs)
            worst = max(worst, big)
            print(f"{model:<12} {shape:<7} {big:>12.2f} {small:>12.2f} {big / small:>7.2f}x", flush=True)
    print(f"slowest session at the bounds: {worst:.1f} s")
    print("\nwhole process, `kcost bill SPEC --format json` at the bounds (default cache model):")
    with tempfile.TemporaryDirectory(prefix="kcost-bench-") as tmp:
        for shape in shapes:
            path = Path(tmp) / f"{shape}.json"
            path.write_text(json.dumps(spec(shape, MAX_TOKENS, args.turns)))
            start = time.perf_counter()
            cmd = [sys.executable, "-m", "kcost", "bill", str(path), "--format", "json"]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            print(f"  {shape:<7} {time.perf_counter() - start:6.2f} s", flush=True)


if __name__ == "__main__":
    main()
