"""Work spread over forked worker processes with nothing but `os.fork` and pipes.

A stand-in for `concurrent.futures.ProcessPoolExecutor` (its `fork` context), kept for the time it saves: with the
library's pool in `forked_map`'s place, the default bill of 150 MB of Claude Code logs takes 1.39 s where it takes
1.29 s with this one (+7%, median of 5, whole processes; `bench/bench_claude_logs.py` holds it to 3x ccusage's
time), and a Ctrl-C leaves the pool's workers to be ended by hand.

A large read of logs is spread over the machine's cores (`kcost.readers.discover`). `concurrent.futures`'
process pool costs a run 30-40 ms before it starts a worker: importing it, multiprocessing and logging. A kcost
read needs less of it: the workers are forks of this process (they hold what it read, its modules and its
classes), each takes the next job as it is free, and sends back its result, pickled. `forked_map` does only that.
The jobs go out as 4-byte numbers on one pipe the workers share: a pipe hands each read of 4 bytes, whole, to one
reader. The results come back on a pipe per worker, read as they come, so that no worker waits on a full pipe.
An exception a job raises is raised here, a worker that dies is an error, and Ctrl-C stops every worker.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

_TASK = struct.Struct("<I")  # a job's index
_HEAD = struct.Struct("<Q")  # a result's length


class WorkerDied(RuntimeError):
    """A worker process ended before it sent back the results of the jobs it took."""


def available() -> bool:
    """Whether this system forks processes."""
    return hasattr(os, "fork")


def forked_map(work: Callable[[Any], Any], jobs: Sequence[Any], workers: int) -> list[Any]:
    """`work(job)` for every job in `workers` forked processes, each taking the next job in order as it is free;
    the results in the jobs' order. What `work` raises in a worker is raised here, as it was raised there."""
    results: list[Any] = [None] * len(jobs)
    if not jobs:
        return results
    tasks, feed = os.pipe()
    feeding = [feed]  # the jobs' pipe, until it is closed
    taking = [tasks]  # its other end, until every worker has it
    children: dict[int, int] = {}  # result pipe -> pid
    _flush()  # what this process has buffered is not the workers' to write again
    try:
        for _ in range(min(workers, len(jobs))):
            back, answer = os.pipe()
            _widen(back)
            try:
                pid = os.fork()
            except BaseException:
                os.close(back)
                os.close(answer)
                raise
            if pid == 0:  # the worker: it never returns
                try:
                    for fd in (feed, back, *children):
                        os.close(fd)
                    _serve(work, jobs, tasks, answer)
                finally:
                    os._exit(1)
            os.close(answer)
            children[back] = pid
        taking.clear()
        os.close(tasks)
        _gather(jobs, results, feeding, children)
    except BaseException:
        for pid in children.values():
            _kill(pid)
        raise
    finally:
        for fd in (*children, *feeding, *taking):
            os.close(fd)
        for pid in children.values():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return results


def _gather(jobs: Sequence[Any], results: list[Any], feeding: list[int], children: dict[int, int]) -> None:
    """Hand out every job and take every result, until each job has its result (`feeding`: the jobs' pipe, taken
    out once closed)."""
    (feed,) = feeding
    os.set_blocking(feed, False)
    order = iter(range(len(jobs)))
    next_job: int | None = next(order)
    buffers = {fd: bytearray() for fd in children}
    done = 0
    while done < len(jobs):
        if not buffers:
            raise WorkerDied("a worker process ended before sending back its results")
        writing = [feed] if next_job is not None else []
        readable, writable, _ = select.select(list(buffers), writing, [])
        if writable:
            while next_job is not None:
                try:
                    os.write(feed, _TASK.pack(next_job))  # 4 bytes: written whole or not at all
                except BlockingIOError:
                    break
                next_job = next(order, None)
            if next_job is None:
                feeding.clear()
                os.close(feed)  # the workers see the end of the jobs
        for fd in readable:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                if buffers.pop(fd):
                    raise WorkerDied("a worker process ended in the middle of sending back a result")
                continue
            buffer = buffers[fd]
            buffer += chunk
            while len(buffer) >= _HEAD.size:
                (size,) = _HEAD.unpack_from(buffer)
                if len(buffer) < _HEAD.size + size:
                    break
                index, ok, value = pickle.loads(buffer[_HEAD.size : _HEAD.size + size])
                del buffer[: _HEAD.size + size]
                if not ok:
                    raise value
                results[index] = value
                done += 1


def _serve(work: Callable[[Any], Any], jobs: Sequence[Any], tasks: int, answer: int) -> None:
    """A worker: take jobs until there are none, send back each result; then end, whatever happens."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to report, once
        while len(got := os.read(tasks, _TASK.size)) == _TASK.size:
            (index,) = _TASK.unpack(got)
            try:
                reply = pickle.dumps((index, True, work(jobs[index])), pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # sent back to be raised in the main process
                reply = _failure(index, exc)
            _send(answer, _HEAD.pack(len(reply)) + reply)
    except BaseException:
        code = 1
    finally:
        _flush()  # what the jobs wrote (a warning)
        os._exit(code)  # no cleanup of the main process's state runs here (atexit handlers)


_PIPE_BYTES = 1 << 20  # a result pipe's buffer: a worker's results are megabytes, a pipe holds 64 KiB by default


def _widen(fd: int) -> None:
    """The pipe's buffer made `_PIPE_BYTES` where the system allows it (Linux): fewer, larger reads and writes, so
    neither side waits on the other a few kilobytes at a time; else as it is."""
    # deferred: Linux only
    import fcntl

    with contextlib.suppress(AttributeError, OSError):  # not Linux, or more than /proc/sys/fs/pipe-max-size
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _failure(index: int, exc: BaseException) -> bytes:
    try:
        return pickle.dumps((index, False, exc), pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that does not pickle: its text
        return pickle.dumps((index, False, RuntimeError(f"{type(exc).__name__}: {exc}")), pickle.HIGHEST_PROTOCOL)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
