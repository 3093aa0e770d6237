"""The inputs no mutation of a log reaches, made for `tests.fuzz.harness`'s contract: special files given as every
file option (FIFOs with no writer or a silent one, devices, folders, sockets, links to them), hostile price files
(rates, tiers, match clauses, periods), real bills read back with their figures broken, `--scheduler` addresses
and a local listener that answers as something other than Dask, and text made to fool a terminal, markdown or
HTML. Each generator says, where it can, what kcost must do with what it made (refuse it, or take it).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from tests.fuzz.harness import FIXTURES, HOSTILE, MARK, SAMPLES, run

# ---- special files, for every file option --------------------------------------------------------------------

SPEC = SAMPLES / "growing-chat.yaml"
TRACE = FIXTURES / "traces" / "synthetic-400.jsonl"
# What can stand where a file is named. A FIFO with no writer blocks whoever opens it; one "held" (open at the
# other end, never written) lets an open through and blocks the first read; one "fed" holds a whole valid input
# and a writer that never closes, so a read to the end never ends. A device never ends (/dev/zero) or is empty.
SPECIALS = ("fifo", "fifo-held", "fifo-fed", "/dev/zero", "/dev/urandom", "/dev/null", "folder", "socket",
            "link-to-/dev/zero", "link-to-fifo", "link-to-link-to-fifo", "dangling-link")  # fmt: skip
# Each file option of each command, {x} where the special file goes: a read given one must end in exit 2.
READS: dict[str, list[str]] = {
    "bill PATH": ["bill", "{x}"],
    "explain PATH": ["explain", "{x}"],
    "compare PATH": ["compare", "{x}"],
    "check PATH": ["check", "{x}", "--max-session-usd", "5"],
    "diff BEFORE": ["diff", "{x}", str(SPEC)],
    "diff AFTER": ["diff", str(SPEC), "{x}"],
    "trace PATH": ["trace", "{x}"],
    **{f"{c} --prices": [c, str(SPEC), "--prices", "{x}"] for c in ("bill", "explain", "compare", "check")},
    "diff --prices": ["diff", str(SPEC), str(SPEC), "--prices", "{x}"],
    "trace --prices": ["trace", str(TRACE), "--prices", "{x}"],
    "quote --prices": ["quote", "--prefix", "1000", "--new", "10", "--prices", "{x}"],
    "prices --prices": ["prices", "--prices", "{x}"],
    **{f"{c} --tokenizer": [c, str(SPEC), "--tokenizer", "{x}", "--usage", "simulated"]
       for c in ("bill", "explain", "compare", "check")},
    "diff --tokenizer": ["diff", str(SPEC), str(SPEC), "--tokenizer", "{x}"],
    "check --baseline": ["check", str(SPEC), "--baseline", "{x}", "--max-increase", "10%"],
    "check --config": ["check", str(SPEC), "--config", "{x}"],
}  # fmt: skip
# Files kcost finds rather than is given: in the working folder (a config), in a folder it reads, in the
# environment. {x} is the folder the special file is put in (under the name given), or, for KCOST_TOKENIZER, it.
FOUND: dict[str, tuple[str, list[str]]] = {
    "bill with kcost.toml": ("kcost.toml", ["bill", str(SPEC)]),
    "check with kcost.toml": ("kcost.toml", ["check", str(SPEC), "--max-session-usd", "5"]),
    "trace with kcost.toml": ("kcost.toml", ["trace", str(TRACE)]),
    "bill with pyproject.toml": ("pyproject.toml", ["bill", str(SPEC)]),
    "check with pyproject.toml": ("pyproject.toml", ["check", str(SPEC)]),
    "check a folder holding it": ("x.jsonl", ["check", "{x}", "--max-session-usd", "5"]),
    "bill a Kimi CLI session whose wire it is": ("wire.jsonl", ["bill", "{x}"]),
    "bill with KCOST_TOKENIZER": ("", ["bill", str(SPEC), "--usage", "simulated"]),
}
# Outputs: a folder cannot be written (exit 2); a device or a link to one is written through, as a shell's
# redirection would (exit 0). A FIFO no one reads would block the writer, as it would a shell's: not fuzzed.
WRITES: dict[str, list[str]] = {
    "bill -o": ["bill", str(SPEC), "-o", "{x}"],
    "trace -o": ["trace", str(TRACE), "-o", "{x}"],
    "trace --plot": ["trace", str(TRACE), "--capacity", "1M,inf", "--plot", "{x}"],
    "prices -o": ["prices", "-o", "{x}"],
    "schema -o": ["schema", "bill", "-o", "{x}"],
    "check GITHUB_STEP_SUMMARY": ["check", str(SPEC), "--max-session-usd", "5"],
}
OUTPUT_SPECIALS = ("folder", "/dev/null", "link-to-/dev/null")
KIMI_CLI = FIXTURES / "kimi-cli" / "sessions" / "0b7c55b8e1d46a1f3c2e9d8a7b6c5d4e" / "with-thinking"


@contextlib.contextmanager
def special_file(kind: str, where: Path, name: str = "special", fed: bytes = b"", named: bool = False) -> Iterator[str]:
    """A special file of `kind` at `where/name` (a device itself unless it must be `named` so: then a link to
    it), with what holds it open; closed after."""
    import socket

    path = where / name
    with contextlib.ExitStack() as stack:
        if kind.startswith("/dev/") and not named:
            yield kind
            return
        if kind.startswith("/dev/"):
            path.symlink_to(kind)
        elif kind == "folder":
            path.mkdir()
        elif kind == "socket":
            server = stack.enter_context(socket.socket(socket.AF_UNIX))
            server.bind(str(path))
            server.listen()
        elif kind.startswith("fifo") or kind.endswith("fifo"):
            fifo = path if kind.startswith("fifo") else where / f".{name}.fifo"
            os.mkfifo(fifo)
            if kind in ("fifo-held", "fifo-fed"):  # open at both ends (Linux lets a FIFO be), never closed early
                fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
                stack.callback(os.close, fd)
                if kind == "fifo-fed":
                    os.write(fd, fed[:60_000])  # what a pipe holds without a reader
            if kind == "link-to-fifo":
                path.symlink_to(fifo)
            elif kind == "link-to-link-to-fifo":
                (where / f".{name}.link").symlink_to(fifo)
                path.symlink_to(where / f".{name}.link")
        elif kind.startswith("link-to-"):
            path.symlink_to(kind.removeprefix("link-to-"))
        elif kind == "dangling-link":
            path.symlink_to(where / "nowhere")
        else:
            raise ValueError(kind)
        yield str(path)


# ---- hostile price files -------------------------------------------------------------------------------------

RATES = ("input_cache_miss", "input_cache_hit", "cache_write_5m", "cache_write_1h", "output")
WRITES_RATES = ("cache_write_5m", "cache_write_1h")
RATE_VALUES: list[Any] = ["0", "-1", "-0.000001", "1e30", "9" * 40, "0." + "0" * 40 + "1", "1e-30",
                          "3.14159265358979323846264338327950288", "1E+5", "1e-999999", 1.5, -3, 1e308, 10**40,
                          None, "", "NaN", "Infinity", "0x10", True, [], {}, "1_000"]  # fmt: skip
# Regular expressions that take exponential or high-polynomial time on an id of a few dozen characters
# (`^(a|aa)+$` on 40 a's and a `!` runs for minutes): each must be refused when the file is loaded.
BACKTRACKING = [r"^(a|aa)+$", r"^(a+)+$", r"(a*)*b", r"^(?:a|ab)*c$", r"(x+x+)+y", r"^(\w+\s?)*$", r"(.*a){12}",
                r"^(a|a?)+$", r"^([a-z]+)*!$", r"^(?:(?:a)*)*!", r"^" + r"\w*" * 8 + "!", r"^" + r"[a-z]*" * 7 + "!",
                r"^a*a*a*a*a*a*a*a*a*!", r"^(?=(a+)+!)"]  # fmt: skip
# Others a loader must take or refuse in one line, never run long: invalid, huge, backreferences, lookarounds.
ODD_REGEXES = [r"(", r"[", "\\", r"a{99999999999}", r"(?P<x>a)(?P=x)", r"(a*)\1b", r"(?<=a)b", r"^kimi-k3$",
               r"^kimi-\d{8}$", r"a{1,1000}b", "|".join(f"m{i}" for i in range(5000)), "a" * 100_000, r"(?i)KIMI",
               r"\p{L}", r"(?x) a # comment", "^" + "(" * 200 + "a" + ")" * 200 + "$",
               "(" * 1000 + "a" + ")" * 1000]  # fmt: skip
ADVERSARIAL_IDS = ["a" * 40 + "!", "a" * 255 + "!", "a" * 80, "ab" * 30 + "c", "x" * 60 + " !", "kimi-k3",
                   "a" * 300 + "!", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n!"]  # fmt: skip


_TABLE: list[dict[str, Any]] = []


def price_table() -> dict[str, Any]:
    """The shipped price table as a --prices file, cut to a few models a provider (each one `kcost compare`
    prices by default, one with tiers, one matched by a regular expression), so a run loads it fast."""
    if not _TABLE:
        from kcost.pricing.providers import compare_defaults

        table = json.loads(run(["prices", "--format", "json"]).stdout)
        keep = {table["default_model"], *compare_defaults()}
        for provider in table["providers"]:
            models = provider["models"]
            tiered = [m for m in models if any(p["tiers"] for p in m["prices"])][:1]
            regexed = [m for m in models if "regex" in json.dumps(m["match"])][:1]
            chosen = {m["id"] for m in [*models[:2], *tiered, *regexed]} | keep
            provider["models"] = [m for m in models if m["id"] in chosen]
        _TABLE.append(table)
    return json.loads(json.dumps(_TABLE[0]))


def hostile_prices(rng: random.Random) -> tuple[str, str | None]:
    """A price table broken one to three ways (rates, tiers, match clauses, periods), as JSON text, and what a
    loader must refuse it for (None: it may take it or refuse it)."""
    table = price_table()
    deep: dict[str, str] = {}
    models = [(p, m) for p in table["providers"] for m in p["models"]]
    for _ in range(rng.randint(1, 3)):
        with contextlib.suppress(TypeError, KeyError, IndexError, AttributeError, ValueError):
            # an earlier break may have left no part of the shape the next one wants
            provider, model = rng.choice(models)
            period = rng.choice(model["prices"])
            how = rng.randrange(8)
            if how == 0:  # a rate replaced
                period[rng.choice(RATES)] = rng.choice(RATE_VALUES)
            elif how == 1:  # a write below its miss, declared a discount or not
                miss = _decimal(period["input_cache_miss"]) or Decimal(1)
                cut = rng.choice([Decimal("0.5"), Decimal(0), Decimal("0.99999")])
                period[rng.choice(WRITES_RATES)] = str(miss * cut)
                period["write_discount"] = rng.choice([False, True, True, "yes", 1, None])
            elif how == 2:  # tiers: shuffled, repeated, negative, huge, below the flat rate
                starts = [rng.choice([0, 1, 1000, 100_000, 200_000, 200_000, 10**9, 10**12, -5]) for _ in range(4)]
                rate = rng.choice([*RATES, "bogus"])
                base = _decimal(period.get(rate)) or Decimal(1)
                tiers = [{"from_tokens": n, "rate": str(base * rng.choice([2, 3, Decimal("0.5")]))}
                         for n in starts[: rng.randint(1, 4)]]  # fmt: skip
                if rng.randrange(2):
                    tiers.sort(key=lambda t: t["from_tokens"])
                tiered = {**(period.get("tiers") or {}), rate: tiers}
                period["tiers"] = tiered if rng.randrange(5) else rng.choice(RATE_VALUES)
            elif how == 3:  # a regular expression that backtracks, or an odd one
                pattern = rng.choice(BACKTRACKING if rng.randrange(2) else ODD_REGEXES)
                clause = {"regex": pattern}
                model["match"] = {"or": [model["match"], clause]} if rng.randrange(2) else clause
            elif how == 4:  # nested deep (written as text: json.dumps would recurse as deep)
                levels = rng.choice([10, 100, 200, 500, 1000, 1100, 3000])
                model["match"] = f"deep-{len(deep)}"
                inner = json.dumps({"equals": model["id"]})
                deep[json.dumps(model["match"])] = '{"or": [' * levels + inner + "]}" * levels
            elif how == 5:  # a clause of the wrong shape
                model["match"] = rng.choice([{}, {"regex": 5}, {"equals": None}, {"starts_with": "x", "equals": "y"},
                                             {"not": {"equals": "x"}}, {"or": []}, {"and": "x"}, []])  # fmt: skip
            elif how == 6:  # periods: reordered, repeated, dated oddly
                model["prices"] = rng.sample(model["prices"] * 2, k=rng.randint(1, 2 * len(model["prices"])))
                model["prices"][0]["starts"] = rng.choice([None, "2026-01-01", "2026-13-01", "1900-01-01", 5, "x"])
            else:  # the table around the models
                target = rng.choice([table, provider, model])
                target[rng.choice(list(target))] = rng.choice([*RATE_VALUES, "", "EUR", "kimi-k3", "\u0000"])
    text = json.dumps(table, indent=rng.choice([None, 1]))
    for placeholder, clause in deep.items():
        text = text.replace(placeholder, clause)
    return text, price_faults(table)


def parsed(text: str) -> Any:
    """A found file's JSON, or None where it nests past what `json` recurses to (the oracles then judge nothing)."""
    try:
        return json.loads(text)
    except (RecursionError, ValueError):
        return None


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def price_faults(table: Any) -> str | None:
    """What in a (well-formed enough) price table a loader must refuse: a negative rate, a write below its miss
    at any prompt size without a declared discount, tiers not in growing order, a regular expression that
    backtracks. None where nothing certain is wrong (a table of the wrong shape is refused or not: no oracle)."""
    try:
        periods = [(m, p) for pr in table["providers"] for m in pr["models"] for p in m["prices"]]
    except (TypeError, KeyError):
        return None
    for model, period in periods:
        if not isinstance(period, dict):
            continue
        tiers = period.get("tiers") if isinstance(period.get("tiers"), dict) else {}
        for name, rows in tiers.items():
            starts = [r.get("from_tokens") for r in rows] if isinstance(rows, list) and all(
                isinstance(r, dict) for r in rows) else []  # fmt: skip
            if name in RATES and all(type(s) is int for s in starts) and starts != sorted(set(starts)):
                return f"tiers of {name} out of order"
        for name in RATES:
            for value in [period.get(name), *(r.get("rate") for r in _rows(tiers.get(name)))]:
                if (number := _decimal(value)) is not None and number < 0 and abs(number) > Decimal("1e-30"):
                    return f"a negative {name}"
        if not _declared(period.get("write_discount")):
            for at in sorted({0, *(r.get("from_tokens") for n in RATES for r in _rows(tiers.get(n)))} - {None}):
                miss = _at(period, tiers, "input_cache_miss", at)
                for name in WRITES_RATES:
                    write = _at(period, tiers, name, at)
                    if miss is not None and write is not None and write < miss:
                        return f"a {name} below the miss at {at} tokens"
        if any(p in json.dumps(model.get("match")) for p in map(json.dumps, map(str, BACKTRACKING))):
            return "a regular expression that backtracks"
    return None


def _declared(value: Any) -> bool:
    """Whether a period's `write_discount` says true as pydantic reads a boolean (`true`, also `"yes"` or `1`)."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(bool).validate_python(value) is True
    except ValidationError:
        return False


def _rows(rows: Any) -> list[dict[str, Any]]:
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _at(period: dict[str, Any], tiers: dict[str, Any], name: str, prompt: Any) -> Decimal | None:
    value = _decimal(period.get(name))
    for row in _rows(tiers.get(name)):
        if type(row.get("from_tokens")) is int and type(prompt) is int and prompt >= row["from_tokens"]:
            value = _decimal(row.get("rate"))
    return value


# ---- bills read back -----------------------------------------------------------------------------------------

MONEY = ("hit_cost", "miss_cost", "input_cost", "output_cost", "total")
TOKENS = ("input_tokens", "hit_tokens", "miss_tokens", "output_tokens")
_BILL: list[str] = []
BILLED = ("growing-chat.yaml", "edit-early-message.yaml")


def good_bill() -> dict[str, Any]:
    """A real bill of two sample sessions, under two cache models (from the repository's top, so that it names
    no machine's paths; small, so that reading it back is quick)."""
    if not _BILL:
        with contextlib.chdir(SAMPLES.parent):
            names = [f"{SAMPLES.name}/{n}" for n in BILLED]
            _BILL.append(run(["bill", *names, "--cache", "k3", "--cache", "anthropic", "--format", "json"]).stdout)
    parsed: dict[str, Any] = json.loads(_BILL[0])
    return parsed


def broken_bill(rng: random.Random) -> tuple[dict[str, Any], bool]:
    """A real bill with its figures broken one to three ways (negative money, totals that are not their sums,
    tokens that do not add up, wrong types), or edited so that it still holds together; and whether it still
    does (`bill_faults`): one that does not must be refused."""
    bill = good_bill()
    for _ in range(rng.randint(1, 3)):
        with contextlib.suppress(TypeError, KeyError, IndexError, AttributeError, ValueError, InvalidOperation):
            _break_bill(bill, rng)  # an earlier break may have left no figure of the shape the next one wants
    return bill, bill_faults(bill) is None


def _break_bill(bill: dict[str, Any], rng: random.Random) -> None:
    """One way of `broken_bill`'s, in place."""
    run_ = rng.choice(bill["runs"])
    sessions = run_["sessions"]
    session = rng.choice(sessions) if sessions else None
    turn = rng.choice(session["turns"]) if session and session["turns"] else None
    where = rng.choice([x for x in (run_["total"], session and session["summary"], turn) if x])
    how = rng.randrange(9)
    if how == 0:  # money negative
        key = rng.choice([k for k in MONEY if k in where])  # a turn has no input_cost
        where[key] = rng.choice(["-" + str(where[key]).lstrip("-"), "-0.01", "-984.85", -1, "-1e-30"])
    elif how == 1:  # a total off its sum by a little or a lot
        where["total"] = str(Decimal(str(where["total"])) + rng.choice([Decimal("1e-6"), Decimal(1), Decimal(-1)]))
    elif how == 2:  # tokens that do not add up, or negative
        where[rng.choice(TOKENS)] = rng.choice([-1, 0, 10**30, where["input_tokens"] + 1])
    elif how == 3:  # a figure of the wrong type
        where[rng.choice([*(k for k in MONEY if k in where), *TOKENS, "hit_rate"])] = rng.choice(HOSTILE)
    elif how == 4:  # a hit rate past 100% or below 0
        where["hit_rate"] = rng.choice([1.5, -0.1, 100, float("1e308")])
    elif how == 5 and session:  # a session dropped, the run's total kept or made right again
        sessions.remove(session)
        if rng.randrange(2):
            run_["total"]["total"] = str(sum((Decimal(s["summary"]["total"]) for s in sessions), Decimal(0)))
    elif how == 6 and session:  # a session repeated, the run's total kept or made right again
        sessions.append(json.loads(json.dumps(session)))
        if rng.randrange(2):
            run_["total"]["total"] = str(sum((Decimal(s["summary"]["total"]) for s in sessions), Decimal(0)))
    elif how == 7 and turn and session:  # a turn's cost moved, every total above it moved with it
        delta = rng.choice([Decimal("0.5"), Decimal("-0.5"), Decimal("1e-9")])
        for holder in (turn, session["summary"], run_["total"]):
            holder["total"] = str(Decimal(str(holder["total"])) + delta)
        if rng.randrange(2):
            turn["output_cost"] = str(Decimal(str(turn["output_cost"])) + delta)
    else:  # a field of the document itself
        target = rng.choice([bill, run_, run_["cache"]])
        target[rng.choice(list(target))] = rng.choice(HOSTILE)


def bill_faults(bill: Any) -> str | None:
    """What kcost guarantees of every bill it writes that `bill` breaks (money below zero, hits and misses that
    are not the input, a total that is not its sum), or None. Figures of the wrong type are not judged here."""
    try:
        runs = bill["runs"]
        for run_ in runs:
            sums = []
            for s in run_["sessions"]:
                summary = s["summary"]
                turns = s["turns"]
                for holder in (*turns, summary):
                    if fault := _figures_fault(holder):
                        return fault
                if turns and sum(Decimal(str(t["total"])) for t in turns) != Decimal(str(summary["total"])):
                    return "a session's total is not the sum of its turns"
                sums.append(Decimal(str(summary["total"])))
            if fault := _figures_fault(run_["total"]):
                return fault
            if sum(sums, Decimal(0)) != Decimal(str(run_["total"]["total"])):
                return "a run's total is not the sum of its sessions"
    except (TypeError, KeyError, InvalidOperation, ValueError, AttributeError):
        return None
    return None


def _figures_fault(figures: dict[str, Any]) -> str | None:
    if any(type(figures.get(k)) is not int for k in TOKENS):
        return None  # wrong types: refused or not, no oracle
    money = {k: _decimal(figures[k]) for k in MONEY if k in figures}
    if any(v is None for v in money.values()):
        return None
    if any(v is not None and v < 0 for v in money.values()):
        return "negative money"
    if min(figures[k] for k in TOKENS) < 0 or figures["hit_tokens"] + figures["miss_tokens"] != figures["input_tokens"]:
        return "tokens that do not add up"
    rate = figures.get("hit_rate")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and not 0 <= rate <= 1:
        return "a hit rate outside 0-100%"
    parts = [_decimal(figures.get(k, "0")) for k in ("hit_cost", "miss_cost", "write_premium", "output_cost")]
    if None not in parts and "total" in money and sum(parts, Decimal(0)) != money["total"]:  # type: ignore[arg-type]
        return "a total that is not the sum of its parts"
    return None


# ---- --scheduler addresses -----------------------------------------------------------------------------------

# How a listener that is no Dask scheduler answers a connection. Left out: one that accepts and never answers,
# or answers half a message and waits (each is bounded by kcost's Dask timeout, a regression case, not a fuzz
# case at 15 s a run), and a port no one listens on (Dask dials it again until its timeout).
ANSWERS = ("junk", "http", "ssh", "close", "reset", "echo", "huge-frame", "half-then-close", "zeros")


class Listener:
    """A local TCP listener answering each connection as `answer` says (set it before each run); a thread,
    stopped by `close`."""

    def __init__(self) -> None:
        import socket

        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.answer = "junk"
        self.seed = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn, self.answer, self.seed), daemon=True).start()

    def _answer(self, conn: Any, answer: str, seed: int) -> None:
        import socket
        import struct
        import time

        rng = random.Random(seed)
        with conn:
            conn.settimeout(2)
            try:
                if answer == "junk":
                    conn.sendall(rng.randbytes(rng.randint(1, 10_000)))
                elif answer == "http":
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                elif answer == "ssh":
                    conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                    conn.recv(4096)
                elif answer == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                elif answer == "echo":
                    while data := conn.recv(65536):
                        conn.sendall(data)
                elif answer == "huge-frame":  # Dask's framing: a count of frames, then their lengths
                    conn.sendall(struct.pack("<Q", 2**62) + struct.pack("<Q", 2**62) * 4)
                elif answer == "half-then-close":
                    conn.sendall(struct.pack("<Q", 1) + struct.pack("<Q", 1000) + b"\x80" * 10)
                    time.sleep(0.2)
                elif answer == "zeros":
                    conn.sendall(b"\0" * rng.randint(1, 100_000))
                conn.shutdown(socket.SHUT_WR)
                conn.recv(4096)
            except OSError:
                pass

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.server.close()


SCHEMES = ["tcp://", "tls://", "", "inproc://", "ucx://", "http://", "tcp:/", "unix://", "tcp://tcp://", "TCP://"]
HOSTS = ["127.0.0.1", "localhost", "[::1]", "[127.0.0.1]", "127.1", "", " ", "127.0.0.1 ", "a b", "::1", "[", "@",
         "user@127.0.0.1", "\x1b[2J", "\ud800", "é", "%00"]  # fmt: skip
BAD_PORTS = ["", "x", "-1", "0", "99999", "8786x", "1e3", "0x10", "9" * 40, "\x00"]  # none Dask would dial


def scheduler_address(rng: random.Random, port: int) -> str:
    """An address that reaches the local listener (any scheme), or is no address; never one that Dask would
    dial until its timeout (a closed port, a host elsewhere)."""
    scheme = rng.choice(SCHEMES)
    if rng.randrange(3) == 0:  # garbage through and through
        return rng.choice([scheme, ""]) + "".join(rng.choice("abc:/@[]%. \x1b\u202e") for _ in range(12))  # no port
    if rng.randrange(2):
        return f"{scheme}127.0.0.1:{port}"
    return f"{scheme}{rng.choice(HOSTS)}:{rng.choice(BAD_PORTS)}"


# ---- text made to fool a terminal, markdown or HTML ----------------------------------------------------------

HOSTILE_TEXT = ["\x1b]0;kcost-pwned\x07", "\x1b[2J\x1b[H", "\x1b[31mred\x1b[0m", "\x9b31m", "\x1bP+q\x1b\\", "\x07",
                "\r", "\x08\x08", "\x00", "\x7f", "\x85", "\u202ereversed\u202c", "\u2066isolated\u2069", "\u200f",
                "\u2028", "\u061c", f"<{MARK} onerror=alert(1)>", f'" {MARK}q="1', "| a | b |", "`code`", "**bold**",
                "[link](javascript:alert(1))", "&amp;", "\n| fake | row |\n", "\t", "\\", "<!--", "]]>", "[/]",
                "[bold red]", "[link=https://example.invalid]x[/link]", ":warning:", "%s%n", "{0}"]  # fmt: skip


def hostile_text(rng: random.Random) -> str:
    parts = [rng.choice(HOSTILE_TEXT) for _ in range(rng.randint(1, 3))]
    return "".join(p + rng.choice(["", "x", " name "]) for p in parts)


def fs_safe(text: str) -> str:
    """`text` as a file name (no slash, no NUL), kept short."""
    return text.replace("/", "_").replace("\0", "_")[:100] or "_"
