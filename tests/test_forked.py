"""Jobs spread over forked workers (`kcost.readers.forked`): every result back in the jobs' order, whatever their number
and size; what a job raises is raised in the main process; a worker that dies is an error, never a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kcost.readers import forked
from tests.test_reliability import children

pytestmark = pytest.mark.skipif(not forked.available(), reason="workers are forked")


def square(n: int) -> tuple[int, int]:
    return n, n * n


def test_every_result_comes_back_in_order() -> None:
    jobs = list(range(40_000))  # more job numbers than the jobs' pipe holds at once (16,384)
    assert forked.forked_map(square, jobs, 2) == [square(n) for n in jobs]
    assert forked.forked_map(square, [3], 4) == [(3, 9)]
    assert forked.forked_map(square, [], 2) == []


def test_large_results_come_back_whole() -> None:
    def blob(n: int) -> bytes:
        return bytes([n]) * (3 << 20)  # far past a pipe's buffer

    results = forked.forked_map(blob, [1, 2, 3, 4, 5], 2)
    assert [len(r) for r in results] == [3 << 20] * 5
    assert [r[0] for r in results] == [1, 2, 3, 4, 5] and all(r == bytes([r[0]]) * len(r) for r in results)


def test_each_job_runs_in_a_worker_of_its_own_process() -> None:
    pids = forked.forked_map(lambda _: os.getpid(), list(range(20)), 2)
    assert os.getpid() not in pids and 1 <= len(set(pids)) <= 2


class Odd(Exception):
    pass


def test_what_a_job_raises_is_raised_here() -> None:
    def picky(n: int) -> int:
        if n == 7:
            raise Odd(f"job {n}")
        return n

    with pytest.raises(Odd, match="job 7"):
        forked.forked_map(picky, list(range(20)), 2)


def test_an_exception_that_does_not_pickle_is_raised_as_its_text() -> None:
    class Local(Exception):  # a class defined in a function does not pickle
        pass

    def fails(n: int) -> int:
        raise Local(f"no {n}")

    with pytest.raises(RuntimeError, match="Local: no 0"):
        forked.forked_map(fails, [0], 1)


def test_a_worker_that_dies_is_an_error_not_a_hang() -> None:
    def dies(n: int) -> int:
        if n == 3:
            os._exit(3)
        return n

    def late(signum: int, frame: object) -> None:
        raise TimeoutError("forked_map still waiting for a worker that died")

    before = signal.signal(signal.SIGALRM, late)
    signal.alarm(60)
    try:
        with pytest.raises(forked.WorkerDied):
            forked.forked_map(dies, list(range(10)), 1)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def test_what_workers_write_is_written_once() -> None:
    """A job's own output (left in its buffer) is written; what this process had buffered before the workers were
    forked is not written again by each of them."""
    probe = (
        "import sys\n"
        "from kcost.readers import forked\n"
        "def noisy(n):\n"
        "    sys.stdout.write(f'<note {n}>')  # still buffered when the job ends (stdout is a pipe)\n"
        "    return n\n"
        "sys.stdout.write('before')  # buffered here (stdout is a pipe)\n"
        "assert forked.forked_map(noisy, [0, 1, 2], 2) == [0, 1, 2]\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # the streams buffered, as by default
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert run.stdout.count("before") == 1, run.stdout
    assert all(run.stdout.count(f"<note {n}>") == 1 for n in range(3)), run.stdout


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds worker processes through Linux's /proc")
def test_ctrl_c_in_the_main_process_stops_every_worker() -> None:
    probe = (
        "import sys, time\n"
        "from kcost.readers import forked\n"
        "def slow(n):\n"
        "    time.sleep(120)\n"
        "    return n\n"
        "try:\n"
        "    forked.forked_map(slow, [1, 2, 3], 2)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", probe])
    try:
        deadline = time.monotonic() + 60
        while len(workers := children(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) == 2 and child.poll() is None
        signalled = time.monotonic()
        child.send_signal(signal.SIGINT)  # the main process only: the workers ignore it anyway
        child.wait(timeout=30)
        took = time.monotonic() - signalled
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130 and took < 5, f"{took:.1f} s after the signal"
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()], "a worker was left behind"


def test_a_session_crosses_processes_whole(tmp_path: Path) -> None:
    """Every session the project's logs make (prompts rebuilt and not), its turn specs and generated Claude Code
    logs: pickled as a worker sends it back (its records as rows, `Session.__reduce__`), it comes back equal,
    every record, request, span and usage the same class with the same fields, and through a worker too."""
    import dataclasses
    import pickle

    from kcost.errors import InputError
    from kcost.readers import read_all
    from tests.conftest import ROOT, generate_claude_logs, project_logs

    generate_claude_logs(tmp_path, 1.0, seed=5)
    paths = [*project_logs(tmp_path), *sorted((ROOT / "sample_sessions").glob("*.yaml"))]
    sessions = []
    for path in paths:
        for prompts in (True, False):
            try:
                sessions += read_all([str(path)], prompts=prompts, workers=1).sessions
            except InputError:
                continue  # not a log (a trace, a price file) or a bad one, as its own tests say
    rebuilt = [s for s in sessions if s.records and s.records[0].request is not None]
    assert len(sessions) > 60 and len(rebuilt) > 25 and sum(len(s.records) for s in rebuilt) > 200
    for session in sessions:
        back = pickle.loads(pickle.dumps(session, pickle.HIGHEST_PROTOCOL))
        assert back.__class__ is session.__class__
        for f in dataclasses.fields(session):  # a turn spec's records (read as iterated) compare as what they hold
            mine, theirs = getattr(back, f.name), getattr(session, f.name)
            assert (tuple(mine) == tuple(theirs)) if f.name == "records" else (mine == theirs), f.name
        assert [r.__class__ for r in back.records] == [r.__class__ for r in session.records]
    assert forked.forked_map(_itself, rebuilt[:6], 2) == rebuilt[:6]


def _itself(value: object) -> object:
    return value
