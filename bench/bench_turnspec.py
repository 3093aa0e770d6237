"""Benchmark: billing a long growing turn spec, as whole processes, at two lengths, beside a baseline revision in
the same run. Prints its figures; asserts nothing about time.

The spec is what an agent session that never compacts looks like: a 6,000-token prefix, then every turn sends
back the previous output (reasoning included) and adds 1,000 new tokens, 300 output of which 100 reasoning. The
work of a bill must grow with the turns (each adds a fixed number of distinct tokens), never with the sum of all
prompt lengths: the time a turn (the last column) stays the same from `--turns` to four times as many. Up to
12f4aa8 (the default baseline) a turn spec kept every earlier turn's reasoning in a list it rebuilt at each turn,
so a turn took time in proportion to the turns before it: 52 s for 10,000 turns (2.2 s now).

With `--baseline REF` (default: 12f4aa8, before the fix), every command also runs from a checkout of REF (a
temporary git worktree), interleaved with this one.

Run: python bench/bench_turnspec.py [--turns 2000] [--runs 3] [--baseline REF | --no-baseline]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trees import add_baseline, baseline_of, trees  # noqa: E402


def write_spec(path: Path, turns: int) -> None:
    path.write_text(
        "name: a long growing session\nprefix:\n  tokens: 6_000\n"
        f"turns:\n  - {{new: 1_000, output: 300, reasoning: 100, repeat: {turns}}}\n",
        encoding="utf-8",
    )


def timed(spec: Path, tree: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kcost", "bill", str(spec), "--format", "json", "-o", "/dev/null"],
                   cwd=tree, check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    add_baseline(parser, "12f4aa8")
    args = parser.parse_args()
    baseline = baseline_of(args)
    with tempfile.TemporaryDirectory(prefix="kcost-bench-") as tmp, trees(baseline, Path(tmp)) as found:
        print(f"median of {args.runs} runs; kcost bill SPEC --format json (a growing spec, reasoning sent back)")
        names = ["this tree", *([baseline] if baseline else [])]
        print(f"  {'turns':>7}" + "".join(f"{name + ' s':>16}{'ms a turn':>11}" for name in names))
        for turns in (args.turns, 4 * args.turns):
            spec = Path(tmp) / f"growing-{turns}.yaml"
            write_spec(spec, turns)
            times: list[list[float]] = [[] for _ in found]
            for _ in range(args.runs):
                for i, tree in enumerate(found):
                    times[i].append(timed(spec, tree))
            cells = [(statistics.median(t), 1000 * statistics.median(t) / turns) for t in times]
            print(f"  {turns:>7,}" + "".join(f"{s:>16.2f}{ms:>11.3f}" for s, ms in cells))


if __name__ == "__main__":
    main()
