"""Bills kept beside the sessions they bill, so a run over unchanged logs bills nothing again.

A session's bill is a pure function of the session and the terms it is billed under (cache models, the price table
as its file is, usage mode, model, day; `kcost.api.distributed.Terms`), so the ledger keeps each session's bills
under a key of those terms (`key`) and of what the session shows of itself (its source, name and notes), and a
later run under the same terms takes them instead of billing again. A bill kept is dropped with its session, or
when the session's row changes (a trigger of the schema). Bills are pickled and compressed by zstd (a ledger's
older bills, by zlib, are read too); they are read back by an unpickler that makes only kcost's classes and plain
values, and one it cannot read is billed again, as if never kept.
"""

from __future__ import annotations

import io
import pickle
import weakref
import zlib
from collections.abc import Sequence
from typing import Any

from kcost.ledger.store import Ledger
from kcost.model.session import Session

# each session a run took from the ledger or wrote to it (while that session lives): its ledger and its row
_ROWS: dict[int, tuple[weakref.ref[Session], str, int]] = {}
_SAFE_BUILTINS = {"list", "dict", "tuple", "set", "frozenset", "int", "float", "str", "bytes", "bool", "complex",
                  "slice", "range", "object", "getattr"}  # fmt: skip
_SAFE_MODULES = {"decimal", "datetime", "fractions", "collections", "copyreg", "enum", "_decimal"}


def mark(session: Session, path: str, row: int) -> None:
    """Note that `session` is the one of row `row` of the ledger at `path` (a gone session's notes differ from
    its row's: it is not marked)."""
    key = id(session)
    _ROWS[key] = (weakref.ref(session, lambda _: _ROWS.pop(key, None)), path, row)


def row_of(session: Session) -> tuple[str, int] | None:
    held = _ROWS.get(id(session))
    if held is None or held[0]() is not session:
        return None
    return held[1], held[2]


def _shown(session: Session) -> str:
    """What a bill shows of its session beyond its calls, as a key (a session named by another path, or gone)."""
    text = repr((session.source, session.name, session.read_notes, session.build_notes, session.project,
                 session.machine, session.gone))  # fmt: skip
    data = text.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "kcost" or module.startswith("kcost.") or module in _SAFE_MODULES or (
            module == "builtins" and name in _SAFE_BUILTINS
        ):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is no part of a bill")


_ZSTD = b"\x28\xb5\x2f\xfd"  # a zstd frame's first bytes (a zlib stream's first is 0x78)


def _packed(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=1).compress(data)


def _unpacked(data: bytes) -> bytes:
    if data[:4] == _ZSTD:
        import zstandard

        return zstandard.ZstdDecompressor().decompress(data)
    return zlib.decompress(data)


def fetch(sessions: Sequence[Session], terms: str) -> dict[int, Any]:
    """The bills kept of `sessions` under `terms` (by the session's `id`), where kept and readable."""
    by_path: dict[str, list[tuple[Session, int]]] = {}
    for session in sessions:
        row = row_of(session)
        if row is not None:
            by_path.setdefault(row[0], []).append((session, row[1]))
    out: dict[int, Any] = {}
    for path, rows in by_path.items():
        with Ledger(path, create=False) as ledger:
            for at in range(0, len(rows), 500):
                chunk = rows[at : at + 500]
                wanted = {(row, f"{terms}|{_shown(s)}"): s for s, row in chunk}
                found = ledger.query(f"SELECT session, terms, data FROM bills WHERE session IN "
                                     f"({','.join('?' * len(chunk))})", [row for _, row in chunk])  # fmt: skip
                for row, key, data in found:
                    one = wanted.get((row, key))
                    if one is None:
                        continue
                    try:
                        out[id(one)] = _Unpickler(io.BytesIO(_unpacked(data))).load()
                    except Exception:  # noqa: BLE001  (a bill that cannot be read is billed again)
                        continue
    return out


def keep(made: Sequence[tuple[Session, Any]], terms: str) -> None:
    """Keep each session's bills under `terms`, beside its row (sessions the ledger does not hold are left)."""
    by_path: dict[str, list[tuple[int, str, bytes]]] = {}
    for session, bills in made:
        row = row_of(session)
        if row is None:
            continue
        try:
            data = _packed(pickle.dumps(bills, protocol=pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
            continue
        by_path.setdefault(row[0], []).append((row[1], f"{terms}|{_shown(session)}", data))
    for path, rows in by_path.items():
        with Ledger(path, create=False) as ledger, ledger.writing() as db:
            db.executemany("DELETE FROM bills WHERE session = ? AND terms != ?", [(r, t) for r, t, _ in rows])
            db.executemany("INSERT OR REPLACE INTO bills (session, terms, data) SELECT ?, ?, ? WHERE EXISTS "
                           "(SELECT 1 FROM sessions WHERE id = ?)", [(r, t, d, r) for r, t, d in rows])  # fmt: skip
