"""The one opener every file option goes through: a regular file (or `-`, standard input, where the option takes
it), no larger than its kind allows, else one line naming it. A FIFO would block a read forever and a device
(`/dev/zero`) never ends: neither is opened at all, whatever link leads to it. Also what tells a file kept
loaded from one changed since (`stamp`), and the digest kcost names and checks kept files by (`blake2b`).

Every file a run reads, or finds where it looks for logs, is noted by its identity (`noted`): an output is
refused when it is one of them, whatever named it (`not_read`), so a report never replaces what it was made from.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kcost.errors import InputError, file_error

try:  # what `hashlib.blake2b` is, without hashlib loading OpenSSL for its other hashes (5 ms of a status line)
    from _blake2 import blake2b as blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b as blake2b

MiB = 1 << 20
# The most each kind of file may hold: far past any real one, short of what would exhaust memory.
LIMITS = {
    "price file": 64 * MiB,  # the shipped snapshot of five providers is under 200 KB
    "config file": 4 * MiB,
    "tokenizer file": 256 * MiB,  # a tiktoken ranks file is a few MB
    "bill": 2048 * MiB,
    "state file": 2048 * MiB,  # what the status line keeps of a log between calls: a fraction of the log
    "OpenClaw archive": 256 * MiB,  # a session's transcript compressed with zstd
    "ledger export": 4096 * MiB,  # a machine's every call as JSON Lines
}


# the files this run read or found, by (device, inode): the path that named each
_READ: dict[tuple[int, int], str] = {}


def noted(path: str | Path, info: os.stat_result | None = None) -> None:
    """Note a file the run reads, or could read (found by discovery), by its identity."""
    try:
        info = info or os.stat(path)
    except OSError:
        return
    _READ.setdefault((info.st_dev, info.st_ino), str(path))


# the outputs this run will write: (path, the option that named it)
_WRITES: list[tuple[str, str]] = []


def reads() -> list[str]:
    """The files this run noted as read, each by the first path that named it."""
    return list(_READ.values())


def outputs() -> list[str]:
    """The files this run will write (`will_write`)."""
    return [path for path, _ in _WRITES]


def forget_reads() -> None:
    """A new run: no file read yet, no output named."""
    _READ.clear()
    _WRITES.clear()


def will_write(path: str, flag: str = "-o") -> None:
    """Refuse an output that is a file read so far (`not_read`), and hold it to the rule again at `outputs_not_read`
    (once the files the run finds are known)."""
    not_read(path, flag)
    _WRITES.append((path, flag))


def outputs_not_read() -> None:
    """`not_read` of every output the run will write (`will_write`): called once discovery has found its files, so
    that an output onto one of them is refused before anything is said of them."""
    for path, flag in _WRITES:
        not_read(path, flag)


def not_read(path: str, flag: str = "-o") -> None:
    """Refuse an output that is (or links to) a file this run read or found (`noted`)."""
    try:
        info = os.stat(path)
    except OSError:
        return  # a new file: no input can be it
    same = _READ.get((info.st_dev, info.st_ino))
    if same is not None:
        raise InputError(f"{flag} would overwrite a file this run read ({same})", source=path,
                         hint="write the report to another file")  # fmt: skip


# A file changed this recently may change again within the same tick of the file system's clock, its times and
# size the same (git's "racy" entries): its stamp then holds a checksum of its bytes too.
RACY_NS = 2_000_000_000


def stamp(path: str | Path, content: bool = False) -> tuple[int, ...]:
    """What tells that a file changed since it was read (a file kept loaded, or a table kept beside a state, is of
    use while its stamp is the same): its identity, size, modification and change times, and, for a file changed
    within `RACY_NS` (or where `content` is asked), the CRC-32 of its bytes. `OSError` where it cannot be
    looked at."""
    import time

    info = os.stat(path)
    mark = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    if not stat.S_ISREG(info.st_mode) or not (content or time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns)
                                              < RACY_NS):  # fmt: skip
        return mark  # a FIFO or a device is never read here: the opener refuses it
    return (*mark, crc32_of(path, 0, info.st_size))


def crc32_of(path: str | Path, start: int, end: int, crc: int = 0) -> int:
    """CRC-32 of a file's bytes `start .. end`, going on from `crc` (that of the bytes before `start`), read a
    mebibyte at a time; -1 where the file is shorter than `end` now."""
    import zlib

    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            block = f.read(min(MiB, left))
            if not block:
                return -1
            crc, left = zlib.crc32(block, crc), left - len(block)
    return crc


def a(what: str) -> str:
    """`what` with its article: "a price file", "an OpenCode database"."""
    return f"an {what}" if what[:1].lower() in "aeiou" else f"a {what}"


def check_regular(path: str, what: str, limit: int | None = None) -> int:
    """The size of `path` if it is a regular file (through links) of at most `limit` bytes; else `InputError`."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise file_error(exc, path, what) from None
    noted(path, info)
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"is a folder; give {a(what)}", source=path)
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode) else "no file"
        raise InputError(f"not a regular file ({kind}); give {a(what)}", source=path)
    if limit is not None and info.st_size > limit:
        raise InputError(f"{info.st_size:,} bytes: larger than any {what} ({limit // MiB:,} MiB at most)", source=path)
    return info.st_size


def read_bytes(path: str | Path, what: str) -> bytes:
    """A regular file's bytes, bounded by its kind's limit (`LIMITS`); read no further than the limit even if
    it grows meanwhile."""
    name = str(path)
    limit = LIMITS.get(what)
    check_regular(name, what, limit)
    try:
        with open(name, "rb") as fh:
            data = fh.read(limit + 1 if limit is not None else -1)
    except OSError as exc:
        raise file_error(exc, name, what) from None
    if limit is not None and len(data) > limit:
        raise InputError(f"larger than any {what} ({limit // MiB:,} MiB at most)", source=name)
    return data


def read_text(path: str | Path, what: str) -> str:
    """A regular file's UTF-8 text (a byte-order mark dropped), bounded as `read_bytes` bounds it."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise file_error(exc, str(path), what) from None
