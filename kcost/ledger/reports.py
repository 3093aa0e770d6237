"""Reports kept whole: a run asked again as before, over inputs unchanged since and a ledger as that run left it,
prints what that run printed, and reads and bills nothing.

A report of `bill`, `explain`, `compare` or `check` is kept in its ledger's `reports` table under
- its terms (`terms`): the command line as given, the working folder, the environment, whether stdout and stderr
  are terminals and their size, the day and the time zone, and this kcost (its version and its files' stamps);
- its inputs (`inputs`): each place the run read (its paths; none given, every agent home looked in) as a tree of
  names and file stamps (`kcost.inputs.files.stamp`: identity, size, times, and the bytes of a file written in the
  last two seconds); the config, price, tokenizer and baseline files, every place a config is looked for, and any
  other file the run noted as read, each with its stamp (or its absence);
- the ledger's generation (`kcost.ledger.store`) as the run's read left it: a report is taken only while it is the
  same.
Terms and inputs are kept as text and compared whole (no checksum stands for them). A report is kept only where
its run printed to stdout and stderr alone and ended 0 or 1, its inputs were the same when it ended as when it
began, and no other process wrote to the ledger between its read and its end; the newest `KEPT` are kept.

A command line is answered here before the command line's parser is loaded (`kcost.launch`), from the ledger the
command line names (`--ledger`, `--no-ledger`) or the default one; where a config names another, the command itself
asks once its settings are known (`kcost.cli.options`). This module loads neither SQLite's wrapper of the ledger
nor the session model.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from datetime import date
from typing import Any

from kcost.inputs.files import RACY_NS, crc32_of
from kcost.ledger import APPLICATION_ID, KEPT_REPORTS, SCHEMA_VERSION, default_path
from kcost.version import __version__

KEPT = 8  # reports kept, the newest
# variables a shell changes between two commands that no report depends on
VOLATILE = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})


def terms(argv: Sequence[str], *, today: date | None = None) -> str:
    """The text a report is kept under (see the module)."""
    local = time.localtime()
    parts = {
        "kcost": [__version__, _code()],
        "command": list(argv),
        "folder": os.getcwd(),
        "environment": sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE),
        "terminal": [_terminal(1), _terminal(2)],
        "day": (today or date.today()).isoformat(),
        "zone": [local.tm_zone, local.tm_gmtoff],
    }
    return json.dumps(parts, sort_keys=True, ensure_ascii=False)


def _terminal(fd: int) -> list[int] | None:
    """A stream's terminal size; None where it is no terminal."""
    try:
        if not os.isatty(fd):
            return None
        size = os.get_terminal_size(fd)
        return [size.columns, size.lines]
    except OSError:
        return None


_code_stamp: list[str] = []


def _code() -> str:
    """This kcost's files: each one's name, size and modification time (another install makes other reports)."""
    if not _code_stamp:
        parts = []
        for top in [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]:  # the package's folder
            for root, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")  # written by the run itself
                for name in sorted(files):
                    path = os.path.join(root, name)
                    try:
                        info = os.stat(path)
                    except OSError:
                        continue
                    parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}")
        _code_stamp.append("\n".join(parts))
    return _code_stamp[0]


def inputs(places: Sequence[str], files: Sequence[str], at: int, skip: Sequence[str] = ()) -> str:
    """The inputs as text: each place's tree of names and stamps (one that does not exist, said so), and each file's
    stamp, as of `at` (ns since the epoch; see `_stamp`). `skip`: files left out wherever they are (the ledger's)."""
    left_out = set(skip)
    lines = [line for place in places for line in _tree(place, left_out, at)]
    lines += [f"{f}\0{_stamp(f, at)}" for f in files]
    return "\n".join(lines)


def _stamp(path: str, at: int) -> str:
    """A file's identity, size and times, and the CRC-32 of its bytes where it was written within `RACY_NS` before
    `at` (the moment its report was begun: a later write within a tick of the clock would leave its times as they
    were). Taken as of the same moment when the report is kept and whenever it is asked for, so that the two
    compare."""
    try:
        info = os.stat(path)
        mark = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if stat.S_ISREG(info.st_mode) and max(info.st_mtime_ns, info.st_ctime_ns) > at - RACY_NS:
            return repr((*mark, crc32_of(path, 0, info.st_size)))
        return repr(mark)
    except OSError:
        return "absent"


def _tree(place: str, skip: set[str], at: int) -> Iterator[str]:
    """A place's lines: a file's stamp, or every name under a folder (links followed, each folder once) with each
    file's stamp."""
    try:
        info = os.stat(place)
    except OSError:
        yield f"{place}\0absent"
        return
    if not stat.S_ISDIR(info.st_mode):
        yield f"{place}\0{_stamp(place, at)}"
        return
    seen: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(place, followlinks=True):
        try:
            here = os.stat(root)
        except OSError:
            dirs[:] = []
            yield f"{root}\0gone"
            continue
        if (here.st_dev, here.st_ino) in seen:  # a link back to a folder walked already
            dirs[:] = []
            continue
        seen.add((here.st_dev, here.st_ino))
        dirs.sort()
        yield f"{root}\0folder\0{dirs}"
        for name in sorted(files):
            path = os.path.join(root, name)
            if path not in skip:
                yield f"{path}\0{_stamp(path, at)}"


def _ledger_files(ledger: str) -> list[str]:
    return [ledger + suffix for suffix in ("", "-wal", "-shm", "-journal")]


def named_ledger(argv: Sequence[str]) -> str | None:
    """The ledger a command line names (`--ledger PATH`, `--no-ledger`: none), else the default one."""
    for n, arg in enumerate(argv):
        if arg == "--no-ledger":
            return None
        if arg == "--ledger" and n + 1 < len(argv):
            return argv[n + 1]
        if arg.startswith("--ledger="):
            return arg.split("=", 1)[1]
    return default_path()


_asked: tuple[list[str], str] | None = None  # the command line and ledger last asked for a report


def answered(argv: Sequence[str], ledger: str | None = None, *, launched: bool = False) -> int | None:
    """Print the report kept for this command line and give its exit code, where `ledger` (none given: the one the
    command line names, `named_ledger`) keeps one under its terms, its inputs are as they were, and the ledger is as
    that run left it; else None, and nothing is printed. The ledger is only read: never made, changed or migrated.
    `launched`: asked as the process begins; the command, asking the same, is answered None at once."""
    import sqlite3

    ledger = ledger if ledger is not None else named_ledger(argv)
    if not argv or argv[0] not in KEPT_REPORTS or ledger is None or not os.path.isfile(ledger):
        return None
    global _asked
    question = (list(argv), os.path.abspath(ledger))
    if _asked == question:  # asked as the process began (`kcost.launch`), and none was kept
        _asked = None
        return None
    if launched:
        _asked = question
    try:
        db = sqlite3.connect(ledger, isolation_level=None)
        try:
            db.execute("PRAGMA query_only = ON")
            app, version = db.execute("PRAGMA application_id").fetchone()[0], db.execute(
                "PRAGMA user_version").fetchone()[0]  # fmt: skip
            if app != APPLICATION_ID or version != SCHEMA_VERSION:
                return None  # no ledger of this kcost's: the run itself says so, or migrates it
            db.execute("BEGIN")  # the report and the generation of one moment
            row = db.execute("SELECT r.inputs, r.out, r.err, r.code FROM reports r JOIN meta m ON m.key = "
                             "'generation' AND CAST(m.value AS INTEGER) = r.generation WHERE r.terms = ?",
                             (terms(argv),)).fetchone()  # fmt: skip
            db.execute("COMMIT")
        finally:
            db.close()
    except sqlite3.Error:
        return None  # the run itself says what is wrong with it
    if row is None:
        return None
    kept_inputs, out, err, code = row
    held = json.loads(zlib.decompress(kept_inputs))
    if inputs(held["places"], held["files"], held["at"], _ledger_files(ledger)) != held["inputs"]:
        return None
    import zstandard

    for text, stream in ((err, sys.stderr), (out, sys.stdout)):
        if text:  # zstd: a tenth of the bytes, written and read back at a gigabyte a second
            _write(stream, zstandard.ZstdDecompressor().decompress(text))
    return int(code)


def _write(stream: Any, data: bytes) -> None:
    """Bytes kept as UTF-8 to a text stream: straight to its buffer where it writes UTF-8."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None and (getattr(stream, "encoding", "") or "").lower().replace("-", "") == "utf8":
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "surrogatepass"))
        stream.flush()


def settings_files(settings: Any) -> list[str]:
    """The files besides the logs a run's report depends on: its config, price, tokenizer and baseline files."""
    named = [settings.config, settings.prices if isinstance(settings.prices, str) else None, settings.tokenizer,
             settings.baseline]  # fmt: skip
    return [f for f in named if f and f != "-"]


class Asked:
    """A run whose report may be kept: its ledger, terms, the places and files it depends on (every place a config is
    looked for among them: one that appears makes other settings), and their inputs as they were when it began."""

    def __init__(self, ledger: str, argv: Sequence[str], places: Sequence[str], files: Sequence[str]) -> None:
        self.ledger = os.path.abspath(ledger)
        self.terms = terms(argv)
        self.places = [os.path.abspath(p) for p in places]
        self.files = sorted({os.path.abspath(f) for f in files})
        self.at = time.time_ns()
        self.inputs = inputs(self.places, self.files, self.at, _ledger_files(self.ledger))



# the generations this process's reads through each ledger left it at, while a run's report may be kept (`watch`)
_reads: dict[str, set[int | None]] | None = None


def watch() -> None:
    """Note from now on the generation each read through a ledger leaves it at (`read_at`)."""
    global _reads
    _reads = {}


def read_at(ledger: str, generation: int | None) -> None:
    """Note that a read went through `ledger` and left it at `generation` (None: another process wrote meanwhile)."""
    if _reads is not None:
        _reads.setdefault(os.path.abspath(ledger), set()).add(generation)


def _read_generation(ledger: str) -> int | None:
    """The generation this run's reads through `ledger` left it at, where they all agree on one; noting ends."""
    global _reads
    reads, _reads = _reads or {}, None
    seen = reads.get(os.path.abspath(ledger), {None})
    return seen.pop() if len(seen) == 1 else None


def keep(asked: Asked, out: str, err: str, code: int, read: Sequence[str]) -> bool:
    """Keep the report a run printed (`out`, `err`, `code`), where its inputs are as they were when it began and the
    ledger is as its read left it. `read`: every file the run noted as read; those outside its places are kept with
    their stamps too. Whether it was kept."""
    from kcost.ledger.store import Ledger

    generation = _read_generation(asked.ledger)
    if generation is None or not os.path.isfile(asked.ledger):
        return False
    own = _ledger_files(asked.ledger)
    now = inputs(asked.places, asked.files, asked.at, own)
    if now != asked.inputs:
        return False  # a log changed while the run read it: what it printed may hold some of the change
    others = {os.path.abspath(f) for f in read} - set(own)
    others = {f for f in others if not any(_within(f, p) for p in asked.places)}
    files = sorted(set(asked.files) | others)
    if files != asked.files:  # the places walked once: only the files read besides them are stamped again
        now = inputs(asked.places, files, asked.at, own)
    held = {"places": asked.places, "files": files, "at": asked.at, "inputs": now}
    import zstandard

    packed = [zstandard.ZstdCompressor(level=1).compress(text.encode("utf-8", "surrogatepass")) for text in (out, err)]
    with Ledger(asked.ledger) as ledger, ledger.writing() as db:
        if ledger.generation() != generation:
            return False
        db.execute("INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?, ?, ?, ?)", (
            asked.terms, generation, time.time(), zlib.compress(json.dumps(held).encode(), 1), *packed, code))
        db.execute("DELETE FROM reports WHERE generation != ? OR terms NOT IN (SELECT terms FROM reports ORDER BY "
                   "made DESC LIMIT ?)", (generation, KEPT))  # fmt: skip
    return True


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
