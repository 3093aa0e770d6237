"""`kcost formats`: every input format, as a table (name, what it reads, where its agent keeps its logs) or as
markdown (with what one call is, how its usage is read, and the source it was read from)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcost.render.display import markdown_text
from kcost.render.terminal import console as make_console
from kcost.results.formats import Format, FormatListing

if TYPE_CHECKING:
    from kcost.render.registry import View


def formats_table(listing: FormatListing, view: View) -> str:
    from rich.table import Table

    console, buffer = make_console(view.width, view.color)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("format", no_wrap=True)
    table.add_column("reads", ratio=1, overflow="fold")
    table.add_column("home", ratio=1, overflow="fold")
    for f in listing.formats:
        table.add_row(f.name, f.reads, _short_home(f))
    console.print(table)
    console.print("--format markdown or json: what one call is in each log, and how its usage is read", style="dim")
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def formats_markdown(listing: FormatListing, view: View) -> str:
    md = markdown_text
    out = ["| format | reads | home |", "|---|---|---|"]
    out += [f"| `{f.name}` | {md(f.reads)} | {md(f.home or '(none: give the files)')} |" for f in listing.formats]
    out += ["", "| format | one call is | its usage: prompt (cached in it), output | read from |", "|---|---|---|---|"]
    out += [f"| `{f.name}` | {f.one_call} | {f.usage} | {f.source} |" for f in listing.formats if f.one_call]
    return "\n".join(out) + "\n"


def _short_home(f: Format) -> str:
    """The home in a line or two: its variable, its first default folder (how many more there are: the markdown and
    JSON name them), its log folders and file names."""
    if f.variable is None:
        return "(none: give the files)"
    more = f" (+{len(f.defaults) - 1} more)" if len(f.defaults) > 1 else ""
    logs = ", ".join(f"{folder}/" for folder in f.logs if folder != ".")
    return f"{f.variable}, else {f.defaults[0]}{more}" + (f": {logs}" if logs else "") + f" ({f.files})"

