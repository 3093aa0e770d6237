"""What the overview reports: one row per session, or per day, week, month, model, project or agent, each with the
same figures, and the total. Rows are flat (a breakdown's per-model rows sit beside their group's row, with
`model` set), so `jq '.rows[] | select(.group == "2026-11-30" and .model == null) | .cost'` finds a group's cost.
Plain dataclasses, written by the one JSON writer; `kcost schema overview` describes them.
"""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.common import CLOSED, Doc, Money, PriceInfo
from kcost.results.grouping import SORTS, By
from kcost.version import __version__

GROUP = (
    "The row's key: a session's name, an hour (2026-11-30 14:00), a day (2026-11-30), a week (2026-W48), a month "
    "(2026-11), a usage window's start (2026-11-30 14:00), a model, a project (the working folder or project name "
    "the agent records) or an agent; `no date` where no time is logged, `no project` where the agent records none."
)


@frozen(slots=True, kw_only=True)
class OverviewRow:
    __pydantic_config__ = CLOSED
    group: Annotated[str, Doc(GROUP)]
    model: Annotated[str | None, Doc("With --breakdown: the model this row is the share of (null: the whole group).")]
    cache: Annotated[str, Doc("The cache model the figures are simulated under.")]
    sessions: int
    source: Annotated[str | None, Doc("The session's file (rows by session).")] = None
    agents: Annotated[list[str], Doc("The agents whose logs the row holds (claude-code, codex, kimi-cli, ...).")]
    models: Annotated[list[str], Doc("The models the row's calls ran on (as logged), else priced at.")]
    started: Annotated[str | None, Doc("The first call's time, ISO 8601 in the report's time zone.")]
    ended: Annotated[str | None, Doc("The last call's time, ISO 8601 in the report's time zone.")]
    turns: int
    input_tokens: int
    hit_tokens: int
    miss_tokens: int
    output_tokens: int
    hit_rate: Annotated[float, Doc("hit_tokens / input_tokens, 6 decimals.")]
    input_cost: Money
    output_cost: Money
    cost: Money
    ends: Annotated[str | None, Doc("By window: when the window ends (ISO 8601), its start and length.")] = None


@frozen(slots=True, kw_only=True)
class WindowLimit:
    __pydantic_config__ = CLOSED
    usd: Annotated[Money | None, Doc("A limit in dollars (null: the limit is in tokens).")]
    tokens: Annotated[int | None, Doc("A limit in tokens, input and output (null: the limit is in dollars).")]
    source: Annotated[Literal["given", "max"], Doc("As given (--limit), or the largest past window's (max).")]
    used: Annotated[float, Doc("The share of the limit the active window has used, 6 decimals (1.0: all of it).")]
    reached_at: Annotated[
        str | None,
        Doc("When the window reached the limit (its call that crossed it), or will at its burn rate, before it ends "
            "(ISO 8601); null where it will not."),
    ]
    hours_left: Annotated[float | None, Doc("Hours from now until the limit is reached at the burn rate (0: it is).")]


@frozen(slots=True, kw_only=True)
class ActiveWindow:
    """The window a call was made in within its length before now, and it not yet ended."""

    __pydantic_config__ = CLOSED
    cache: Annotated[str, Doc("The cache model its figures are simulated under.")]
    group: Annotated[str, Doc("The window's row key (its start).")]
    started: str
    ends: str
    turns: int
    tokens: Annotated[int, Doc("Input and output tokens so far.")]
    cost: Money
    burn_usd_per_hour: Annotated[Money, Doc("Dollars an hour over the window's calls in the last hour before now.")]
    burn_tokens_per_minute: Annotated[float, Doc("Tokens a minute over the same calls, 1 decimal.")]
    projected_cost: Annotated[Money, Doc("The window's cost at its end, at the burn rate.")]
    limit: WindowLimit | None


@frozen(slots=True, kw_only=True)
class OverviewTotal:
    __pydantic_config__ = CLOSED
    cache: str
    sessions: int
    turns: int
    input_tokens: int
    hit_tokens: int
    miss_tokens: int
    output_tokens: int
    hit_rate: float
    input_cost: Money
    output_cost: Money
    cost: Money


@frozen(slots=True, kw_only=True)
class OverviewReport:
    """`kcost bill --by ...`: the sessions at a glance, grouped, with the total of each cache model."""

    __pydantic_config__ = {**CLOSED, "title": "kcost overview"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    prices: PriceInfo
    by: By
    sort: Annotated[str, Doc("What the rows are ordered by: " + ", ".join(SORTS) + ".")]
    timezone: Annotated[str, Doc("The time zone days, weeks, months and times are in.")]
    since: Annotated[str | None, Doc("Sessions that started at or after this time (ISO 8601), where given.")]
    until: Annotated[str | None, Doc("Sessions that started at or before this time (ISO 8601), where given.")]
    usage: Annotated[list[str], Doc("How the sessions were billed: simulated, reported, or both.")]
    left_out: Annotated[int, Doc("Sessions read but outside --since/--until (or with no time to place them).")]
    rows: list[OverviewRow]
    totals: Annotated[list[OverviewTotal], Doc("One per cache model; each equals the sum of its rows with model null.")]
    window_hours: Annotated[int | None, Doc("By window: each window's length in hours.")] = None
    now: Annotated[str | None, Doc("By window: the moment the active window is judged at (ISO 8601).")] = None
    active: Annotated[
        list[ActiveWindow], Doc("By window: the active window under each cache model, where one is active.")
    ] = field(default_factory=list)
