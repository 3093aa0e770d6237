"""Choices shared by the command line and the core: named once here, imported by both (no heavy imports)."""

TURN_FORMATS = ("yaml", "json", "jsonl")
USAGE_MODES = ("auto", "simulated", "reported")
DEFAULT_WIDTH = 100  # columns, when the output is not a terminal and COLUMNS says nothing usable
MAX_TOKENS = 10**9  # per count in a turn spec: a thousand times K3's context window
MAX_REPEAT = 10**6
