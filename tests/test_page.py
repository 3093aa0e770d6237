"""The bill's table and the quote are written without rich where they are plain (`kcost.render.page`), byte for
byte as rich writes them, colour included: every page written both ways must agree, for the shipped samples and
real logs at many widths, and for generated tables and lines; and a plain page imports no rich."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.cli import cli
from kcost.render.fit import Column, fitted
from kcost.render.page import Page, Styled
from tests.conftest import heavy_imports

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"
LOGS = Path(__file__).parent / "fixtures" / "claude-code"


@pytest.fixture
def both_ways(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every page a command writes, written both ways and held equal; the list says which were plain."""
    plain_ones: list[bool] = []

    def text(page: Page) -> str:
        plain, by_rich = page.plain(), page.by_rich()
        if plain is not None:
            assert plain == by_rich
        plain_ones.append(plain is not None)
        return by_rich

    monkeypatch.setattr(Page, "text", text)
    return plain_ones


INPUTS = [*sorted(str(p) for p in SAMPLES.glob("*")), *sorted(str(p) for p in LOGS.glob("*.jsonl"))[:3]]


@pytest.mark.parametrize("width", ["60", "80", "100", "140", "220"])
@pytest.mark.parametrize("color", ["never", "always"])
def test_bills_and_quotes_read_the_same_both_ways(both_ways: list[bool], width: str, color: str) -> None:
    runner = CliRunner()
    for path in INPUTS:
        for extra in ([], ["--summary"], ["--verbose"], ["--cache", "k3", "--cache", "ideal"]):
            result = runner.invoke(cli, ["bill", path, "--width", width, "--color", color, *extra])
            assert result.exit_code == 0, result.output
    for args in (["--prefix", "400000", "--new", "4000"], ["--prefix", "1000", "--new", "7", "--out", "500"],
                 ["--prefix", "0", "--new", "1", "--turns", "1"], ["--prefix", "1234567", "--new", "4k"]):  # fmt: skip
        result = runner.invoke(cli, ["quote", *args, "--width", width, "--color", color])
        assert result.exit_code == 0, result.output
    if int(width) >= 100:
        assert sum(both_ways) >= len(INPUTS)  # wide enough: most pages are plain


_WORD = st.text(alphabet="abcxyz-$.,%0123456789█▉·×中", min_size=0, max_size=9)
_TEXT = st.lists(_WORD, min_size=0, max_size=4).map(" ".join)
_STYLE = st.sampled_from(["", "", "bold", "dim", "yellow", "italic"])
_CELL = st.one_of(_TEXT, st.builds(Styled, _TEXT, _STYLE))
_LONG = st.lists(_WORD, max_size=24).map(lambda words: " ".join(words).replace("x", "  "))
_LINE = st.one_of(
    _LONG,
    st.builds(Styled, _LONG, _STYLE),
    st.builds(lambda t: Styled(t).highlighted(r"\$[\d.]+", "bold").highlighted("a+", "yellow"), _LONG),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    numbers=st.lists(st.booleans(), min_size=1, max_size=5),
    rows=st.lists(st.lists(_CELL, min_size=5, max_size=5), max_size=5),
    names=st.lists(_TEXT, min_size=5, max_size=5),
    lines=st.lists(_LINE, max_size=3),
    width=st.integers(10, 120),
    color=st.booleans(),
    header=st.booleans(),
)
def test_generated_pages_read_the_same_both_ways(numbers: list[bool], rows: list[list[object]], names: list[str],
                                                 lines: list[object], width: int, color: bool,
                                                 header: bool) -> None:  # fmt: skip
    columns = [Column(names[i], number=n, drop=i % 3) for i, n in enumerate(numbers)]
    page = Page(width, color)
    for line in lines:
        page.print(line)
    page.print(fitted(columns, [r[: len(columns)] for r in rows], width, header=header))  # type: ignore[misc]
    page.print(Styled("total $1.00 misses $0.50 ·").highlighted(r"\$1\.00", "bold").highlighted(r"\$0\.50", "yellow"))
    page.print()
    plain = page.plain()
    if plain is not None:
        assert plain == page.by_rich()


def test_a_plain_page_is_written_at_all() -> None:
    page = Page(80, True)
    page.print(Styled("title", "bold"))
    page.print(fitted([Column("name", number=False), Column("n")], [["a", Styled("1", "yellow")]], 80))
    page.print("cost by turn: █▉")
    assert page.plain() == page.by_rich()
    bold, yellow, off = "\x1b[1m", "\x1b[33m", "\x1b[0m"
    header = f"{bold}name{off}{bold} {off}{bold}n{off}"
    assert page.plain() == f"{bold}title{off}\n{header}\na    {yellow}1{off}\ncost by turn: █▉\n"


def test_a_plain_bill_or_quote_imports_no_rich(tmp_path: Path) -> None:
    runs = [["bill", str(SAMPLES / "growing-chat.yaml"), "--width", "120"],
            ["bill", str(SAMPLES / "coding-400k.yaml"), "--width", "120", "--color", "always"],
            ["quote", "--prefix", "400000", "--new", "4000", "--width", "120"]]  # fmt: skip
    assert heavy_imports(runs, tmp_path) == []


def test_long_lines_wrap_as_rich_wraps_them() -> None:
    rng = random.Random(3)
    words = ["abc", "xyz", "$1.00", "··", "█▉", "12,345", "aaa", "--", "%", "total", "misses"]
    wrapped = 0
    for _ in range(1500):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        text = text.replace("x", "  ") if rng.random() < 0.3 else text
        line = Styled(text, rng.choice(["", "bold", "dim"])) if rng.random() < 0.5 else (
            Styled(text).highlighted(r"\$[\d.]+", "bold").highlighted("a+", "yellow"))  # fmt: skip
        page = Page(rng.randint(10, 60), rng.random() < 0.5)
        page.print(line)
        plain = page.plain()
        assert plain is not None
        assert plain == page.by_rich(), (text, page.width, page.color)
        wrapped += plain.count("\n") > 1
    assert wrapped > 500


def test_records_leave_out_empty_values_and_no_line_ends_in_padding() -> None:
    """Too narrow for a table, each row is a record of `name: value` lines: a value a row leaves empty (a total's
    agent or model) is no line; and neither way of writing a page ends a line in spaces."""
    columns = [Column("session", number=False, middle=True), Column("agent", number=False), Column("cost")]
    rows: list[list[object]] = [["a-session-with-a-name", "codex", "$1.00"], ["total", "", "$1.00"]]
    page = Page(16, False)
    page.print(fitted(columns, rows, 16))  # type: ignore[arg-type]
    text = page.text()
    assert "session: total" in text and "agent: codex" in text and text.count("agent:") == 1, text
    wide = Page(80, False)
    wide.print(fitted(columns, rows, 80))  # type: ignore[arg-type]
    wide.print(Styled("a line  ", "bold"))
    for written in (wide.plain(), wide.by_rich(), text):
        assert written and not [line for line in written.splitlines() if line.endswith(" ")], written


@pytest.mark.parametrize(
    "args",
    [
        ("bill", str(SAMPLES)),
        ("bill", str(SAMPLES), "--by", "day", "--breakdown"),
        ("prices",),
        ("prices", "--all"),
        ("compare", str(SAMPLES / "growing-chat.yaml")),
        ("bill", str(SAMPLES / "coding-400k.yaml")),
        ("quote", "--prefix", "400000", "--new", "4000"),
        ("check", str(SAMPLES), "--max-session-usd", "1"),
        ("formats",),
    ],
    ids=lambda a: " ".join(a[:2]),
)
@pytest.mark.parametrize("width", ["60", "100", "160"])
def test_no_line_of_a_table_kcost_prints_ends_in_padding(args: tuple[str, ...], width: str) -> None:
    result = CliRunner().invoke(cli, [*args, "--width", width, "--color", "never"])
    assert result.exit_code in (0, 1), result.output
    padded = [line for line in result.stdout.splitlines() if line.endswith(" ")]
    assert not padded, padded[:3]
