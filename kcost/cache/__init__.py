"""The prefix-cache simulator: cache models, prompts as spans of tokens, and one session's run. No I/O here.

Importing this package loads nothing; each name is loaded from its module when first used (a trace needs the
models, not the session simulator)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kcost.cache.model import CacheModel, Kind, parse_cache_model
    from kcost.cache.simulator import MissPart, Outcome, Reason, Request, Simulator, Span, simulate

_HOMES = {"CacheModel": "model", "Kind": "model", "parse_cache_model": "model"} | {
    name: "simulator" for name in ("MissPart", "Outcome", "Reason", "Request", "Simulator", "Span", "simulate")
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kcost.cache' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"kcost.cache.{home}"), name)


__all__ = [
    "CacheModel",
    "Kind",
    "MissPart",
    "Outcome",
    "Reason",
    "Request",
    "Simulator",
    "Span",
    "parse_cache_model",
    "simulate",
]
