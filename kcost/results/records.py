"""The records of `kcost bill --format jsonl`, a line each: written by `kcost.render.data`, described here for
`kcost schema jsonl` (and loaded only for it: a bill needs none of them).
"""

from __future__ import annotations

from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.bill import Summary, TurnBill
from kcost.results.common import CLOSED, Doc


@frozen(slots=True, kw_only=True)
class TurnRecord(TurnBill):
    """A turn: where it belongs, then its bill."""

    __pydantic_config__ = CLOSED
    record: Literal["turn"]
    cache: Annotated[str, Doc("The cache model's label.")]
    session: str
    source: str
    model: Annotated[str, Doc("The model priced at.")]


@frozen(slots=True, kw_only=True)
class SessionRecord(Summary):
    """A session's summary, with how it was read."""

    __pydantic_config__ = CLOSED
    record: Literal["session"]
    cache: str
    session: str
    source: str
    model: str
    usage: Literal["simulated", "reported"]
    token_counts: str
    calls_sized_from_usage: int
    calls_estimated: int
    started: str | None
    ended: str | None
    logged_models: list[str]


@frozen(slots=True, kw_only=True)
class TotalRecord(Summary):
    """All sessions of one cache model together."""

    __pydantic_config__ = CLOSED
    record: Literal["total"]
    cache: str


Record = Annotated[TurnRecord | SessionRecord | TotalRecord, Doc("One line of `kcost bill --format jsonl`.")]
