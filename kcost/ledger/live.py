"""The status line's and `watch`'s state of a log, kept in the ledger beside the sessions (`kcost.live`).

Each log has at most one row of each kind: `line` (the last line's figures, and what they were computed from),
`tail` (the reader's and the running bill's state) and, where a usage window's limit is set, `calls` (the session's
calls of the last week, for the window every session shares). A read takes what there is; a write replaces a
log's rows in one transaction, or leaves them as they were where the ledger is busy past a short wait (a status
line never waits on a long bill: the next call reads on from the state kept before). Rows of logs not looked at
for a while go (`prune`).
"""

from __future__ import annotations

import os
import sqlite3
import time

from kcost.errors import InputError
from kcost.ledger.store import Ledger

BUSY_MS = 250  # how long a status line waits for another process's write before it keeps nothing this call


def get(path: str, log: str) -> dict[str, bytes]:
    """The rows kept of `log` by kind; none where there is no ledger yet, or it cannot be read (then the log is
    read afresh, as if nothing were kept)."""
    if not os.path.isfile(path):
        return {}
    try:
        with Ledger(path, create=False) as ledger:
            return {kind: bytes(data) for kind, data in
                    ledger.query("SELECT kind, data FROM live WHERE log = ?", (log,))}  # fmt: skip
    except InputError:
        return {}


def put(path: str, log: str, rows: dict[str, bytes | None]) -> None:
    """Keep `rows` of `log` (None: that kind dropped), all or none; nothing where the ledger is busy or cannot
    be written."""
    try:
        with Ledger(path) as ledger:
            ledger.db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            with ledger.writing() as db:
                now = time.time()
                for kind, data in rows.items():
                    if data is None:
                        db.execute("DELETE FROM live WHERE log = ? AND kind = ?", (log, kind))
                    else:
                        db.execute("INSERT OR REPLACE INTO live VALUES (?, ?, ?, ?)", (log, kind, data, now))
    except (InputError, sqlite3.Error):
        return


def forget(path: str, log: str) -> None:
    """Drop every row kept of `log`."""
    put(path, log, {"line": None, "tail": None, "calls": None})


def prune(path: str, before: float) -> int:
    """Drop the rows of every log none of whose rows was written since `before`; how many logs went."""
    if not os.path.isfile(path):
        return 0
    try:
        with Ledger(path) as ledger:
            ledger.db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            with ledger.writing() as db:
                stale = [log for (log,) in db.execute("SELECT log FROM live GROUP BY log HAVING MAX(touched) < ?",
                                                      (before,))]  # fmt: skip
                db.executemany("DELETE FROM live WHERE log = ?", [(log,) for log in stale])
        return len(stale)
    except (InputError, sqlite3.Error):
        return 0


def every(path: str, kind: str) -> dict[str, bytes]:
    """Every log's row of `kind`, by log; none where there is no ledger or it cannot be read."""
    if not os.path.isfile(path):
        return {}
    try:
        with Ledger(path, create=False) as ledger:
            return {log: bytes(data) for log, data in ledger.query("SELECT log, data FROM live WHERE kind = ?",
                                                                   (kind,))}  # fmt: skip
    except InputError:
        return {}
