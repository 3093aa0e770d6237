"""Malformed agent stores that once ended in an internal error (exit 70): each is now one clear error line (exit 2,
`kcost: error: FILE[:LINE]: FIELD: what`) or a record skipped. Every input is a fixture of `tests/fixtures/<agent>/`
copied, then one field of it broken: a value nested past what a recursive encoder or `repr` survives, a column
gone, a NUL in a path, a value of the wrong type, a time past the calendar.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kcost.cli import cli
from kcost.readers import jsonl
from tests.conftest import expect_error

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CRUSH = FIXTURES / "crush" / "projects" / "testproject" / ".crush"
TOOL_ROW = "0c9e1d7a-1111-4a2b-8c3d-000000000002"  # an assistant row of session 1 with a `glob` tool call
S1, S3 = "6b1f3a2e-9c4d-4e8f-a1b2-3c4d5e6f7a80", "6b1f3a2e-9c4d-4e8f-a1b2-3c4d5e6f7a82"
OPENCLAW = FIXTURES / "openclaw" / "sqlite" / ".openclaw" / "agents" / "main" / "agent"
OTEL = FIXTURES / "github-copilot" / "home" / ".copilot" / "otel" / "copilot-otel-20260417-093000.jsonl"
ANTIGRAVITY = FIXTURES / "antigravity" / "home" / ".gemini" / "antigravity-cli" / "conversations"
ANTIGRAVITY_MAIN = "4f3c2b1a-9e8d-4c7b-a6f5-0e1d2c3b4a59.db"
PI = FIXTURES / "pi-agent" / "2026-01-02T00-00-00-000Z_0199a1b2-0000-7000-8000-000000000001.jsonl"
PI_MONO = next((FIXTURES / "pi-agent" / "pi-mono").rglob("*.jsonl"))
GROK = next((FIXTURES / "grok" / "home" / ".grok" / "sessions").glob("*/019f2a6e-*/updates.jsonl"))


def deep(depth: int) -> str:
    """A JSON value nested `depth` deep: orjson parses up to 1024 levels, writes 254, and `json` and `repr`
    recurse once a level."""
    return "[" * depth + "]" * depth


def bill(*args: str) -> Result:
    return CliRunner().invoke(cli, ["bill", *args, "--format", "json"])


def billed(*args: str) -> dict[str, Any]:
    result = bill(*args)
    assert result.exit_code == 0, result.output + result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def sessions(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for run in report["runs"] for s in run["sessions"]]


def copy_db(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def without_column(db: Path, table: str, column: str) -> None:
    """`table` rebuilt without `column` (SQLite drops no key column in place)."""
    with sqlite3.connect(db) as connection:
        kept = [r[1] for r in connection.execute(f"PRAGMA table_info({table})") if r[1] != column]
        names = ", ".join(f'"{c}"' for c in kept)
        script = f'ALTER TABLE "{table}" RENAME TO old; CREATE TABLE "{table}" ({names}); '
        connection.executescript(script + f'INSERT INTO "{table}" SELECT {names} FROM old; DROP TABLE old;')
    connection.close()


# 3: a tool call's input nested past orjson's writer (and past `json`'s and `repr`'s recursion)


@pytest.mark.parametrize("depth", [300, 1000])
def test_crush_tool_input_nested_deep_is_billed(tmp_path: Path, depth: int) -> None:
    shutil.copytree(CRUSH, tmp_path / ".crush")
    db = tmp_path / ".crush" / "crush.db"
    with sqlite3.connect(db) as connection:
        (parts,) = connection.execute("SELECT parts FROM messages WHERE id = ?", (TOOL_ROW,)).fetchone()
        broken = parts.replace('"input":"{\\"pattern\\":\\"go.mod\\"}"', '"input":' + deep(depth))
        assert broken != parts
        connection.execute("UPDATE messages SET parts = ? WHERE id = ?", (broken, TOOL_ROW))
    connection.close()
    assert sorted(s["name"] for s in sessions(billed(str(tmp_path / ".crush")))) == [S1, S3]


# 4: columns a reader took for granted


def test_crush_messages_without_a_model_column_read_as_no_model(tmp_path: Path) -> None:
    shutil.copytree(CRUSH, tmp_path / ".crush")
    without_column(tmp_path / ".crush" / "crush.db", "messages", "model")
    assert sorted(s["name"] for s in sessions(billed(str(tmp_path / ".crush")))) == [S1, S3]


def test_crush_messages_without_an_id_column_name_it(tmp_path: Path) -> None:
    shutil.copytree(CRUSH, tmp_path / ".crush")
    db = tmp_path / ".crush" / "crush.db"
    without_column(db, "messages", "id")
    expect_error(bill(str(tmp_path / ".crush")), str(db), "no such column", field="messages.id")


def test_kilo_session_table_without_an_id_column_is_no_session_info(tmp_path: Path) -> None:
    db = copy_db(FIXTURES / "kilo" / "real-run" / "kilo.db", tmp_path / "kilo.db")
    without_column(db, "session", "id")
    assert len(sessions(billed(str(db)))) == 3
    assert [(r["group"], r["sessions"]) for r in billed(str(db), "--by", "project")["rows"]] == [("no project", 3)]


# 5: a NUL in a path `projects.json` lists


def test_crush_project_list_with_a_nul_in_a_data_dir_skips_that_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(CRUSH, project / ".crush")
    folder = tmp_path / "crush"
    folder.mkdir()
    listed = [{"path": "/home/dev/gone", "data_dir": "/home/dev/gone\x00/.crush"},
              {"path": str(project), "data_dir": str(project / ".crush")}]  # fmt: skip
    (folder / "projects.json").write_text(json.dumps({"projects": listed}))
    assert sorted(s["name"] for s in sessions(billed(str(folder)))) == [S1, S3]
    assert [(r["group"], r["sessions"]) for r in billed(str(folder), "--by", "project")["rows"]] == [(str(project), 2)]


# 6: JSON in a database column: nested past `json`'s recursion, or no text at all


def test_goose_model_config_nested_deep_is_no_model(tmp_path: Path) -> None:
    db = copy_db(FIXTURES / "goose" / "v17" / "sessions.db", tmp_path / "sessions.db")
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE sessions SET model_config_json = ?", ('{"model_name":' + deep(5000) + "}",))
    connection.close()
    assert sessions(billed(str(db)))


def _openclaw(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / ".openclaw" / "agents" / "main" / "agent"
    shutil.copytree(OPENCLAW, folder)
    return folder, folder / "openclaw-agent.sqlite"


def test_openclaw_event_nested_deep_names_its_row(tmp_path: Path) -> None:
    folder, db = _openclaw(tmp_path)
    with sqlite3.connect(db) as connection:
        (session,) = connection.execute("SELECT session_id FROM transcript_events WHERE seq = 3").fetchone()
        connection.execute("UPDATE transcript_events SET event_json = ? WHERE seq = 3", (deep(5000),))
    connection.close()
    expect_error(bill(str(folder)), f"{db}#{session}:3", "not valid JSON", field="event_json")


@pytest.mark.parametrize("seq", [0, 3])  # 0: the header, where the project is read from too
def test_openclaw_event_that_is_no_text_names_its_row(tmp_path: Path, seq: int) -> None:
    folder, db = _openclaw(tmp_path)
    with sqlite3.connect(db) as connection:  # a table of no column types (OpenClaw's is STRICT: TEXT only)
        columns = [r[1] for r in connection.execute("PRAGMA table_info(transcript_events)")]
        script = f"ALTER TABLE transcript_events RENAME TO old; CREATE TABLE transcript_events ({', '.join(columns)}); "
        connection.executescript(script + "INSERT INTO transcript_events SELECT * FROM old; DROP TABLE old;")
        (session,) = connection.execute("SELECT session_id FROM transcript_events WHERE seq = ?", (seq,)).fetchone()
        connection.execute("UPDATE transcript_events SET event_json = 42 WHERE seq = ?", (seq,))
    connection.close()
    expect_error(bill(str(folder)), f"{db}#{session}:{seq}", "expected JSON text, got int", field="event_json")


# 7: times past the calendar


def test_copilot_span_time_past_the_calendar_names_its_line(tmp_path: Path) -> None:
    log = tmp_path / "otel" / OTEL.name
    log.parent.mkdir()
    text = OTEL.read_text()
    assert '"endTime":[1776418210,450000000]' in text
    log.write_text(text.replace('"endTime":[1776418210,450000000]', '"endTime":[100000000000000,0]'))
    expect_error(bill(str(log)), f"{log}:2", "not a time", field="endTime")
    report = billed(str(log), "--lenient")
    assert any("bad record(s) skipped" in n for s in sessions(report) for n in s["notes"])


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes([*out, value])


def _timestamp_field(seconds: int, nanos: int) -> bytes:
    """A step's field 8, a protobuf `Timestamp`, as `tests/fixtures/antigravity/make_fixture.py` writes it."""
    stamp = _varint(1 << 3) + _varint(seconds) + _varint(2 << 3) + _varint(nanos)
    return _varint((8 << 3) | 2) + _varint(len(stamp)) + stamp


def test_antigravity_step_time_past_the_calendar_names_its_step(tmp_path: Path) -> None:
    db = copy_db(ANTIGRAVITY / ANTIGRAVITY_MAIN, tmp_path / ANTIGRAVITY_MAIN)
    with sqlite3.connect(db) as connection:
        (meta,) = connection.execute("SELECT metadata FROM steps WHERE idx = 1").fetchone()
        good = _timestamp_field(1781502653 + 9, 250_000_000)  # the fixture's T0 + 9
        assert meta.startswith(good)
        connection.execute("UPDATE steps SET metadata = ? WHERE idx = 1",
                           (_timestamp_field(10**15, 250_000_000) + meta[len(good):],))  # fmt: skip
    connection.close()
    expect_error(bill(str(db)), str(db), "not a time", field="steps 1: timestamp")


# 8: parsed values written back as JSON, nested past `json`'s recursion


def test_pi_tool_call_arguments_nested_deep_are_billed(tmp_path: Path) -> None:
    log = tmp_path / PI.name
    text = PI.read_text()
    block = '{"type":"text","text":"Reading utils.py"}'
    assert text.count(block) == 1
    log.write_text(text.replace(block, '{"type":"toolCall","id":"t1","name":"read","arguments":' + deep(1000) + "}"))
    assert sessions(billed(str(log)))


def test_pi_entry_without_an_id_nested_deep_is_billed(tmp_path: Path) -> None:
    log = tmp_path / PI_MONO.parent.name / PI_MONO.name
    log.parent.mkdir()
    lines = PI_MONO.read_text().splitlines(keepends=True)
    assert lines[1].startswith('{"type":"message",')
    lines[1] = '{"extra":' + deep(1000) + "," + lines[1][1:]  # a version-1 entry: its key is its whole text
    log.write_text("".join(lines))
    assert sessions(billed(str(log)))


def test_grok_turn_without_an_event_id_and_a_count_nested_deep_names_it(tmp_path: Path) -> None:
    log = tmp_path / GROK.parent.name / "updates.jsonl"
    shutil.copytree(GROK.parent, log.parent)
    lines = GROK.read_text().splitlines(keepends=True)
    line = lines[6]
    assert '"sessionUpdate":"turn_completed"' in line and ',"eventId":"ev-a1"' in line
    count = '"cacheCreationTokens":0,"reasoningTokens":1290,"totalTokens":50035,"costUsdTicks":421075000}}'
    assert line.count(count) == 1  # the turn's one model's
    lines[6] = line.replace(',"eventId":"ev-a1"', "").replace(count, count.replace(":0,", ":" + deep(1000) + ",", 1))
    log.write_text("".join(lines))
    expect_error(bill(str(log)), f"{log}:7", "expected a whole number",
                 field="params.update.usage.modelUsage.grok-4.5-build.cacheCreationTokens")  # fmt: skip
    report = billed(str(log), "--lenient")
    assert any("bad record(s) skipped" in n for s in sessions(report) for n in s["notes"])


@pytest.mark.parametrize("text", ['[1.5,{"b":["\\ud800",2e-05,18446744073709551616]}]', '{"a":"x","b":[{"c":null}]}'])
@pytest.mark.parametrize("depth", [1, 300, 1000])
def test_json_written_back_however_deep_is_what_json_writes(text: str, depth: int) -> None:
    """`compact_json` and `dumps` write a value nested past any recursion what `json.dumps` writes of it given
    the stack (a lone surrogate, floats and a number past 64 bits included, where orjson writes otherwise or not
    at all)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        value = json.loads('{"k":' * depth + text + "}" * depth)
        compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        spaced = json.dumps(value, ensure_ascii=False, sort_keys=True)
        ascii_ = json.dumps(value)
    finally:
        sys.setrecursionlimit(limit)
    assert jsonl.compact_json(value) == compact
    assert jsonl.dumps(value, sort_keys=True) == spaced and jsonl.dumps(value, ensure_ascii=True) == ascii_


def test_a_value_nested_as_deep_as_the_parser_allows_is_shown_not_a_crash(tmp_path: Path) -> None:
    """Any value of a log may nest as deep as the JSON parser allows (1,024 levels): a reader that shows it (`str`)
    or writes it back has the room to, in every reader (a Copilot shutdown event's id nested 1,000 deep was exit
    70)."""
    events = sorted((FIXTURES / "github-copilot" / "home").rglob("events.jsonl"))[0]
    shutil.copytree(events.parent, tmp_path / "s")
    log = tmp_path / "s" / "events.jsonl"
    lines = log.read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if '"session.shutdown"' in line)
    record = json.loads(lines[at])
    record["id"] = "DEEP"
    lines[at] = json.dumps(record).replace('"DEEP"', "[" * 1000 + "]" * 1000)
    log.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli, ["bill", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output + result.stderr
    assert json.loads(result.stdout)["runs"][0]["total"]["turns"] > 0
