"""The ledger's file: one SQLite database that keeps every session kcost read, and what each was read from.

Tables:
- `meta`: the machine this ledger belongs to (named at creation), the layout its rows are written in
  (`kcost.ledger.codec.LAYOUT`).
- `units`: each file (or session folder) read, under one way of reading (`read_key`: the usage mode's prompts,
  the tokenizer, `--lenient`, `--input-format`, kcost's version): its format, its stamp (device, inode, size,
  times, a hash of its head, and of the files beside it that share its name), and the cluster it was read in.
- `links`: the keys by which a unit's sessions may join another unit's (a Claude Code log's session id and
  response ids), for readers that join files.
- `sessions`: each session as `kcost.ledger.codec` writes it, with its cluster (the units read together to make
  it; NULL once they are all gone), the unit its source names, and its figures for `kcost ledger`.
- `bills`: a session's bills under the terms they were made (`kcost.ledger.bills`); `live`: the status line's
  state; `reports`: whole reports, kept for a run asked again over the same inputs (`kcost.ledger.reports`).
- `meta`'s `generation`: a count that every change of a unit or a session raises (triggers), so that a report
  kept from one state of the ledger is never taken for another.

A cluster is the smallest set of units whose sessions depend on nothing else; it is written, and replaced, in one
transaction. The database runs in WAL mode with a busy timeout, so a status line and a bill may use it at once;
a run killed mid-write leaves it as it was. A file that is no ledger, or a damaged one, is one `InputError`.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kcost.errors import InputError
from kcost.ledger import APPLICATION_ID, SCHEMA_VERSION
from kcost.ledger.codec import LAYOUT

BUSY_MS = 30_000  # how long a writer waits for another's transaction to end

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE units (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    read_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    stamp TEXT NOT NULL,
    cluster INTEGER NOT NULL,
    joins INTEGER NOT NULL,
    UNIQUE (path, read_key)
);
CREATE INDEX units_cluster ON units (cluster);
CREATE TABLE links (unit INTEGER NOT NULL, key TEXT NOT NULL);
CREATE INDEX links_key ON links (key);
CREATE INDEX links_unit ON links (unit);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    machine TEXT NOT NULL,
    read_key TEXT NOT NULL,
    cluster INTEGER,
    ident TEXT NOT NULL,
    origin TEXT,
    origin_name TEXT,
    ordinal INTEGER NOT NULL,
    agent TEXT NOT NULL,
    name TEXT NOT NULL,
    start REAL,
    end REAL,
    calls INTEGER NOT NULL,
    gone REAL,
    data TEXT NOT NULL
);
CREATE INDEX sessions_cluster ON sessions (cluster);
CREATE INDEX sessions_ident ON sessions (machine, ident);
"""
# what each schema version adds to the one before, in order: a ledger of version N runs MIGRATIONS[N - 1:]
MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE bills (session INTEGER NOT NULL, terms TEXT NOT NULL, data BLOB NOT NULL, "
        "PRIMARY KEY (session, terms))",
        "CREATE TRIGGER sessions_bills AFTER DELETE ON sessions BEGIN DELETE FROM bills WHERE session = old.id; END",
        "CREATE TRIGGER sessions_changed AFTER UPDATE OF data, gone ON sessions "
        "BEGIN DELETE FROM bills WHERE session = old.id; END",
    ],
    [  # the status line's and watch's state of a log: its last line's figures, its reader's and bill's state
        "CREATE TABLE live (log TEXT NOT NULL, kind TEXT NOT NULL, data BLOB NOT NULL, touched REAL NOT NULL, "
        "PRIMARY KEY (log, kind))",
    ],
    [  # whole reports, under the terms and inputs of the run that printed them, and the ledger's generation
        "CREATE TABLE reports (terms TEXT PRIMARY KEY, generation INTEGER NOT NULL, made REAL NOT NULL, "
        "inputs BLOB NOT NULL, out BLOB NOT NULL, err BLOB NOT NULL, code INTEGER NOT NULL)",
        "INSERT OR REPLACE INTO meta VALUES ('generation', '0')",
        *(f"CREATE TRIGGER {table}_{change.lower()} AFTER {change} ON {table} BEGIN UPDATE meta SET value = value + 1 "
          "WHERE key = 'generation'; END"
          for table in ("units", "sessions") for change in ("INSERT", "UPDATE", "DELETE")),
    ],
]


def failed(path: str, exc: sqlite3.DatabaseError) -> InputError:
    """What SQLite said, as one line: a file it cannot write or lock (`field` ledger), or one that is no ledger."""
    if isinstance(exc, sqlite3.OperationalError) and "malformed" not in str(exc):
        return InputError(f"cannot use the ledger: {exc}", source=path, field="ledger",
                          hint="give another with --ledger PATH, or run with --no-ledger")  # fmt: skip
    return damaged(path, str(exc))


def damaged(path: str, why: str) -> InputError:
    return InputError(f"not a kcost ledger, or a damaged one: {why}", source=path,
                      hint="move it aside with `kcost ledger rebuild` (the next run reads the logs again), or "
                      "run with --no-ledger")  # fmt: skip


class Ledger:
    """An open ledger; every read and write goes through it. Use as a context manager."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = str(path)
        if not create and not os.path.exists(self.path):
            raise InputError("no ledger here yet", source=self.path, hint="a run of kcost bill makes one")
        if os.path.lexists(self.path) and not os.path.isfile(self.path):
            raise InputError("not a regular file", source=self.path, field="ledger")
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, isolation_level=None,
                                      check_same_thread=False)  # fmt: skip
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot open the ledger: {exc}", source=self.path, field="ledger") from None
        try:
            self._ready()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise failed(self.path, exc) from None
        except BaseException:
            self.db.close()
            raise

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def _ready(self) -> None:
        db = self.db
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if app == 0 and version == 0 and not db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
            self._create()
        elif app != APPLICATION_ID:
            raise damaged(self.path, "another program's SQLite database")
        elif version > SCHEMA_VERSION:
            raise InputError(f"written by a newer kcost (ledger schema {version}, this kcost reads "
                             f"{SCHEMA_VERSION})", source=self.path, hint="upgrade kcost")  # fmt: skip
        if version < SCHEMA_VERSION:
            self._migrate()
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        try:
            self.machine: str = meta["machine"]
            self.layout: dict[str, list[str]] = json.loads(meta["layout"])
        except (KeyError, ValueError):
            raise damaged(self.path, "its meta table is incomplete") from None
        if self.layout != LAYOUT:
            self._relayout()

    def _relayout(self) -> None:
        """Every session written again in this kcost's layout (`kcost.ledger.codec`), read by the fields' names in
        the one it was written in, so that every row is in the layout the meta table names; a session that cannot
        be read so is dropped, with the units it was read from (their logs, where still present, are read again):
        never misread."""
        from kcost.ledger.codec import Decoder, Unreadable, encode

        with self.writing() as db:
            stored = json.loads(db.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()[0])
            if stored != LAYOUT:  # not done by another process meanwhile
                try:
                    decoder: Decoder | None = Decoder(stored)
                except Unreadable:
                    decoder = None
                rows = db.execute("SELECT id, cluster, read_key, data FROM sessions").fetchall()
                for row, cluster, key, data in rows:
                    try:
                        if decoder is None:
                            raise Unreadable("no field of this kcost's layout")
                        db.execute("UPDATE sessions SET data = ? WHERE id = ?", (encode(decoder.session(data)), row))
                    except Unreadable:
                        db.execute("DELETE FROM sessions WHERE id = ?", (row,))
                        if cluster is not None:
                            db.execute("DELETE FROM links WHERE unit IN (SELECT id FROM units WHERE cluster = ? AND "
                                       "read_key = ?)", (cluster, key))  # fmt: skip
                            db.execute("DELETE FROM units WHERE cluster = ? AND read_key = ?", (cluster, key))
                            db.execute("DELETE FROM sessions WHERE cluster = ? AND read_key = ?", (cluster, key))
                db.execute("UPDATE meta SET value = ? WHERE key = 'layout'", (json.dumps(LAYOUT),))
        self.layout = LAYOUT

    def _create(self) -> None:
        with self.writing():
            if self.db.execute("PRAGMA user_version").fetchone()[0]:  # made by another process meanwhile
                return
            for statement in [*_SCHEMA.split(";\n"), *(m for step in MIGRATIONS for m in step)]:
                if statement.strip():
                    self.db.execute(statement)
            machine = f"{socket.gethostname() or 'machine'}-{uuid.uuid4().hex[:8]}"
            self.db.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("machine", machine), ("layout", json.dumps(LAYOUT)), ("created", str(time.time()))])  # fmt: skip
            self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _migrate(self) -> None:
        """An older ledger brought to this schema: its sessions stand, what later versions keep is added."""
        with self.writing():
            version = self.db.execute("PRAGMA user_version").fetchone()[0]  # another process may have migrated it
            for step in MIGRATIONS[version - 1 :]:
                for statement in step:
                    self.db.execute(statement)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it, or none of it (a run killed within it changes nothing)."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise failed(self.path, exc) from None
        try:
            yield self.db
        except sqlite3.DatabaseError as exc:
            self.db.execute("ROLLBACK")
            raise failed(self.path, exc) from None
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            try:
                self.db.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                self.db.execute("ROLLBACK")
                raise failed(self.path, exc) from None

    def generation(self) -> int:
        """How many times its units and sessions have changed."""
        return int(self.query("SELECT value FROM meta WHERE key = 'generation'")[0][0])

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise failed(self.path, exc) from None
