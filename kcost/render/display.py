"""How every human format writes money and numbers: one formatter, so a figure reads the same in every command.

- Money: a total, and any amount of a dollar or more, at cents (`$6.62`, `$1,212.00`); a smaller amount at a
  fixed precision of `SMALL_PLACES` decimals (`$0.1323`), the same for every small amount of a column; a non-zero
  amount too small to show at that precision is `<$0.0001` (a total: `<$0.01`). Never one decimal, never an
  exponent.
- What is a total: the figure of a whole session, run or report (its total, what it would have cost without
  caching, what caching saved, the running total of a bill, a session's cost beside other models or other
  sessions). Everything else (a turn's cost, a cause's, the input and output parts of a total, a change between
  two bills, a blended price) is an amount. So a session's total reads the same in `bill`, `compare`, `check`,
  `explain` and the overview, and a cause's cost the same in `bill`, `explain` and `check`.
- Rates: hit rates and shares as percentages with one decimal (`72.9%`).
- Counts: thousands separated (`8,240`), and nouns that agree (`1 turn`, `2 turns`).
- Prices per million tokens: as exact as the table states them, at least at cents (`$0.30`, `$0.088`).
- Chart axes: dollars at the precision of their step, at least at cents (`$0.20`, `$0.025`); tokens in K and M.

JSON, JSONL and CSV keep the exact decimals; HTML shows these and keeps the exact figure in a tooltip (`exact`).
Display only: no figure is computed here.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

SMALL_PLACES = 4  # decimals of an amount under a dollar: enough to tell a 400K-token hit ($0.12) from a miss
_CENT = Decimal("0.01")


def money(value: Decimal | int | float, *, total: bool = False, places: int = SMALL_PLACES) -> str:
    """`value` dollars for people: cents from a dollar up (and for a `total`), else `places` decimals."""
    amount = Decimal(value) if not isinstance(value, Decimal) else value
    negative = amount < 0
    size = -amount if negative else amount
    if total or size >= 1:
        shown = size.quantize(_CENT, rounding=ROUND_HALF_UP)
        if size and not shown:
            return f"{'-' if negative else ''}<${_CENT}"
        text = f"{shown:,.2f}"
    else:
        step = Decimal(1).scaleb(-places)
        shown = size.quantize(step, rounding=ROUND_HALF_UP)
        if size and not shown:
            return f"{'-' if negative else ''}<${step}"
        text = f"{shown:.{places}f}"
    if text.strip("0.,") == "":
        negative = False  # no "-$0.00"
    return f"{'-' if negative else ''}${text}"


def signed_money(value: Decimal, *, total: bool = False, places: int = SMALL_PLACES) -> str:
    """A change in dollars, with its sign: `+$0.21`, `-$1.05`, `$0.00`."""
    text = money(value, total=total, places=places)
    return f"+{text}" if value > 0 else text


def stated(value: Decimal) -> str:
    """An amount someone stated (a price list's rate, a budget's limit), as exact as it is stated and at least at
    cents: `$0.30`, `$0.088`, `$15.00`."""
    text = format(abs(value).normalize(), "f") if value else "0"
    whole, _, cents = text.partition(".")
    return f"{'-' if value < 0 else ''}${int(whole):,}.{cents.ljust(2, '0')}"


def rate_per_mtok(value: Decimal) -> str:
    """A price per million tokens, as exact as it is stated, at least at cents: `$0.30`, `$0.088`, `$15.00`."""
    return stated(value)


def exact(value: Decimal) -> str:
    """Money exactly as the JSON holds it, with its dollar sign: `$6.0291156`, `-$0.5`; for an HTML tooltip."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("", "-0"):
        text = "0"
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


def axis_money(value: float) -> str:
    """A chart's tick in dollars, at the precision its value needs and at least at cents: `$0.20`, `$0.025`,
    `$1,000.00` (ticks are round numbers: a float's noise past 8 decimals is dropped)."""
    text = f"{abs(value):,.8f}".rstrip("0")
    whole, _, part = text.partition(".")
    text = f"{whole}.{part.ljust(2, '0')}"
    return f"{'-' if value < 0 and text.strip('0.,') else ''}${text}"


def percent(share: float | Decimal, places: int = 1) -> str:
    """A share from 0 to 1 as a percentage: `72.9%`. A share short of whole never shows as `100.0%`, nor a share
    above none as `0.0%`: they read `>99.9%` and `<0.1%`."""
    value = float(share) * 100
    text = f"{value:.{places}f}"
    least = f"{10**-places:.{places}f}"
    if value < 100 and float(text) >= 100:
        return f">{100 - 10**-places:.{places}f}%"
    if value > 0 and float(text) == 0:
        return f"<{least}%"
    return f"{text}%"


def count(n: int) -> str:
    """A whole number with thousands separated: `8,240`."""
    return f"{n:,}"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`1 turn`, `2 turns`, `1,500 sessions` (`many`: an irregular plural)."""
    return f"{count(n)} {noun if n == 1 else many or noun + 's'}"


def signed_percent(share: float | Decimal, places: int = 1) -> str:
    """A change as a percentage with its sign: `+12.3%`, `-4.0%`, `0.0%`."""
    text = percent(-share if share < 0 else share, places)
    return f"+{text}" if share > 0 else f"-{text}" if share < 0 else text


def tokens(n: float, places: int = 1) -> str:
    """A token count in short form for axes and summaries: `950`, `4.1K`, `400K`, `1.2M` (`places`: at most so
    many decimals, `1.25M` at 2)."""
    for size, unit in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "K")):
        if abs(n) >= size:
            value = n / size
            return f"{value:.{places}f}".rstrip("0").rstrip(".") + unit
    return f"{n:.{places}f}".rstrip("0").rstrip(".") if n != int(n) else str(int(n))


def per_mtok(value: Decimal) -> str:
    """A price per million tokens worked out from list prices (a blended rate): at cents where that is exact
    (`$0.57`), else as any amount (`$0.3276`)."""
    return money(value, total=True) if value == value.quantize(_CENT) else money(value)


def markdown_text(text: str) -> str:
    """Text from an input (a session's name, a model id, a note) as markdown shows it and no more: what could
    open an HTML tag (`<` before a letter, `/`, `!` or `?`) or an entity escaped, a table's bars escaped, on one
    line, so a name cannot inject a tag or break a table (`<$0.01` stays as it is)."""
    text = text.replace("&", "&amp;").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)


_TAIL = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+$", re.MULTILINE)  # a line's closing spaces and colour codes
_CODE = re.compile(r"\x1b\[[0-9;]*m")


def trimmed(text: str) -> str:
    """`text` with no spaces or tabs at the ends of its lines (where rich pads a table's last cells and titles),
    the colour codes among them kept in order: no report's line ends in padding."""
    return _TAIL.sub(lambda m: "".join(_CODE.findall(m.group())), text)
