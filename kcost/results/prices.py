"""The price table: a named, dated table of per-model rates (USD per million tokens), as `kcost prices` shows it
and a `--prices` file holds it. Loaded and validated by `kcost.prices`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from kcost.errors import InputError
from kcost.results.common import PriceInfo, Rates

PER = Decimal(1_000_000)  # rates are quoted per million tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """USD per million tokens for one model."""

    __pydantic_config__ = {"extra": "forbid"}
    input_cache_hit: Decimal
    input_cache_miss: Decimal
    output: Decimal

    def hit_cost(self, tokens: int) -> Decimal:
        return tokens * self.input_cache_hit / PER

    def miss_cost(self, tokens: int) -> Decimal:
        return tokens * self.input_cache_miss / PER

    def output_cost(self, tokens: int) -> Decimal:
        return tokens * self.output / PER


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceTable:
    """A named, dated table of per-model rates."""

    __pydantic_config__ = {"extra": "forbid"}
    name: str
    currency: str = "USD"
    effective: date
    source: str
    default_model: str
    models: dict[str, ModelPrice]

    def info(self) -> PriceInfo:
        """The table as a report states it: its name, date, source and every model's rates."""
        return PriceInfo(
            name=self.name,
            currency=self.currency,
            effective=self.effective,
            source=self.source,
            rates={
                name: Rates(input_cache_hit=p.input_cache_hit, input_cache_miss=p.input_cache_miss, output=p.output)
                for name, p in self.models.items()
            },
        )

    def lookup(self, model: str | None) -> ModelPrice:
        name = model or self.default_model
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models))
            raise InputError(f"no price for model {name!r}", field="model", hint=f"priced: {known}") from None
