"""Times at the calendar's edges (issue 47): a logged time whose offset carries it before 0001-01-01 or after
9999-12-31 in UTC is refused at its file, line and field (exit 2), by every reader of ISO times and in the status
line; a time in range that the report's time zone carries past the edge is placed on the calendar's first or last
day, week and month (exit 0); `--since 0001-01-01` and `--until 9999-12-31` bound a bill by day and by week, in
any zone. Each case was an internal error before: exit 70, or the status line's `kcost: ValueError: ...`."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kcost.cli import cli
from tests.conftest import ROOT
from tests.test_time_of_day import OFF, PEAK, by_hand, deepseek_log

FIXTURES = ROOT / "tests" / "fixtures"
EARLY, LATE = "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00"  # past the edges once in UTC
FIRST, LAST = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"  # the calendar's first and last second
LAST_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z in milliseconds, as the numeric logs write times
ISO_TIME = re.compile(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"')
NUMBER_TIME = re.compile(r'("(?:time|timestamp|created)": ?)\d+(?:\.\d+)?')

# the readers of ISO times: (fixture, the field its times are read from); a Kimi Code wire writes epoch
# milliseconds, and reads an ISO time in their place
ISO_READERS = {
    "claude-code": ("claude-code/ccusage-chat-alpha.jsonl", "timestamp"),
    "codex": ("codex/ccusage-session-alpha.jsonl", "timestamp"),
    "gemini-cli": ("gemini-cli/session-2026-01-10T09-30-5f0c2f3e.jsonl", "timestamp"),
    "qwen-code": ("qwen-code/7d2e9a4c-1b3f-4e5d-8a6b-9c0d1e2f3a4b.jsonl", "timestamp"),
    "kimi-code": ("kimi-code/sample-main.wire.jsonl", "time"),
}
# the readers of numeric times (seconds, or milliseconds as large as these): (fixture, the path to bill)
NUMBER_READERS = {
    "kimi-code": ("kimi-code/sample-main.wire.jsonl", "sample-main.wire.jsonl"),
    "kimi-cli": ("kimi-cli/sessions/0b7c55b8e1d46a1f3c2e9d8a7b6c5d4e/with-thinking", "with-thinking"),
    "kimi-api": ("kimi-api/moonshot_chat_response_nonstream.json", "moonshot_chat_response_nonstream.json"),
    "opencode": ("opencode/storage", "storage"),
}
SINCE_UNTIL = [["--since", "0001-01-01", "--by", "day"], ["--until", "9999-12-31", "--by", "week"]]
BILLS = [[], ["--by", "day"], ["--by", "week"], *SINCE_UNTIL]
Zone = Callable[[str], None]  # sets the machine's time zone


def bill(*args: str) -> Result:
    return CliRunner().invoke(cli, ["bill", *args])


def one_error(result: Result) -> str:
    """The one line a refused input prints: exit 2, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("kcost: error: ")
    return line


def rows(result: Result) -> list[dict]:
    """The rows of a `--by` bill that exited 0."""
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout)["rows"]


def iso_log(reader: str, folder: Path, moment: str) -> Path:
    """The reader's fixture with every logged time written as `moment`."""
    name, _ = ISO_READERS[reader]
    source = FIXTURES / name
    text = source.read_text(encoding="utf-8")
    if reader == "kimi-code":
        text = re.sub(r'"time":\d+', f'"time":"{moment}"', text)
    else:
        text = ISO_TIME.sub(json.dumps(moment), text)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / source.name
    path.write_text(text, encoding="utf-8")
    return path


def number_log(reader: str, folder: Path, number: int) -> Path:
    """The reader's fixture (a file or a folder) with every logged time written as the number `number`."""
    name, billed = NUMBER_READERS[reader]
    source = FIXTURES / name
    target = folder / source.name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for file in [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file()):
        text = file.read_text(encoding="utf-8")
        file.write_text(NUMBER_TIME.sub(lambda m: f"{m.group(1)}{number}", text), encoding="utf-8")
    return folder / billed


def as_logged(path: Path) -> dict:
    """The by-session total of the log as its fixture has it: what an edge time must not change."""
    (total,) = rows(bill(str(path), "--by", "session", "--format", "json", "--timezone", "UTC"))
    return {k: total[k] for k in ("sessions", "turns", "input_tokens", "output_tokens")}


@pytest.fixture
def machine_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Zone]:
    """Set the machine's time zone (`TZ`) for a test; the one before it is back after."""

    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


# -- refused: the offset carries the time past the calendar


@pytest.mark.parametrize("args", BILLS, ids=lambda a: " ".join(a) or "plain")
@pytest.mark.parametrize("moment", [EARLY, LATE])
@pytest.mark.parametrize("reader", ISO_READERS)
def test_a_time_its_offset_carries_past_the_calendar_is_refused_at_its_line(
    tmp_path: Path, reader: str, moment: str, args: list[str]
) -> None:
    path = iso_log(reader, tmp_path, moment)
    line = one_error(bill(str(path), *args))
    field = ISO_READERS[reader][1]
    edge = "before 0001-01-01" if moment == EARLY else "after 9999-12-31"
    assert re.match(
        rf"kcost: error: \S*{re.escape(path.name)}:\d+: {field}: not a time: '{re.escape(moment)}' is "
        rf"{edge} in UTC \(times run from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z\)$",
        line,
    ), line


@pytest.mark.parametrize("reader", NUMBER_READERS)
def test_a_number_past_the_calendar_is_refused_at_its_record(tmp_path: Path, reader: str) -> None:
    path = number_log(reader, tmp_path, LAST_MS + 1000)
    line = one_error(bill(str(path), "--by", "week"))
    assert re.search(rf"\S+: (time|timestamp|created|time\.created): not a time: {LAST_MS + 1000}", line), line
    assert str(tmp_path.name) in line  # the file (an OpenCode message: its session and id) is named


# -- read: in UTC within the calendar, placed on its first or last day wherever the zone's clock takes it


@pytest.mark.parametrize(
    ("moment", "zone", "day", "week", "month"),
    [
        (FIRST, "UTC", "0001-01-01", "0001-W01", "0001-01"),
        (FIRST, "Asia/Tokyo", "0001-01-01", "0001-W01", "0001-01"),
        (FIRST, "America/New_York", "0001-01-01", "0001-W01", "0001-01"),  # 0000-12-31 there: the first day
        (LAST, "UTC", "9999-12-31", "9999-W52", "9999-12"),
        (LAST, "Pacific/Kiritimati", "9999-12-31", "9999-W52", "9999-12"),  # 10000-01-01 there: the last day
        (LAST, "Etc/GMT+12", "9999-12-31", "9999-W52", "9999-12"),
    ],
)
@pytest.mark.parametrize("reader", ISO_READERS)
def test_a_time_at_the_edge_is_billed_on_the_calendars_first_or_last_day(
    tmp_path: Path, reader: str, moment: str, zone: str, day: str, week: str, month: str
) -> None:
    logged = as_logged(FIXTURES / ISO_READERS[reader][0])
    path = iso_log(reader, tmp_path, moment)
    for by, key in (("day", day), ("week", week), ("month", month)):
        (row,) = rows(bill(str(path), "--by", by, "--timezone", zone, "--format", "json"))
        assert row["group"] == key
        assert {k: row[k] for k in logged} == logged
        # the moment itself: in the zone where its clock can write it, else in UTC
        assert datetime.fromisoformat(row["started"]) == datetime.fromisoformat(moment.replace("Z", "+00:00"))
    assert bill(str(path)).exit_code == 0 and bill(str(path), "--format", "json").exit_code == 0


@pytest.mark.parametrize("reader", NUMBER_READERS)
def test_the_last_millisecond_count_is_billed_on_the_last_day_east_of_utc(tmp_path: Path, reader: str) -> None:
    logged = as_logged(FIXTURES / NUMBER_READERS[reader][0])
    path = number_log(reader, tmp_path, LAST_MS)
    for by, key in (("day", "9999-12-31"), ("week", "9999-W52"), ("month", "9999-12")):
        (row,) = rows(bill(str(path), "--by", by, "--timezone", "Pacific/Kiritimati", "--format", "json"))
        assert row["group"] == key and {k: row[k] for k in logged} == logged


# -- --since and --until at the edges


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "America/New_York", "Etc/GMT+12", "Asia/Tokyo"])
@pytest.mark.parametrize("args", SINCE_UNTIL, ids=lambda a: " ".join(a))
def test_since_and_until_at_the_edges_bound_a_bill_by_day_and_week(
    args: list[str], zone: str, machine_zone: Zone
) -> None:
    path = FIXTURES / ISO_READERS["claude-code"][0]
    logged = as_logged(path)
    for given in (["--timezone", zone], []):  # the zone named, and the machine's
        machine_zone(zone)
        result = bill(str(path), *args, *given, "--format", "json")
        found = rows(result)
        assert json.loads(result.stdout)["left_out"] == 0
        assert sum(r["sessions"] for r in found) == 1 and sum(r["turns"] for r in found) == logged["turns"]


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "Etc/GMT+12"])
@pytest.mark.parametrize(
    "bounds",
    [
        ["--since", "00010101", "--until", "99991231"],
        ["--since", "0001-01-01T00:00", "--until", "9999-12-31T23:59:59.9999"],  # its next millisecond: past 9999
        ["--since", "0001-01-01T00:00+14:00", "--until", "9999-12-31T23:59:59.9999-12:00"],
    ],
    ids=["dates", "times", "offsets"],
)
def test_the_widest_bounds_keep_every_session(bounds: list[str], zone: str, machine_zone: Zone) -> None:
    machine_zone(zone)
    result = bill(str(FIXTURES / ISO_READERS["claude-code"][0]), *bounds, "--by", "week", "--format", "json")
    assert rows(result) and json.loads(result.stdout)["left_out"] == 0


@pytest.mark.parametrize(
    ("moment", "zone", "kept"),
    [
        (FIRST, "Asia/Tokyo", True),  # 09:18 on 0001-01-01 there
        (FIRST, "America/New_York", False),  # the evening of 0000-12-31 there: before --since 0001-01-01
        (LAST, "UTC", True),
        (LAST, "Pacific/Kiritimati", False),  # 10000-01-01 there: after --until 9999-12-31
    ],
)
def test_an_edge_time_falls_inside_or_outside_the_edge_bounds_as_its_zone_says(
    tmp_path: Path, moment: str, zone: str, kept: bool
) -> None:
    path = iso_log("claude-code", tmp_path, moment)
    bound = ["--since", "0001-01-01"] if moment == FIRST else ["--until", "9999-12-31"]
    for by in ("day", "week"):
        result = bill(str(path), *bound, "--by", by, "--timezone", zone, "--format", "json")
        assert bool(rows(result)) is kept and json.loads(result.stdout)["left_out"] == (0 if kept else 1)


# -- prices by the time of day: the window's clock past 9999-12-31


def test_a_call_on_the_last_day_is_priced_by_its_clock_past_the_edge(tmp_path: Path) -> None:
    """DeepSeek's peak hours are on Beijing's clock (UTC+8): 02:00Z on 9999-12-31 is 10:00 on a Friday there, peak;
    23:59:59Z is 07:59 on Saturday 10000-01-01, off-peak."""
    calls = [(LAST_MS - 79_199_000, 10_000, 6_000, 500, PEAK), (LAST_MS, 12_000, 9_000, 700, OFF)]
    path = deepseek_log(tmp_path, [call[:4] for call in calls])
    result = bill(path, "--usage", "reported", "--model", "logged", "--format", "json")
    assert result.exit_code == 0, result.output
    session = json.loads(result.stdout)["runs"][0]["sessions"][0]
    assert [t["time"] for t in session["turns"]] == ["9999-12-31T02:00:00.000Z", "9999-12-31T23:59:59.000Z"]
    assert [Decimal(t["total"]) for t in session["turns"]] == [by_hand(p, c, o, r) for _, p, c, o, r in calls]
    assert "1 call(s) priced at peak rates by their logged time" in session["notes"]


# -- the status line


def statusline(path: Path, cache: Path, via: str) -> tuple[int, str]:
    """The status line of the log at `path`, named on the command line or by the hook's JSON on stdin."""
    env = {"XDG_CACHE_HOME": str(cache), "KCOST_NOW": None}
    if via == "path":
        result = CliRunner().invoke(cli, ["statusline", "--color", "never", str(path)], env=env)
    else:
        result = CliRunner().invoke(cli, ["statusline"], input=json.dumps({"transcript_path": str(path)}), env=env)
    return result.exit_code, result.output


@pytest.mark.parametrize("via", ["path", "hook"])
@pytest.mark.parametrize("moment", [EARLY, LATE, FIRST, LAST])
@pytest.mark.parametrize("reader", ["claude-code", "kimi-code"])
def test_the_status_line_reads_or_refuses_an_edge_time_in_one_line(
    tmp_path: Path, reader: str, moment: str, via: str
) -> None:
    path = iso_log(reader, tmp_path / "logs", moment)
    code, out = statusline(path, tmp_path / "cache", via)
    assert code == 0 and "Traceback" not in out
    (line,) = out.splitlines()
    if moment in (EARLY, LATE):
        edge = "before 0001-01-01" if moment == EARLY else "after 9999-12-31"
        assert line == f"kcost: not a time: '{moment}' is {edge} in UTC", line
    else:
        assert line.startswith("kimi-k3 ") and " · hit " in line and "Error" not in line, line
