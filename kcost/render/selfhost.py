"""`kcost selfhost` on a terminal, as markdown and as an HTML page with the chart of cost against monthly volume
(both lines and their crossing). The three share one reading of the report (`_facts`), so they say the same."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from rich.text import Text

from kcost.render import svg
from kcost.render.display import count, markdown_text, money, percent, plural, tokens
from kcost.render.fit import Column, fitted
from kcost.render.html import figures, page, shown_path, table, usd, usd_figure
from kcost.render.terminal import console as make_console
from kcost.results.selfhost import SelfhostReport

if TYPE_CHECKING:
    from kcost.render.registry import View


def _volume(n: float) -> str:
    """Tokens a month in short form, trillions included: `950M`, `972.66B`, `52.23T`."""
    return tokens(n / 1000, 2).replace("B", "T") if n >= 10**12 else tokens(n, 2)


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
        ("API bill", f"{money(w.api_cost, total=True)} ({money(r.api_per_mtok)} per million tokens); {pace}"),
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
        cost.append(("at its pace", f"API {money(r.workload_monthly_api, total=True)} a month, fleet "
                                    f"{money(r.workload_monthly_fleet, total=True)}"))  # fmt: skip
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
    console, out = make_console(view.width, view.color)
    for title, rows in _facts(report):
        console.print(Text(title, style="bold"))
        console.print(fitted([Column("", number=False), Column("", number=False)], [list(r) for r in rows],
                             view.width))  # fmt: skip
    console.print(Text("figures", style="bold"))
    columns = [
        Column("figure", number=False),
        Column("value"),
        Column("unit", number=False, drop=2),
        Column("date", number=False),
        Column("est.", number=False),
        Column("source", number=False, drop=1),
    ]
    table = [[x.key, _value(x.value), x.unit, x.date or "-", _mark(x.estimate, x.overridden), x.source]
             for x in report.figures]  # fmt: skip
    console.print(fitted(columns, table, view.width))
    console.print(_estimates(report))
    for note in report.notes:
        console.print(f"note: {note}")
    return out.getvalue()


def selfhost_markdown(report: SelfhostReport, view: View) -> str:
    lines = []
    for i, (title, rows) in enumerate(_facts(report)):
        lines.append(f"{'#' if i == 0 else '##'} {markdown_text(title)}\n")
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
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from html import escape

    r = report
    heads = [usd_figure("API bill", r.workload.api_cost), usd_figure("fleet a month", r.fleet.monthly_floor),
             ("break-even", _volume(float(r.break_even_tokens)) + " tokens/month" if r.break_even_tokens is not None
              else "never", None), ("memory floor", _tb(r.memory.floor_bytes), None)]  # fmt: skip
    body = [figures(heads), "<h2>Cost against monthly volume</h2>", cost_chart(r)]
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
