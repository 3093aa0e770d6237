"""The one way the rich renderers make their console: text into a buffer, at a width, with colour or not.

Console markup and emoji codes are off: the texts shown come from inputs (a session named `[/]` would end the
run in rich's MarkupError, one named `[bold]x` or `:warning:` would not read as written); styles are given as
`Text` styles, never as markup."""

from __future__ import annotations

import io

from rich.console import Console


def console(width: int, color: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, color_system="standard" if color else None, force_terminal=color,
                   highlight=False, markup=False, emoji=False), out  # fmt: skip
