"""Money and numbers one way everywhere, and narrow terminals (issue 18): the rules of `kcost.render.display`,
then every human report of every shipped sample and billable fixture through the public commands: no amount of a
dollar or more past cents, none at one decimal, counts separated, nouns that agree, a session's total written
alike by `bill`, `compare`, `check` and `explain`; and at 60, 72 and 80 columns no word or token split, a long
bill at most two lines a turn."""

from __future__ import annotations

import html
import json
import os
import re
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.render import display
from tests.conftest import ROOT
from tests.test_snapshots import LOGS, SPECS

SOURCES = SPECS + LOGS  # every shipped sample, and every fixture that bills
TRACE = "tests/fixtures/traces/synthetic-400.jsonl"


def run(*args: str) -> str:
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(cli, [*args, "--color", "never"] if _coloured(args) else list(args))
    finally:
        os.chdir(here)
    assert result.exit_code in (0, 1), f"{args}: {result.output}"
    return result.stdout


def _coloured(args: tuple[str, ...]) -> bool:
    fmt = args[args.index("--format") + 1] if "--format" in args else "table"
    return fmt == "table"


# ---- the rules ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "shown"),
    [
        ("6.0291156", False, "$6.03"),
        ("60.6", False, "$60.60"),
        ("0", True, "$0.00"),
        ("0", False, "$0.0000"),
        ("1212", False, "$1,212.00"),
        ("0.1323456", False, "$0.1323"),
        ("0.1323456", True, "$0.13"),
        ("0.00005", False, "$0.0001"),  # half up, as a price list rounds
        ("0.00004", False, "<$0.0001"),
        ("0.004", True, "<$0.01"),  # a total too small for a cent is not $0.00
        ("-1.0796544", False, "-$1.08"),
        ("-0.0000001", False, "-<$0.0001"),
        ("0.99995", False, "$1.0000"),  # rounds up to a dollar at the small precision: still one way per column
    ],
)
def test_money(value: str, total: bool, shown: str) -> None:
    assert display.money(Decimal(value), total=total) == shown


def test_signed_money_and_percent() -> None:
    assert display.signed_money(Decimal("0.21")) == "+$0.2100"
    assert display.signed_money(Decimal("-1.05")) == "-$1.05"
    assert display.signed_money(Decimal(0)) == "$0.0000"
    assert display.signed_percent(Decimal("0.123")) == "+12.3%" and display.signed_percent(-0.04) == "-4.0%"


def test_rates_counts_and_nouns() -> None:
    assert display.percent(0.7295) == "73.0%" and display.percent(0.99999) == ">99.9%"
    assert display.percent(0.00001) == "<0.1%" and display.percent(1) == "100.0%" and display.percent(0) == "0.0%"
    assert display.count(8240) == "8,240" and display.count(999) == "999"
    assert display.plural(1, "turn") == "1 turn" and display.plural(2, "turn") == "2 turns"
    assert display.plural(1500, "session") == "1,500 sessions" and display.plural(0, "call") == "0 calls"


def test_stated_amounts_and_exact_figures() -> None:
    assert display.stated(Decimal("0.3")) == "$0.30" and display.stated(Decimal("0.088")) == "$0.088"
    assert display.stated(Decimal("15")) == "$15.00" and display.rate_per_mtok(Decimal("1.25")) == "$1.25"
    assert display.exact(Decimal("6.02911560")) == "$6.0291156" and display.exact(Decimal("-0.50")) == "-$0.5"
    assert display.exact(Decimal("60.6")) == "$60.6" and display.exact(Decimal("0E-7")) == "$0"


def test_chart_axes() -> None:
    assert [display.axis_money(t) for t in (0, 0.2, 0.30000000000000004, 0.025, 2.5, 1000)] == [
        "$0.00", "$0.20", "$0.30", "$0.025", "$2.50", "$1,000.00",
    ]  # fmt: skip
    assert [display.tokens(n, places=2) for n in (950, 4100, 400_000, 1_250_000)] == ["950", "4.1K", "400K", "1.25M"]


def test_chart_ticks_on_a_page() -> None:
    page = run("bill", "sample_sessions/growing-chat.yaml", "--format", "html")
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', page)
    money_ticks = [t for t in ticks if t.startswith("$")]
    assert money_ticks and all(re.fullmatch(r"\$[\d,]+\.\d{2,}", t) for t in money_ticks), money_ticks


# ---- every report of every sample -------------------------------------------------------------------------

ONE_DECIMAL = re.compile(r"\$[\d,]+\.\d(?!\d)")  # `$0.2`, `$60.6`
DOLLARS_PAST_CENTS = re.compile(r"\$[1-9][\d,]*\.\d{3,}")  # `$6.0291`, `$1.2120000`
NO_SEPARATOR = re.compile(
    r"\$\d{4,}|(?<![\w.,:/=$+-])\d{5,}(?![\w.,:/=%-]|,\d)|(?<![\w.,:/=$+-])[1-9]\d{3}(?![\w.,:/=%-])"
)
ONE_MANY = re.compile(r"(?<![\d,.])1 (turns|sessions|calls|requests|clusters|budgets|rows|gaps|idle gaps)\b")


def human(text: str, fmt: str) -> str:
    """What a person reads: in HTML the page's text and charts' labels, not its tooltips, styles or script."""
    if fmt != "html":
        return text
    text = re.sub(r"<(style|script)>.*?</\1>", " ", text, flags=re.S)
    text = re.sub(r'\s(title|data-[\w-]+|aria-label)="[^"]*"', "", text)
    text = re.sub(r"<title>[^<]*</title>", " ", text)  # a chart's title (its name) ...
    return html.unescape(re.sub(r"<[^>]+>", " ", text))  # ... but its figures stay, as text between tags


def reports(source: str) -> dict[str, str]:
    """name -> text of every human report of `source`."""
    out: dict[str, str] = {}
    for fmt in ("table", "markdown", "html"):
        width = ["--width", "160"] if fmt == "table" else []
        out[f"bill {fmt}"] = run("bill", source, "--format", fmt, *width, "--timezone", "UTC")
        out[f"explain {fmt}"] = run("explain", source, "--format", fmt, *width)
        out[f"compare {fmt}"] = run("compare", source, "--format", fmt, *width)
        out[f"check {fmt}"] = run("check", source, "--max-session-usd", "0.01", "--min-hit-rate", "0.9",
                                  "--max-turn-usd", "0.005", "--format", fmt, *width)  # fmt: skip
    out["check junit"] = run("check", source, "--max-session-usd", "0.01", "--min-hit-rate", "0.9", "--format",
                             "junit")  # fmt: skip
    return out


@pytest.mark.parametrize("source", SOURCES)
def test_money_counts_and_nouns_are_written_one_way(source: str) -> None:
    for name, text in reports(source).items():
        shown = human(text, name.split()[-1])
        for rule, pattern in (("one decimal", ONE_DECIMAL), ("dollars past cents", DOLLARS_PAST_CENTS),
                              ("a count without separators", NO_SEPARATOR), ("1 with a plural", ONE_MANY)):  # fmt: skip
            found = (
                pattern.findall(shown) if pattern is not NO_SEPARATOR else [m.group() for m in pattern.finditer(shown)]
            )
            assert not found, f"{rule} in {name} of {source}: {found[:5]}"


def test_the_reports_of_quote_trace_prices_and_diff_too() -> None:
    texts = {
        "quote": run("quote", "--prefix", "400000", "--new", "4000", "--width", "160"),
        "quote markdown": run("quote", "--prefix", "120000", "--new", "900", "--out", "300", "--format", "markdown"),
        "trace": run("trace", TRACE, "--capacity", "1M,inf", "--clusters", "3", "--fail", "1@0-600", "--width", "160"),
        "trace html": human(run("trace", TRACE, "--capacity", "1M,inf", "--format", "html"), "html"),
        "prices": run("prices", "--width", "200"),
        "diff": run("diff", SPECS[0], SPECS[1], "--width", "160"),
        "diff markdown": run("diff", SPECS[0], SPECS[1], "--format", "markdown"),
        "diff html": human(run("diff", SPECS[0], SPECS[1], "--format", "html"), "html"),
    }
    for name, text in texts.items():
        assert not ONE_DECIMAL.findall(text), (name, ONE_DECIMAL.findall(text))
        if not name.startswith("prices"):  # a price list's rates are as exact as stated ($0.123456789012)
            assert not DOLLARS_PAST_CENTS.findall(text), (name, DOLLARS_PAST_CENTS.findall(text))
        assert not ONE_MANY.findall(text), name


def whole(text: str, value: str) -> bool:
    return re.search(rf"(?<![\d.,$<]){re.escape(value)}(?![\d,]|\.\d)", text) is not None


@pytest.mark.parametrize("source", SOURCES)
def test_a_session_total_reads_alike_in_every_command(source: str) -> None:
    bill = json.loads(run("bill", source, "--format", "json"))
    compare = json.loads(run("compare", source, "--format", "json"))
    explained = json.loads(run("explain", source, "--format", "json"))
    texts = {
        "bill": run("bill", source, "--width", "200", "--timezone", "UTC"),
        "bill markdown": run("bill", source, "--format", "markdown", "--timezone", "UTC"),
        "compare": run("compare", source, "--width", "200"),
        "compare markdown": run("compare", source, "--format", "markdown"),
        "check": run("check", source, "--max-session-usd", "1000", "--width", "200"),
        "explain": run("explain", source, "--width", "200"),
        "explain markdown": run("explain", source, "--format", "markdown"),
        "bill html": human(run("bill", source, "--format", "html"), "html"),
        "compare html": human(run("compare", source, "--format", "html"), "html"),
    }
    sessions = bill["runs"][0]["sessions"]
    for k, session in enumerate(sessions):
        exact = Decimal(session["summary"]["total"])
        shown = display.money(exact, total=True)
        k3 = [r for r in compare["sessions"][k]["rows"] if r["model"] == session["model"]]
        assert k3 and Decimal(k3[0]["cost"]) == exact  # the same figure: compare's row of the bill's model
        assert Decimal(explained[k]["total"]) == exact
        for name, text in texts.items():
            assert whole(text, shown), f"{shown} ({exact}) not in {name} of {source}"
        check_rows = [line for line in texts["check"].splitlines() if session["name"] in line and "max-session" in line]
        assert check_rows and whole(check_rows[0], shown), check_rows
        if len(sessions) == 1:
            assert f"total {shown}" in texts["bill"] and f"total {shown}:" in texts["explain"]
        kimi = [line for line in texts["compare"].splitlines() if line.startswith(f"{session['model']} ")]
        assert any(whole(line, shown) for line in kimi), kimi


# ---- narrow terminals ----------------------------------------------------------------------------------------

NARROW = [
    ("bill", "sample_sessions/stripped-reasoning.jsonl"),
    ("bill", "sample_sessions/growing-chat.yaml"),
    ("bill", "tests/fixtures/claude-code/ccusage-chat-alpha.jsonl"),
    ("bill", "sample_sessions/edit-early-message.yaml", "--cache", "k3", "--cache", "ideal"),
    ("explain", "sample_sessions/growing-chat.yaml"),
    ("explain", "sample_sessions/edit-early-message.yaml"),
    ("compare", "sample_sessions/stripped-reasoning.jsonl"),
    ("check", "sample_sessions", "--max-session-usd", "1", "--min-hit-rate", "0.8", "--max-blended", "0.5"),
    ("quote", "--prefix", "400000", "--new", "4000"),
    ("prices",),
    ("trace", TRACE, "--capacity", "1M,10M,inf", "--cache", "k3", "--cache", "ideal"),
    ("diff", SPECS[0], SPECS[1]),
]


def key_lines(text: str) -> list[str]:
    """The lines of each `key:` under a table (it may wrap onto more lines, each entry whole)."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("key: ") or (out and out[-1] and "=" in line and not line.startswith(" ")):
            out.append(line)
        elif out and out[-1] != "":
            out.append("")  # the key ended
    return [line for line in out if line]


def broken(wide: str, narrow: str, width: int) -> list[str]:
    """Pieces of the narrow output that are a word or token of the wide one cut short: a piece not in the wide
    output that begins or ends a longer word of it. Aside: the codes a `key:` explains (`blk=block-granularity`:
    words of their own) and pieces of a word longer than the terminal (a URL: it cannot fit)."""
    words = set(wide.split())
    keys = " ".join(key_lines(narrow))
    allowed = {"why:", "key:"} | {part for w in keys.split() for part in w.split("=")}
    allowed |= {part for w in keys.replace("\u00a0", " ").split() for part in w.split("=")}
    too_long = [w for w in words if len(w) > width]
    out = []
    for piece in narrow.replace("\u00a0", " ").split():
        if piece in words or piece in allowed or any(piece in w for w in too_long):
            continue
        cut = [w for w in words if len(w) > len(piece) and (w.startswith(piece) or w.endswith(piece))]
        if cut:
            out.append(f"{piece!r} of {cut[:3]}")
    return out


@pytest.mark.parametrize("args", NARROW, ids=[" ".join(a[:2]) for a in NARROW])
@pytest.mark.parametrize("width", [60, 72, 80])
def test_no_cell_splits_a_word_at_narrow_widths(args: tuple[str, ...], width: int) -> None:
    wide = run(*args, "--width", "400")
    narrow = run(*args, "--width", str(width))
    assert max(len(line) for line in narrow.splitlines()) <= width
    assert not broken(wide, narrow, width), broken(wide, narrow, width)


def test_prices_and_trace_are_tables_at_80_columns() -> None:
    prices = run("prices", "--width", "80")
    assert "model:" not in prices and len(prices.splitlines()) < 3 * len(run("prices", "--width", "400").splitlines())
    trace = run("trace", TRACE, "--capacity", "1M,10M,inf", "--width", "80")
    assert "cache model:" not in trace and "k3:hash=512,ttl=300,output=off" in trace


def long_session(path: Path, turns: int = 150) -> Path:
    """A turn spec of `turns` turns that miss for varied reasons: idle gaps, edits, stripped reasoning."""
    lines = ["name: a long session with every kind of miss", "prefix:", "  tokens: 3_000", "turns:"]
    for i in range(turns):
        turn = {"new": 400 + (i * 37) % 900, "output": 300 + (i * 13) % 400, "reasoning": 120}
        if i and i % 7 == 0:
            turn["idle"] = "10m"
        if i and i % 11 == 0:
            turn["edit_at"] = 1_000 + i
        if i and i % 13 == 0:
            turn["strip_reasoning"] = "true"
            turn["label"] = "history stripped"
        if i % 17 == 5:
            turn["label"] = "tool results from a long grep"
        lines.append("  - {" + ", ".join(f"{k}: {v}" for k, v in turn.items()) + "}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_long_bill_at_60_columns_is_at_most_two_lines_a_turn(tmp_path: Path) -> None:
    spec = str(long_session(tmp_path / "long.yaml"))
    data = json.loads(run("bill", spec, "--format", "json"))
    assert len(data["runs"][0]["sessions"][0]["turns"]) == 150
    reasons = {t["reason"] for t in data["runs"][0]["sessions"][0]["turns"]}
    assert {"expired", "prefix-changed", "output-not-cached"} <= reasons
    for width in (60, 72, 80):
        text = run("bill", spec, "--width", str(width))
        assert len(text.splitlines()) <= 300, (width, len(text.splitlines()))
        assert not re.search(r"^ *turn: ", text, flags=re.M)  # a table, not records
        wide = run("bill", spec, "--width", "400")
        assert not broken(wide, text, width)
