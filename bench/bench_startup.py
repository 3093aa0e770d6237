"""Benchmark: how long kcost takes to start, as whole processes, beside `python -c "import click"`.

The targets: `kcost --help` and `kcost --version` at most 1.3x the time Python takes to import click (what any
click tool pays), and a cold `kcost bill` of a small turn spec at most 2x `kcost --version`. Prints the median of
`--runs` runs after one warm-up, and the ratios; asserts nothing about time.

Run: python bench/bench_startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSON = str(ROOT / "sample_sessions" / "coding-400k.yaml")
KCOST = [sys.executable, "-m", "kcost"]


def median_seconds(cmd: list[str], runs: int) -> float:
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    click = median_seconds([sys.executable, "-c", "import click"], runs)
    rows = [
        ("python -c 'import click'", click, None),
        ("kcost --version", median_seconds([*KCOST, "--version"], runs), ("click", 1.3)),
        ("kcost --help", median_seconds([*KCOST, "--help"], runs), ("click", 1.3)),
    ]
    version = rows[1][1]
    rows += [
        ("kcost bill LESSON --format json", median_seconds([*KCOST, "bill", LESSON, "--format", "json"], runs),
         ("version", 2.0)),
        ("kcost bill LESSON (a table)", median_seconds([*KCOST, "bill", LESSON], runs), ("version", 2.0)),
    ]  # fmt: skip
    print(f"median of {runs} runs after one warm-up; LESSON = sample_sessions/coding-400k.yaml")
    print(f"  {'':<34}{'seconds':>9}  ratio       target")
    for label, seconds, target in rows:
        if target is None:
            print(f"  {label:<34}{seconds:>9.3f}")
            continue
        base = click if target[0] == "click" else version
        ratio = seconds / base
        verdict = "met" if ratio <= target[1] else "NOT MET"
        print(f"  {label:<34}{seconds:>9.3f}  {ratio:4.2f}x {target[0]:<7} <= {target[1]:g}x {verdict}")


if __name__ == "__main__":
    main()
