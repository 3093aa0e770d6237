"""Reports kept whole (`kcost.ledger.reports`): a command asked again over unchanged inputs prints what it printed
before, without reading a log; any change to what the report depends on makes the report again, equal to a run
without the ledger."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.ledger import reports
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
PAST = time.time() - 3600


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def settled(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (PAST, PAST))


def kept(ledger: Path) -> list[tuple[int, int]]:
    """The reports a ledger keeps: (generation, exit code) each."""
    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT generation, code FROM reports").fetchall()


def newest(ledger: str) -> float:
    """When the newest report a ledger keeps was made."""
    with sqlite3.connect(ledger) as db:
        return float(db.execute("SELECT MAX(made) FROM reports").fetchone()[0])


def no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any read of a log from here on fails the test."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a log was read")

    monkeypatch.setattr("kcost.readers.discover.read_all", refused)
    monkeypatch.setattr("kcost.readers.read_all", refused)


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    for name in ("claude-code", "codex", "kimi-code"):
        shutil.copytree(FIXTURES / name, folder / name)
    settled(folder)
    return folder


def test_a_command_asked_again_prints_its_kept_report_and_reads_nothing(
    logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = str(tmp_path / "ledger.sqlite3")
    commands = (["bill"], ["bill", "--format", "json"], ["explain"], ["compare", "--format", "json"],
                ["check", "--max-session-usd", "0.0001"])  # fmt: skip
    for _ in range(2):  # a command that reads the logs another way (`compare`) changes the ledger: a second round
        for command in commands:
            without = run(*command, str(logs), "--no-ledger")
            assert run(*command, str(logs), "--ledger", ledger) == without
            assert without[0] in (0, 1)
    assert len(kept(Path(ledger))) == 5
    assert {code for _, code in kept(Path(ledger))} == {0, 1}  # check's verdict is kept with its report
    no_reads(monkeypatch)
    for command in (["bill"], ["check", "--max-session-usd", "0.0001"]):
        again = run(*command, str(logs), "--ledger", ledger)
        assert again == run(*command, str(logs), "--ledger", ledger)
        assert again[0] == (1 if command[0] == "check" else 0) and again[1]


def _fresh(args: list[str]) -> tuple[int, str, str]:
    """The run without the ledger, its stderr's ledger lines aside."""
    return run(*args, "--no-ledger")


@pytest.mark.parametrize("change", ["appended", "new log", "touched", "price file", "config appears",
                                    "environment", "another option", "ledger written"])  # fmt: skip
def test_a_change_to_what_a_report_depends_on_makes_it_again(
    change: str, logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = str(tmp_path / "ledger.sqlite3")
    prices = tmp_path / "prices.json"
    prices.write_text(run("prices", "--format", "json")[1], encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = ["bill", str(logs), "--format", "json", "--prices", str(prices)]
    before = run(*args, "--ledger", ledger)
    assert before == _fresh(args) and len(kept(Path(ledger))) == 1
    made = newest(ledger)
    claude = sorted((logs / "claude-code").glob("*.jsonl"))
    if change == "appended":
        claude[0].write_bytes(claude[0].read_bytes() + claude[-1].read_bytes())
    elif change == "new log":
        shutil.copy(sorted((logs / "codex").rglob("*.jsonl"))[0], logs / "codex" / "another.jsonl")
    elif change == "touched":
        os.utime(claude[0], (PAST + 60, PAST + 60))
    elif change == "price file":
        table = json.loads(prices.read_text(encoding="utf-8"))
        for provider in table["providers"]:
            for model in provider["models"]:
                for price in model["prices"]:
                    price["output"] = str(2 * float(price["output"] or 0))
        prices.write_text(json.dumps(table), encoding="utf-8")
    elif change == "config appears":
        (work / "kcost.toml").write_text('cache = "k3:ttl=60"\n', encoding="utf-8")
    elif change == "environment":
        monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # any variable: days and names may change with one
    elif change == "another option":
        args += ["--cache", "ideal"]
    elif change == "ledger written":  # another process forgets a session: the ledger's generation moves on
        assert run("ledger", "--ledger", ledger, "forget", "--agent", "codex")[0] == 0
    after = run(*args, "--ledger", ledger)
    assert after == _fresh(args)
    assert newest(ledger) > made  # made again and kept, not the kept one printed
    if change in ("appended", "new log", "price file", "config appears", "another option"):
        assert after[1] != before[1]  # the change shows: the report was made again, not the kept one printed


def test_a_log_gone_is_in_the_report_made_again(logs: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.sqlite3")
    args = ["bill", str(logs), "--format", "json", "--ledger", ledger]
    before = json.loads(run(*args)[1])
    shutil.rmtree(logs / "codex")
    code, out, _ = run(*args)
    after = json.loads(out)
    assert code == 0 and after["runs"][0]["total"] == before["runs"][0]["total"]
    assert any("its log is gone" in n for s in after["runs"][0]["sessions"] for n in s["notes"])


def test_runs_that_write_files_or_read_stdin_keep_no_report(logs: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.sqlite3")
    out = tmp_path / "bill.json"
    assert run("bill", str(logs), "--format", "json", "-o", str(out), "--ledger", ledger)[0] == 0
    assert out.exists() and kept(Path(ledger)) == []
    text = (ROOT / "sample_sessions" / "growing-chat.yaml").read_text(encoding="utf-8")
    assert CliRunner().invoke(cli, ["bill", "-", "--ledger", ledger], input=text).exit_code == 0
    assert kept(Path(ledger)) == []
    assert run("bill", str(logs), "--since", "not-a-date", "--ledger", ledger)[0] == 2
    assert kept(Path(ledger)) == []


def test_terms_name_the_day_the_folder_and_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["bill", "--format", "json"]
    today = reports.terms(argv, today=date(2026, 12, 4))
    assert reports.terms(argv, today=date(2026, 12, 4)) == today
    assert reports.terms(argv, today=date(2026, 12, 5)) != today  # a session of no time is priced at today
    assert reports.terms([*argv, "--by", "day"], today=date(2026, 12, 4)) != today
    monkeypatch.chdir(tmp_path)  # relative paths name other files
    assert reports.terms(argv, today=date(2026, 12, 4)) != today
    monkeypatch.setenv("COLUMNS", "61")
    assert "61" in reports.terms(argv, today=date(2026, 12, 4))


def test_a_report_is_not_kept_where_another_process_wrote_meanwhile(
    logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's write between a run's read and its end (here: a session forgotten as the bill is
    written) leaves no report: the kept one would be of a ledger that is no more."""
    ledger = str(tmp_path / "ledger.sqlite3")
    assert run("bill", str(logs / "codex"), "--ledger", ledger)[0] == 0  # the ledger made
    with sqlite3.connect(ledger) as db:
        db.execute("DELETE FROM reports")
    from kcost.cli import output

    emitted = output.emit_lines

    def meanwhile(*args: Any, **kwargs: Any) -> None:
        subprocess.run([sys.executable, "-m", "kcost", "ledger", "--ledger", ledger, "forget", "--agent", "codex"],
                       check=True, capture_output=True, cwd=ROOT)  # fmt: skip
        emitted(*args, **kwargs)

    monkeypatch.setattr(output, "emit_lines", meanwhile)
    monkeypatch.setattr("kcost.cli.bills.emit_lines", meanwhile)
    assert run("bill", str(logs), "--format", "json", "--ledger", ledger)[0] == 0
    assert kept(Path(ledger)) == []


def test_a_process_asked_again_answers_before_its_command_line_loads(logs: Path, tmp_path: Path) -> None:
    """`python -m kcost bill ...` asked again prints the kept report without loading click (`kcost.launch`)."""
    ledger = str(tmp_path / "ledger.sqlite3")
    args = [sys.executable, "-X", "importtime", "-m", "kcost", "bill", str(logs), "--format", "json",
            "--ledger", ledger]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    first = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env)
    second = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env)
    assert first.returncode == second.returncode == 0
    assert second.stdout == first.stdout == run("bill", str(logs), "--format", "json", "--no-ledger")[1]

    def loaded(err: str) -> set[str]:
        return {line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")}

    assert "click" in loaded(first.stderr)
    assert "click" not in loaded(second.stderr) and "kcost.ledger.reports" in loaded(second.stderr)
    said = [line for line in second.stderr.splitlines() if not line.startswith("import time:")]
    assert said == [line for line in first.stderr.splitlines() if not line.startswith("import time:")]
