"""A terminal report written without rich where it is plain: the bill's table and the quote.

A stand-in for rich kept for the cold start it buys: with every page written by rich's console, a cold
`kcost bill` of the lesson as a table takes 0.090 s where it takes 0.067 s with this writer in front, and
`kcost quote` 0.095 s where it takes 0.070 s (`bench/bench_startup.py`), past the start-up target of
docs/performance.md (a cold bill at most 2x `kcost --version`). Most
reports are lines that fit the width and tables whose cells each fit their column, which need none of its
layout: a renderer puts its lines (`str`, or `Styled` for a style) and its tables (`kcost.render.fit.Laid`) on a
`Page`, and `Page.text()` writes them as rich would, byte for byte, colour included (bold, dim, yellow), each
line's padding trimmed as every console's is (`kcost.render.display.trimmed`). Where
anything needs rich (a line longer than the width, which rich wraps; a cell that wraps in its column; a table
laid out as records, with tail lines or a title; a character rich may not count one cell wide; a style not named
here), the whole page goes to rich's console as before. A test holds the two ways to each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kcost.render.display import trimmed

if TYPE_CHECKING:
    from rich.text import Text

# The characters rich counts one cell wide without looking them up (`rich.cells._SINGLE_CELL_UNICODE_RANGES`);
# any other character sends the page to rich, which knows its width
_NARROW = ((0x20, 0x7E), (0xA0, 0xAC), (0xAE, 0x2FF), (0x370, 0x482), (0x2500, 0x25FC), (0x2800, 0x28FF))
_SGR = {"bold": "1", "dim": "2", "yellow": "33"}  # rich's codes for the styles kcost's pages use (colour: standard)
_RESET = "\x1b[0m"


def narrow(text: str) -> bool:
    """Whether every character of `text` is one rich counts one cell wide at a glance."""
    if text.isascii():
        return text.isprintable()
    return all(any(lo <= ord(c) <= hi for lo, hi in _NARROW) for c in set(text))


def cell_len(text: str) -> int:
    """The cells `text` takes on a terminal, as rich counts them."""
    if narrow(text):
        return len(text)
    # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
    from rich.cells import cell_len as cells

    return cells(text)


class Styled:
    """A text with one style (`style`) or styled spans (`spans`: start, end, style), as rich's `Text` holds them:
    the part of it kcost's pages use."""

    __slots__ = ("plain", "spans", "style")

    def __init__(self, text: str, style: str = "", spans: tuple[tuple[int, int, str], ...] = ()) -> None:
        self.plain, self.style, self.spans = text, style, spans

    @property
    def cell_len(self) -> int:
        return cell_len(self.plain)

    def highlighted(self, pattern: str, style: str) -> Styled:
        """This text with a span of `style` over each match of `pattern` (as `Text.highlight_regex`)."""
        spans = [(m.start(), m.end(), style) for m in re.finditer(pattern, self.plain) if m.end() > m.start()]
        return Styled(self.plain, self.style, self.spans + tuple(spans))

    def rich(self) -> Text:
        # deferred: rich: loaded only where used (start-up; tests/test_cli.py)
        from rich.text import Text

        text = Text(self.plain, style=self.style)
        for start, end, style in self.spans:
            text.stylize(style, start, end)
        return text

    def written(self, color: bool, pad: int = 0, right: bool = False) -> str | None:
        """The text padded to `pad` cells (on the left where `right`) as rich writes it; None where rich must."""
        if not narrow(self.plain) or (self.spans and (self.style or pad > len(self.plain))):
            return None
        fill = " " * max(0, pad - len(self.plain))
        shown = fill + self.plain if right else self.plain + fill
        if not color or not (self.style or self.spans):
            return shown
        if self.style:
            return _sgr(shown, self.style)
        out: list[str | None] = []
        at = 0
        for start, end, style in sorted(self.spans):
            if start < at:
                return None  # overlapping spans: rich combines their styles
            out += [self.plain[at:start], _sgr(self.plain[start:end], style)]
            at = end
        out.append(self.plain[at:])
        if any(part is None for part in out):
            return None
        return "".join(p for p in out if p is not None)


def _sgr(text: str, style: str) -> str | None:
    """`text` in `style` as rich's standard colour system writes it (None: a style not known here)."""
    code = _SGR.get(style)
    if code is None:
        return None
    return f"\x1b[{code}m{text}{_RESET}" if text else ""


Line = str | Styled


class Page:
    """A report's lines and tables, in order, written as rich's console at `width` would write them."""

    def __init__(self, width: int, color: bool) -> None:
        self.width, self.color = width, color
        self.items: list[Any] = []

    def print(self, item: Any = "") -> None:
        """A line (`str`, `Styled`), a laid-out table (`Laid`), or an empty line."""
        self.items.append(item)

    def text(self) -> str:
        plain = self.plain()
        return plain if plain is not None else self.by_rich()

    def plain(self) -> str | None:
        """The page written without rich; None where any of it needs rich."""
        out: list[str] = []
        for item in self.items:
            lines = _lines(item, self.width, self.color)
            if lines is None:
                return None
            out += lines
        return trimmed("".join(line + "\n" for line in out))

    def by_rich(self) -> str:
        """The page written by rich's console (the oracle of `plain`)."""
        # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
        from kcost.render.terminal import console as make_console

        console, out = make_console(self.width, self.color)
        for item in self.items:
            console.print(item.rich() if hasattr(item, "rich") else item)
        return out.getvalue()


def _lines(item: Any, width: int, color: bool) -> list[str] | None:
    if isinstance(item, str):
        item = Styled(item)
    if isinstance(item, Styled):
        if not narrow(item.plain):
            return None  # rich knows its width
        out = []
        for piece in _wrapped(item, width) or ():
            line = piece.written(color)
            if line is None:
                return None
            out.append(line)
        return out or None
    plain = getattr(item, "plain_lines", None)
    return plain(color) if plain is not None else None


_WORD = re.compile(r"\s*\S+\s*")  # a word and the spaces around it, as rich's wrapping finds them
_TRAILING = re.compile(r"\s+$")


def _wrapped(item: Styled, width: int) -> list[Styled] | None:
    """A line's lines wrapped between words at `width` as rich wraps them (`rich._wrap.divide_line`, each line's
    spaces past the width dropped); None where a word is longer than `width` (rich folds it)."""
    text = item.plain
    if len(text) <= width:
        return [item]
    breaks, offset, at = [], 0, 0
    while (word := _WORD.match(text, at)) is not None:
        start, at = word.span()
        size = len(word.group().rstrip())
        if size > width:
            return None
        if width - offset >= size:
            offset += at - start
        elif offset and start:
            breaks.append(start)
            offset = at - start
    lines = []
    for start, end in zip([0, *breaks], [*breaks, len(text)], strict=True):
        piece = text[start:end]
        if len(piece) > width and (spaces := _TRAILING.search(piece)) is not None:
            piece = piece[: len(piece) - min(len(spaces.group()), len(piece) - width)]
        if len(piece) > width:
            return None
        end = start + len(piece)
        spans = tuple((max(a, start) - start, min(b, end) - start, style) for a, b, style in item.spans
                      if a < end and b > start)  # fmt: skip
        lines.append(Styled(piece, item.style, spans))
    return lines


def row_line(cells: Sequence[tuple[Line, int, bool]], color: bool, style: str = "") -> str | None:
    """A table row as rich writes a grid's row (no box, a space after each cell but the last): each cell (text,
    width, right-justified) padded to its width; `style` (the header's) over every cell and space."""
    out: list[str] = []
    space = Styled(" ", style).written(color)
    assert space is not None
    for n, (cell, width, right) in enumerate(cells):
        styled = Styled(cell) if isinstance(cell, str) else cell
        if style:
            if styled.style or styled.spans:
                return None
            styled = Styled(styled.plain, style)
        if right and styled.plain.endswith(" "):  # rich drops a right-justified cell's trailing spaces
            styled = Styled(styled.plain.rstrip(" "), styled.style, styled.spans)
        if cell_len(styled.plain) > width:
            return None  # it wraps in its column
        text = styled.written(color, width, right)
        if text is None:
            return None
        out.append(text)
        if n < len(cells) - 1:
            out.append(space)
    return "".join(out)
