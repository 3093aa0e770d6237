"""The price table: load, validate, look up.

Prices are data (`kcost/data/prices.json`, the K3 list prices from the API update), loaded only when a command
needs them; a `--prices FILE` is validated by pydantic (the shipped table is read directly, and a test holds it
to the same validation). Rates are USD per million tokens, held as `Decimal`; a cost is
`tokens * rate / 1,000,000`, exact. `--prices FILE` replaces the table with a file of the same shape.
"""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

from kcost import bounds
from kcost.errors import InputError, pydantic_error
from kcost.results.prices import ModelPrice, PriceTable

SHIPPED = "kcost/data/prices.json"


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The shipped table, or the one in `path`; a bad file raises `InputError` naming the field."""
    if path is None:
        return _shipped()
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read prices file: {exc.strerror}", source=source) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=source) from None
    return parse_prices(text, source)


@lru_cache(maxsize=1)
def _shipped() -> PriceTable:
    """The table that ships with kcost, read without pydantic (a test holds it to `parse_prices`)."""
    data = json.loads(shipped_text())
    models = {name: ModelPrice(**{k: Decimal(v) for k, v in rates.items()}) for name, rates in data["models"].items()}
    return PriceTable(name=data["name"], currency=data["currency"], effective=date.fromisoformat(data["effective"]),
                      source=data["source"], default_model=data["default_model"], models=models)  # fmt: skip


def shipped_text() -> str:
    return (Path(__file__).parent / "data" / "prices.json").read_text(encoding="utf-8")  # importlib.resources: +4 ms


def parse_prices(text: str, source: str) -> PriceTable:
    """A price table file, validated: every rate a decimal >= 0, at least one model, the default among them."""
    from pydantic import TypeAdapter, ValidationError

    from kcost.document import load_json

    if not text.strip():
        raise InputError("prices file is empty", source=source)
    data, lines = load_json(text, source)
    try:
        table: PriceTable = TypeAdapter(PriceTable).validate_python(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source, lines) from None
    if not table.models:
        raise InputError("at least one model is needed", source=source, line=lines.get(("models",)), field="models")
    for name, price in table.models.items():
        for rate in ("input_cache_hit", "input_cache_miss", "output"):
            bounds.money(getattr(price, rate), source=source, line=lines.get(("models", name, rate)),
                         field=f"models.{name}.{rate}")  # fmt: skip
    if table.default_model not in table.models:
        raise InputError(f"default_model {table.default_model!r} is not in models", source=source,
                         line=lines.get(("default_model",)), field="default_model")  # fmt: skip
    return table
