"""What `kcost check` and `kcost diff` report: each budget held against a session, and two bills side by side;
and what a check hands its renderers (`CheckOutcome`: the report, the diff against the baseline, the top causes).

Plain frozen dataclasses, as the bill is; the budgets are the validated input model (`kcost.model.budgets.Budgets`),
written by their config-file names (`max-session-usd`).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Annotated, Literal

from kcost.model.budgets import Budgets
from kcost.model.frozen import frozen
from kcost.results.bill import Summary
from kcost.results.common import CacheInfo, Doc, Money, PriceInfo
from kcost.results.explain import Ranked
from kcost.version import __version__

TOTAL = "(all sessions)"


@frozen(slots=True, kw_only=True)
class Result:
    """One budget, held against one session (or the total)."""

    session: Annotated[str, Doc(f"The session's name, or {TOTAL!r}.")]
    source: Annotated[str | None, Doc("The session's file, for annotations.")]
    budget: Annotated[str, Doc("The budget's name, as in the config file.")]
    limit: Decimal
    value: Annotated[Decimal, Doc("What was measured (rounded to 10 decimals where it is a ratio).")]
    passed: bool
    message: str


@frozen(slots=True, kw_only=True)
class CheckReport:
    """`kcost check --format json`."""

    __pydantic_config__ = {"title": "kcost check"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    prices: PriceInfo
    cache: CacheInfo
    budgets: Budgets
    baseline: Annotated[str | None, Doc("The bill compared with, if any.")]
    passed: bool
    failures: int
    results: Annotated[
        list[Result],
        Doc(
            "Failures first, the furthest past its limit (as a share of the limit) first; then passes, in session "
            "order."
        ),
    ]
    total: Summary


@frozen(slots=True, kw_only=True)
class Side:
    total: Money
    hit_rate: float
    blended_input_per_mtok: Money
    turns: int


@frozen(slots=True, kw_only=True)
class SessionDiff:
    session: str
    source: str
    status: Literal["changed", "unchanged", "new", "removed"]
    before: Side | None
    after: Side | None
    change: Annotated[Money | None, Doc("after.total - before.total.")]
    change_pct: Annotated[Decimal | None, Doc("The change in percent of before.total, 2 decimals.")]


@frozen(slots=True, kw_only=True)
class DiffReport:
    """`kcost diff --format json`."""

    __pydantic_config__ = {"title": "kcost diff"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    before: str
    after: str
    cache_before: str
    cache_after: str
    sessions: Annotated[list[SessionDiff], Doc("Changed, new and removed first, by the size of the change.")]
    total: SessionDiff

    def changed_only(self) -> DiffReport:
        """The same diff without the sessions that did not change (`--only-changed`)."""
        return replace(self, sessions=[s for s in self.sessions if s.status != "unchanged"])


@frozen(slots=True)
class CheckOutcome:
    """What `kcost check` renders: the report (its JSON), the diff against the baseline where one was given, and
    the miss causes of all sessions together, by cost (the markdown's and the HTML's)."""

    report: CheckReport
    diff: DiffReport | None
    causes: list[Ranked]
