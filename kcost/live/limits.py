"""The usage window beside a live session: the active window's spend against its limit, the time left until the
limit at the burn rate, and a warning as the window reaches each share of the limit, said once each.

A window spans every session (`kcost.analysis.windows`), while a status line sees one. So each live view with a
limit set (`--limit`, the config's `[window] limit`) keeps its session's calls of the last week in the ledger
(`Figures.recent`, the `calls` rows the status line and `watch` write), and the window is made from the calls of
every session kept there, each as a live view last billed it, with those of the sessions this view follows as they
stand. Sessions no such live view followed are not in it; without a ledger, only those this view follows are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kcost.model.frozen import frozen

if TYPE_CHECKING:
    from kcost.api.settings import Settings
    from kcost.live.clock import Figures
    from kcost.results.overview import ActiveWindow

WARNED = "warned"  # the kind of the ledger's row that holds which shares of the window were warned of


@frozen
class Standing:
    """The active window at a look: its figures and limit, and the shares of the limit it has reached."""

    hours: int
    limit: str  # the limit as a person reads it: `$12.50`, `2,000,000 tokens`, `max`
    window: ActiveWindow | None  # None: no window is open
    reached: tuple[Decimal, ...]  # the warning shares the window has reached, lowest first

    def warnings(self, shares: Sequence[Decimal] | None = None) -> list[str]:
        """The warnings of `shares` (None: every share reached), as sentences."""
        return [self._warning(s) for s in (self.reached if shares is None else shares)]

    def _warning(self, share: Decimal) -> str:
        from kcost.render.display import percent

        name = f"the {self.hours}h window's limit ({self.limit})"
        if share >= 1:
            return f"{name} is reached"
        return f"{percent(share, 0)} of {name} is used"


def calls(figures: Iterable[Figures], others: Iterable[tuple[float, Any, int]]) -> list[tuple[float, Any, int]]:
    """Every call of the sessions' figures and of `others` (time, cost, tokens), in time order."""
    return sorted([*(c for f in figures for c in f.recent), *others], key=lambda c: c[0])


def kept(ledger: str | None, skip: Iterable[str]) -> list[tuple[float, Any, int]]:
    """The calls the ledger keeps of each log a live view followed with a limit, but the logs of `skip` (keys): time,
    cost (its exact text: made a number by `standing`, for the calls it counts) and tokens."""
    import orjson

    from kcost.ledger import live

    if ledger is None:
        return []
    out: list[tuple[float, Any, int]] = []
    left = set(skip)
    for log, data in live.every(ledger, "calls").items():
        if log in left:
            continue
        try:
            out += [(float(at), cost, int(tokens)) for at, cost, tokens in orjson.loads(data) if isinstance(cost, str)]
        except (ValueError, TypeError):
            continue  # a row of another kcost: its calls are not counted
    return out


def standing(spent: Sequence[tuple[float, Any, int]], settings: Settings, now: float) -> Standing | None:
    """The active window of `spent` (in time order) at `now` under the settings' window and limit (None: no limit is
    set), with the warning shares it reached."""
    from kcost.analysis.windows import HOUR, Spent, active, starts
    from kcost.model.limits import WARN
    from kcost.results.grouping import WINDOW_HOURS

    window = settings.window
    if window.limit is None:
        return None
    hours = window.hours or WINDOW_HOURS
    length = hours * HOUR
    first = 0  # a window opens anew after a gap of its length: the calls before the last such gap change nothing
    if not window.limit.largest:  # (but `max`, the dearest window of them all)
        for n in range(len(spent) - 1, 0, -1):
            if spent[n][0] - spent[n - 1][0] >= length:
                first = n
                break
    made = []
    for at, cost, tokens in spent[first:]:
        with contextlib.suppress(ArithmeticError, ValueError, TypeError):  # a kept cost that is no number: left out
            made.append(Spent(at, cost if isinstance(cost, Decimal) else Decimal(cost), tokens))
    found = active(made, starts(made, length), length, now, settings.zone, window.limit, settings.cache.label)
    share = found.limit.used if found is not None and found.limit is not None else 0.0
    reached = tuple(s for s in sorted(set(window.warn or WARN)) if share >= s)
    return Standing(hours=hours, limit=_limit(window.limit), window=found, reached=reached)


def news(stand: Standing, held: dict[str, object]) -> tuple[list[Decimal], dict[str, object]]:
    """The shares the window reached that were not warned of yet (`held`: what the last warning kept, `{}` where
    none did), and what to keep now (each share is warned of once a window and limit)."""
    shares, name = held.get("shares"), _key(stand)
    warned: list[Decimal] = []
    if held.get("key") == name and isinstance(shares, list):
        with contextlib.suppress(ArithmeticError, ValueError):
            warned = [Decimal(str(s)) for s in shares]
    return [s for s in stand.reached if s not in warned], {"key": name, "shares": [str(s) for s in stand.reached]}


def _key(stand: Standing) -> str:
    """What names a window and its limit, for remembering which shares of it were warned of: its start as a moment
    (not as a clock in some zone shows it)."""
    from datetime import datetime

    started = f"{datetime.fromisoformat(stand.window.started).timestamp():.0f}" if stand.window is not None else ""
    amount = stand.window.limit if stand.window is not None else None
    return f"{stand.hours}|{started}|{stand.limit}|{amount.usd if amount else ''}|{amount.tokens if amount else ''}"


def _limit(limit: object) -> str:
    from kcost.model.limits import Limit
    from kcost.render.display import count, money

    assert isinstance(limit, Limit)
    if limit.largest:
        return "max"
    return money(limit.usd, total=True) if limit.usd is not None else f"{count(limit.tokens or 0)} tokens"


def window_line(stand: Standing, *, color: bool = False, width: int = 80) -> str:
    """`5h window $8.40 of $12.50 (67%) · $2.10/h · limit in 1h46m · ends 19:00`, as many parts as fit `width`."""
    from kcost.live.clock import duration
    from kcost.render.display import money, percent, tokens

    head = f"{stand.hours}h window"
    a = stand.window
    if a is None:
        return f"{head}: none open · limit {stand.limit}"
    held = a.limit

    def clock(iso: str) -> str:  # a window longer than a day says the day too
        return iso[11:16] if stand.hours <= 24 else iso[5:16].replace("T", " ")

    ends = clock(a.ends)
    if held is None:  # `max` with no window before this one
        parts = [f"{head} {money(a.cost, total=True)}", f"{money(a.burn_usd_per_hour, total=True)}/h",
                 f"{money(a.projected_cost, total=True)} by {ends}", "no past window for max"]  # fmt: skip
    else:
        if held.usd is not None:
            spent = f"{money(a.cost, total=True)} of {money(held.usd, total=True)}"
            rate = f"{money(a.burn_usd_per_hour, total=True)}/h"
        else:
            spent = f"{tokens(a.tokens)} of {tokens(held.tokens or 0)} tokens"
            rate = f"{tokens(a.burn_tokens_per_minute)} tokens/min"
        used = f"{head} {spent} ({percent(held.used, 0)})"
        if color and stand.reached:
            used = f"\x1b[{'31' if held.used >= 1 else '33'}m{used}\x1b[0m"
        if held.hours_left == 0 and held.reached_at is not None:
            parts = [used, f"reached {clock(held.reached_at)}", f"ends {ends}"]
        elif held.reached_at is not None and held.hours_left is not None:
            parts = [used, rate, f"limit in {duration(held.hours_left * 3600)}", f"ends {ends}"]
        else:
            parts = [used, rate, f"not reached by {ends}"]
    text = parts[0]
    for part in parts[1:]:
        if _width(f"{text} · {part}") > width:
            break
        text = f"{text} · {part}"
    return text


def _width(text: str) -> int:
    import re

    return len(re.sub(r"\x1b\[[0-9;]*m", "", text))
