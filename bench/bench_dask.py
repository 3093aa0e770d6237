"""Benchmark: `kcost bill --scheduler` on a local Dask cluster beside the same bill on one machine, and the rates a
fleet-wide run is extrapolated from. Prints its figures; asserts nothing about time.

The logs are the Claude Code logs of `tests/claude_logs.py` (generated, seeded). A `LocalCluster` of `--workers`
worker processes of one thread each stands for the fleet's workers. For each mode (the default, and `--usage
reported`) it runs, as whole processes, in turn: the local bill (`kcost bill DIR --format json -o FILE`), and the
same with `--scheduler ADDRESS`; it checks the two outputs are byte-identical, and measures the client's CPU (the
kcost process's own rusage) and the workers' CPU (their processes' utime and stime, from /proc, before and after).
From those: megabytes of logs a second of the client's CPU, and of a worker core's. The extrapolation takes an
organisation's month of logs (`--developers` each logging `--daily-mb` a day, 30 days) on `--cores` worker cores.

Needs `pip install 'kcost[dask]'`. Linux (the workers' CPU is read from /proc).
Run: python bench/bench_dask.py [--size 150] [--workers 2] [--runs 3] [--developers 500 --daily-mb 20 --cores 32]
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests import claude_logs  # noqa: E402

# kcost runs as an install runs it, its bytecode cached
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_of(pids: list[int]) -> float:
    """The CPU seconds (user and system) the processes have used so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of the line)
    return total / TICKS


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and the children it waited for) of one whole process."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"failed: {' '.join(cmd)}\n{child.stderr.read() if child.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=150, help="MB of generated Claude Code logs")
    parser.add_argument("--workers", type=int, default=2, help="the local cluster's worker processes")
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (medians)")
    parser.add_argument("--developers", type=int, default=500)
    parser.add_argument("--daily-mb", type=float, default=20)
    parser.add_argument("--cores", type=int, default=32, help="worker cores of the extrapolated fleet")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory(prefix="kcost-dask-") as tmp:
        logs = Path(tmp) / "logs"
        claude_logs.generate(logs, args.size, seed=7)
        size = sum(p.stat().st_size for p in logs.rglob("*.jsonl")) / 1e6
        projects = str(logs / "projects")
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:  # fmt: skip
            pids = list(client.run(os.getpid).values())
            address = cluster.scheduler_address
            print(f"{size:.1f} MB of generated Claude Code logs; a local cluster of {args.workers} workers "
                  f"({address}); medians of {args.runs} runs")  # fmt: skip
            for mode in ([], ["--usage", "reported"]):
                local_out, remote_out = Path(tmp) / "local.json", Path(tmp) / "remote.json"
                base = [sys.executable, "-m", "kcost", "bill", projects, *mode, "--format", "json"]
                local, remote, workers = [], [], []
                for _ in range(args.runs):
                    local.append(run([*base, "-o", str(local_out)]))
                    before = cpu_of(pids)
                    remote.append(run([*base, "--scheduler", address, "-o", str(remote_out)]))
                    workers.append(cpu_of(pids) - before)
                same = local_out.read_bytes() == remote_out.read_bytes()
                wall_l, cpu_l = (statistics.median(x) for x in zip(*local, strict=True))
                wall_r, cpu_r = (statistics.median(x) for x in zip(*remote, strict=True))
                cpu_w = statistics.median(workers)
                label = "default" if not mode else "--usage reported"
                print(
                    f"  {label}: one machine {wall_l:.2f} s ({cpu_l:.2f} s CPU); on the cluster {wall_r:.2f} s, "
                    f"the client {cpu_r:.2f} s CPU ({size / cpu_r:.0f} MB/s), the workers {cpu_w:.2f} s CPU "
                    f"({size / cpu_w:.0f} MB/s a core); the JSON {'byte-identical' if same else 'DIFFERENT'}"
                )
                month = args.developers * args.daily_mb * 30  # MB
                fleet, client_h = month / (size / cpu_w) / args.cores / 60, month / (size / cpu_r) / 3600
                print(f"    {args.developers} developers at {args.daily_mb:g} MB a day: {month / 1e3:,.0f} GB a month; "
                      f"on {args.cores} worker cores the workers' share {fleet:.1f} min, the client's "
                      f"{client_h:.2f} h")  # fmt: skip


if __name__ == "__main__":
    main()
