"""Subscription plans: each agent's plans, their monthly price and usage windows, with the day and source each was
read from (`plans.json` beside this module, the one place they are written). A config's `plan` names one by its id,
or gives the user's own (`name`, `usd_month`, and optionally `windows_hours` and `agents`)."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

from kcost.errors import InputError
from kcost.model.frozen import frozen

PLANS_FILE = Path(__file__).with_name("plans.json")


@frozen(slots=True, kw_only=True)
class Plan:
    id: str
    provider: str
    name: str
    usd_month: Decimal
    windows_hours: tuple[int, ...]
    agents: tuple[str, ...]  # the agents whose use it covers (none: any)
    as_of: str | None  # the day its source dates itself
    read: str | None  # the day it was read from its source
    source: str


@lru_cache(maxsize=1)
def plans() -> tuple[Plan, ...]:
    """Every plan the shipped file lists, in its order."""
    data = json.loads(PLANS_FILE.read_text(encoding="utf-8"))
    return tuple(Plan(id=p["id"], provider=p["provider"], name=p["name"], usd_month=Decimal(p["usd_month"]),
                      windows_hours=tuple(p["windows_hours"]), agents=tuple(p["agents"]), as_of=p["as_of"],
                      read=p["read"], source=p["source"]) for p in data["plans"])  # fmt: skip


def plan(given: str | dict[str, Any], source: str | None = None) -> Plan:
    """A plan: one of the file's by id, or the user's own as a config gives it; `source`: where it was given."""
    if isinstance(given, str):
        for p in plans():
            if p.id == given:
                return p
        raise InputError(f"no plan {given!r}", source=source, field="plan",
                         hint="one of " + ", ".join(p.id for p in plans()) + ", or a table with name and usd_month")
    unknown = set(given) - {"name", "usd_month", "windows_hours", "agents"}
    if unknown or "usd_month" not in given:
        raise InputError("a plan of your own takes name, usd_month, windows_hours and agents" + (
            f" (not {', '.join(sorted(unknown))})" if unknown else " (usd_month is missing)"), source=source,
            field="plan")  # fmt: skip
    try:
        price = Decimal(str(given["usd_month"]))
    except InvalidOperation:
        price = Decimal(-1)
    if not price.is_finite() or price < 0:
        raise InputError(f"not a monthly price: {given['usd_month']!r}", source=source, field="plan.usd_month")
    return Plan(id="own", provider="", name=str(given.get("name") or "your plan"), usd_month=price,
                windows_hours=tuple(int(h) for h in given.get("windows_hours", (5, 168))),
                agents=tuple(str(a) for a in given.get("agents", ())), as_of=None, read=None,
                source=source or "your config")  # fmt: skip
