"""The ledger (`kcost.ledger`): every report made through it equals the report made without it, a bill outlives
its logs, and a ledger that is no ledger is one line and exit 2."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from tests.conftest import ROOT, SHARED

FIXTURES = ROOT / "tests" / "fixtures"
FOLDERS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name != "traces")
if (SHARED / "samples").is_dir():
    FOLDERS.append(SHARED / "samples")
PAST = time.time() - 3600  # a copied log's times, set back past the window in which a write leaves no trace


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def bill(*args: str) -> Any:
    code, out, err = run("bill", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def settled(folder: Path) -> None:
    """Every file under `folder` written an hour ago (a file written this instant is read again each run)."""
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (PAST, PAST))


def forget_reports(ledger: Path | str) -> None:
    """The ledger's kept reports dropped (`kcost.ledger.reports`): the next run is made from the sessions it holds."""
    with sqlite3.connect(ledger) as db:
        db.execute("DELETE FROM reports")


def units(ledger: Path) -> list[tuple[str, str]]:
    if not ledger.exists():  # made once a run has something to keep
        return []
    with sqlite3.connect(ledger) as db:
        return sorted(db.execute("SELECT path, stamp FROM units"))


@pytest.mark.parametrize("usage", ["auto", "reported"])
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_report_through_the_ledger_equals_the_report_without_it(folder: Path, usage: str,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    ledger = tmp_path / "ledger.sqlite3"
    caches = ["--cache", "k3", "--cache", "k3:ttl=60,hash=256", "--cache", "ideal"]
    args = ("bill", str(folder), "--usage", usage, *caches, "--format", "json")
    without = run(*args, "--no-ledger")
    assert not ledger.exists()
    first = run(*args, "--ledger", str(ledger))
    kept = units(ledger)
    assert kept or without[0] != 0, "the ledger keeps the logs it read"
    second = run(*args, "--ledger", str(ledger))  # the report kept whole, printed again
    if kept:
        forget_reports(ledger)
    third = run(*args, "--ledger", str(ledger))  # made again from the sessions held
    assert units(ledger) == kept  # nothing read again: every unit held, as it was
    assert first == without
    assert second == without
    assert third == without
    for args in (["explain"], ["bill", "--by", "agent", "--breakdown"], ["compare"]):
        plain = run(*args, str(folder), "--usage", usage, "--format", "json", "--no-ledger")
        through = run(*args, str(folder), "--usage", usage, "--format", "json", "--ledger", str(ledger))
        assert through[:2] == plain[:2], args


def _copy(*names: str, to: Path) -> Path:
    for name in names:
        shutil.copytree(FIXTURES / name, to / name)
    settled(to)
    return to


def test_a_bill_outlives_its_logs(tmp_path: Path) -> None:
    logs = _copy("claude-code", "codex", "kimi-code", to=tmp_path / "logs")
    ledger = str(tmp_path / "ledger.sqlite3")
    before = bill(str(logs), "--ledger", ledger)
    shutil.rmtree(logs / "codex")
    for log in (logs / "claude-code").glob("*.jsonl"):
        log.unlink()
        break
    after = bill(str(logs), "--ledger", ledger)
    (run_before,), (run_after,) = before["runs"], after["runs"]
    assert run_after["total"] == run_before["total"]

    def figures(r: Any) -> list[tuple[str, str, Any]]:
        return sorted((s["source"], s["name"], s["summary"]) for s in r["sessions"])

    assert figures(run_after) == figures(run_before)
    gone = [s["source"] for s in run_after["sessions"] if any("its log is gone" in n for n in s["notes"])]
    assert any("codex" in g for g in gone) and any("claude-code" in g for g in gone)
    # without the ledger, the deleted logs are not billed
    assert bill(str(logs), "--no-ledger")["runs"][0]["total"] != run_before["total"]
    # and a run over another folder does not bring them in
    other = _copy("gemini-cli", to=tmp_path / "other")
    assert all("its log is gone" not in n for s in bill(str(other), "--ledger", ledger)["runs"][0]["sessions"]
               for n in s["notes"])  # fmt: skip


def test_a_changed_log_is_read_again(tmp_path: Path) -> None:
    logs = _copy("claude-code", "codex", to=tmp_path / "logs")
    ledger = str(tmp_path / "ledger.sqlite3")
    bill(str(logs), "--ledger", ledger)
    logs_of = sorted((logs / "claude-code").glob("*.jsonl"))
    # appended to: the first log's lines again, as a session that goes on writes its log
    grown = logs_of[0]
    grown.write_bytes(grown.read_bytes() + logs_of[-1].read_bytes())
    # edited in place, its size and times as they were
    edited = sorted((logs / "codex").rglob("*.jsonl"))[0]
    data = edited.read_bytes()
    edited.write_bytes(data.replace(b'"input_tokens":', b'"input_tokens": ', 1)[: len(data)])
    # a new log that shares its responses with the others
    shutil.copy(logs_of[-1], logs / "claude-code" / "copy-of-last.jsonl")
    settled(logs)
    assert bill(str(logs), "--ledger", ledger) == bill(str(logs), "--no-ledger")


def test_a_ledger_that_is_none_is_one_line_and_exit_2(tmp_path: Path) -> None:
    logs = _copy("codex", to=tmp_path / "logs")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database at all\n" * 100)
    code, out, err = run("bill", str(logs), "--ledger", str(garbage))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and str(garbage) in err and "kcost ledger rebuild" in err
    ledger = tmp_path / "ledger.sqlite3"
    bill(str(logs), "--ledger", str(ledger))
    shutil.copy(ledger, tmp_path / "whole.sqlite3")
    with open(ledger, "r+b") as file:
        file.truncate(os.path.getsize(ledger) // 2)
    code, out, err = run("bill", str(logs), "--ledger", str(ledger))
    assert code in (0, 2) and err.count("\n") <= 2
    if code == 0:  # what SQLite still reads of it is whole: the bill is the right one
        assert json.loads(run("bill", str(logs), "--ledger", str(ledger), "--format", "json")[1]) == bill(
            str(logs), "--no-ledger")
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    code, out, err = run("bill", str(logs), "--ledger", str(other))
    assert code == 2 and "another program's SQLite database" in err


def test_a_ledger_is_never_an_output(tmp_path: Path) -> None:
    logs = _copy("codex", to=tmp_path / "logs")
    ledger = tmp_path / "ledger.sqlite3"
    bill(str(logs), "--ledger", str(ledger))
    kept = ledger.read_bytes()
    code, _, err = run("bill", str(logs), "--ledger", str(ledger), "-o", str(ledger))
    assert code == 2 and err.count("\n") == 1
    assert ledger.read_bytes() == kept


def test_the_default_ledger_is_in_the_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = _copy("codex", to=tmp_path / "logs")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    bill(str(ROOT / "sample_sessions" / "coding-400k.yaml"))
    assert not (tmp_path / "data").exists()  # turn specs alone: nothing to keep, no ledger made
    bill(str(logs))
    assert (tmp_path / "data" / "kcost" / "ledger.sqlite3").is_file()
    monkeypatch.setenv("KCOST_LEDGER", "off")
    shutil.rmtree(tmp_path / "data")
    bill(str(logs))
    assert not (tmp_path / "data").exists()
    (tmp_path / "kcost.toml").write_text('ledger = "kept/ledger.db"\n')
    monkeypatch.chdir(tmp_path)
    bill(str(logs))
    assert (tmp_path / "kept" / "ledger.db").is_file()


def test_two_processes_at_once_both_finish_right(tmp_path: Path) -> None:
    """A bill and another bill over other logs, each run again and again on one ledger while the other writes."""
    a = _copy("claude-code", "codex", to=tmp_path / "a")
    b = _copy("kimi-code", "opencode", "gemini-cli", to=tmp_path / "b")
    ledger = str(tmp_path / "ledger.sqlite3")
    expected = {str(p): bill(str(p), "--no-ledger") for p in (a, b)}
    seconds = float(os.environ.get("KCOST_LEDGER_HAMMER_SECONDS", "6"))
    code = ("import json, subprocess, sys, time\n"
            "end = time.time() + float(sys.argv[3]); n = 0\n"
            "while time.time() < end or n < 2:\n"
            "    out = subprocess.run([sys.executable, '-m', 'kcost', 'bill', sys.argv[1], '--format', 'json',\n"
            "                          '--ledger', sys.argv[2]], capture_output=True, text=True)\n"
            "    assert out.returncode == 0, out.stderr\n"
            "    print(out.stdout.replace('\\n', ' ')); n += 1\n"
            "    if n % 3 == 0:  # the logs replaced meanwhile: read again, written again\n"
            "        import pathlib, os\n"
            "        for p in pathlib.Path(sys.argv[1]).rglob('*.json*'): os.utime(p)\n")  # fmt: skip
    procs = [subprocess.Popen([sys.executable, "-c", code, str(p), ledger, str(seconds)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT) for p in (a, b)]  # fmt: skip
    for proc, folder in zip(procs, (a, b), strict=True):
        out, err = proc.communicate(timeout=seconds * 20 + 120)
        assert proc.returncode == 0, err
        runs = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert len(runs) >= 2
        assert all(r == expected[str(folder)] for r in runs)


def test_machines_added_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One machine's ledger exported and imported (twice) into another's: the other's overview of its own agents'
    homes gains the first machine's sessions, each billed as there, one row per machine."""
    from tests.readers.test_every_agent import place

    laptop, workstation = str(tmp_path / "laptop.sqlite3"), str(tmp_path / "workstation.sqlite3")
    logs = _copy("codex", "kimi-code", to=tmp_path / "logs")
    there = bill(str(logs), "--ledger", laptop)["runs"][0]["total"]
    export = tmp_path / "laptop.jsonl"
    code, _, err = run("ledger", "--ledger", laptop, "export", "-o", str(export))
    assert code == 0, err
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    assert lines[0]["kind"] == "header" and {line["kind"] for line in lines[1:]} == {"session", "call"}
    schema = json.loads(run("schema", "ledger")[1])
    import jsonschema

    for line in lines:
        jsonschema.validate(line, schema)
    calls = [line for line in lines if line["kind"] == "call"]
    assert all(isinstance(c["line"], int) and c["file"].endswith(".jsonl") for c in calls), calls[0]
    for _ in range(2):  # imported twice: counted once
        code, _, err = run("ledger", "--ledger", workstation, "import", str(export))
        assert code == 0, err
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    place("gemini-cli", home)
    settled(home)
    here = bill("--ledger", workstation, "--input-format", "gemini-cli")["runs"][0]["total"]
    code, out, err = run("bill", "--ledger", workstation, "--by", "machine", "--format", "json")
    assert code == 0, err
    rows = {row["group"]: row for row in json.loads(out)["rows"]}
    (machine,) = (m for m in rows if m != "this machine")
    assert rows[machine]["cost"] == there["total"]
    assert rows["this machine"]["cost"] == here["total"]
    held = json.loads(run("ledger", "--ledger", workstation, "--format", "json")[1])
    assert held["sessions"] == sum(line["kind"] == "session" for line in lines) + 1
    code, _, err = run("ledger", "--ledger", workstation, "forget", "--machine", machine)
    assert code == 0 and "forgot" in err
    assert json.loads(run("ledger", "--ledger", workstation, "--format", "json")[1])["sessions"] == 1


def test_a_run_killed_mid_write_leaves_the_ledger_as_it_was(tmp_path: Path) -> None:
    """Runs killed at many moments (reading, billing, writing the ledger): the next run through the ledger
    bills what a run without it bills."""
    import signal

    from tests.conftest import generate_claude_logs

    generate_claude_logs(tmp_path / "claude", 3, seed=11)
    logs = tmp_path / "claude" / "projects"
    settled(logs)
    ledger = tmp_path / "ledger.sqlite3"
    expected = bill(str(logs), "--no-ledger")
    for delay in (0.05, 0.15, 0.3, 0.45, 0.6, 0.8, 1.0, 1.3):
        args = [sys.executable, "-m", "kcost", "bill", str(logs), "--format", "json", "--ledger", str(ledger)]
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if delay in (0.6, 1.3):  # and a log changed between kills
            first = sorted(logs.rglob("*.jsonl"))[0]
            first.write_bytes(first.read_bytes() + sorted(logs.rglob("*.jsonl"))[-1].read_bytes())
            settled(logs)
            expected = bill(str(logs), "--no-ledger")
        assert bill(str(logs), "--ledger", str(ledger)) == expected, delay


def test_bills_kept_are_taken_only_under_the_same_terms(tmp_path: Path) -> None:
    """A run over unchanged logs takes the bills the ledger kept; another price file, cache model or usage mode
    bills again; a kept bill that cannot be read, or would make anything but a bill, is billed again."""
    import pickle

    logs = _copy("codex", "claude-code", to=tmp_path / "logs")
    ledger = tmp_path / "ledger.sqlite3"
    prices = tmp_path / "prices.json"
    prices.write_text(run("prices", "--format", "json")[1])
    args = [str(logs), "--ledger", str(ledger), "--prices", str(prices)]
    first = bill(*args)
    with sqlite3.connect(ledger) as db:
        kept = db.execute("SELECT COUNT(*) FROM bills").fetchone()[0]
    assert kept == len(first["runs"][0]["sessions"])
    forget_reports(ledger)
    assert bill(*args) == first == bill(*args[:1], "--no-ledger", "--prices", str(prices))
    # the price file edited in place: its output rates doubled, the bills made again
    table = json.loads(prices.read_text())
    for provider in table["providers"]:
        for model in provider["models"]:
            for price in model["prices"]:
                price["output"] = str(2 * float(price["output"] or 0))
    prices.write_text(json.dumps(table))
    again = bill(*args)
    assert again != first and again == bill(*args[:1], "--no-ledger", "--prices", str(prices))
    for other in (["--cache", "ideal"], ["--usage", "reported"]):
        assert bill(*args, *other) == bill(*args[:1], "--no-ledger", "--prices", str(prices), *other)

    class Trap:
        def __reduce__(self) -> Any:
            return (os.system, ("touch " + str(tmp_path / "trapped"),))

    import zlib

    with sqlite3.connect(ledger) as db:
        rows = db.execute("SELECT session, terms FROM bills").fetchall()
        db.execute("UPDATE bills SET data = ? WHERE session = ?", (zlib.compress(pickle.dumps(Trap())), rows[0][0]))
        db.execute("UPDATE bills SET data = ? WHERE session = ?", (b"garbage", rows[-1][0]))
    forget_reports(ledger)
    assert bill(*args) == again
    assert not (tmp_path / "trapped").exists()


def test_forgetting_a_session_reads_its_log_again(tmp_path: Path) -> None:
    logs = _copy("codex", to=tmp_path / "logs")
    ledger = str(tmp_path / "ledger.sqlite3")
    before = bill(str(logs), "--ledger", ledger)
    held = json.loads(run("ledger", "--ledger", ledger, "--format", "json")[1])["sessions"]
    code, _, err = run("ledger", "--ledger", ledger, "forget", "--session", "ccusage_session")  # `_` is no wildcard
    assert code == 0 and "forgot 0 session(s)" in err
    code, _, err = run("ledger", "--ledger", ledger, "forget", "--session", "ccusage-session-alpha")
    assert code == 0 and "forgot 1 session(s)" in err
    assert json.loads(run("ledger", "--ledger", ledger, "--format", "json")[1])["sessions"] == held - 1
    assert bill(str(logs), "--ledger", ledger) == before  # its log still there: read again
    code, _, err = run("ledger", "--ledger", ledger, "forget")
    assert code == 2 and "say which sessions" in err
    code, _, err = run("ledger", "--ledger", ledger, "vacuum")
    assert code == 0 and "bytes before" in err
    code, _, err = run("ledger", "--ledger", ledger, "rebuild")
    assert code == 0 and not Path(ledger).exists() and list(tmp_path.glob("ledger.sqlite3.*.aside"))
    assert bill(str(logs), "--ledger", ledger) == before


def test_a_ledger_of_an_older_schema_is_migrated(tmp_path: Path) -> None:
    """A ledger written before bills and the status line's state were kept (schema 1): its sessions stand, the new
    tables are added, and bills through it are the bills without it, even once its logs are gone."""
    logs = _copy("codex", to=tmp_path / "logs")
    ledger = tmp_path / "ledger.sqlite3"
    before = bill(str(logs), "--ledger", str(ledger))
    with sqlite3.connect(ledger) as db:
        triggers = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
        for statement in (*(f"DROP TRIGGER {t}" for t in triggers), "DROP TABLE bills", "DROP TABLE live",
                          "DROP TABLE reports", "DELETE FROM meta WHERE key = 'generation'",
                          "PRAGMA user_version = 1"):  # fmt: skip
            db.execute(statement)
    shutil.rmtree(logs / "codex")
    (logs / "keep").mkdir()
    after = bill(str(logs), "--ledger", str(ledger))
    assert after["runs"][0]["total"] == before["runs"][0]["total"]
    with sqlite3.connect(ledger) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 4
        tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"bills", "live", "reports"} <= tables


def test_sessions_kept_by_an_older_layout_are_written_again_in_this_one(tmp_path: Path) -> None:
    """A ledger whose records lack a field this kcost has (an older kcost's): each session is read by the fields'
    names and written again in this layout, its figures as they were, even once its log is gone; one that cannot
    be read so is dropped with its units (its log, still present, is read again), never misread."""
    logs = _copy("codex", "gemini-cli", to=tmp_path / "logs")
    ledger = tmp_path / "ledger.sqlite3"
    before = bill(str(logs), "--ledger", str(ledger))
    with sqlite3.connect(ledger) as db:  # the records as a kcost without `line` wrote them
        layout = json.loads(db.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()[0])
        at = layout["record"].index("line")
        layout["record"].remove("line")
        db.execute("UPDATE meta SET value = ? WHERE key = 'layout'", (json.dumps(layout),))
        for row, data in db.execute("SELECT id, data FROM sessions").fetchall():
            session = json.loads(data)
            session["records"] = [r[:at] + r[at + 1 :] for r in session["records"]]
            db.execute("UPDATE sessions SET data = ? WHERE id = ?", (json.dumps(session), row))
        gemini = db.execute("SELECT id FROM sessions WHERE agent = 'gemini-cli'").fetchone()[0]
        db.execute("UPDATE sessions SET data = ? WHERE id = ?", ('{"source": "x"}', gemini))  # unreadable
    shutil.rmtree(logs / "codex")
    after = bill(str(logs), "--ledger", str(ledger))
    assert after["runs"][0]["total"] == before["runs"][0]["total"]
    assert sorted(s["summary"]["total"] for s in after["runs"][0]["sessions"]) == sorted(
        s["summary"]["total"] for s in before["runs"][0]["sessions"])
    with sqlite3.connect(ledger) as db:
        layout = json.loads(db.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()[0])
        assert "line" in layout["record"]


def test_held_sessions_are_the_sessions_read(tmp_path: Path) -> None:
    """A session the ledger holds is read back with its records made only as they are read: equal to the session
    read from its log (records, span, pickled and back), and made safe to print as a fresh one is."""
    import pickle

    from kcost import api
    from kcost.api.settings import resolve

    logs = _copy("codex", "gemini-cli", to=tmp_path / "logs")
    settled(logs)
    ledger = tmp_path / "ledger.sqlite3"
    fresh = api.sessions([str(logs)], resolve(ledger=False))
    api.sessions([str(logs)], resolve(ledger=str(ledger)))
    held = api.sessions([str(logs)], resolve(ledger=str(ledger)))
    assert [type(s.records).__name__ for s in held] == ["KeptRecords"] * len(fresh)
    assert [s.span for s in held] == [s.span for s in fresh]
    assert held == fresh
    assert [pickle.loads(pickle.dumps(s)) for s in held] == fresh
    assert [s.records[-1] for s in held] == [s.records[-1] for s in fresh]
    assert [s.records[1:3] for s in held] == [s.records[1:3] for s in fresh]


@pytest.mark.parametrize("broken", [[1, 2], {"model": "x"}], ids=["short", "an object"])
def test_a_held_record_that_cannot_be_made_is_one_line_and_exit_2(tmp_path: Path, broken: Any) -> None:
    """A record is made when a bill needs it, after the run began: one that cannot be made (a row of the wrong
    shape) is still one line naming the ledger, exit 2."""
    logs = _copy("codex", to=tmp_path / "logs")
    settled(logs)
    ledger = tmp_path / "ledger.sqlite3"
    bill(str(logs), "--ledger", str(ledger))
    with sqlite3.connect(ledger) as db:
        row, data = db.execute("SELECT id, data FROM sessions").fetchone()
        session = json.loads(data)
        session["records"][0] = broken
        db.execute("UPDATE sessions SET data = ? WHERE id = ?", (json.dumps(session), row))
    code, out, err = run("bill", str(logs), "--cache", "ideal", "--ledger", str(ledger))  # no bill kept: billed
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "damaged" in err and str(ledger) in err and "a session it holds cannot be read" in err


def test_a_held_sessions_texts_are_made_safe_as_a_fresh_ones(tmp_path: Path) -> None:
    """The models a held session names are read from its rows, records unmade, to make them safe to print: a model
    named with an escape sequence shows escaped from the ledger as from the log."""
    from tests.test_windows import claude_log

    logs = tmp_path / "logs"
    claude_log(logs / "s.jsonl", "s-esc", [("2026-12-01T10:00", 1_000, 0, 10)], model="kimi-k3\x1b[31m")
    settled(logs)
    ledger = tmp_path / "ledger.sqlite3"
    args = ("bill", str(logs), "--usage", "reported")
    plain = run(*args, "--no-ledger")
    assert plain[0] == 0 and "kimi-k3\\x1b[31m" in plain[1] and "\x1b" not in plain[1]
    assert run(*args, "--ledger", str(ledger)) == plain
    forget_reports(ledger)
    assert run(*args, "--ledger", str(ledger)) == plain  # made from the session held
