"""Benchmark: request traces. Prints its figures; asserts nothing about time.

1. The Mooncake conversation trace (12,031 requests) under `k3` with a 10M-token cache, beside the time to
   merely parse the file with the json module, in the same run.
2. A generated trace of 1M requests (kcost's own trace shape), streamed from disk under `k3` with a 10M-token
   cache, with the peak memory of the process.

Run: python bench/bench_traces.py [--trace PATH] [--requests 1000000]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from kcost.cache import parse_cache_model
from kcost.cache.trace import ClusterCache
from kcost.readers.trace import read_trace
from kcost.traces import parse_capacity

HERE = Path(__file__).resolve().parent
DEFAULT_TRACE = HERE.parent.parent / "shared" / "traces" / "conversation_trace.jsonl"


def serve_all(path: str, capacity: str) -> tuple[int, int, int]:
    cache = ClusterCache(parse_cache_model("k3"), parse_capacity(capacity)[1])
    requests = inputs = hits = 0
    for req in read_trace(path):
        requests += 1
        inputs += req.input
        hits += cache.serve(req)
    return requests, inputs, hits


def generate(path: Path, n: int, seed: int = 7) -> None:
    """Conversations that grow turn by turn, 200 at a time in flight, each 2 to 40 turns long."""
    rng = random.Random(seed)
    live: dict[int, list[int]] = {}
    next_conv = next_block = 0
    with path.open("w") as out:
        for i in range(n):
            if len(live) < 200 or rng.random() < 0.05:
                live[next_conv] = []
                next_conv += 1
            conv = rng.choice(list(live))
            blocks = live[conv]
            for _ in range(rng.randint(1, 6)):
                blocks.append(next_block)
                next_block += 1
            length = len(blocks) * 512 - rng.randint(0, 300)
            out.write(json.dumps({"time": i * 0.05, "input_tokens": length, "output_tokens": 200,
                                  "blocks": blocks, "session": f"c{conv}"}) + "\n")  # fmt: skip
            if len(blocks) > 80 or rng.random() < 0.04:
                del live[conv]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--requests", type=int, default=1_000_000)
    args = parser.parse_args()
    if Path(args.trace).exists():
        start = time.perf_counter()
        with open(args.trace) as fh:
            lines = sum(1 for line in fh if json.loads(line))
        parse = time.perf_counter() - start
        start = time.perf_counter()
        requests, inputs, hits = serve_all(args.trace, "10M")
        sim = time.perf_counter() - start
        print(f"{Path(args.trace).name}: {lines:,} requests, k3, 10M-token cache: {hits / inputs:.1%} hits")
        print(f"{'':<40}{'seconds':>10}")
        print(f"{'  json.loads of every line':<40}{parse:>10.3f}")
        print(f"{'  kcost: read, simulate (k3, 10M)':<40}{sim:>10.3f}")
        print(f"{'  ratio':<40}{sim / parse:>9.1f}x")
        print()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "generated.jsonl"
        generate(path, args.requests)
        size = path.stat().st_size
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        requests, inputs, hits = serve_all(str(path), "10M")
        took = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        print(f"generated trace: {requests:,} requests, {size / 1e6:.0f} MB on disk, k3, 10M-token cache: "
              f"{hits / inputs:.1%} hits in {took:.1f} s ({requests / took:,.0f} requests/s)")  # fmt: skip
        print(f"  peak memory of this process: {peak / 1024:.0f} MB (before the run: {before / 1024:.0f} MB)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
