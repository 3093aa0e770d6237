"""Benchmark: how long kcost takes to start, as whole processes, beside `python -c "import click"` and beside an
earlier release of kcost in the same run.

The targets: `kcost --help` and `kcost --version` at most 1.3x the time Python takes to import click (what any
click tool pays), and a cold `kcost bill` of a small turn spec at most 2x `kcost --version`. With `--baseline REF`
(default: 7bc6104, the release before the settings and API layers), every command also runs from a checkout of
REF (a temporary git worktree), interleaved with this one, so the two are measured under the same load: the
"vs REF" column is this tree's time over REF's. Prints the median of `--runs` runs after one warm-up; asserts
nothing about time. Children run with their bytecode cached, as an installed kcost does.

Run: python bench/bench_startup.py [--runs 21] [--baseline REF | --no-baseline]
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
from trees import add_baseline, baseline_of, trees  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LESSON = str(ROOT / "sample_sessions" / "coding-400k.yaml")
KCOST = [sys.executable, "-m", "kcost"]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def medians(cmd: list[str], trees: list[Path], runs: int) -> list[float]:
    """The median time of `cmd` in each tree, the runs interleaved."""
    for tree in trees:  # warm-up: bytecode written, files cached
        timed(cmd, tree)
    times: list[list[float]] = [[] for _ in trees]
    for _ in range(runs):
        for i, tree in enumerate(trees):
            times[i].append(timed(cmd, tree))
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    add_baseline(parser, "7bc6104")
    args = parser.parse_args()
    baseline = baseline_of(args)
    with tempfile.TemporaryDirectory(prefix="kcost-bench-") as tmp, trees(baseline, Path(tmp)) as found:
        report(found, args.runs, baseline)


def report(trees: list[Path], runs: int, baseline: str | None) -> None:
    click = medians([sys.executable, "-c", "import click"], trees[:1], runs)[0]
    commands = [
        ("kcost --version", [*KCOST, "--version"], "click", 1.3),
        ("kcost --help", [*KCOST, "--help"], "click", 1.3),
        ("kcost bill LESSON --format json", [*KCOST, "bill", LESSON, "--format", "json"], "version", 2.0),
        ("kcost bill LESSON (a table)", [*KCOST, "bill", LESSON], "version", 2.0),
        ("kcost quote --prefix 400000 --new 4000", [*KCOST, "quote", "--prefix", "400000", "--new", "4000"],
         "version", 2.0),
    ]  # fmt: skip
    print(f"median of {runs} runs after one warm-up; LESSON = sample_sessions/coding-400k.yaml")
    extra = f"{baseline:>10}  vs {baseline}" if baseline else ""
    print(f"  {'':<40}{'seconds':>9}  ratio       target{'':<12}{extra}")
    print(f"  {'python -c import click':<40}{click:>9.3f}")
    version = 0.0
    for label, cmd, against, target in commands:
        found = medians(cmd, trees, runs)
        seconds = found[0]
        version = seconds if label == "kcost --version" else version
        ratio = seconds / (click if against == "click" else version)
        verdict = "met" if ratio <= target else "NOT MET"
        line = f"  {label:<40}{seconds:>9.3f}  {ratio:4.2f}x {against:<7} <= {target:g}x {verdict:<8}"
        if baseline:
            line += f"{found[1]:>10.3f}  {seconds / found[1]:4.2f}x"
        print(line)


if __name__ == "__main__":
    main()
