"""The causes `kcost explain` names for avoidable misses, each with the fix a user can apply, in one table.

A cause comes from one of two places. A reader's comparison of each prompt with the one before names how a
prompt changed (`Change`: the cause and what exactly), which is the cause of a `prefix-changed` miss; every
other miss reason of the simulator (`Reason`) names its cause through `BY_REASON`. The text of each member is
the text the reports show, so JSON output carries it as it always has.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from kcost.model.requests import Reason


class Cause(str, Enum):
    """Why tokens a cache could have served were billed as misses."""

    # how a prompt changed, as the comparison with the previous prompt finds it
    SYSTEM_PROMPT_CHANGED = "system prompt changed"
    TOOL_LIST_CHANGED = "tool list changed"
    ANOTHER_AGENT = "another agent"
    UNLOGGED_PREFIX_CHANGED = "unlogged prefix changed"
    EFFORT_CHANGED = "reasoning effort changed"
    REASONING_DROPPED = "reasoning not passed back"
    MESSAGE_EDITED = "message edited"
    CUT_SHORT = "conversation cut short"
    PROMPT_CHANGED = "prompt changed"  # a prefix change with no comparison to name it (a turn spec's edit)
    # the simulator's other miss reasons
    COLD_START = "cold start"
    EXPIRED = "idle past the TTL"
    OUTPUT_NOT_CACHED = "previous output not cached"
    BLOCK_GRANULARITY = "block granularity"
    NO_CHECKPOINT = "no checkpoint at the boundary"
    LAST_TOKEN = "last token"
    BELOW_MINIMUM = "below the minimum"
    CACHING_OFF = "caching off"
    REPORTED = "reported miss"
    MODEL_SWITCH = "model switched"


FIXES: dict[Cause, str] = {
    Cause.COLD_START: "nothing to fix: a session's first request pays in full (a shared, stable prefix warms it)",
    Cause.EXPIRED: "keep turns within the cache's lifetime (about 5 minutes), or send a cheap request before it lapses",
    Cause.OUTPUT_NOT_CACHED: "nothing to fix: the API does not cache outputs; each is paid once as input",
    Cause.SYSTEM_PROMPT_CHANGED: "keep the system prompt stable; put what changes (dates, state) in the latest message",
    Cause.TOOL_LIST_CHANGED: "keep the tool list stable and in a fixed order for the whole session",
    Cause.ANOTHER_AGENT: "nothing to fix: a sub-agent's calls start from its own system prompt and tools, cached apart",
    Cause.UNLOGGED_PREFIX_CHANGED: "keep the system prompt and tool list stable (the log does not hold them: their "
    "logged size changed)",
    Cause.EFFORT_CHANGED: "keep reasoning_effort fixed within a session: K3 renders it into the prompt",
    Cause.REASONING_DROPPED: "pass reasoning_content back on every assistant message (K3 requires it)",
    Cause.MESSAGE_EDITED: "append corrections as new messages instead of editing or reordering earlier ones",
    Cause.CUT_SHORT: "compact or truncate rarely, and only at turn boundaries",
    Cause.PROMPT_CHANGED: "keep everything before the newest turn byte-identical: edits, reorders and stripped "
    "reasoning re-bill all that follows",
    Cause.BLOCK_GRANULARITY: "nothing to fix: K3 caches whole hash blocks (512 tokens)",
    Cause.NO_CHECKPOINT: "resume at turn boundaries: K3 keeps KDA checkpoints only there (or retain more with "
    "k3:every=N)",
    Cause.LAST_TOKEN: "nothing to fix: one prompt token is always computed",
    Cause.BELOW_MINIMUM: "nothing to fix: the provider caches no prompt shorter than its minimum (1,024 tokens on "
    "most)",
    Cause.CACHING_OFF: "nothing to fix under this model: it caches nothing (compare with --cache k3)",
    Cause.REPORTED: "the log gives no cause: bill with --usage simulated to see one",
    # K3's guidance (the seed's "Thinking history sensitivity" note), and the cache's own rule
    Cause.MODEL_SWITCH: "keep one model for the whole session: switching models mid-session may cause instability "
    "(K3's guidance), and each model's cache is its own",
}

# The cause of every miss reason but new input (a miss under any cache, no cause) and a prefix change (named by
# the prompt's `Change`, else `Cause.PROMPT_CHANGED`).
BY_REASON: dict[Reason, Cause] = {
    Reason.COLD: Cause.COLD_START,
    Reason.EXPIRED: Cause.EXPIRED,
    Reason.OUTPUT_NOT_CACHED: Cause.OUTPUT_NOT_CACHED,
    Reason.BLOCK_GRANULARITY: Cause.BLOCK_GRANULARITY,
    Reason.NO_CHECKPOINT: Cause.NO_CHECKPOINT,
    Reason.LAST_TOKEN: Cause.LAST_TOKEN,
    Reason.BELOW_MINIMUM: Cause.BELOW_MINIMUM,
    Reason.REPORTED: Cause.REPORTED,
    Reason.CACHING_OFF: Cause.CACHING_OFF,
    Reason.MODEL_SWITCH: Cause.MODEL_SWITCH,
}


class Change(NamedTuple):
    """How a prompt differs from the one before it: the cause, and what exactly (which message, which part)."""

    cause: Cause
    detail: str
