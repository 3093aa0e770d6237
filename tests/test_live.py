"""`kcost statusline` and `kcost watch`: the figures equal `kcost bill`'s, the clock is the TTL left after the
last logged call, the reader resumes a growing log and rebuilds a rewritten one, and neither fails its caller."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.api.settings import resolve
from kcost.cli import cli
from kcost.live.clock import duration
from kcost.live.incremental import Tail
from kcost.live.statusline import status
from kcost.live.watch import frames
from kcost.render.display import money, percent
from tests.conftest import ROOT, SHARED

FIXTURES = ROOT / "tests" / "fixtures"
LOGS = [
    FIXTURES / "claude-code" / "spotter-short.jsonl",
    FIXTURES / "claude-code" / "ccusage-chat-alpha.jsonl",
    FIXTURES / "claude-code" / "gateway" / "e7a9c3b1-2d4f-4a6e-9b8c-1f3e5d7a9c02.jsonl",
    FIXTURES / "claude-code" / "kimi" / "f1b3d5e7-9a2c-4e6f-8b0d-2c4e6a8b0d13.jsonl",
    FIXTURES / "claude-code" / "btw" / "c4d1a7e2-5b9f-4e3a-8c61-0d2f7b9e5a84.jsonl",
    FIXTURES / "kimi-code" / "tool-turn.wire.jsonl",
    FIXTURES / "kimi-code" / "sample-main.wire.jsonl",
    *sorted((SHARED / "samples" / "claude-code").glob("*.jsonl")),
    *sorted((SHARED / "samples" / "kimi-code").glob("*.jsonl")),
]
# the split tests: logs with several responses, one of them with sidechain replays billed once
GROWING = [LOGS[0], LOGS[2], LOGS[3], LOGS[4]]


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("KCOST_NOW", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return home


def billed(path: Path | str) -> dict:
    """What `kcost bill --format json` says of the log: its total, last call's time and the cache's TTL."""
    result = CliRunner().invoke(cli, ["bill", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)["runs"][0]
    session = run["sessions"][0]
    times = [datetime.fromisoformat(t["time"].replace("Z", "+00:00")).timestamp() for t in session["turns"]
             if t["time"]]  # fmt: skip
    summary = session["summary"]
    return {"total": Decimal(summary["total"]), "hit_rate": summary["hit_rate"], "model": session["model"],
            "last": max(times) if times else None, "ttl": run["cache"]["ttl_seconds"]}  # fmt: skip


def statusline(hook: object, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    stdin = hook if isinstance(hook, (str, bytes)) else json.dumps(hook)
    result = CliRunner().invoke(cli, ["statusline", *args], input=stdin, env=env)
    return result.exit_code, result.output


def hook_for(path: Path) -> dict:
    """The JSON Claude Code gives a status-line command."""
    return {"hook_event_name": "Status", "session_id": path.stem, "transcript_path": str(path), "cwd": str(ROOT),
            "model": {"id": "claude-opus-4-1", "display_name": "Opus"},
            "workspace": {"current_dir": str(ROOT), "project_dir": str(ROOT)}, "version": "1.0.80"}  # fmt: skip


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_the_line_is_the_bill_and_the_clock_the_ttl_left(path: Path) -> None:
    if CliRunner().invoke(cli, ["bill", str(path)]).exit_code == 2:  # a log with no call to bill (a compaction)
        code, out = statusline(hook_for(path))
        assert code == 0 and len(out.splitlines()) == 1 and out.startswith("kcost: ")
        return
    bill = billed(path)
    assert bill["last"] is not None
    now = bill["last"] + 100  # 100 s after the last logged call: TTL - 100 left
    code, out = statusline(hook_for(path), env={"KCOST_NOW": str(now)})
    assert code == 0
    (line,) = out.splitlines()
    assert len(line) <= 80
    assert line.startswith(f"{bill['model']} {money(bill['total'], total=True)} · hit {percent(bill['hit_rate'])} · ")
    assert f"cache {duration(bill['ttl'] - 100)}: next " in line
    # past the TTL: cold, and by how long
    code, out = statusline(hook_for(path), env={"KCOST_NOW": str(bill["last"] + bill["ttl"] + 75)})
    assert code == 0 and f"cache cold {duration(75)}: next " in out and len(out.splitlines()[0]) <= 80


def test_a_path_instead_of_the_hook_and_the_logged_model() -> None:
    path = LOGS[1]  # two models logged: priced at each
    bill = billed(path)
    code, out = statusline("", str(path), env={"KCOST_NOW": str(bill["last"] + 10)})
    assert code == 0 and out.startswith(f"{bill['model']} {money(bill['total'], total=True)} ")
    result = CliRunner().invoke(cli, ["bill", str(path), "--format", "json", "--model", "logged"])
    total = Decimal(json.loads(result.output)["runs"][0]["sessions"][0]["summary"]["total"])
    code, out = statusline("", str(path), "--model", "logged", env={"KCOST_NOW": str(bill["last"] + 10)})
    assert code == 0 and f" {money(total, total=True)} · " in out


@pytest.mark.parametrize("path", [LOGS[0], LOGS[5]], ids=lambda p: p.name)
def test_the_state_of_a_call_under_other_settings_is_read_on(path: Path) -> None:
    for args in ((), ("--cache", "k3:ttl=3600"), ("--model", "logged"), ()):
        result = CliRunner().invoke(cli, ["bill", str(path), "--format", "json", *args])
        total = Decimal(json.loads(result.output)["runs"][0]["sessions"][0]["summary"]["total"])
        code, out = statusline("", str(path), *args)
        assert code == 0 and f" {money(total, total=True)} · " in out, (args, out)


def test_the_session_is_found_by_its_id_when_the_hook_names_no_transcript(tmp_path: Path) -> None:
    home = tmp_path / "claude"
    folder = home / "projects" / "-home-dev-p"
    folder.mkdir(parents=True)
    log = folder / "0d1e2f3a-1111-4222-8333-944455556666.jsonl"
    log.write_bytes(LOGS[0].read_bytes())
    bill = billed(log)
    code, out = statusline({"session_id": log.stem, "model": None, "workspace": 3},
                           env={"CLAUDE_CONFIG_DIR": str(home), "KCOST_NOW": str(bill["last"])})  # fmt: skip
    assert code == 0 and f" {money(bill['total'], total=True)} · " in out


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        ("not json at all {", "kcost: hook input is not JSON"),
        ("[1, 2]", "kcost: hook input is not a JSON object"),
        ("", "kcost: no hook input"),
        ('{"transcript_path": 7, "session_id": ["x"]}', "kcost: the hook names no transcript"),
        ('{"transcript_path": "/nowhere/at/all.jsonl"}', "kcost: no transcript yet"),
    ],
)
def test_bad_hook_input_is_one_line_and_exit_0(stdin: str, said: str) -> None:
    code, out = statusline(stdin)
    assert code == 0
    assert len(out.splitlines()) == 1 and out.startswith(said) and len(out.rstrip("\n")) <= 80


def test_an_empty_or_broken_transcript_is_one_line_and_exit_0(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b'{"type": "user", "uuid": "a", "sessionId": "s"}\n{"not json\n')
    for path in (empty, broken, tmp_path / "missing.jsonl"):
        code, out = statusline({"transcript_path": str(path)}) if path.exists() else statusline("", str(path))
        assert code == 0 and len(out.splitlines()) == 1 and out.startswith("kcost: "), out


def _figures(path: Path) -> tuple[str, Decimal, float, float | None]:
    settings = resolve()
    f = status(str(path), settings)
    return f.model, f.total, f.hit_rate, f.last_call


@pytest.mark.parametrize("source", GROWING, ids=lambda p: p.parent.name + "/" + p.name)
def test_appended_lines_give_the_figures_of_a_fresh_bill(source: Path, tmp_path: Path) -> None:
    """The log grows line by line (a response's blocks split across looks too); after each look the figures
    are those `kcost bill` gives the log as it then stands."""
    looked = 0
    for n, log, run in _grown(source, tmp_path):
        if run is None:
            continue  # no call in it yet
        model, total, hit_rate, _ = _figures(log)
        assert (model, total, hit_rate) == (run["model"], Decimal(run["summary"]["total"]),
                                            run["summary"]["hit_rate"]), f"after line {n}"  # fmt: skip
        looked += 1
    assert looked >= 2


def _grown(source: Path, tmp_path: Path) -> Iterator[tuple[int, Path, dict | None]]:
    """The log written again a line at a time: after each line, (its number, the log, the session `kcost bill`
    makes of it then, None where it bills nothing yet)."""
    lines = source.read_bytes().splitlines(keepends=True)
    log = tmp_path / source.name
    log.write_bytes(b"")
    for n in range(1, len(lines) + 1):
        with log.open("ab") as f:
            f.write(lines[n - 1])
        fresh = CliRunner().invoke(cli, ["bill", str(log), "--format", "json"])
        yield n, log, json.loads(fresh.output)["runs"][0]["sessions"][0] if fresh.exit_code == 0 else None


KIMI_CODE = [
    *sorted((FIXTURES / "kimi-code").glob("*.jsonl")),
    *sorted((SHARED / "samples" / "kimi-code").glob("*.jsonl")),
]


@pytest.mark.parametrize("source", KIMI_CODE, ids=lambda p: p.parent.name + "/" + p.name)
def test_a_kimi_code_wire_is_read_on_record_by_record_with_the_figures_of_a_fresh_bill(
    source: Path, tmp_path: Path
) -> None:
    """A Kimi Code wire grows a record at a time (a request awaiting its reply, its usage, its step's end, a
    compaction, an undo); after each look through the saved state the figures are `kcost bill`'s, and once its
    first request is logged the wire is fed only what was appended (never read again from the start: a look
    between a step's start and its `llm.request` has built a request from the step, and is read again once)."""
    settings = resolve()
    tail = Tail(str(tmp_path / source.name), True)
    looked, settled = 0, None
    for n, log, run in _grown(source, tmp_path):
        tail.advance(settings)
        if settled is None and b'"llm.request"' in log.read_bytes():
            settled = tail.rebuilds
        if run is None:
            continue  # no call in it yet
        model, total, hit_rate, _ = _figures(log)
        assert (model, total, hit_rate) == (run["model"], Decimal(run["summary"]["total"]),
                                            run["summary"]["hit_rate"]), f"after line {n}"  # fmt: skip
        built = tail.built(settings)
        assert [r.request for r in built.records] == [r.request for r in api_session(log).records], f"line {n}"
        looked += 1
    assert looked >= 1 or CliRunner().invoke(cli, ["bill", str(log)]).exit_code == 2  # a wire with no call
    assert tail.resumable and tail.rebuilds == (settled or 0) <= 1


def api_session(path: Path) -> object:
    from kcost import api

    (session,) = api.sessions([str(path)], resolve())
    return session


def _jumped(tmp_path: Path) -> Path:
    """The short Claude Code log with a last response after its branch jump (a tool result whose parent the chain
    had left, then the user's line after it): that response's prompt is the branch the jump goes back along."""
    records = [json.loads(line) for line in LOGS[0].read_bytes().splitlines()]
    last = next(r for r in reversed(records) if r.get("type") == "assistant")
    after = next(r for r in records if r.get("uuid", "").startswith("c06a9fe4"))
    reply = json.loads(json.dumps(last))
    reply.update(uuid="9b1c2d3e-0000-4000-8000-000000000001", parentUuid=after["uuid"], requestId="req_after_jump",
                 timestamp="2026-02-10T21:12:09.000Z")  # fmt: skip
    usage = reply["message"]["usage"]
    reply["message"]["id"] = "msg_after_jump"
    usage.update(cache_read_input_tokens=usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"],
                 cache_creation_input_tokens=120, input_tokens=9, output_tokens=40)  # fmt: skip
    usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 120}
    log = tmp_path / "jumped" / LOGS[0].name
    log.parent.mkdir()
    log.write_text("".join(json.dumps(r) + "\n" for r in [*records, reply]))
    return log


@pytest.mark.parametrize("source", [*GROWING, None], ids=lambda p: p.parent.name + "/" + p.name if p else "jumped")
def test_the_chain_kept_apart_rebuilds_the_prompts_of_a_whole_read(source: Path | None, tmp_path: Path) -> None:
    """A resumed reader fed a line at a time, its chain kept apart in files after every feed (one line's entries
    at hand), rebuilds every call's prompt as one read of the whole log does: a branch jump finds the lines it
    goes back along in the files."""
    import pickle

    from kcost.readers.agents.claude_code import read_calls
    from kcost.readers.agents.claude_code_live import Resume
    from kcost.readers.source import open_source

    source = source or _jumped(tmp_path)
    lines = source.read_bytes().splitlines(keepends=True)
    start = next(n for n, line in enumerate(lines) if b'"content"' in line) + 1  # a first read that holds text
    reader = Resume(str(source), b"".join(lines[:start]), True)
    spilled = 0
    for n in range(start, len(lines)):
        spilled += bool(reader.spill(str(tmp_path / "state.lines"), keep=1)) or (tmp_path / "state.lines").exists()
        reader = pickle.loads(pickle.dumps(reader))  # as a state between looks is kept
        assert reader.feed(lines[n], n)
    whole = list(read_calls(open_source(str(source)), []))
    assert [(c.line, c.messages, c.output) for c in reader.calls()] == [(c.line, c.messages, c.output) for c in whole]
    assert spilled


def test_a_status_line_after_an_append_reads_on_and_one_after_a_rewrite_reads_again(tmp_path: Path) -> None:
    lines = LOGS[0].read_bytes().splitlines(keepends=True)
    log = tmp_path / "s.jsonl"
    log.write_bytes(b"".join(lines[:8]))
    settings = resolve()
    tail = Tail(str(log), True)
    tail.advance(settings)
    first = tail.offset
    with log.open("ab") as f:
        f.write(b"".join(lines[8:]))
    tail.advance(settings)
    assert tail.offset == len(log.read_bytes()) > first and tail.rebuilds == 0
    before = status(str(log), settings).total  # through the saved state
    assert before == billed(log)["total"]
    # truncated: shorter than what was read, so read again from the start
    log.write_bytes(b"".join(lines[:6]))
    assert tail.advance(settings) and tail.rebuilds == 1
    assert status(str(log), settings).total == billed(log)["total"]
    # the same size, other bytes: a rewrite, read again
    data = b"".join(lines[:6]).replace(b"13835", b"23835")
    log.write_bytes(data)
    os.utime(log, ns=(1, 1))
    assert tail.advance(settings) and tail.rebuilds == 2
    assert status(str(log), settings).total == billed(log)["total"] != before


def _process(args: list[str], stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """kcost as a hook runs it: a whole process, its stdout a pipe."""
    return subprocess.run([sys.executable, "-m", "kcost", *args], input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, **env}, cwd=ROOT)  # fmt: skip


@pytest.mark.parametrize("path", [LOGS[0], LOGS[5]], ids=lambda p: p.name)
def test_a_bare_hook_call_skips_the_parser_and_prints_the_commands_line(path: Path, tmp_path: Path) -> None:
    """`kcost statusline` with no option (as a hook runs it) is answered without click, and prints what the
    command itself prints, from the hook's JSON and from a path; an option takes it to the command."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "c"), "KCOST_NOW": str(billed(path)["last"] + 30)}
    hook = json.dumps(hook_for(path)).encode()
    # the bare call ends the process itself (`os._exit`, once its line is out): the probe says what was loaded then
    probe = "import os, sys, runpy\nend = os._exit\n" \
            "def said(code):\n    print('click' in sys.modules, file=sys.stderr, flush=True)\n    end(code)\n" \
            "os._exit = said\nrunpy.run_module('kcost', run_name='__main__')"  # fmt: skip
    for args in (["statusline"], ["statusline", str(path)]):
        bare = subprocess.run([sys.executable, "-c", probe, *args], input=hook, capture_output=True, timeout=120,
                              env={**os.environ, **env}, cwd=ROOT)  # fmt: skip
        assert bare.returncode == 0 and bare.stderr.decode().split() == ["False"], bare.stderr
        _, out = statusline(hook if len(args) == 1 else "", *args[1:], env=env)
        assert bare.stdout.decode() == out and out.count("\n") == 1 and not out.startswith("kcost:")
    with_option = _process(["statusline", "--color", "never", str(path)], b"", env)
    assert with_option.returncode == 0 and with_option.stdout.decode() == out


def test_colour_reaches_a_piped_hook_when_forced(tmp_path: Path) -> None:
    """Claude Code reads the line through a pipe: FORCE_COLOR or `--color always` colour it there, NO_COLOR and
    `--color never` do not, in the bare call and through the command alike."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "c"), "KCOST_NOW": str(billed(LOGS[0])["last"] + 30)}
    hook = json.dumps(hook_for(LOGS[0])).encode()
    cases = [([], {"FORCE_COLOR": "1"}, True), (["--color", "always"], {}, True), ([], {}, False),
             (["--color", "auto"], {"FORCE_COLOR": "1"}, True), ([], {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
             (["--color", "never"], {"FORCE_COLOR": "1"}, False)]  # fmt: skip
    for args, extra, coloured in cases:
        done = _process(["statusline", *args], hook, {**env, **extra})
        assert done.returncode == 0 and done.stdout.count(b"\n") == 1
        assert (b"\x1b[" in done.stdout) is coloured, (args, extra, done.stdout)


def live_rows() -> list[tuple[str, str]]:
    """The status line's rows in the ledger (log, kind), as `kcost.ledger.live` keeps them."""
    import sqlite3

    from kcost.ledger import default_path

    path = default_path()
    if path is None or not os.path.isfile(path):
        return []
    with sqlite3.connect(path) as db:
        return sorted(db.execute("SELECT log, kind FROM live"))


def test_two_status_lines_around_an_append_keep_state_in_the_ledger(tmp_path: Path, cache_home: Path) -> None:
    lines = LOGS[2].read_bytes().splitlines(keepends=True)
    log = tmp_path / "g.jsonl"
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    code, out = statusline({"transcript_path": str(log)})
    assert code == 0 and money(billed(log)["total"], total=True) in out
    assert [kind for _, kind in live_rows()] == ["line", "tail"]
    with log.open("ab") as f:
        f.write(b"".join(lines[len(lines) // 2 :]))
    code, out = statusline({"transcript_path": str(log)})
    assert code == 0 and f" {money(billed(log)['total'], total=True)} · " in out


def test_watch_follows_a_log_another_thread_writes(tmp_path: Path) -> None:
    source = LOGS[2]
    lines = source.read_bytes().splitlines(keepends=True)
    log = tmp_path / source.name
    log.write_bytes(lines[0])
    done = threading.Event()

    def writer() -> None:
        for n, line in enumerate(lines[1:], start=2):
            time.sleep(0.02)
            if n == len(lines):  # before the last line: the frame that shows it sees the writer done (set after
                done.set()  # it, a frame drawn in between would be the last one, and the loop would wait forever)
            with log.open("ab") as f:
                f.write(line)

    settings = resolve()
    seen = []
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for frame in frames([str(log)], settings, interval=0.01):
            seen.append(frame)
            if done.is_set() and frame.sessions[0].figures.total == billed(log)["total"]:
                break
            assert len(seen) < 10_000
    finally:
        thread.join()
    numbers = [f.number for f in seen]
    assert numbers == sorted(numbers) == list(range(1, len(seen) + 1))
    last = seen[-1].sessions[0]
    fresh = json.loads(CliRunner().invoke(cli, ["bill", str(log), "--format", "json"]).output)
    assert len(last.turns) == len(fresh["runs"][0]["sessions"][0]["turns"])
    cumulative = [t.cumulative for t in last.turns]
    assert cumulative == sorted(cumulative) and cumulative[-1] == last.figures.total
    assert sum(f.sessions[0].new for f in seen) == len(last.turns)


def test_watch_draws_a_frame_at_every_look_so_the_clock_counts_down(tmp_path: Path) -> None:
    """On a terminal every look is a frame (the clock drawn anew at its time); a session that did not grow has no
    new turns in it, and a pipe's frames (one at each growth) never show a turn twice."""
    from kcost.cli.live import table

    log = tmp_path / LOGS[0].name
    lines = LOGS[0].read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines))
    other = tmp_path / "other.jsonl"
    other.write_bytes(LOGS[2].read_bytes())
    last = billed(log)["last"]
    looks = iter(range(10))
    beats = frames([str(log), str(other)], resolve(), interval=0, beat=True, sleep=lambda _: next(looks))
    first, second, third = next(beats), next(beats), next(beats)
    assert [f.number for f in (first, second, third)] == [1, 2, 3]
    assert [w.new for w in first.sessions] == [len(w.turns) for w in first.sessions] and first.sessions[0].new
    assert [w.new for w in second.sessions] == [w.new for w in third.sessions] == [0, 0]
    drawn = [" ".join(str(part) for part in table(f, now).renderables if not hasattr(part, "columns"))
             for f, now in ((second, last + 10), (third, last + 70))]  # fmt: skip
    assert f"cache {duration(billed(log)['ttl'] - 10)}" in drawn[0]
    assert f"cache {duration(billed(log)['ttl'] - 70)}" in drawn[1]
    # piped: a frame only where a log grew, and each turn in one frame only
    shown: list[tuple[int, int]] = []
    piped = frames([str(log), str(other)], resolve(), interval=0, sleep=lambda _: None)
    grow = iter(lines[-3:])
    log.write_bytes(b"".join(lines[:-3]))
    for frame in piped:
        shown += [(n, t.turn) for n, w in enumerate(frame.sessions) for t in w.turns[len(w.turns) - w.new :]]
        chunk = next(grow, None)
        if chunk is None:
            break
        with log.open("ab") as f:
            f.write(chunk)
    assert len(shown) == len(set(shown)) == len(billed_turns(log)) + len(billed_turns(other))


def billed_turns(path: Path) -> list[dict]:
    result = CliRunner().invoke(cli, ["bill", str(path), "--format", "json"])
    return list(json.loads(result.output)["runs"][0]["sessions"][0]["turns"])


def test_watch_once_prints_one_frame(tmp_path: Path) -> None:
    path = LOGS[0]
    result = CliRunner().invoke(cli, ["watch", str(path), "--once"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert path.name in result.output and money(billed(path)["total"], total=True) in result.output


def test_watch_warns_of_a_budget_about_to_be_crossed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    total = billed(LOGS[0])["total"]
    (tmp_path / "kcost.toml").write_text(f'[budgets]\nmax-session-usd = "{total + Decimal("0.001")}"\n')
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["watch", str(LOGS[0]), "--once"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "warning: the session budget of" in result.output


def test_watch_piped_prints_a_line_per_turn_and_ctrl_c_exits_130(tmp_path: Path) -> None:
    log = tmp_path / "w.jsonl"
    log.write_bytes(LOGS[2].read_bytes())
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kcost", "watch", str(log), "--interval", "0.05"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert " turn 1 " in first and "total $" in first
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.splitlines() == ["kcost: interrupted"]


def _fresh_figures(path: Path) -> object:
    from kcost import api
    from kcost.live.clock import figures

    settings = resolve()
    session = api.sessions([str(path)], settings)[0]
    return figures(session, api.bill(session, settings=settings), settings)


def _conversation(turns: int, unlogged: int | None) -> list[bytes]:
    """A Claude Code log of `turns` exchanges whose logged prompts run 1.3 to 1.7 times the estimate (so each
    logged call moves the session's ratio), response `unlogged` logged without usage."""
    out, parent, prompt = [], None, 900
    for i in range(turns):
        ask, reply = (
            f"question {i}: " + "why is the cache cold " * (3 + i % 5),
            f"answer {i}: " + "it expired " * (4 + i),
        )
        prompt += int((len(ask) / 4) * (1.3 + (i % 5) / 10)) + (0 if i == 0 else len(reply) // 4)
        stamp = f"2026-02-10T21:{10 + i:02d}:00.000Z"
        user = {
            "type": "user",
            "uuid": f"u{i}",
            "parentUuid": parent,
            "sessionId": "s",
            "timestamp": stamp,
            "message": {"role": "user", "content": ask},
        }
        message = {
            "id": f"m{i}",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": reply}],
            "usage": {
                "input_tokens": prompt,
                "output_tokens": len(reply) // 4,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        }
        if i == unlogged:
            del message["usage"]
        answer = {
            "type": "assistant",
            "uuid": f"a{i}",
            "parentUuid": f"u{i}",
            "sessionId": "s",
            "requestId": f"r{i}",
            "timestamp": stamp.replace(":00.000Z", ":20.000Z"),
            "message": message,
        }
        out += [json.dumps(user).encode() + b"\n", json.dumps(answer).encode() + b"\n"]
        parent = f"a{i}"
    return out  # fmt: skip


@pytest.mark.parametrize(
    ("source", "unlogged"),
    [*((p, None) for p in GROWING), (None, None), (None, 0)],
    ids=[*(p.parent.name + "/" + p.name for p in GROWING), "made", "made-a-call-without-usage"],
)
def test_the_running_bill_after_each_append_is_a_fresh_bills(
    source: Path | None, unlogged: int | None, tmp_path: Path
) -> None:
    """A status line per appended line, each from the state the last one kept: every figure (the next turn's
    prices too) is a fresh bill's. With every call logged, the log is never read again from the start; a call
    without logged usage is sized by the session's ratio, which later calls move: then the whole log is."""
    from kcost.live.statusline import _load

    lines = _conversation(8, unlogged) if source is None else source.read_bytes().splitlines(keepends=True)
    log = tmp_path / "s.jsonl"
    log.write_bytes(b"")
    settings = resolve()
    looked = 0
    for n, line in enumerate(lines, start=1):
        with log.open("ab") as f:
            f.write(line)
        try:
            fresh = _fresh_figures(log)
        except Exception:  # noqa: BLE001 - no call in it yet
            continue
        assert status(str(log), settings) == fresh, f"after line {n}"
        looked += 1
    assert looked >= 2
    tail, running, _ = _load(str(log), settings)
    # kept: at most the calls closed (the last response may still grow, so it is billed on top of the state, not
    # kept), and those a look read on past a state kept are kept only once they are many
    assert running is not None and running.totals.turns <= fresh.turns - 1  # type: ignore[attr-defined]
    assert (tail.rebuilds == 0) == (unlogged is None)


def test_the_state_kept_lags_the_log_and_each_look_reads_on_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look writes the reader's state again only once it read `REREAD_CALLS` calls past the one kept; the looks
    between read on from the state kept, each with a fresh bill's figures."""
    from kcost.live import statusline as live

    monkeypatch.setattr(live, "REREAD_CALLS", 3)
    lines = _conversation(12, None)
    log = tmp_path / "s.jsonl"
    log.write_bytes(b"".join(lines[:2]))
    settings = resolve()
    kept = []
    for n in range(4, len(lines) + 1, 2):  # a call (its question and its answer) at a time
        log.write_bytes(b"".join(lines[:n]))
        assert status(str(log), settings) == _fresh_figures(log), f"after line {n}"
        kept.append(live._load(str(log), settings)[1].totals.turns)  # type: ignore[union-attr]
    # the first look keeps its state; then one in three: the calls closed (the last still open) at that look
    assert kept == [1, 1, 1, 4, 4, 4, 7, 7, 7, 10, 10]


def test_a_log_cut_short_after_a_look_is_billed_anew(tmp_path: Path) -> None:
    """A log rewritten shorter than the state kept read it: the running bill of the longer log is dropped,
    and the look's figures are the shorter log's."""
    lines = _conversation(10, None)
    log = tmp_path / "s.jsonl"
    settings = resolve()
    for n in (20, 8, 14, 6):
        log.write_bytes(b"".join(lines[:n]))
        assert status(str(log), settings) == _fresh_figures(log), f"cut to {n} lines"


@settings(max_examples=300, deadline=None)
@given(
    heads=st.lists(
        st.tuples(
            st.sampled_from(["m1", "m2", "m3", "m4"]),
            st.sampled_from(["", "r1", "r2"]),
            st.booleans(),
            st.integers(0, 9),
        ),
        max_size=14,
    ),  # fmt: skip
    cut=st.integers(0, 14),
)
def test_a_looks_duplicates_are_the_whole_logs_for_the_responses_it_touches(
    heads: list[tuple[str, str, bool, int]], cut: int
) -> None:
    """The live reader weighs only the responses that share a message id with those just read: for them, it
    drops what de-duplicating the whole log drops (the responses read before as a state keeps them too)."""
    from kcost.readers.agents.claude_code import Head
    from kcost.readers.agents.claude_code_live import _drops

    made = [Head(n, mid, request, side, total, f"u{n}") for n, (mid, request, side, total) in enumerate(heads)]
    old, fresh = made[:cut], made[cut:]
    whole = _drops(made)
    touched = {h.line for h in made if h.mid in {f.mid for f in fresh}}
    assert _drops(old, fresh) == whole & touched
    assert _drops([tuple(h) for h in old], fresh) == whole & touched  # as a state kept them: plain tuples


def _last_usage_dropped(source: Path, tmp_path: Path) -> Path:
    """The log with its last response's usage left out: that call's prompt is sized by counting its parts."""
    records = [json.loads(line) for line in source.read_bytes().splitlines() if line.strip()]
    if "wire" in source.name:
        del records[max(i for i, r in enumerate(records) if r.get("type") == "usage.record")]
    else:
        last = [r for r in records if r.get("type") == "assistant"][-1]["message"]["id"]
        for r in records:
            if r.get("type") == "assistant" and r["message"]["id"] == last:
                r["message"].pop("usage", None)
    path = tmp_path / source.name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("source", [LOGS[2], LOGS[5]], ids=lambda p: p.name)
def test_the_status_line_counts_with_the_tokenizer_the_bill_counts_with(source: Path, tmp_path: Path) -> None:
    """`KCOST_TOKENIZER` (or `--tokenizer`) names the tokenizer `kcost bill` counts with: the status line and its
    running bill count with it too, in the bare call and through the command, and a state kept under the estimate
    is not read on under it."""
    pytest.importorskip("tiktoken")
    from tests.test_tokenizer import ranks_file

    path = _last_usage_dropped(source, tmp_path)
    ranks = ranks_file(tmp_path)
    env = {"XDG_CACHE_HOME": str(tmp_path / "c"), "KCOST_NOW": str(billed(path)["last"] + 30)}
    exact = CliRunner().invoke(cli, ["bill", str(path), "--format", "json", "--tokenizer", str(ranks)])
    total = Decimal(json.loads(exact.output)["runs"][0]["sessions"][0]["summary"]["total"])
    assert status(str(path), resolve()).total != total  # the counts tell: the call without usage is sized otherwise
    assert status(str(path), resolve(tokenizer=str(ranks))).total == total
    estimated = _process(["statusline", str(path)], b"", env).stdout  # a state under the estimate first
    bare = _process(["statusline", str(path)], b"", {**env, "KCOST_TOKENIZER": str(ranks)}).stdout
    command = _process(["statusline", "--tokenizer", str(ranks), str(path)], b"", env).stdout
    assert bare == command != estimated and bare.startswith(b"kimi-k3 "), (bare, command, estimated)


def test_a_state_too_deep_to_keep_still_gives_the_line(tmp_path: Path, cache_home: Path) -> None:
    """A wire whose tools snapshot nests as deep as the fuzzing found (600 levels, past pickle's reach at Python's
    default recursion limit): the line is the bill's, and so is the next after an append, whether the reader's
    state could be kept (the command line leaves room for the parser's depth) or only the line was."""
    records = [json.loads(line) for line in LOGS[5].read_bytes().splitlines()]
    deep: list[object] = []
    for _ in range(600):
        deep = [deep]
    for r in records:
        if r.get("type") == "llm.tools_snapshot":
            r["tools"] = [{"name": "deep", "parameters": deep}]
    log = tmp_path / "deep.wire.jsonl"
    cut = len(records) - 2
    log.write_text("".join(json.dumps(r) + "\n" for r in records[:cut]))
    for _ in range(2):
        code, out = statusline("", str(log))
        assert code == 0 and f" {money(billed(log)['total'], total=True)} · " in out, out
        assert "line" in {kind for _, kind in live_rows()}
        with log.open("a") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records[cut:]))


def test_the_state_of_logs_long_over_is_removed_when_a_new_log_is_looked_at(tmp_path: Path, cache_home: Path) -> None:
    """The ledger and the cache folder do not grow with every session ever looked at: a log's state none of whose
    rows (and spilled files) was written for a week goes, all of it, when a log is first looked at; a fresher one
    stays."""
    import sqlite3

    from kcost.ledger import default_path, live
    from kcost.live.statusline import STALE_DAYS

    ledger = default_path()
    assert ledger is not None
    old = time.time() - (STALE_DAYS + 1) * 86_400
    for log, kind in (("a" * 24, "line"), ("a" * 24, "tail"), ("b" * 24, "line"), ("b" * 24, "tail")):
        live.put(ledger, log, {kind: b"x"})
    with sqlite3.connect(ledger) as db:
        db.execute("UPDATE live SET touched = ? WHERE log = ? OR (log = ? AND kind = ?)", (old, "a" * 24, "b" * 24,
                                                                                            "line"))  # fmt: skip
    folder = cache_home / "kcost" / "live"
    folder.mkdir(parents=True)
    for name, when in (("a" * 24 + ".lines", old), ("b" * 24 + ".lines", time.time())):
        (folder / name).write_text("x")
        os.utime(folder / name, (when, when))
    code, out = statusline("", str(LOGS[0]))
    assert code == 0 and not out.startswith("kcost:")
    rows = live_rows()
    assert not [r for r in rows if r[0] == "a" * 24]
    assert [r for r in rows if r[0] == "b" * 24] == [("b" * 24, "line"), ("b" * 24, "tail")]
    assert len(rows) == 4  # and the new log's own two
    assert sorted(p.name for p in folder.iterdir()) == ["b" * 24 + ".lines"]


def test_a_price_file_changed_between_looks_is_read_again(tmp_path: Path) -> None:
    """A look keeps the price table its running bill is priced at beside the state, with the files' stamp
    (`prices.stamp`): the next look takes it back where the file is as it was; where it changed, the running
    bill was priced at other rates and the log is billed anew, so the figures are a fresh bill's under the file
    as it is."""
    from kcost import api
    from kcost.live import statusline as live
    from kcost.live.clock import figures
    from kcost.pricing.prices import shipped_document

    document = shipped_document()
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(document))
    settings = resolve(prices=str(prices))
    lines = _conversation(6, None)
    log = tmp_path / "s.jsonl"

    def fresh() -> object:
        session = api.sessions([str(log)], settings)[0]
        return figures(session, api.bill(session, settings=settings), settings)

    log.write_bytes(b"".join(lines[:6]))
    assert status(str(log), settings) == fresh()
    assert live._load(str(log), settings)[2] is not None  # kept, and its file as it was
    for model in (m for p in document["providers"] for m in p["models"] if m["id"] == "kimi-k3"):
        for period in model["prices"]:
            period["output"] = "150"  # ten times the output rate
    prices.write_text(json.dumps(document))
    os.utime(prices, ns=(1, 1))  # however fast the write: another stamp
    assert live._load(str(log), settings)[1:] == (None, None)
    log.write_bytes(b"".join(lines[:8]))
    assert status(str(log), settings) == fresh()


@pytest.mark.parametrize("source", [LOGS[0], LOGS[5]], ids=lambda p: p.name)
def test_a_broken_line_appended_is_named_by_its_line_in_the_log(source: Path, tmp_path: Path) -> None:
    """Read on from where the last look left the log, a line appended that is not JSON is named by its number in
    the file, as a whole read names it."""
    from kcost.errors import InputError

    data = source.read_bytes().rstrip(b"\n") + b"\n"
    log = tmp_path / source.name
    log.write_bytes(data)
    status(str(log), resolve())  # the state a look keeps
    with log.open("ab") as f:
        f.write(b'{"type": "assistant", \n')
    with pytest.raises(InputError) as read_on:
        status(str(log), resolve())
    whole = CliRunner().invoke(cli, ["bill", str(log)])
    line = len(data.splitlines()) + 1
    assert read_on.value.line == line and whole.exit_code == 2 and f"{log.name}:{line}:" in whole.output


def test_a_status_line_after_watch_answers_from_what_watch_kept(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """watch keeps each look's figures in the ledger as the status line keeps its line: the next status line on the
    log as watch saw it answers from them, reading no log, and says what a fresh bill says."""
    from kcost.live import incremental
    from kcost.live import statusline as live

    log = tmp_path / "w.jsonl"
    log.write_bytes(LOGS[2].read_bytes())
    monkeypatch.setattr(live, "RACY_NS", 0)  # as if written long before it was looked at
    monkeypatch.setenv("KCOST_NOW", str(billed(log)["last"] + 30))
    result = CliRunner().invoke(cli, ["watch", str(log), "--once"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert [kind for _, kind in live_rows()] == ["line"]
    read: list[str] = []
    monkeypatch.setattr(incremental, "fingerprint", lambda path: read.append(path) or (_ for _ in ()).throw(
        AssertionError("the log was read")))  # fmt: skip
    code, out = statusline("", str(log))
    assert code == 0 and f" {money(billed(log)['total'], total=True)} · " in out, out
    assert read == []
