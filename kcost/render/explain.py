"""`kcost explain`: the turns whose avoidable misses cost money, then the causes by dollars, as a table, markdown
or an HTML page (its JSON is the report as it is, `kcost.render.data`). Several sessions lead with one answer for
all of them (`kcost.results.explain.summarize`: the fixes ranked across them by dollars saved); each session with
a fix that saves follows, the dearest first, unless `view.summary` (the command's default without --sessions); the
sessions with nothing to fix are counted in a line."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import count, exact, markdown_text, money, plural, signed_money, trimmed
from kcost.render.fit import Column, fitted
from kcost.render.html import figures, page, section, session, table, usd, usd_figure
from kcost.render.terminal import console as make_console
from kcost.results.explain import (
    ExplainSummary,
    Explanation,
    FixAcross,
    FixSaving,
    HourWrites,
    Ranked,
    TurnCauses,
    dearest_first,
    summarize,
)

if TYPE_CHECKING:
    from rich.console import Console

    from kcost.render.registry import View


def explain_table(items: list[Explanation], view: View) -> str:
    """The answer first: what the fixes save together, each fix by dollars saved with its turns and what to
    change, the unavoidable causes in a line; every turn's misses and the causes by cost under `--detail`. Several
    sessions: the fixes ranked across them first, then (unless `view.summary`) each session with a fix that saves,
    the dearest first."""
    width = view.width
    console, out = make_console(width, view.color)
    if len(items) > 1:
        summary = summarize(items)
        _summary_table(console, summary, view)
        items = [] if view.summary else [e for e in dearest_first(items) if to_fix(e)]
        if items:
            console.print()
    for e in items:
        _session_table(console, e, view)
    return trimmed(out.getvalue())


def _total_line(total: Decimal, avoidable: Decimal, tail: str) -> Text:
    """`total $X: avoidable $Y <what the fixes say>`, the total bold, what is avoidable in yellow where any is."""
    line = Text("total ")
    line.append(money(total, total=True), style="bold")
    line.append(": avoidable ")
    line.append(money(avoidable), style="yellow" if avoidable else "")
    line.append(f" {tail}")
    return line


def _summary_table(console: Console, s: ExplainSummary, view: View) -> None:
    """`N sessions · cache X`, the sum of what the fixes save, the fixes across the sessions by dollars saved, the
    unavoidable causes summed, and the sessions with nothing to fix counted."""
    console.print(Text(f"{plural(s.sessions, 'session')} · {caches_text(s.caches)}", style="bold"))
    console.print(_total_line(s.total, s.avoidable, summary_headline(s)))
    fixes = s.fixes[: view.top] if view.top is not None else s.fixes
    if fixes:
        columns = [Column("fix", number=False), Column("saves"), Column("sessions", number=False, drop=2),
                   Column("what to change", number=False, drop=1)]  # fmt: skip
        rows = [[f.fix, money(f.saving), sessions_text(f), f.change] for f in fixes]
        console.print(fitted(columns, rows, view.width, title="fixes across the sessions, by dollars saved"))
    else:
        console.print(f"no fix saves money in any of the {plural(s.sessions, 'session')}")
    if s.unavoidable:
        console.print(f"unavoidable: {ranked_line(s.unavoidable)}")
    for line_ in counted(s):
        console.print(line_)
    if view.summary and s.to_fix:
        console.print(f"--sessions: each session with a fix that saves ({plural(s.to_fix, 'session')}), the "
                      "dearest first; --detail: with every turn's misses")  # fmt: skip


def _session_table(console: Console, e: Explanation, view: View) -> None:
    width = view.width
    console.print(Text(f"{e.session} · cache {e.cache}", style="bold"))
    console.print(_total_line(e.total, e.avoidable, headline(e)))
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


def to_fix(e: Explanation) -> bool:
    """Whether some fix saves in the session (one that could not be priced saves nothing shown)."""
    return e.unpriced is None and any(f.saving > 0 for f in e.fixes)


def caches_text(caches: Sequence[str]) -> str:
    """`cache k3:hash=512,...`, or where the sessions were explained under several, the first two and how many
    more."""
    if len(caches) == 1:
        return f"cache {caches[0]}"
    more = f" (+{len(caches) - 2} more)" if len(caches) > 2 else ""
    return f"caches {', '.join(caches[:2])}{more}"


def summary_headline(s: ExplainSummary) -> str:
    """`in 2 sessions (every fix together: $15.24 -> $15.19; new input $0.40)`."""
    if s.avoidable:
        return (f"in {plural(s.to_fix, 'session')} (every fix together: {money(s.total, total=True)} -> "
                f"{money(s.fixed_total, total=True)}; new input {money(s.new_input_cost)})")  # fmt: skip
    return f"(new input {money(s.new_input_cost)}, a miss under any cache)"


def short_name(name: str, most: int = 32) -> str:
    """A session's name cut in the middle to at most `most` characters, its start and end kept."""
    if len(name) <= most:
        return name
    keep = most - 1
    return name[: (keep + 1) // 2].rstrip() + "\u2026" + name[len(name) - keep // 2 :].lstrip()


def sessions_text(f: FixAcross, most: int = 1, *, short: bool = True) -> str:
    """`edit an early message $0.0429, growing chat $0.0100 (+2 more)`: the `most` sessions where the fix saves
    most, their names `short` for a terminal's table."""
    shown = ", ".join(f"{short_name(s.session) if short else s.session} {money(s.saving)}" for s in f.sessions[:most])
    rest = len(f.sessions) - most
    return f"{shown} (+{rest} more)" if rest > 0 else shown


def ranked_line(ranked: Sequence[Ranked]) -> str:
    """`cold start $0.0800 (1 turn) · block granularity $0.1200 (150 turns)`."""
    return " · ".join(f"{r.cause} {money(r.cost)} ({plural(r.turns, 'turn')})" for r in ranked)


def counted(s: ExplainSummary) -> list[str]:
    """The sessions no fix is shown for, a line each kind: those with nothing to fix, those not priced."""
    out = []
    if s.nothing_to_fix:
        out.append(f"nothing to fix in {plural(s.nothing_to_fix, 'session')} ({money(s.nothing_total, total=True)} "
                   "together): no fix saves money there")  # fmt: skip
    if s.unpriced:
        out.append(f"fixes not priced in {plural(s.unpriced, 'session')} ({money(s.unpriced_total, total=True)} "
                   "together): billed as their logs report (fixes are priced on simulated usage)")  # fmt: skip
    return out


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
    return ranked_line(e.unavoidable)


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
    if len(items) > 1:
        summary = summarize(items)
        out += _summary_markdown(summary, view)
        items = [] if view.summary else [e for e in dearest_first(items) if to_fix(e)]
    for e in items:
        out += _session_markdown(e, view)
    return "\n".join(out)


def _summary_markdown(s: ExplainSummary, view: View) -> list[str]:
    out = [f"### {plural(s.sessions, 'session')} · {markdown_text(caches_text(s.caches))}", ""]
    out += [f"total **{money(s.total, total=True)}**: avoidable **{money(s.avoidable)}** {summary_headline(s)}", ""]
    fixes = s.fixes[: view.top] if view.top is not None else s.fixes
    if fixes:
        out += ["| fix | saves | sessions | what to change |", "|---|---:|---|---|"]
        for f in fixes:
            where = markdown_text(sessions_text(f, 5, short=False))
            out.append(f"| {f.fix} | {money(f.saving)} | {where} | {markdown_text(f.change)} |")
        out.append("")
    else:
        out += [f"no fix saves money in any of the {plural(s.sessions, 'session')}", ""]
    if s.unavoidable:
        out += [f"unavoidable: {ranked_line(s.unavoidable)}", ""]
    for line in counted(s):
        out += [line, ""]
    if view.summary and s.to_fix:
        out += [f"`--sessions`: each session with a fix that saves ({plural(s.to_fix, 'session')}), the dearest "
                "first", ""]  # fmt: skip
    return out


def _session_markdown(e: Explanation, view: View) -> list[str]:
    out = [f"### {markdown_text(e.session)} · cache `{e.cache}`", ""]
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
    return out


def explain_html(items: Sequence[Explanation], view: View) -> str:
    """Each session's avoidable causes by cost, as a chart and a sortable table, with their fixes. Several
    sessions: the fixes ranked across them and their causes summed first, then each session with a fix that saves,
    the dearest first, and those with nothing to fix in one table, each section collapsed."""
    if len(items) <= 1:
        body = [part for e in items for part in _session_html(e, view, f"<h2>{_title_html(e)}</h2>")]
        return page("kcost explain", "why each session's misses cost money, with fixes", body)
    summary = summarize(items)
    body = [section(_summary_html(summary, view))]
    ordered = dearest_first(items)
    shown = [e for e in ordered if to_fix(e)]
    if shown:
        body.append(f"<h2>Sessions with a fix that saves, the dearest first ({len(shown)})</h2>")
    for e in shown:
        head = (f'{_title_html(e)} <span class="note">· total {money(e.total, total=True)} · avoidable '
                f"{money(e.avoidable)}</span>")  # fmt: skip
        body.append(session(head, _session_html(e, view, "")))
    rest = [e for e in ordered if not to_fix(e)]
    if rest:
        body.append(f"<h2>Sessions with nothing to fix ({len(rest)})</h2>")
        rows = [[(e.session, None), usd(e.total, total=True), usd(e.new_input_cost), (_untouched(e), None)]
                for e in rest]  # fmt: skip
        listed = table(["session", "total", "new input", "misses by cause"], rows, text_columns=(0, 3))
        body.append(session(f"each one's total and misses by cause ({len(rest)})", [listed]))
    return page("kcost explain", f"why {len(items)} sessions' misses cost money, with fixes", body)


def _untouched(e: Explanation) -> str:
    """What a session with nothing to fix missed, by cause (its fixes not priced, where they are not)."""
    causes = ranked_line(e.ranked) or "new input only"
    return f"fixes not priced; {causes}" if e.unpriced else causes


def _title_html(e: Explanation) -> str:
    from html import escape

    return f"{escape(e.session)} · <code>{escape(e.cache)}</code>"


def _summary_html(s: ExplainSummary, view: View) -> list[str]:
    """The answer across the sessions: their totals, the fixes by dollars saved as a chart and a table, the
    causes summed as a chart, the unavoidable ones and the sessions with nothing to fix in a line each."""
    from html import escape

    body = [f"<h2>All {s.sessions} sessions · {escape(caches_text(s.caches))}</h2>"]
    body.append(figures([
        usd_figure("total", s.total, "total"),
        usd_figure("new input", s.new_input_cost, total=False),
        usd_figure("avoidable", s.avoidable, total=False),
        usd_figure("with every fix", s.fixed_total),
        ("sessions to fix", f"{s.to_fix} of {s.sessions}", None),
    ]))  # fmt: skip
    fixes = s.fixes[: view.top] if view.top is not None else s.fixes
    if fixes:
        body.append("<h3>Fixes across the sessions, by dollars saved (each billed again in each session)</h3>")
        body.append(svg.hbars(
            f"Fixes across {s.sessions} sessions",
            "What each fix saves, summed over the sessions where it saves, largest first.",
            [(f.fix, float(f.saving)) for f in fixes],
        ))  # fmt: skip
        body.append(table(
            ["fix", "saves", "sessions", "what to change"],
            [[(f.fix, None), usd(f.saving), (sessions_text(f, 5, short=False), None), (f.change, None)] for f in fixes],
            text_columns=(0, 2, 3),
        ))  # fmt: skip
    else:
        body.append(f"<p>no fix saves money in any of the {escape(plural(s.sessions, 'session'))}</p>")
    if s.unavoidable:
        body.append(f'<p class="note">unavoidable: {escape(ranked_line(s.unavoidable))}</p>')
    body += [f'<p class="note">{escape(line)}</p>' for line in counted(s)]
    if s.ranked:
        body.append("<h3>Causes of misses across the sessions, by cost</h3>")
        body.append(svg.hbars(
            f"Causes by cost across {s.sessions} sessions",
            "What each cause of misses cost, summed over the sessions, largest first.",
            [(r.cause, float(r.cost)) for r in s.ranked],
        ))  # fmt: skip
    return body


def _session_html(e: Explanation, view: View, heading: str) -> list[str]:
    """One session's figures, fixes, notes and causes by cost, under `heading`."""
    from html import escape

    body = [heading] if heading else []
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
        return body
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
    return body
