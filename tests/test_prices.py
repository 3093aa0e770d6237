"""Prices per provider: the shipped snapshot, models by the ids they are logged under, rates through time, cache
writes and the 1-hour choice, and refreshing the snapshot from genai-prices."""

from __future__ import annotations

import json
import re
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


def table_of(*args: str) -> str:
    code, out, err = invoke("prices", *args, "--color", "never")
    assert code == 0, err
    return out


def headings(out: str) -> dict[str, list[str]]:
    """Each heading of a price listing (its title) with the model ids of its rows."""
    found: dict[str, list[str]] = {}
    title = ""
    for text in out.splitlines():
        if " · USD per 1M tokens · " in text:
            title = text.split(" · ")[0]
            found[title] = []
        elif not text:
            title = ""  # a heading's rows end at a blank line
        elif title and not text.startswith(("model ", "key:", "· ", "source:")) and text[0] != " ":
            found[title].append(text.split()[0])
    return found


def test_prices_show_each_providers_current_models_on_one_screen_and_every_model_with_all() -> None:
    """By default, the newest models of each provider's main line (ada, babbage, davinci, GPT-4 and Claude 3 are
    left to --all), on one screen at 100 columns; --all lists every model the snapshot holds."""
    short, every = table_of("--width", "100"), table_of("--all", "--width", "100")
    assert len(short.splitlines()) <= 55 < len(every.splitlines())
    shown = {m for models in headings(short).values() for m in models}
    listed = {m for models in headings(every).values() for m in models}
    for old in ("ada", "babbage", "davinci", "gpt-4", "claude-3-opus", "gemini-1.5-pro", "kimi-k2", "deepseek-chat"):
        assert old not in shown and old in listed, old
    for new in ("kimi-k3", "kimi-k3.1-pro", "claude-opus-5-5", "gpt-6.1-sol", "deepseek-v4-pro", "gemini-4-argon"):
        assert new in shown, new
    models = sum(len(p["models"]) for p in shipped_document()["providers"])
    rows = sum(len(set(ids)) for ids in headings(short).values())  # a model with rates scheduled: two rows
    assert f"{models - rows} older models not shown (--all lists them)" in short
    assert "older models not shown" not in every


def test_claude_models_google_sells_are_listed_under_their_own_heading() -> None:
    """genai-prices' google file holds Vertex AI's Claude rates beside Gemini's: they are listed apart, never under
    "Google Gemini API list prices"."""
    for out in (table_of("--all", "--width", "160"), table_of("--width", "160")):
        found = headings(out)
        gemini = found["Google Gemini API list prices"]
        assert gemini and all(m.startswith(("gemini", "gemma")) for m in gemini), gemini
        assert found["Anthropic models at Google's list prices"]
        assert all(m.startswith("claude") for m in found["Anthropic models at Google's list prices"])
    google = next(p for p in shipped_document()["providers"] if p["provider"] == "google")
    assert any(m["id"].startswith("claude") for m in google["models"])  # the data file is as it was


def test_rates_after_the_snapshot_day_are_scheduled_not_in_force() -> None:
    """A snapshot taken 2026-11-30 shows the rates in force that day, and a period starting later as `from` it."""
    out = table_of("--all", "--width", "160")
    assert "taken 2026-11-30" in out
    dates = [d for text in out.splitlines() for d in re.findall(r"(?:from )?\d{4}-\d{2}-\d{2}(?!\))", text)
             if "taken" not in text and "as of" not in text]  # fmt: skip
    later = [d for d in dates if d.removeprefix("from ") > "2026-11-30"]
    assert later and all(d.startswith("from ") for d in later), later
    assert re.search(r"gemini-3\.6-flash +\$0\.075 +\$0\.75 .*\$3\.75 \(as of 2026-11-30\)", out)
    assert re.search(r"gemini-3\.6-flash +\$0\.15 +\$1\.50 .*\$7\.50 from 2027-01-01", out)
    at = table_of("--all", "--at", "2027-02-01", "--width", "160")  # that day the new rates are in force
    assert re.search(r"gemini-3\.6-flash +\$0\.15 +\$1\.50 .*\$7\.50 2027-01-01", at)
    assert "from 2027-01-01" not in at


@pytest.mark.parametrize("args", [(), ("--all",), ("kimi-k3",), ("--model", "kimi-k3"), ("--at", "2026-08-01")])
def test_exactly_one_row_is_the_default(args: tuple[str, ...]) -> None:
    out = table_of(*args, "--width", "160")
    assert out.count("(default)") == 1, out
    history = table_of("kimi-k3", "--width", "160")
    assert re.search(r"^kimi-k3 +\$0\.30 .* 2026-07-16$", history, re.MULTILINE)
    assert re.search(r"^kimi-k3 \(default\) +\$0\.30 .* 2026-10-15$", history, re.MULTILINE)


@pytest.mark.parametrize("width", ["80", "100", "160"])
def test_source_lines_are_short_in_the_table_and_whole_in_markdown_and_json(width: str) -> None:
    out = table_of("--all", "--width", width)
    sources = [text for text in out.splitlines() if text.startswith("source:")]
    assert len(sources) == len(headings(out))
    assert max(len(text) for text in out.splitlines()) <= int(width)
    assert all(text.count("https://") <= 1 for text in sources)
    markdown = table_of("--all", "--format", "markdown")
    longest = max((p["source"] for pr in shipped_document()["providers"] for m in pr["models"] for p in m["prices"]),
                  key=len)  # fmt: skip
    assert len(longest) > int(width) and longest.replace("|", "\\|") in markdown
    assert longest in table_of("--format", "json")


@pytest.mark.parametrize(("args", "named"), [(("kimi-k4",), "MODEL"), (("--model", "kimi-k4"), "--model")])
def test_an_unknown_model_to_list_names_the_argument_given(args: tuple[str, ...], named: str) -> None:
    code, out, err = invoke("prices", *args)
    assert code == 2 and out == ""
    assert f"{named}: no price for model 'kimi-k4'" in err and "kimi-k3" in err
    assert ("--model" in err) == (named == "--model")
