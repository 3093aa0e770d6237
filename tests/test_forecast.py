"""The month's forecast (`kcost forecast`): spend to date, and the rest of the month projected from the user's own
days, worked out by hand from logged usage at K3's rates ($3.00 a million missed input tokens)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

from click.testing import CliRunner

from kcost import api
from kcost.api.settings import resolve
from kcost.cli import cli
from tests.test_windows import claude_log

TODAY = date(2026, 12, 10)  # 21 days of December after it


def _forecast(log: Path, tz: str = "UTC") -> api.ForecastReport:  # type: ignore[name-defined]
    settings = resolve(usage="reported", timezone=tz)
    return api.forecast(api.sessions([str(log)], settings), settings, today=TODAY)


def test_three_days_are_too_little_history_and_it_says_so(tmp_path: Path) -> None:
    calls = [(f"2026-12-0{d}T12:00", 100_000, 0, 0) for d in (7, 8, 9)] + [("2026-12-10T09:00", 100_000, 0, 0)]
    report = _forecast(claude_log(tmp_path / "s.jsonl", "s3", calls))
    assert report.spent == Decimal("1.2")  # four calls of $0.30
    assert not report.enough and report.projected_median is None and report.projected_p90 is None
    assert report.note == "3 day(s) of history before today: a forecast takes at least 7"


def test_sixty_days_give_a_median_and_a_p90(tmp_path: Path) -> None:
    # from 2026-10-11, day k costs $0.30 (100k missed) where k is even, $0.60 (200k missed) where odd; today $0.60
    first = date(2026, 10, 11)
    calls = [((first + timedelta(days=k)).isoformat() + "T12:00", 100_000 if k % 2 == 0 else 200_000, 0, 0)
             for k in range(60)]  # fmt: skip
    calls.append(("2026-12-10T08:00", 200_000, 0, 0))
    report = _forecast(claude_log(tmp_path / "s.jsonl", "s60", calls))
    assert report.history_days == 60 and report.remaining_days == 21 and report.enough
    # December 1-9 are k = 51..59: five $0.60 days and four $0.30 days, $4.20, and today's $0.60
    assert report.spent == Decimal("4.8")
    # the 40 runs of 21 days: 20 from an even day (11 x $0.30 + 10 x $0.60 = $9.30), 20 from an odd one ($9.60)
    assert report.rest_median == Decimal("9.45") and report.rest_p90 == Decimal("9.6")
    assert report.projected_median == Decimal("14.25") and report.projected_p90 == Decimal("14.4")
    assert report.daily_median == Decimal("0.45") and report.daily_p90 == Decimal("0.6")


def test_a_history_shorter_than_the_rest_of_the_month_scales_its_days(tmp_path: Path) -> None:
    # ten days before today at $0.30 each, then 21 days to go: 21 x $0.30 at the median and at P90
    calls = [((TODAY - timedelta(days=d)).isoformat() + "T12:00", 100_000, 0, 0) for d in range(1, 11)]
    report = _forecast(claude_log(tmp_path / "s.jsonl", "s10", calls))
    assert report.history_days == 10 and report.rest_median == report.rest_p90 == Decimal("6.3")
    assert report.spent == Decimal("2.7")  # December 1-9


def test_a_call_counts_on_its_day_in_the_time_zone(tmp_path: Path) -> None:
    log = claude_log(tmp_path / "s.jsonl", "stz", [("2026-12-09T23:30", 100_000, 0, 0)])
    assert _forecast(log).days[-2].day == "2026-12-09"  # in UTC, yesterday
    berlin = _forecast(log, "Europe/Berlin")
    assert [(d.day, d.cost) for d in berlin.days] == [("2026-12-01", 0), ("2026-12-02", 0), ("2026-12-03", 0),
                                                      ("2026-12-04", 0), ("2026-12-05", 0), ("2026-12-06", 0),
                                                      ("2026-12-07", 0), ("2026-12-08", 0), ("2026-12-09", 0),
                                                      ("2026-12-10", Decimal("0.3"))]  # fmt: skip


def test_every_format_and_the_html_plot(tmp_path: Path) -> None:
    today = datetime.now(timezone.utc).date()
    calls = [((today - timedelta(days=d)).isoformat() + "T12:00", 100_000, 0, 0) for d in range(0, 12)]
    log = claude_log(tmp_path / "logs" / "s.jsonl", "sf", calls)
    args = ["forecast", str(log), "--usage", "reported", "--timezone", "UTC"]
    table = CliRunner().invoke(cli, args)
    assert table.exit_code == 0, table.stderr
    assert "by the month's end:" in table.stdout and "(median), up to" in table.stdout
    markdown = CliRunner().invoke(cli, [*args, "--format", "markdown"]).stdout
    assert markdown.startswith("**") and "- by the month's end:" in markdown
    data = CliRunner().invoke(cli, [*args, "--format", "json"]).stdout
    assert '"projected_p90"' in data and '"history_days": 11' in data
    page = CliRunner().invoke(cli, [*args, "--format", "html"]).stdout
    assert "<svg" in page and "median projection" in page and "P90 projection" in page
