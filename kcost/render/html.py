"""`--format html`: what every page shares. Each report's page is one function beside that report's other
renderers (`bill_html` in `kcost.render.bill_html`, `explain_html` in `kcost.render.explain`, and so on, as
`kcost.render.registry` lists them); they build it from these pieces: the page shell (`page`), its styles and the
few lines of vanilla JavaScript that sort tables (no network, no framework: a page opens from disk or as a CI
artifact), headline figures, sortable tables, money cells, and a file as a page that is shared names it
(`shown_path`). The charts are `kcost.render.svg`.

A page over several sessions opens with what matters across all of them, in one `section` of class `summary`
(`section`); each session's own part follows in a `details` of class `session`, collapsed (`session`).

Every figure is written as the other human formats write it (`kcost.render.display`), money with its exact
decimal, as the JSON holds it, in a tooltip (`title`); every chart has a text alternative and a table beside it;
the page follows the reader's light or dark scheme and prints cleanly; and a page names files, never the folders
of the machine that wrote it (the JSON keeps each source as given).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from html import escape
from pathlib import Path

from kcost.render.display import exact, money

CSS = """
:root { --bg:#fff; --fg:#1d2330; --muted:#5b6472; --line:#d9dee7; --panel:#f6f8fb; --accent:#0b7a4b;
  --bad:#c0362c; --good:#0b7a4b; --c0:#3b6fd4; --c1:#5d8fe8; --c2:#d4773b; --c3:#b54fb0; --c4:#c0362c;
  --c5:#2d9c8f; --c6:#8b6f2d; --c7:#6b6b6b; --c8:#7a8f2d; color-scheme: light dark; }
@media (prefers-color-scheme: dark) { :root { --bg:#12151c; --fg:#e6e9ef; --muted:#9aa3b2; --line:#2c3340;
  --panel:#1a1f29; --accent:#3fcf8e; --bad:#ff6b5e; --good:#3fcf8e; --c0:#6f9cff; --c1:#8fb3ff; --c2:#ffa05e;
  --c3:#e08ade; --c4:#ff6b5e; --c5:#4fd1c0; --c6:#d8b45a; --c7:#a0a0a0; --c8:#b8d15a; } }
body { background:var(--bg); color:var(--fg); font:15px/1.5 system-ui, sans-serif; margin:0 auto; max-width:1100px;
  padding:24px; }
h1 { font-size:1.5em; margin:0 0 4px; } h2 { font-size:1.2em; margin:28px 0 6px; border-bottom:1px solid var(--line); }
h3 { font-size:1.05em; margin:18px 0 6px; }
.meta, .note { color:var(--muted); font-size:.9em; }
.figures { display:flex; flex-wrap:wrap; gap:10px; margin:10px 0; }
.figure { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:8px 12px; min-width:120px; }
.figure b { display:block; font-size:1.2em; font-variant-numeric:tabular-nums; }
.fail { color:var(--bad); font-weight:600; } .pass { color:var(--good); }
table { border-collapse:collapse; width:100%; font-size:.88em; font-variant-numeric:tabular-nums; margin:8px 0; }
th, td { border-bottom:1px solid var(--line); padding:3px 8px; text-align:right; }
th:first-child, td:first-child, td.text, th.text { text-align:left; }
th { cursor:pointer; user-select:none; background:var(--panel); position:sticky; top:0; }
th[aria-sort="ascending"]::after { content:" \\25B2"; } th[aria-sort="descending"]::after { content:" \\25BC"; }
.chart { width:100%; height:auto; display:block; margin:8px 0; }
.chart text { fill:var(--fg); font-size:11px; } .chart .tick { fill:var(--muted); } .chart .strong { font-weight:700; }
.chart .label { fill:var(--muted); font-size:12px; } .chart .legend { font-size:12px; }
.chart .grid { stroke:var(--line); stroke-width:1; } .chart .axis { stroke:var(--muted); stroke-width:1; }
.chart .line { fill:none; stroke:var(--fg); stroke-width:1.5; } .chart .series { fill:none; stroke-width:2; }
.chart .limit { stroke:var(--bad); stroke-width:1.5; stroke-dasharray:6 4; }
.side { display:grid; grid-template-columns:repeat(auto-fit, minmax(320px, 1fr)); gap:16px; }
details summary { cursor:pointer; color:var(--muted); }
details.session { border-top:1px solid var(--line); padding:4px 0; }
details.session > summary { color:var(--fg); font-weight:600; padding:4px 0; }
details.session > summary .note { font-weight:400; }
@media print { body { max-width:none; padding:0; } th { position:static; } details { display:block; }
  .chart, table { break-inside:avoid; } }
"""

JS = """
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var up = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
      var d = (x !== undefined && y !== undefined) ? parseFloat(x) - parseFloat(y)
        : a.cells[col].textContent.localeCompare(b.cells[col].textContent);
      return up ? d : -d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def page(title: str, subtitle: str, body: Iterable[str]) -> str:
    """A whole page: its title and subtitle, then `body` (HTML, escaped by whoever built it)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{escape(title)}</h1><p class="meta">{escape(subtitle)}</p>'
        + "".join(body)
        + f"<script>{JS}</script></body></html>\n"
    )


def shown_path(source: str) -> str:
    """A file (or folder) as a page that people share names it: its path relative to the working directory when
    it lies under it, else its name; never an absolute path, a home folder (`~`) or a way up (`..`). A name that
    is no path (`-`, `this run`, an address) stays as it is."""
    if not source or source == "-" or "://" in source:
        return source
    name = re.split(r"[\\/]", source.rstrip("\\/"))[-1] or source
    if "\\" in source or re.match(r"[A-Za-z]:", source) or source.startswith("~"):
        return name  # a Windows path, or a home folder
    path = Path(os.path.normpath(source))
    if not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()
    for here, there in ((Path.cwd(), Path(os.path.abspath(path))), (Path.cwd().resolve(), path.resolve())):
        if there.is_relative_to(here) and there != here:
            return there.relative_to(here).as_posix()
    return Path(os.path.abspath(path)).name or name


def section(body: Iterable[str]) -> str:
    """The page's summary: what matters across every session, first on the page."""
    return f'<section class="summary">{"".join(body)}</section>'


def session(heading: str, body: Iterable[str], *, opened: bool = False) -> str:
    """One session's part of a page, collapsed under its `heading` (HTML) unless `opened`."""
    return f'<details class="session"{" open" if opened else ""}><summary>{heading}</summary>{"".join(body)}</details>'


# a table's cell: (text, sort value or None to sort as text), or with a tooltip: (text, sort value, title)
Cell = tuple[str, float | None] | tuple[str, float | None, str]
# a headline figure: (label, text, data attribute name), or with a tooltip: (label, text, attribute, title)
Figure = tuple[str, str, str | None] | tuple[str, str, str | None, str]


def usd(value: Decimal, *, total: bool = False) -> Cell:
    """A money cell: the display form, sorted by its value, the exact decimal in its tooltip."""
    return (money(value, total=total), float(value), exact(value))


def usd_figure(label: str, value: Decimal, attr: str | None = None, *, total: bool = True) -> Figure:
    """A headline money figure (a total, unless `total` is false), the exact decimal in its tooltip."""
    return (label, money(value, total=total), attr, exact(value))


def figures(items: Sequence[Figure]) -> str:
    """Headline figures: (label, text, data attribute name[, tooltip]); the data attribute holds the tooltip's
    exact figure where there is one, else the text."""
    cells = []
    for label, text, attr, *more in items:
        title = f' title="{escape(more[0])}"' if more else ""
        data = f' data-{attr}="{escape(more[0] if more else text)}"' if attr else ""
        cells.append(f'<div class="figure">{escape(label)}<b{data}{title}>{escape(text)}</b></div>')
    return f'<div class="figures">{"".join(cells)}</div>'


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    *,
    caption: str = "",
    text_columns: Sequence[int] = (0,),
) -> str:
    """A sortable table; each cell (text, sort value or None to sort as text[, tooltip])."""
    th = "".join(
        f'<th scope="col" class="{"text" if i in text_columns else ""}">{escape(h)}</th>' for i, h in enumerate(head)
    )
    body = []
    for row in rows:
        tds = []
        for i, (text, value, *more) in enumerate(row):
            v = f' data-v="{value}"' if value is not None else ""
            cls = ' class="text"' if i in text_columns else ""
            title = f' title="{escape(more[0])}"' if more else ""
            tds.append(f"<td{cls}{v}{title}>{escape(text)}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    cap = f'<caption class="note">{escape(caption)}</caption>' if caption else ""
    return f'<table class="sortable">{cap}<thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table>'
