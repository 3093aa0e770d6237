"""The overview (`kcost bill --by ...`, and a bill of several sessions): one row per group and the total, as a
table, markdown, JSON Lines or CSV (its JSON is the report as it is, `kcost.render.data`).

Money and numbers go through `kcost.render.display`, so a session's cost reads as it does in its own bill.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from kcost.render import svg
from kcost.render.display import count, markdown_text, money, percent, plural
from kcost.render.fit import Column, fitted
from kcost.render.html import page, table
from kcost.results.common import to_data
from kcost.results.overview import ActiveWindow, OverviewReport, OverviewRow, OverviewTotal

if TYPE_CHECKING:
    from kcost.render.registry import View

_FIRST = {"session": "session", "hour": "hour", "day": "day", "week": "week", "month": "month", "window": "window",
          "model": "model", "project": "project", "agent": "agent", "machine": "machine"}  # fmt: skip
_FIELDS = ("cache", "group", "model", "sessions", "agents", "models", "started", "ended", "turns", "input_tokens",
           "hit_tokens", "miss_tokens", "output_tokens", "hit_rate", "input_cost", "output_cost", "cost",
           "source")  # fmt: skip


def _when(row: OverviewRow) -> str:
    """The start as a person reads it: the day and minute, in the report's time zone."""
    return row.started[:16].replace("T", " ") if row.started else ""


def _cells(report: OverviewReport, row: OverviewRow) -> list[str]:
    name = f"  {row.model}" if row.model is not None else row.group
    if row.model is None and any(a.group == row.group and a.cache == row.cache for a in report.active):
        name += " (active)"
    models = row.model or ", ".join(row.models)
    cells = [name]
    if report.by != "agent":
        cells.append(", ".join(row.agents))
    if report.by != "model":
        cells.append(models)
    if report.by in ("session", "project", "agent", "model", "machine"):
        cells.append(_when(row))
    if report.by != "session":
        cells.append(count(row.sessions))
    # a row's cost is a session's (or a group's) total: written as its own bill writes its total
    return [*cells, count(row.turns), count(row.input_tokens), percent(row.hit_rate), money(row.cost, total=True)]


def _head(report: OverviewReport) -> list[tuple[str, bool, int]]:
    """(name, holds a number, drop order) of each column."""
    head = [(_FIRST[report.by], False, 0)]
    if report.by != "agent":
        head.append(("agent", False, 2))
    if report.by != "model":
        head.append(("model", False, 1))
    if report.by in ("session", "project", "agent", "model", "machine"):
        head.append(("start" if report.by == "session" else "first", False, 3))
    if report.by != "session":
        head.append(("sessions", True, 0))
    return [*head, ("turns", True, 0), ("input", True, 4), ("hit rate", True, 0), ("cost", True, 0)]


def _total_cells(report: OverviewReport, total: OverviewTotal) -> list[str]:
    head = _head(report)
    cells = ["total"] + [""] * (len(head) - 5)
    if report.by != "session":
        cells[-1] = count(total.sessions)
    return [*cells, count(total.turns), count(total.input_tokens), percent(total.hit_rate),
            money(total.cost, total=True)]  # fmt: skip


def _caption(report: OverviewReport, total: OverviewTotal) -> str:
    by = f"by {report.window_hours}-hour window" if report.by == "window" else f"by {report.by}"
    parts = [plural(total.sessions, "session"), by, f"under {total.cache}", _money(report)]
    if report.since or report.until:
        parts.append(f"from {report.since or 'the start'} to {report.until or 'now'}")
    if report.by in ("hour", "day", "week", "month", "window") or report.since or report.until:
        parts.append(f"times in {report.timezone}")
    return " · ".join(parts)


def _clock(iso: str) -> str:
    """A time as a person reads it: the day and minute."""
    return iso[:16].replace("T", " ")


def active_lines(report: OverviewReport, cache: str) -> list[str]:
    """What the active window says under a cache model's table: its cost so far, burn rate, projection, limit."""
    lines = []
    for a in report.active:
        if a.cache != cache:
            continue
        lines.append(f"active window {_clock(a.started)} to {_clock(a.ends)[11:]}: {money(a.cost, total=True)} so far "
                     f"({plural(a.turns, 'call')}, {count(a.tokens)} tokens) · burning "
                     f"{money(a.burn_usd_per_hour, total=True)}/h, {count(round(a.burn_tokens_per_minute))} tokens/min "
                     f"· {money(a.projected_cost, total=True)} by {_clock(a.ends)[11:]} at this rate")  # fmt: skip
        if a.limit is not None:
            lines.append(_limit_line(a))
    return lines


def _limit_line(a: ActiveWindow) -> str:
    held = a.limit
    assert held is not None
    amount = money(held.usd, total=True) if held.usd is not None else f"{count(held.tokens or 0)} tokens"
    source = " (the dearest past window)" if held.source == "max" else ""
    used = f"limit {amount}{source}: {percent(held.used, 0)} used"
    if held.hours_left == 0 and held.reached_at is not None:
        return f"{used}, reached at {_clock(held.reached_at)[11:]}"
    if held.reached_at is not None:
        return f"{used}, reached at {_clock(held.reached_at)[11:]} at this rate"
    return f"{used}, not reached before the window ends at this rate"


def _money(report: OverviewReport) -> str:
    """What the costs are: one model's prices (K3's, unless `--model` says), or each call's logged model's."""
    priced = list(report.prices.rates)
    if len(priced) == 1:
        return f"cost at {priced[0]} prices"
    return f"cost at each call's logged model's prices ({len(priced)} models)"


def overview_table(report: OverviewReport, view: View) -> str:
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.text import Text

    # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
    from kcost.render.terminal import console as make_console

    console, buffer = make_console(view.width, view.color)
    head = _head(report)
    columns = [Column(name, number=number, drop=drop, middle=n == 0) for n, (name, number, drop) in enumerate(head)]
    for total in report.totals:
        rows: list[list[str | Text]] = [list(_cells(report, r)) for r in report.rows if r.cache == total.cache]
        last: list[str | Text] = [Text(c, style="bold") for c in _total_cells(report, total)]
        console.print(fitted(columns, [*rows, last], view.width, title=_caption(report, total)))
        for line in active_lines(report, total.cache):
            console.print(line, highlight=False)
        console.print()
    if report.left_out:
        console.print(f"{plural(report.left_out, 'session')} outside --since/--until left out", style="dim")
    return buffer.getvalue().rstrip("\n") + "\n"


def overview_markdown(report: OverviewReport, view: View) -> str:
    out: list[str] = []
    head = _head(report)
    for total in report.totals:
        out += [f"**{_escape(_caption(report, total))}**", "", "| " + " | ".join(name for name, _, _ in head) + " |",
                "|" + "|".join("---:" if number else "---" for _, number, _ in head) + "|"]  # fmt: skip
        for r in report.rows:
            if r.cache == total.cache:
                out.append("| " + " | ".join(_escape(c) for c in _cells(report, r)) + " |")
        out.append("| " + " | ".join(f"**{_escape(c)}**" if c else "" for c in _total_cells(report, total)) + " |")
        out.append("")
        out += [f"{_escape(line)}  " for line in active_lines(report, total.cache)]
        if report.active:
            out.append("")
    if report.left_out:
        out += [f"{plural(report.left_out, 'session')} outside --since/--until left out.", ""]
    return "\n".join(out)


def _escape(text: str) -> str:
    return markdown_text(text)


def overview_jsonl(report: OverviewReport, view: View) -> str:
    """One JSON line a row, then one a total: each line whole, for `jq -c` and line tools."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import orjson

    lines = [orjson.dumps({"record": "row", **to_data(r, view.numbers)}).decode() for r in report.rows]
    lines += [orjson.dumps({"record": "total", **to_data(t, view.numbers)}).decode() for t in report.totals]
    return "\n".join(lines) + "\n"


def overview_csv(report: OverviewReport, view: View) -> str:
    """One CSV line a row, exact decimals; lists joined by `;`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_FIELDS)

    for r in report.rows:
        data = to_data(r)
        writer.writerow([";".join(v) if isinstance(v := data.get(f), list) else "" if v is None else v
                         for f in _FIELDS])  # fmt: skip
    return out.getvalue()


def overview_html(report: OverviewReport, view: View) -> str:
    """The rows as a chart of their costs and a sortable table, one of each a cache model, with the total."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    body = []
    head = [name for name, _, _ in _head(report)]
    for total in report.totals:
        rows = [r for r in report.rows if r.cache == total.cache]
        body.append(f"<h2>{escape(_caption(report, total))} · total {escape(money(total.cost, total=True))}</h2>")
        groups = [r for r in rows if r.model is None]
        body.append(svg.hbars(f"Cost by {report.by}", f"Each {report.by}'s cost under {total.cache}.",
                              [(r.group, float(r.cost)) for r in groups[:40]]))  # fmt: skip
        cells = [[(c, _sort_value(report, r, i)) for i, c in enumerate(_cells(report, r))] for r in rows]
        cells.append([(c, None) for c in _total_cells(report, total)])
        body.append(table(head, cells, text_columns=tuple(i for i, (_, number, _) in enumerate(_head(report))
                                                          if not number)))  # fmt: skip
    if report.left_out:
        body.append(f'<p class="note">{plural(report.left_out, "session")} outside --since/--until left out</p>')
    return page(f"kcost overview by {report.by}", f"{report.generator} · prices: {report.prices.name}", body)


def _sort_value(report: OverviewReport, row: OverviewRow, column: int) -> float | None:
    """What a numeric column sorts by: its exact figure, not its display."""
    values = [row.sessions if report.by != "session" else None, row.turns, row.input_tokens, row.hit_rate,
              float(row.cost)]  # fmt: skip
    numeric = [v for v in values if v is not None]
    offset = len(_head(report)) - len(numeric)
    return float(numeric[column - offset]) if column >= offset else None
