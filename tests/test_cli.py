"""The commands as a user runs them: every output format, stdin, schemas, prices, quote, fast --help."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from kcost.cli import cli
from kcost.render import Format
from tests.conftest import ROOT, SAMPLES, heavy_imports

LESSON = str(SAMPLES / "coding-400k.yaml")
GOLDEN = Path(__file__).parent / "golden"


def run(*args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def bill_json(*args: str, input: str | None = None) -> dict:  # type: ignore[type-arg]
    return json.loads(run("bill", *args, "--format", "json", input=input))


def schema(what: str = "bill") -> dict:  # type: ignore[type-arg]
    document = json.loads(run("schema", what))
    jsonschema.Draft202012Validator.check_schema(document)
    return document


@pytest.mark.parametrize("fmt", list(Format))
def test_every_format_renders_the_lesson(fmt: Format) -> None:
    out = run("bill", LESSON, "--cache", "k3", "--cache", "ideal", "--format", fmt.value, "--width", "100")
    assert out.strip()
    if fmt is Format.JSON:
        jsonschema.validate(json.loads(out), schema())
    elif fmt is Format.JSONL:
        records = [json.loads(line) for line in out.splitlines()]
        assert [r["record"] for r in records].count("turn") == 100
        assert records[-1] == {**records[-1], "record": "total", "total": "6.6"}
    elif fmt is Format.CSV:
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 100 and rows[0]["total"] == "0.1323456" and rows[50]["total"] == "0.132"
    else:
        assert "$6.62" in out and "$6.60" in out


def test_json_bill_says_which_prices_and_cache_model_produced_it() -> None:
    doc = bill_json(LESSON, "--cache", "k3:hash=256,ttl=1800")
    assert doc["schema_version"] == 1
    assert doc["prices"]["name"] == "Kimi API list prices (Moonshot AI)" and doc["prices"]["effective"] == "2026-10-15"
    assert doc["prices"]["rates"]["kimi-k3"] == {
        "input_cache_hit": "0.3",
        "input_cache_miss": "3",
        "output": "15",
        "cache_write_5m": "3",
        "cache_write_1h": "6",
    }
    before = bill_json(LESSON, "--prices-at", "2026-08-01")  # the rates in force then: no cache-write rates yet
    assert before["prices"]["effective"] == "2026-07-16"
    assert before["prices"]["rates"]["kimi-k3"]["cache_write_1h"] is None
    assert before["runs"][0]["total"]["total"] == doc["runs"][0]["total"]["total"]  # the same rates
    cache = doc["runs"][0]["cache"]
    assert cache == {"name": "k3", "label": "k3:hash=256,ttl=1800,output=off", "hash_block": 256,
                     "checkpoints": "turn boundaries", "ttl_seconds": 1800.0, "output_cached": False,
                     "source": None}  # fmt: skip
    session = doc["runs"][0]["sessions"][0]
    assert session["warm_prefix_tokens"] == 400_000
    assert session["turns"][0]["hit_tokens"] == 399_872  # 400,000 is not a multiple of 256 either: 1562 x 256


def test_comparing_models_side_by_side() -> None:
    doc = bill_json(LESSON, "--cache", "k3", "--cache", "shared:6144", "--cache", "ideal", "--cache", "none")
    totals = {r["cache"]["name"]: Decimal(r["total"]["total"]) for r in doc["runs"]}
    assert totals == {"k3": Decimal("6.61728"), "shared": Decimal("6.6864"), "ideal": Decimal("6.6"),
                      "none": Decimal("60.6")}  # fmt: skip
    table = run("bill", LESSON, "--cache", "k3", "--cache", "none", "--summary", "--width", "120")
    assert "cache models compared" in table


def test_jsonl_turns_from_stdin() -> None:
    turns = '{"session": {"prefix": {"tokens": 1000}}}\n' + '{"new": 200, "output": 100}\n' * 20
    doc = bill_json("-", "--cache", "shared:6144", input=turns)
    session = doc["runs"][0]["sessions"][0]
    assert session["source"] == "-" and len(session["turns"]) == 20
    assert session["name"] == "stdin"


def test_yaml_and_json_of_the_same_spec_bill_the_same(tmp_path: Path) -> None:
    spec = yaml.safe_load((SAMPLES / "growing-chat.yaml").read_text())
    as_json = tmp_path / "growing-chat.json"
    as_json.write_text(json.dumps(spec))
    from_yaml = bill_json(str(SAMPLES / "growing-chat.yaml"))["runs"][0]["sessions"][0]["summary"]
    from_json = bill_json(str(as_json))["runs"][0]["sessions"][0]["summary"]
    assert from_yaml == from_json


def test_output_file_holds_the_report(tmp_path: Path) -> None:
    target = tmp_path / "bill.json"
    assert run("bill", LESSON, "--format", "json", "-o", str(target)) == ""
    assert json.loads(target.read_text())["runs"][0]["total"]["total"] == "6.61728"


def test_several_sessions_and_a_total() -> None:
    doc = bill_json(LESSON, str(SAMPLES / "coding-400k-cold.yaml"), "--cache", "ideal")
    run_ = doc["runs"][0]
    assert [s["name"] for s in run_["sessions"]] == ["lesson coding session (warm 400K prefix)",
                                                     "lesson coding session (cold start)"]  # fmt: skip
    assert Decimal(run_["total"]["total"]) == Decimal("6.60") + Decimal("7.68")


def test_prices_override(tmp_path: Path) -> None:
    table = json.loads(run("prices", "--format", "json"))
    kimi = table["providers"][0]
    latest = next(m for m in kimi["models"] if m["id"] == "kimi-k3")["prices"][-1]
    latest["input_cache_miss"] = "6.00"
    latest["cache_write_5m"] = "6.00"  # a write costs at least a miss (a file saying less is refused)
    kimi["name"] = "doubled miss"
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(table))
    doc = bill_json(LESSON, "--cache", "none", "--prices", str(path))
    assert doc["prices"]["name"] == "doubled miss"
    assert doc["runs"][0]["total"]["total"] == "121.2"
    assert "doubled miss" in run("prices", "--prices", str(path))


def test_prices_table() -> None:
    out = run("prices")
    assert "kimi-k3" in out and "$0.30" in out and "$3.00" in out and "$15.00" in out and "2026-10-15" in out
    history = run("prices", "--model", "kimi-k3")  # every period, with its date and source
    assert "2026-07-16" in history and "2026-10-15" in history and "chat-k3" in history
    every = run("prices", "--all")  # the older models too
    assert "kimi-k3.1-pro" in every and "claude-sonnet-4-5" in every and "gpt-5.1" in every
    assert "deepseek-chat" in every and "deepseek-chat" not in out and len(every) > 2 * len(out)


def test_quote_reproduces_the_lesson() -> None:
    doc = json.loads(run("quote", "--prefix", "400000", "--new", "4000", "--turns", "50", "--format", "json"))
    jsonschema.validate(doc, schema("quote"))
    miss, hit, k3 = doc["turn"]
    assert (miss["total"], hit["total"], k3["total"]) == ("1.212", "0.132", "0.1323456")
    assert (k3["hit_tokens"], k3["miss_tokens"]) == (399_872, 4_128)
    assert doc["ratio"] == "9.2"
    totals = [s["total"] for s in doc["session"]]
    assert totals[:2] == ["60.6", "6.6"] and doc["saved"] == "54"
    assert doc["blended_input_per_mtok"] == "0.57"
    text = run("quote", "--prefix", "400000", "--new", "4000")
    for figure in ("$60.60", "$6.60", "$54.00", "$0.57/M", "9.2×", "$1.21", "$0.1320", "$0.1323"):
        assert figure in text


def test_turn_spec_schema_accepts_the_samples() -> None:
    document = schema("turns")
    for path in SAMPLES.glob("*.yaml"):
        jsonschema.validate(yaml.safe_load(path.read_text()), document)


@pytest.mark.parametrize(
    ("name", "sample", "fmt", "width"),
    [
        ("lesson-table.txt", "coding-400k.yaml", "table", "100"),
        ("edit-table-wide.txt", "edit-early-message.yaml", "table", "140"),
        ("edit-markdown.md", "edit-early-message.yaml", "markdown", "100"),
    ],
)
def test_golden_reports(name: str, sample: str, fmt: str, width: str) -> None:
    out = run("bill", str(SAMPLES / sample), "--cache", "k3", "--cache", "ideal", "--format", fmt, "--width", width)
    golden = GOLDEN / name
    if os.environ.get("KCOST_UPDATE_GOLDEN"):
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8")


def test_help_and_version_import_nothing_heavy() -> None:
    probe = (
        "import sys\n"
        "from kcost.cli import cli\n"
        "for args in (['--help'], ['--version'], ['bill', '--help']):\n"
        "    try:\n"
        "        cli.main(args, prog_name='kcost')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pydantic', 'yaml')\n"
        "               or m in ('kcost.pricing.prices', 'kcost.readers.specs.models', 'kcost.cache'))\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out
    assert "bill" in out and "0.1.0" in out


def test_machine_readable_bills_of_logs_import_neither_pydantic_nor_rich(tmp_path: Path) -> None:
    """A log billed to JSON, JSONL or CSV runs without pydantic, rich or the YAML parser: they cost a cold start
    more than a small log's whole bill."""
    log = Path(__file__).parent / "fixtures" / "claude-code" / "spotter-short.jsonl"
    out = str(tmp_path / "out")
    runs = [["bill", str(log), "--format", fmt, "-o", out] for fmt in ("json", "jsonl", "csv")]
    assert heavy_imports(runs, tmp_path) == []
    assert (tmp_path / "out").read_text().startswith("cache,session")


def test_a_json_turn_spec_is_billed_without_the_yaml_parser(tmp_path: Path) -> None:
    """A JSON turn spec's lines are composed (by the YAML parser) only when an error needs one: a spec that names
    no model is billed without it, one that names an unpriced model is still told the line."""
    spec = tmp_path / "spec.json"
    spec.write_text('{"prefix": {"tokens": 400000, "warm": true},\n "turns": [{"keep": 400000, "new": 4000}]}\n')
    out = str(tmp_path / "out")
    runs = [["bill", str(spec), "--format", fmt, "-o", out] for fmt in ("json", "csv")]
    assert heavy_imports(runs, tmp_path) == []
    named = tmp_path / "named.json"
    named.write_text('{\n "turns": [{"keep": 0, "new": 4000}],\n "model": "no-such-model"\n}\n')
    result = CliRunner().invoke(cli, ["bill", str(named)])
    assert result.exit_code == 2
    assert f"{named}:3" in result.output and "no price for model 'no-such-model'" in result.output


def test_shipped_prices_read_as_a_prices_file_would_be() -> None:
    from kcost.pricing.prices import load_prices, parse_prices, shipped_document

    assert load_prices() == parse_prices(json.dumps(shipped_document()), "prices.json")


def test_ctrl_c_exits_130_with_one_line(tmp_path: Path) -> None:
    import signal
    import time

    # stdin that never ends: kcost waits on it until Ctrl-C
    child = subprocess.Popen([sys.executable, "-m", "kcost", "bill", "-", "--format", "json"], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    time.sleep(2)  # long after the imports
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130
    assert [line for line in err.splitlines() if line.strip()] == ["kcost: interrupted"]


def test_a_bug_is_one_line_and_exit_70(monkeypatch: pytest.MonkeyPatch) -> None:
    import kcost.billing.bills

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("something kcost did not expect")

    monkeypatch.setattr(kcost.billing.bills, "report", broken)
    monkeypatch.delenv("KCOST_DEBUG", raising=False)
    result = CliRunner().invoke(cli, ["bill", LESSON])
    assert result.exit_code == 70
    (line,) = result.stderr.splitlines()
    assert line.startswith("kcost: internal error: RuntimeError: something kcost did not expect (a bug in kcost")


def test_python_dash_m_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "kcost", "--version"], capture_output=True, text=True, check=True)
    engines = [f"trace replay: {a}" for a in ("compiled", "python")]
    assert out.stdout.strip() in [f"kcost, version 0.1.0 ({e})" for e in engines]


def test_json_is_byte_identical_across_processes() -> None:
    """Two interpreters with different hash seeds write the same bytes (nothing depends on set or dict order)."""
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        cmd = [sys.executable, "-m", "kcost", "bill", LESSON, str(SAMPLES / "stripped-reasoning.jsonl"),
               "--cache", "k3", "--cache", "shared:1024", "--format", "json"]  # fmt: skip
        outputs.add(subprocess.run(cmd, capture_output=True, check=True, env=env).stdout)
    assert len(outputs) == 1


@pytest.mark.parametrize("columns", ["abc", "0", "14", "100000", ""])
def test_any_columns_value_renders(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    out = run("bill", LESSON)
    assert "block-granularity" in out and "$6.62" in out


def test_bare_kcost_is_this_machines_overview_or_the_help(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bare `kcost` bills every agent log on the machine (as `kcost bill` with no path does); on a machine where no
    agent keeps logs, the help, with a line saying why."""
    from kcost.readers.registry import READERS

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    for entry in READERS:
        if entry.home is not None:
            monkeypatch.delenv(entry.home.env, raising=False)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "APPDATA", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli, [])
    assert result.exit_code == 0 and "Usage:" in result.stdout and "bill" in result.stdout
    assert result.stderr.startswith("kcost: no agent logs on this machine (looked in ~/"), result.stderr
    assert "kcost formats" in result.stderr
    log = home / ".claude" / "projects" / "-home-u-spotter" / "spotter-short.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes((ROOT / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl").read_bytes())
    bare, billed = CliRunner().invoke(cli, []), CliRunner().invoke(cli, ["bill"])
    assert bare.exit_code == 0 and "Usage:" not in bare.stdout and bare.stdout == billed.stdout != ""


def test_output_file_gets_a_normal_mode(tmp_path: Path) -> None:
    target = tmp_path / "bill.csv"
    old = os.umask(0o022)
    try:
        run("bill", LESSON, "--format", "csv", "-o", str(target))
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644
