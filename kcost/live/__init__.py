"""Live views of a running session: `kcost statusline` (one line for an agent's status-line hook) and `kcost watch`
(a terminal view that follows a log as it grows).

Both read through `incremental`: a log is parsed once, each later look reads only the bytes appended since, and
the session is billed through the same path as `kcost bill`, so every figure is the bill's. `clock` says how
long the cache keeps the session's prefix and what the next turn costs either side of that moment. `helper` is
the status line's resident helper: a bare call answered by a kcost already loaded, exactly as the call would.

These modules import what a call needs in its body: a status-line hook's bare call loads only the modules it
uses (bench/bench_statusline.py times it).
"""

MAX_HOOK = 1 << 20  # bytes of a status-line hook's JSON read at most
