"""`--format html`: each report of the shipped samples opened in headless Chromium (Debian's, driven by
playwright): no console error, every chart drawn and not empty, the total shown as every human format writes
it and the JSON's exact figure in its tooltip, a screenshot taken; no two labels of a chart overlap and none is
cut by its edge, at any number of sessions; a diff's decreases point left of its zero line; and no file refers to
anything outside itself or names a folder of the machine that wrote it (the reports are built from copies of the
samples under a folder given by its absolute path)."""

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
from kcost.render.bill_html import CHARTED
from kcost.render.display import money
from tests.conftest import ROOT, SAMPLES, SHARED

CHROMIUM = "/usr/bin/chromium"
TRACE = SHARED / "traces" / "conversation_trace.jsonl"
TRACE_FIXTURE = ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl"
# {s}: the copied samples, {t}: the copied trace, {b}: a bill of them, {m}: MANY generated sessions with long names
LESSON, EDIT, GROWING = "{s}/coding-400k.yaml", "{s}/edit-early-message.yaml", "{s}/growing-chat.yaml"
MANY = 40
MODELS = ["kimi-k3", "kimi-k3.1-pro-highspeed", "kimi-k2.7-code-highspeed", "claude-sonnet-4-5",
          "claude-3-7-sonnet-latest", "gpt-5.1", "deepseek-chat", "moonshot-v1-128k"]  # fmt: skip

# name -> (arguments, the JSON total's path, the least number of charts)
REPORTS = {
    "bill-lesson": (["bill", LESSON], ("runs", 0, "total", "total"), 1),
    "bill-models": (["bill", EDIT, GROWING, "--cache", "k3", "--cache", "ideal"], ("runs", 0, "total", "total"), 6),
    "bill-many": (["bill", "{m}"], ("runs", 0, "total", "total"), 1 + CHARTED),
    "explain": (["explain", EDIT], (0, "total"), 1),
    "check": (["check", "{s}", "--max-session-usd", "1"], ("total", "total"), 1),
    "check-many": (["check", "{m}", "--max-session-usd", "0.05", "--min-hit-rate", "0.5"], ("total", "total"), 2),
    "check-baseline": (
        ["check", "{s}", "--max-session-usd", "1", "--baseline", "{b}"],
        ("total", "total"),
        2,
    ),  # fmt: skip
    "diff": (["diff", EDIT, GROWING], ("total", "after", "total"), 1),
    "diff-folders": (["diff", "{s}", "{m}"], ("total", "after", "total"), 1),
    "compare": (["compare", EDIT], None, 1),
    "compare-models": (["compare", EDIT, GROWING, *(a for m in MODELS for a in ("--on", m))], None, 2),
    "trace": (
        [
            "trace",
            "{t}",
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


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Copies of the samples (and MANY sessions with long names, and a baseline) under a folder that stands for
    someone's home, each given by its absolute path."""
    home = tmp_path_factory.mktemp("home") / "someone" / "work"
    samples, many = home / "samples", home / "many"
    shutil.copytree(SAMPLES, samples)
    many.mkdir()
    for i in range(MANY):
        (many / f"nightly-agent-run-{i:02d}.yaml").write_text(
            f"name: the nightly refactoring agent on the payments service, run {i:02d}\n"
            f"prefix:\n  tokens: {4_000 + 997 * i}\n"
            f"turns:\n  - {{new: {500 + 37 * i}, output: 300}}\n  - {{new: 900, output: 200, idle: {i % 3 * 4}m}}\n"
        )
    trace = home / "traces" / TRACE_FIXTURE.name
    trace.parent.mkdir()
    shutil.copy(TRACE_FIXTURE, trace)
    baseline = home / "baseline.json"
    report(["bill", str(samples)], "json", baseline)
    return {k: str(v.resolve()) for k, v in {"s": samples, "m": many, "t": trace, "b": baseline}.items()}


def arguments(name: str, inputs: dict[str, str]) -> list[str]:
    return [a.format(**inputs) for a in REPORTS[name][0]]


def report(args: list[str], fmt: str, out: Path) -> None:
    result = CliRunner().invoke(cli, [*args, "--format", fmt, "-o", str(out)])
    assert result.exit_code in (0, 1), result.output  # check: 1 when a budget is exceeded


def dig(doc: object, path: tuple[object, ...]) -> object:
    for key in path:
        doc = doc[key]  # type: ignore[index]
    return doc


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_an_html_report_refers_to_nothing_outside_itself(name: str, inputs: dict[str, str], tmp_path: Path) -> None:
    report(arguments(name, inputs), "html", tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", text, flags=re.I)
    assert not [r for r in refs if re.match(r"(https?:)?//", r)], refs
    assert not re.search(r"""@import|url\(\s*["']?(https?:)?//""", text)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_an_html_report_names_files_not_folders(
    name: str, inputs: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page is shared: it names a session's file, never the folder of the machine that wrote it; the JSON keeps
    the source as given."""
    monkeypatch.chdir(tmp_path)  # a working directory the inputs do not lie under
    report(arguments(name, inputs), "html", tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    root = str(Path(inputs["s"]).parent.parent.parent)  # the folder the copies were placed under
    assert root not in text and "someone" not in text, re.findall(r".{40}someone.{40}", text)
    home = str(Path.home())
    if home != "/" and home in root:
        assert home not in text
    assert str(ROOT) not in text
    if name.startswith("bill"):
        report(arguments(name, inputs), "json", tmp_path / "r.json")
        doc = json.loads((tmp_path / "r.json").read_text())
        source = doc["runs"][0]["sessions"][0]["source"]
        assert Path(source).is_absolute() and Path(source).name in text  # JSON: as given; HTML: its name


def test_a_page_shows_a_path_under_the_working_directory_and_else_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kcost.render.html import shown_path

    monkeypatch.chdir(tmp_path)
    assert shown_path(str(tmp_path / "logs" / "a.jsonl")) == "logs/a.jsonl"
    assert shown_path("logs/a.jsonl") == "logs/a.jsonl"
    assert shown_path("logs/../../elsewhere/a.jsonl") == "a.jsonl"
    assert shown_path(str(tmp_path.parent / "a.jsonl")) == "a.jsonl"
    assert shown_path(str(tmp_path)) == tmp_path.name
    assert shown_path("~/.kimi/sessions/a.jsonl") == "a.jsonl"
    assert shown_path("C:\\Users\\someone\\a.jsonl") == "a.jsonl"
    assert [shown_path(s) for s in ("-", "this run", "")] == ["-", "this run", ""]


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
def test_an_html_report_in_chromium(name: str, browser: object, inputs: dict[str, str], tmp_path: Path) -> None:
    args, (_, total_path, charts) = arguments(name, inputs), REPORTS[name]
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
    assert_labels_apart(page)
    if name.startswith("diff"):
        assert_decreases_point_left(page, "Change by session")
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


# Every chart's text labels: what they show (without their tooltip), their boxes on the screen, the chart's box.
LABELS_JS = """svgs => svgs.map(svg => {
  const box = r => { const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const texts = Array.from(svg.querySelectorAll('text'))
    .map(t => [Array.from(t.childNodes).filter(n => n.nodeType === 3).map(n => n.data).join(''), box(t)])
    .filter(([text, b]) => text.trim() && b[2] > b[0]);
  return [svg.querySelector('title').textContent, box(svg), texts];
})"""
EPS = 0.5  # px: boxes that touch do not overlap


def assert_labels_apart(page: object) -> None:
    """No two labels of a chart overlap, and none reaches past its chart's edge."""
    charts = page.eval_on_selector_all("svg.chart", LABELS_JS)  # type: ignore[attr-defined]
    assert charts
    for title, (left, top, right, bottom), texts in charts:
        for text, (l0, t0, r0, b0) in texts:
            assert l0 >= left - EPS and r0 <= right + EPS and t0 >= top - EPS and b0 <= bottom + EPS, (title, text)
        for i, (a, (l0, t0, r0, b0)) in enumerate(texts):
            for b, (l1, t1, r1, b1) in texts[i + 1 :]:
                apart = r0 <= l1 + EPS or r1 <= l0 + EPS or b0 <= t1 + EPS or b1 <= t0 + EPS
                assert apart, (title, a, b)


def assert_decreases_point_left(page: object, title: str) -> None:
    """In the chart `title`, a decrease's bar lies left of the zero line, an increase's right of it."""
    bars = page.evaluate(  # type: ignore[attr-defined]
        """title => { const svg = Array.from(document.querySelectorAll('svg.chart'))
             .find(s => s.querySelector('title').textContent === title);
           const zero = svg.querySelector('line.zero').x1.baseVal.value;
           return Array.from(svg.querySelectorAll('rect.bar')).map(r => { const b = r.getBBox();
             return [r.classList.contains('minus'), b.x, b.x + b.width, zero, r.textContent]; }); }""",
        title,
    )
    assert any(minus for minus, *_ in bars), bars  # the samples' diff has a removed session: a saving
    for minus, x0, x1, zero, tip in bars:
        assert (x1 <= zero + 0.01) if minus else (x0 >= zero - 0.01), (tip, x0, x1, zero)
        assert tip.rsplit(": ", 1)[-1].startswith("-") == minus, tip  # the tooltip says which way


def test_charts_keep_their_labels_apart_at_any_count(browser: object, tmp_path: Path) -> None:
    """The chart functions themselves, from 1 to 200 long labels on an axis, in a legend and down the left."""
    from kcost.render import svg
    from kcost.render.html import page as html_page

    long = "the nightly refactoring agent on the payments service, run {}"
    charts = []
    for n in (1, 2, 3, 5, 8, 12, 13, 25, 40, 77, 120, 200):
        labels = [long.format(i) for i in range(n)]
        parts = [svg.Part(f"part {k} with a name long enough to wrap the legend", [(i % 7 + k) * 0.37 for i in
                 range(n)], svg.PALETTE[k]) for k in range(3)]  # fmt: skip
        charts.append(svg.stacked_bars(f"sessions {n}", "", labels, parts, limit=2.5, y_label="max-session-usd"))
        turns = [str(i + 1) for i in range(n)]
        charts.append(svg.stacked_bars(f"turns {n}", "", turns, parts, line=[i * 1.5 for i in range(n)],
                                       y_label="cost per turn", x_label="turn"))  # fmt: skip
        charts.append(svg.stacked_bars(f"runs {n}", "", [f"{9 * i + 1}-{9 * i + 9}" for i in range(n)], parts[:1]))
        charts.append(svg.hbars(f"hbars {n}", "", [(lab, (i % 5 - 2) * 1234.5) for i, lab in enumerate(labels)]))
    charts.append(svg.hbars("short", "", [("a", 1.0), ("b", -0.004)]))
    charts.append(svg.lines("lines", "", [(f"model {k} " * 6, [(x, x / 10 + k) for x in (1e5, 2e5, 3e5, 1e6, 4e6)])
                                          for k in range(6)], log_x=True, x_names={4e6: "unlimited"}))  # fmt: skip
    path = tmp_path / "charts.html"
    path.write_text(html_page("charts", "", charts))
    page = browser.new_page(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
    page.goto(path.as_uri())
    assert_labels_apart(page)
    minus = page.eval_on_selector_all("rect.bar.minus", "els => els.length")
    assert minus > 0
    page.close()
