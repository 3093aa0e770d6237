"""What `kcost plan` reports: the month's sessions at API prices beside subscription plans' prices. Plain
dataclasses, written by the one JSON writer; `kcost schema plan` describes them."""

from __future__ import annotations

from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.common import CLOSED, Doc, Money
from kcost.version import __version__


@frozen(slots=True, kw_only=True)
class PlanRow:
    __pydantic_config__ = CLOSED
    id: Annotated[str, Doc("The plan's id (`own`: the one a config gives).")]
    provider: str
    name: str
    usd_month: Annotated[Money, Doc("The plan's monthly price.")]
    windows_hours: Annotated[list[int], Doc("Its usage windows' lengths in hours (5: rolling; 168: weekly).")]
    source: Annotated[str, Doc("Where the price was read.")]
    read: Annotated[str | None, Doc("The day it was read there.")]
    as_of: Annotated[str | None, Doc("The day the source dates itself, where it does.")]
    api_month: Annotated[Money, Doc("The month's use at API prices, at the logged models' own rates (the month at its "
                                    "pace: to date, scaled to the whole month where it is the current one).")]
    pays_for_itself: Annotated[bool, Doc("Whether api_month reaches the plan's price.")]
    break_even: Annotated[float | None, Doc("The plan's price as a share of api_month, 4 decimals: the share of this "
                                            "month's use at which the plan pays for itself (null: no use).")]
    saves: Annotated[Money, Doc("api_month minus the price: what the plan saves (below 0: what it costs above API).")]


@frozen(slots=True, kw_only=True)
class PlanReport:
    """`kcost plan`: the month's sessions at API prices (K3's and the logged models' own) beside plans."""

    __pydantic_config__ = {**CLOSED, "title": "kcost plan"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    cache: Annotated[str, Doc("The cache model the costs are simulated under.")]
    timezone: str
    month: Annotated[str, Doc("The month (2026-12).")]
    days: Annotated[int, Doc("The month's days counted: to today in the current month, else all of them.")]
    month_days: int
    sessions: int
    calls: int
    agents: list[str]
    k3_to_date: Annotated[Money, Doc("The month's calls so far at K3's rates.")]
    logged_to_date: Annotated[Money, Doc("The same at each call's logged model's own rates.")]
    unpriced_calls: Annotated[int, Doc("Calls on a model the price table does not hold: left out of logged_to_date.")]
    k3_month: Annotated[Money, Doc("k3_to_date at the month's pace.")]
    logged_month: Annotated[Money, Doc("logged_to_date at the month's pace.")]
    plans: list[PlanRow]
