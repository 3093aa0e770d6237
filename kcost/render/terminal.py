"""The one way the rich renderers make their console: text into a buffer, at a width, with colour or not."""

from __future__ import annotations

import io

from rich.console import Console


def console(width: int, color: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, color_system="standard" if color else None, force_terminal=color,
                   highlight=False), out  # fmt: skip
