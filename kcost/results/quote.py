"""What `kcost quote` reports: the seed lesson's arithmetic, each figure with the cache model behind it."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kcost import __version__
from kcost.results.common import Money, PriceInfo


class QuoteTurn(BaseModel):
    model_config = ConfigDict(frozen=True)

    cache: str = Field(description="The cache model that produced this figure.")
    assumption: str
    hit_tokens: int
    miss_tokens: int
    input_cost: Money
    total: Money


class QuoteSession(BaseModel):
    model_config = ConfigDict(frozen=True)

    cache: str
    assumption: str
    total: Money


class Quote(BaseModel):
    """`kcost quote --format json`."""

    model_config = ConfigDict(frozen=True, title="kcost quote")

    schema_version: Literal[1] = 1
    generator: str = f"kcost {__version__}"
    prefix_tokens: int
    new_tokens: int
    output_tokens: int
    turns: int
    model: str
    prices: PriceInfo
    turn: list[QuoteTurn] = Field(description="One turn: all miss, ideal hit, K3 hit.")
    ratio: Decimal = Field(description="All-miss turn cost / ideal-hit turn cost, 1 decimal.")
    session: list[QuoteSession] = Field(description="The whole session under each assumption.")
    saved: Money = Field(description="All-miss session total - warm ideal session total.")
    hit_rate: Decimal
    blended_input_per_mtok: Money = Field(description="hit_rate x hit price + (1 - hit_rate) x miss price.")
