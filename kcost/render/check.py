"""Reports of `kcost check` and `kcost diff`: a terminal table, markdown for a pull-request comment, JUnit XML
for any CI system, and GitHub Actions annotations."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from xml.etree import ElementTree as ET

from rich.text import Text

from kcost.render.fit import Cell, Column, fitted
from kcost.render.terminal import console as make_console
from kcost.render.text import pct, usd
from kcost.results.check import TOTAL, CheckReport, DiffReport, Result, SessionDiff
from kcost.results.explain import Ranked


def check_table(report: CheckReport, *, width: int, color: bool) -> str:
    console, out = make_console(width, color)
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


MARKDOWN_LIMIT = 60_000  # characters: GitHub refuses a comment past 65,536


def check_markdown(report: CheckReport, diff: DiffReport | None, causes: Sequence[Ranked]) -> str:
    """For a pull-request comment: the verdict, the totals, what failed, what changed, the top causes; the rest
    folded away, and the whole under `MARKDOWN_LIMIT` characters (saying how many rows it left out)."""
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
            f"| {'❌' if not r.passed else '✅'} | {_cell(r.session)} | `{r.budget}` | "
            f"{_value(r.budget, r.limit)} | {_value(r.budget, r.value, measured=True)} |"
            for r in results
        ]

    tail = []
    if causes:
        tail += ["### Top miss causes", "", "| cause | turns | cost | fix |", "|---|--:|--:|---|"]
        tail += [f"| {c.cause} | {c.turns} | {usd(c.cost, 4)} | {_cell(c.fix)} |" for c in causes[:5]]
        tail.append("")
    blocks = Blocks(MARKDOWN_LIMIT - _size(head) - _size(tail))
    if failed:
        blocks.table("### Budgets exceeded", budget_head, rows(failed))
    if diff is not None:
        diff_blocks(diff, blocks, heading="### Against the baseline")
    if held:
        blocks.table(f"{len(held)} budget(s) held", budget_head, rows(held), folded=True)
    return "\n".join([*head, *blocks.lines(), *tail])


def diff_markdown(diff: DiffReport, heading: str = "### kcost diff", *, only_changed: bool = False) -> list[str]:
    """What changed first, in a table; unchanged sessions folded (or left out); under `MARKDOWN_LIMIT`."""
    blocks = Blocks(MARKDOWN_LIMIT)
    diff_blocks(diff, blocks, heading=heading, only_changed=only_changed)
    return blocks.lines()


def diff_blocks(diff: DiffReport, blocks: Blocks, *, heading: str, only_changed: bool = False) -> None:
    head = ["| session | status | before | after | change | hit rate | blended /M |", "|---|---|--:|--:|--:|--:|--:|"]

    def row(r: SessionDiff) -> str:
        return (f"| {_cell(r.session)} | {r.status} | {_money(r, 'before')} | {_money(r, 'after')} | "
                f"{_change(r)} | {_pair(r, 'hit_rate')} | {_pair(r, 'blended_input_per_mtok')} |")  # fmt: skip

    moved = [r for r in diff.sessions if r.status != "unchanged"]
    moved.sort(key=lambda r: -abs(r.change) if r.change is not None else Decimal(0))  # the largest change first
    same = [r for r in diff.sessions if r.status == "unchanged"]
    blocks.text([heading, "", f"`{diff.before}` -> `{diff.after}`", ""])
    blocks.table(None, head, [row(r) for r in [diff.total, *moved]])
    if same and not only_changed:
        blocks.table(f"{len(same)} unchanged session(s)", head, [row(r) for r in same], folded=True)
    elif same:
        blocks.text([f"{len(same)} unchanged session(s) not shown.", ""])


class Blocks:
    """Markdown within a size: tables take rows while there is room, and say how many they left out."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.out: list[str] = []

    def text(self, lines: list[str]) -> None:
        self.out += lines
        self.room -= _size(lines)

    def table(self, title: str | None, head: list[str], rows: list[str], *, folded: bool = False) -> None:
        if not rows:
            return
        opening = [f"<details><summary>{title}</summary>", ""] if folded else ([title, ""] if title else [])
        closing = ["", "</details>", ""] if folded else [""]
        framing = _size(opening) + _size(head) + _size(closing) + 120  # and the line saying what was left out
        if self.room < framing + len(rows[0]) + 1:  # not even one row fits: say so in one short line
            note = f"{len(rows)} row(s) left out to keep this comment under {MARKDOWN_LIMIT:,} characters."
            if self.room >= len(note) + 2:
                self.out += [note, ""]
                self.room -= len(note) + 2
            return
        self.room -= framing
        kept: list[str] = []
        for line in rows:
            if self.room - len(line) - 1 < 0:
                break
            kept.append(line)
            self.room -= len(line) + 1
        self.out += [*opening, *head, *kept]
        if len(kept) < len(rows):
            self.out.append(f"\n{len(rows) - len(kept)} more row(s) left out to keep this comment under "
                            f"{MARKDOWN_LIMIT:,} characters (the JSON report has them all).")  # fmt: skip
        self.out += closing

    def lines(self) -> list[str]:
        return self.out


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def diff_table(diff: DiffReport, *, width: int, color: bool) -> str:
    console, out = make_console(width, color)
    console.print(Text(f"{diff.before} -> {diff.after}", style="bold"))
    columns = [Column("session", number=False), Column("status", number=False), Column("before"), Column("after"),
               Column("change"), Column("hit rate", drop=1), Column("blended /M", drop=2)]  # fmt: skip
    rows: list[list[Cell]] = [
        [row.session, row.status, _money(row, "before"), _money(row, "after"), _change(row), _pair(row, "hit_rate"),
         _pair(row, "blended_input_per_mtok")]
        for row in [*diff.sessions, diff.total]
    ]  # fmt: skip
    console.print(fitted(columns, rows, width))
    return out.getvalue()


def _money(row: SessionDiff, side: str) -> str:
    s = getattr(row, side)
    return usd(s.total, 4) if s else "-"


def _change(row: SessionDiff) -> str:
    if row.change is None:
        return "-"
    sign = "+" if row.change > 0 else ""
    share = f" ({sign}{row.change_pct}%)" if row.change_pct is not None else ""
    return f"{sign}{usd(row.change, 4)}{share}"


def _pair(row: SessionDiff, field: str) -> str:
    values = []
    for side in (row.before, row.after):
        if side is None:
            values.append("-")
        elif field == "hit_rate":
            values.append(pct(side.hit_rate))
        else:
            values.append(usd(getattr(side, field)))
    return " -> ".join(values)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def junit(report: CheckReport) -> str:
    """One test suite per session file (and one for the total), one test case per budget."""
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
