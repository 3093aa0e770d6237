"""`--model logged`: every call priced at the model its log names, every cache write at its logged lifetime.

Claude Code logs Anthropic's usage with the writes broken out by lifetime (`cache_creation.ephemeral_5m_input_tokens`
and `ephemeral_1h_input_tokens`, their sum `cache_creation_input_tokens`). Billed as reported at the logged model,
a session costs what Anthropic bills: hits, misses (`input_tokens`), 5-minute writes, 1-hour writes and output, each
at the model's own rate, which these tests work out by hand. The price line names the rates of each model used,
not K3's.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kcost.cli import cli
from kcost.pricing.prices import load_prices

ROOT = Path(__file__).resolve().parent.parent
SPOTTER = ROOT / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl"  # one response, 1-hour writes only
M = Decimal(1_000_000)
# Anthropic's list prices, USD per million tokens: hit, miss (input), 5-minute write, 1-hour write, output
OPUS_46 = (Decimal("0.5"), Decimal(5), Decimal("6.25"), Decimal(10), Decimal(25))
SONNET_45 = (Decimal("0.3"), Decimal(3), Decimal("3.75"), Decimal(6), Decimal(15))


def bill(*args: str, fmt: str = "json") -> Any:
    result = CliRunner().invoke(cli, ["bill", *args, "--format", fmt])
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout) if fmt == "json" else result.stdout


def by_hand(rates: tuple[Decimal, ...], hit: int, miss: int, five: int, hour: int, out: int) -> Decimal:
    """What Anthropic bills a call: each count at its rate."""
    return (hit * rates[0] + miss * rates[1] + five * rates[2] + hour * rates[3] + out * rates[4]) / M


def test_the_rates_are_the_price_tables() -> None:
    table = load_prices()
    for model, rates in (("claude-opus-4-6", OPUS_46), ("claude-sonnet-4-5", SONNET_45)):
        p = table.lookup(model, date(2026, 2, 10))
        assert (p.input_cache_hit, p.input_cache_miss, p.cache_write_5m, p.cache_write_1h, p.output) == rates


def test_one_hour_writes_at_the_one_hour_rate() -> None:
    session = bill(str(SPOTTER), "--model", "logged", "--usage", "reported")["runs"][0]["sessions"][0]
    # the response's usage: input 3, cache_read 11,515, cache_creation 13,835 (all ephemeral_1h), output 13
    expected = by_hand(OPUS_46, hit=11_515, miss=3, five=0, hour=13_835, out=13)
    assert expected == Decimal("0.1444475")  # not $0.09256625, the 1-hour writes at the 5-minute rate
    assert Decimal(session["summary"]["total"]) == expected
    assert ("cache writes priced at their logged lifetimes: 0 tokens at 5-minute write rates, 13,835 at 1-hour "
            "write rates") in session["notes"]  # fmt: skip


def _assistant(n: int, model: str, usage: dict[str, Any], parent: str) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/shop",
            "sessionId": "5b0c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d", "version": "2.1.38", "gitBranch": "main",
            "message": {"model": model, "id": f"msg_0{n}", "type": "message", "role": "assistant",
                        "content": [{"type": "text", "text": f"Reply {n}."}], "stop_reason": "end_turn",
                        "stop_sequence": None, "usage": usage},
            "requestId": f"req_0{n}", "type": "assistant", "uuid": f"a{n}",
            "timestamp": f"2026-02-10T21:1{n}:00.000Z"}  # fmt: skip


def _user(n: int, parent: str | None) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/shop",
            "sessionId": "5b0c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d", "version": "2.1.38", "gitBranch": "main",
            "type": "user", "message": {"role": "user", "content": f"Question {n}?"}, "uuid": f"u{n}",
            "timestamp": f"2026-02-10T21:1{n}:00.000Z"}  # fmt: skip


def _usage(inp: int, five: int, hour: int, read: int, out: int) -> dict[str, Any]:
    return {"input_tokens": inp, "cache_creation_input_tokens": five + hour, "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour},
            "output_tokens": out, "service_tier": "standard"}  # fmt: skip


def test_writes_of_both_lifetimes_on_two_models(tmp_path: Path) -> None:
    """Two models, each write at its lifetime's rate of its own model; the price line names each model's rates."""
    lines = [_user(1, None), _assistant(1, "claude-opus-4-6", _usage(12, 2_000, 30_000, 0, 400), "u1"),
             _user(2, "a1"), _assistant(2, "claude-sonnet-4-5", _usage(7, 1_500, 500, 32_000, 250), "u2")]  # fmt: skip
    log = tmp_path / "5b0c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = bill(str(log), "--model", "logged", "--usage", "reported")
    session = report["runs"][0]["sessions"][0]
    first = by_hand(OPUS_46, hit=0, miss=12, five=2_000, hour=30_000, out=400)
    second = by_hand(SONNET_45, hit=32_000, miss=7, five=1_500, hour=500, out=250)
    assert [Decimal(t["total"]) for t in session["turns"]] == [first, second]
    assert Decimal(session["summary"]["total"]) == first + second
    assert set(report["prices"]["rates"]) == {"claude-opus-4-6", "claude-sonnet-4-5"}  # K3's not among them
    text = bill(str(log), "--model", "logged", "--usage", "reported", fmt="table")
    (line,) = [x for x in text.splitlines() if x.startswith("prices:")]
    assert "K3" not in line and "Kimi" not in line
    assert ("claude-opus-4-6: hit $0.50/M, miss $5.00/M, 5-minute writes $6.25/M, 1-hour writes $10.00/M, "
            "output $25.00/M") in line  # fmt: skip
    assert ("claude-sonnet-4-5: hit $0.30/M, miss $3.00/M, 5-minute writes $3.75/M, 1-hour writes $6.00/M, "
            "output $15.00/M") in line  # fmt: skip
    assert "note: logged on claude-opus-4-6, claude-sonnet-4-5: priced at claude-opus-4-6 and claude-sonnet-4-5 " \
           "rates" in text  # fmt: skip


def test_without_logged_pricing_the_writes_are_the_cache_models() -> None:
    """At K3's rates (the default) a write costs a miss: the logged lifetimes change nothing."""
    session = bill(str(SPOTTER), "--usage", "reported")["runs"][0]["sessions"][0]
    assert all(t["write_premium"] == "0" for t in session["turns"])
    assert not any("logged lifetimes" in n for n in session["notes"])


def two_model_log(tmp_path: Path, second: str = "claude-sonnet-4-5") -> Path:
    lines = [_user(1, None), _assistant(1, "claude-opus-4-6", _usage(12, 2_000, 30_000, 0, 400), "u1"),
             _user(2, "a1"), _assistant(2, second, _usage(7, 1_500, 500, 32_000, 250), "u2"),
             _user(3, "a2"), _assistant(3, "claude-opus-4-6", _usage(9, 800, 0, 34_000, 120), "u3")]  # fmt: skip
    log = tmp_path / "5b0c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return log


def test_every_label_names_the_model_the_figures_were_priced_at(tmp_path: Path) -> None:
    """Under `--model logged` the title, the JSON `model`, each CSV and JSONL row's `model` say the model whose
    rates made the figure, not K3."""
    log = str(two_model_log(tmp_path))
    session = bill(log, "--model", "logged")["runs"][0]["sessions"][0]
    assert session["model"] == "claude-opus-4-6"  # the first the log names; turn 2 names its own
    assert [t["priced_model"] for t in session["turns"]] == [None, "claude-sonnet-4-5", None]
    text = bill(log, "--model", "logged", fmt="table")
    title = text.splitlines()[0]
    assert title.startswith("5b0c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d · claude-opus-4-6 + claude-sonnet-4-5 · cache ")
    rows = list(csv.DictReader(io.StringIO(bill(log, "--model", "logged", fmt="csv"))))
    assert [r["model"] for r in rows] == ["claude-opus-4-6", "claude-sonnet-4-5", "claude-opus-4-6"]
    records = [json.loads(x) for x in bill(log, "--model", "logged", fmt="jsonl").splitlines()]
    assert [r["model"] for r in records if r["record"] == "turn"] == [r["model"] for r in rows]
    assert bill(log)["runs"][0]["sessions"][0]["model"] == "kimi-k3"  # the default: every call at K3's rates


def test_the_overview_says_what_its_money_is(tmp_path: Path) -> None:
    log = str(two_model_log(tmp_path))
    other = tmp_path / "more"
    other.mkdir()
    shutil.copy(SPOTTER, other / SPOTTER.name)
    k3 = bill(log, str(other), "--by", "session", fmt="table").splitlines()[0]
    assert "cost at kimi-k3 prices" in k3
    logged = bill(log, str(other), "--by", "session", "--model", "logged", fmt="table").splitlines()[0]
    assert "cost at each call's logged model's prices (2 models)" in logged


def test_a_model_the_price_table_lacks_is_left_out_and_named(tmp_path: Path) -> None:
    """A gateway's own model name under `--model logged`: its calls are not priced, counted and named, and the
    rest is priced as logged (it used to stop the whole run)."""
    log = str(two_model_log(tmp_path, second="gateway/opus-fast"))
    report = bill(log, "--model", "logged", "--usage", "reported")
    session = report["runs"][0]["sessions"][0]
    assert [t["turn"] for t in session["turns"]] == [1, 3] and session["unpriced_calls"] == 1
    assert "1 call(s) logged on 'gateway/opus-fast', which the price table lacks: not priced, left out of the " \
           "totals (`--prices FILE` can price it)" in session["notes"]  # fmt: skip
    first = by_hand(OPUS_46, hit=0, miss=12, five=2_000, hour=30_000, out=400)
    third = by_hand(OPUS_46, hit=34_000, miss=9, five=800, hour=0, out=120)
    assert Decimal(session["summary"]["total"]) == first + third
    assert bill(log, "--model", "logged")["runs"][0]["sessions"][0]["unpriced_calls"] == 1  # simulated alike
    only = tmp_path / "only"
    only.mkdir()
    lines = [_user(1, None), _assistant(1, "gateway/opus-fast", _usage(12, 2_000, 30_000, 0, 400), "u1")]
    (only / "5b0c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = CliRunner().invoke(cli, ["bill", str(only), "--model", "logged"])
    assert result.exit_code == 2 and "no model the log names is in the price table (gateway/opus-fast)" in result.stderr
    assert "Traceback" not in result.output + result.stderr
