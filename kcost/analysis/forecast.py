"""The month's forecast: its spend to date and its projection to the month's end, with an interval taken from the
user's own history, not from a model of it.

Each call counts on the day it was made, in the report's time zone (a call with no logged time on none). The history
is the whole days before today, from the first day with a call (at most `HISTORY_DAYS` back), days without calls
counting as $0. With fewer than `MIN_DAYS` of them there is no forecast, and the report says why. Otherwise the
rest of the month (its days after today) is projected as the median and the 90th percentile (nearest rank) of the
history's runs of as many consecutive days; where the history is shorter than the rest of the month, as that many
times the median and the 90th percentile day.
"""

from __future__ import annotations

import calendar
import math
import statistics
from collections.abc import Sequence
from datetime import date, timedelta, tzinfo
from decimal import Decimal
from typing import Any

from kcost.analysis.overview import call_time
from kcost.model.calls import on_clock
from kcost.results.bill import BillReport, SessionBill
from kcost.results.forecast import DayCost, ForecastReport

MIN_DAYS = 7
HISTORY_DAYS = 90


def nearest_rank(values: Sequence[Decimal], share: float) -> Decimal:
    """The `share` percentile of `values` by nearest rank: the smallest value at least that share of them reach."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def forecast(report: BillReport, *, today: date, zone: tzinfo | None, zone_name: str) -> ForecastReport:
    """The forecast of the month of `today` from the first run's bills in `report`."""
    run = report.runs[0]
    daily, calls, undated = by_day(run.sessions, zone)
    first_of_month = today.replace(day=1)
    last_day = calendar.monthrange(today.year, today.month)[1]
    month_days = [first_of_month + timedelta(days=n) for n in range(today.day)]
    spent = sum((daily.get(d, Decimal(0)) for d in month_days), Decimal(0))
    earliest = min((d for d in daily if d < today), default=today)
    start = max(earliest, today - timedelta(days=HISTORY_DAYS))
    history = [start + timedelta(days=n) for n in range((today - start).days)]
    costs = [daily.get(d, Decimal(0)) for d in history]
    rest = last_day - today.day
    shown = sorted(set(history) | set(month_days))
    days = [DayCost(day=d.isoformat(), cost=daily.get(d, Decimal(0)), calls=calls.get(d, 0)) for d in shown]
    common: dict[str, Any] = {"prices": report.prices, "cache": run.cache.label, "timezone": zone_name,
              "month": f"{today.year:04d}-{today.month:02d}", "today": today.isoformat(), "spent": spent, "days": days,
              "history_days": len(history), "remaining_days": rest, "undated_calls": undated}  # fmt: skip
    if len(history) < MIN_DAYS:
        return ForecastReport(**common, enough=False, note=f"{len(history)} day(s) of history before today: a forecast "
                              f"takes at least {MIN_DAYS}", daily_median=None, daily_p90=None, rest_median=None,
                              rest_p90=None, projected_median=None, projected_p90=None)  # fmt: skip
    if rest == 0:
        runs = [Decimal(0)]
    elif len(costs) >= rest:
        runs = [sum(costs[n : n + rest], Decimal(0)) for n in range(len(costs) - rest + 1)]
    else:
        runs = [c * rest for c in costs]
    median = Decimal(statistics.median(runs)) if rest else Decimal(0)
    p90 = nearest_rank(runs, 0.9)
    return ForecastReport(**common, enough=True, note=None, daily_median=Decimal(statistics.median(costs)),
                          daily_p90=nearest_rank(costs, 0.9), rest_median=median, rest_p90=p90,
                          projected_median=spent + median, projected_p90=spent + p90)  # fmt: skip


def by_day(bills: Sequence[SessionBill], zone: tzinfo | None) -> tuple[dict[date, Decimal], dict[date, int], int]:
    """Each day's cost and calls, each call on the day it was made in `zone`; and how many calls had no time."""
    daily: dict[date, Decimal] = {}
    calls: dict[date, int] = {}
    undated = 0
    for bill in bills:
        for turn in bill.turns:
            at = call_time(turn)
            if at is None:
                undated += 1
                continue
            day = on_clock(at, zone).date()
            daily[day] = daily.get(day, Decimal(0)) + turn.total
            calls[day] = calls.get(day, 0) + 1
    return daily, calls, undated
