"""`--model logged`: every call priced at the model its log names, every cache write at its logged lifetime.

Claude Code logs Anthropic's usage with the writes broken out by lifetime (`cache_creation.ephemeral_5m_input_tokens`
and `ephemeral_1h_input_tokens`, their sum `cache_creation_input_tokens`). Billed as reported at the logged model,
a session costs what Anthropic bills: hits, misses (`input_tokens`), 5-minute writes, 1-hour writes and output, each
at the model's own rate, which these tests work out by hand. The price line names the rates of each model used,
not K3's.
"""

from __future__ import annotations

import json
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
