"""What the forecast reports: the month's spend to date, each day's, and where the month is heading, with an interval
taken from the user's own days. Plain dataclasses, written by the one JSON writer; `kcost schema forecast`
describes them."""

from __future__ import annotations

from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.common import CLOSED, Doc, Money, PriceInfo
from kcost.version import __version__


@frozen(slots=True, kw_only=True)
class DayCost:
    __pydantic_config__ = CLOSED
    day: Annotated[str, Doc("A day (2026-12-04) in the report's time zone.")]
    cost: Money
    calls: int


@frozen(slots=True, kw_only=True)
class ForecastReport:
    """`kcost forecast`: the month's spend to date and its projection to the month's end."""

    __pydantic_config__ = {**CLOSED, "title": "kcost forecast"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    prices: PriceInfo
    cache: Annotated[str, Doc("The cache model the costs are simulated under.")]
    timezone: Annotated[str, Doc("The time zone days are in.")]
    month: Annotated[str, Doc("The month forecast (2026-12).")]
    today: Annotated[str, Doc("The day the forecast is made (its calls count as spent).")]
    spent: Annotated[Money, Doc("The month's cost from its first day to today, today included.")]
    days: Annotated[list[DayCost], Doc("Each day of the month to today, and each day of the history, in order.")]
    history_days: Annotated[int, Doc("The whole days before today the interval is taken from (at most 90).")]
    remaining_days: Annotated[int, Doc("The days of the month after today.")]
    enough: Annotated[bool, Doc("Whether the history is long enough for a forecast (at least 7 days).")]
    note: Annotated[str | None, Doc("Why there is no forecast, where there is none.")]
    daily_median: Annotated[Money | None, Doc("The median day of the history.")]
    daily_p90: Annotated[Money | None, Doc("The 90th percentile day of the history (nearest rank).")]
    rest_median: Annotated[Money | None, Doc("What the rest of the month will cost: the median of the history's runs "
                                              "of as many days (or that many median days, where it is shorter).")]
    rest_p90: Annotated[Money | None, Doc("The same at the 90th percentile: the upper bound.")]
    projected_median: Annotated[Money | None, Doc("spent + rest_median: the month's cost at its end.")]
    projected_p90: Annotated[Money | None, Doc("spent + rest_p90.")]
    undated_calls: Annotated[int, Doc("Calls with no logged time: left out of every day.")]
