"""Prices per provider: the shipped snapshot, models by the ids they are logged under, rates through time, cache
writes and the 1-hour choice, and refreshing the snapshot from genai-prices."""

from __future__ import annotations

import json
import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.pricing.prices import DATA, load_prices, shipped_document
from tests.conftest import ROOT

M = Decimal(1_000_000)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def bill(*args: str) -> dict:  # type: ignore[type-arg]
    code, out, err = invoke("bill", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


ONE_TURN = """model: {model}
prefix:
  tokens: 400_000
  warm: {warm}
turns:
  - keep: 400_000
    new: 4_000
"""


def test_every_shipped_rate_has_a_source_and_a_date() -> None:
    document = shipped_document()
    periods = [(m["id"], p) for provider in document["providers"] for m in provider["models"] for p in m["prices"]]
    assert len(periods) > 100
    for model, period in periods:
        assert period["source"].strip(), model
        assert period.get("starts") or period.get("as_of"), model
        date.fromisoformat(period["as_of"])


def test_kimi_k3_1_pro_is_priced_at_its_own_rates(tmp_path: Path) -> None:
    """One 400K-prefix + 4K turn, no output, on kimi-k3.1-pro: $2 a miss, $0.20 a hit, per million."""
    warm = spec(tmp_path, ONE_TURN.format(model="kimi-k3.1-pro", warm="true"))
    cold = spec(tmp_path, ONE_TURN.format(model="kimi-k3.1-pro", warm="false"), "cold.yaml")
    assert bill(warm, "--cache", "ideal")["runs"][0]["total"]["total"] == "0.088"
    assert bill(warm, "--cache", "k3")["runs"][0]["total"]["total"] == "0.0882304"
    doc = bill(cold, "--cache", "k3")
    assert doc["runs"][0]["total"]["total"] == "0.808"
    assert doc["runs"][0]["sessions"][0]["model"] == "kimi-k3.1-pro"
    assert doc["prices"]["rates"]["kimi-k3.1-pro"]["input_cache_miss"] == "2"


def test_an_unknown_model_names_the_nearest_ids(tmp_path: Path) -> None:
    code, _, err = invoke("bill", spec(tmp_path, ONE_TURN.format(model="kimi-k3.2-pro", warm="true")))
    assert code == 2 and err.count("\n") == 1
    assert "spec.yaml:1: model: no price for model 'kimi-k3.2-pro'" in err and "kimi-k3.1-pro" in err
    code, _, err = invoke("bill", str(ROOT / "sample_sessions" / "coding-400k.yaml"), "--model", "nonexistent")
    assert code == 2 and err.startswith("kcost: error: --model: no price for model 'nonexistent' (nearest")


def test_logged_models_price_each_call_at_its_own_rates() -> None:
    """`--model logged`: a Claude Code log's calls at Anthropic's rates for the model each names."""
    log = str(ROOT / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl")
    k3 = bill(log)["runs"][0]["sessions"][0]
    own = bill(log, "--model", "logged")
    session = own["runs"][0]["sessions"][0]
    turn = session["turns"][0]
    assert session["model"] == "claude-opus-4-6"  # the session's model, where the log names one the table prices
    assert turn["logged_model"] == "claude-opus-4-6" and turn["priced_model"] is None  # at the session's model
    rates = load_prices().lookup("claude-opus-4-6", date.fromisoformat(turn["time"][:10]))
    assert Decimal(turn["miss_cost"]) == turn["miss_tokens"] * rates.input_cache_miss / M
    assert Decimal(turn["output_cost"]) == turn["output_tokens"] * rates.output / M
    assert "claude-opus-4-6" in own["prices"]["rates"]
    assert k3["turns"][0]["priced_model"] is None and k3["model"] == "kimi-k3"  # the default: what K3 would cost


def test_prices_at_a_date_take_the_rates_then_in_force() -> None:
    table = load_prices()
    assert table.lookup("kimi-k3", date(2026, 8, 1)).cache_write_1h is None
    assert table.lookup("kimi-k3", date(2026, 10, 15)).cache_write_1h == Decimal(6)
    assert table.lookup("kimi-k3").input_cache_hit == Decimal("0.3")


GAP = """name: a 20-minute break
prefix:
  tokens: 100_000
turns:
  - new: 2_000
    output: 500
  - new: 2_000
    output: 500
    idle: 20m
"""


def test_one_hour_writes_keep_a_20_minute_gap_warm_at_the_1_hour_rate(tmp_path: Path) -> None:
    path = spec(tmp_path, GAP)
    five = bill(path, "--cache", "k3:ttl=5m")["runs"][0]
    hour = bill(path, "--cache", "k3:ttl=1h")["runs"][0]
    assert five["cache"]["label"] == "k3:hash=512,ttl=300,output=off"  # the default's own label: nothing changed
    assert five["sessions"][0]["turns"][1]["hit_tokens"] == 0 and five["sessions"][0]["turns"][1]["reason"] == "expired"
    assert hour["sessions"][0]["turns"][1]["hit_tokens"] > 100_000
    # the 5-minute write rate is the miss rate: no premium; the hour's writes cost $6 a million, $3 above a miss
    assert all(t["write_premium"] == "0" for t in five["sessions"][0]["turns"])
    for t in hour["sessions"][0]["turns"]:
        assert t["written_tokens"] == t["input_tokens"] // 512 * 512 - t["hit_tokens"]
        assert Decimal(t["write_premium"]) == t["written_tokens"] * Decimal(3) / M

    def by_hand(run: dict, hour: bool) -> Decimal:  # type: ignore[type-arg]
        total = Decimal(0)
        for t in run["sessions"][0]["turns"]:
            write = Decimal(6 if hour else 3) - 3
            total += (t["hit_tokens"] * Decimal("0.3") + t["miss_tokens"] * 3 + t["written_tokens"] * write
                      + t["output_tokens"] * 15) / M  # fmt: skip
        return total

    assert Decimal(five["total"]["total"]) == by_hand(five, False)
    assert Decimal(hour["total"]["total"]) == by_hand(hour, True)
    code, out, _ = invoke("explain", path, "--format", "json")
    assert code == 0
    counterfactual = json.loads(out)[0]["hour_writes"]
    assert Decimal(counterfactual["difference"]) == by_hand(hour, True) - by_hand(five, False)
    assert counterfactual["idle_gaps"] == 1 and counterfactual["shortest_gap_minutes"] == 20.0
    code, out, _ = invoke("explain", path)
    assert "with 1-hour cache writes this session would cost" in out and "1 idle gap of 20 minutes" in out


def test_the_older_one_table_shape_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"name": "ours", "currency": "USD", "effective": "2026-01-01", "source": "our deal",
                                "default_model": "kimi-k3", "models": {"kimi-k3": {
                                    "input_cache_hit": "0.1", "input_cache_miss": "1", "output": "5"}}}))  # fmt: skip
    doc = bill(str(ROOT / "sample_sessions" / "coding-400k.yaml"), "--prices", str(path), "--cache", "none")
    assert doc["prices"]["name"] == "ours" and doc["prices"]["effective"] == "2026-01-01"
    assert doc["runs"][0]["total"]["total"] == "20.2"  # 50 turns of 404,000 tokens at $1 a million


def test_update_refreshes_the_snapshot_and_keeps_history(tmp_path: Path) -> None:
    pytest.importorskip("genai_prices")
    from kcost.pricing.prices import update_snapshot

    for path in DATA.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    moonshot = json.loads((tmp_path / "moonshotai.json").read_text())
    pro = next(m for m in moonshot["models"] if m["id"] == "kimi-k3.1-pro")
    pro["prices"][0]["input_cache_miss"] = "9"  # as if the provider had charged $9 before
    (tmp_path / "moonshotai.json").write_text(json.dumps(moonshot))
    changes = update_snapshot(tmp_path, taken=date(2026, 12, 1))
    assert changes == ["moonshotai: kimi-k3.1-pro: new rates from 2026-12-01"]
    pro = next(
        m for m in json.loads((tmp_path / "moonshotai.json").read_text())["models"] if m["id"] == "kimi-k3.1-pro"
    )
    assert [(p["starts"], p["input_cache_miss"]) for p in pro["prices"]] == [(None, "9"), ("2026-12-01", "2")]
    k3 = next(m for m in json.loads((tmp_path / "moonshotai.json").read_text())["models"] if m["id"] == "kimi-k3")
    assert [p["starts"] for p in k3["prices"]] == ["2026-07-16", "2026-10-15"]  # unchanged: only checked again
    assert k3["prices"][-1]["as_of"] == "2026-12-01"
    assert update_snapshot(tmp_path, taken=date(2026, 12, 2)) == []  # nothing new the second time


@pytest.mark.parametrize(("match", "says"), [({"regex": "(("}, "not a regular expression"),
                                              ({"bogus": "x"}, "expected one of equals"),
                                              ({"or": []}, "expected a list of clauses")])  # fmt: skip
def test_a_bad_match_clause_is_one_line_naming_it(tmp_path: Path, match: dict, says: str) -> None:  # type: ignore[type-arg]
    document = shipped_document()
    document["providers"][0]["models"][0]["match"] = match
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document))
    code, _, err = invoke("prices", "--prices", str(path))
    assert code == 2 and err.count("\n") == 1 and "providers.0.models.0.match" in err and says in err


def test_a_quote_on_another_model_states_that_models_rates() -> None:
    code, out, _ = invoke("quote", "--prefix", "400000", "--new", "4000", "--turns", "1", "--model", "kimi-k3.1-pro",
                          "--format", "json")  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and doc["model"] == "kimi-k3.1-pro" and list(doc["prices"]["rates"]) == ["kimi-k3.1-pro"]
    assert doc["turn"][0]["total"] == "0.808"  # 404,000 tokens missed at $2 a million


def test_long_prompts_pay_a_providers_long_context_tier() -> None:
    table = load_prices()
    short, long = (table.lookup("claude-sonnet-4-5", prompt=n) for n in (100_000, 300_000))
    assert long.input_cache_miss == 2 * short.input_cache_miss and long.input_cache_hit > short.input_cache_hit
    assert table.lookup("kimi-k3", prompt=900_000) == table.lookup("kimi-k3", prompt=1)  # K3: one rate at any length
