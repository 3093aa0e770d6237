"""The forecast (`kcost forecast`) as a table, markdown, or an HTML page with its plot (its JSON is the report as it
is, `kcost.render.data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcost.render.display import money, plural
from kcost.results.forecast import ForecastReport

if TYPE_CHECKING:
    from kcost.render.registry import View


def forecast_lines(report: ForecastReport) -> list[str]:
    """What every text format says, a line each."""
    lines = [f"{report.month} · under {report.cache} · cost at {', '.join(report.prices.rates) or 'K3'} prices · "
             f"days in {report.timezone}",  # fmt: skip
             f"spent to {report.today}: {money(report.spent, total=True)}"]
    if not report.enough:
        lines.append(f"no forecast: {report.note}")
    elif report.projected_median is not None and report.projected_p90 is not None:
        lines.append(f"by the month's end: {money(report.projected_median, total=True)} (median), up to "
                     f"{money(report.projected_p90, total=True)} (P90), from {plural(report.history_days, 'day')} "
                     f"of history over the {plural(report.remaining_days, 'day')} left")  # fmt: skip
        if report.daily_median is not None and report.daily_p90 is not None:
            lines.append(f"a day of the history: {money(report.daily_median, total=True)} median, "
                         f"{money(report.daily_p90, total=True)} P90")  # fmt: skip
    if report.undated_calls:
        lines.append(f"{plural(report.undated_calls, 'call')} with no logged time left out")
    return lines


def forecast_table(report: ForecastReport, view: View) -> str:
    return "\n".join(forecast_lines(report)) + "\n"


def forecast_markdown(report: ForecastReport, view: View) -> str:
    from kcost.render.display import markdown_text

    first, *rest = forecast_lines(report)
    return "\n".join([f"**{markdown_text(first)}**", "", *(f"- {markdown_text(line)}" for line in rest)]) + "\n"


def forecast_html(report: ForecastReport, view: View) -> str:
    """The lines, and a plot: the month's cost day by day to today, then the median and P90 projections to its
    end."""
    from html import escape

    from kcost.render import svg
    from kcost.render.html import page

    month = [d for d in report.days if d.day.startswith(report.month)]
    spent: list[tuple[float, float]] = []
    running = 0.0
    for d in month:
        running += float(d.cost)
        spent.append((float(int(d.day[8:])), running))
    series = [("spent", spent)]
    if report.projected_median is not None and report.projected_p90 is not None and spent:
        today, last = spent[-1][0], spent[-1][0] + report.remaining_days
        series += [("median projection", [(today, running), (last, float(report.projected_median))]),
                   ("P90 projection", [(today, running), (last, float(report.projected_p90))])]  # fmt: skip
    chart = svg.lines(f"{report.month}: spent and projected", "The month's cost day by day to today, and where the "
                      "median and 90th-percentile runs of the history's days take it by the month's end.", series,
                      x_label="day of the month", y_label="cost", unit="$")  # fmt: skip
    body = [f"<p>{escape(line)}</p>" for line in forecast_lines(report)[1:]] + [chart]
    return page(f"kcost forecast {report.month}", forecast_lines(report)[0], body)
