"""The price table: load, validate, look up.

Prices are data (`kcost/data/prices.json`, the K3 list prices from the API update), validated by pydantic and
loaded only when a command needs them. Rates are USD per million tokens, held as `Decimal`; a cost is
`tokens * rate / 1,000,000`, exact. `--prices FILE` replaces the table with a file of the same shape.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kcost.errors import InputError, pydantic_error
from kcost.readers.document import load_json

PER = Decimal(1_000_000)  # rates are quoted per million tokens


class ModelPrice(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_cache_hit: Decimal = Field(ge=0)
    input_cache_miss: Decimal = Field(ge=0)
    output: Decimal = Field(ge=0)

    def hit_cost(self, tokens: int) -> Decimal:
        return tokens * self.input_cache_hit / PER

    def miss_cost(self, tokens: int) -> Decimal:
        return tokens * self.input_cache_miss / PER

    def output_cost(self, tokens: int) -> Decimal:
        return tokens * self.output / PER


class PriceTable(BaseModel):
    """A named, dated table of per-model rates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    currency: str = "USD"
    effective: date
    source: str
    default_model: str
    models: dict[str, ModelPrice] = Field(min_length=1)

    @model_validator(mode="after")
    def _default_is_listed(self) -> PriceTable:
        if self.default_model not in self.models:
            raise ValueError(f"default_model {self.default_model!r} is not in models")
        return self

    def lookup(self, model: str | None) -> ModelPrice:
        name = model or self.default_model
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models))
            raise InputError(f"no price for model {name!r}", field="model", hint=f"priced: {known}") from None


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The shipped table, or the one in `path`; a bad file raises `InputError` naming the field."""
    if path is None:
        return _shipped()
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read prices file: {exc.strerror}", source=source) from None
    return _parse(text, source)


@lru_cache(maxsize=1)
def _shipped() -> PriceTable:
    text = resources.files("kcost.data").joinpath("prices.json").read_text(encoding="utf-8")
    return _parse(text, "kcost/data/prices.json")


def _parse(text: str, source: str) -> PriceTable:
    if not text.strip():
        raise InputError("prices file is empty", source=source)
    data, lines = load_json(text, source)
    try:
        return PriceTable.model_validate(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source, lines) from None
