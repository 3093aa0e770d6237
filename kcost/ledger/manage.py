"""What `kcost ledger` does with the file: say what it holds, forget sessions, vacuum, move a damaged one aside,
and carry calls between machines as JSON Lines (`export`, `import_`; `kcost schema ledger` describes a line).

An export is a header line (`kind: header`: the format's version, the machine, the layout of its records), then
per session a `session` line and one `call` line per billed call, in order. A call line says plainly what was
billed (time, model, usage, the rebuilt prompt's size) and carries its record as the ledger keeps it, so an import
bills it as the machine that read it did. Importing is idempotent: a session is known by its machine and identity,
and a copy replaces the one held (each call counted once however often it is imported); a machine's own sessions
are not imported back into it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

from kcost.errors import InputError
from kcost.ledger.bills import mark
from kcost.ledger.codec import LAYOUT, Decoder, Unreadable, encode
from kcost.ledger.store import Ledger, damaged
from kcost.model.session import Session

EXPORT_VERSION = 1
IMPORTED = "imported"  # the read key of a session another machine read


def summary(ledger: Ledger) -> dict[str, Any]:
    """What the ledger holds: its sessions and calls, by machine and agent, first and last time, files gone; the
    reports it keeps; and how often kcost's cause of a miss agreed with the agent's (`kcost.live.statusline`)."""
    rows = ledger.query("SELECT machine, agent, COUNT(*), SUM(calls), MIN(start), MAX(end), SUM(gone IS NOT NULL) "
                        "FROM (SELECT * FROM sessions GROUP BY machine, ident) GROUP BY machine, agent "
                        "ORDER BY machine, agent")  # fmt: skip
    agents = [{"machine": m, "agent": a, "sessions": n, "calls": c or 0, "first": lo, "last": hi, "gone": g or 0}
              for m, a, n, c, lo, hi, g in rows]  # fmt: skip
    files = ledger.query("SELECT COUNT(DISTINCT path) FROM units")[0][0]
    compared = [json.loads(data) for (data,) in ledger.query("SELECT data FROM live WHERE kind LIKE 'miss %'")]
    reports = ledger.query("SELECT COUNT(*), COALESCE(SUM(LENGTH(out) + LENGTH(err)), 0) FROM reports")[0]
    return {
        "path": ledger.path,
        "machine": ledger.machine,
        "size_bytes": os.path.getsize(ledger.path),
        "files": files,
        "sessions": sum(a["sessions"] for a in agents),
        "calls": sum(a["calls"] for a in agents),
        "gone": sum(a["gone"] for a in agents),
        "first": min((a["first"] for a in agents if a["first"] is not None), default=None),
        "last": max((a["last"] for a in agents if a["last"] is not None), default=None),
        "agents": agents,
        "reports": reports[0],  # reports kept whole (`kcost.ledger.reports`), and their bytes as kept
        "report_bytes": reports[1],
        "misses_compared": len(compared),  # agents' last misses the status line compared with kcost's causes
        "misses_agreed": sum(1 for c in compared if c.get("agrees") is True),
    }


def forget(ledger: Ledger, *, before: float | None, agent: str | None, session: str | None,
           machine: str | None) -> int:  # fmt: skip
    """Forget the sessions that match every condition given (started before, of an agent, named or at a source,
    of a machine); the units they were read from are forgotten too, so a log still present is read again. How
    many sessions were forgotten."""
    where, args = ["1"], list[Any]()
    if before is not None:
        where.append("start < ?")
        args.append(before)
    if agent is not None:
        where.append("agent = ?")
        args.append(agent)
    if session is not None:
        where.append("(name = ? OR origin_name = ? OR ident LIKE ? ESCAPE '\\')")
        escaped = session.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        args += [session, session, f"%{escaped}%"]
    if machine is not None:
        where.append("machine = ?")
        args.append(machine)
    condition = " AND ".join(where)
    with ledger.writing() as db:
        clusters = [c for (c,) in db.execute(f"SELECT DISTINCT cluster FROM sessions WHERE {condition} AND "
                                             "cluster IS NOT NULL", args)]  # fmt: skip
        n = db.execute(f"DELETE FROM sessions WHERE {condition}", args).rowcount
        for cluster in clusters:
            db.execute("DELETE FROM links WHERE unit IN (SELECT id FROM units WHERE cluster = ?)", (cluster,))
            db.execute("DELETE FROM units WHERE cluster = ?", (cluster,))
            db.execute("DELETE FROM sessions WHERE cluster = ?", (cluster,))
    return int(n)


def vacuum(ledger: Ledger) -> tuple[int, int]:
    """Give back the space of what was forgotten: the file's size before and after."""
    before = os.path.getsize(ledger.path)
    ledger.query("VACUUM")
    ledger.query("PRAGMA wal_checkpoint(TRUNCATE)")
    return before, os.path.getsize(ledger.path)


def rebuild(path: str) -> str | None:
    """Move a ledger aside (never deleted: it may hold sessions whose logs are gone), so the next run makes a new
    one from the logs present; where it was moved, or None where there was none."""
    if not os.path.lexists(path):
        return None
    aside = f"{path}.{time.strftime('%Y%m%d-%H%M%S')}.aside"
    for suffix in ("", "-wal", "-shm"):
        if os.path.lexists(path + suffix):
            os.replace(path + suffix, aside + suffix)
    return aside


def _prompt(record: list[Any]) -> int | None:
    request = record[LAYOUT["record"].index("request")]
    if request is None:
        return None
    names = LAYOUT["request"]
    return int(request[names.index("keep")] + sum(s[2] for s in request[names.index("append")]))


def export(ledger: Ledger) -> Iterator[str]:
    """The ledger's sessions as JSON Lines: the header, then each session and its calls (one copy of each
    session: the one read with prompts rebuilt where there is one)."""
    yield json.dumps({"kind": "header", "version": EXPORT_VERSION, "machine": ledger.machine, "layout": LAYOUT})
    rows = ledger.query("SELECT machine, ident, agent, gone, origin, data FROM sessions ORDER BY machine, start, ident")
    best: dict[tuple[str, str], tuple[int, Any]] = {}
    for machine, ident, agent, gone, origin, data in rows:
        text = json.loads(data)
        rank = sum(r[0] is not None for r in text["records"])
        if (machine, ident) not in best or rank > best[(machine, ident)][0]:
            files = (origin or "").split("\0")
            best[(machine, ident)] = (rank, (agent, gone, text, files[0] if len(files) == 1 and files[0] else None))
    usage_names = LAYOUT["usage"]
    at = {name: LAYOUT["record"].index(name) for name in ("reported", "time", "model", "conversation", "line")}
    for (machine, ident), (_, (agent, gone, text, file)) in best.items():
        records = text.pop("records")
        yield json.dumps({"kind": "session", "machine": machine, "ident": ident, "agent": agent,
                          "gone": gone is not None, "calls": len(records), "session": text},
                         ensure_ascii=False)  # fmt: skip
        for n, record in enumerate(records):
            usage = record[at["reported"]]
            yield json.dumps({
                "kind": "call", "machine": machine, "ident": ident, "index": n, "time": record[at["time"]],
                "model": record[at["model"]], "conversation": record[at["conversation"]], "file": file,
                "line": record[at["line"]],
                "usage": None if usage is None else dict(zip(usage_names, usage, strict=True)),
                "prompt_tokens": _prompt(record), "record": record,
            }, ensure_ascii=False)  # fmt: skip


def import_(ledger: Ledger, lines: Iterable[tuple[str, int, str]]) -> tuple[int, int]:
    """Merge exports (each line with its file and number) into the ledger: sessions and calls taken."""
    decoder: Decoder | None = None
    sessions: dict[tuple[str, str], tuple[dict[str, Any], list[Any], str]] = {}
    for source, number, text in lines:
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            kind = line["kind"]
            if kind == "header":
                if line.get("version") != EXPORT_VERSION:
                    raise InputError(f"an export of version {line.get('version')!r}; this kcost reads "
                                     f"{EXPORT_VERSION}", source=source, line=number, field="version")  # fmt: skip
                decoder = Decoder(line["layout"])
            elif decoder is None:
                raise InputError("no header line before it: not a kcost ledger export", source=source, line=number)
            elif kind == "session":
                sessions[(line["machine"], line["ident"])] = ({**line["session"], "records": []}, [], line["agent"])
            elif kind == "call":
                held = sessions.get((line["machine"], line["ident"]))
                if held is None:
                    raise InputError("a call of no session before it", source=source, line=number, field="ident")
                held[0]["records"].append(line["record"])
            else:
                raise InputError(f"unknown kind {kind!r}", source=source, line=number, field="kind")
        except (ValueError, KeyError, TypeError, Unreadable) as exc:
            raise InputError(f"not a kcost ledger export line ({exc.__class__.__name__}: {exc})", source=source,
                             line=number) from None  # fmt: skip
    made: list[tuple[str, str, Session, str]] = []
    for (machine, ident), (data, _, agent) in sessions.items():
        if machine == ledger.machine:
            continue
        assert decoder is not None
        try:
            session = decoder.session(json.dumps(data))
        except Unreadable as exc:
            raise InputError(f"a session that cannot be read: {exc}", source=ident) from None
        made.append((machine, ident, session, agent))
    with ledger.writing() as db:
        for machine, ident, session, agent in made:
            db.execute("DELETE FROM sessions WHERE machine = ? AND ident = ?", (machine, ident))
            start, end = session.span
            db.execute(
                "INSERT INTO sessions (machine, read_key, cluster, ident, origin, origin_name, ordinal, agent, name, "
                "start, end, calls, gone, data) VALUES (?, ?, NULL, ?, ?, ?, 0, ?, ?, ?, ?, ?, NULL, ?)",
                (machine, IMPORTED, ident, ident.split("\0")[1] if "\0" in ident else session.source, session.source,
                 agent, session.name, start, end, len(session.records), encode(session)))  # fmt: skip
    return len(made), sum(len(s.records) for _, _, s, _ in made)


def imported(ledger: Ledger, machines: set[str] | None) -> list[Session]:
    """The sessions other machines read (all, or those of `machines`), each marked with its machine."""
    from dataclasses import replace

    try:
        decoder = Decoder(ledger.layout)
    except Unreadable as exc:
        raise damaged(ledger.path, str(exc)) from None
    out = []
    for machine, data, row in ledger.query("SELECT machine, data, id FROM sessions WHERE read_key = ? ORDER BY start",
                                           (IMPORTED,)):  # fmt: skip
        if machines is not None and machine not in machines:
            continue
        try:
            session = decoder.session(data)
        except Unreadable as exc:
            raise damaged(ledger.path, f"a session it holds cannot be read ({exc})") from None
        out.append(replace(session, machine=machine))
        mark(out[-1], ledger.path, row)
    return out
