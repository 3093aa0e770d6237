"""Every report kcost writes, in one place: the parts they share and the writer (`kcost.results.common`), the
bill (`kcost.results.bill`) and its JSON Lines records (`kcost.results.records`), the reports of `check` and
`diff`, `explain`, `quote` and `trace` (in the modules of those names), and the price table. `SCHEMAS` names each
for `kcost schema`.

Importing this package loads nothing; each name is loaded from its module when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kcost.results.bill import (
        Agreement,
        BillReport,
        CacheFit,
        Check,
        FitCandidate,
        MissLine,
        ReasonTotal,
        Run,
        SessionBill,
        Summary,
        TurnBill,
        blended,
    )
    from kcost.results.common import (
        CacheInfo,
        Doc,
        Money,
        PriceInfo,
        Rates,
        adapter,
        dump_json,
        iso_time,
        money_text,
        to_data,
    )
    from kcost.results.records import Record, SessionRecord, TotalRecord, TurnRecord

_HOMES = (
    {
        name: "bill"
        for name in (
            "Agreement",
            "BillReport",
            "CacheFit",
            "Check",
            "FitCandidate",
            "MissLine",
            "ReasonTotal",
            "Run",
            "SessionBill",
            "Summary",
            "TurnBill",
            "blended",
        )
    }
    | {name: "records" for name in ("Record", "SessionRecord", "TotalRecord", "TurnRecord")}
    | {
        name: "common"
        for name in (
            "CacheInfo",
            "Doc",
            "Money",
            "PriceInfo",
            "Rates",
            "adapter",
            "dump_json",
            "iso_time",
            "money_text",
            "to_data",
        )
    }
)


def __getattr__(name: str) -> Any:
    """A report type or writer, from its module when first asked for (the trace path never loads the bill's)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kcost.results' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"kcost.results.{home}"), name)


# `kcost schema NAME`: the type (module:name) and whether it describes what kcost writes or what it reads
SCHEMAS: dict[str, tuple[str, str]] = {
    "bill": ("kcost.results.bill:BillReport", "serialization"),
    "jsonl": ("kcost.results.records:Record", "serialization"),
    "turns": ("kcost.readers.specs.models:SessionSpec", "validation"),
    "quote": ("kcost.results.quote:Quote", "serialization"),
    "explain": ("kcost.results.explain:Explanations", "serialization"),
    "check": ("kcost.results.check:CheckReport", "serialization"),
    "diff": ("kcost.results.check:DiffReport", "serialization"),
    "trace": ("kcost.results.trace:TraceReport", "serialization"),
    "compare": ("kcost.results.compare:CompareReport", "serialization"),
    "overview": ("kcost.results.overview:OverviewReport", "serialization"),
    "forecast": ("kcost.results.forecast:ForecastReport", "serialization"),
    "plan": ("kcost.results.plan:PlanReport", "serialization"),
    "prices": ("kcost.results.prices:PriceTable", "validation"),
    "selfhost": ("kcost.results.selfhost:SelfhostReport", "serialization"),
    "formats": ("kcost.results.formats:FormatListing", "serialization"),
    "ledger": ("kcost.results.ledger:ExportLine", "validation"),
}

__all__ = [
    "SCHEMAS", "Agreement", "BillReport", "CacheFit", "CacheInfo", "Check", "Doc", "FitCandidate", "MissLine", "Money",
    "PriceInfo", "Rates", "ReasonTotal", "Record", "Run", "SessionBill", "SessionRecord", "Summary", "TotalRecord",
    "TurnBill", "TurnRecord", "adapter", "blended", "dump_json", "iso_time", "money_text", "to_data",
]  # fmt: skip
