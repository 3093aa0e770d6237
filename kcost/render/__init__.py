"""Renderers: a report in, text out; the CLI decides where the text goes. Which function writes which report in
which format is `kcost.render.registry`; this face keeps the bill's formats as an enum and `render` for a bill.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kcost.results import BillReport


class Format(str, Enum):
    TABLE = "table"
    JSON = "json"
    JSONL = "jsonl"
    CSV = "csv"
    MARKDOWN = "markdown"
    HTML = "html"


def render(
    report: BillReport,
    fmt: Format,
    *,
    width: int = 100,
    color: bool = False,
    summary: bool = False,
    numbers: bool = False,
) -> str:
    """A bill as `fmt`. `width`, `color` and `summary` (no per-turn rows) apply to the human formats, `numbers`
    (money as JSON numbers) to JSON and JSONL."""
    from kcost.render import registry

    view = registry.View(width=width, color=color, summary=summary, numbers=numbers)
    return registry.render("bill", report, Format(fmt).value, view)
