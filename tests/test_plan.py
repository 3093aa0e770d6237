"""`kcost plan`: the month's calls at API prices, K3's and the logged model's own, at the month's pace, beside
subscription plans, worked out by hand (K3: $3.00 a million missed input tokens, $0.30 hit, $15.00 output; Claude
Opus 4.5: $5.00, $0.50, $25.00)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost import api
from kcost.api.settings import resolve
from kcost.cli import cli
from kcost.pricing.plans import plans
from tests.test_windows import claude_log

OPUS = "claude-opus-4-5"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    # December 2: 1M missed, 20k out (K3 $3.30, Opus $5.50); December 9: 2M hit, 40k out (K3 $1.20, Opus $2.00)
    december = [("2026-12-02T09:00", 1_000_000, 0, 20_000), ("2026-12-09T09:00", 0, 2_000_000, 40_000)]
    claude_log(tmp_path / "logs" / "dec.jsonl", "s-dec", december, OPUS)
    # November 30: 1M missed (K3 $3.00, Opus $5.00), out of December
    claude_log(tmp_path / "logs" / "nov.jsonl", "s-nov", [("2026-11-30T09:00", 1_000_000, 0, 0)], OPUS)
    return tmp_path / "logs"


def test_the_months_pace_beside_the_agents_plans(logs: Path) -> None:
    settings = resolve(usage="reported", timezone="UTC")
    report = api.plan(api.sessions([str(logs)], settings), settings, today=date(2026, 12, 10))
    assert (report.month, report.days, report.month_days, report.sessions, report.calls) == ("2026-12", 10, 31, 1, 2)
    assert report.k3_to_date == Decimal("4.5") and report.logged_to_date == Decimal("7.5")
    assert report.k3_month == Decimal("13.95") and report.logged_month == Decimal("23.25")  # 31 days / 10
    assert [p.id for p in report.plans] == ["claude-pro", "claude-max-5x", "claude-max-20x"]  # Claude Code's
    pro, max5, _ = report.plans
    assert pro.pays_for_itself and pro.saves == Decimal("3.25") and pro.break_even == 0.8602  # $20 / $23.25
    assert not max5.pays_for_itself and max5.saves == Decimal("-76.75") and max5.break_even == 4.3011
    assert pro.source.startswith("https://") and pro.read == "2026-12-05"


def test_a_past_month_is_taken_whole(logs: Path) -> None:
    settings = resolve(usage="reported", timezone="UTC")
    report = api.plan(api.sessions([str(logs)], settings), settings, month=date(2026, 11, 1),
                      today=date(2026, 12, 10))  # fmt: skip
    assert (report.days, report.month_days, report.k3_month, report.logged_month) == (30, 30, Decimal(3), Decimal(5))


def test_the_configs_plan_named_or_its_own(logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["plan", str(logs), "--usage", "reported", "--month", "2026-11", "--format", "json", "--timezone", "UTC"]
    (tmp_path / "kcost.toml").write_text('plan = "chatgpt-plus"\n', encoding="utf-8")
    named = json.loads(CliRunner().invoke(cli, args).stdout)
    assert [p["id"] for p in named["plans"]] == ["chatgpt-plus"] and named["plans"][0]["saves"] == "-15"
    (tmp_path / "kcost.toml").write_text('[plan]\nname = "team seat"\nusd_month = 4.5\n', encoding="utf-8")
    own = json.loads(CliRunner().invoke(cli, args).stdout)["plans"]
    assert [(p["id"], p["name"], p["pays_for_itself"], p["saves"]) for p in own] == [("own", "team seat", True, "0.5")]
    every = json.loads(CliRunner().invoke(cli, [*args, "--plan", "all"]).stdout)["plans"]
    assert len(every) == len(plans()) >= 11
    table = CliRunner().invoke(cli, args[:-4] + ["--timezone", "UTC"])
    assert table.exit_code == 0 and "team seat" in table.stdout and "yes, saves $0.50" in table.stdout


@pytest.mark.parametrize(("config", "args", "says"), [
    ("", ["--plan", "gold"], "--plan: no plan 'gold'"),
    ('plan = "gold"\n', [], "kcost.toml: plan: no plan 'gold'"),
    ('[plan]\nname = "x"\n', [], "usd_month is missing"),
])  # fmt: skip
def test_a_plan_that_is_none_is_one_line(config: str, args: list[str], says: str, logs: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    if config:
        (tmp_path / "kcost.toml").write_text(config, encoding="utf-8")
    result = CliRunner().invoke(cli, ["plan", str(logs), *args])
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1
