"""Benchmark: how long kcost takes to start, as whole processes, beside `python -c "import click"` and beside an
earlier release of kcost in the same run.

The targets: `kcost --help` and `kcost --version` at most 1.3x the time Python takes to import click (what any
click tool pays), and a cold `kcost bill` of a small turn spec at most 2x `kcost --version`. With `--baseline REF`
(default: 7bc6104, the release before the settings and API layers), every command also runs from a checkout of
REF (a temporary git worktree), interleaved with this one, so the two are measured under the same load: the
"vs REF" column is this tree's time over REF's. Runs `--runs` rounds after one warm-up, each round every command
once in each tree, and prints each command's median time and the median of its ratios taken round by round
(against `--version` or click in the same round: a shared machine's load drifts between rounds more than within
one); asserts nothing about time. Children run with their bytecode cached, as an installed kcost does.

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


def rounds(cmds: list[list[str]], trees: list[Path], runs: int) -> list[list[list[float]]]:
    """`runs` rounds, each running every command once in each tree, in turn: the times of each command in each
    tree, round by round (after one warm-up round: bytecode written, files cached)."""
    for cmd in cmds:
        for tree in trees:
            timed(cmd, tree)
    times: list[list[list[float]]] = [[[] for _ in trees] for _ in cmds]
    for _ in range(runs):
        for c, cmd in enumerate(cmds):
            for t, tree in enumerate(trees):
                times[c][t].append(timed(cmd, tree))
    return times


def paired(a: list[float], b: list[float]) -> float:
    """The median of the ratios a/b taken round by round (the load of a shared machine drifts between rounds)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    add_baseline(parser, "7bc6104")
    args = parser.parse_args()
    baseline = baseline_of(args)
    with tempfile.TemporaryDirectory(prefix="kcost-bench-") as tmp, trees(baseline, Path(tmp)) as found:
        report(found, args.runs, baseline)


def report(trees: list[Path], runs: int, baseline: str | None) -> None:
    commands = [
        ("python -c import click", [sys.executable, "-c", "import click"], None, 0.0),
        ("kcost --version", [*KCOST, "--version"], 0, 1.3),
        ("kcost --help", [*KCOST, "--help"], 0, 1.3),
        ("kcost bill LESSON --format json", [*KCOST, "bill", LESSON, "--format", "json"], 1, 2.0),
        ("kcost bill LESSON (a table)", [*KCOST, "bill", LESSON], 1, 2.0),
        ("kcost quote --prefix 400000 --new 4000", [*KCOST, "quote", "--prefix", "400000", "--new", "4000"], 1, 2.0),
    ]  # fmt: skip
    times = rounds([cmd for _, cmd, _, _ in commands], trees, runs)
    print(f"{runs} rounds after one warm-up, every command in each once a round; LESSON = "
          "sample_sessions/coding-400k.yaml")  # fmt: skip
    print("seconds: medians; ratios: medians of the ratios taken round by round")
    extra = f"{baseline:>10}  vs {baseline}" if baseline else ""
    print(f"  {'':<40}{'seconds':>9}  ratio       target{'':<12}{extra}")
    names = ["click", "version"]
    for (label, _, against, target), found in zip(commands, times, strict=True):
        seconds = statistics.median(found[0])
        line = f"  {label:<40}{seconds:>9.3f}"
        if against is not None:
            ratio = paired(found[0], times[against][0])
            verdict = "met" if ratio <= target else "NOT MET"
            line += f"  {ratio:4.2f}x {names[against]:<7} <= {target:g}x {verdict:<8}"
            if baseline:
                line += f"{statistics.median(found[1]):>10.3f}  {paired(found[0], found[1]):4.2f}x"
        print(line)


if __name__ == "__main__":
    main()
