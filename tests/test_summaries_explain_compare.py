"""`kcost explain` and `kcost compare` over many sessions lead with one answer for all of them (issue 49): explain
ranks the fixes across the sessions by dollars saved, compare totals each model over them, and each session's
part follows only on request (`--sessions`), the dearest first; one session keeps its own report. Options that
can be checked without the logs are refused before any is read, naming the option; the help of bill, explain,
compare and quote is complete and says what it means.

The many sessions are a folder of 30 built here: copies of the shipped samples and of two agents' logs, 20 small
one-call sessions with nothing to fix, and two sessions with an edit (one of them costly, behind the small ones
in the folder's order); the browser checks build 50."""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.render.display import money
from tests.conftest import ROOT, SAMPLES
from tests.test_html import assert_labels_apart, browser  # noqa: F401 (a fixture: Chromium, or the test skipped)

LOGS = [ROOT / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl",
        ROOT / "tests" / "fixtures" / "codex" / "ccusage-session-alpha.jsonl"]  # fmt: skip
TINY = 20
COSTLY = """name: the costly edit
prefix:
  tokens: 400_000
turns:
  - {new: 4_000, output: 800}
  - {new: 4_000, output: 800}
  - {new: 4_000, output: 800}
  - {edit_at: 1_000, new: 200, output: 800}
  - {new: 4_000, output: 800}
"""
PADDED = re.compile(r"[ \t]+(\x1b\[[0-9;]*m)*$")  # a line that ends in spaces (before the codes that close it)


def tiny(folder: Path, count: int, name: str = "tiny run {:02d}", file: str = "a-tiny-{:02d}.yaml") -> None:
    """`count` one-call sessions, each with nothing to fix (a cold start and new input only)."""
    for i in range(count):
        (folder / file.format(i)).write_text(f"name: {name.format(i)}\nprefix:\n  tokens: {1_000 + 7 * i}\n"
                                                    f"turns:\n  - {{new: {100 + i}, output: 50}}\n")  # fmt: skip


def build(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for path in [*SAMPLES.iterdir(), *LOGS]:
        if path.suffix in (".yaml", ".jsonl"):
            shutil.copy(path, folder / path.name)
    tiny(folder, TINY)
    (folder / "z-costly-edit.yaml").write_text(COSTLY)
    edit = (SAMPLES / "edit-early-message.yaml").read_text()
    (folder / "z-second-edit.yaml").write_text(edit.replace("name: edit an early message", "name: a second edit"))
    return folder


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = build(tmp_path_factory.mktemp("home") / "many")
    assert len(list(folder.iterdir())) == 30
    return str(folder)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def ok(*args: str) -> str:
    code, out, err = run(*args)
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def explained(many: str) -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(ok("explain", many, "--format", "json"))
    return doc


def saving(fix: dict[str, Any]) -> Decimal:
    return Decimal(fix["saving"])


def to_fix(e: dict[str, Any]) -> bool:
    return e["unpriced"] is None and any(saving(f) > 0 for f in e["fixes"])


# -- explain


def test_explain_over_many_sessions_leads_with_the_fixes_ranked_across_them(
    many: str, explained: list[dict[str, Any]]
) -> None:
    out = ok("explain", many, "--width", "100", "--color", "never")
    lines = out.splitlines()
    assert len(explained) == 30
    assert lines[0].startswith("30 sessions · cache ")
    total = sum((Decimal(e["total"]) for e in explained), Decimal(0))
    avoidable = sum((Decimal(e["avoidable"]) for e in explained), Decimal(0))
    assert lines[1].startswith(f"total {money(total, total=True)}: avoidable {money(avoidable)} in 4 sessions")
    by_fix: dict[str, Decimal] = {}
    for e in explained:
        for f in e["fixes"]:
            if saving(f) > 0:
                by_fix[f["fix"]] = by_fix.get(f["fix"], Decimal(0)) + saving(f)
    ranked = sorted(by_fix, key=lambda name: -by_fix[name])
    rows = [line for line in lines if line.split(" ", 1)[0] in by_fix]
    assert [r.split()[0] for r in rows] == ranked == ["stable-prefix", "append", "pass-reasoning"]
    for row, name in zip(rows, ranked, strict=True):
        assert row.split()[1] == money(by_fix[name])  # the figure shown is the JSON's sum
    assert "the costly edit" in rows[0] and "edit an early message" in rows[1] and "(+1 more)" in rows[1]
    assert "keep the system prompt" in rows[0]  # what to change
    nothing = [e for e in explained if e["unpriced"] is None and not to_fix(e)]
    assert len(nothing) == 25
    together = money(sum((Decimal(e["total"]) for e in nothing), Decimal(0)), total=True)
    assert f"nothing to fix in 25 sessions ({together} together)" in out
    assert "fixes not priced in 1 session" in out
    assert not any(" · cache " in line for line in lines[1:]), out  # no session's own block
    assert "tiny run" not in out
    assert "--sessions: each session with a fix that saves (4 sessions)" in " ".join(out.split())
    assert len(lines) < 30


def test_explain_sessions_shows_each_session_to_fix_the_dearest_first(
    many: str, explained: list[dict[str, Any]]
) -> None:
    out = ok("explain", many, "--sessions", "--width", "120", "--color", "never")
    heads = [line.split(" · cache ")[0] for line in out.splitlines() if " · cache " in line][1:]
    dearest = [e["session"] for e in sorted(explained, key=lambda e: -Decimal(e["total"])) if to_fix(e)]
    assert heads == dearest == ["the costly edit", "edit an early message", "a second edit",
                                "harness that strips reasoning from history"]  # fmt: skip
    assert out.index("fixes across the sessions") < out.index("the costly edit · cache")  # the summary first
    assert "tiny run" not in out and "--sessions:" not in out
    detailed = ok("explain", many, "--detail", "--width", "120", "--color", "never")  # implies --sessions
    assert detailed.count("every turn's misses") == 4 and "the costly edit · cache" in detailed


def test_explain_top_keeps_the_fixes_that_save_most_across_the_sessions(many: str) -> None:
    out = ok("explain", many, "--top", "1", "--width", "100", "--color", "never")
    assert "stable-prefix" in out and "append" not in out and "pass-reasoning" not in out


def test_explain_markdown_and_json_of_many_sessions(many: str, explained: list[dict[str, Any]]) -> None:
    md = ok("explain", many, "--format", "markdown")
    heads = [line for line in md.splitlines() if line.startswith("### ")]
    assert heads == ["### 30 sessions · cache k3:hash=512,ttl=300,output=off"]
    costly = next(e for e in explained if e["session"] == "the costly edit")
    shown = money(saving(costly["fixes"][0]))
    assert costly["fixes"][0]["fix"] == "stable-prefix"
    assert f"| stable-prefix | {shown} | the costly edit {shown} |" in md
    assert "`--sessions`" in md
    md = ok("explain", many, "--format", "markdown", "--sessions")
    heads = [line for line in md.splitlines() if line.startswith("### ")]
    assert heads[0].startswith("### 30 sessions") and heads[1].startswith("### the costly edit") and len(heads) == 5
    first = explained[0]  # the JSON keeps its shape: one explanation per session, in the order read
    assert {"session", "source", "cache", "total", "avoidable", "fixed_total", "fixes", "unavoidable", "turns",
            "ranked", "hour_writes"} <= set(first)  # fmt: skip
    jsonschema.validate(explained, json.loads(ok("schema", "explain")))


def test_explain_of_sessions_with_nothing_to_fix(tmp_path: Path) -> None:
    tiny(tmp_path, 18)
    out = ok("explain", str(tmp_path), "--width", "100", "--color", "never")
    assert out.splitlines()[0].startswith("18 sessions")
    assert "no fix saves money in any of the 18 sessions" in out and "nothing to fix in 18 sessions" in out
    assert "--sessions" not in out and "tiny run" not in out


def test_one_session_keeps_its_own_explanation() -> None:
    path = str(SAMPLES / "edit-early-message.yaml")
    out = ok("explain", path, "--width", "100", "--color", "never")
    lines = out.splitlines()
    assert lines[0] == "edit an early message · cache k3:hash=512,ttl=300,output=off"
    assert lines[2] == "fixes, by dollars saved (each billed again)"
    assert "across" not in out and "--sessions" not in out
    assert out == ok("explain", path, "--sessions", "--width", "100", "--color", "never")
    md = ok("explain", path, "--format", "markdown")
    assert md.startswith("### edit an early message · cache `k3:hash=512,ttl=300,output=off`")


def test_explain_tables_end_no_line_in_spaces(many: str) -> None:
    for args in (["--sessions", "--detail"], ["--color", "always"], ["--width", "80"]):
        out = ok("explain", many, *args)
        assert not [line for line in out.splitlines() if PADDED.search(line)], out


# -- compare


@pytest.fixture(scope="module")
def compared(many: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ok("compare", many, "--format", "json"))
    return doc


def test_compare_over_many_sessions_totals_each_model(many: str, compared: dict[str, Any]) -> None:
    out = ok("compare", many, "--width", "160", "--color", "never")
    lines = out.splitlines()
    total = compared["total"]
    assert lines[0] == f"30 sessions together · {sum(s['turns'] for s in compared['sessions'])} turns · cheapest: " \
        f"{total['cheapest']}"  # fmt: skip
    models = [r["model"] for r in compared["sessions"][0]["rows"]]
    rows = [line for line in lines if line.split(" ", 1)[0] in models]
    assert [r.split()[0] for r in rows] == models  # one row per model, for all the sessions together
    for row, model in zip(rows, total["rows"], strict=True):
        summed = sum((Decimal(r["cost"]) for s in compared["sessions"] for r in s["rows"]
                      if r["model"] == model["model"]), Decimal(0))  # fmt: skip
        assert Decimal(model["cost"]) == summed
        assert money(summed, total=True) in row.split() and f"{model['cheapest_in']} of 30" in row
    assert sum(m["cheapest_in"] for m in total["rows"]) == 30
    assert "--sessions: each session on each model (30 tables), the dearest first" in out
    assert not any("cheapest:" in line for line in lines[1:])  # no session's own table
    assert len(lines) < 15
    assert not [line for line in lines if PADDED.search(line)]


def test_compare_sessions_shows_each_session_the_dearest_first(many: str, compared: dict[str, Any]) -> None:
    out = ok("compare", many, "--sessions", "--width", "100", "--color", "always")
    assert not [line for line in out.splitlines() if PADDED.search(line)]
    plain = ok("compare", many, "--sessions", "--width", "100", "--color", "never")
    titles = [line.split(" · ")[0] for line in plain.splitlines() if " · cheapest: " in line][1:]
    dearest = sorted(compared["sessions"], key=lambda s: -Decimal(s["rows"][0]["cost"]))
    assert titles == [s["session"] for s in dearest] and len(titles) == 30
    assert plain.index("30 sessions together") < plain.index(titles[0])


def test_compare_json_carries_the_totals(compared: dict[str, Any]) -> None:
    jsonschema.validate(compared, json.loads(ok("schema", "compare")))
    total = compared["total"]
    assert total["sessions"] == len(compared["sessions"]) == 30
    least = min(total["rows"], key=lambda r: Decimal(r["cost"]))
    assert least["cheapest"] and total["cheapest"] == least["model"]
    for row in total["rows"]:
        mine = [r for s in compared["sessions"] for r in s["rows"] if r["model"] == row["model"]]
        assert row["input_tokens"] == sum(r["input_tokens"] for r in mine)
        kinds = {r["counts"] for r in mine}
        assert row["counts"] == (kinds.pop() if len(kinds) == 1 else "mixed")
        assert row["cheapest_in"] == sum(r["cheapest"] for r in mine)


def test_compare_markdown_of_many_sessions(many: str) -> None:
    md = ok("compare", many, "--format", "markdown")
    heads = [line for line in md.splitlines() if line.startswith("### ")]
    assert len(heads) == 1 and heads[0].startswith("### 30 sessions together")
    assert "| cheapest for |" in md
    md = ok("compare", many, "--format", "markdown", "--sessions")
    assert len([line for line in md.splitlines() if line.startswith("### ")]) == 31


def test_one_session_keeps_its_own_comparison() -> None:
    path = str(SAMPLES / "growing-chat.yaml")
    out = ok("compare", path, "--width", "160", "--color", "never")
    lines = out.splitlines()
    assert lines[0].startswith("growing agent conversation · 10 turns · cheapest: ")
    assert "together" not in out and "--sessions" not in out and "cheapest for" not in out
    assert not [line for line in lines if PADDED.search(line)]
    doc = json.loads(ok("compare", path, "--format", "json"))
    assert doc["total"]["rows"][0]["cost"] == doc["sessions"][0]["rows"][0]["cost"]


# -- options checked before any log is read


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["compare", "--on", "gpt-9"], "--on: no price for model 'gpt-9'"),
        (["compare", "--on", "kimi-k3", "--on", "logged"], "--on: compare prices every call"),
        (["explain", "--model", "gpt-9"], "--model: no price for model 'gpt-9'"),
        (["bill", "--model", "gpt-9"], "--model: no price for model 'gpt-9'"),
        (["bill", "--by", "day", "--per-turn"], "--by: a per-turn bill has no rows to group"),
        (["explain", "--prices", "{missing}"], "no-prices.json: no such file"),
        (["compare", "--prices", "{missing}"], "no-prices.json: no such file"),
    ],
)
def test_an_option_is_refused_before_any_log_is_read(
    args: list[str], named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kcost import api

    def read(*_: object, **__: object) -> None:
        raise AssertionError("a log was read before the options were checked")

    missing = str(tmp_path / "no-prices.json")
    args = [a.format(missing=missing) for a in args]
    code, _, err = run(args[0], str(tmp_path / "no-such-log.jsonl"), *args[1:])  # the log is not there either
    assert code == 2 and err.count("\n") == 1 and named in err, err
    monkeypatch.setattr(api, "sessions", read)
    code, _, err = run(args[0], str(SAMPLES), *args[1:])
    assert code == 2 and named in err, err


# -- help


def commands() -> dict[str, click.Command]:
    from kcost.cli import bills

    return {"bill": bills.bill, "explain": bills.explain, "compare": bills.compare, "quote": bills.quote}


@pytest.mark.parametrize("name", ["bill", "explain", "compare", "quote"])
def test_each_option_says_what_it_does(name: str) -> None:
    command = commands()[name]
    bare = [p.name for p in command.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert not bare, bare
    assert command.help and len(command.help.strip().splitlines()) <= 7  # short: its options say the rest
    text = ok(name, "--help")
    assert "lesson" not in text.lower()


def test_quote_turns_and_bill_homes_are_described() -> None:
    text = " ".join(ok("quote", "--help").split())
    assert re.search(r"--turns INTEGER RANGE \S+", text) and "How many such turns" in text
    bill = " ".join(ok("bill", "--help").split())
    assert "kcost formats" in bill
    for home in ("~/.claude", "~/.codex", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "~/.kimi"):
        assert home not in bill, home  # a partial list of the agents' homes: `kcost formats` lists them all
    assert "--sessions" in ok("explain", "--help") and "--sessions" in ok("compare", "--help")


# -- the pages, in the browser


@pytest.mark.parametrize("count", [1, 50])
def test_the_pages_open_with_the_summary(count: int, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "sessions"
    if count == 1:
        folder.mkdir()
        shutil.copy(SAMPLES / "edit-early-message.yaml", folder)
    else:
        build(folder)
        tiny(folder, count - 30, "the nightly refactoring agent on the payments service, run {:02d}", "b-{:02d}.yaml")
    assert len(list(folder.iterdir())) == count
    for kind in ("explain", "compare"):
        opened(browser, kind, folder, count, tmp_path)


def opened(chromium: Any, kind: str, folder: Path, count: int, tmp_path: Path) -> None:
    """The `kind` page of the sessions in `folder`, in Chromium: the summary first (a section the first chart is
    in), every session's part collapsed; the summary's charts name each bar once and in full, its figures the
    JSON's; once every part is opened, no two labels of any chart overlap or leave it."""
    html, doc = tmp_path / f"{kind}.html", tmp_path / f"{kind}.json"
    assert run(kind, str(folder), "--format", "html", "-o", str(html))[0] == 0
    assert run(kind, str(folder), "--format", "json", "-o", str(doc))[0] == 0
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri())
    assert errors == []
    sections = page.eval_on_selector_all("body > section.summary", "els => els.length")
    closed = page.eval_on_selector_all("details.session", "els => els.filter(e => !e.open).length")
    first = page.eval_on_selector("svg.chart", "e => [e.closest('section') !== null, "
                                               "e.getBoundingClientRect().height]")  # fmt: skip
    if count == 1:
        assert sections == 0 and closed == 0 and first[1] > 50  # the one session's own page
    else:
        assert sections == 1 and closed >= 4 and first[0] and first[1] > 50, (sections, closed, first)
        tags = page.eval_on_selector_all("body > *", "els => els.map(e => e.tagName)")
        assert tags.index("SECTION") < tags.index("DETAILS")  # the summary before every session
        charts = page.eval_on_selector_all("section.summary svg.chart", """els => els.map(e => [
            Array.from(e.querySelectorAll('text[text-anchor="end"]')).map(t => t.textContent),
            Array.from(e.querySelectorAll('rect.bar > title')).map(t => t.textContent)])""")
        assert charts
        for names, tips in charts:  # each bar named once, in full: as its tooltip names it
            assert names and len(names) == len(set(names)) == len(tips), (names, tips)
            assert [tip.rsplit(": ", 1)[0] for tip in tips] == names
        if kind == "explain":
            exact = page.eval_on_selector("section.summary [data-total]", "e => e.title")
            total = sum((Decimal(e["total"]) for e in json.loads(doc.read_text())), Decimal(0))
            assert exact == f"${total}"  # the exact figure on hover is the JSON's sum
        else:
            cells = page.eval_on_selector_all("section.summary td[title]", "els => els.map(e => e.title)")
            totals = [f"${r['cost']}" for r in json.loads(doc.read_text())["total"]["rows"]]
            assert set(totals) <= set(cells)
    page.eval_on_selector_all("details", "els => els.forEach(e => { e.open = true; })")
    assert_labels_apart(page)
    page.close()
