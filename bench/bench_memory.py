"""Benchmark: the peak memory of billing a long turn spec, as whole processes, beside a baseline revision in the
same run. Prints its figures; asserts nothing.

The target (issue 22): a 100,000-turn spec (`kcost.model.bounds.MAX_TURNS`) billed as JSON Lines and as `--summary`
peaks at no more than 150 MB: a streamed bill holds one turn at a time. The spec is generated (a fixed seed):
a JSONL turn spec with a 20,000-token prefix, each turn adding 100 to 3,000 new tokens and 50 to 800 output
tokens, an idle gap of 10 minutes every 7th turn (past K3's TTL) and a compaction back to the prefix every 50th.
Before streaming (main at 8d776c8) it peaked at about 568 MB as JSONL and 368 MB as `--summary`.

With `--baseline REF` (default: 8d776c8), every command also runs from a checkout of REF (a temporary git
worktree), one after the other in the same run. The peak is the kernel's maxrss of the process; the seconds are
wall time, shown beside it for what the memory costs.

Run: python bench/bench_memory.py [--turns 100000] [--baseline REF | --no-baseline] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trees import add_baseline, baseline_of, trees  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def write_spec(path: Path, turns: int) -> None:
    rng = random.Random(1)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"session": {"name": "long", "prefix": {"tokens": 20000}}}) + "\n")
        for i in range(turns):
            turn: dict[str, object] = {"new": rng.randint(100, 3000), "output": rng.randint(50, 800)}
            if i % 50 == 49:
                turn["keep"] = 20000
            if i % 7 == 0:
                turn["idle"] = "10m"
            fh.write(json.dumps(turn) + "\n")


def peak(args: list[str], tree: Path) -> tuple[int, float, int]:
    """(exit code, seconds, peak resident set in MB) of one kcost process run from `tree`."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "kcost", *args], cwd=tree, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    return os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss // 1024  # KB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    add_baseline(parser, "8d776c8")
    parser.add_argument("--keep", type=Path, help="write the spec here (else a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcost-bench-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        spec = folder / "long.jsonl"
        write_spec(spec, args.turns)
        baseline = baseline_of(args)
        with trees(baseline, Path(tmp)) as found:
            report(spec, args.turns, found, baseline)


def report(spec: Path, turns: int, trees: list[Path], baseline: str | None) -> None:
    print(f"a generated {turns:,}-turn turn spec ({spec.stat().st_size / 1e6:.1f} MB); peak resident set, wall time")
    head = f"  {'':<34}{'peak MB':>8}  {'target':<12}{'seconds':>8}"
    if baseline:
        head += f"  {baseline + ' MB':>12}{'seconds':>9}"
    print(head)
    for label, extra in (("kcost bill SPEC --format jsonl", ["--format", "jsonl"]), ("kcost bill SPEC --summary",
                                                                                       ["--summary"])):  # fmt: skip
        found = [peak(["bill", str(spec), *extra], tree) for tree in trees]
        code, seconds, mb = found[0]
        verdict = "met" if mb <= 150 and code == 0 else "NOT MET" if code == 0 else f"exit {code}"
        line = f"  {label:<34}{mb:>8}  {'<= 150 ' + verdict:<12}{seconds:>8.1f}"
        if baseline:
            line += f"  {found[1][2]:>12}{found[1][1]:>9.1f}" + (f" (exit {found[1][0]})" if found[1][0] else "")
        print(line)


if __name__ == "__main__":
    main()
