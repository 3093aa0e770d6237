"""Reports of `kcost check`: a terminal table, JSON, markdown for a pull-request comment, JUnit XML for any CI
system, an HTML page, and GitHub Actions annotations."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from rich.text import Text

from kcost.render.diff import MARKDOWN_LIMIT, Blocks, cell, diff_blocks, diff_body, lines_size
from kcost.render.fit import Cell, Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import pct, usd
from kcost.results.check import TOTAL, CheckOutcome, CheckReport, Result
from kcost.results.common import dump_json

if TYPE_CHECKING:
    from kcost.render.registry import View


def check_json(outcome: CheckOutcome, view: View) -> str:
    """The check report alone (the diff and the causes are the markdown's and the HTML's)."""
    return dump_json(outcome.report, view.numbers) + "\n"


def check_table(outcome: CheckOutcome, view: View) -> str:
    report, width = outcome.report, view.width
    console, out = make_console(width, view.color)
    verdict = "PASS" if report.passed else f"FAIL: {report.failures} budget(s) exceeded"
    console.print(Text(f"kcost check · {verdict} · cache {report.cache.label}",
                       style="bold green" if report.passed else "bold red"))  # fmt: skip
    if not report.results:
        console.print("no budgets set: give --max-session-usd and friends, or a [budgets] table in kcost.toml")
        return out.getvalue()
    columns = [Column("", number=False), Column("session", number=False), Column("budget", number=False),
               Column("limit"), Column("measured")]  # fmt: skip
    rows: list[list[Cell]] = [
        [Text("FAIL", style="bold red") if not r.passed else Text("ok", style="green"), r.session, r.budget,
         _value(r.budget, r.limit), _value(r.budget, r.value, measured=True)]
        for r in report.results
    ]  # fmt: skip
    console.print(fitted(columns, rows, width))
    console.print(f"total: {usd(report.total.total)} for {report.total.turns} turns, {pct(report.total.hit_rate)} hits")
    return out.getvalue()


def _value(budget: str, value: Decimal, *, measured: bool = False) -> str:
    """A limit as written; a measured ratio to 4 decimals (the JSON has it to 10), money as exact as it is."""
    if measured and not budget.endswith("usd"):
        value = value.quantize(Decimal("0.0001"))
    text = f"{value.normalize() if measured else value:f}"
    if budget.endswith("usd") or budget.endswith("mtok"):
        return "$" + text
    return text + ("%" if budget.endswith("pct") else "")


def check_markdown(outcome: CheckOutcome, view: View) -> str:
    """For a pull-request comment: the verdict, the totals, what failed, what changed, the top causes; the rest
    folded away, and the whole under `MARKDOWN_LIMIT` characters (saying how many rows it left out)."""
    report, diff, causes = outcome.report, outcome.diff, outcome.causes
    icon = "✅" if report.passed else "❌"
    head = [
        f"## {icon} kcost: {'all budgets hold' if report.passed else f'{report.failures} budget(s) exceeded'}",
        "",
        f"Cache model `{report.cache.label}`, prices {report.prices.name} ({report.prices.effective}).",
        "",
        "| total | turns | hit rate | input | output | blended /M |",
        "|--:|--:|--:|--:|--:|--:|",
        f"| {usd(report.total.total)} | {report.total.turns} | {pct(report.total.hit_rate)} | "
        f"{usd(report.total.input_cost)} | {usd(report.total.output_cost)} | "
        f"{usd(report.total.blended_input_per_mtok)} |",
        "",
    ]
    failed = [r for r in report.results if not r.passed]
    held = [r for r in report.results if r.passed]
    budget_head = ["| | session | budget | limit | measured |", "|---|---|---|--:|--:|"]

    def rows(results: Sequence[Result]) -> list[str]:
        return [
            f"| {'❌' if not r.passed else '✅'} | {cell(r.session)} | `{r.budget}` | "
            f"{_value(r.budget, r.limit)} | {_value(r.budget, r.value, measured=True)} |"
            for r in results
        ]

    tail = []
    if causes:
        tail += ["### Top miss causes", "", "| cause | turns | cost | fix |", "|---|--:|--:|---|"]
        tail += [f"| {c.cause} | {c.turns} | {usd(c.cost, 4)} | {cell(c.fix)} |" for c in causes[:5]]
        tail.append("")
    blocks = Blocks(MARKDOWN_LIMIT - lines_size(head) - lines_size(tail))
    if failed:
        blocks.table("### Budgets exceeded", budget_head, rows(failed))
    if diff is not None:
        diff_blocks(diff, blocks, heading="### Against the baseline")
    if held:
        blocks.table(f"{len(held)} budget(s) held", budget_head, rows(held), folded=True)
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
                failure = ET.SubElement(case, "failure", message=r.message, type="BudgetExceeded")
                failure.text = r.message
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def check_html(outcome: CheckOutcome, view: View) -> str:
    """The verdict, each budget against its limit as a chart, every result in a sortable table, and the diff
    against the baseline when there is one."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    from html import escape

    from kcost.render import svg
    from kcost.render.html import exact_usd, figures, page, table

    report, changes = outcome.report, outcome.diff
    verdict = "passed" if report.passed else f"failed: {report.failures} budget(s) exceeded"
    body = [f'<p class="{"pass" if report.passed else "fail"}">{escape(verdict)}</p>']
    body.append(
        figures(
            [("total", exact_usd(report.total.total), "session-total"), ("hit rate", pct(report.total.hit_rate), None)]
        )
    )
    by_budget: dict[str, list[Result]] = {}
    for r in report.results:
        by_budget.setdefault(r.budget, []).append(r)
    for budget, results in by_budget.items():  # failures first, as the report orders them
        rows = [r for r in results if r.session != TOTAL] or results
        body.append(
            svg.stacked_bars(
                f"{budget} against its limit",
                f"Each session's {budget} and the limit {rows[0].limit}.",
                [r.session for r in rows],
                [svg.Part(budget, [float(r.value) for r in rows], svg.PALETTE[0])],
                limit=float(rows[0].limit),
                limit_name="limit",
                unit="$" if "usd" in budget else "",
                y_label=budget,
            )
        )
    body.append(
        table(
            ["session", "budget", "value", "limit", "verdict", "message"],
            [
                [
                    (r.session, None),
                    (r.budget, None),
                    (str(r.value), float(r.value)),
                    (str(r.limit), float(r.limit)),
                    ("pass" if r.passed else "FAIL", None),
                    (r.message, None),
                ]
                for r in report.results
            ],
            text_columns=(0, 1, 4, 5),
        )
    )
    if changes is not None:
        body.append(diff_body(changes))
    return page("kcost check", f"{report.generator} · cache {report.cache.label}", body)


def github_annotations(report: CheckReport) -> str:
    """GitHub Actions `::error` workflow commands, one per failed budget, naming the session file."""
    lines = []
    for r in report.results:
        if r.passed:
            continue
        where = f"file={_property(r.source)}," if r.source else ""
        lines.append(f"::error {where}title={_property('kcost ' + r.budget)}::{_data(r.message)}")
    return "".join(line + "\n" for line in lines)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
