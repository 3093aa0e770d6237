"""Run settings: a flag wins over the config, the config over the default, each default written once; the library
and the command line resolve them alike."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

import kcost
from kcost.api.settings import DEFAULT_CACHE, DEFAULT_USAGE, ConfigFile, Settings, config_for, resolve
from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.errors import InputError
from tests.conftest import SAMPLES

LESSON = str(SAMPLES / "coding-400k.yaml")


def test_defaults_are_written_once_and_used() -> None:
    s = Settings()
    assert s.cache == parse_cache_model(DEFAULT_CACHE)
    assert s.usage == DEFAULT_USAGE
    assert resolve().cache == parse_cache_model(DEFAULT_CACHE)


def test_flag_wins_over_config_and_config_over_default() -> None:
    config = ConfigFile(path="kcost.toml", cache="k3:ttl=1800", usage="simulated", prices="p.json", baseline="b.json")
    from_config = resolve(config)
    assert (from_config.cache, from_config.usage, from_config.prices) == (label("k3:ttl=1800"), "simulated", "p.json")
    assert from_config.baseline == "b.json" and from_config.config == "kcost.toml"
    flagged = resolve(config, caches=["ideal"], usage="reported", prices="q.json", baseline="c.json")
    assert (flagged.cache, flagged.usage, flagged.prices, flagged.baseline) == (
        label("ideal"),
        "reported",
        "q.json",
        "c.json",
    )


def test_budget_flags_merge_over_the_config() -> None:
    from kcost.model.budgets import Budgets

    config = ConfigFile(budgets=Budgets(max_session_usd="2", min_hit_rate="0.5"))
    s = resolve(config, budgets={"max_session_usd": "1.5", "max_increase": "10%"})
    assert s.budgets is not None
    assert (str(s.budgets.max_session_usd), str(s.budgets.min_hit_rate), str(s.budgets.max_increase_pct)) == (
        "1.5",
        "0.5",
        "10",
    )
    assert resolve(budgets={"max_increase": "0.50"}).budgets.max_increase_usd == kcost_decimal("0.50")  # type: ignore[union-attr]


def kcost_decimal(text: str):  # type: ignore[no-untyped-def]
    from decimal import Decimal

    return Decimal(text)


def test_bad_usage_is_one_error() -> None:
    with pytest.raises(InputError, match="usage must be one of"):
        Settings(usage="billed")


def test_config_file_is_found_and_its_paths_are_relative_to_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kcost.toml").write_text('cache = "ideal"\nprices = "prices.json"\n[budgets]\nmax-session-usd = 2\n')
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)
    config = config_for(None)
    assert config.path == str(tmp_path / "kcost.toml")
    assert config.prices == str(tmp_path / "prices.json")
    assert resolve(config).cache == label("ideal")


@pytest.mark.parametrize(
    "text",
    [
        '[tool.kcost]\ncache = "ideal"\n',
        '[project]\nname = "x"\n\n[ tool . "kcost" ]\ncache = "ideal"\n',
        "['tool'.kcost]\ncache = 'ideal'\n",
        '[tool]\nkcost = { cache = "ideal" }\n',
        '[tool]\nruff.line-length = 1\nkcost.cache = "ideal"\n',
        'tool.kcost.cache = "ideal"\n',
        'tool = { kcost = { cache = "ideal" } }\n',
        '"tool"."\\u006bcost".cache = "ideal"\n',
        '[tool.kcost.budgets]\nmax-session-usd = 2\n[tool.kcost]\ncache = "ideal"\n',
    ],
)
def test_a_pyproject_holding_kcosts_table_is_read_however_toml_writes_it(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert resolve(config_for(None)).cache == label("ideal")


def test_a_pyproject_naming_kcost_only_as_a_dependency_is_not_a_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project that depends on kcost names it, but holds no table of its: not parsed (its TOML may be anything)."""
    text = '[project]\nname = "x"\ndependencies = ["kcost>=0.1"]\n[project.scripts]\nkcost-report = "x:main"\n'
    (tmp_path / "pyproject.toml").write_text(text + "[broken\n")
    monkeypatch.chdir(tmp_path)
    assert config_for(None).path is None and resolve(config_for(None)) == resolve()


def label(text: str):  # type: ignore[no-untyped-def]
    return parse_cache_model(text)


def _bill_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(cli, ["bill", LESSON, "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_the_command_line_follows_the_same_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _bill_json()["runs"][0]["cache"]["label"] == label("k3").label  # the default
    (tmp_path / "kcost.toml").write_text('cache = "ideal"\nusage = "simulated"\n')
    assert _bill_json()["runs"][0]["cache"]["label"] == label("ideal").label  # the config over the default
    assert _bill_json("--cache", "none")["runs"][0]["cache"]["label"] == label("none").label  # the flag wins


def test_library_and_command_line_bill_alike() -> None:
    (session,) = kcost.read(LESSON)
    settings = resolve(caches=["k3:hash=256"], at=date(2026, 11, 1))
    by_settings = kcost.report([session], settings=settings)
    by_keywords = kcost.report([session], caches=["k3:hash=256"], at=date(2026, 11, 1))
    assert by_settings == by_keywords
    on_cli = _bill_json("--cache", "k3:hash=256", "--prices-at", "2026-11-01")
    from kcost.results import money_text

    assert on_cli["runs"][0]["total"]["total"] == money_text(by_settings.runs[0].total.total)


def test_an_option_given_at_its_default_value_still_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--usage auto` given on the command line is a flag, and wins over the config's `usage`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kcost.toml").write_text('usage = "reported"\n')
    refused = CliRunner().invoke(cli, ["bill", LESSON, "--format", "json"])
    assert refused.exit_code == 2 and "usage" in refused.output
    assert _bill_json("--usage", "auto")["runs"][0]["sessions"][0]["usage"] == "simulated"
