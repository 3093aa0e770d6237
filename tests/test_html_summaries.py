"""Every report's HTML page over one session and over fifty, as a new user opens it: the summary first (no
session's own section before it), a page of many sessions small and its sessions dearest first and collapsed,
and every chart readable in headless Chromium (`tests/test_html.py` launches it): no two tick labels of an axis
alike, no label past its picture's box (each label's `getBBox()`, in the picture's coordinates, within its
`viewBox`).

The sessions are the shipped samples and the fixtures' logs, copied under distinct names; the fifty repeat the
samples, most of them tiny, as a home of real sessions is."""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.render.bill_html import CHARTED
from kcost.render.display import money
from tests import test_html
from tests.conftest import ROOT, SAMPLES

browser = test_html.browser  # the headless Chromium, launched (or skipped) as tests/test_html.py does

FIXTURES = ROOT / "tests" / "fixtures"
TRACE = FIXTURES / "traces" / "synthetic-400.jsonl"
# logs of three agents whose calls are timed, months apart (January, February and May 2026)
LOGS = [FIXTURES / "claude-code" / "ccusage-chat-alpha.jsonl", FIXTURES / "claude-code" / "spotter-short.jsonl",
        FIXTURES / "codex" / "ccusage-session-alpha.jsonl"]  # fmt: skip
# the samples a home repeats: mostly tiny chats, now and then a long session
TINY = ["short-chat-shared-block.yaml", "edit-early-message.yaml", "growing-chat.yaml", "short-chat-shared-block.yaml",
        "edit-early-message.yaml", "short-chat-shared-block.yaml", "coding-400k.yaml"]  # fmt: skip


def sessions(folder: Path, n: int) -> Path:
    """`n` sessions in `folder`: the fixtures' timed logs, then copies of the samples, each named apart."""
    folder.mkdir(parents=True)
    for log in LOGS[: min(n, len(LOGS))]:
        shutil.copy(log, folder / log.name)
    for i in range(n - min(n, len(LOGS))):
        sample = SAMPLES / TINY[i % len(TINY)]
        text = re.sub(r"^name: (.*)$", rf"name: \1, copy {i:02d}", sample.read_text(), count=1, flags=re.M)
        (folder / f"{i:02d}-{sample.name}").write_text(text)
    return folder


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (0, 1), result.output  # check: 1 where a budget is exceeded
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One session, eighteen and fifty, and the fifty again with a few changed and a few gone (for diff)."""
    root = tmp_path_factory.mktemp("homes")
    one = root / "one"
    one.mkdir()
    shutil.copy(SAMPLES / "edit-early-message.yaml", one / "edit-early-message.yaml")
    fifty = sessions(root / "fifty", 50)
    later = root / "later"
    shutil.copytree(fifty, later)
    for path in sorted(later.glob("*.yaml"))[:5]:
        path.unlink()
    for path in sorted(later.glob("*growing-chat.yaml"))[:3]:
        path.write_text(path.read_text().replace("repeat: 4", "repeat: 9"))
    edited = root / "edited.yaml"
    edited.write_text((SAMPLES / "edit-early-message.yaml").read_text().replace("new: 1_500", "new: 9_500"))
    return {"one": one, "eighteen": sessions(root / "eighteen", 18), "fifty": fifty, "later": later,
            "edited": edited}  # fmt: skip


def names(folder: Path) -> list[str]:
    """The sessions' names, as the bill's JSON gives them."""
    _, out = run("bill", str(folder), "--format", "json")
    return [s["name"] for s in json.loads(out)["runs"][0]["sessions"]]


def test_a_bill_page_of_many_sessions_opens_with_the_summary_and_stays_small(homes: dict[str, Path]) -> None:
    """18 sessions, most of them tiny: the totals and the overview's chart of every session first, dearest first;
    each session's section collapsed, dearest first; only the costliest get their per-turn charts."""
    _, page = run("bill", str(homes["eighteen"]), "--format", "html")
    _, out = run("bill", str(homes["eighteen"]), "--format", "json")
    run_ = json.loads(out)["runs"][0]
    assert len(page) < 250_000, len(page)
    summary = page[page.index('<section class="summary">') : page.index("</section>")]
    assert page.index('<section class="summary">') < page.index('<details class="session"')
    assert f">{money(Decimal(str(run_['total']['total'])), total=True)}<" in summary
    chart = summary[summary.index("<svg") : summary.index("</svg>")]
    assert "Cost by session" in chart
    dearest = sorted(run_["sessions"], key=lambda s: -float(s["summary"]["total"]))
    drawn = re.findall(r"<title>([^<]*): \$[^<]*</title></rect>", chart)
    assert drawn == [s["name"] for s in dearest]  # the overview's chart: every session, dearest first
    sections = re.findall(r'<details class="session"( open)?><summary>(.*?) <span', page)
    assert [name for _, name in sections] == [s["name"].replace("&", "&amp;") for s in dearest]
    assert not any(opened for opened, _ in sections)  # collapsed
    assert page.count('aria-label="Cost per turn') == CHARTED < len(dearest)  # the costliest only


def test_a_bill_page_of_one_session_opens_with_its_figures_and_its_section_open(homes: dict[str, Path]) -> None:
    _, page = run("bill", str(homes["one"]), "--format", "html")
    assert page.index('<section class="summary">') < page.index('<details class="session" open>')
    assert page.count('aria-label="Cost per turn') == 1


def test_check_leads_with_the_failures_furthest_over_first_and_folds_the_passes(homes: dict[str, Path]) -> None:
    """In every format: the failures first, ordered by how far past its limit each is (a share of the limit), then
    the passes, which the table counts past ten (`--all` lists them); JUnit keeps its suites' order."""
    budgets = ["--max-session-usd", "0.20", "--min-hit-rate", "0.75"]
    code, out = run("check", str(homes["fifty"]), *budgets, "--format", "json")
    report = json.loads(out)
    assert code == 1
    failed = [r for r in report["results"] if not r["passed"]]
    held = [r for r in report["results"] if r["passed"]]
    assert report["results"] == failed + held and len(held) > 10

    def past(r: dict[str, str]) -> float:
        value, limit = float(r["value"]), float(r["limit"])
        return (value - limit if r["budget"].startswith("max") else limit - value) / limit

    assert [past(r) for r in failed] == sorted((past(r) for r in failed), reverse=True)
    assert {r["budget"] for r in failed[:3]} == {"max-session-usd"}  # $6.62 against $0.20: 32 past it
    _, table = run("check", str(homes["fifty"]), *budgets, "--width", "200")
    rows = [line for line in table.splitlines() if line.startswith(("FAIL ", "ok "))]
    assert [line.split()[0] for line in rows] == ["FAIL"] * len(failed) + ["ok"]
    assert all(line[5:].startswith(r["session"]) for line, r in zip(rows, failed, strict=False))
    assert rows[-1].strip() == f"ok   {len(held)} budgets held (--all lists them)"
    _, every = run("check", str(homes["fifty"]), *budgets, "--width", "200", "--all")
    assert sum(line.startswith("ok ") for line in every.splitlines()) == len(held)
    _, markdown = run("check", str(homes["fifty"]), *budgets, "--format", "markdown")
    shown = re.findall(r"^\| ❌ \| (.*?) \| `", markdown, flags=re.M)
    assert shown == [r["session"] for r in failed][: len(shown)] and shown


def test_check_html_draws_each_budget_as_the_tables_write_it(homes: dict[str, Path]) -> None:
    """Hit rates in percent, the limit named in the legend (not over the bars), red failing bars and green
    passing ones, a 0% session a stub at the axis, and both charts' sessions in the table's order."""
    _, page = run("check", str(homes["fifty"]), "--max-session-usd", "0.20", "--min-hit-rate", "0.75",
                  "--format", "html")  # fmt: skip
    _, out = run("check", str(homes["fifty"]), "--max-session-usd", "0.20", "--min-hit-rate", "0.75",
                 "--format", "json")  # fmt: skip
    results = json.loads(out)["results"]
    charts = {re.search(r"<title>(.*?)</title>", c)[1]: c for c in re.findall(r"<svg.*?</svg>", page)}  # type: ignore[index]
    rates, costs = charts["min-hit-rate against its limit"], charts["max-session-usd against its limit"]
    ticks = re.findall(r'data-axis="y"[^>]*>([^<]*)<', rates)
    assert ticks and all(t.endswith("%") for t in ticks) and ticks[-1] in ("80%", "100%"), ticks
    assert ">limit 75.0%<" in rates and ">limit $0.20<" in costs  # in the legend ...
    assert not re.search(r'class="tick"[^>]*>limit', rates)  # ... and nowhere over the bars
    order = list(dict.fromkeys(r["session"] for r in results))
    for chart in (rates, costs):
        bars = re.findall(r'<rect class="bar( stub)?" [^>]*fill="var\(--(bad|good)\)"><title>(.*?): ', chart)
        assert [name for _, _, name in bars] == order  # the table's order, in both charts
    verdict = {(r["session"], r["budget"]): r["passed"] for r in results}
    for _, color, name in re.findall(r'<rect class="bar( stub)?" [^>]*fill="var\(--(bad|good)\)"><title>(.*?): ',
                                     rates):  # fmt: skip
        assert (color == "good") == verdict[(name, "min-hit-rate")], name
    zero = next(r for r in results if r["budget"] == "min-hit-rate" and float(r["value"]) == 0)
    assert re.search(r'<rect class="bar stub" [^>]*height="2" fill="var\(--bad\)"><title>'
                     + re.escape(zero["session"]) + r": 0\.0%</title>", rates)  # fmt: skip


def test_trace_html_ticks_read_apart_no_dot_for_a_curve_and_no_label_cut() -> None:
    _, one = run("trace", str(TRACE), "--format", "html")
    assert "Hit rate by capacity" not in one and "polyline" not in one  # one capacity: no curve ...
    assert re.search(r"<p>hit rate at unlimited capacity: k3\S* \d+\.\d%", one)  # ... its value stated
    assert "…" not in one  # no label shortened (`sho…p50`)
    _, curve = run("trace", str(TRACE), "--capacity", "200K,1M,inf", "--cache", "k3", "--cache", "ideal",
                   "--format", "html")  # fmt: skip
    chart = curve[curve.index("<svg") : curve.index("</svg>")]
    ticks = re.findall(r'data-axis="y"[^>]*>([^<]*)<', chart)
    assert len(set(ticks)) == len(ticks) > 2 and all(re.fullmatch(r"\d+(\.\d)?%", t) for t in ticks), ticks
    assert chart.count("polyline") == 2


def test_selfhost_html_axes_in_the_tables_units(homes: dict[str, Path]) -> None:
    """Tokens with the table's T (`12.5T`, never `12500B`), money short (`$25M`), the API's month beside the
    fleet's month."""
    _, page = run("selfhost", str(homes["fifty"]), "--format", "html")
    _, out = run("selfhost", str(homes["fifty"]), "--format", "json")
    report = json.loads(out)
    chart = page[page.index("<svg") : page.index("</svg>")]
    x = re.findall(r'data-axis="x"[^>]*>([^<]*)<', chart)
    y = re.findall(r'data-axis="y"[^>]*>([^<]*)<', chart)
    assert all(re.fullmatch(r"\$\d+(\.\d+)?[KMBT]?", t) for t in y) and len(set(y)) == len(y), y
    assert any(t.endswith("T") for t in x) and not any(re.search(r"\d{4,}[KMB]", t) for t in x), x
    figures = dict(re.findall(r'<div class="figure">([^<]*)<b[^>]*>([^<]*)</b>', page))
    assert figures["API a month at its pace"] == money(Decimal(report["workload_monthly_api"]), total=True)
    assert "API bill" not in figures  # the bill over four months is not set beside a month


# -- in the browser -------------------------------------------------------------------------------------------

# report -> its arguments ({h}: the home, {n}: the session names' home, {e}: a changed copy of the one session)
PAGES = {
    "bill": ["bill", "{h}"],
    "overview": ["bill", "{h}", "--by", "session"],
    "explain": ["explain", "{h}"],
    "compare": ["compare", "{h}"],
    "check": ["check", "{h}", "--max-session-usd", "0.20", "--min-hit-rate", "0.75"],
    "diff": ["diff", "{h}", "{d}"],
    "selfhost": ["selfhost", "{h}"],
}

# The page's summary (a `section.summary`, else its first headline figures or chart), and every session's own
# section that comes before it or holds it: a `details.session` or `section.session`, or a heading naming one of
# `names` (on a page of several sessions: a page of one may well be headed by its name)
SUMMARY_FIRST = """names => {
  const summary = document.querySelector('.summary') || document.querySelector('.figures, svg.chart');
  if (!summary) return ['no summary'];
  const own = Array.from(document.querySelectorAll('details.session, section.session, h2, h3, details > summary'))
    .filter(e => e.matches('details.session, section.session') || names.some(n => e.textContent.includes(n)));
  const after = e => summary.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING;
  return own.filter(e => e.contains(summary) || !after(e)).map(e => e.textContent.slice(0, 80));
}"""
# Each axis's labels (`data-axis`: x, y, y2), a label's lines joined (they share its place)
AXES = """svgs => svgs.map(svg => {
  const axes = {};
  for (const t of svg.querySelectorAll('text[data-axis]')) {
    const axis = t.dataset.axis;
    const at = t.getAttribute('transform') || t.getAttribute('x');
    const text = Array.from(t.childNodes).filter(n => n.nodeType === 3).map(n => n.data).join('');
    ((axes[axis] = axes[axis] || {})[at] = ((axes[axis] || {})[at] || []).concat([text]));
  }
  const joined = Object.entries(axes).map(([a, labels]) => [a, Object.values(labels).map(l => l.join(' '))]);
  return [svg.querySelector('title').textContent, Object.fromEntries(joined)];
})"""
# Every text of a chart whose box, in the picture's coordinates, reaches past its view box
CLIPPED = """svgs => svgs.flatMap(svg => {
  const vb = svg.viewBox.baseVal, into = svg.getScreenCTM().inverse();
  return Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim()).flatMap(t => {
    const b = t.getBBox(), m = into.multiply(t.getScreenCTM());
    const corners = [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]]
      .map(([x, y]) => { const p = svg.createSVGPoint(); p.x = x; p.y = y; return p.matrixTransform(m); });
    const xs = corners.map(p => p.x), ys = corners.map(p => p.y), eps = 0.5;
    const inside = Math.min(...xs) >= vb.x - eps && Math.max(...xs) <= vb.x + vb.width + eps
      && Math.min(...ys) >= vb.y - eps && Math.max(...ys) <= vb.y + vb.height + eps;
    return inside ? [] : [[svg.querySelector('title').textContent, t.textContent, xs, ys]];
  });
})"""


def open_page(browser: object, path: Path) -> object:
    page = browser.new_page(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    assert errors == []
    page.eval_on_selector_all("details", "els => els.forEach(e => { e.open = true; })")
    return page


def assert_readable(page: object) -> None:
    """Every axis's labels apart, no label past its picture's box."""
    for title, axes in page.eval_on_selector_all("svg.chart", AXES):  # type: ignore[attr-defined]
        for axis, labels in axes.items():
            assert len(set(labels)) == len(labels), (title, axis, labels)
    assert page.eval_on_selector_all("svg.chart", CLIPPED) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", ["one", "fifty"])
@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_report_page_leads_with_its_summary_in_chromium(
    name: str, size: str, browser: object, homes: dict[str, Path], tmp_path: Path
) -> None:
    home = homes[size]
    other = homes["edited"] if size == "one" else homes["later"]
    args = [a.format(h=home / "edit-early-message.yaml" if size == "one" else home, d=other) for a in PAGES[name]]
    code, _ = run(*args, "--format", "html", "-o", str(tmp_path / "r.html"))
    page = open_page(browser, tmp_path / "r.html")
    before = page.evaluate(SUMMARY_FIRST, names(home) if size == "fifty" else [])  # type: ignore[attr-defined]
    assert before == [], (name, size, before)
    assert_readable(page)
    page.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("capacities", ["inf", "200K,1M,10M,inf"])
def test_the_trace_page_in_chromium(capacities: str, browser: object, tmp_path: Path) -> None:
    run("trace", str(TRACE), "--capacity", capacities, "--cache", "k3", "--cache", "ideal", "--clusters", "2",
        "--fail", "1@50-300", "--format", "html", "-o", str(tmp_path / "t.html"))  # fmt: skip
    page = open_page(browser, tmp_path / "t.html")
    assert page.evaluate(SUMMARY_FIRST, []) == []  # type: ignore[attr-defined]
    assert_readable(page)
    page.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("unit", ["%", "$", "", "s"])
def test_no_two_ticks_of_an_axis_read_alike(unit: str) -> None:
    """At any scale, from a hundredth to tens of trillions: the ticks `2%, 2%, 2%, 1%, 0%` of a 2.1% curve are
    `0.0%, 0.5%, ... 2.5%`; tokens past a thousand billion in T (`12.5T`), money past a thousand short (`$25M`)."""
    from kcost.render.svg import nice_ticks, tick_labels

    for exponent in range(-2, 15):
        for mantissa in (1.0, 1.3, 2.1, 2.6, 4.4, 7.7, 9.9):
            labels = tick_labels(nice_ticks(mantissa * 10.0**exponent), unit)
            assert len(set(labels)) == len(labels), (mantissa, exponent, labels)
    assert tick_labels(nice_ticks(0.021 * 100), "%") == ["0.0%", "0.5%", "1.0%", "1.5%", "2.0%", "2.5%"]
    assert tick_labels(nice_ticks(12.5e12), "")[-1] == "12.5T"
    assert tick_labels(nice_ticks(24e6), "$")[-1] == "$25M"
