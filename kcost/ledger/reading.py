"""A run's read through the ledger: units unchanged since the ledger read them are not read again.

`Kept` is what `kcost.readers.discover.read_all` asks (`Keeper`). While the folders are walked, `held` says of
each unit whether the ledger holds it unchanged (its stamp: identity, size, times, a hash of its head and the
stamps of the files beside it that share its name). Once every unit is found, `resolve` reads the others, then
again with them every held unit a new one may change: one read in the same cluster as a unit that changed, is gone
or is out of this run (its sessions were read with it), or one whose reader joins the new unit's sessions
(`Reader.links`: keys they share; a reader without links joins any). The run's sessions are the ledger's for the
rest and the fresh ones, in the order a read without the ledger gives (by where each session's first unit was
found); they are written back in one transaction, cluster by cluster. Sessions whose every unit is gone stay in
the ledger and in each report of a run that covers where they were (`gone`), marked so.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kcost.inputs.files import stamp as file_stamp
from kcost.ledger.bills import mark
from kcost.ledger.codec import Decoder, Unreadable, encode
from kcost.ledger.store import Ledger, damaged
from kcost.model.session import Session
from kcost.readers.discover import Held, Made, Unit
from kcost.readers.source import Source, peek_source
from kcost.version import __version__

HEAD = 4096  # what of a file's head its stamp hashes


def read_key(*, prompts: bool, tokenizer_file: str | None, lenient: bool, input_format: str) -> str:
    """What a read depends on besides its files: prompts rebuilt or not, the tokenizer file, `--lenient`,
    `--input-format`, and this kcost (another version may read a log otherwise)."""
    tokenizer: object = tokenizer_file
    if tokenizer_file:
        with contextlib.suppress(OSError):  # the read says why, as a bill would
            tokenizer = (os.path.abspath(tokenizer_file), file_stamp(tokenizer_file, content=True))
    text = f"{prompts}|{tokenizer}|{lenient}|{input_format}|{__version__}"
    return f"{_digest(text.encode()):016x}"


def _digest(data: bytes) -> int:
    """64 bits of checksum (CRC-32 and Adler-32; OpenSSL's hashes cost a cold run its import): what tells a
    changed stamp from the one kept, never a secret."""
    return zlib.crc32(data) << 32 | zlib.adler32(data)


class Stamps:
    """Each unit's stamp, each folder listed once a run."""

    def __init__(self) -> None:
        self.listed: dict[str, list[os.DirEntry[str]]] = {}

    def _entries(self, folder: str) -> list[os.DirEntry[str]]:
        if folder not in self.listed:
            try:
                with os.scandir(folder) as it:
                    self.listed[folder] = list(it)
            except OSError:
                self.listed[folder] = []
        return self.listed[folder]

    def of(self, path: str) -> str | None:
        """The stamp of a file or session folder (each file's `kcost.inputs.files.stamp`: identity, size, times, and
        the checksum of every byte of one written within a tick of the clock, whose times cannot tell a later
        write); for a file, a checksum of its head and the stamps of the files beside it that share its name; None
        where it cannot be read."""
        try:
            parts = [repr(file_stamp(path))]
            if os.path.isdir(path):
                for root, dirs, files in os.walk(path):
                    dirs.sort()
                    parts += [f"{root}/{name}:{_stamp_or_gone(os.path.join(root, name))}" for name in sorted(files)]
                return f"{parts[0]}:{_digest(chr(0).join(parts).encode()):016x}"
            with open(path, "rb") as file:
                head = _digest(file.read(HEAD))
        except OSError:
            return None
        folder, name = os.path.split(path)
        stem = name.split(".", 1)[0]
        for entry in self._entries(folder or "."):  # the files a reader may read beside it (a database's WAL,
            if entry.name != name and entry.name.split(".", 1)[0] == stem:  # a session's settings or archives)
                parts.append(f"{entry.name}:{_stamp_or_gone(entry.path)}")
        return f"{parts[0]}:{head:016x}:{_digest(chr(0).join(parts[1:]).encode()):016x}"


def _stamp_or_gone(path: str) -> str:
    try:
        return repr(file_stamp(path))
    except OSError:
        return "gone"


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


class Kept:
    """The ledger as one read sees it (`kcost.readers.discover.Keeper`)."""

    def __init__(self, ledger: Ledger | None, key: str, fmt: str = "auto") -> None:
        """`ledger`: None where there is none yet (it holds nothing; one is made where the run has news)."""
        self._ledger, self.key, self.fmt = ledger, key, fmt
        self.roots: list[str] = []
        self.stamps = Stamps()
        self.known: dict[str, tuple[str, str, int, bool]] = {}  # path -> (kind, stamp, cluster, joins), this key's
        # the ledger's generation as the read saw it (taken before anything is read of it), and as the read left it:
        # None where another process changed it meanwhile
        self.seen = ledger.generation() if ledger is not None else 0
        self.generation: int | None = self.seen
        rows = ledger.query("SELECT path, kind, stamp, cluster, joins FROM units WHERE read_key = ?", (key,)) if (
            ledger is not None) else []  # fmt: skip
        for path, kind, stamp, cluster, joins in rows:
            self.known[path] = (kind, stamp, cluster, bool(joins))
        self.stamp_of: dict[str, str | None] = {}
        self.gone_count = 0
        self.pending: tuple[Any, ...] | None = None  # what the read learnt, written by `commit`

    @property
    def ledger(self) -> Ledger:
        assert self._ledger is not None, "asked of a ledger that is not made yet"
        return self._ledger

    @ledger.setter
    def ledger(self, ledger: Ledger | None) -> None:
        self._ledger = ledger

    def news(self) -> bool:
        """Whether the read found anything to keep (a session of an agent's log)."""
        return self.pending is not None and any(_keeps(s) for s, _ in self.pending[1])

    def commit(self) -> None:
        """Write what the read learnt (once the run has refused nothing): in one transaction."""
        if self.pending is not None:
            self._write(*self.pending)
            self.pending = None

    # -- asked while the folders are walked

    def held(self, path: Path, fmt: str) -> str | None:
        full = os.path.abspath(path)
        known = self.known.get(full)
        if known is None:
            return None
        kind, stamp, _, _ = known
        if fmt != "auto" and fmt != kind:
            return None
        now = self.stamps.of(full)
        self.stamp_of[full] = now
        if now != stamp:
            return None
        return kind

    # -- asked once every unit is found

    def resolve(self, units: list[Unit], read: Callable[[list[tuple[str, Source | Path]]], Made],
                roots: list[str]) -> list[Session]:
        self.roots = [os.path.abspath(r) for r in roots]
        place = {os.path.abspath(u.name if not isinstance(u, Path) else str(u)): n for n, (_, u) in enumerate(units)}
        held = {os.path.abspath(u.name): (kind, u) for kind, u in units if isinstance(u, Held)}
        fresh = [(k, u) for k, u in units if not isinstance(u, Held)]
        made, links = read(fresh) if fresh else ([], {})
        clusters: dict[int, list[str]] = {}
        for path, (_, _, cluster, _) in self.known.items():
            clusters.setdefault(cluster, []).append(path)
        touched = self._touched(clusters, held, fresh, links)
        if touched:
            again = [p for c in touched for p in clusters[c] if p in held]
            chosen = sorted(fresh + [_unit(held[p]) for p in again], key=lambda u: place[_full(u[1])])
            made, links = read(chosen)
            for p in again:
                del held[p]
        else:
            chosen = fresh
        dead, gone = self._gone(place) if self._ledger is not None else ([], [])
        kept = self._sessions([c for c in clusters if c not in touched and all(p in held for p in clusters[c])],
                              {_full(u): u.name for _, u in held.values()})  # fmt: skip
        out = [(min((place.get(o, len(place)) for o in origins), default=len(place)), n, s)
               for n, (s, origins) in enumerate((s, tuple(map(os.path.abspath, o))) for s, o in made)]
        out += [(min((place.get(o, len(place)) for o in origins), default=len(place)), n, s)
                for n, s, origins in kept]  # fmt: skip
        out.sort(key=lambda t: (t[0], t[1]))
        self.pending = (chosen, made, links, touched, dead)
        present = {(s.agent, s.name, s.source) for _, _, s in out}
        return [s for _, _, s in out] + [s for s in gone if (s.agent, s.name, s.source) not in present]

    def _touched(self, clusters: dict[int, list[str]], held: dict[str, tuple[str, Held]],
                 fresh: list[tuple[str, Source | Path]],
                 links: dict[str, frozenset[str] | None]) -> set[int]:  # fmt: skip
        """The held units' clusters a fresh unit may change."""
        touched = {c for c, members in clusters.items()
                   if any(p in held for p in members) and not all(p in held for p in members)}  # fmt: skip
        kinds_any = {k for k, u in fresh if links.get(_name(u), frozenset()) is None}
        keys = set().union(*(v for v in links.values() if v))
        for path, (kind, _) in held.items():
            _, _, cluster, joins = self.known[path]
            if kind in kinds_any and joins:
                touched.add(cluster)
        if keys and self._ledger is not None:
            found: set[int] = set()
            listed = list(keys)
            for at in range(0, len(listed), 500):
                chunk = listed[at : at + 500]
                rows = self.ledger.query(
                    "SELECT DISTINCT u.path FROM links l JOIN units u ON u.id = l.unit WHERE u.read_key = ? AND "
                    f"l.key IN ({','.join('?' * len(chunk))})", (self.key, *chunk))  # fmt: skip
                found.update(self.known[p][2] for (p,) in rows if p in held)
            touched |= found
        return touched

    def _sessions(self, clusters: list[int], names: dict[str, str]) -> list[tuple[int, Session, tuple[str, ...]]]:
        """The held clusters' sessions, each named as this run names its units."""
        out: list[tuple[int, Session, tuple[str, ...]]] = []
        if not clusters:
            return out
        decoder = self._decoder()
        for at in range(0, len(clusters), 500):
            chunk = clusters[at : at + 500]
            rows = self.ledger.query(
                "SELECT id, ordinal, origin, origin_name, start, end, data FROM sessions WHERE read_key = ? AND "
                f"gone IS NULL AND cluster IN ({','.join('?' * len(chunk))})", (self.key, *chunk))  # fmt: skip
            for row, ordinal, origin, origin_name, start, end, data in rows:
                origins = tuple(origin.split("\0"))
                session = self._made(decoder, data, (start, end))
                now = names.get(origins[0])
                if now is not None and now != origin_name and session.source.startswith(origin_name):
                    session = replace(session, source=now + session.source[len(origin_name):])
                out.append((ordinal, session, origins))
                mark(session, self.ledger.path, row)
        return out

    def _decoder(self) -> Decoder:
        try:
            return Decoder(self.ledger.layout)
        except Unreadable as exc:
            raise damaged(self.ledger.path, str(exc)) from None

    def _made(self, decoder: Decoder, data: str, span: tuple[float | None, float | None] | None = None) -> Session:
        """A session the ledger holds; given its row's span, its records made only as they are read."""
        path = self.ledger.path

        def fail(exc: Unreadable) -> Exception:
            return damaged(path, f"a session it holds cannot be read ({exc})")

        try:
            return decoder.session(data, span, fail)
        except Unreadable as exc:
            raise fail(exc) from None

    def _gone(self, place: dict[str, int]) -> tuple[list[tuple[int, str]], list[Session]]:
        """The clusters under this run's roots whose every unit is gone (under any key: marked so when the run
        writes), and the gone sessions under the roots, theirs too, one copy each (this key's, else the one with
        most calls), marked as such."""
        now = time.time()
        paths: dict[tuple[int, str], list[str]] = {}
        for path, cluster, key in self.ledger.query("SELECT path, cluster, read_key FROM units"):
            if _under(path, self.roots):
                paths.setdefault((cluster, key), []).append(path)
        dead = [c for c, members in paths.items()
                if all(p not in place and not os.path.lexists(p) for p in members)]  # fmt: skip
        rows = self.ledger.query("SELECT ident, read_key, calls, origin, gone, data, cluster, id FROM sessions WHERE "
                                 "machine = ? AND read_key != 'imported' AND (gone IS NOT NULL OR cluster IN "
                                 f"({','.join('?' * len({c for c, _ in dead}))}))",
                                 (self.ledger.machine, *{c for c, _ in dead}))  # fmt: skip
        dying = set(dead)
        best: dict[str, tuple[bool, int, float, str, int]] = {}
        for ident, key, calls, origin, gone, data, cluster, row in rows:
            if gone is None:
                if (cluster, key) not in dying:
                    continue
                gone = now
            if not _under(origin.split("\0")[0], self.roots) or self.fmt not in ("auto", ident.split("\0")[0]):
                continue
            rank = (key == self.key, calls, gone, data, row)
            if ident not in best or rank[:3] > best[ident][:3]:
                best[ident] = rank
        decoder = self._decoder()
        out = []
        for ident in sorted(best):
            session = self._made(decoder, best[ident][3])
            when = time.strftime("%Y-%m-%d", time.localtime(best[ident][2]))
            note = f"its log is gone (since {when}): billed as the ledger kept it"
            out.append(replace(session, read_notes=(*session.read_notes, note), gone=True))
            mark(out[-1], self.ledger.path, best[ident][4])
        self.gone_count = len(out)
        out.sort(key=lambda s: (s.span[0] is None, s.span[0] or 0.0, s.source))
        return dead, out

    def _write(self, chosen: list[tuple[str, Source | Path]], made: list[tuple[Session, tuple[str, ...]]],
               links: dict[str, frozenset[str] | None], touched: set[int],
               dead: list[tuple[int, str]]) -> None:  # fmt: skip
        """Write what was read, in one transaction: the old clusters of every unit read replaced by the new ones
        (a cluster with a unit that could not be stamped, gone or unreadable since it was read, is not kept: it is read
        again next time), and the clusters whose units are all gone marked gone."""
        if not chosen and not dead:
            return
        kinds = {_full(u): k for k, u in chosen}
        names = {_full(u): _name(u) for _, u in chosen}
        full_links = {os.path.abspath(n): v for n, v in links.items()}
        root = _clusters(kinds, made, full_links)
        kept = {p for s, origins in made if _keeps(s) for p in map(os.path.abspath, origins)}
        kept -= {p for s, origins in made if not _keeps(s) for p in map(os.path.abspath, origins)}
        stamps = {p: self.stamp_of[p] if p in self.stamp_of else self.stamps.of(p) for p in kinds if p in kept}
        unsure = {root[p] for p, stamp in stamps.items() if stamp is None}
        with self.ledger.writing() as db:
            before = self.ledger.generation()
            now = time.time()
            for cluster, key in dead:
                db.execute("UPDATE sessions SET gone = ?, cluster = NULL WHERE cluster = ? AND read_key = ?",
                           (now, cluster, key))  # fmt: skip
                self._drop(db, cluster, key, sessions=False)
            old = {row[0] for p in kinds for row in
                   db.execute("SELECT cluster FROM units WHERE path = ? AND read_key = ?", (p, self.key))}  # fmt: skip
            for cluster in old | touched:
                self._drop(db, cluster, self.key)
            written: set[str] = set()
            for p, stamp in stamps.items():
                if stamp is None or root[p] in unsure:
                    continue
                cur = db.execute("INSERT OR REPLACE INTO units (path, read_key, kind, stamp, cluster, joins) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", (p, self.key, kinds[p], stamp, _cluster_id(root[p]),
                                                              int(p in full_links)))  # fmt: skip
                db.executemany("INSERT INTO links VALUES (?, ?)", [(cur.lastrowid, k) for k in full_links.get(p) or ()])
                written.add(p)
            for n, (session, origins) in enumerate(made):
                full = [os.path.abspath(o) for o in origins]
                if not full or any(p not in written for p in full) or not _keeps(session):
                    continue
                start, end = session.span
                cur = db.execute(
                    "INSERT INTO sessions (machine, read_key, cluster, ident, origin, origin_name, ordinal, agent, "
                    "name, start, end, calls, gone, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                    (self.ledger.machine, self.key, _cluster_id(root[full[0]]),
                     f"{session.agent}\0{full[0]}\0{session.name}", "\0".join(full), names.get(full[0], origins[0]),
                     n, session.agent, session.name, start, end, len(session.records), encode(session)))  # fmt: skip
                if cur.lastrowid is not None:
                    mark(session, self.ledger.path, cur.lastrowid)
            self.generation = self.ledger.generation() if before == self.seen else None

    @staticmethod
    def _drop(db: sqlite3.Connection, cluster: int, key: str, *, sessions: bool = True) -> None:
        """Forget a cluster's units (and its sessions)."""
        if sessions:
            db.execute("DELETE FROM sessions WHERE cluster = ? AND read_key = ?", (cluster, key))
        db.execute("DELETE FROM links WHERE unit IN (SELECT id FROM units WHERE cluster = ? AND read_key = ?)",
                   (cluster, key))  # fmt: skip
        db.execute("DELETE FROM units WHERE cluster = ? AND read_key = ?", (cluster, key))


def _clusters(kinds: dict[str, str], made: list[tuple[Session, tuple[str, ...]]],
              links: dict[str, frozenset[str] | None]) -> dict[str, str]:  # fmt: skip
    """Each unit read and the root of its cluster: units are one cluster where a session was read from both, where
    they share a key (`Reader.links`), or where their reader joins any two (links None)."""
    parent = {p: p for p in kinds}

    def root(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    def union(a: str, b: str) -> None:
        parent[root(a)] = root(b)

    for _, origins in made:
        full = [p for p in map(os.path.abspath, origins) if p in parent]
        for other in full[1:]:
            union(full[0], other)
    by_key: dict[str, str] = {}
    for p, value in links.items():
        if p not in parent:
            continue
        for key in value if value is not None else (f"\0{kinds[p]}",):
            if key in by_key:
                union(p, by_key[key])
            else:
                by_key[key] = p
    return {p: root(p) for p in parent}


def _keeps(session: Session) -> bool:
    """Whether the ledger keeps a session: an agent's or an API's log, not a turn spec (which bills what is asked of
    it, not what was spent)."""
    return session.__class__ is Session and session.agent not in ("", "turn spec")


def _cluster_id(path: str) -> int:
    """A cluster's id: a checksum of its root unit's path (63 bits)."""
    return _digest(path.encode()) >> 1


def _name(unit: Source | Path | Held) -> str:
    return str(unit) if isinstance(unit, Path) else unit.name


def _full(unit: Source | Path | Held) -> str:
    return os.path.abspath(_name(unit))


def _unit(held: tuple[str, Held]) -> tuple[str, Source | Path]:
    """A held unit made a unit to read: a session folder as its path, a file looked at again."""
    kind, unit = held
    return (kind, Path(unit.name)) if os.path.isdir(unit.name) else (kind, peek_source(unit.name))
