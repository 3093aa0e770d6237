"""The one way a reader opens an agent's SQLite store: read-only (the agent may be writing it: WAL mode lets it),
never a file that is no regular file (sqlite would wait for ever on a FIFO), no database past its size bound and no
value past its length bound, a database sqlite cannot read or whose text is not UTF-8 one `InputError` naming it.

`sqlite3` is imported when a database is read, not when detection loads a reader (start-up:
bench/bench_startup.py). OpenCode, Hermes, Crush, Goose, Kilo, ZCode and Antigravity keep their sessions so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError
from kcost.inputs.files import MiB, a, check_regular

if TYPE_CHECKING:
    import sqlite3

SQLITE = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
DB_BYTES = 64 * 1024 * MiB  # the largest database read: far past any real one (OpenCode's grow by the GB)
VALUE_BYTES = 256 * MiB  # the longest value sqlite hands back (a message's JSON): past it, an error


def kind(path: str | Path) -> bool | None:
    """Whether `path` is a regular file that starts as a SQLite database does; None: neither a regular file nor a
    folder (a FIFO, a device, a broken link: never opened, and said where it is read)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None if Path(path).is_symlink() else False  # a broken link; else gone meanwhile
    if stat.S_ISDIR(mode):
        return False
    if not stat.S_ISREG(mode):
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE)) == SQLITE
    except OSError:
        return False


def is_sqlite(path: str | Path) -> bool:
    """Whether `path` is a regular file that starts as a SQLite database does (never opening any other)."""
    return kind(path) is True


def connect(path: str | Path, what: str, *, limit: int = DB_BYTES, values: int = VALUE_BYTES,
            immutable: bool = False) -> sqlite3.Connection:  # fmt: skip
    """The database at `path` (`what` names it: "OpenCode database") opened read-only, once it is known to be a
    regular file of at most `limit` bytes; no value it hands back longer than `values`. `immutable`: as last
    checkpointed, where its WAL cannot be read beside it (a folder this user may not write the WAL's index in)."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import sqlite3

    check_regular(str(path), what, limit)
    try:
        uri = f"{Path(path).resolve().as_uri()}?mode=ro{'&immutable=1' if immutable else ''}"
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the {what}: {exc}", source=str(path)) from None
    if hasattr(connection, "setlimit"):  # Python 3.11 on
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, values)
    connection.row_factory = sqlite3.Row
    return connection


def query(path: str | Path, what: str, sql: str, args: tuple[Any, ...] = (), *, required: bool = True,
          values: int = VALUE_BYTES, checkpointed: bool = False) -> list[Any]:  # fmt: skip
    """The rows of `sql` in the database at `path`; one sqlite cannot read, or whose text (its schema's included)
    is not UTF-8, is an `InputError` naming it. `required=False`: a query sqlite refuses (a table it lacks) has no
    rows. `checkpointed`: a database whose WAL cannot be opened beside it is read as last checkpointed."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import sqlite3

    for immutable in (False, True) if checkpointed else (False,):
        connection = connect(path, what, values=values, immutable=immutable)
        try:
            return connection.execute(sql, args).fetchall()
        except UnicodeDecodeError:  # a table's text, its name or a column's: a store gone bad, not one that lacks it
            raise InputError(f"not {a(what)}: its text is not UTF-8", source=str(path)) from None
        except sqlite3.OperationalError as exc:
            if checkpointed and not immutable and "unable to open" in str(exc):
                continue
            if not required:
                return []
            raise InputError(f"not {a(what)} ({exc})", source=str(path)) from None
        except sqlite3.Error as exc:
            if not required:
                return []
            raise InputError(f"not {a(what)} ({exc})", source=str(path)) from None
        finally:
            connection.close()
    raise InputError(f"cannot open the {what}: its WAL cannot be read", source=str(path))


def columns(path: str | Path, what: str, table: str) -> set[str]:
    """The columns of `table` in the database at `path` (none where it has no such table)."""
    rows = query(path, what, "SELECT name FROM pragma_table_info(?)", (table,), required=False)
    return {str(r["name"]) for r in rows}
