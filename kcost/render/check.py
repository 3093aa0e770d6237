"""Reports of `kcost check`: a terminal table, JSON, markdown for a pull-request comment, JUnit XML for any CI
system, an HTML page, and GitHub Actions annotations."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from rich.text import Text

from kcost.render import svg
from kcost.render.diff import MARKDOWN_LIMIT, Blocks, cell, diff_blocks, diff_body, lines_size
from kcost.render.display import count, exact, money, percent, plural, stated
from kcost.render.fit import Cell, Column, fitted
from kcost.render.html import figures, page, section, table, usd_figure
from kcost.render.terminal import console as make_console
from kcost.results.check import TOTAL, CheckOutcome, CheckReport, Result
from kcost.results.common import dump_json

if TYPE_CHECKING:
    from kcost.render.registry import View

_BASELINE = re.compile(r"\(\$(-?[\d.]+) -> \$(-?[\d.]+)\)")  # "(baseline -> now)" in an increase's message


def check_json(outcome: CheckOutcome, view: View) -> str:
    """The check report alone (the diff and the causes are the markdown's and the HTML's)."""
    return dump_json(outcome.report, view.numbers) + "\n"


FOLD = 10  # past this many budgets held, the table counts them (`--all` lists them)


def check_table(outcome: CheckOutcome, view: View) -> str:
    """The verdict, the failures (the furthest past its limit first), then the budgets held, folded to a count
    past `FOLD` of them unless `--all` (`view.detail`) asks for each, and the total."""
    report, width = outcome.report, view.width
    console, out = make_console(width, view.color)
    verdict = "PASS" if report.passed else f"FAIL: {plural(report.failures, 'budget')} exceeded"
    if report.failures > 1:
        verdict += ", the furthest over first"
    console.print(Text(f"kcost check · {verdict} · cache {report.cache.label}",
                       style="bold green" if report.passed else "bold red"))  # fmt: skip
    if not report.results:
        console.print("no budgets set: give --max-session-usd and friends, or a [budgets] table in kcost.toml")
        return out.getvalue()
    held = [r for r in report.results if r.passed]
    folded = len(held) > FOLD and not view.detail
    listed = [r for r in report.results if not (folded and r.passed)]
    columns = [Column("", number=False), Column("session", number=False), Column("budget", number=False),
               Column("limit"), Column("measured")]  # fmt: skip
    rows: list[list[Cell]] = []
    for r in listed:  # a failing row red, a passing one green (where colour is on)
        style = "red" if not r.passed else "green"
        mark = Text("FAIL", style="bold red") if not r.passed else Text("ok", style="green")
        rows.append([mark, *(Text(c, style=style) for c in (r.session, r.budget, *shown(r)))])
    if rows:
        console.print(fitted(columns, rows, width))
    if folded:
        console.print(Text(f"ok   {plural(len(held), 'budget')} held (--all lists them)", style="green"))
    total = Text("total: ")
    total.append(money(report.total.total, total=True), style="bold")
    total.append(f" for {plural(report.total.turns, 'turn')}, {percent(report.total.hit_rate)} hits")
    console.print(total)
    return out.getvalue()


def _figure(budget: str, value: Decimal, *, limit: bool = False, places: int | None = None) -> str:
    """A budget's figure as every human format writes it: a limit in money as it was stated; a session's or the
    total's cost as a total; a turn's cost, an increase or a blended price as an amount; a hit rate and an
    increase in percent as percentages. `places`: more decimals, to tell a measured value from its limit."""
    if budget.endswith("usd") or budget.endswith("mtok"):
        if limit:
            return stated(value)
        if places is not None:
            return money(value, places=places) if value < 1 else exact(value)
        return money(value, total=budget in ("max-session-usd", "max-total-usd"))
    share = value / 100 if budget.endswith("pct") else value
    if limit:  # as exact as it was stated: `80.0%`, `98.95%`
        text = f"{(share * 100).normalize():f}"
        return f"{text}{'' if '.' in text else '.0'}%"
    return percent(share, 1 if places is None else places)


def shown(r: Result) -> tuple[str, str]:
    """(limit, measured) as shown; where rounding would make the measured value read as on the other side of its
    limit (a failing figure as within, a passing one as over), with as many decimals as it takes to read right."""
    limit, value = _figure(r.budget, r.limit, limit=True), _figure(r.budget, r.value)
    for places in range(2, 11):
        side = _side(value, r.budget, r.limit)
        if (side <= 0 if r.budget.startswith("max") else side >= 0) == r.passed:
            break
        value = _figure(r.budget, r.value, places=places)
    return limit, value


def _side(text: str, budget: str, limit: Decimal) -> int:
    """Whether the figure `text` reads below (-1), at (0) or above (1) `limit`."""
    number = Decimal(text.strip("$%<>").replace("$", "").replace(",", ""))
    if text.endswith("%") and not budget.endswith("pct"):
        number /= 100  # a hit rate shown in percent, its limit a share
    return (number > limit) - (number < limit)


def message(r: Result) -> str:
    """The result's message with its figures as `shown` writes them (the JSON keeps the exact message)."""
    verdict = "within" if r.passed else "over" if r.budget.startswith("max") else "under"
    exact_limit, exact_value = _exact(r.budget, r.limit), _exact(r.budget, r.value.normalize())
    tail = f" {exact_value} is {verdict} the {r.budget} budget of {exact_limit}"
    if not r.message.endswith(tail):  # not the shape this knows: as it is
        return r.message
    limit, value = shown(r)
    head = _BASELINE.sub(lambda m: f"({money(Decimal(m[1]), total=True)} -> {money(Decimal(m[2]), total=True)})",
                         r.message[: -len(tail)])  # the baseline's total and this one's, as totals  # fmt: skip
    return f"{head} {value} is {verdict} the {r.budget} budget of {limit}"


def _exact(budget: str, value: Decimal) -> str:
    """A figure as the check's message holds it (`kcost.analysis.checks`)."""
    if budget.endswith("usd") or budget.endswith("mtok"):
        return f"${value:f}"
    return f"{value:f}%" if budget.endswith("pct") else f"{value:f}"


def check_markdown(outcome: CheckOutcome, view: View) -> str:
    """For a pull-request comment: the verdict, the totals, what failed, what changed, the top causes; the rest
    folded away, and the whole under `MARKDOWN_LIMIT` characters (saying how many rows it left out)."""
    report, diff, causes = outcome.report, outcome.diff, outcome.causes
    icon = "✅" if report.passed else "❌"
    head = [
        f"## {icon} kcost: {'all budgets hold' if report.passed else plural(report.failures, 'budget') + ' exceeded'}",
        "",
        f"Cache model `{report.cache.label}`, prices {report.prices.name} ({report.prices.effective}).",
        "",
        "| total | turns | hit rate | input | output | blended /M |",
        "|--:|--:|--:|--:|--:|--:|",
        f"| {money(report.total.total, total=True)} | {count(report.total.turns)} | {percent(report.total.hit_rate)} | "
        f"{money(report.total.input_cost)} | {money(report.total.output_cost)} | "
        f"{money(report.total.blended_input_per_mtok)} |",
        "",
    ]
    failed = [r for r in report.results if not r.passed]
    held = [r for r in report.results if r.passed]
    budget_head = ["| | session | budget | limit | measured |", "|---|---|---|--:|--:|"]

    def rows(results: Sequence[Result]) -> list[str]:
        return [
            f"| {'❌' if not r.passed else '✅'} | {cell(r.session)} | `{r.budget}` | {' | '.join(shown(r))} |"
            for r in results
        ]

    tail = []
    if causes:
        tail += ["### Top miss causes", "", "| cause | turns | cost | fix |", "|---|--:|--:|---|"]
        tail += [f"| {c.cause} | {count(c.turns)} | {money(c.cost)} | {cell(c.fix)} |" for c in causes[:5]]
        tail.append("")
    blocks = Blocks(MARKDOWN_LIMIT - lines_size(head) - lines_size(tail))
    if failed:
        blocks.table("### Budgets exceeded", budget_head, rows(failed))
    if diff is not None:
        diff_blocks(diff, blocks, heading="### Against the baseline")
    if held:
        blocks.table(f"{plural(len(held), 'budget')} held", budget_head, rows(held), folded=True)
    return "\n".join([*head, *blocks.lines(), *tail])


def junit(outcome: CheckOutcome, view: View) -> str:
    """One test suite per session file (and one for the total), one test case per budget."""
    report = outcome.report
    suites = ET.Element("testsuites", name="kcost", tests=str(len(report.results)), failures=str(report.failures))
    by_session: dict[str, list[Result]] = {}
    for r in report.results:
        by_session.setdefault(r.source or TOTAL, []).append(r)
    order = sorted(by_session, key=lambda s: (s == TOTAL, s))
    for where in order:
        results = by_session[where]
        failures = sum(not r.passed for r in results)
        name = where if where == TOTAL else f"{results[0].session} ({where})"
        suite = ET.SubElement(suites, "testsuite", name=name, tests=str(len(results)), failures=str(failures),
                              errors="0", skipped="0")  # fmt: skip
        for r in sorted(results, key=lambda r: r.budget):
            case = ET.SubElement(suite, "testcase", classname=f"kcost.{where}", name=r.budget)
            if r.source:
                case.set("file", r.source)
            if not r.passed:
                failure = ET.SubElement(case, "failure", message=message(r), type="BudgetExceeded")
                failure.text = message(r)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def check_html(outcome: CheckOutcome, view: View) -> str:
    """The summary first: the verdict, the totals and the budgets exceeded (the furthest over first); then each
    budget against its limit as a chart, its sessions in the table's order, a bar red where it is exceeded and
    green where it holds, hit rates in percent as the tables write them; the budgets held, folded; and the diff
    against the baseline when there is one."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    report, changes = outcome.report, outcome.diff
    failed = [r for r in report.results if not r.passed]
    held = [r for r in report.results if r.passed]
    verdict = "passed" if report.passed else f"failed: {plural(report.failures, 'budget')} exceeded"
    summary = [f'<p class="{"pass" if report.passed else "fail"}">{escape(verdict)}</p>']
    summary.append(
        figures(
            [
                usd_figure("total", report.total.total, "session-total"),
                ("hit rate", percent(report.total.hit_rate), None),
                ("exceeded", count(len(failed)), None),
                ("held", count(len(held)), None),
            ]
        )
    )
    if failed:
        summary.append("<h2>Budgets exceeded, the furthest over first</h2>")
        summary.append(_results_table(failed))
    body = [section(summary)]
    order = {name: i for i, name in enumerate(dict.fromkeys(r.session for r in report.results))}
    for budget in dict.fromkeys(r.budget for r in report.results):
        results = [r for r in report.results if r.budget == budget]
        rows = sorted([r for r in results if r.session != TOTAL] or results, key=lambda r: order[r.session])
        body.append(_budget_chart(budget, rows))
    if held:
        body.append(f"<details><summary>{escape(plural(len(held), 'budget'))} held</summary>")
        body.append(_results_table(held))
        body.append("</details>")
    if changes is not None:
        body.append(diff_body(changes))
    return page("kcost check", f"{report.generator} · cache {report.cache.label}", body)


def _budget_chart(budget: str, rows: Sequence[Result]) -> str:
    """One budget against its limit: a bar a session (red exceeded, green held; a 0 a stub at the axis), the
    limit a dashed line named in the legend; a hit rate in percent, money in dollars, as the tables write them."""
    share = budget == "min-hit-rate"  # held as a share, shown in percent
    unit = "%" if share or budget.endswith("pct") else "$"
    scale = 100.0 if share else 1.0
    values = [float(r.value) * scale for r in rows]
    return svg.stacked_bars(
        f"{budget} against its limit",
        f"Each session's {budget} and the limit {shown(rows[0])[0]}: red where it is exceeded, green where it holds.",
        [r.session for r in rows],
        [
            svg.Part("exceeded", [0.0 if r.passed else v for r, v in zip(rows, values, strict=True)], "var(--bad)"),
            svg.Part("held", [v if r.passed else 0.0 for r, v in zip(rows, values, strict=True)], "var(--good)"),
        ],
        limit=float(rows[0].limit) * scale,
        limit_name=f"limit {shown(rows[0])[0]}",
        unit=unit,
        y_label=budget,
        stubs=["var(--good)" if r.passed else "var(--bad)" for r in rows],
    )


def _results_table(results: Sequence[Result]) -> str:
    return table(
        ["session", "budget", "value", "limit", "verdict", "message"],
        [
            [
                (r.session, None),
                (r.budget, None),
                (shown(r)[1], float(r.value), f"{r.value:f}"),
                (shown(r)[0], float(r.limit), f"{r.limit:f}"),
                ("pass" if r.passed else "FAIL", None),
                (message(r), None, r.message),
            ]
            for r in results
        ],
        text_columns=(0, 1, 4, 5),
    )


def github_annotations(report: CheckReport) -> str:
    """GitHub Actions `::error` workflow commands, one per failed budget, naming the session file."""
    lines = []
    for r in report.results:
        if r.passed:
            continue
        where = f"file={_property(r.source)}," if r.source else ""
        lines.append(f"::error {where}title={_property('kcost ' + r.budget)}::{_data(message(r))}")
    return "".join(line + "\n" for line in lines)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
