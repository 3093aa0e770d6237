"""One output path: every command writes every format it lists, to stdout or `-o FILE`; and its tables keep every
number whole at any width, the figures the same as its JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from kcost.cli import COMMANDS, cli
from kcost.render.display import count, money, percent
from kcost.render.text import turn_groups
from kcost.results import BillReport, adapter
from tests.conftest import SAMPLES

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRACE = str(FIXTURES / "traces" / "synthetic-400.jsonl")
GROWING, LESSON, EDIT = (str(SAMPLES / n) for n in ("growing-chat.yaml", "coding-400k.yaml", "edit-early-message.yaml"))


def args_for(tmp_path: Path) -> dict[str, list[str]]:
    """Arguments that make each command produce a real report from the shipped samples."""
    before = tmp_path / "before.json"
    before.write_text(run("bill", LESSON, "--format", "json"))
    ledger = tmp_path / "ledger.sqlite3"
    run("bill", str(FIXTURES / "codex"), "--ledger", str(ledger), "--format", "json")
    return {
        "bill": ["bill", GROWING, EDIT, "--cache", "k3", "--cache", "ideal"],
        "explain": ["explain", EDIT],
        "quote": ["quote", "--prefix", "400000", "--new", "4000"],
        "prices": ["prices"],
        "formats": ["formats"],
        "compare": ["compare", str(SAMPLES / "edit-early-message.yaml")],
        "check": ["check", GROWING, EDIT, "--max-session-usd", "0.30", "--min-hit-rate", "50%"],
        "diff": ["diff", str(before), GROWING],
        "trace": ["trace", TRACE, "--capacity", "1M,inf", "--clusters", "4", "--fail", "1@10-30"],
        "selfhost": ["selfhost", TRACE],
        "schema": ["schema", "bill"],
        "ledger": ["ledger", "--ledger", str(ledger)],
        "forecast": ["forecast", str(FIXTURES / "claude-code")],
        "plan": ["plan", str(FIXTURES / "claude-code"), "--plan", "all"],
    }


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, f"{args}: {result.output}{result.stderr}"
    return result.stdout


def formats(name: str) -> list[str]:
    command = cli.get_command(None, name)
    assert command is not None
    option = next((p for p in command.params if p.name == "fmt"), None)
    return list(option.type.choices) if option is not None and isinstance(option.type, click.Choice) else ["json"]


def test_the_help_lists_every_command_as_its_own_help_begins(tmp_path: Path) -> None:
    listed = run("--help")
    for name, (_, _, what) in COMMANDS.items():
        command = cli.get_command(None, name)
        assert command is not None and command.name == name
        assert what in " ".join(listed.split())
        first = (command.help or "").split("\n")[0]
        assert set(what.lower().split()) & set(first.lower().split()), (what, first)


LIVE = {"statusline", "watch"}  # live views of a running session, tested in test_live.py: no report, no -o


def test_every_command_is_covered(tmp_path: Path) -> None:
    assert set(args_for(tmp_path)) == set(COMMANDS) - LIVE


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - LIVE))
def test_every_command_writes_every_format_it_lists_to_a_file(name: str, tmp_path: Path) -> None:
    args = args_for(tmp_path)[name]
    for fmt in formats(name):
        out = tmp_path / f"{name}.{fmt}"
        extra = ["--format", fmt] if name != "schema" else []
        result = CliRunner().invoke(cli, [*args, *extra, "-o", str(out)])
        assert result.exit_code == (1 if name == "check" else 0), f"{name} {fmt}: {result.output}{result.stderr}"
        assert result.stdout == "", f"{name} {fmt}: the report went to stdout as well"
        text = out.read_text()
        assert text.strip(), f"{name} {fmt}: empty"
        if fmt == "json":
            json.loads(text)
        elif fmt == "jsonl":
            assert all(json.loads(line) for line in text.splitlines())
        elif fmt == "junit":
            assert text.startswith("<?xml") or text.startswith("<testsuites")
        elif fmt == "csv":
            assert text.splitlines()[0].count(",") >= 5


# ---- numbers whole at every width ------------------------------------------------------------------------------

WIDTHS = ["60", "80", "100", "200"]


def whole(text: str, value: str) -> bool:
    """`value` stands in `text` as a whole number: not a piece of a longer one, not cut short."""
    return re.search(rf"(?<![\d.,$]){re.escape(value)}(?![\d,]|\.\d)", text) is not None


def bill_numbers(data: dict[str, Any]) -> set[str]:
    report: BillReport = adapter(BillReport).validate_python(data)
    out = set()
    for run_ in report.runs:
        for b in run_.sessions:
            for _, _, t, end in turn_groups(b.turns):
                out |= {count(t.input_tokens), count(t.hit_tokens), count(t.miss_tokens), money(t.total),
                        money(end.cumulative, total=True), percent(t.hit_rate)}  # fmt: skip
    return out


def json_of(*args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run(*args, "--format", "json"))
    return data


@pytest.mark.parametrize("width", WIDTHS)
def test_bill_tables_keep_every_number_whole(width: str) -> None:
    for sample in (GROWING, LESSON, EDIT):
        shown = run("bill", sample, "--cache", "k3", "--cache", "ideal", "--width", width)
        assert "…" not in shown
        for value in bill_numbers(json_of("bill", sample, "--cache", "k3", "--cache", "ideal")):
            assert whole(shown, value), f"{value} not whole at width {width} in the bill of {sample}"


@pytest.mark.parametrize("width", WIDTHS)
def test_quote_explain_check_diff_trace_tables_keep_every_number_whole(width: str, tmp_path: Path) -> None:
    q = json_of("quote", "--prefix", "400000", "--new", "4000")
    shown = run("quote", "--prefix", "400000", "--new", "4000", "--width", width)
    values = {count(t["hit_tokens"]) for t in q["turn"]} | {money(_d(t["total"])) for t in q["turn"]}
    values |= {money(_d(s["total"]), total=True) for s in q["session"]} | {money(_d(q["saved"]), total=True)}
    _all_whole(shown, values, "quote", width)

    e = json.loads(run("explain", EDIT, "--format", "json"))
    shown = run("explain", EDIT, "--detail", "--width", width)
    values = {money(_d(c["cost"])) for x in e for t in x["turns"] for c in t["causes"]}
    values |= {money(_d(f["saving"])) for x in e for f in x["fixes"]} | {money(_d(x["avoidable"])) for x in e}
    values |= {count(c["tokens"]) for x in e for t in x["turns"] for c in t["causes"]}
    _all_whole(shown, values, "explain", width)

    c = json.loads(run("check", GROWING, EDIT, "--max-session-usd", "0.30", "--format", "json", code=1))
    shown = run("check", GROWING, EDIT, "--max-session-usd", "0.30", "--width", width, code=1)
    _all_whole(shown, {money(_d(r["value"]), total=True) for r in c["results"]}, "check", width)

    before = tmp_path / "before.json"
    before.write_text(run("bill", LESSON, "--format", "json"))
    d = json.loads(run("diff", str(before), GROWING, "--format", "json"))
    shown = run("diff", str(before), GROWING, "--width", width)
    values = {
        money(_d(s[side]["total"]), total=True) for s in d["sessions"] for side in ("before", "after") if s.get(side)
    }
    _all_whole(shown, values, "diff", width)

    t = json.loads(run("trace", TRACE, "--capacity", "1M,inf", "--format", "json"))
    shown = run("trace", TRACE, "--capacity", "1M,inf", "--width", width)
    values = {count(p["hit_tokens"]) for p in t["curve"]} | {money(_d(p["cost"]), total=True) for p in t["curve"]}
    _all_whole(shown, values | {percent(p["hit_rate"]) for p in t["curve"]}, "trace", width)


def _d(text: str) -> Any:
    from decimal import Decimal

    return Decimal(text)


def _all_whole(shown: str, values: set[str], what: str, width: str) -> None:
    assert values, what
    assert "…" not in shown, f"{what} at width {width} cut something"
    for value in values:
        assert whole(shown, value), f"{value} not whole at width {width} in {what}:\n{shown}"


def test_piped_output_is_not_wrapped() -> None:
    result = CliRunner().invoke(cli, ["explain", EDIT], env={"COLUMNS": ""})
    longest = max(len(line) for line in result.stdout.splitlines())
    assert longest > 100  # the fix column, whole on its line
    assert "\n                                               " not in result.stdout  # no continuation lines


def test_colour_follows_no_color_force_color_and_the_flag() -> None:
    def coloured(*args: str, env: dict[str, str] | None = None) -> bool:
        result = CliRunner().invoke(cli, ["check", GROWING, "--max-session-usd", "0.01", *args], env=env)
        return "\x1b[" in result.stdout

    assert not coloured()  # not a terminal
    assert coloured("--color", "always") and not coloured("--color", "never", env={"FORCE_COLOR": "1"})
    assert coloured(env={"FORCE_COLOR": "1"})
    assert not coloured(env={"NO_COLOR": "1", "FORCE_COLOR": ""})
    assert ";31m" in CliRunner().invoke(cli, ["check", GROWING, "--max-session-usd", "0.01", "--color",
                                                  "always"]).stdout  # a failing check is red  # fmt: skip


@pytest.mark.parametrize("name", ["bill", "explain", "quote", "check", "diff", "trace"])
def test_json_numbers_give_the_same_money_as_numbers(name: str, tmp_path: Path) -> None:
    args = args_for(tmp_path)[name]
    code = 1 if name == "check" else 0
    plain = json.loads(run(*args, "--format", "json", code=code))
    numbers = json.loads(run(*args, "--format", "json", "--json-numbers", code=code))
    compared = 0

    def walk(a: Any, b: Any) -> None:
        nonlocal compared
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                walk(a[k], b[k])
        elif isinstance(a, list):
            assert len(a) == len(b)
            for x, y in zip(a, b, strict=True):
                walk(x, y)
        elif isinstance(a, str) and isinstance(b, (int, float)) and not isinstance(b, bool):
            assert _d(a) == _d(repr(b)), (a, b)  # the same decimal, written as a number
            compared += 1
        else:
            assert a == b

    walk(plain, numbers)
    assert compared > 0


def test_every_jsonl_record_meets_the_jsonl_schema() -> None:
    import jsonschema

    schema = json.loads(run("schema", "jsonl"))
    lines = run("bill", GROWING, LESSON, EDIT, "--cache", "k3", "--cache", "ideal", "--format", "jsonl").splitlines()
    kinds = set()
    for line in lines:
        record = json.loads(line)
        jsonschema.validate(record, schema)
        kinds.add(record["record"])
    assert kinds == {"turn", "session", "total"}
    broken = {**json.loads(lines[0]), "surprise": 1}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
