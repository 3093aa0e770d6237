"""Benchmark: the peak memory of `kcost trace` on a trace with one very long line, beside a short trace. Prints
its figures; asserts nothing.

A trace line is one request, and a line past `kcost.fleet.requests.MAX_LINE_BYTES` is refused once that much of
it is read, so the peak should not grow with the line: for each engine (`--engine python` and `compiled`) it runs
kcost as a whole process and reports its peak resident set (the kernel's maxrss for that process) on

  a. the baseline: the shipped 400-request fixture (`tests/fixtures/traces/synthetic-400.jsonl`);
  b. one request, then a line of `--mb` MB of blanks (a blank line would be skipped, but this one is too long);
  c. one request, then a line of `--mb` MB inside a list of block ids.

Before the bound (issue 20), (b) peaked at about 607 MB in the Python engine and 314 MB in the core at 300 MB.

Run: python bench/bench_trace_memory.py [--mb 300] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl"
REQUEST = b'{"time": 0, "input_tokens": 600, "output_tokens": 1, "blocks": [1, 2]}\n'
MiB = 1 << 20


def write_long(path: Path, mb: int, head: bytes, unit: bytes, tail: bytes) -> None:
    chunk = unit * (MiB // len(unit))
    with path.open("wb") as fh:
        fh.write(REQUEST + head)
        for _ in range(mb):
            fh.write(chunk)
        fh.write(tail + b"\n")


def peak(trace: Path, engine: str) -> tuple[int, int]:
    """(exit code, peak resident set in MB) of one `kcost trace` process."""
    child = subprocess.Popen([sys.executable, "-m", "kcost", "trace", str(trace), "--engine", engine, "--format",
                              "json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, usage.ru_maxrss // 1024  # KB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300, help="the long line's size in MB")
    parser.add_argument("--keep", type=Path, help="write the traces here (else a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        blanks, ids = folder / "blanks.jsonl", folder / "ids.jsonl"
        write_long(blanks, args.mb, b"", b" ", b"")
        write_long(ids, args.mb, b'{"time": 1, "input_tokens": 600, "output_tokens": 1, "blocks": [', b"1, ", b"1]}")
        print(f"peak resident set, MB (exit code); long lines of {args.mb} MB")
        print(f"{'trace':<28}{'python':>14}{'compiled':>14}")
        for label, trace in (("a. baseline, 400 requests", FIXTURE), (f"b. {args.mb} MB of blanks", blanks),
                             (f"c. {args.mb} MB of block ids", ids)):  # fmt: skip
            cells = [f"{mb:,} ({code})" for code, mb in (peak(trace, e) for e in ("python", "compiled"))]
            print(f"{label:<28}{cells[0]:>14}{cells[1]:>14}")


if __name__ == "__main__":
    main()
