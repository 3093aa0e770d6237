"""What `kcost quote` reports: the seed lesson's arithmetic, each figure with the cache model behind it. Plain
frozen dataclasses, as the bill is."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from kcost.model.frozen import frozen
from kcost.results.common import Doc, Money, PriceInfo
from kcost.version import __version__


@frozen(slots=True, kw_only=True)
class QuoteTurn:
    cache: Annotated[str, Doc("The cache model that produced this figure.")]
    assumption: str
    hit_tokens: int
    miss_tokens: int
    input_cost: Money
    total: Money


@frozen(slots=True, kw_only=True)
class QuoteSession:
    cache: str
    assumption: str
    total: Money


@frozen(slots=True, kw_only=True)
class Quote:
    """`kcost quote --format json`."""

    __pydantic_config__ = {"title": "kcost quote"}
    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    prefix_tokens: int
    new_tokens: int
    output_tokens: int
    turns: int
    model: str
    prices: PriceInfo
    turn: Annotated[list[QuoteTurn], Doc("One turn: all miss, ideal hit, K3 hit.")]
    ratio: Annotated[Decimal, Doc("All-miss turn cost / ideal-hit turn cost, 1 decimal.")]
    session: Annotated[list[QuoteSession], Doc("The whole session under each assumption.")]
    saved: Annotated[Money, Doc("All-miss session total - warm ideal session total.")]
    hit_rate: Decimal
    blended_input_per_mtok: Annotated[Money, Doc("hit_rate x hit price + (1 - hit_rate) x miss price.")]
