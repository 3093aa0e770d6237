"""`kcost selfhost` on a terminal, as markdown and as an HTML page with the chart of cost against monthly volume
(both lines and their crossing). The three share one reading of the report (`_answer`, `_facts`), so they say the
same: the answer first, in a few lines; the facts behind it, every figure and its source on request (`--detail`;
the page has them all). A source is shortened on a terminal (`SOURCE`), whole in the markdown, the page and the
JSON.

The workload's API bill covers its logged calls, however long they span; beside the fleet's month it is set
normalised to a month at its logged pace (where its calls are timed), and the bill itself is named with its span.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import count, markdown_text, money, percent, plural
from kcost.render.fit import Column, fitted
from kcost.render.html import Figure, figures, page, section, shown_path, table, usd, usd_figure
from kcost.render.terminal import console as make_console
from kcost.results.selfhost import SelfhostReport

if TYPE_CHECKING:
    from kcost.render.registry import View


SOURCE = 60  # the most characters of a figure's source a terminal table shows


def _volume(n: float) -> str:
    """Tokens a month in short form, trillions included, as the chart's axis writes them: `950M`, `972.66B`,
    `52.23T`."""
    return svg.short(n)


def _span(r: SelfhostReport) -> str | None:
    """How long the workload's logged calls span, as people say it: `40 minutes`, `3.2 hours`, `12 days`,
    `7.2 months` (a month as the report's `hours_per_month`); None where its calls are not timed."""
    seconds = r.workload.span_seconds
    if seconds is None:
        return None
    month = next((float(x.value) for x in r.figures if x.key == "hours_per_month"), 730.0) * 3600
    for size, unit in ((month, "month"), (86_400.0, "day"), (3600.0, "hour"), (60.0, "minute")):
        if seconds >= 2 * size or size == 60.0:
            value = seconds / size
            shown = f"{value:.1f}".removesuffix(".0") if value < 10 else f"{value:,.0f}"
            return f"{shown} {unit}{'' if shown == '1' else 's'}"
    return None


def _covers(r: SelfhostReport) -> str:
    """What the API bill covers: `29 sessions over 3 hours of calls`, `1 session, its calls not timed`."""
    span = _span(r)
    what = plural(r.workload.units, "session" if r.workload.kind == "sessions" else "request")
    return f"{what} over {span} of calls" if span else f"{what}, its calls not timed"


def _bill(r: SelfhostReport) -> str:
    """The API bill, named with what it covers: `$95.70 for 29 sessions over 3 hours of calls`."""
    return f"{money(r.workload.api_cost, total=True)} for {_covers(r)}"


def _answer(r: SelfhostReport) -> list[str]:
    """The answer in a few lines: where a fleet breaks even, the API's cost beside the fleet's month (normalised to
    a month at the logged pace), the fleet's price, the memory floor, and where the rest is."""
    f, m = r.fleet, r.memory
    own = next(h for h in m.by_accelerator if h.accelerator == f.accelerator)
    fleet = f"{count(f.accelerators)} x {f.accelerator}"
    if r.break_even_tokens is not None and r.break_even_cost is not None:
        head = (f"{r.model_name} on {fleet} costs less than the API past {_volume(float(r.break_even_tokens))} "
                f"tokens a month ({money(r.break_even_cost, total=True)} a month either way)")  # fmt: skip
    else:
        head = f"{r.model_name} on {fleet} never costs less than the API: the API costs less a token"
    w = r.workload
    lines = [head, f"API: {money(w.api_cost, total=True)} for {_source(w.source)} ({_covers(r)}), "
             f"{money(r.api_per_mtok)} per million tokens"]  # fmt: skip
    if r.workload_monthly_api is not None and r.workload_monthly_fleet is not None and r.workload.monthly_tokens:
        lines.append(f"a month at its logged pace ({_volume(float(r.workload.monthly_tokens))} tokens): API "
                     f"{money(r.workload_monthly_api, total=True)} against the fleet's "
                     f"{money(r.workload_monthly_fleet, total=True)}")  # fmt: skip
    lines.append(f"fleet: {money(f.monthly_floor, total=True)} a month at {money(f.hourly, total=True)} an "
                 f"accelerator-hour, {percent(f.utilization, 0)} busy; up to {_volume(float(f.floor_capacity_tokens))}"
                 f" tokens a month, then {money(r.fleet_per_mtok)} per million")  # fmt: skip
    lines.append(f"memory floor {_tb(m.floor_bytes)}: at least {count(own.least)} {f.accelerator}, "
                 f"{count(own.recommended)} recommended")  # fmt: skip
    return lines


def _more(r: SelfhostReport) -> str:
    """Where the rest is."""
    return (
        f"{count(len(r.estimates))} of {plural(len(r.figures), 'figure')} are estimates; the facts, every "
        "figure and its source: --detail (or --format json)"
    )


def _source(text: str, most: int = SOURCE) -> str:
    """A source cut at a word to at most `most` characters (`…` where it was cut): its page, and the start of
    what it says."""
    if len(text) <= most:
        return text
    cut = text[: most - 1]
    return (cut[: cut.rfind(" ")] if " " in cut[most // 2 :] else cut).rstrip(" ,;:(") + "…"


def _value(v: Decimal) -> str:
    """A figure's value: whole numbers below ten million with separators, else four significant digits."""
    return f"{int(v):,}" if v == v.to_integral_value() and abs(v) < 10**7 else f"{v:.4g}"


def _tb(value: Decimal) -> str:
    return f"{value / Decimal(10**12):.3f} TB"


def _facts(r: SelfhostReport) -> list[tuple[str, list[tuple[str, str]]]]:
    """The report's headline facts, section by section, as every human format shows them."""
    w, m, f = r.workload, r.memory, r.fleet
    own = next(h for h in m.by_accelerator if h.accelerator == f.accelerator)
    pace = (f"{_volume(float(w.monthly_tokens))} tokens a month at its logged pace" if w.monthly_tokens is not None
            else "no logged pace (its calls are not timed)")  # fmt: skip
    workload = [
        ("workload", f"{w.source}: {plural(w.units, 'session' if w.kind == 'sessions' else 'request')}"),
        ("tokens", f"{count(w.input_tokens)} input ({percent(w.hit_tokens / w.input_tokens if w.input_tokens else 0)}"
                   f" cache hits under {w.cache}), {count(w.output_tokens)} output"),
        ("API bill", f"{_bill(r)} ({money(r.api_per_mtok)} per million tokens); {pace}"),
        ("in flight", f"{plural(w.concurrent_contexts, 'context')} of {count(w.context_tokens)} tokens "
                      f"({w.concurrency_from})"),
    ]  # fmt: skip
    memory = [
        ("weights", f"{_tb(m.weights_bytes)} at {m.bits_per_weight} bits a weight"),
        ("KV + KDA state", _tb(m.state_bytes)),
        ("memory floor", _tb(m.floor_bytes)),
    ]
    memory += [(h.accelerator, f"{count(h.least)} at least ({h.memory_gb} GB each); recommended {count(h.recommended)}"
                f" ({h.domain} an interconnect domain)") for h in m.by_accelerator]  # fmt: skip
    fleet = [
        ("fleet", f"{count(f.accelerators)} x {f.accelerator} ({own.name}), throughput scaled from {f.deployment}"),
        ("throughput", f"{count(int(f.prefill_tokens_per_second))} prefill and {count(int(f.decode_tokens_per_second))}"
                       " decode tokens a second an accelerator"),
        ("price", f"{money(f.hourly, total=True)} an accelerator-hour ({f.pricing} {money(f.hourly_low, total=True)}"
                  f"-{money(f.hourly_high, total=True)}) at {percent(f.utilization, 0)} utilisation"),
        ("monthly floor", f"{money(f.monthly_floor, total=True)}, serving up to "
                          f"{_volume(float(f.floor_capacity_tokens))} tokens a month; past it "
                          f"{money(r.fleet_per_mtok)} per million tokens"),
    ]  # fmt: skip
    if r.break_even_tokens is not None and r.break_even_cost is not None:
        verdict = (f"{_volume(float(r.break_even_tokens))} tokens a month "
                   f"({money(r.break_even_cost, total=True)} a month either way)")  # fmt: skip
    else:
        verdict = "never: the API costs less a token than the fleet"
    cost = [("break-even", verdict)]
    if r.workload_monthly_api is not None and r.workload_monthly_fleet is not None:
        cost.append(("at its pace", f"API {money(r.workload_monthly_api, total=True)} a month (its bill normalised "
                                    f"to a month), fleet {money(r.workload_monthly_fleet, total=True)}"))  # fmt: skip
    return [(f"{r.model_name} (weights open since {r.weights_open})", workload), ("memory", memory),
            ("fleet", fleet), ("cost", cost)]  # fmt: skip


def _mark(estimate: bool, overridden: bool) -> str:
    return "estimate" if estimate else "given" if overridden else ""


def _estimates(r: SelfhostReport) -> str:
    return (
        ("estimates (not confirmed from a primary source): " + ", ".join(r.estimates))
        if r.estimates
        else ("no figure is an estimate")
    )


def selfhost_table(report: SelfhostReport, view: View) -> str:
    """The answer; with `--detail` (`view.detail`), the facts behind it section by section, every figure with its
    date and source (shortened), which are estimates, and the notes."""
    console, out = make_console(view.width, view.color)
    answer = _answer(report)
    console.print(Text(answer[0], style="bold"))
    for line in answer[1:]:
        console.print(line)
    if not view.detail:
        console.print(Text(_more(report), style="dim"))
        return out.getvalue()
    for title, rows in _facts(report):
        console.print()
        console.print(Text(title, style="bold"))
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            console.print(f"{k:<{width}}  {v}")
    console.print()
    console.print(Text("figures", style="bold"))
    columns = [
        Column("figure", number=False),
        Column("value"),
        Column("unit", number=False, drop=2),
        Column("date", number=False),
        Column("est.", number=False),
        Column("source", number=False, drop=1),
    ]
    table = [[x.key, _value(x.value), x.unit, x.date or "-", _mark(x.estimate, x.overridden), _source(x.source)]
             for x in report.figures]  # fmt: skip
    console.print(fitted(columns, table, view.width))
    console.print(_estimates(report))
    for note in report.notes:
        console.print(f"note: {note}")
    return out.getvalue()


def selfhost_markdown(report: SelfhostReport, view: View) -> str:
    """The answer; with `--detail`, the facts, and every figure with its whole source."""
    answer = _answer(report)
    lines = [f"# {markdown_text(answer[0])}", ""]
    lines += [f"- {markdown_text(line)}" for line in answer[1:]]
    lines.append("")
    if not view.detail:
        lines.append(markdown_text(_more(report)))
        return "\n".join(lines) + "\n"
    for title, rows in _facts(report):
        lines.append(f"## {markdown_text(title)}\n")
        lines += [f"- **{markdown_text(k)}**: {markdown_text(v)}" for k, v in rows]
        lines.append("")
    lines.append("## Figures\n")
    lines.append("| figure | value | unit | date | estimate | source |")
    lines.append("|---|---:|---|---|---|---|")
    for x in report.figures:
        est = "estimate" if x.estimate else ("given" if x.overridden else "")
        lines.append(f"| {x.key} | {_value(x.value)} | {markdown_text(x.unit)} | {x.date or '-'} | {est} | "
                     f"{markdown_text(x.source)} |")  # fmt: skip
    lines.append("")
    lines.append(markdown_text(_estimates(report)))
    lines.append("")
    lines += [f"- {markdown_text(n)}" for n in report.notes]
    return "\n".join(lines) + "\n"


def cost_chart(report: SelfhostReport) -> str:
    """Cost a month against tokens a month: the API's line, the fleet's, and their crossing named on the axis."""
    api = [(float(p.monthly_tokens), float(p.api)) for p in report.curve]
    fleet = [(float(p.monthly_tokens), float(p.fleet)) for p in report.curve]
    names: dict[float, str] = {}
    if report.break_even_tokens is not None and report.break_even_cost is not None:
        x, y = float(report.break_even_tokens), float(report.break_even_cost)
        api, fleet = sorted([*api, (x, y)]), sorted([*fleet, (x, y)])
        names[x] = f"break-even {_volume(x)}"
    capacity = float(report.fleet.floor_capacity_tokens)
    if 0 < capacity <= api[-1][0]:
        fleet = sorted({*fleet, (capacity, float(report.fleet.monthly_floor))})
    return svg.lines("Monthly cost: API against a self-hosted fleet",
                     "The API bill and the fleet's cost a month against tokens a month; they cross at the "
                     "break-even volume.", [("API", api), (f"fleet ({report.fleet.accelerators} x "
                     f"{report.fleet.accelerator})", fleet)], x_label="tokens a month", y_label="cost a month",
                     unit="$", x_names=names)  # fmt: skip


def selfhost_html(report: SelfhostReport, view: View) -> str:
    """The answer and its headline figures first (the API's month beside the fleet's where the calls are timed,
    else the API bill named with what it covers), the chart of cost against monthly volume and its table, then the
    facts and every figure with its whole source."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    r = report
    answer = _answer(r)
    if r.workload_monthly_api is not None:
        api: Figure = usd_figure("API a month at its pace", r.workload_monthly_api)
    else:
        api = ("API bill", money(r.workload.api_cost, total=True), None, _bill(r))
    heads = [api, usd_figure("fleet a month", r.fleet.monthly_floor),
             ("break-even", _volume(float(r.break_even_tokens)) + " tokens/month" if r.break_even_tokens is not None
              else "never", None), ("memory floor", _tb(r.memory.floor_bytes), None)]  # fmt: skip
    summary = [
        f"<p><b>{escape(answer[0])}</b></p>",
        figures(heads),
        '<ul class="note">' + "".join(f"<li>{escape(line)}</li>" for line in answer[1:]) + "</ul>",
    ]
    body = [section(summary), "<h2>Cost against monthly volume</h2>", cost_chart(r)]
    body.append(table(["tokens a month", "API", "fleet"],
                      [[(_volume(float(p.monthly_tokens)), float(p.monthly_tokens)), usd(p.api, total=True),
                        usd(p.fleet, total=True)] for p in r.curve]))  # fmt: skip
    for title, rows in _facts(r):
        body.append(f"<h2>{escape(title)}</h2>")
        body.append(table(["", ""], [[(k, None), (v, None)] for k, v in rows], text_columns=(0, 1)))
    body.append("<h2>Figures</h2>")
    body.append(table(["figure", "value", "unit", "date", "estimate", "source"],
                      [[(x.key, None), (_value(x.value), float(x.value)), (x.unit, None), (x.date or "-", None),
                        ("estimate" if x.estimate else ("given" if x.overridden else ""), None), (x.source, None)]
                       for x in r.figures], text_columns=(0, 2, 3, 4, 5)))  # fmt: skip
    body.append(f'<p class="note">{escape(_estimates(r))}</p>')
    body += [f'<p class="note">{escape(n)}</p>' for n in r.notes]
    return page("kcost selfhost", f"{r.generator} · {shown_path(r.workload.source)}", body)
