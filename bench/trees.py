"""The trees a benchmark runs kcost from: this checkout, and beside it an earlier revision (a temporary git
worktree), so that both are measured in the same run under the same load."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def trees(revision: str | None, scratch: Path) -> Iterator[list[Path]]:
    """[this checkout] and, given `revision`, a worktree of it under `scratch`, removed afterwards. The revision's
    compiled parts are built in its tree, as an install of it would have them (a revision before kcost had only its
    trace core compiled ran its other rules compiled too)."""
    found = [ROOT]
    if revision is not None:
        base = scratch / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), revision], cwd=ROOT, check=True)
        found.append(base)
        if (base / "setup.py").exists():
            subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=base, check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        yield found
    finally:
        if len(found) > 1:
            subprocess.run(["git", "worktree", "remove", "--force", str(found[1])], cwd=ROOT, check=False)


def add_baseline(parser: argparse.ArgumentParser, default: str) -> None:
    """`--baseline REF` (default `default`) and `--no-baseline`: the revision a benchmark measures beside this tree."""
    parser.add_argument("--baseline", default=default, help="a git revision to measure beside this tree")
    parser.add_argument("--no-baseline", action="store_true")


def baseline_of(args: argparse.Namespace) -> str | None:
    """The revision `add_baseline`'s options name, or None for none."""
    return None if args.no_baseline else str(args.baseline)
