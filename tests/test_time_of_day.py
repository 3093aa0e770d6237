"""Rates by the time of day: DeepSeek's peak hours (09:00-12:00 and 14:00-18:00 Beijing time, Monday to Friday;
off-peak half the peak rate), applied call by call at each call's logged time, in `bill` and in `compare`."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.pricing.prices import load_prices, parse_prices, shipped_document

M = Decimal(1_000_000)
# deepseek-v4-pro from 2026-08-17, per million tokens (https://api-docs.deepseek.com/quick_start/pricing)
PEAK = {"miss": Decimal("1.32"), "hit": Decimal("0.044"), "output": Decimal("3.96")}
OFF = {"miss": Decimal("0.66"), "hit": Decimal("0.022"), "output": Decimal("1.98")}
# (when, UTC; prompt, cached, output): 2026-11-30 is a Monday, 2026-12-05 a Saturday
CALLS = [
    ("2026-11-30T03:59:00", 10_000, 6_000, 500, PEAK),  # 11:59 in Beijing: the morning peak's last minute
    ("2026-11-30T04:00:00", 12_000, 9_000, 700, OFF),  # 12:00: off-peak from here
    ("2026-11-30T06:30:00", 15_000, 11_000, 300, PEAK),  # 14:30: the afternoon peak
    ("2026-11-30T10:00:00", 16_000, 15_000, 200, OFF),  # 18:00: off-peak again
    ("2026-12-05T02:00:00", 18_000, 16_000, 400, OFF),  # 10:00 on a Saturday: off-peak all day
]


def _log(tmp_path: Path) -> str:
    """A DeepSeek session logged as request/response pairs, with the usage DeepSeek reported."""
    calls = [(int(datetime.fromisoformat(when).replace(tzinfo=timezone.utc).timestamp()), *rest[:3])
             for when, *rest in CALLS]  # fmt: skip
    return deepseek_log(tmp_path, calls)


def deepseek_log(tmp_path: Path, calls: list[tuple[int, int, int, int]]) -> str:
    """A DeepSeek session as request/response pairs, each call's (`created`, prompt, cached, output) as logged."""
    lines = []
    for n, (created, prompt, cached, output) in enumerate(calls):
        request = {"model": "deepseek-v4-pro", "messages": [{"role": "user", "content": f"step {n}"}]}
        response = {"id": f"ds-{n}", "object": "chat.completion", "created": created, "model": "deepseek-v4-pro",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                                                                                  "content": "ok"}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
                              "cached_tokens": cached}}  # fmt: skip
        lines.append(json.dumps({"request": request, "response": response}))
    path = tmp_path / "deepseek-session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def by_hand(prompt: int, cached: int, output: int, rates: dict[str, Decimal]) -> Decimal:
    return (prompt - cached) * rates["miss"] / M + cached * rates["hit"] / M + output * rates["output"] / M


def test_a_session_across_the_peak_boundary_is_billed_at_both_rates_call_by_call(tmp_path: Path) -> None:
    path = _log(tmp_path)
    result = CliRunner().invoke(cli, ["bill", path, "--usage", "reported", "--model", "logged", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    session = json.loads(result.stdout)["runs"][0]["sessions"][0]
    turns = session["turns"]
    assert len(turns) == len(CALLS) and session["model"] == "deepseek-v4-pro"
    assert {t["priced_model"] for t in turns} == {None}  # every call at the session's model
    expected = [by_hand(p, c, o, rates) for _, p, c, o, rates in CALLS]
    # the first: 4,000 x $1.32/M + 6,000 x $0.044/M + 500 x $3.96/M = $0.00528 + $0.000264 + $0.00198
    assert expected[0] == Decimal("0.007524")
    assert expected[1] == 3_000 * OFF["miss"] / M + 9_000 * OFF["hit"] / M + 700 * OFF["output"] / M
    assert [Decimal(t["total"]) for t in turns] == expected
    assert Decimal(session["summary"]["total"]) == sum(expected)
    assert "2 call(s) priced at peak rates by their logged time" in session["notes"]


def test_compare_uses_the_logged_time_of_each_call(tmp_path: Path) -> None:
    path = _log(tmp_path)
    result = CliRunner().invoke(cli, ["compare", path, "--on", "deepseek-v4-pro", "--usage", "reported",
                                      "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    row = json.loads(result.stdout)["sessions"][0]["rows"][0]
    assert Decimal(row["cost"]) == sum(by_hand(p, c, o, rates) for _, p, c, o, rates in CALLS)


def test_an_untimed_call_is_billed_at_the_peak_rates_and_said_so() -> None:
    prices = load_prices()
    period = prices.entry("deepseek-v4-pro")[1].period(None)
    assert period.window(None) is not None and period.window(None).label == "peak"
    flat = period.at(1000, period.window(None))
    assert (flat.input_cache_miss, flat.input_cache_hit, flat.output) == (PEAK["miss"], PEAK["hit"], PEAK["output"])
    off = period.at(1000, None)
    assert (off.input_cache_miss, off.input_cache_hit, off.output) == (OFF["miss"], OFF["hit"], OFF["output"])


def test_the_shipped_windows_are_sourced_and_valid() -> None:
    document = shipped_document()
    parse_prices(json.dumps(document), "snapshot")  # the same validation a --prices file gets
    deepseek = next(p for p in document["providers"] if p["provider"] == "deepseek")
    windowed = {m["id"]: p for m in deepseek["models"] for p in m["prices"] if p.get("hours")}
    assert set(windowed) == {"deepseek-flash", "deepseek-v4-flash", "deepseek-v4-pro"}
    for period in windowed.values():
        for w in period["hours"]:
            assert w["source"].startswith("https://api-docs.deepseek.com/quick_start/pricing")
            assert (w["utc_offset_minutes"], w["weekdays"]) == (480, [1, 2, 3, 4, 5])
            # off-peak is half the peak rate, as the page says
            assert Decimal(w["input_cache_miss"]) == 2 * Decimal(period["input_cache_miss"])
            assert Decimal(w["output"]) == 2 * Decimal(period["output"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"start": "25:00"}, "start"),
        ({"end": "08:00"}, "end"),
        ({"weekdays": [0]}, "weekdays"),
        ({"utc_offset_minutes": 5000}, "utc_offset_minutes"),
        ({"output": "-1"}, "output"),
    ],
)
def test_a_bad_window_in_a_price_file_is_one_line_naming_it(tmp_path: Path, change: dict, field: str) -> None:
    document = shipped_document()
    deepseek = next(p for p in document["providers"] if p["provider"] == "deepseek")
    pro = next(m for m in deepseek["models"] if m["id"] == "deepseek-v4-pro")
    window = next(p for p in pro["prices"] if p.get("hours"))["hours"][0]
    window.update(change)
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["prices", "--prices", str(path)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and f"hours.0.{field}" in result.stderr
