"""Machine formats: JSON (the whole report, of any kind written as it is: bill, explain, quote, compare, trace),
and the bill's JSONL (a record per turn, session and total) and CSV (a row per turn). No rich, no pydantic.

JSONL and CSV are written a line at a time, from a whole report or from a bill streamed as it is billed
(`kcost.billing.bills.Streamed`, `streamed`): the same lines either way."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from kcost.results import BillReport, dump_json, to_data
from kcost.results.common import json_pieces

if TYPE_CHECKING:
    from kcost.render.registry import View
    from kcost.results import CacheInfo, SessionBill, Summary, TurnBill


def render_json(report: Any, view: View) -> str:
    """Any report that is written as it is, by the one JSON writer."""
    return dump_json(report, view.numbers) + "\n"


def pieces(fmt: str, report: BillReport, view: View) -> Iterator[str]:
    """The text `fmt` (json, jsonl or csv) renders of a whole bill, a piece at a time (for a writer that holds
    none of it whole)."""
    if fmt == "json":
        return _json_text(report, view)
    events = _events(report)
    return _jsonl(_records(events, view.numbers)) if fmt == "jsonl" else _csv(_records(events))


def _json_text(report: BillReport, view: View) -> Iterator[str]:
    yield from json_pieces(report, view.numbers)
    yield "\n"


def render_jsonl(report: BillReport, view: View) -> str:
    """`record` is `turn`, `session` or `total`; each line names its cache model and session."""
    return "".join(_jsonl(_records(_events(report), view.numbers)))


class Streamed(Protocol):
    """A bill billed a turn at a time (`kcost.billing.bills.Streamed`): its events, in the order of the report; then the
    report, with none of its turns; or the report with its turns written (`numbers`: money as JSON numbers)."""

    def events(self) -> Iterable[Any]: ...

    def report(self) -> BillReport: ...

    def written(self, numbers: bool) -> BillReport: ...


def streamed_json(stream: Streamed, view: View) -> Iterator[str]:
    """What `render_json` writes of the whole bill, a piece at a time, from a bill whose turns are written as they
    are billed (`Streamed.written`): the text of every turn is held, not the turns (a third of the memory)."""
    yield from _json_text(stream.written(view.numbers), view)


def streamed(fmt: str, stream: Streamed, view: View) -> Iterator[str]:
    """The text of `fmt` (json, jsonl or csv) of a bill as it is billed, a piece at a time: the lines of JSON
    Lines and CSV as each turn is billed, JSON once every turn is (`streamed_json`)."""
    if fmt == "json":
        return streamed_json(stream, view)
    events = stream.events()
    if fmt == "jsonl":
        return _jsonl(_records(events, view.numbers))
    return _csv(_records(events))


def _jsonl(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for r in records:
        yield json.dumps(r, separators=(",", ":")) + "\n"


Event = Any  # (cache, where, turn), (cache, bill) or a run: what `kcost.billing.bills.Streamed.events` yields


def _events(report: BillReport) -> Iterator[Event]:
    """A whole report as the events of one billed a turn at a time."""
    for run in report.runs:
        for bill in run.sessions:
            where = _Where(bill.name, bill.source, bill.model)
            for turn in bill.turns:
                yield run.cache, where, turn
            yield run.cache, bill
        yield run


class _Where:
    """A session as a turn's record names it (a `kcost.billing.bills.Billing` has the same)."""

    __slots__ = ("name", "source", "priced")

    def __init__(self, name: str, source: str, priced: str) -> None:
        self.name, self.source, self.priced = name, source, priced


def _records(events: Iterable[Event], numbers: bool = False) -> Iterator[dict[str, Any]]:
    where: dict[str, Any] = {}
    last = None
    for event in events:
        if isinstance(event, tuple) and len(event) == 3:
            cache, at, turn = event
            if at is not last:  # the next session's turns
                where = {"cache": cache.label, "session": at.name, "source": at.source, "model": at.priced}
                last = at
            yield _turn_record(where, turn, numbers)
        elif isinstance(event, tuple):
            cache, bill = event
            yield _session_record(cache, bill, numbers)
            last = None
        else:
            yield {"record": "total", "cache": event.cache.label, **to_data(event.total, numbers)}


def _turn_record(where: dict[str, Any], turn: TurnBill, numbers: bool) -> dict[str, Any]:
    """A turn's record: its session, and `model` the model the turn was priced at."""
    record = {"record": "turn", **where, **to_data(turn, numbers)}
    if turn.priced_model is not None:
        record["model"] = turn.priced_model
    return record


def _session_record(cache: CacheInfo, bill: SessionBill, numbers: bool) -> dict[str, Any]:
    where = {"cache": cache.label, "session": bill.name, "source": bill.source, "model": bill.model}
    logged = {"usage": bill.usage, "token_counts": bill.token_counts,
              "calls_sized_from_usage": bill.calls_sized_from_usage, "calls_estimated": bill.calls_estimated,
              "started": bill.started, "ended": bill.ended, "logged_models": bill.logged_models}  # fmt: skip
    summary: Summary = bill.summary
    return {"record": "session", **where, **logged, **to_data(summary, numbers)}


CSV_COLUMNS = (
    "cache", "session", "source", "model", "turn", "label", "input_tokens", "hit_tokens", "miss_tokens",
    "output_tokens", "hit_rate", "hit_cost", "miss_cost", "output_cost", "total", "cumulative", "reason", "time",
    "logged_model",
)  # fmt: skip


def render_csv(report: BillReport, view: View) -> str:
    """A row per turn of every session under every cache model."""
    return "".join(_csv(_records(_events(report))))


def _csv(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    out = io.StringIO()
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import csv

    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for record in records:
        if record["record"] == "turn":
            writer.writerow(record)
        if out.tell() > 1 << 16:  # a few rows at a time
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()
