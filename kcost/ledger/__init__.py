"""The ledger: every session kcost read, kept in one SQLite file, so a run reads only what changed and a bill
outlives its logs (`store`: the file; `codec`: a session as its rows; `reading`: a read through it). Where it is,
is decided here without loading SQLite: `--ledger PATH`, `--no-ledger`, the config's `ledger`, `$KCOST_LEDGER`
(a path, or `off`), else the user's data folder."""

from __future__ import annotations

import os
from pathlib import Path

LEDGER_ENV = "KCOST_LEDGER"
FILE_NAME = "ledger.sqlite3"
SCHEMA_VERSION = 4  # 2: bills kept beside sessions; 3: the status line's state; 4: reports (older ones migrated)
APPLICATION_ID = 0x6B636F73  # "kcos": what tells a kcost ledger from another SQLite file
KEPT_REPORTS = ("bill", "explain", "compare", "check")  # the commands whose reports are kept (`reports`)


def default_path() -> str | None:
    """Where the ledger is when no option or config says: `$KCOST_LEDGER` (`off`: none), else
    `$XDG_DATA_HOME/kcost/ledger.sqlite3`, else under `~/.local/share`."""
    named = os.environ.get(LEDGER_ENV)
    if named:
        return None if named.lower() == "off" else named
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return str(Path(base) / "kcost" / FILE_NAME)
