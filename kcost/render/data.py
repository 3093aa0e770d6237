"""Machine formats: JSON (the whole report, of any kind written as it is: bill, explain, quote, compare, trace),
and the bill's JSONL (a record per turn, session and total) and CSV (a row per turn). No rich, no pydantic."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kcost.results import BillReport, dump_json, to_data

if TYPE_CHECKING:
    from kcost.render.registry import View


def render_json(report: Any, view: View) -> str:
    """Any report that is written as it is, by the one JSON writer."""
    return dump_json(report, view.numbers) + "\n"


def render_jsonl(report: BillReport, view: View) -> str:
    """`record` is `turn`, `session` or `total`; each line names its cache model and session."""
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in _records(report, view.numbers))


def _records(report: BillReport, numbers: bool = False) -> Iterator[dict[str, Any]]:
    for run in report.runs:
        cache = run.cache.label
        for bill in run.sessions:
            where = {"cache": cache, "session": bill.name, "source": bill.source, "model": bill.model}
            for turn in bill.turns:
                yield {"record": "turn", **where, **to_data(turn, numbers)}
            logged = {"usage": bill.usage, "token_counts": bill.token_counts,
                      "calls_sized_from_usage": bill.calls_sized_from_usage, "calls_estimated": bill.calls_estimated,
                      "started": bill.started, "ended": bill.ended, "logged_models": bill.logged_models}  # fmt: skip
            yield {"record": "session", **where, **logged, **to_data(bill.summary, numbers)}
        yield {"record": "total", "cache": cache, **to_data(run.total, numbers)}


CSV_COLUMNS = (
    "cache", "session", "source", "model", "turn", "label", "input_tokens", "hit_tokens", "miss_tokens",
    "output_tokens", "hit_rate", "hit_cost", "miss_cost", "output_cost", "total", "cumulative", "reason", "time",
    "logged_model",
)  # fmt: skip


def render_csv(report: BillReport, view: View) -> str:
    """A row per turn of every session under every cache model."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for record in _records(report):
        if record["record"] == "turn":
            writer.writerow(record)
    return out.getvalue()
