"""The status line's resident helper (`kcost.live.helper`): a bare `kcost statusline` call answered by it prints what
the call prints answering itself, for every kind of input; whatever is wrong with a helper, the call answers
itself; a helper ends when asked, when idle, and when a module it loaded changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcost.live import helper
from tests.conftest import ROOT
from tests.test_live import LOGS, billed, hook_for

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the helper needs fork and Unix sockets")


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime folder of the test's own (the helper's socket goes there: a short path, as a socket's must be),
    the helper turned on."""
    folder = Path(tempfile.mkdtemp(prefix="kcost-test-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(helper.ENV, raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _wait(condition: object, seconds: float = 60.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if callable(condition) and condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def running(runtime: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A helper waiting on its socket (ended after the test)."""
    where = helper.address()
    assert where is not None and where.startswith(str(runtime))
    os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "kcost.live.helper", where, "60"], cwd=ROOT)
    assert _wait(lambda: os.path.exists(where)), "the helper did not start"
    yield process
    helper.stop(where)
    process.wait(timeout=30)


def _call(args: list[str], stdin: bytes, env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    """A bare call, as a hook makes it: a whole process, its stdout a pipe."""
    return subprocess.run([sys.executable, "-m", "kcost", "statusline", *args], input=stdin, capture_output=True,
                          timeout=120, env={**os.environ, **env}, cwd=cwd)  # fmt: skip


def _calls(tmp_path: Path) -> list[tuple[list[str], bytes, dict[str, str], Path]]:
    """Calls of every kind: a log's path (absolute, relative to the caller's folder), the hook's JSON, colour
    forced, a missing transcript, garbage, nothing."""
    out = []
    for n, log in enumerate([LOGS[0], LOGS[2], LOGS[5]]):
        now = str(billed(log)["last"] + 30 + 400 * n)  # warm, then cold
        hook = json.dumps(hook_for(log)).encode()
        out += [([str(log)], b"", {"KCOST_NOW": now}, ROOT),
                ([str(log.relative_to(ROOT))], b"", {"KCOST_NOW": now, "FORCE_COLOR": "1"}, ROOT),
                ([], hook, {"KCOST_NOW": now}, tmp_path)]  # fmt: skip
    missing = json.dumps({"session_id": "x", "transcript_path": str(tmp_path / "gone.jsonl")}).encode()
    out += [([], missing, {}, ROOT), ([], b"{not json", {}, ROOT), ([], b"", {}, ROOT),
            ([str(tmp_path / "nothing.jsonl")], b"", {}, ROOT)]  # fmt: skip
    return out


def test_a_call_the_helper_answers_prints_what_the_call_prints_itself(
    running: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    where = helper.address()
    assert where is not None
    for args, stdin, env, cwd in _calls(tmp_path):
        alone = _call(args, stdin, {**env, helper.ENV: "0", "XDG_CACHE_HOME": str(tmp_path / "alone"),
                                          "KCOST_LEDGER": str(tmp_path / "alone.sqlite3")}, cwd)
        helped = _call(args, stdin, {**env, "XDG_CACHE_HOME": str(tmp_path / "helped"),
                                  "KCOST_LEDGER": str(tmp_path / "helped.sqlite3")}, cwd)
        assert (helped.returncode, helped.stdout) == (alone.returncode, alone.stdout) == (0, alone.stdout), (args, env)
        assert alone.stdout.count(b"\n") == 1 and not helped.stderr
    # and it was the helper that answered each (a call that answers itself starts a helper: none was started)
    assert not os.path.exists(where + ".started")
    assert helper.ask(str(LOGS[0]), helper.Given(None), helper.Terminal(False)) is not None
    assert running.poll() is None


def test_calls_through_the_helper_read_on_as_the_log_grows(
    running: subprocess.Popen[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls answered by the helper between appends (and after the log was cut short): each the line of a call
    that answers itself, and its total a fresh bill's."""
    from decimal import Decimal

    from kcost.render.display import money

    lines = LOGS[0].read_bytes().splitlines(keepends=True)
    log = tmp_path / LOGS[0].name
    for end in (8, 12, 20, len(lines), 10):
        log.write_bytes(b"".join(lines[:end]))  # grown, then cut short: read again
        bill = billed(log)
        monkeypatch.setenv("KCOST_NOW", str(bill["last"] + 30))
        shown = helper.ask(str(log), helper.Given(None), helper.Terminal(False))
        alone = _call([str(log)], b"", {helper.ENV: "0", "XDG_CACHE_HOME": str(tmp_path / "alone"),
                                          "KCOST_LEDGER": str(tmp_path / "alone.sqlite3")})
        assert shown is not None and shown + "\n" == alone.stdout.decode(), (end, shown, alone.stdout)
        assert f" {money(Decimal(bill['total']), total=True)} · " in shown
    assert running.poll() is None


def test_a_call_answers_itself_where_no_helper_can(runtime: Path, tmp_path: Path) -> None:
    """No helper running, a file that is no socket where the socket would be, a folder open to others, a socket's
    path too long, or the helper turned off: the call gives its line all the same (and a call that finds no
    helper starts one)."""
    import stat

    where = helper.address()
    assert where is not None
    log, env = str(LOGS[0]), {"KCOST_NOW": str(billed(LOGS[0])["last"] + 30)}
    expected = _call([log], b"", {**env, helper.ENV: "0"}).stdout
    assert helper.ask(log, helper.Given(None), helper.Terminal(False)) is None  # none running
    os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
    Path(where).write_bytes(b"not a socket")
    assert helper.ask(log, helper.Given(None), helper.Terminal(False)) is None
    assert _call([log], b"", env).stdout == expected  # answered itself, and started a helper: it answers next
    assert _wait(lambda: stat.S_ISSOCK(os.stat(where).st_mode))
    assert _wait(lambda: helper.ask(log, helper.Given(None), helper.Terminal(False)) is not None)
    assert helper.stop(where) and _wait(lambda: not os.path.exists(where))
    os.chmod(os.path.dirname(where), 0o755)
    assert helper.ask(log, helper.Given(None), helper.Terminal(False)) is None and not helper.start()
    assert _call([log], b"", env).stdout == expected
    os.chmod(os.path.dirname(where), 0o700)
    deep = runtime / ("x" * 80)  # a socket's path past what a Unix socket holds: no helper
    deep.mkdir(mode=0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_RUNTIME_DIR", str(deep))
        assert helper.address() is None and not helper.start()
        assert _call([log], b"", env).stdout == expected
    assert _call([log], b"", {**env, helper.ENV: "0"}).stdout == expected
    assert not os.path.exists(where)


def test_a_helper_ends_when_idle(runtime: Path) -> None:
    where = helper.address()
    assert where is not None
    os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "kcost.live.helper", where, "0.5"], cwd=ROOT)
    assert process.wait(timeout=60) == 0 and not os.path.exists(where)


def test_a_helper_whose_modules_changed_ends_and_the_call_answers_itself(runtime: Path, tmp_path: Path) -> None:
    """A helper of a kcost whose module changed on disk since it loaded it answers no more: the call answers
    itself, with the code as it is now (and starts a helper of it)."""
    copy = tmp_path / "install"
    shutil.copytree(ROOT / "kcost", copy / "kcost", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(copy), "KCOST_NOW": str(billed(LOGS[0])["last"] + 30)}
    probe = [sys.executable, "-c", "from kcost.live import helper; print(helper.address())"]
    where = subprocess.run(probe, capture_output=True, text=True, env={**os.environ, **env}, cwd=tmp_path).stdout
    where = where.strip()
    assert where.startswith(str(runtime)) and where != helper.address()  # a helper of its own
    os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "kcost.live.helper", where, "60"], cwd=tmp_path,
                               env={**os.environ, **env})  # fmt: skip
    assert _wait(lambda: os.path.exists(where))
    first = _call([str(LOGS[0])], b"", env, tmp_path)
    assert first.returncode == 0 and process.poll() is None
    display = copy / "kcost" / "render" / "display.py"
    text = display.read_text()
    assert '}${text}"' in text
    display.write_text(text.replace('}${text}"', '}USD {text}"'))  # the line's money, written otherwise
    second = _call([str(LOGS[0])], b"", env, tmp_path)
    assert process.wait(timeout=30) == 0
    assert second.returncode == 0 and b"USD " in second.stdout and b"USD " not in first.stdout
    helper_started = _wait(lambda: os.path.exists(where))
    assert helper_started
    subprocess.run([sys.executable, "-c", f"from kcost.live import helper; helper.stop({where!r})"],
                   env={**os.environ, **env}, cwd=tmp_path, timeout=60)  # fmt: skip
    assert _wait(lambda: not os.path.exists(where))


def test_broken_logs_through_the_helper_give_the_lines_of_calls_that_answer_themselves(
    running: subprocess.Popen[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every log kind the status line reads, broken at random (the fuzzing harness's mutations), looked at twice
    with the log grown between (by garbage or by its own lines): the helper's line each time is the line of a call
    that answers itself, from a cache folder of its own."""
    import random

    from kcost.live.statusline import default_settings, hook_line
    from tests.fuzz.harness import SEEDS, mutate

    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("KCOST_NOW", "2026-12-01T12:00:00Z")  # one clock for both, whenever each runs
    for seed in range(40):
        rng = random.Random(seed)
        kind = sorted(k for k in SEEDS if k != "trace")[seed % (len(SEEDS) - 1)]
        source = SEEDS[kind][rng.randrange(len(SEEDS[kind]))]
        log = tmp_path / f"{seed}" / f"input{''.join(source.suffixes[-2:])}"
        log.parent.mkdir()
        data = source.read_bytes()
        for _ in range(rng.randrange(4)):
            data = mutate(data, rng)
        log.write_bytes(data)
        for look in range(2):
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"{seed}" / "helped"))
            monkeypatch.setenv("KCOST_LEDGER", str(tmp_path / f"{seed}" / "helped.sqlite3"))
            helped = helper.ask(str(log), helper.Given(None), helper.Terminal(False))
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"{seed}" / "alone"))
            monkeypatch.setenv("KCOST_LEDGER", str(tmp_path / f"{seed}" / "alone.sqlite3"))
            alone = hook_line(str(log), default_settings, "auto", helper.Given(None), helper.Terminal(False))
            assert helped == alone, (kind, seed, look)
            grown = rng.randrange(3)
            with log.open("ab") as f:
                f.write(mutate(data[-200:], rng) if grown == 1 else data[: len(data) // (grown or 1)])
    assert running.poll() is None
