"""Which function renders which report in which format: one table, `RENDERERS`, from (report kind, format) to
the `module:function` that writes it, imported only when that format is asked for.

A report kind is a short name (`bill`, `explain`, `quote`, `compare`, `check`, `diff`, `trace`, `selfhost`, `prices`); a
format one of table, json, jsonl, csv, markdown, junit, html. Every render function takes the report and a `View`
(how to show it) and returns text. Listing the formats (`formats`, for `--format`) imports nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

from kcost.model.frozen import frozen

# The report each kind renders: bill `BillReport`, explain a list of `Explanation`, quote `Quote`, compare
# `CompareReport`, check `CheckOutcome`, diff `DiffReport`, trace `TraceReport`, selfhost
# `SelfhostReport`, prices `PriceListing`.
# Formats are listed in the order `--format` offers them.
RENDERERS: dict[str, dict[str, str]] = {
    "bill": {
        "table": "kcost.render.table:render_table",
        "json": "kcost.render.data:render_json",
        "jsonl": "kcost.render.data:render_jsonl",
        "csv": "kcost.render.data:render_csv",
        "markdown": "kcost.render.markdown:render_markdown",
        "html": "kcost.render.bill_html:bill_html",
    },
    "explain": {
        "table": "kcost.render.explain:explain_table",
        "json": "kcost.render.data:render_json",
        "markdown": "kcost.render.explain:explain_markdown",
        "html": "kcost.render.explain:explain_html",
    },
    "quote": {
        "table": "kcost.render.quote:quote_table",
        "json": "kcost.render.data:render_json",
        "markdown": "kcost.render.quote:quote_markdown",
    },
    "compare": {
        "table": "kcost.render.compare:compare_table",
        "json": "kcost.render.data:render_json",
        "markdown": "kcost.render.compare:compare_markdown",
        "html": "kcost.render.compare:compare_html",
    },
    "check": {
        "table": "kcost.render.check:check_table",
        "json": "kcost.render.check:check_json",
        "markdown": "kcost.render.check:check_markdown",
        "junit": "kcost.render.check:junit",
        "html": "kcost.render.check:check_html",
    },
    "diff": {
        "table": "kcost.render.diff:diff_table",
        "json": "kcost.render.diff:diff_json",
        "markdown": "kcost.render.diff:diff_markdown",
        "html": "kcost.render.diff:diff_html",
    },
    "overview": {
        "table": "kcost.render.overview:overview_table",
        "json": "kcost.render.data:render_json",
        "jsonl": "kcost.render.overview:overview_jsonl",
        "csv": "kcost.render.overview:overview_csv",
        "markdown": "kcost.render.overview:overview_markdown",
        "html": "kcost.render.overview:overview_html",
    },
    "forecast": {
        "table": "kcost.render.forecast:forecast_table",
        "json": "kcost.render.data:render_json",
        "markdown": "kcost.render.forecast:forecast_markdown",
        "html": "kcost.render.forecast:forecast_html",
    },
    "plan": {
        "table": "kcost.render.plan:plan_table",
        "json": "kcost.render.data:render_json",
        "markdown": "kcost.render.plan:plan_markdown",
    },
    "trace": {
        "table": "kcost.render.trace:trace_table",
        "json": "kcost.render.data:render_json",
        "html": "kcost.render.trace:trace_html",
    },
    "selfhost": {
        "table": "kcost.render.selfhost:selfhost_table",
        "json": "kcost.render.data:render_json",
        "markdown": "kcost.render.selfhost:selfhost_markdown",
        "html": "kcost.render.selfhost:selfhost_html",
    },
    "prices": {
        "table": "kcost.render.prices:prices_table",
        "json": "kcost.render.prices:prices_json",
        "markdown": "kcost.render.prices:prices_markdown",
    },
    "formats": {
        "table": "kcost.render.formats:formats_table",
        "json": "kcost.render.data:render_json",
        "markdown": "kcost.render.formats:formats_markdown",
    },
}


# The formats people read, on a terminal or a page: none holds an input's control character (`kcost.render.printable`
# escapes them; the others, JSON, JSON Lines, CSV and JUnit, keep every text exact)
HUMAN = frozenset({"table", "markdown", "html"})


@frozen(slots=True)
class View:
    """How a report is shown: `width` and `color` for the terminal table, `summary` (no per-turn rows for the
    bill's table and markdown; for explain and compare over several sessions, the summary without each session's
    part, `--sessions`), `numbers` (money as JSON numbers) for JSON and JSONL, `only_changed` (leave out what did
    not change) for a diff, `verbose` (routine notes too) for the human formats of a bill, `detail` (explain's
    turns, `check --all`'s passes, `selfhost --detail`'s figures and sources) and `top` for explain's."""

    width: int = 100
    color: bool = False
    summary: bool = False
    numbers: bool = False
    only_changed: bool = False
    verbose: bool = False
    detail: bool = False  # explain: every turn's misses under the answer
    top: int | None = None  # explain: the N fixes that save most (and, with `detail`, the N costliest turns)


def formats(kind: str) -> tuple[str, ...]:
    """The formats a report kind renders to, in the order `--format` offers them."""
    return tuple(RENDERERS[kind])


def render(kind: str, report: Any, fmt: str, view: View | None = None) -> str:
    """`report` (of `kind`) as `fmt`; an unknown kind or format is a `KeyError` naming it. No control character
    of an input's text reaches a human format (`kcost.render.printable`); the machine formats keep each exact."""
    module, _, name = RENDERERS[kind][fmt].partition(":")
    write = getattr(importlib.import_module(module), name)
    if fmt not in HUMAN:
        text: str = write(report, view or View())
        return text
    # deferred: start-up: listing the formats imports nothing
    from kcost.render.printable import shown, written

    return written(write(shown(report, fmt), view or View()), fmt)
