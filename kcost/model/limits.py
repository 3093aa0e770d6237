"""A usage window's limit and the warnings of it, as `--limit`, `--warn` and the config's `[window]` give them.

A limit is dollars (`12.50`, `$12.50`), tokens (`2000000 tokens`, `2.5M tokens`, `800k tokens`: input and output),
or `max`: the cost of the dearest past window. Warnings are fractions of it (`80%`, `0.8`), each said once a window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from kcost.errors import InputError
from kcost.model.bounds import MAX_MONEY, MAX_TOKENS, MAX_TURNS
from kcost.model.frozen import frozen

WARN = (Decimal("0.8"), Decimal("1"))  # the fractions of a limit warned of where none are asked
MAX_LIMIT_TOKENS = MAX_TOKENS * MAX_TURNS  # a window's tokens can be no more than its calls' bounds allow


@dataclass(frozen=True)
class Limit:
    """A window's limit: dollars (`usd`) or tokens, as given or the largest past window's (`max`)."""

    usd: Decimal | None = None
    tokens: int | None = None
    largest: bool = False  # `max`: the largest past window's cost


@frozen
class Window:
    """What the config's `[window]` and the options say of usage windows (each None where neither says)."""

    hours: int | None = None
    limit: Limit | None = None
    warn: tuple[Decimal, ...] | None = None


def parse_limit(text: str) -> Limit:
    """A window's limit as written: dollars, tokens or `max`."""
    given = text.strip().lower()
    if given == "max":
        return Limit(largest=True)
    tokens = re.fullmatch(r"([0-9][0-9_,.]*)\s*([km]?)\s*(tokens?|tok)", given)
    try:
        if tokens:
            scale = {"": 1, "k": 1_000, "m": 1_000_000}[tokens.group(2)]
            amount = Decimal(tokens.group(1).replace(",", "").replace("_", "")) * scale
            if 0 < amount <= MAX_LIMIT_TOKENS and amount == amount.to_integral_value():
                return Limit(tokens=int(amount))
        else:
            usd = Decimal(given.removeprefix("$").replace(",", ""))
            if usd.is_finite() and 0 < usd <= MAX_MONEY:
                return Limit(usd=usd)
    except InvalidOperation:
        pass
    raise InputError(f"not a limit: {text!r}", field="limit",
                     hint="dollars (12.50 or $12.50), tokens (2M tokens), or max (the largest past window's)")


def parse_warn(text: str) -> tuple[Decimal, ...]:
    """Warning fractions as written: `80%,100%` or `0.8,1`, each above 0 and at most 10 (1000%)."""
    out = []
    for part in text.split(","):
        item = part.strip()
        try:
            value = Decimal(item.removesuffix("%").strip())
        except InvalidOperation:
            value = Decimal(-1)
        if not value.is_finite():
            value = Decimal(-1)
        if item.endswith("%"):
            value /= 100
        if not 0 < value <= 10:
            raise InputError(f"not a share of the limit: {item!r}", field="warn",
                             hint="fractions or percentages, comma-separated: 80%,100% or 0.8,1")  # fmt: skip
        out.append(value)
    return tuple(sorted(set(out)))
