"""Kept state that cannot go stale (issue 47): whatever happens to a log, its price file or the state files between
two status-line calls (lines appended, bytes edited in place before the end, the log cut short or replaced, the
price file edited, a state file removed or replaced by a FIFO), the line equals a fresh `kcost bill` of what is
there now, or says the same error. The suite runs a few sequences of each log; the fuzz harness runs them long
(`tests/fuzz/test_contract.py::test_kept_state_is_never_stale`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.api.settings import resolve
from kcost.cli import cli
from kcost.errors import InputError
from kcost.live.statusline import Quiet, cache_dir, status
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
LOGS = [
    FIXTURES / "claude-code" / "spotter-short.jsonl",  # read on line by line (resumable)
    FIXTURES / "kimi-code" / "sample-main.wire.jsonl",  # resumable, a Kimi K2 session
    FIXTURES / "codex" / "ccusage-session-alpha.jsonl",  # read whole whenever it changed
]
MODELS = [None, "logged"]


def fresh(path: Path, prices: Path, model: str | None) -> tuple[str, Decimal, int] | str:
    """What `kcost bill` says of the log as it stands: its model, total and turns, or its error."""
    args = ["bill", str(path), "--prices", str(prices), "--format", "json", *(["--model", model] if model else [])]
    result = CliRunner().invoke(cli, args)
    if result.exit_code != 0:
        return "error"
    (session,) = json.loads(result.stdout)["runs"][0]["sessions"]
    model_named = session["turns"][-1]["priced_model"] or session["model"]
    return model_named, Decimal(session["summary"]["total"]), session["summary"]["turns"]


def line(path: Path, prices: Path, model: str | None) -> tuple[str, Decimal, int] | str:
    try:
        f = status(str(path), resolve(prices=str(prices), model=model))
    except (InputError, Quiet):
        return "error"
    return f.model, f.total, f.turns


def price_table(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    result = CliRunner().invoke(cli, ["prices", "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    path.write_text(result.stdout)
    return path


def scale_prices(path: Path, digit: str) -> None:
    """Every kimi-k3 and kimi-k2 rate's first digit set to `digit`, in place, the file's size kept where it can be
    (so only its content and times tell the edit)."""
    table = json.loads(path.read_text())
    for provider in table["providers"]:
        for model in provider["models"]:
            if model["id"] in ("kimi-k3", "kimi-k2"):
                for period in model["prices"]:
                    for key in ("input_cache_hit", "input_cache_miss", "output", "cache_write_5m", "cache_write_1h"):
                        if period.get(key):
                            period[key] = digit + str(period[key])[1:]
    with open(path, "r+") as f:  # in place: the same inode
        f.seek(0)
        f.write(json.dumps(table, indent=2))
        f.truncate()


def edit_in_place(path: Path, at: float) -> None:
    """One digit of the log changed in place (its size kept), at the fraction `at` of the way through: a count, a
    time or a text, whichever it hits."""
    data = bytearray(path.read_bytes())
    digits = [i for i, b in enumerate(data) if 0x31 <= b <= 0x38]
    if not digits:
        return
    i = digits[int(at * (len(digits) - 1))]
    data[i] += 1
    with open(path, "r+b") as f:
        f.write(bytes(data))


Step = tuple[str, Any]
STEPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 6)),
    st.tuples(st.just("edit"), st.floats(0, 1)),
    st.tuples(st.just("cut"), st.integers(1, 6)),
    st.tuples(st.just("replace"), st.integers(0, 2)),
    st.tuples(st.just("prices"), st.sampled_from("2345")),
    st.tuples(st.just("state"), st.sampled_from(["remove", "fifo", "garbage"])),
), min_size=1, max_size=6)  # fmt: skip


def apply(step: Step, log: Path, lines: list[bytes], shown: list[int], prices: Path) -> None:
    kind, arg = step
    if kind == "append":
        shown[0] = min(len(lines), shown[0] + arg)
        log.write_bytes(b"".join(lines[: shown[0]]))  # rewritten whole: the same bytes then more
    elif kind == "edit":
        edit_in_place(log, arg)
    elif kind == "cut":
        shown[0] = max(1, shown[0] - arg)
        with open(log, "r+b") as f:
            f.truncate(len(b"".join(lines[: shown[0]])))
    elif kind == "replace":
        other = LOGS[arg].read_bytes().splitlines(keepends=True)
        new = log.with_name(log.name + ".new")
        new.write_bytes(b"".join(other[: max(2, len(other) // 2)]))
        os.replace(new, log)
        lines[:] = other
        shown[0] = max(2, len(other) // 2)
    elif kind == "prices":
        scale_prices(prices, arg)
    else:
        for state in cache_dir().glob("*"):  # what readers spilled
            state.unlink()
            if arg == "fifo":
                os.mkfifo(state)
            elif arg == "garbage":
                state.write_bytes(b"\x80not a state")
        spoil_rows(arg)


def spoil_rows(how: str) -> None:
    """The status line's rows in the ledger removed, or their bytes made garbage."""
    import sqlite3

    from kcost.ledger import default_path

    path = default_path()
    if path is None or not os.path.isfile(path):
        return
    with sqlite3.connect(path) as db:
        if how == "garbage":
            db.execute("UPDATE live SET data = ?", (b"\x80not a state",))
        else:
            db.execute("DELETE FROM live")


@pytest.mark.parametrize("model", MODELS, ids=["k3-prices", "logged"])
@pytest.mark.parametrize("source", LOGS, ids=lambda p: p.name)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_the_line_is_a_fresh_bill_after_every_change(
    source: Path,
    model: str | None,
    steps: list[Step],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tmp = tmp_path_factory.mktemp("kept")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
    prices = price_table(tmp)
    lines = source.read_bytes().splitlines(keepends=True)
    shown = [max(2, len(lines) // 2)]
    log = tmp / source.name
    log.write_bytes(b"".join(lines[: shown[0]]))
    assert line(log, prices, model) == fresh(log, prices, model)
    for n, step in enumerate(steps):
        apply(step, log, lines, shown, prices)
        assert line(log, prices, model) == fresh(log, prices, model), (n, step)


@pytest.mark.parametrize("make", ["remove", "fifo", "dev-zero"])
def test_a_state_file_gone_or_special_is_rebuilt_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          make: str) -> None:  # fmt: skip
    """After its spilled state file is removed (or a FIFO, or a link to /dev/zero, is put in its place), the next
    call reads the log again instead of printing an error at every call."""
    from kcost.readers.agents import claude_code_live

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(claude_code_live, "KEEP", 2)  # spill the chain's older entries at once
    from kcost.live import statusline

    monkeypatch.setattr(statusline, "REREAD_CALLS", 1)
    source = FIXTURES / "claude-code" / "spotter-short.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    log = tmp_path / source.name
    prices = price_table(tmp_path)
    for n in (len(lines) // 3, len(lines) // 2, len(lines)):
        log.write_bytes(b"".join(lines[:n]))
        assert line(log, prices, None) == fresh(log, prices, None)
    spilled: Callable[[], list[Path]] = lambda: sorted(cache_dir().glob("*.lines"))  # noqa: E731
    assert spilled(), "the reader spilled the chain's older entries"
    for state in spilled():
        state.unlink()
        if make == "fifo":
            os.mkfifo(state)
        elif make == "dev-zero":
            state.symlink_to("/dev/zero")
    log.write_bytes(b"".join(lines) + lines[-1])  # appended: the kept state is needed
    assert line(log, prices, None) == fresh(log, prices, None)
    assert line(log, prices, None) == fresh(log, prices, None)


@pytest.mark.parametrize("block", [64, 500, 4096])
@pytest.mark.parametrize("source", [*LOGS, *sorted((FIXTURES / "kimi-code").glob("*.wire.jsonl"))],
                         ids=lambda p: getattr(p, "name", p))
def test_a_log_read_in_small_blocks_is_the_bill(source: Path, block: int, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The status line's first look reads a log a block at a time; where the first block cannot tell the reader
    what kind of log the rest is (no message text yet, no request record yet), the log is read again whole: the
    line is a fresh bill's, whatever the block (8 MiB in use; small ones here stand in for long logs)."""
    from kcost.live import incremental

    monkeypatch.setattr(incremental, "BLOCK", block)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prices = price_table(tmp_path)
    log = tmp_path / source.name
    log.write_bytes(source.read_bytes())
    assert line(log, prices, None) == fresh(log, prices, None)


def test_a_log_cut_short_while_it_is_read_ends_the_read(tmp_path: Path) -> None:
    """A log cut short between its look and its read (a rewrite in place) ends the read; the next look reads it
    again: no read waits for bytes that are gone."""
    import threading

    from kcost.live.incremental import Tail

    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"a":1}')
    tail = Tail(str(log), True)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (tail._read_on(100), done.set()), daemon=True)
    worker.start()
    assert done.wait(10), "the read waited for bytes the file no longer holds"
