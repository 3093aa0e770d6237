"""The plan beside the API: what a month's calls cost at API prices (K3's, and each call's logged model's own), at
the month's pace, against subscription plans' monthly prices.

A call counts in the month it was made, in the report's time zone. The current month's pace is its cost to date
scaled to all its days (to date over the days counted, today included, times the month's days); a past month's is
its cost. A plan pays for itself where the pace at the logged models' own rates reaches its price; its break-even
is its price as a share of that pace: the share of this month's use at which it would.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from datetime import date, tzinfo
from decimal import Decimal

from kcost.analysis.forecast import by_day
from kcost.pricing.plans import Plan
from kcost.results.bill import BillReport
from kcost.results.plan import PlanReport, PlanRow


def plan_report(k3: BillReport, logged: BillReport, agents: Sequence[str], plans: Sequence[Plan], *, month: date,
                today: date, zone: tzinfo | None, zone_name: str) -> PlanReport:  # fmt: skip
    """The month of `month` (its first day) from the same sessions billed at K3's rates (`k3`) and at their logged
    models' (`logged`), beside `plans`."""
    days_in = calendar.monthrange(month.year, month.month)[1]
    current = (today.year, today.month) == (month.year, month.month)
    counted = today.day if current else days_in

    def in_month(report: BillReport) -> tuple[Decimal, int, int]:
        """The month's cost to today, its calls, and the sessions with a call in it: one pass over the bills."""
        cost, calls, sessions = Decimal(0), 0, 0
        for bill in report.runs[0].sessions:
            daily, counts, _ = by_day([bill], zone)
            days = [d for d in daily if (d.year, d.month) == (month.year, month.month) and d <= today]
            cost += sum((daily[d] for d in days), Decimal(0))
            calls += sum(counts[d] for d in days)
            sessions += bool(days)
        return cost, calls, sessions

    k3_cost, n_calls, sessions = in_month(k3)
    logged_cost, _, _ = in_month(logged)
    pace = Decimal(days_in) / Decimal(counted)
    k3_month, logged_month = k3_cost * pace, logged_cost * pace
    rows = [PlanRow(id=p.id, provider=p.provider, name=p.name, usd_month=p.usd_month,
                    windows_hours=list(p.windows_hours), source=p.source, read=p.read, as_of=p.as_of,
                    api_month=logged_month, pays_for_itself=logged_month >= p.usd_month,
                    break_even=round(float(p.usd_month / logged_month), 4) if logged_month else None,
                    saves=logged_month - p.usd_month) for p in plans]  # fmt: skip
    return PlanReport(cache=k3.runs[0].cache.label, timezone=zone_name, month=month.strftime("%Y-%m"), days=counted,
                      month_days=days_in, sessions=sessions, calls=n_calls, agents=sorted(set(agents)),
                      k3_to_date=k3_cost, logged_to_date=logged_cost,
                      unpriced_calls=sum(b.unpriced_calls for b in logged.runs[0].sessions), k3_month=k3_month,
                      logged_month=logged_month, plans=rows)  # fmt: skip
