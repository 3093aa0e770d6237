"""The contract every input is held to, and the mutators that look for inputs that break it.

The contract (README, "Exit codes"): kcost ends with 0, 1 (`check` only) or 2; on 2 exactly one line
`kcost: error: ...` and nothing written; never a traceback; and a bill it writes holds together: no negative
tokens or money, hits + misses = input, a session's total is the sum of its turns, the run's the sum of its
sessions. Mutators start from real inputs (the shipped samples and fixtures) and break them the ways a hostile or
unlucky user would: truncation, byte flips, invalid UTF-8, lines duplicated or dropped, JSON values replaced by
huge, negative, non-finite, wrongly typed or deeply nested ones.
"""

from __future__ import annotations

import contextlib
import json
import random
from dataclasses import dataclass
from decimal import Decimal
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


def run(args: list[str], stdin: bytes | None = None) -> Outcome:
    """kcost in-process; an output file named in `args` (after `-o`) is removed first, so it is this run's."""
    if "-o" in args:
        with contextlib.suppress(OSError):  # a name the system refuses: kcost must say so
            Path(args[args.index("-o") + 1]).unlink(missing_ok=True)
    result = CliRunner().invoke(cli, args, input=stdin)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        raise AssertionError(f"kcost {' '.join(args)} raised {type(exc).__name__}: {exc}") from exc
    return Outcome(args, result.exit_code, result.stdout, result.stderr)


def check_contract(out: Outcome, *, verdicts: bool = False, written: Path | None = None) -> None:
    """The exit-code, error-line and bill-invariant contract (see the module's docstring)."""
    allowed = {0, 1, 2} if verdicts else {0, 2}
    shown = out.stdout + out.stderr
    assert out.code in allowed, f"exit {out.code}: {shown[-500:]}"
    assert "Traceback" not in shown, shown[-2000:]
    if out.code == 2:
        lines = [line for line in out.stderr.splitlines() if line.strip() and not line.startswith("kcost: passed over")]
        assert len(lines) == 1 and lines[0].startswith("kcost: error: "), out.stderr
        assert written is None or not written.exists(), "an output file was written despite the error"
    if out.code == 0 and "--format" in out.args and out.args[out.args.index("--format") + 1] == "json":
        text = written.read_text() if written is not None else out.stdout
        if out.args[0] == "bill":
            check_bill(json.loads(text))


def check_bill(report: dict[str, Any]) -> None:
    for run_ in report["runs"]:
        run_total = Decimal(0)
        for s in run_["sessions"]:
            total = Decimal(0)
            for t in s["turns"]:
                assert min(t["input_tokens"], t["hit_tokens"], t["miss_tokens"], t["output_tokens"]) >= 0, t
                assert t["hit_tokens"] + t["miss_tokens"] == t["input_tokens"], t
                for key in ("hit_cost", "miss_cost", "write_premium", "output_cost", "total"):
                    assert Decimal(t[key]) >= 0, (key, t)
                assert 0 <= t["written_tokens"] <= t["miss_tokens"], t
                parts = ("hit_cost", "miss_cost", "write_premium", "output_cost")
                assert sum(Decimal(t[k]) for k in parts) == Decimal(t["total"]), t
                total += Decimal(t["total"])
            assert total == Decimal(s["summary"]["total"]), (total, s["summary"]["total"])
            run_total += total
        assert run_total == Decimal(run_["total"]["total"])
