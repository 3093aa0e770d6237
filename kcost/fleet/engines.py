"""Which engine replays a trace, and where: in this process, in worker processes (clusters split between them),
or on a Dask cluster (`--scheduler`). Every way gives the same tallies.

Two engines: `compiled`, the C core built with the package (`kcost/fleet/_core.c`), and `python`, the oracle
and fallback (`kcost.fleet.replay`). The compiled core declines a trace it cannot replay exactly (a block id
past 64 bits, a line the Python reader would name as bad), and the Python engine then replays it, so every
result and every error message is the Python engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kcost.billing.scheduler import connect, run_tasks
from kcost.fleet.core import replay_compiled
from kcost.fleet.replay import ClusterTally, Run, simulate
from kcost.fleet.requests import read_trace

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

Progress = Callable[[int], None]  # told the bytes of the trace read so far


def default_engine() -> str:
    """`compiled` where the core was built, else `python`."""
    try:
        from kcost.fleet import _core  # noqa: F401
    except ImportError:
        return "python"
    return "compiled"


def replay(
    path: str,
    runs: Sequence[Run],
    *,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Progress | None = None,
    engine: str = "python",
) -> tuple[list[list[ClusterTally]], str]:
    """Every run's tally per cluster, from one read of the trace at `path` per process, and the engine that ran
    (`python` where the compiled core declined the trace)."""
    clusters = runs[0].spec.clusters
    if scheduler is None and (workers <= 1 or clusters <= 1):
        return _part(path, runs, None, engine, progress)
    # on Dask, one task per cluster unless --workers says how many; in processes, as many as --workers says
    count = max(1, min(workers if workers > 1 or scheduler is None else clusters, clusters))
    groups = [frozenset(range(w, clusters, count)) for w in range(count)]
    jobs = [(path, tuple(runs), group, engine) for group in groups]
    parts = _on_dask(scheduler, jobs) if scheduler is not None else _in_processes(jobs)
    merged = [[ClusterTally() for _ in range(clusters)] for _ in runs]
    for group, (part, _) in zip(groups, parts, strict=True):
        for r, tallies in enumerate(part):
            for c in group:
                merged[r][c] = tallies[c]
    return merged, "python" if any(ran == "python" for _, ran in parts) else engine


Job = tuple[str, tuple[Run, ...], frozenset[int], str]
Part = tuple[list[list[ClusterTally]], str]


def _in_processes(jobs: list[Job]) -> list[Part]:
    """The jobs in worker processes, one each, their parts in job order. The parent alone answers Ctrl-C: the
    workers ignore SIGINT, and whatever ends the parent's wait (an interrupt, a worker's error, a worker that died)
    terminates the others mid-replay and reaps them. (An executor's orderly shutdown would first wait for each
    worker to finish replaying the whole trace; a process pool's would wait forever on a worker that died.)"""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context()
    workers: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
    try:
        for job in jobs:
            receive, send = context.Pipe(duplex=False)
            process: multiprocessing.process.BaseProcess = context.Process(target=_worker, args=(job, send),
                                                                           daemon=True)  # fmt: skip
            process.start()
            send.close()  # the worker's end only: its death then reads as the end of the pipe
            workers.append((process, receive))
        parts: dict[int, Part] = {}
        waiting = {id(receive): i for i, (_, receive) in enumerate(workers)}
        while waiting:
            for ready in wait([workers[i][1] for i in waiting.values()]):
                process, receive = workers[i := waiting.pop(id(ready))]
                try:
                    done, got = receive.recv()
                except EOFError:
                    process.join()
                    died = f"a worker process ended without its part (exit status {process.exitcode})"
                    raise RuntimeError(died) from None
                if not done:
                    raise got
                parts[i] = got
        return [parts[i] for i in range(len(jobs))]
    finally:
        for process, receive in workers:
            if process.is_alive():
                process.terminate()
            process.join()
            receive.close()


def _worker(job: Job, send: Connection) -> None:
    """In a worker process: the job's part, or the error that ended it, sent back to the parent."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the parent acts on it
    try:
        message: tuple[bool, object] = (True, _job(job))
    except BaseException as exc:  # an InputError above all: the parent raises it as its own
        message = (False, exc)
    send.send(message)
    send.close()


def _job(job: Job) -> Part:
    path, runs, only, engine = job
    return _part(path, runs, set(only), engine, None)


def _part(path: str, runs: Sequence[Run], only: set[int] | None, engine: str, progress: Progress | None) -> Part:
    if engine == "compiled":
        done = replay_compiled(path, runs, only, progress)
        if done is not None:
            return done, "compiled"

    return simulate(read_trace(path, progress), runs, only, again=lambda: read_trace(path)), "python"


def _on_dask(address: str, jobs: list[Job]) -> list[Part]:
    """The jobs on the Dask cluster whose scheduler is at `address`, one task per group of clusters."""
    with connect(address) as client:
        return run_tasks(client, _job, jobs)
