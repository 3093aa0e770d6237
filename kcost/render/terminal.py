"""The one way the rich renderers make their console: text into a buffer, at a width, with colour or not.

Console markup and emoji codes are off: the texts shown come from inputs (a session named `[/]` would end the
run in rich's MarkupError, one named `[bold]x` or `:warning:` would not read as written); styles are given as
`Text` styles, never as markup.

No line of what the buffer gives back ends in spaces: rich pads a table's every cell, the last included, to its
column's width, and a title or a wrapped line to the table's or the console's; the colour codes that close a
line are kept. So every report's lines end where their text does, whichever renderer drew them."""

from __future__ import annotations

import io

from rich.console import Console

from kcost.render.display import trimmed


class _Buffer(io.StringIO):
    """A console's output, given back trimmed (`trimmed`)."""

    def getvalue(self) -> str:
        return trimmed(super().getvalue())


def console(width: int, color: bool) -> tuple[Console, io.StringIO]:
    out = _Buffer()
    return Console(file=out, width=width, color_system="standard" if color else None, force_terminal=color,
                   highlight=False, markup=False, emoji=False), out  # fmt: skip
