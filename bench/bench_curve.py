"""Benchmark: a 5-point capacity curve of `kcost trace` beside one capacity, whole processes, in the same run.

On generated traces (`bench_traces.generate`: conversations growing turn by turn) of 100K and 1M requests, under
the default cache model (k3, 300 s TTL): `--capacity 1M,3M,10M,30M,inf` against `--capacity inf` (the default)
and `--capacity 1M`, in turn (curve, one, curve, one, ...); the figures are medians, the ratios taken run by run.
The curve is one stack pass over the trace (`kcost/fleet/curve.py`); the issue's target is at most 1.3x one
capacity. Prints its figures; asserts nothing about time.

Run: python bench/bench_curve.py [--runs 5] [--sizes 100000,1000000] [--engine compiled|python]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_traces import KCOST, generate, timed  # noqa: E402

CURVE = "1M,3M,10M,30M,inf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="100000,1000000", help="requests in each generated trace")
    parser.add_argument("--engine", default="auto", choices=["auto", "compiled", "python"])
    args = parser.parse_args()
    version = subprocess.run([*KCOST, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    print(f"{version}; {os.cpu_count()} cores; medians of {args.runs} runs, whole processes; engine {args.engine}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(size) for size in args.sizes.split(",")):
            path = Path(tmp) / f"generated-{n}.jsonl"
            start = time.perf_counter()
            generate(path, n)
            print(f"generated {n:,} requests ({path.stat().st_size / 1e6:,.0f} MB) in "
                  f"{time.perf_counter() - start:.0f} s")  # fmt: skip

            def command(capacity: str, trace: Path = path) -> list[str]:
                return [*KCOST, "trace", str(trace), "--capacity", capacity, "--engine", args.engine,
                        "--format", "json"]  # fmt: skip

            walls: dict[str, list[float]] = {CURVE: [], "inf": [], "1M": []}
            peaks: dict[str, list[float]] = {key: [] for key in walls}
            for _ in range(args.runs):
                for capacity in walls:
                    wall, peak = timed(command(capacity))
                    walls[capacity].append(wall)
                    peaks[capacity].append(peak)
            curve = walls[CURVE]
            for capacity, times in walls.items():
                line = f"  --capacity {capacity:<20}{statistics.median(times):>8.2f} s  peak " \
                       f"{statistics.median(peaks[capacity]):>5.0f} MB"  # fmt: skip
                if capacity != CURVE:
                    ratio = statistics.median(c / one for c, one in zip(curve, times, strict=True))
                    line += f"  curve / this: {ratio:.2f}x (target <= 1.3x)"
                print(line, flush=True)


if __name__ == "__main__":
    main()
