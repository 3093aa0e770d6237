"""A command's wall time and peak memory, as a whole process started by a small one of its own.

The kernel counts a process's peak resident set (`ru_maxrss`) from the moment it is forked, so a command forked
straight from a benchmark that holds hundreds of megabytes (the logs it generated, the lines it parsed for its
floor) starts at the benchmark's size, whatever the command itself uses: every command then peaks at least at the
benchmark's own peak. Each command is therefore started by a runner of its own (a bare Python, about 10 MB), which
times it and reads its peak (the command's, and of the workers it waited for) from `wait4`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RUNNER = """
import os, subprocess, sys, time
report, cmd = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - start
with open(report, "w") as out:
    out.write(f"{wall} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


@dataclass
class Measured:
    seconds: float
    peak_mb: float  # the kernel's maxrss of the command (and the processes it waited for)
    code: int
    stderr: str


def measured(cmd: list[str], env: dict[str, str] | None = None, cwd: str | Path | None = None) -> Measured:
    """`cmd` run once, its output thrown away: its wall time (from its start to its end, the runner's own start
    left out), peak memory, exit code and what it wrote on stderr."""
    with tempfile.TemporaryDirectory(prefix="kcost-measure-") as tmp:
        report = Path(tmp) / "report"
        done = subprocess.run([sys.executable, "-c", RUNNER, str(report), *cmd], env=env, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
        if not report.exists():
            return Measured(0.0, 0.0, done.returncode or 1, done.stderr)
        wall, maxrss, code = report.read_text().split()
    return Measured(float(wall), int(maxrss) / 1024 if sys.platform != "darwin" else int(maxrss) / 2**20,
                    int(code), done.stderr)  # fmt: skip
