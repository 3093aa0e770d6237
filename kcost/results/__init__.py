"""Every report kcost writes, in one place: the bill (`kcost.results.bill`: plain dataclasses, written without
pydantic) and the reports of `check` and `diff`, `explain`, `quote` and `trace` (pydantic models, in the modules
of those names), with the JSON Lines record and the price table. `SCHEMAS` names each for `kcost schema`.

Importing this package loads the bill's types only; each other report is imported where it is used.
"""

from __future__ import annotations

from kcost.results.bill import (
    Agreement,
    BillReport,
    CacheInfo,
    Check,
    Doc,
    MissLine,
    Money,
    PriceInfo,
    Rates,
    ReasonTotal,
    Record,
    Run,
    SessionBill,
    SessionRecord,
    Summary,
    TotalRecord,
    TurnBill,
    TurnRecord,
    adapter,
    blended,
    dump_json,
    iso_time,
    model_json,
    money_text,
    to_data,
)

# `kcost schema NAME`: the type (module:name) and whether it describes what kcost writes or what it reads
SCHEMAS: dict[str, tuple[str, str]] = {
    "bill": ("kcost.results.bill:BillReport", "serialization"),
    "jsonl": ("kcost.results.bill:Record", "serialization"),
    "turns": ("kcost.models:SessionSpec", "validation"),
    "quote": ("kcost.results.quote:Quote", "serialization"),
    "explain": ("kcost.results.explain:Explanations", "serialization"),
    "check": ("kcost.results.check:CheckReport", "serialization"),
    "diff": ("kcost.results.check:DiffReport", "serialization"),
    "trace": ("kcost.results.trace:TraceReport", "serialization"),
    "prices": ("kcost.results.prices:PriceTable", "validation"),
}

__all__ = [
    "SCHEMAS", "Agreement", "BillReport", "CacheInfo", "Check", "Doc", "MissLine", "Money", "PriceInfo", "Rates",
    "ReasonTotal", "Record", "Run", "SessionBill", "SessionRecord", "Summary", "TotalRecord", "TurnBill", "TurnRecord",
    "adapter", "blended", "dump_json", "iso_time", "model_json", "money_text", "to_data",
]  # fmt: skip
