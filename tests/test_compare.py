"""`kcost compare`: every shipped sample on each default model under its provider's own cache rule, ordered
against that provider's ideal cache and no cache; the JSON against its schema."""

from __future__ import annotations

import json
from decimal import Decimal

import jsonschema
import pytest
from click.testing import CliRunner

from kcost.analysis.compare import DEFAULT_MODELS, rule_for
from kcost.billing.bills import bill
from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.pricing.prices import load_prices
from kcost.readers import read_all
from tests.conftest import ROOT, SAMPLES

SHIPPED = sorted(str(p) for p in SAMPLES.iterdir() if p.suffix in (".yaml", ".jsonl"))
LOGS = [str(ROOT / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl")]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("path", SHIPPED + LOGS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_each_rule_sits_between_its_providers_ideal_cache_and_none(path: str) -> None:
    prices = load_prices()
    (session,) = read_all([path]).sessions
    for model in (*DEFAULT_MODELS, "gpt-5.6-sol", "deepseek-v4-pro", "claude-opus-4-6"):  # and each generation's
        provider = prices.entry(model)[0].provider
        rule = rule_for(provider, model)
        best = f"ideal:ttl={rule.ttl or 'inf'},output={'on' if rule.output else 'off'}"
        ideal = bill(session, cache=parse_cache_model(best), prices=prices, model=model)
        own = bill(session, cache=rule, prices=prices, model=model)
        none = bill(session, cache=parse_cache_model("none"), prices=prices, model=model)
        assert ideal.summary.hit_tokens >= own.summary.hit_tokens >= none.summary.hit_tokens == 0, (model, rule)
        assert ideal.summary.total <= own.summary.total, (model, rule.label)
        if not own.summary.write_premium:  # a rule that bills writes above a miss may cost more than no cache
            assert own.summary.total <= none.summary.total, (model, rule.label)


def test_compare_json_validates_and_marks_the_cheapest() -> None:
    code, out, err = run("compare", *SHIPPED, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    code, schema, _ = run("schema", "compare")
    jsonschema.validate(doc, json.loads(schema))
    assert len(doc["sessions"]) == len(SHIPPED)
    for session in doc["sessions"]:
        assert [r["model"] for r in session["rows"]] == list(DEFAULT_MODELS)
        least = min(session["rows"], key=lambda r: Decimal(r["cost"]))
        assert session["cheapest"] == least["model"] and least["cheapest"]
        assert sum(r["cheapest"] for r in session["rows"]) == 1
    caches = {c["name"]: c for c in doc["caches"]}
    assert set(caches) == {"k3", "anthropic", "openai", "deepseek"}
    assert all(c["source"].startswith("https://") for n, c in caches.items() if n != "k3")
    assert "Kimi tokens" in doc["note"]


def test_a_providers_own_usage_is_said_to_be_its_own() -> None:
    code, out, _ = run("compare", LOGS[0], "--on", "claude-opus-4-6", "--on", "kimi-k3", "--format", "json")
    rows = {r["model"]: r for r in json.loads(out)["sessions"][0]["rows"]}
    assert code == 0 and rows["claude-opus-4-6"]["counts"] == "logged" and rows["kimi-k3"]["counts"] == "kimi"


def test_an_unknown_model_to_compare_on_names_the_nearest() -> None:
    code, _, err = run("compare", SHIPPED[0], "--on", "gpt-5.9")
    assert code == 2 and "no price for model 'gpt-5.9'" in err and "gpt-5" in err


def test_a_models_own_least_cacheable_prompt() -> None:
    assert rule_for("anthropic", "claude-3-5-haiku").min_tokens == 2048
    assert rule_for("anthropic", "claude-sonnet-4-5").min_tokens == 1024
    assert rule_for("google", "gemini-2.5-pro").min_tokens == 2048
    assert rule_for("google", "gemini-3-pro-preview").min_tokens == 4096
    assert rule_for("openai", "gpt-5.1").label == "openai:min=1024,ttl=300,output=off"
