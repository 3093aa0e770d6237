"""The prefix-cache simulator: cache models, prompts as spans of tokens, and one session's run. No I/O here."""

from kcost.cache.model import CacheModel, Kind, parse_cache_model
from kcost.cache.simulator import MissPart, Outcome, Reason, Request, Simulator, Span, simulate

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
