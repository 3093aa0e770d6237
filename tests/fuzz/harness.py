"""The contract every input is held to, and the mutators and generators that look for inputs that break it.

The contract (README, "Exit codes"): kcost ends with 0, 1 (`check` only) or 2; on 2 exactly one line
`kcost: error: ...` and nothing written; never a traceback, never a hang (a run has `TIMEOUT` seconds); no input
changed; no raw control character on a terminal (stderr, and stdout in the table and markdown formats), markdown
tables that keep their columns, HTML that opens no tag an input named; and a bill it writes holds together: no
negative tokens or money, hits + misses = input, a session's total is the sum of its turns, the run's the sum of
its sessions. Mutators start from real inputs (the shipped samples and fixtures) and break them the ways a
hostile or unlucky user would: truncation, byte flips, invalid UTF-8, lines duplicated or dropped, JSON values
replaced by huge, negative, non-finite, wrongly typed or deeply nested ones. `tests.fuzz.generators` makes what
no mutation of a log reaches.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import signal
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kcost.cli import cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "sample_sessions"

# input kind -> seed files (Kimi CLI sessions and OpenCode stores, folders, have tests of their own)
SEEDS: dict[str, list[Path]] = {
    "turn-spec": [SAMPLES / n for n in ("growing-chat.yaml", "edit-early-message.yaml", "stripped-reasoning.jsonl")],
    "kimi-api": [FIXTURES / "kimi-api" / n for n in ("pairs.jsonl", "requests.jsonl", "moonshot_chat_request.json")],
    "kimi-code": [FIXTURES / "kimi-code" / n for n in ("tool-turn.wire.jsonl", "sample-main.wire.jsonl")],
    "claude-code": [FIXTURES / "claude-code" / n for n in ("spotter-short.jsonl", "ccusage-chat-alpha.jsonl")],
    "codex": [FIXTURES / "codex" / "ccusage-session-alpha.jsonl"],
    "trace": [FIXTURES / "traces" / "synthetic-400.jsonl"],
    "gemini-cli": [
        FIXTURES / "gemini-cli" / n
        for n in ("session-2026-01-10T09-30-5f0c2f3e.jsonl", "session-2025-11-03T14-20-9b1c2d3e.json")
    ],  # fmt: skip
    "qwen-code": [FIXTURES / "qwen-code" / "7d2e9a4c-1b3f-4e5d-8a6b-9c0d1e2f3a4b.jsonl"],
}
OPENCODE = FIXTURES / "opencode"  # a JSON store (a folder of files), broken a file at a time; and a database

HOSTILE: list[Any] = [
    -1,
    -(10**9),
    10**12,
    10**30,
    2**63,
    1.5,
    -0.0,
    1e308,
    "",
    "ten",
    "\ud800",
    None,
    True,
    [],
    {},
    [1, [2]],
    {"a": {"b": {}}},
    "9" * 400,
    "2026-13-45T99:99:99Z",
    "NaN",
]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One of several ways to break an input, picked by `rng`."""
    how = rng.randrange(8)
    if not data:
        return b"{"
    if how == 0:  # cut short
        return data[: rng.randrange(len(data))]
    if how == 1:  # a byte flipped
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if how == 2:  # invalid UTF-8
        i = rng.randrange(len(data))
        return data[:i] + b"\xff\xfe" + data[i:]
    lines = data.split(b"\n")
    if how == 3:  # a line repeated
        i = rng.randrange(len(lines))
        return b"\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
    if how == 4:  # a line dropped
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i] + lines[i + 1 :])
    return _mutate_json(data, rng)


def _mutate_json(data: bytes, rng: random.Random) -> bytes:
    """A value somewhere in a JSON line (or document) replaced by a hostile one, or a key dropped."""
    lines = data.split(b"\n")
    candidates = [i for i, line in enumerate(lines) if line.strip().startswith((b"{", b"["))]
    whole = False
    if not candidates:
        try:
            json.loads(data)
            whole, candidates = True, [0]
        except ValueError:
            return data + b"\n{}"
    i = rng.choice(candidates)
    try:
        value = json.loads(data if whole else lines[i])
    except ValueError:
        return data[: len(data) // 2]
    paths = list(_paths(value))
    if not paths:
        return data
    path = rng.choice(paths)
    if rng.randrange(4) == 0 and path:
        _delete(value, path)
    else:
        _set(value, path, rng.choice(HOSTILE) if rng.randrange(6) else _deep(rng.randrange(200, 900)))
    text = json.dumps(value, ensure_ascii=rng.randrange(2) == 0).encode("utf-8", "surrogatepass")
    if whole:
        return text
    lines[i] = text
    return b"\n".join(lines)


def _deep(n: int) -> Any:
    value: Any = 1
    for _ in range(n):
        value = [value]
    return value


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Any:
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for k, v in enumerate(value[:20]):
            yield from _paths(v, (*at, k))


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    if not path:
        return
    for k in path[:-1]:
        value = value[k]
    value[path[-1]] = new


def _delete(value: Any, path: tuple[Any, ...]) -> None:
    for k in path[:-1]:
        value = value[k]
    del value[path[-1]]


@dataclass
class Outcome:
    args: list[str]
    code: int
    stdout: str
    stderr: str


TIMEOUT = 30  # seconds a run may take before it counts as a hang: every run here ends in well under one


class Hung(BaseException):
    """A run past its time (a BaseException: neither click nor kcost may catch it as one of their errors)."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """`Hung` raised after `seconds`: a blocked open or read (a FIFO) and a regular expression stuck backtracking
    are both interrupted by the signal. Only the main thread can take signals; elsewhere there is no deadline."""
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum: int, frame: Any) -> None:
        raise Hung

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def memory_cap(extra: int | None) -> Iterator[None]:
    """At most `extra` more bytes of address space while a run lasts: a read that never ends (`/dev/zero`) then
    fails in a second as a MemoryError (exit 70, a broken contract) instead of exhausting the machine."""
    statm = Path("/proc/self/statm")
    if extra is None or not statm.exists():
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = int(statm.read_text().split()[0]) * resource.getpagesize()
    cap = used + extra if hard == resource.RLIM_INFINITY else min(used + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run(args: list[str], stdin: bytes | None = None, *, env: dict[str, str | None] | None = None,
        timeout: float | None = None, memory: int | None = None) -> Outcome:  # fmt: skip
    """kcost in-process, under a deadline (and, given `memory`, an address-space cap); an output file named in
    `args` (after `-o`) is removed first, so it is this run's."""
    if "-o" in args:
        with contextlib.suppress(OSError):  # a name the system refuses: kcost must say so
            target = Path(args[args.index("-o") + 1])
            if target.is_file() and not target.is_symlink():
                target.unlink()
    timeout = TIMEOUT if timeout is None else timeout
    try:
        with deadline(timeout), memory_cap(memory):
            result = CliRunner().invoke(cli, args, input=stdin, env=env)
    except Hung:
        raise AssertionError(f"kcost {' '.join(args)!r} hung: no end in {timeout:g} s") from None
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        raise AssertionError(f"kcost {' '.join(args)} raised {type(exc).__name__}: {exc}") from exc
    return Outcome(args, result.exit_code, result.stdout, result.stderr)


class Kept:
    """What a run must leave as it found it: each regular file's bytes (hashed), each other file's kind, inode
    and link target, every entry of a folder; read without opening anything that is no regular file."""

    def __init__(self, *paths: str | Path) -> None:
        self.paths = [Path(p) for p in paths]
        self.before = self._now()

    def _now(self) -> dict[str, object]:
        seen: dict[str, object] = {}
        for top in self.paths:
            found = [top]
            if top.is_dir() and not top.is_symlink():
                found += sorted(top.rglob("*"))
            for path in found:
                try:
                    info = path.lstat()
                except OSError:
                    seen[str(path)] = None
                    continue
                if stat.S_ISREG(info.st_mode):
                    seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                else:
                    link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
                    seen[str(path)] = (stat.S_IFMT(info.st_mode), info.st_ino, link)
        return seen

    def changed(self) -> list[str]:
        now = self._now()
        return sorted(k for k in {*self.before, *now} if self.before.get(k) != now.get(k))


# What a terminal would act on: C0 controls but tab and newline, DEL, C1 controls, the line and paragraph
# separators, and the bidirectional overrides, embeddings, isolates and marks (text that reads reversed).
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
MARK = "kcostx"  # the tag, and the attribute, that text fed to kcost tries to open in HTML
TERMINAL_FORMATS = ("table", "markdown")
TABLE_BY_DEFAULT = ("bill", "explain", "compare", "quote", "check", "diff", "trace", "prices", "watch", "selfhost")


def check_contract(out: Outcome, *, verdicts: bool = False, written: Path | None = None,
                   kept: Kept | None = None, discount: bool = False) -> None:  # fmt: skip
    """The exit-code, error-line, shown-text and bill-invariant contract (see the module's docstring); `discount`:
    the prices declare a write discount (`check_bill`)."""
    allowed = {0, 1, 2} if verdicts else {0, 2}
    shown = out.stdout + out.stderr
    assert out.code in allowed, f"exit {out.code}: {shown[-500:]}"
    assert "Traceback" not in shown, shown[-2000:]
    if out.code == 2:
        lines = [line for line in out.stderr.splitlines() if line.strip() and not line.startswith("kcost: passed over")]
        assert len(lines) == 1 and lines[0].startswith("kcost: error: "), out.stderr
        assert written is None or not written.exists(), "an output file was written despite the error"
    if kept is not None:
        assert not (changed := kept.changed()), f"kcost {' '.join(out.args)} changed an input: {changed}"
    check_shown(out)
    if out.code == 0 and "--format" in out.args and out.args[out.args.index("--format") + 1] == "json":
        text = written.read_text() if written is not None else out.stdout
        if out.args[0] == "bill":
            check_bill(json.loads(text), discount=discount)


def output_format(args: list[str]) -> str | None:
    """The format of what a run writes to stdout: `--format`'s, else a command's table."""
    if "--format" in args and args.index("--format") + 1 < len(args):
        return args[args.index("--format") + 1]
    return "table" if args and args[0] in TABLE_BY_DEFAULT else None


def check_shown(out: Outcome) -> None:
    """No raw control character on the terminal (stderr; stdout in the table and markdown formats, colour off);
    markdown tables keep their columns; HTML opens no tag or attribute that text fed to kcost named."""
    coloured = "always" in out.args or os.environ.get("FORCE_COLOR")
    if not coloured:
        assert not (bad := CONTROLS.findall(out.stderr)), f"raw {bad[:5]} on stderr: {out.stderr[-300:]!r}"
    fmt = output_format(out.args)
    if "-o" in out.args or "--output" in out.args:
        return  # stdout is empty: the file is no terminal's
    if fmt in TERMINAL_FORMATS and not coloured:
        assert not (bad := CONTROLS.findall(out.stdout)), f"raw {bad[:5]} on stdout ({fmt})"
    if fmt == "markdown":
        check_markdown(out.stdout)
    if fmt == "html" and out.code == 0:
        check_html(out.stdout)


def check_markdown(text: str) -> None:
    """Every row of a markdown table has as many cells as its header (a `|` or a newline from an input would
    shift or split them), and no input opened a tag."""
    assert f"<{MARK}" not in text, "a tag from an input, unescaped, in markdown"
    cells = None
    for line in text.splitlines():
        if not line.startswith("|"):
            cells = None
            continue
        count = len(re.findall(r"(?<!\\)\|", line))
        cells = count if cells is None else cells
        assert count == cells, f"a markdown row of {count - 1} cells under a header of {cells - 1}: {line[:300]!r}"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.opened: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.opened += [tag, *(name for name, _ in attrs)]


def check_html(text: str) -> None:
    parser = _Tags()
    parser.feed(text)
    assert MARK not in parser.opened and f"{MARK}q" not in parser.opened, "an input opened a tag in the HTML"


def check_bill(report: dict[str, Any], *, discount: bool = False) -> None:
    """A bill kcost wrote holds together; `discount`: a price file declared a write discount, so a write
    premium may be negative (and is still part of every sum)."""
    for run_ in report["runs"]:
        run_total = Decimal(0)
        for s in run_["sessions"]:
            total = Decimal(0)
            for t in s["turns"]:
                assert min(t["input_tokens"], t["hit_tokens"], t["miss_tokens"], t["output_tokens"]) >= 0, t
                assert t["hit_tokens"] + t["miss_tokens"] == t["input_tokens"], t
                for key in ("hit_cost", "miss_cost", "write_premium", "output_cost", "total"):
                    assert Decimal(t[key]) >= 0 or (discount and key == "write_premium"), (key, t)
                assert 0 <= t["written_tokens"] <= t["miss_tokens"], t
                parts = ("hit_cost", "miss_cost", "write_premium", "output_cost")
                assert sum(Decimal(t[k]) for k in parts) == Decimal(t["total"]), t
                total += Decimal(t["total"])
            assert total == Decimal(s["summary"]["total"]), (total, s["summary"]["total"])
            run_total += total
        assert run_total == Decimal(run_["total"]["total"])
