"""Usage windows, the way the agents' plans meter use: one rule for every view that shows them (`kcost bill --by
window`, the status line, `kcost watch`).

A window opens at the UTC hour of a call made when none is open (as the plans count their hours) and holds every
call until its length has passed since it opened, or a call comes its length after the one before. The active
window is the last one, where it has not ended and its last call is within its length before now; its burn rate is
taken over its calls in the last hour before now (or since it opened, where that is shorter), and its limit is
given (dollars or tokens) or the cost of the dearest window that has ended (`max`).

Calls are `Spent`: a time, a cost and the tokens counted against a limit (input and output); each view makes them
from what it holds (a bill's turns, a live session's running bill).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone, tzinfo
from decimal import Decimal
from typing import NamedTuple

from kcost.model.calls import on_clock
from kcost.model.limits import Limit
from kcost.results.overview import ActiveWindow, WindowLimit

HOUR = 3600.0
RECENT = HOUR  # the burn rate is taken over the active window's calls this long before now


class Spent(NamedTuple):
    """A call as a window counts it."""

    at: float  # Unix seconds
    cost: Decimal
    tokens: int  # input and output


def starts(calls: Sequence[Spent], length: float) -> list[float]:
    """Each call's window's start, of `calls` in time order, windows `length` seconds long."""
    out: list[float] = []
    start = last = None
    for call in calls:
        at = call.at
        if start is None or last is None or at >= start + length or at - last >= length:
            start = at - at % HOUR
        out.append(start)
        last = at
    return out


def label(start: float, zone: tzinfo | None) -> str:
    """A window's name: its start, to the minute, on the zone's clock."""
    when = on_clock(start, zone)
    return f"{when.year:04d}-{when.month:02d}-{when.day:02d} {when.hour:02d}:{when.minute:02d}"


def iso(seconds: float | None, zone: tzinfo | None) -> str | None:
    """A time in `zone` (None: the machine's); one the zone's clock cannot write (past the calendar's edge there)
    in UTC, the same moment."""
    if seconds is None:
        return None
    utc = datetime.fromtimestamp(seconds, timezone.utc)
    try:
        return utc.astimezone(zone).isoformat(timespec="seconds")
    except (OverflowError, ValueError):
        return utc.isoformat(timespec="seconds")


def _open(calls: Sequence[Spent], opened: Sequence[float], length: float, now: float) -> float | None:
    """The active window's start, where one is open at `now`."""
    if not calls:
        return None
    start, last = opened[-1], calls[-1].at
    if now >= start + length or now - last >= length or now < start:
        return None
    return start


def largest(calls: Sequence[Spent], opened: Sequence[float], length: float, now: float) -> Decimal | None:
    """The cost of the dearest window that is not active at `now` (None: there is none)."""
    current = _open(calls, opened, length, now)
    costs: dict[float, Decimal] = {}
    for call, start in zip(calls, opened, strict=True):
        if start != current:
            costs[start] = costs.get(start, Decimal(0)) + call.cost
    return max(costs.values()) if costs else None


def active(calls: Sequence[Spent], opened: Sequence[float], length: float, now: float, zone: tzinfo | None,
           limit: Limit | None, cache: str) -> ActiveWindow | None:  # fmt: skip
    """The window still open at `now` among `calls` (in time order; `opened`: their windows' starts), with its
    burn rate, its projected cost and its limit (`max`: the dearest window before it); None where none is open."""
    start = _open(calls, opened, length, now)
    if start is None:
        return None
    mine = [c for c, s in zip(calls, opened, strict=True) if s == start]
    cost = sum((c.cost for c in mine), Decimal(0))
    tokens = sum(c.tokens for c in mine)
    since = max(start, now - RECENT)
    recent = [c for c in mine if c.at >= since]
    hours = Decimal(str(max(now - since, 60.0) / HOUR))  # a minute at least: no rate from an instant
    rate = sum((c.cost for c in recent), Decimal(0)) / hours
    per_minute = sum(c.tokens for c in recent) / float(hours * 60)
    left = Decimal(str((start + length - now) / HOUR))
    if limit is not None and limit.largest:
        dearest = largest(calls, opened, length, now)
        limit = None if dearest is None else Limit(usd=dearest, largest=True)
    held = None if limit is None else _held(limit, mine, cost, tokens, rate, per_minute, now, start + length, zone)
    return ActiveWindow(cache=cache, group=label(start, zone), started=iso(start, zone) or "",
                        ends=iso(start + length, zone) or "", turns=len(mine), tokens=tokens, cost=cost,
                        burn_usd_per_hour=rate, burn_tokens_per_minute=round(per_minute, 1),
                        projected_cost=cost + rate * left, limit=held)  # fmt: skip


def _held(limit: Limit, mine: list[Spent], cost: Decimal, tokens: int, rate: Decimal, per_minute: float, now: float,
          end: float, zone: tzinfo | None) -> WindowLimit | None:  # fmt: skip
    """The active window against its limit: the share used, and when it was or will be reached."""
    amount: Decimal | int | None = limit.usd if limit.usd is not None else limit.tokens
    if amount is None or amount <= 0:
        return None
    in_usd = limit.usd is not None
    used = float(cost / amount) if in_usd else tokens / int(amount)
    crossed = None
    running: Decimal | int = Decimal(0) if in_usd else 0
    for call in mine:
        running += call.cost if in_usd else call.tokens
        if running >= amount:
            crossed = call.at
            break
    hours_left: float | None
    reached: float | None
    if crossed is not None:
        reached, hours_left = crossed, 0.0
    else:
        per_hour = float(rate) if in_usd else per_minute * 60
        missing = float(amount - cost) if in_usd else float(amount - tokens)
        hours_left = missing / per_hour if per_hour > 0 else None
        reached = now + hours_left * HOUR if hours_left is not None else None
        if reached is not None and reached >= end:
            reached = None
    return WindowLimit(usd=limit.usd, tokens=limit.tokens, source="max" if limit.largest else "given",
                       used=round(used, 6), reached_at=iso(reached, zone),
                       hours_left=None if hours_left is None else round(hours_left, 4))  # fmt: skip
