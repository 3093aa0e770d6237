"""Benchmark: `kcost trace`, whole processes, beside Python's json module merely parsing the same file.

Each pair runs in turn (kcost, baseline, kcost, baseline, ...) and the figures are medians of the runs; the ratio is
taken pair by pair. Both run in the temporary folder (no kcost.toml or pyproject.toml to read). Prints its
figures; asserts nothing about time.

1. The Mooncake conversation trace under `k3` with a 10M-token cache (issue target: at most 1.5x the parse).
2. The 5-point `ideal` capacity curve on the synthetic trace (target: at most 2.5x).
3. A generated trace of 1M requests at the default capacity (unlimited, 300 s TTL), with peak memory (target: at
   most 1x the parse, under 100 MB).
4. With --requests 10000000 as well: 10M requests, whose peak memory should equal the 1M run's (no baseline: the
   parse of a 4 GB file into a list would need some 20 GB).

Run: python bench/bench_traces.py [--runs 5] [--large 1000000] [--huge 10000000] [--engine compiled|python]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure import measured  # noqa: E402

TRACES = HERE.parent.parent / "shared" / "traces"
KCOST = [shutil.which("kcost") or "kcost"]
# as an installed kcost runs: with its compiled bytecode cached (a shell that forbids writing it would time the
# compilation of every module at every start)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of one whole process, its output thrown away; started by a runner of its
    own, so that its peak does not start at this process's (`measure.py`)."""
    one = measured(command, env=ENV, cwd=tempfile.gettempdir())
    if one.code:
        raise SystemExit(f"failed ({one.code}): {' '.join(command)}\n{one.stderr}")
    return one.seconds, one.peak_mb


def parse_baseline(path: Path) -> list[str]:
    """The issue's yardstick: every line parsed by the json module (and kept, as that one-liner keeps them)."""
    return [sys.executable, "-c", f"import json; [json.loads(l) for l in open({str(path)!r})]"]


def pair(name: str, kcost: list[str], baseline: list[str] | None, runs: int, target: str) -> None:
    a, b, ratios, peaks = [], [], [], []
    for _ in range(runs):
        wall, peak = timed(kcost)
        a.append(wall)
        peaks.append(peak)
        if baseline:
            wall_b, _ = timed(baseline)
            b.append(wall_b)
            ratios.append(wall / wall_b)
    line = f"{name:<48}{statistics.median(a):>9.3f} s  peak {statistics.median(peaks):>6.0f} MB"
    if baseline:
        line += f"  parse {statistics.median(b):>8.3f} s  ratio {statistics.median(ratios):>5.2f}x  ({target})"
    print(line, flush=True)


def generate(path: Path, n: int, seed: int = 7) -> None:
    """Conversations that grow turn by turn, 200 at a time in flight, each 2 to 80 blocks long, 20 requests a
    second, in kcost's own trace shape (each line built from its conversation's text so far: fast enough for 10M)."""
    rng = random.Random(seed)
    live: dict[int, tuple[list[int], list[str]]] = {}
    next_conv = next_block = 0
    with path.open("w") as out:
        for i in range(n):
            if len(live) < 200 or rng.random() < 0.05:
                live[next_conv] = ([], [])
                next_conv += 1
            conv = rng.choice(list(live)) if len(live) < 400 else next(iter(live))
            blocks, text = live[conv]
            for _ in range(rng.randint(1, 6)):
                blocks.append(next_block)
                text.append(str(next_block))
                next_block += 1
            length = len(blocks) * 512 - rng.randint(0, 300)
            out.write(f'{{"time": {i * 0.05:.2f}, "input_tokens": {length}, "output_tokens": 200, '
                      f'"blocks": [{", ".join(text)}], "session": "c{conv}"}}\n')  # fmt: skip
            if len(blocks) > 80 or rng.random() < 0.04:
                del live[conv]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--large", type=int, default=1_000_000, help="requests in the generated trace")
    parser.add_argument("--huge", type=int, default=0, help="requests in a second generated trace (memory only)")
    parser.add_argument("--engine", default="auto", choices=["auto", "compiled", "python"])
    args = parser.parse_args()
    engine = ["--engine", args.engine, "--format", "json"]
    version = subprocess.run([*KCOST, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    print(f"{version}; {os.cpu_count()} cores; medians of {args.runs} runs, whole processes")
    conversation, synthetic = TRACES / "conversation_trace.jsonl", TRACES / "synthetic_trace.jsonl"
    if conversation.exists():
        pair("conversation trace, k3, 10M", [*KCOST, "trace", str(conversation), "--cache", "k3", "--capacity",
             "10M", *engine], parse_baseline(conversation), args.runs, "target <= 1.5x")  # fmt: skip
    if synthetic.exists():
        pair("synthetic trace, ideal, 5-point curve", [*KCOST, "trace", str(synthetic), "--cache", "ideal",
             "--capacity", "1M,3M,10M,30M,inf", *engine], parse_baseline(synthetic), args.runs,
             "target <= 2.5x")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for n, baseline in ((args.large, True), (args.huge, False)):
            if not n:
                continue
            path = Path(tmp) / f"generated-{n}.jsonl"
            start = time.perf_counter()
            generate(path, n)
            print(f"generated {n:,} requests ({path.stat().st_size / 1e6:,.0f} MB) in "
                  f"{time.perf_counter() - start:.0f} s")  # fmt: skip
            runs = args.runs if baseline else 1
            pair(f"generated {n:,}, default capacity", [*KCOST, "trace", str(path), *engine],
                 parse_baseline(path) if baseline else None, runs, "target <= 1x, < 100 MB")  # fmt: skip
            path.unlink()


if __name__ == "__main__":
    main()
