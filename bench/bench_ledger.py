"""Benchmark: `kcost bill` through the ledger beside ccusage, on the same Claude Code logs. Prints its figures;
asserts nothing about time.

The logs are generated as `bench_claude_logs.py` generates them (`tests/claude_logs.py`, seeded), one folder per
size. For each size and usage mode (`--usage reported` and the default), as whole processes, the median of
`--runs` runs after one warm-up (`measure.py`):

  a. ccusage: `ccusage claude session --json --offline` (the peer; version 20.0.24);
  b. kcost with no ledger: `kcost bill <dir>/projects --format json --no-ledger` (what every run cost before);
  c. the first run: the same through a new ledger (the ledger removed before each run);
  d. a second run over the unchanged logs, through the ledger the first made;
  e. a run after one new session was written since the ledger's last run (a new session's log of about 1 MB,
     generated under another seed; the ledger restored to its state before it, each run).

Targets (issue: the ledger): (d) at most 0.2x ccusage's time, (e) at most 0.5x, (c) at most 1.1x (b). Each run's
output is checked equal to (b)'s before anything is timed.

Run: python bench/bench_ledger.py [--sizes 150] [--runs 5] [--ccusage PATH] [--keep DIR] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from bench_claude_logs import find_ccusage, prepared  # noqa: E402
from measure import measured  # noqa: E402

TARGETS = {"second": 0.2, "appended": 0.5}


def timed(cmd: list[str], runs: int, env: dict[str, str], before: object = None) -> float:
    """The median wall time of `runs` runs of `cmd`, each after `before()` (where given), after one warm-up."""
    times = []
    for n in range(runs + 1):
        if callable(before):
            before()
        one = measured(cmd, env=env, cwd=ROOT)
        if one.code != 0:
            raise SystemExit(f"{' '.join(cmd)}: exit {one.code}: {one.stderr.strip()}")
        if n:
            times.append(one.seconds)
    return statistics.median(times)


def output(cmd: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def new_session(projects: Path, to: Path, seed: int) -> Path:
    """A new session's log (generated under another seed: ids of its own, about 1 MB), kept at `to`; the path it
    takes in the first project folder of `projects`."""
    from tests.claude_logs import generate

    made = to.parent / "new-session"
    shutil.rmtree(made, ignore_errors=True)
    generate(made, 0.5, seed + 1000)
    log = max((made / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    shutil.copy(log, to)
    return sorted(p for p in projects.iterdir() if p.is_dir())[0] / log.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="150")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ccusage")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    ccusage = find_ccusage(args.ccusage)
    print(f"ccusage: {ccusage or 'not found'}; kcost: {sys.executable} -m kcost; runs: {args.runs}")
    with tempfile.TemporaryDirectory(prefix="kcost-bench-ledger-") as tmp:
        for size in (float(s) for s in args.sizes.split(",")):
            root = prepared(args.keep, tmp, size, args.seed)
            projects = root / "projects"
            mb = sum(p.stat().st_size for p in projects.rglob("*.jsonl")) / 1e6
            print(f"\n{mb:.1f} MB of Claude Code logs, {sum(1 for _ in projects.rglob('*.jsonl'))} files")
            # kcost runs as an install runs it, its bytecode cached (a shell that forbids writing it times compilation)
            env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                   "CLAUDE_CONFIG_DIR": str(root)}  # fmt: skip
            peer = None
            if ccusage:
                peer = timed([ccusage, "claude", "session", "--json", "--offline"], args.runs, env)
                print(f"  ccusage                      {peer:7.3f} s")
            extra = Path(tmp) / "new-session.jsonl"
            for usage in ("reported", "auto"):
                ledger = Path(tmp) / f"ledger-{usage}.sqlite3"
                kcost = [sys.executable, "-m", "kcost", "bill", str(projects), "--usage", usage, "--format", "json"]
                through = [*kcost, "--ledger", str(ledger)]

                def fresh(ledger: Path = ledger) -> None:
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{ledger}{suffix}").unlink(missing_ok=True)

                plain = timed([*kcost, "--no-ledger"], args.runs, env)
                first = timed(through, args.runs, env, fresh)
                expected = output([*kcost, "--no-ledger"], env)
                fresh()
                assert output(through, env) == expected, "the first run through the ledger differs"
                assert output(through, env) == expected, "the second run through the ledger differs"
                second = timed(through, args.runs, env)
                saved = Path(tmp) / "saved.sqlite3"
                subprocess.run([sys.executable, "-c", "import sqlite3,sys; a=sqlite3.connect(sys.argv[1]); "
                                "b=sqlite3.connect(sys.argv[2]); a.backup(b)", str(ledger), str(saved)], check=True)
                target = new_session(projects, extra, args.seed)

                def appended(ledger: Path = ledger, target: Path = target, saved: Path = saved,
                             extra: Path = extra) -> None:  # fmt: skip
                    fresh(ledger)
                    shutil.copy(saved, ledger)
                    target.unlink(missing_ok=True)
                    shutil.copy(extra, target)
                    os.utime(target, (0, 1_000_000_000))  # settled: written long ago

                appended()
                grown = output([*kcost, "--no-ledger"], env)
                appended()
                assert output(through, env) == grown, "the run after a new session differs"
                after = timed(through, args.runs, env, appended)
                target.unlink()
                name = "default" if usage == "auto" else usage
                rows = [("no ledger (before)", plain), ("first run, new ledger", first),
                        ("second run, unchanged", second), ("one new session since", after)]  # fmt: skip
                for label, seconds in rows:
                    against = f"  {seconds / peer:.2f}x ccusage" if peer else ""
                    print(f"  kcost {name:8s} {label:23s} {seconds:7.3f} s{against}")
                print(f"  first run / no ledger: {first / plain:.2f}x (target 1.1x)" + (
                    f"; second {second / peer:.2f}x (target {TARGETS['second']}x), one new session "
                    f"{after / peer:.2f}x (target {TARGETS['appended']}x)" if peer else ""))  # fmt: skip


if __name__ == "__main__":
    main()
