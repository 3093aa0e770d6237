"""The overview: several sessions at a glance, one row each and a total, grouped by day, week, month, model, project
or agent; every grouping's totals equal the per-session totals, in every usage mode, and the JSON is flat and
validates against `kcost schema overview`."""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from kcost.cli import cli
from tests.conftest import ROOT, SAMPLES

FIXTURES = ROOT / "tests" / "fixtures"
LOGS = [  # logged sessions of several agents, days and models
    FIXTURES / "claude-code" / "ccusage-chat-alpha.jsonl",
    FIXTURES / "claude-code" / "spotter-short.jsonl",
    FIXTURES / "codex" / "ccusage-session-alpha.jsonl",
    FIXTURES / "kimi-code" / "sample-main.wire.jsonl",
]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def as_json(*args: str) -> dict[str, Any]:
    code, out = run(*args, "--format", "json")
    assert code == 0, out
    found: dict[str, Any] = json.loads(out)
    return found


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The logs, each in a project folder of its own, with the Kimi CLI sessions beside them."""
    root = tmp_path_factory.mktemp("logs")
    for n, log in enumerate(LOGS):
        folder = root / f"project-{n % 2}"
        folder.mkdir(exist_ok=True)
        shutil.copy(log, folder / log.name)
    shutil.copytree(FIXTURES / "kimi-cli" / "sessions", root / "kimi")
    return root


def test_a_folder_of_sessions_prints_a_row_each_and_a_total() -> None:
    code, out = run("bill", str(SAMPLES), "--width", "120", "--color", "never")
    assert code == 0, out
    names = [p for p in SAMPLES.iterdir() if p.suffix in (".yaml", ".jsonl")]
    lines = out.strip().splitlines()
    assert len(lines) == 2 + len(names) + 1  # the caption, the header, a row each, the total
    assert lines[-1].startswith("total")
    bill = as_json("bill", str(SAMPLES))
    costs = [Decimal(s["summary"]["total"]) for s in bill["runs"][0]["sessions"]]
    assert f"${max(costs):,.2f}" in lines[2]  # the dearest first
    assert f"${sum(costs):,.2f}" in lines[-1]


def test_one_session_keeps_its_per_turn_bill_and_per_turn_shows_every_bill() -> None:
    _, one = run("bill", str(SAMPLES / "coding-400k.yaml"), "--color", "never")
    assert "turn" in one.splitlines()[1] and "total" not in one.splitlines()[-1]
    _, each = run("bill", str(SAMPLES), "--per-turn", "--color", "never", "--width", "120")
    assert each.count(" · kimi-k3 · cache k3:") == len(
        [p for p in SAMPLES.iterdir() if p.suffix in (".yaml", ".jsonl")]
    )


def _group_totals(report: dict[str, Any]) -> dict[str, Decimal]:
    """Each cache model's sum of its group rows (the breakdown's per-model rows apart)."""
    sums: dict[str, Decimal] = {}
    for row in report["rows"]:
        if row["model"] is None:
            sums[row["cache"]] = sums.get(row["cache"], Decimal(0)) + Decimal(row["cost"])
    return sums


@pytest.mark.parametrize("usage", ["auto", "reported"])
@pytest.mark.parametrize("by", ["session", "day", "week", "month", "model", "project", "agent"])
def test_every_grouping_totals_the_per_session_totals(logs: Path, by: str, usage: str) -> None:
    base = ["bill", str(logs), "--usage", usage, "--timezone", "Asia/Tokyo", "--cache", "k3", "--cache", "ideal"]
    sessions = as_json(*base, "--by", "session")
    grouped = as_json(*base, "--by", by, "--breakdown")
    jsonschema.validate(grouped, schema("overview"))
    assert [t["cost"] for t in grouped["totals"]] == [t["cost"] for t in sessions["totals"]]
    assert _group_totals(grouped) == {t["cache"]: Decimal(t["cost"]) for t in grouped["totals"]}
    bill = as_json("bill", str(logs), "--usage", usage, "--cache", "k3", "--cache", "ideal")
    assert [Decimal(t["cost"]) for t in sessions["totals"]] == [Decimal(r["total"]["total"]) for r in bill["runs"]]
    if by == "model":  # a row per model of a model's row would repeat it: none
        assert all(row["model"] is None for row in grouped["rows"])
    for row in grouped["rows"]:  # a breakdown's rows add up to their group's
        if row["model"] is None and by != "model":
            parts = [r for r in grouped["rows"] if r["group"] == row["group"] and r["cache"] == row["cache"]
                     and r["model"] is not None]  # fmt: skip
            assert sum(Decimal(p["cost"]) for p in parts) == Decimal(row["cost"])
            assert sum(p["turns"] for p in parts) == row["turns"]


def test_since_and_until_keep_the_sessions_that_started_within(logs: Path) -> None:
    every = as_json("bill", str(logs), "--by", "session", "--timezone", "UTC")
    starts = sorted(r["started"][:10] for r in every["rows"] if r["started"])
    first, last = starts[0], starts[-1]
    assert first != last  # the fixtures span more than a day
    late = as_json("bill", str(logs), "--by", "day", "--since", last, "--timezone", "UTC")
    early = as_json("bill", str(logs), "--by", "day", "--until", first, "--timezone", "UTC")
    assert [r["group"] for r in late["rows"]] == [last]
    assert [r["group"] for r in early["rows"]] == [first]
    assert late["left_out"] + late["totals"][0]["sessions"] == every["totals"][0]["sessions"]
    between = as_json("bill", str(logs), "--by", "session", "--since", first, "--until", last, "--timezone", "UTC")
    assert between["totals"][0]["sessions"] == len([s for s in starts])  # every session with a time
    assert between["totals"][0]["cost"] != "0"


def test_the_time_zone_places_a_session_on_its_local_day(logs: Path) -> None:
    utc = as_json("bill", str(logs), "--by", "session", "--timezone", "UTC")
    tokyo = as_json("bill", str(logs), "--by", "session", "--timezone", "Asia/Tokyo")
    assert tokyo["timezone"] == "Asia/Tokyo"
    pairs = {r["group"]: r["started"] for r in utc["rows"] if r["started"]}
    for row in tokyo["rows"]:
        if row["started"]:
            assert row["started"].endswith("+09:00") and pairs[row["group"]].endswith("+00:00")


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--since", "yesterday", "--since"),
        ("--until", "2026-13-40", "--until"),
        ("--timezone", "Mars/Olympus", "--timezone"),
        ("--by", "year", "--by"),
        ("--sort", "size", "--sort"),
    ],  # fmt: skip
)
def test_a_bad_value_is_one_line_naming_it(flag: str, value: str, named: str) -> None:
    code, out = run("bill", str(SAMPLES), flag, value)
    assert code == 2
    assert out.count("\n") == 1 and out.startswith(f"kcost: error: {named}:"), out
    assert "Traceback" not in out


def test_until_before_since_is_an_error() -> None:
    code, out = run("bill", str(SAMPLES), "--since", "2026-11-30", "--until", "2026-11-01")
    assert code == 2 and out.startswith("kcost: error: --until:")


def test_rows_as_json_lines_and_csv(logs: Path) -> None:
    _, lines = run("bill", str(logs), "--by", "agent", "--format", "jsonl")
    records = [json.loads(line) for line in lines.splitlines()]
    assert {r["record"] for r in records} == {"row", "total"}
    _, table = run("bill", str(logs), "--by", "agent", "--format", "csv")
    head, *rows = table.splitlines()
    assert head.startswith("cache,group,model") and len(rows) == sum(r["record"] == "row" for r in records)


def schema(kind: str) -> dict[str, Any]:
    code, out = run("schema", kind)
    assert code == 0
    found: dict[str, Any] = json.loads(out)
    return found


LONG = "2026-11-30-refactor-the-billing-pipeline-and-the-overview-renderer"  # 64 characters: a file's stem


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 sessions: the samples, copies of them under names of their own (their `name:` taken out, so a copy is
    named by its file), one of them with a 64-character name, and logs of three agents."""
    root = tmp_path_factory.mktemp("many")
    specs = sorted(SAMPLES.glob("*.yaml"))
    for n in range(18):
        text = specs[n % len(specs)].read_text(encoding="utf-8")
        kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("name:"))
        (root / (f"{LONG}.yaml" if n == 7 else f"session-{n:02d}.yaml")).write_text(kept, encoding="utf-8")
    for log in [*LOGS, *sorted(SAMPLES.glob("*.jsonl"))]:
        shutil.copy(log, root / log.name)
    return root


def lines_of(*args: str) -> list[str]:
    code, out = run(*args, "--color", "never")
    assert code == 0, out
    return out.splitlines()


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_overview_of_many_sessions_is_a_table_at_80_columns_and_wider(many: Path, width: int) -> None:
    """A 64-character name does not turn the table into `name: value` records: it is shortened in the middle
    (its start and end kept), every other row is one line, no line is wider than the terminal."""
    lines = lines_of("bill", str(many), "--width", str(width))
    sessions = as_json("bill", str(many), "--by", "session")["rows"]
    assert len(sessions) >= 18
    assert not [text for text in lines if re.match(r"^ *(session|turns|cost|hit rate): ", text)]
    header = next(n for n, text in enumerate(lines) if text.startswith("session "))
    assert lines[header].split()[-1] == "cost" and lines[-1].startswith("total ")
    starts = [text.split(" ")[0] for text in lines[header + 1 : -1] if not text.startswith(" ")]
    assert len(starts) == len(sessions)  # a line a row (a list of models may wrap under its own column)
    assert max(len(text) for text in lines) <= width
    row = next(text for text in lines if text.startswith(LONG[:8]))
    name = row.split(" ")[0]
    assert "\u2026" in name and LONG.startswith(name.split("\u2026")[0]) and LONG.endswith(name.split("\u2026")[1])
    assert LONG in [r["group"] for r in sessions]  # whole in JSON
    wide = lines_of("bill", str(many), "--width", "200")
    assert any(text.startswith(LONG + " ") for text in wide)  # and whole where the terminal has room


@pytest.mark.parametrize("width", ["40", "60", "80", "120"])
def test_no_line_ends_in_padding_and_no_field_is_empty(many: Path, width: str) -> None:
    """Table or records, no line ends in spaces, and the total prints no empty `agent:`, `model:`, `start:`."""
    for by in ("session", "project", "model"):
        lines = lines_of("bill", str(many), "--by", by, "--width", width)
        assert not [text for text in lines if text.endswith(" ")], (by, width)
        assert not [text for text in lines if re.fullmatch(r" *[a-z][a-z ]*:", text)], (by, width)
    assert lines_of("bill", str(many), "--width", "40")[-1].startswith("total ")  # a table still


def test_a_breakdown_by_model_of_rows_by_model_adds_no_row(many: Path) -> None:
    """Each row by model is one model: a breakdown by model under it would repeat it."""
    plain = lines_of("bill", str(many), "--by", "model", "--width", "120")
    broken = lines_of("bill", str(many), "--by", "model", "--breakdown", "--width", "120")
    assert broken == plain
    days = lines_of("bill", str(many), "--by", "day", "--breakdown", "--width", "120")
    assert len(days) > len(lines_of("bill", str(many), "--by", "day", "--width", "120"))  # by day, it adds rows
