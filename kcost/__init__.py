"""kcost: what a Kimi K3 session will cost, what it cost, and why.

The public API: `read`, `bill`, `report`, `quote`, `price_table` (from `kcost.api`) and the report types (from
`kcost.results`). Each is imported when first used, so `import kcost` and `kcost --version` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

from kcost.version import __version__

_API = {"read", "bill", "report", "quote", "price_table"}
_TYPES = {  # name -> the module of kcost.results that holds it
    **dict.fromkeys(("BillReport", "Run", "SessionBill", "TurnBill", "Summary", "MissLine", "CacheInfo", "PriceInfo"),
                    "bill"),
    **dict.fromkeys(("CheckReport", "DiffReport"), "check"),
    "Explanation": "explain",
    "Quote": "quote",
    "TraceReport": "trace",
    "PriceTable": "prices",
}  # fmt: skip
__all__ = ["__version__", *sorted(_API), *sorted(_TYPES)]


def __getattr__(name: str) -> Any:
    if name in _API:
        from kcost import api

        return getattr(api, name)
    if name in _TYPES:
        from importlib import import_module

        return getattr(import_module(f"kcost.results.{_TYPES[name]}"), name)
    raise AttributeError(f"module 'kcost' has no attribute {name!r}")
