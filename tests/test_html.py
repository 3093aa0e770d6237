"""`--format html`: each report of the shipped samples opened in headless Chromium (Debian's, driven by
playwright): no console error, every chart drawn and not empty, the total shown as every human format writes
it and the JSON's exact figure in its tooltip, a screenshot taken; and no file refers to anything outside itself."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.render.display import money
from tests.conftest import ROOT, SAMPLES, SHARED

CHROMIUM = "/usr/bin/chromium"
LESSON, EDIT, GROWING = (str(SAMPLES / n) for n in ("coding-400k.yaml", "edit-early-message.yaml", "growing-chat.yaml"))
TRACE = SHARED / "traces" / "conversation_trace.jsonl"
TRACE_FIXTURE = str(ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl")

# name -> (arguments, the JSON total's path, the least number of charts)
REPORTS = {
    "bill-lesson": (["bill", LESSON], ("runs", 0, "sessions", 0, "summary", "total"), 1),
    "bill-models": (
        ["bill", EDIT, GROWING, "--cache", "k3", "--cache", "ideal"],
        ("runs", 0, "sessions", 0, "summary", "total"),
        6,
    ),  # fmt: skip
    "explain": (["explain", EDIT], (0, "total"), 1),
    "check": (["check", str(SAMPLES), "--max-session-usd", "1"], ("total", "total"), 1),
    "diff": (["diff", EDIT, GROWING], ("total", "after", "total"), 1),
    "compare": (["compare", EDIT], None, 1),
    "trace": (
        [
            "trace",
            TRACE_FIXTURE,
            "--capacity",
            "200K,1M,inf",
            "--cache",
            "k3",
            "--cache",
            "ideal",
            "--clusters",
            "4",
            "--fail",
            "1@50-300",
        ],
        ("curve", 0, "cost"),
        3,
    ),  # fmt: skip
}


def report(args: list[str], fmt: str, out: Path) -> None:
    result = CliRunner().invoke(cli, [*args, "--format", fmt, "-o", str(out)])
    assert result.exit_code in (0, 1), result.output  # check: 1 when a budget is exceeded


def dig(doc: object, path: tuple[object, ...]) -> object:
    for key in path:
        doc = doc[key]  # type: ignore[index]
    return doc


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_an_html_report_refers_to_nothing_outside_itself(name: str, tmp_path: Path) -> None:
    args, _, _ = REPORTS[name]
    report(args, "html", tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", text, flags=re.I)
    assert not [r for r in refs if re.match(r"(https?:)?//", r)], refs
    assert not re.search(r"""@import|url\(\s*["']?(https?:)?//""", text)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    required = os.environ.get("KCOST_REQUIRE_BROWSER")  # CI sets it: there a missing browser is a failure
    try:
        import playwright.sync_api as playwright
    except ImportError:
        if required:
            raise
        pytest.skip("playwright is not installed")
    if not Path(CHROMIUM).exists():
        assert not required, f"{CHROMIUM} is missing"
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                     "--disable-background-networking", "--disable-component-update",
                                     "--disable-sync", "--no-first-run"])  # fmt: skip
        yield chromium
        chromium.close()


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_an_html_report_in_chromium(name: str, browser: object, tmp_path: Path) -> None:
    args, total_path, charts = REPORTS[name]
    report(args, "html", tmp_path / "r.html")
    report(args, "json", tmp_path / "r.json")
    page = browser.new_page(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "r.html").as_uri())
    assert errors == []
    drawn = page.eval_on_selector_all("svg.chart", "els => els.map(e => [e.querySelectorAll('rect,polyline,circle')"
                                                   ".length, e.getBoundingClientRect().height])")  # fmt: skip
    assert len(drawn) >= charts and all(marks > 0 and height > 50 for marks, height in drawn), drawn
    assert page.eval_on_selector_all("svg.chart", "els => els.every(e => e.querySelector('title').textContent)")
    if total_path is not None:
        doc = json.loads((tmp_path / "r.json").read_text())
        shown, exact = page.eval_on_selector("[data-session-total]", "e => [e.textContent, e.title]")
        total = Decimal(str(dig(doc, total_path)))
        assert (shown, exact) == (money(total, total=True), f"${dig(doc, total_path)}")  # the exact figure on hover
    page.eval_on_selector_all("details", "els => els.forEach(e => { e.open = true; })")
    headers = page.query_selector_all("table.sortable th")
    if headers:  # a click sorts: the header says which way
        headers[1].click()
        assert headers[1].get_attribute("aria-sort") == "ascending"
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    page.close()


@pytest.mark.skipif(not TRACE.exists() or not shutil.which("chromium"), reason="needs ../shared and chromium")
def test_the_conversation_trace_report_in_chromium(browser: object, tmp_path: Path) -> None:
    args = ["trace", str(TRACE), "--capacity", "1M,3M,10M,30M,inf", "--cache", "k3", "--cache", "ideal"]
    report(args, "html", tmp_path / "t.html")
    page = browser.new_page()  # type: ignore[attr-defined]
    page.goto((tmp_path / "t.html").as_uri())
    labels = page.eval_on_selector_all("svg.chart text.strong", "els => els.map(e => e.textContent)")
    assert "unlimited" in labels  # the unlimited point, labelled on the log axis
    page.close()


def test_a_long_session_is_charted_in_runs_of_turns(tmp_path: Path) -> None:
    spec = tmp_path / "long.yaml"
    spec.write_text("prefix:\n  tokens: 20_000\nturns:\n  - new: 1_500\n    output: 300\n    repeat: 2000\n")
    report(["bill", str(spec)], "html", tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    chart = text[text.index("<svg") : text.index("</svg>")]
    assert "Cost per 9 turns" in chart and ">1-9<" in chart  # 2,000 turns in 223 bars of 9
    assert chart.count('class="bar"') <= 240 * 5
