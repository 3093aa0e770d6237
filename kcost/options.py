"""Choices shared by the command line and the core: named once here, imported by both (no heavy imports)."""

from kcost.bounds import MAX_TOKENS, MAX_TURNS

TURN_FORMATS = ("yaml", "json", "jsonl")
USAGE_MODES = ("auto", "simulated", "reported")
MAX_REPEAT = MAX_TURNS  # a turn's `repeat`: no more than a session may hold

__all__ = ["MAX_REPEAT", "MAX_TOKENS", "TURN_FORMATS", "USAGE_MODES"]
