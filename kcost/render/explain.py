"""`kcost explain`: the turns whose avoidable misses cost money, then the causes by dollars, as a table, markdown
or an HTML page (its JSON is the report as it is, `kcost.render.data`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import count, exact, markdown_text, money, plural, signed_money
from kcost.render.fit import Column, fitted
from kcost.render.html import figures, page, table, usd, usd_figure
from kcost.render.terminal import console as make_console
from kcost.results.explain import Explanation, FixSaving, HourWrites, TurnCauses

if TYPE_CHECKING:
    from kcost.render.registry import View


def explain_table(items: list[Explanation], view: View) -> str:
    """The answer first: what the fixes save together, each fix by dollars saved with its turns and what to
    change, the unavoidable causes in a line; every turn's misses and the causes by cost under `--detail`."""
    width = view.width
    console, out = make_console(width, view.color)
    for e in items:
        console.print(Text(f"{e.session} · cache {e.cache}", style="bold"))
        line = Text("total ")
        line.append(money(e.total, total=True), style="bold")
        line.append(": avoidable ")
        line.append(money(e.avoidable), style="yellow" if e.avoidable else "")
        line.append(f" {headline(e)}")
        console.print(line)
        fixes = shown_fixes(e, view)
        if fixes:
            columns = [Column("fix", number=False), Column("saves"), Column("turns", number=False),
                       Column("what to change", number=False, drop=1)]  # fmt: skip
            rows = [[f.fix, money(f.saving), turn_list(f.turns), fix_text(f)] for f in fixes]
            console.print(fitted(columns, rows, width, title="fixes, by dollars saved (each billed again)"))
        else:
            console.print(nothing(e))
        if dearer(e):
            console.print(f"costs more than it saves: {dearer(e)}")
        if e.unavoidable:
            console.print(f"unavoidable: {unavoidable_line(e)}")
        if e.hour_writes is not None:
            console.print(hour_line(e.hour_writes))
        if view.detail and e.ranked:
            console.print()
            columns = [Column("turn"), Column("cost"), Column("tokens"), Column("cause", number=False),
                       Column("detail", number=False, drop=1)]  # fmt: skip
            rows = [[str(t.turn) if i == 0 else "", money(c.cost), count(c.tokens), c.cause, c.detail]
                    for t in detail_turns(e, view) for i, c in enumerate(t.causes)]  # fmt: skip
            console.print(fitted(columns, rows, width, title="every turn's misses"))
            console.print()
            columns = [Column("cause", number=False), Column("turns"), Column("tokens"), Column("cost"),
                       Column("fix", number=False, drop=1)]  # fmt: skip
            rows = [[r.cause, count(r.turns), count(r.tokens), money(r.cost), r.fix] for r in e.ranked]
            console.print(fitted(columns, rows, width, title="causes by cost"))
        elif e.turns:
            console.print(f"--detail: every turn's misses ({plural(len(e.turns), 'turn')}) and the causes by cost")
        console.print()
    return out.getvalue()


def headline(e: Explanation) -> str:
    """`(every fix together: $6.62 -> $1.10; new input $0.40)`."""
    if e.avoidable:
        return (f"(every fix together: {money(e.total, total=True)} -> {money(e.fixed_total, total=True)}; "
                f"new input {money(e.new_input_cost)})")  # fmt: skip
    return f"(new input {money(e.new_input_cost)}, a miss under any cache)"


NOTHING = "no fix saves money here: every miss is new input or a cause no client change removes"


def nothing(e: Explanation) -> str:
    """Why no fix is listed: none could be priced, none saves, or none applies."""
    if e.unpriced:
        return f"fixes not priced: {e.unpriced}"
    return "no fix saves money here" if any(f.saving < 0 for f in e.fixes) else NOTHING


def shown_fixes(e: Explanation, view: View) -> list[FixSaving]:
    """The fixes that save, by dollars saved (the first `--top`)."""
    saving = [f for f in e.fixes if f.saving > 0]
    return saving[: view.top] if view.top is not None else saving


def dearer(e: Explanation) -> str:
    """`idle (keep-alive: -$0.0062, 1-hour writes: -$0.0442)`: the fixes that cost more than the misses they
    remove, each way priced."""
    out = []
    for f in e.fixes:
        if f.saving < 0:
            ways = ", ".join(f"{w.way}: {signed_money(w.saving)}" for w in f.ways or ())
            out.append(f"{f.fix} ({ways or signed_money(f.saving)})")
    return "; ".join(out)


def detail_turns(e: Explanation, view: View) -> list[TurnCauses]:
    """The turns of the detail: all in order, or with `--top N` the N costliest."""
    if view.top is None:
        return e.turns
    return sorted(sorted(e.turns, key=lambda t: -t.cost)[: view.top], key=lambda t: t.turn)


def fix_text(f: FixSaving) -> str:
    """What to change, and what the other way of the fix would save, where it has one."""
    others = [w for w in f.ways or () if w.way != f.way]
    return f.change + "".join(f" ({w.way} instead: {signed_money(w.saving)})" for w in others)


def turn_list(turns: Sequence[int], most: int = 4) -> str:
    """`5`, `2-4, 9`, `2-4, 9, 12, 15 (+30)`: runs of turns, the first `most` runs."""
    runs: list[list[int]] = []
    for t in turns:
        if runs and t == runs[-1][1] + 1:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:most])
    rest = sum(b - a + 1 for a, b in runs[most:])
    return f"{text} (+{rest})" if rest else text


def unavoidable_line(e: Explanation) -> str:
    """`cold start $0.0800 (1 turn) · block granularity $0.1200 (150 turns)`."""
    return " · ".join(f"{r.cause} {money(r.cost)} ({plural(r.turns, 'turn')})" for r in e.unavoidable)


def hour_line(h: HourWrites) -> str:
    """`with 1-hour cache writes this session would cost $X ($D more; N idle gaps of A-B minutes)`."""
    change = f"{money(abs(h.difference))} {'more' if h.difference > 0 else 'less'}" if h.difference else "the same"
    if h.idle_gaps:
        span = f"{h.shortest_gap_minutes:g}"
        if h.longest_gap_minutes != h.shortest_gap_minutes:
            span += f"-{h.longest_gap_minutes:g}"
        gaps = f"{plural(h.idle_gaps, 'idle gap')} of {span} minutes"
    else:
        gaps = "no idle gap between the TTL and an hour"
    return f"with 1-hour cache writes this session would cost {money(h.total, total=True)} ({change}; {gaps})"


def explain_markdown(items: list[Explanation], view: View) -> str:
    out: list[str] = []
    for e in items:
        out += [f"### {markdown_text(e.session)} · cache `{e.cache}`", ""]
        out += [f"total **{money(e.total, total=True)}**: avoidable **{money(e.avoidable)}** {headline(e)}", ""]
        fixes = shown_fixes(e, view)
        if fixes:
            out += ["| fix | saves | turns | what to change |", "|---|---:|---|---|"]
            out += [f"| {f.fix} | {money(f.saving)} | {turn_list(f.turns)} | {markdown_text(fix_text(f))} |"
                    for f in fixes]  # fmt: skip
            out.append("")
        else:
            out += [nothing(e), ""]
        if dearer(e):
            out += [f"costs more than it saves: {dearer(e)}", ""]
        if e.unavoidable:
            out += [f"unavoidable: {unavoidable_line(e)}", ""]
        if e.hour_writes is not None:
            out += [hour_line(e.hour_writes), ""]
        if view.detail and e.ranked:
            out += ["| cause | turns | tokens | cost | fix |", "|---|---:|---:|---:|---|"]
            out += [f"| {r.cause} | {count(r.turns)} | {count(r.tokens)} | {money(r.cost)} | {r.fix} |"
                    for r in e.ranked]  # fmt: skip
            out += ["", "| turn | cost | tokens | cause | detail |", "|---:|---:|---:|---|---|"]
            for t in detail_turns(e, view):
                out += [f"| {t.turn} | {money(c.cost)} | {count(c.tokens)} | {c.cause} | {markdown_text(c.detail)} |"
                        for c in t.causes]  # fmt: skip
            out.append("")
    return "\n".join(out)


def explain_html(items: Sequence[Explanation], view: View) -> str:
    """Each session's avoidable causes by cost, as a chart and a sortable table, with their fixes."""
    # the page's pieces only when a page is asked for: the other formats import no HTML or chart code
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    body: list[str] = []
    for e in items:
        body.append(f"<h2>{escape(e.session)} · <code>{escape(e.cache)}</code></h2>")
        body.append(
            figures(
                [
                    usd_figure("total", e.total, "session-total"),
                    usd_figure("new input", e.new_input_cost, total=False),
                    usd_figure("avoidable", e.avoidable, total=False),
                    usd_figure("with every fix", e.fixed_total),
                ]
            )
        )
        fixes = shown_fixes(e, view)
        if fixes:
            body.append("<h3>Fixes, by dollars saved (each billed again)</h3>")
            body.append(
                table(
                    ["fix", "saves", "turns", "what to change"],
                    [[(f.fix, None), usd(f.saving), (turn_list(f.turns), None), (fix_text(f), None)] for f in fixes],
                    text_columns=(0, 2, 3),
                )
            )
        else:
            body.append(f"<p>{escape(nothing(e))}</p>")
        if dearer(e):
            body.append(f'<p class="note">costs more than it saves: {escape(dearer(e))}</p>')
        if e.unavoidable:
            body.append(f'<p class="note">unavoidable: {escape(unavoidable_line(e))}</p>')
        if e.hour_writes is not None:
            h = e.hour_writes
            body.append(
                f'<p class="note">with 1-hour cache writes this session would cost '
                f'<span title="{exact(h.total)}">{money(h.total, total=True)}</span> '
                f'(<span title="{exact(h.difference)}">{signed_money(h.difference)}</span> against this bill; '
                f"{plural(h.idle_gaps, 'idle gap')} between the TTL and an hour)</p>"
            )
        if not e.ranked:
            body.append("<p>no misses but new input: every uncached token was new input</p>")
            continue
        body.append(
            svg.hbars(
                f"Causes by cost: {e.session}",
                "What each cause of misses cost, largest first.",
                [(r.cause, float(r.cost)) for r in e.ranked],
            )
        )
        body.append(
            table(
                ["cause", "turns", "tokens", "cost", "fix"],
                [
                    [
                        (r.cause, None),
                        (count(r.turns), r.turns),
                        (count(r.tokens), r.tokens),
                        usd(r.cost),
                        (r.fix, None),
                    ]
                    for r in e.ranked
                ],
                text_columns=(0, 4),
            )
        )
    return page("kcost explain", "why each session's misses cost money, with fixes", body)
