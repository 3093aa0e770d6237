"""What `kcost compare` reports: each session on each model, under that model's provider's own cache rule."""

from __future__ import annotations

from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.common import CLOSED, CacheInfo, Doc, Money, PriceInfo
from kcost.version import __version__


@frozen(slots=True, kw_only=True)
class Priced:
    """One session on one model."""

    __pydantic_config__ = CLOSED
    model: str
    provider: str
    cache: Annotated[str, Doc("The provider's cache rule the session was simulated under (its label).")]
    hit_rate: float
    input_tokens: int
    output_tokens: int
    cost: Money
    cost_per_turn: Annotated[Money, Doc("cost / turns, to 10 decimals.")]
    dominant: Annotated[
        Literal["cache hits", "cache misses", "cache writes", "output"], Doc("The part of the cost that is largest.")
    ]
    counts: Annotated[
        Literal["logged", "kimi"],
        Doc("logged: the token counts are this provider's own, from the log's usage; kimi: Kimi tokens."),
    ]
    cheapest: bool


@frozen(slots=True, kw_only=True)
class SessionOnModels:
    __pydantic_config__ = CLOSED
    session: str
    source: str
    turns: int
    rows: list[Priced]
    cheapest: str


@frozen(slots=True, kw_only=True)
class ModelTotal:
    """One model, every session together."""

    __pydantic_config__ = CLOSED
    model: str
    provider: str
    cache: Annotated[str, Doc("The provider's cache rule the sessions were simulated under (its label).")]
    hit_rate: Annotated[float, Doc("The sessions' hit tokens over their input tokens.")]
    input_tokens: int
    output_tokens: int
    cost: Annotated[Money, Doc("The sum of the sessions' costs on this model.")]
    cost_per_turn: Annotated[Money, Doc("cost / the sessions' turns, to 10 decimals.")]
    dominant: Annotated[
        Literal["cache hits", "cache misses", "cache writes", "output"],
        Doc("The part of the summed cost that is largest."),
    ]
    counts: Annotated[
        Literal["logged", "kimi", "mixed"],
        Doc("logged: every session's token counts are this provider's own; kimi: Kimi tokens; mixed: some of each."),
    ]
    cheapest: Annotated[bool, Doc("The cheapest model for all the sessions together.")]
    cheapest_in: Annotated[int, Doc("How many of the sessions this model is the cheapest for.")]


@frozen(slots=True, kw_only=True)
class CompareTotal:
    """Every session together on each model: what the human formats lead with where there are several."""

    __pydantic_config__ = CLOSED
    sessions: int
    turns: int
    rows: list[ModelTotal]
    cheapest: str


@frozen(slots=True, kw_only=True)
class CompareReport:
    """`kcost compare --format json`."""

    __pydantic_config__ = {**CLOSED, "title": "kcost compare"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    note: str
    prices: PriceInfo
    caches: Annotated[list[CacheInfo], Doc("Every provider rule used, with its source.")]
    sessions: list[SessionOnModels]
    total: Annotated[CompareTotal, Doc("Every session together on each model.")]
