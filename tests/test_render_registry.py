"""The renderer registry: every (report kind, format) it lists renders a real report of the shipped samples to
text, and every JSON it writes validates against `kcost schema KIND`; listing the formats imports nothing. And the
one JSON writer: bounded at the depth the readers accept, a too-deep report an `InputError`, not a crash."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import InputError
from kcost.inputs.documents import MAX_DEPTH
from kcost.render.display import plural
from kcost.render.registry import RENDERERS, View, formats, render
from kcost.results import dump_json
from tests.conftest import ROOT

SAMPLES = sorted(str(p) for p in (ROOT / "sample_sessions").glob("*.yaml"))
TRACE = str(ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl")


@cache
def reports() -> dict[str, Any]:
    """A real report of every kind, from the shipped samples (and the synthetic trace)."""
    from kcost.analysis.checks import check, diff
    from kcost.analysis.compare import DEFAULT_MODELS, compare
    from kcost.analysis.explain import explain, rank_together
    from kcost.analysis.overview import overview
    from kcost.analysis.quotes import make_quote, parse_rate
    from kcost.api import formats as formats_listing
    from kcost.api import selfhost
    from kcost.api.settings import Settings
    from kcost.billing.bills import report
    from kcost.cache.model import parse_cache_model
    from kcost.fleet.run import run
    from kcost.fleet.spec import FleetSpec
    from kcost.model.budgets import merge
    from kcost.pricing.prices import load_prices
    from kcost.readers import read_all
    from kcost.results.check import CheckOutcome
    from kcost.results.prices import PriceListing

    prices = load_prices()
    k3 = parse_cache_model("k3")
    sessions = read_all(SAMPLES, "auto").sessions
    bill = report(sessions, [k3, parse_cache_model("ideal")], prices, "auto")
    one = report(sessions[:1], [k3], prices, "auto")
    now = report(sessions, [k3], prices, "auto")
    from kcost.billing.bills import bill as billed

    def rebill(session: Any, cache: Any) -> Any:
        return billed(session, cache=cache, prices=prices)

    explained = [explain(b, s, k3, rebill) for s, b in zip(sessions, now.runs[0].sessions, strict=True)]
    budgets = merge(None, {"max_session_usd": "1", "min_hit_rate": "80%", "max_increase_usd": "0.1"})
    changes = diff(one, now, before="one.json", after="this run")
    outcome = CheckOutcome(check(now, budgets, one, "one.json"), changes, rank_together(e.ranked for e in explained))
    return {
        "bill": bill,
        "explain": explained,
        "quote": make_quote(prefix=400_000, new=4_000, turns=50, output=0, hit_rate=parse_rate("0.9"), prices=prices,
                            model=None),
        "compare": compare(sessions[:2], list(DEFAULT_MODELS), prices, "auto", None),
        "check": outcome,
        "diff": changes,
        "trace": run(TRACE, [k3], [("1M", 1_000_000), ("inf", None)], FleetSpec(), prices),
        "prices": PriceListing(table=prices),
        "overview": overview(bill, sessions, by="day", breakdown=True),
        "selfhost": selfhost([TRACE], Settings()),
        "formats": formats_listing(),
        **_monthly(),
    }  # fmt: skip


def _monthly() -> dict[str, Any]:
    """A forecast and a plan of twelve days of a Claude Code session on Opus 4.5, made on 2026-12-10."""
    import tempfile
    from datetime import date, timedelta

    from kcost import api
    from kcost.api.settings import resolve
    from tests.test_windows import claude_log

    today = date(2026, 12, 10)
    calls = [((today - timedelta(days=d)).isoformat() + "T12:00", 20_000 * d, 100_000, 2_000) for d in range(12)]
    with tempfile.TemporaryDirectory() as folder:
        log = claude_log(Path(folder) / "s.jsonl", "s-month", calls, "claude-opus-4-5")
        settings = resolve(usage="reported", timezone="UTC")
        sessions = api.sessions([str(log)], settings)
    return {"forecast": api.forecast(sessions, settings, today=today),
            "plan": api.plan(sessions, settings, plan="all", today=today)}  # fmt: skip


@cache
def schema(kind: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["schema", kind])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.output)
    return found


CASES = [(kind, fmt) for kind, table in RENDERERS.items() for fmt in table]


@pytest.mark.parametrize(("kind", "fmt"), CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_every_registered_format_renders_a_real_report(kind: str, fmt: str) -> None:
    text = render(kind, reports()[kind], fmt, View(width=120))
    assert isinstance(text, str) and text.strip()
    if fmt == "json":
        jsonschema.validate(json.loads(text), schema(kind))
        numbers = json.loads(render(kind, reports()[kind], fmt, View(numbers=True)))
        if kind != "formats":  # a listing of formats holds no money
            assert numbers if kind == "prices" else numbers != json.loads(text)  # money as numbers: another document


def test_every_report_kind_has_json_and_a_schema() -> None:
    from kcost.results import SCHEMAS

    for kind in RENDERERS:
        assert "json" in formats(kind) and kind in SCHEMAS
        assert formats(kind)[0] == "table"  # the default of every --format


def test_an_unknown_format_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        render("quote", reports()["quote"], "html")


def test_listing_formats_imports_no_renderer() -> None:
    probe = (
        "import sys\n"
        "from kcost.render.registry import RENDERERS, formats\n"
        "[formats(k) for k in RENDERERS]\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pydantic', 'yaml', 'orjson')\n"
        "             or m.startswith('kcost.')\n"
        "             and m not in ('kcost.version', 'kcost.model', 'kcost.model.frozen', 'kcost.render',\n"
        "                           'kcost.render.registry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_only_changed_leaves_the_unchanged_sessions_out_of_a_diff() -> None:
    changes = reports()["diff"]
    shown = json.loads(render("diff", changes, "json", View(only_changed=True)))
    assert all(s["status"] != "unchanged" for s in shown["sessions"])
    assert len(shown["sessions"]) == sum(s.status != "unchanged" for s in changes.sessions)
    markdown = render("diff", changes, "markdown", View(only_changed=True))
    unchanged = sum(s.status == "unchanged" for s in changes.sessions)
    assert not unchanged or f"{plural(unchanged, 'unchanged session')} not shown." in markdown


# ---- the one JSON writer's depth ------------------------------------------------------------------------------


def nested(depth: int) -> Any:
    """`depth` levels of JSON: objects holding arrays, an empty array innermost."""
    value: Any = []
    for level in range(depth - 1):
        value = {"or": value} if level % 2 == 0 else [value]
    return value


def test_max_depth_is_the_readers_bound() -> None:
    orjson.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


def test_the_writer_writes_to_max_depth_and_refuses_deeper() -> None:
    from kcost.results.common import nesting

    assert nesting(orjson.loads(dump_json(nested(MAX_DEPTH)))) == MAX_DEPTH  # what a reader accepts back
    with pytest.raises(InputError) as refused:
        dump_json(nested(MAX_DEPTH + 1))
    assert "\n" not in str(refused.value) and f"at most {MAX_DEPTH}" in str(refused.value)


@pytest.mark.parametrize("kind", ["bill", "prices"])
def test_a_deep_report_is_written_as_a_shallow_one_is(kind: str) -> None:
    """Past orjson's depth the writer falls back to the standard library's: the same text for the same data."""
    from kcost.results.common import _deep

    report = reports()[kind]
    value = report.table if kind == "prices" else report
    assert _deep(value, False) == dump_json(value) and _deep(value, True) == dump_json(value, True)


@pytest.mark.parametrize("numbers", [False, True], ids=["exact", "numbers"])
def test_the_writer_lays_out_a_part_at_a_time_what_orjson_writes_whole(
    numbers: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every kind of report, its first levels laid out here and each value below them by orjson alone (a report
    type orjson writes alike given whole, `_native`): the same text, byte for byte, as orjson's dump of the whole
    report's data as `to_data` makes it field by field; and `to_data`'s own shortcut for those types (orjson's
    text read back) the same data."""
    from kcost.results import common, to_data

    made = reports()
    with monkeypatch.context() as plain:  # the oracle: every report type made field by field
        plain.setattr(common, "_NATIVE", {})
        plain.setattr(common, "_native", lambda cls: False)
        data = {kind: to_data(report, numbers) for kind, report in made.items()}
    for kind, report in made.items():
        whole = orjson.dumps(data[kind], option=orjson.OPT_INDENT_2).decode()
        assert dump_json(report, numbers) == whole, kind
        assert to_data(report, numbers) == data[kind], kind


def test_orjson_writes_whole_only_the_report_types_it_writes_alike() -> None:
    """A bill's turns go to orjson as they are (the writer's fast path, held to `to_data` by the test above); a type
    with a field left out while None, a plain decimal, or one of those below it, goes through `to_data`."""
    from kcost.results.bill import Check, MissLine, SessionBill, Summary, TurnBill
    from kcost.results.check import Result
    from kcost.results.common import _native

    assert all(_native(t) for t in (TurnBill, MissLine, Check, Summary))
    assert not _native(SessionBill)  # cache_fit is left out while None
    assert not _native(Result)  # its limit is a plain decimal


def deep_prices(tmp_path: Path, levels: int) -> str:
    """The shipped prices with one model's match clause nested `levels` deep (`{"or": [...]}` is two levels)."""
    from kcost.pricing.prices import shipped_document

    document = shipped_document()
    document["providers"][0]["models"][0]["match"] = "@@"
    inner = '{"or": [' * (levels // 2) + '{"equals": "deep"}' + "]}" * (levels // 2)
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document).replace('"@@"', inner), encoding="utf-8")
    return str(path)


def test_prices_nested_past_the_bound_are_one_line_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["prices", "--prices", deep_prices(tmp_path, 1500), "--format", "json"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and not result.stdout


def test_prices_nested_deeper_than_orjson_writes_are_written(tmp_path: Path) -> None:
    """800 levels: within what the readers accept, deeper than orjson writes (once exit 70)."""
    path = deep_prices(tmp_path, 800)
    result = CliRunner().invoke(cli, ["prices", "--prices", path, "--format", "json"])
    assert result.exit_code == 0, result.stderr

    def match(text: str) -> Any:
        return json.loads(text)["providers"][0]["models"][0]["match"]

    assert match(result.stdout) == match(Path(path).read_text())
    again = tmp_path / "again.json"
    again.write_text(result.stdout, encoding="utf-8")
    assert CliRunner().invoke(cli, ["prices", "--prices", str(again), "--format", "json"]).stdout == result.stdout


@pytest.mark.parametrize("numbers", [False, True], ids=["exact", "numbers"])
@pytest.mark.parametrize("turns", [0, 1, 255, 256, 257, 700])
def test_turns_written_already_are_laid_out_as_the_turns_themselves(numbers: bool, turns: int) -> None:
    """A bill whose turns come written (`Written`: each as `written` makes it, laid out in runs of items at once)
    is the same text as the bill holding its turns, at any count of turns."""
    from dataclasses import replace

    from kcost.billing.bills import bill
    from kcost.cache.model import CacheModel, Kind
    from kcost.pricing.prices import load_prices
    from kcost.readers.specs.turnspec import build, validate
    from kcost.results.common import Written, written

    spec = validate({"turns": [{"new": 1000, "output": 10, "repeat": max(turns, 1)}]}, "t")
    made = bill(build(spec, source="t", name="t"), cache=CacheModel(Kind.K3), prices=load_prices(None))
    if not turns:
        made = replace(made, turns=[])
    assert len(made.turns) == turns
    laid = replace(made, turns=Written(written(t, numbers) for t in made.turns))
    assert dump_json(laid, numbers) == dump_json(made, numbers)
