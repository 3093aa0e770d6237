"""The overview's keys, apart from its report types so the command line can offer them without creating those:
what rows group by (`--by`) and what orders them (`--sort`)."""

from __future__ import annotations

from typing import Literal, get_args

By = Literal["session", "hour", "day", "week", "month", "window", "model", "project", "agent", "machine"]
BY: tuple[str, ...] = get_args(By)
SORTS: tuple[str, ...] = ("cost", "time", "name", "turns", "input", "hit-rate")
WINDOW_HOURS = 5  # a usage window's length where none is asked: the agents' plans' rolling window (Claude, Kimi Code)
