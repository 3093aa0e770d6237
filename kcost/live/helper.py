"""A status line's resident helper: the bare `kcost statusline` call answered by a kcost that is already loaded.

A status-line hook starts kcost on every prompt, and most of such a call is Python starting and importing kcost's
modules (a hundred of them) before it reads the few lines appended since the last call. So the first bare call
(`kcost statusline`, `kcost statusline PATH`: the launcher's, no option given) answers itself and then starts a
helper in the background: a process that imports those modules once and waits on a Unix socket. Each later call
sends it what the call was given (the log's path or the hook's JSON, the working directory, the environment and
umask, whether its output is a terminal); the helper forks, and the child answers exactly as the call would have
(`statusline.hook_line`, in the caller's directory and environment, from the state kept in the cache folder),
then exits. Nothing of one call is left in the helper for the next: the answer is the call's own.

A fork server of kcost's own, for the status line's target (a call after one appended response at most 1.5x
`kcost --version`): on a 5,000-call session a call answered by the helper takes 82 ms (2.0x), one answering itself
108 ms (2.6x), measured by `bench/bench_statusline.py` (docs/performance.md).

- One helper per user, machine, interpreter and kcost install: its socket in `$XDG_RUNTIME_DIR/kcost`, else in
  `/tmp/kcost-<uid>`, a folder only the user can enter (one of another owner, or open to others, is not used);
  a caller of another user is refused (its credentials, where the system gives them).
- The helper ends after `IDLE_SECONDS` without a call, when its socket is removed or taken by another, and when a
  kcost module it loaded changed on disk (that call answers itself, and starts a new helper).
- `KCOST_STATUSLINE_HELPER=0` turns it off: no helper is asked or started.
- Whatever goes wrong with a helper (none there, a stale one, no answer within `ANSWER_SECONDS`), the call answers
  itself, so the helper is only ever a faster way to the same line.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from typing import Any

from kcost.live import MAX_HOOK

PROTOCOL = 1
ENV = "KCOST_STATUSLINE_HELPER"
IDLE_SECONDS = 600.0  # a helper with no call for this long ends (twice the cache's default lifetime)
ANSWER_SECONDS = 120.0  # the longest a call waits on a helper's answer (a first read of a long log included)
_CHECK_SECONDS = 5.0  # how often an idle helper looks at its socket
_MAX_REQUEST = 64 << 20  # a call's environment and hook JSON, at most
_RESTART_SECONDS = 30.0  # a helper started this recently and not answering is not started again
# what a status-line call imports: loaded once by the helper, before it waits for calls
WARM = (
    "kcost.live.statusline",
    "kcost.api.settings",
    "kcost.api",
    "kcost.live.clock",
    "kcost.live.incremental",
    "kcost.live.running",
    "kcost.readers.agents.claude_code_live",
    "kcost.readers.agents.kimi_code_live",
    "kcost.pricing.charges",
    "kcost.pricing.prices",
    "kcost.results.prices",
    "kcost.render.display",
    "kcost.ledger.live",
    "kcost.model.budgets",  # a config's validation (pydantic): a call in a folder with a kcost.toml
    "kcost.live.limits",  # a usage window's limit (the config's [window])
    "kcost.analysis.windows",
    "pickle",
)


class Given:
    """What a call was given on stdin, read once (so a call that asked a helper in vain still has it): the hook's
    JSON, or nothing (a terminal, no stdin, or a log's path given instead). Read as `statusline.hook_line` reads
    stdin (`isatty()`, `buffer.read(n)`)."""

    def __init__(self, raw: bytes | None, error: OSError | None = None) -> None:
        self.raw, self.error = raw, error
        self.buffer = self

    @classmethod
    def take(cls, path: str | None, stdin: Any) -> Given:
        if path is not None or stdin is None:
            return cls(None)
        try:
            return cls(None) if stdin.isatty() else cls(stdin.buffer.read(MAX_HOOK))
        except OSError as exc:
            return cls(b"", exc)

    def isatty(self) -> bool:
        return self.raw is None

    def read(self, size: int = -1) -> bytes:
        if self.error is not None:
            raise self.error
        return (self.raw or b"")[: size if size >= 0 else None]


class Terminal:
    """Whether the caller's output is a terminal, for the line's colour (`statusline.colour`)."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def identity() -> tuple[int | str, ...]:
    """What a helper must share with its caller to answer for it: this protocol, the machine (a container of its
    own has a name of its own, where a folder like /tmp may be shared), the interpreter and its environment (a
    venv's `python` and `python3` are one), and the kcost install (its folder and version)."""
    from kcost.version import __version__

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this file is kcost/live/helper.py
    return (PROTOCOL, os.uname().nodename, os.path.realpath(sys.executable), sys.prefix, sys.version, package,
            __version__)  # fmt: skip


def address() -> str | None:
    """The helper's socket for this user, interpreter and install; None where no helper can be used (turned off, no
    Unix sockets, no private folder, a path too long for a socket)."""
    if os.environ.get(ENV, "").strip() == "0" or not hasattr(os, "getuid") or not hasattr(os, "fork"):
        return None
    import zlib

    name = os.path.join(_folder(), f"statusline-{zlib.crc32(repr(identity()).encode()):08x}.sock")
    # a Unix socket's path holds 107 bytes; the helper binds `<name>.<pid>` first, then moves it to the name
    return name if len(name.encode()) <= 90 else None


def _folder() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        folder = os.path.join(runtime, "kcost")
    else:
        folder = os.path.join(os.environ.get("TMPDIR", "").strip() or "/tmp", f"kcost-{os.getuid()}")
    return folder


def _private(folder: str, *, make: bool) -> bool:
    """Whether `folder` is the user's own and closed to everyone else (made so where `make`)."""
    import stat

    try:
        if make and not os.path.lexists(folder):
            os.mkdir(folder, 0o700)
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


# -- the caller


def ask(path: str | None, given: Given, stdout: Any) -> str | None:
    """The line a running helper gives for this call; None where none answered (the call answers itself)."""
    where = address()
    if where is None or not _private(os.path.dirname(where), make=False):
        return None
    try:
        isatty = getattr(stdout, "isatty", None)
        mask = os.umask(0o077)
        os.umask(mask)
        request = marshal.dumps(("line", identity(), path, os.getcwd(), dict(os.environ), mask, given.raw,
                                 given.error is not None, bool(isatty and isatty())))  # fmt: skip
        reply = marshal.loads(_exchange(where, request))
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "line" and isinstance(reply[1], str):
        return reply[1]
    return None


def _exchange(where: str, request: bytes) -> bytes:
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(ANSWER_SECONDS)
        sock.connect(where)
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        sock.close()


def start(thresholds: tuple[int, int, int] | None = None) -> bool:
    """Start a helper in the background (its cyclic collector at `thresholds`, as the launcher sets a kcost
    process's), unless one is turned off, cannot be used, or was started just now (one that failed to start is
    not started again at every call); whether one was started."""
    import time

    where = address()
    if where is None or not _private(os.path.dirname(where), make=True):
        return False
    mark = where + ".started"
    try:
        if time.time() - os.stat(mark).st_mtime < _RESTART_SECONDS:
            return False
    except OSError:
        pass
    import subprocess

    try:
        with open(mark, "wb"):
            pass
        paths = [os.path.abspath(p) for p in sys.path if p]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}  # the caller's kcost, wherever it came from
        collector = [",".join(map(str, thresholds))] if thresholds else []
        subprocess.Popen([sys.executable, "-m", "kcost.live.helper", where, str(IDLE_SECONDS), *collector],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                         env=env, start_new_session=True, close_fds=True)  # fmt: skip
    except OSError:
        return False
    return True


def stop(where: str | None = None) -> bool:
    """Ask the helper at `where` (this user's, by default) to end; whether one was there to ask."""
    where = where or address()
    if where is None:
        return False
    try:
        _exchange(where, marshal.dumps(("stop",)))
    except OSError:
        return False
    return True


# -- the helper


def serve(where: str, idle: float = IDLE_SECONDS, thresholds: tuple[int, ...] | None = None) -> int:
    """Wait for calls on the socket at `where`, answering each in a child of this process (its cyclic collector at
    `thresholds`, where given), until idle for `idle` seconds, the socket is gone or another's, or a module
    changed."""
    import gc
    import importlib
    import signal
    import socket
    import time

    for number in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(number, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped by the system
    if thresholds:
        gc.set_threshold(*thresholds)
    for name in WARM:
        importlib.import_module(name)
    own = identity()
    stamps = _stamps()
    gc.collect()
    gc.freeze()  # what every child shares: its collector never walks it, so its pages stay shared

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temp = f"{where}.{os.getpid()}"
    try:
        if os.path.lexists(temp):
            os.unlink(temp)
        listener.bind(temp)
        listener.listen(64)
        os.replace(temp, where)  # taken over from any helper before: it sees its socket gone, and ends
        mine = os.stat(where).st_ino
    except OSError:
        return 1
    listener.settimeout(min(_CHECK_SECONDS, idle))
    last = time.monotonic()
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if time.monotonic() - last > idle or not _ours(where, mine) or _stamps() != stamps:
                break
            continue
        except OSError:
            break
        last = time.monotonic()
        with conn:
            try:
                conn.settimeout(_CHECK_SECONDS)
                request = marshal.loads(_receive(conn)) if _same_user(conn) else None
            except (OSError, ValueError, EOFError, TypeError):
                continue
            if not isinstance(request, tuple) or not request:
                continue
            if request[0] == "stop":
                with contextlib.suppress(OSError):
                    conn.sendall(marshal.dumps(("stopping",)))
                break
            if _stamps() != stamps:
                break  # a module changed: the caller gets no answer, and answers itself
            if os.fork() == 0:  # the child answers; the helper goes back to waiting
                try:
                    listener.close()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    _answer(conn, request, own)
                finally:
                    os._exit(0)
    listener.close()
    if _ours(where, mine):
        os.unlink(where)
    return 0


def _answer(conn: Any, request: tuple[Any, ...], own: tuple[int | str, ...]) -> None:
    """In a child of the helper: one call's line, as the call would have made it itself (in its folder, with its
    environment); nothing where the call is not one this helper can answer."""
    import time

    if len(request) != 9 or request[0] != "line" or request[1] != own:
        return
    _, _, path, cwd, env, mask, raw, failed, tty = request
    if not (isinstance(path, str | None) and isinstance(cwd, str) and isinstance(env, dict) and isinstance(mask, int)):
        return
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    os.umask(mask)  # the state it writes, as the call's own would be
    os.chdir(cwd)
    from kcost.live.statusline import default_settings, hook_line

    given = Given(raw if isinstance(raw, bytes) else None, OSError("stdin could not be read") if failed else None)
    shown = hook_line(path, default_settings, "auto", given, Terminal(bool(tty)))
    conn.sendall(marshal.dumps(("line", shown)))


def _receive(conn: Any) -> bytes:
    chunks, size = [], 0
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_REQUEST:
            raise ValueError("request too large")
    return b"".join(chunks)


def _same_user(conn: Any) -> bool:
    import socket
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True  # the folder is closed to other users: it is the guard
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except OSError:
        return False
    return bool(uid == os.getuid())


def _ours(where: str, mine: int) -> bool:
    try:
        return os.stat(where).st_ino == mine
    except OSError:
        return False


def _stamps() -> dict[str, tuple[int, ...]]:
    """The stamp (size, modification time) of every kcost module this process loaded."""
    from kcost.inputs.files import stamp

    out: dict[str, tuple[int, ...]] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and (name == "kcost" or name.startswith("kcost.")):
            try:
                out[path] = stamp(path)
            except OSError:
                out[path] = (-1, -1)
    return out


if __name__ == "__main__":  # python -m kcost.live.helper SOCKET [IDLE [THRESHOLDS]]
    given = sys.argv[1:]
    sys.exit(serve(given[0], float(given[1]) if len(given) > 1 else IDLE_SECONDS,
                   tuple(int(n) for n in given[2].split(",")) if len(given) > 2 else None))  # fmt: skip
