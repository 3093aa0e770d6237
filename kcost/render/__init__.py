"""Renderers: a bill report in, text out. The CLI decides where the text goes."""

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
    """`report` as `fmt`. `width`, `color` and `summary` (no per-turn rows) apply to the human formats, `numbers`
    (money as JSON numbers) to JSON and JSONL."""
    if fmt is Format.TABLE:
        from kcost.render.table import render_table

        return render_table(report, width=width, color=color, summary=summary)
    if fmt is Format.MARKDOWN:
        from kcost.render.markdown import render_markdown

        return render_markdown(report, summary=summary)
    if fmt is Format.HTML:
        from kcost.render.html import bill_html

        return bill_html(report)
    from kcost.render import data

    if fmt is Format.CSV:
        return data.render_csv(report)
    return (data.render_json if fmt is Format.JSON else data.render_jsonl)(report, numbers)
