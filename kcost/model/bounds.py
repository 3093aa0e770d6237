"""The bounds every number kcost takes must keep, named once: past them an input is an error, not a bill.

Token counts: whole numbers from 0 to `MAX_TOKENS` (a thousand times K3's context window); a session has at
most `MAX_TURNS` turns. Money (a rate per
million tokens, a budget): a finite decimal from 0 to `MAX_MONEY` with at most `MONEY_PLACES` decimal places,
so every amount kcost computes stays exact in `PRECISION` digits and prints in a few dozen characters.
"""

from __future__ import annotations

import re
from decimal import Decimal

from kcost.errors import InputError

MAX_TOKENS = 10**9
# turns in one session, repeats counted: far past any real session, and billed in under a minute at the bounds
# under every cache model (bench/bench_bounds.py)
MAX_TURNS = 100_000
MAX_MONEY = Decimal(10**9)
MONEY_PLACES = 12
PRECISION = 80  # digits of Decimal arithmetic: tokens x rate / 1M and every sum of them stay exact
PER = Decimal(1_000_000)  # rates are quoted per million tokens


def money(value: Decimal, *, field: str | None = None, source: str | None = None, line: int | None = None) -> Decimal:
    """`value` if it is an amount kcost can bill with exactly; else an `InputError` naming the bounds."""
    if not value.is_finite():
        raise InputError(f"must be a finite number, got {value}", field=field, source=source, line=line)
    if value < 0:
        raise InputError(f"must be greater than or equal to 0, got {value}", field=field, source=source, line=line)
    if value > MAX_MONEY:
        raise InputError(f"must be at most {MAX_MONEY:,}, got {value:.6g}", field=field, source=source, line=line)
    exponent = value.as_tuple().exponent
    if (
        isinstance(exponent, int)
        and exponent < -MONEY_PLACES
        and value != value.quantize(Decimal(1).scaleb(-MONEY_PLACES))
    ):
        raise InputError(f"has more than {MONEY_PLACES} decimal places: {value:.6g}", field=field, source=source,
                         line=line)  # fmt: skip
    return value


_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9}


def parse_tokens(text: str, *, least: int = 0) -> int:
    """A token count as people write one, checked against the bounds: `400000`, `400_000`, `400,000`, `400k`,
    `1.5M`, `1B` (K, M, B: thousands, millions, billions). Every option that takes a token count parses it here."""
    raw = text.strip()
    match = re.fullmatch(r"(\d+(?:[_,]\d{3})*(?:\.\d+)?)\s*([kKmMbBgG]?)", raw)
    if not match:
        raise InputError(f"not a token count: {text!r}", hint="400000, 400_000, 400k or 1.5M")
    number = Decimal(match.group(1).replace("_", "").replace(",", "")) * _SUFFIX[match.group(2).upper()]
    if number != number.to_integral_value():
        raise InputError(f"not a whole number of tokens: {text!r}")
    count = int(number)
    if not least <= count <= MAX_TOKENS:
        raise InputError(f"must be from {least:,} to {MAX_TOKENS:,} tokens (got {count:,})")
    return count


def parse_positive_tokens(text: str) -> int:
    """A token count of at least one."""
    return parse_tokens(text, least=1)
