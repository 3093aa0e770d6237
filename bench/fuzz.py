"""Fuzz kcost for a while: the contract tests of tests/fuzz with many random inputs per input kind and command.

Every input that breaks the contract is kept in tests/fuzz/found/ (commit it: every test run replays it), and
hypothesis prints the smallest case it found. Prints how many inputs ran, per test, and how long it took.

Run: python bench/fuzz.py [--examples 10000] [-k NAME]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="random inputs per input kind and command")
    parser.add_argument("-k", default="", help="only the tests whose names match (pytest -k)")
    args = parser.parse_args()
    env = {**os.environ, "KCOST_FUZZ_EXAMPLES": str(args.examples), "KCOST_FUZZ_RANDOM": "1", "KCOST_FUZZ_KEEP": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz/test_contract.py",
           "--hypothesis-show-statistics", "-k", args.k or "not found"]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, text=True, capture_output=True)
    seconds = time.perf_counter() - start
    runs = [line.strip() for line in done.stdout.splitlines() if "examples" in line or "::" in line]
    print("\n".join(runs[-80:]))
    print(f"{args.examples:,} inputs per input kind and command; {seconds / 60:.1f} minutes; exit {done.returncode}")
    if done.returncode:
        print(done.stdout[-4000:])
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
