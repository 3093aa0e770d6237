"""The compiled scan of Claude Code logs (`kcost/readers/_claude.c`) against the Python reader it was written from.

A log read alone is read by the compiled scan where it is built, with or without its prompts rebuilt: it must
give what `claude_code._Log.read` gives (the responses' heads, calls and lines, and the counts of what was passed
over; with prompts, each call's messages and reply), or decline the log, and it must decline every log the Python
reader rejects or a lenient read forgives a line of. Held to that over every Claude Code log the project has
(fixtures, shared samples, generated logs) and over thousands of logs made from them line by line: fields
dropped, retyped, repeated and reordered, written with other white space and escapes, usage and times in every
form the reader takes or refuses, bytes broken; the chain of parents cut, branched and rejoined; message content
in every shape the reader takes.
"""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kcost.readers import claude_code
from kcost.readers.source import Source, open_source
from tests.conftest import ROOT, generate_claude_logs

pytestmark = pytest.mark.skipif(claude_code._claude is None, reason="the compiled scan is not built")

FIXTURES = ROOT / "tests" / "fixtures" / "claude-code"
SHARED = ROOT.parent / "shared" / "samples" / "claude-code"


def python_scan(src: Source, prompts: bool = False) -> Any:
    """What the Python reader makes of the log, or None where it rejects or forgives a line."""
    heads, calls, lines, passed = claude_code._python_scan(src, prompts)
    return None if calls is None else (heads, calls, lines, passed)


def logs() -> list[Path]:
    found = sorted(FIXTURES.rglob("*.jsonl"))
    if SHARED.is_dir():
        found += sorted(SHARED.rglob("*.jsonl"))
    return found


def generated(tmp: Path) -> list[Path]:
    """A few logs of the benchmark's generator (Claude Code's layout, one line per content block)."""
    generate_claude_logs(tmp, 4.0, seed=3)
    return sorted(tmp.rglob("*.jsonl"))


@pytest.mark.parametrize("prompts", [False, True])
def test_every_log_scans_as_the_python_reader_reads_it(prompts: bool, tmp_path: Path) -> None:
    """Every Claude Code log of the project, and generated ones: the compiled scan reads each one (none
    declined) and gives what the Python reader gives, with prompts rebuilt and without."""
    files = [*logs(), *generated(tmp_path)]
    assert len(files) >= 15
    rebuilt = 0
    for path in files:
        src = open_source(str(path))
        compiled = claude_code._compiled_scan(src, prompts)
        assert compiled is not None, path
        assert compiled == python_scan(src, prompts), path
        rebuilt += sum(call.messages is not None for call in compiled[1])
    assert (rebuilt > 300) is prompts  # the generated logs' calls, each with its prompt


# -- logs made line by line


def _lines() -> list[dict[str, Any]]:
    out = []
    for path in logs():
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                out.append(json.loads(raw))
    return out


USAGES: list[Any] = [
    {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 500, "output_tokens": 7},
    {"input_tokens": 3, "cache_read_input_tokens": 500, "output_tokens": 7},  # no writes: the reader's own parse
    {
        "input_tokens": 3,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 500,
        "output_tokens": 7,
        "cache_creation": {"ephemeral_1h_input_tokens": 4, "ephemeral_5m_input_tokens": 6},
    },
    {
        "input_tokens": 3,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 0,
        "output_tokens": 7,
        "cache_creation": {"ephemeral_1h_input_tokens": 40},
    },  # more kept an hour than written
    {
        "input_tokens": 3,
        "cache_creation_input_tokens": 1,
        "cache_read_input_tokens": 1,
        "output_tokens": 1,
        "cache_creation": None,
    },
    {
        "input_tokens": 3,
        "cache_creation_input_tokens": 1,
        "cache_read_input_tokens": 1,
        "output_tokens": 1,
        "cache_creation": 5,
    },
    {
        "input_tokens": 3,
        "cache_creation_input_tokens": 1,
        "cache_read_input_tokens": 1,
        "output_tokens": 1,
        "cache_creation": {"ephemeral_1h_input_tokens": 1.5},
    },
    {
        "input_tokens": 3,
        "cache_creation_input_tokens": 1,
        "cache_read_input_tokens": 1,
        "output_tokens": 1,
        "cache_creation": {"ephemeral_1h_input_tokens": -1},
    },
    {"input_tokens": 3.0, "cache_creation_input_tokens": 1, "cache_read_input_tokens": 1, "output_tokens": 1},
    {"input_tokens": -3, "cache_creation_input_tokens": 1, "cache_read_input_tokens": 1, "output_tokens": 1},
    {"input_tokens": True, "cache_creation_input_tokens": 1, "cache_read_input_tokens": 1, "output_tokens": 1},
    {"input_tokens": 10**12, "cache_creation_input_tokens": 1, "cache_read_input_tokens": 1, "output_tokens": 1},
    {"input_tokens": 10**20, "cache_creation_input_tokens": 1, "cache_read_input_tokens": 1, "output_tokens": 1},
    {
        "input_tokens": 999_999_990,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 5,
        "output_tokens": 1,
    },  # the prompt at the bound
    {
        "input_tokens": 999_999_990,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 6,
        "output_tokens": 1,
    },  # one past it
    {"input_tokens": 1, "cache_creation_input_tokens": 1, "cache_read_input_tokens": 1, "output_tokens": None},
    {"output_tokens": 5},
    {},
    None,
    "usage",
    [1, 2],
    7,
]
TIMES: list[Any] = [
    "2026-02-10T21:11:59.186Z", "2026-02-10T21:11:59Z", "2026-02-10T21:11:59.186123Z", "2026-02-10T21:11:59.1Z",
    "2026-02-10T21:11:59.186+00:00", "2026-02-10T21:11:59.186+02:00", "2026-02-10T21:11:59.186", " 2026-02-10Z",
    "2026-02-10", "2026-02-29T00:00:00.000Z", "2024-02-29T23:59:59.999Z", "1969-12-31T23:59:59.999Z",
    "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-13-01T00:00:00.000Z", "2026-02-10T24:00:00.000Z",
    "2026-02-10T21:60:00.000Z", "2026-02-10T21:11:60.000Z", "2026-02-10t21:11:59.186z", "1770757919", "1770757919.5",
    1770757919, 1770757919.186, 1770757919186, -5, True, None, "", "yesterday", {"at": 1},
]  # fmt: skip
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1.5,
    -2,
    "",
    "x",
    "<synthetic>",
    "<synthetic>",
    "assistant",
    "user",
    [],
    {},
    {"a": 1},
]
KEYS = ("message", "uuid", "parentUuid", "requestId", "isSidechain", "timestamp", "agentId", "type", "sessionId")
MESSAGE_KEYS = ("role", "id", "model", "usage", "content")


def _pick(rng: random.Random, values: list[Any]) -> Any:
    return copy.deepcopy(rng.choice(values))  # a record's own: never one another record changes later


def _mutated(record: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    record = copy.deepcopy(record)
    for _ in range(rng.randint(0, 3)):
        roll = rng.random()
        message = record.get("message")
        if roll < 0.25 and isinstance(message, dict):
            message["usage"] = _pick(rng, USAGES)
        elif roll < 0.4:
            record["timestamp"] = _pick(rng, TIMES)
        elif roll < 0.55:
            record[rng.choice(KEYS)] = _pick(rng, VALUES)
        elif roll < 0.65:
            record.pop(rng.choice(KEYS), None)
        elif roll < 0.8 and isinstance(message, dict):
            key = rng.choice(MESSAGE_KEYS)
            if rng.random() < 0.5:
                message[key] = _pick(rng, VALUES)
            else:
                message.pop(key, None)
        elif roll < 0.9:
            record["isSidechain"] = rng.choice([True, False, True, "true", 1])
            record["agentId"] = rng.choice(["a1", "a2", "", None])
        else:
            record["requestId"] = rng.choice(["req_1", "req_2", None, ""])
            if isinstance(message, dict):
                message["id"] = rng.choice(["msg_1", "msg_2", "msg_3", 7])
    return record


def _written(record: Any, rng: random.Random, wild: float) -> bytes:
    """A record as some writer might write it: separators, escapes, key order; with odds `wild`, also repeated
    keys, names written with escapes, surrogates, other white space, broken bytes."""
    if rng.random() < 0.3 and isinstance(record, dict):
        items = list(record.items())
        rng.shuffle(items)
        record = dict(items)
    separators = rng.choice([(",", ":"), (", ", ": "), (",\t", " :\r ")])
    text = json.dumps(record, ensure_ascii=rng.random() < 0.3, separators=separators)
    if rng.random() >= wild:
        return text.encode()
    roll = rng.random()
    if roll < 0.06 and text.startswith("{"):  # a key given twice: the last one holds
        key = rng.choice(KEYS)
        text = "{" + json.dumps(key) + ":" + json.dumps(rng.choice(VALUES)) + "," + text[1:]
    elif roll < 0.1 and '"usage":{' in text:  # a usage given twice within its message
        text = text.replace('"usage":{', '"usage":{"output_tokens":1},"usage":{', 1)
    elif roll < 0.13:
        text = text.replace('"role"', '"r\\u006fle"', 1)  # a name written with an escape
    elif roll < 0.15:
        text = text.replace('"id":"', '"id":"\\u00e9\\n\\"', 1)  # escapes in a value taken
    elif roll < 0.16:  # a value the reader compares, written with escapes
        text = text.replace('"assistant"', '"assist\\u0061nt"').replace('"<synthetic>"', '"\\u003csynthetic>"')
    elif roll < 0.18:
        text = text.replace('"id":"', '"id":"\\ud83d\\ude00', 1)  # a surrogate pair
    elif roll < 0.2:
        text = text.replace('"text":"', '"text":"\\ud800', 1)  # a lone surrogate, in a value not taken
    elif roll < 0.22:
        text = "  " + text + " \t"
    elif roll < 0.24:
        text = text + "\x0c"
    elif roll < 0.26:
        text = "[" + text + "]"
    elif roll < 0.28:
        text = text.replace(":", ":1e999", 1) if ":" in text else text
    data = text.encode()
    roll = rng.random()
    if roll < 0.15 and data:  # a broken byte
        at = rng.randrange(len(data))
        byte = rng.choice([0x00, 0x09, 0x0A, 0x1F, 0x22, 0x5C, 0x7D, 0xC3, 0xED, 0xFF])
        data = data[:at] + bytes([byte]) + data[at + 1 :]
    elif roll < 0.25:
        data = data[: rng.randrange(len(data) + 1)]
    elif roll < 0.3:
        data = data.replace("é".encode(), b"\xc3", 1)
    elif roll < 0.4 and data.startswith(b"{"):  # a field of no bearing, written as orjson takes it or refuses it
        extra = rng.choice(
            [
                b'"\xc3\xa9"',
                b'"\xed\xa0\x80"',
                b'"\xe0\x80\x80"',
                b'"\xe0\x9f\xbf"',
                b'"\xf4\x90\x80\x80"',
                b'"\xf0\x9f\x98\x80"',
                b'"\xc1\xbf"',
                b"1e99",
                b"1e999",
                b"-0.5E+12",
                b"01",
                b"1.",
                b"123456789012345678901234567890",
                b"[1,]",
                b"{}",
                b"[[[]]]",
                b"tru",
                b'"\\u00"',
            ]
        )
        data = b'{"x":' + extra + b"," + data[1:]
    return data


def test_logs_made_line_by_line_scan_as_the_python_reader_reads_them() -> None:
    """3,000 logs of 1-40 lines drawn from the project's logs, each line perhaps changed and written otherwise:
    wherever the compiled scan reads a log it gives what the Python reader gives, and wherever the Python
    reader rejects a log or forgives a line of it, the scan declines it."""
    rng = random.Random(2026)
    pool = _lines()
    seen: Counter[str] = Counter()
    for n in range(3000):
        records = [rng.choice(pool) for _ in range(rng.randint(1, 40))]
        changed, wild = rng.choice([0.0, 0.03, 0.1, 0.5]), rng.choice([0.0, 0.02, 0.1, 0.5])
        lines = [_written(_mutated(r, rng) if rng.random() < changed else r, rng, wild) for r in records]
        if rng.random() < 0.1:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b"   ", b"\t\x0b"]))
        data = b"\n".join(lines) + rng.choice([b"", b"\n"])
        _held(Source(f"made-{n}.jsonl", data, ".jsonl", after=rng.choice([0, 9])), False, n, seen)
    assert seen["read"] > 1000 and seen["rejected"] > 300  # both kinds of logs met, many times each


def _held(src: Source, prompts: bool, n: int, seen: Counter[str]) -> Any:
    """The compiled scan of a made log, held to the Python reader's read: what it read (None: declined), and in
    `seen` how many logs were read, declined, and declined where the Python reader rejects them too."""
    compiled = claude_code._compiled_scan(src, prompts)
    expected = python_scan(src, prompts)
    if compiled is None:
        seen["declined"] += 1
        seen["rejected"] += expected is None
        return None
    seen["read"] += 1
    assert expected is not None, (n, "the Python reader rejects a log the scan read")
    assert compiled == expected, n
    return compiled


TOOL_INPUTS: list[Any] = [
    {"file_path": "/src/app.py", "limit": 10, "offset": 0},
    {"command": "grep -n 'x' a.py | head", "timeout": 120000, "run_in_background": False, "why": None},
    {"text": "é ☃ 😀 \u2028 \x7f", "quote": '"q" \\ /', "controls": "\n\r\t\b\f\x01\x1f"},
    {"nested": {"a": [1, -2, 0, [], {}], "b": {"c": [True, None, "x"]}}},
    {"float": 1.5}, {"exponent": 1e5}, {"negative zero": -0.0}, {"large": 10**20}, {"edge": 999_999_999_999_999_999},
    [], [1, "two", None], "a string", 7, None, {},
]  # fmt: skip
BLOCKS: list[Any] = [
    {"type": "text", "text": "Here is the plan."},
    {"type": "text", "text": ""},
    {"type": "text", "text": 5},
    {"type": "text"},
    {"type": "thinking", "thinking": "Let me look at the file first.", "signature": "abc"},
    {"type": "thinking", "thinking": None},
    {"type": "redacted_thinking", "data": "xyz"},
    {"type": "tool_use", "id": "toolu_1", "name": "Read"},  # no input: {}
    {"type": "tool_use", "id": 7, "name": "Bash", "input": {"command": "ls"}},
    {"type": "tool_use", "name": None, "input": {"command": "ls"}},
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "     1\timport os\n"},
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "done"}, "raw"]},
    {"type": "tool_result", "tool_use_id": 3, "content": {"type": "text", "text": "a mapping"}},
    {"type": "tool_result", "content": None, "is_error": True},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
    {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
    "a bare string",
    7,
    None,
    [],
]


def _content(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.15:
        return _pick(rng, ["", "Fix the failing test.", 'é "quoted" \\ \n', "\u0000", "😀", 0, True, {}, None])
    blocks = [_pick(rng, BLOCKS) for _ in range(rng.randint(0, 4))]
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_use" and rng.random() < 0.8:
            block["input"] = _pick(rng, TOOL_INPUTS)
    return blocks


def _chained(records: list[Any], rng: random.Random) -> list[Any]:
    """The records on a chain of parents of their own: a few uuids, so that lines repeat one another; each line's
    parent an earlier line, a line never logged, none, or not given at all."""
    names = [f"u{n}" for n in range(rng.randint(2, 12))]
    out, seen = [], []
    for record in records:
        if not isinstance(record, dict):
            out.append(record)
            continue
        record = copy.deepcopy(record)
        roll = rng.random()
        if roll < 0.8:
            record["uuid"] = rng.choice(names)
        elif roll < 0.9:
            record.pop("uuid", None)
        roll = rng.random()
        if roll < 0.55 and seen:
            record["parentUuid"] = seen[-1] if rng.random() < 0.6 else rng.choice(seen)
        elif roll < 0.7:
            record["parentUuid"] = None
        elif roll < 0.8:
            record["parentUuid"] = "never-logged"
        elif roll < 0.9:
            record.pop("parentUuid", None)
        if isinstance(record.get("uuid"), str):
            seen.append(record["uuid"])
        message = record.get("message")
        if isinstance(message, dict) and rng.random() < 0.4:
            message["content"] = _content(rng)
        if isinstance(message, dict) and message.get("role") == "assistant" and rng.random() < 0.05:
            message["model"] = "<synthetic>"  # an error Claude Code wrote itself: on the chain, never billed
        out.append(record)
    return out


INPUTS_WRITTEN = [  # a tool's input as other writers write it: what json.dumps writes again otherwise
    b'"input":{"same":1,"same":2,',  # a name given twice: the last value, at the first's place
    b'"input":{"zero":-0,"list":[-0,0,-1],',
    b'"input":{"slash":"a\\/b","hex":"\\u00E9\\u0001\\u001F\\u007f\\u2028\\u0022\\u005c","ctl":"\\b\\f",',
    b'"input":{"float":1.0,',
    b'"input":{"exponent":1e5,"neg":-2.5E-3,',
    b'"input":{"whole":12345678901234567890,',
    b'"input":{"edge":123456789012345678,"edge negative":-123456789012345678,',
    b'"input":{"n\\u0061me":1,',  # a name written with an escape
    b'"input": { "spaced" : [ 1 , 2 , { "a" : null } ] , "t" : true ,',
    b'"input":{"deep":' + b"[" * 70 + b"]" * 70 + b",",
]


def _inputs_written(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b'"input":{', rng.choice(INPUTS_WRITTEN), 1) if b'"input":{' in data else data


def test_logs_made_line_by_line_rebuild_prompts_as_the_python_reader_does() -> None:
    """3,000 logs as above, their lines put on chains of their own (branched, cut, rejoined, repeated) and their
    messages given content of every shape: wherever the compiled scan reads a log with its prompts, each call's
    messages and reply are the Python reader's, and wherever that reader rejects a log or forgives a line of it,
    the scan declines it."""
    rng = random.Random(3)
    pool = _lines()
    seen: Counter[str] = Counter()
    for n in range(3000):
        records = [rng.choice(pool) for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.8:
            records = _chained(records, rng)
        changed, wild = rng.choice([0.0, 0.03, 0.1, 0.5]), rng.choice([0.0, 0.0, 0.02, 0.1])
        lines = [_written(_mutated(r, rng) if rng.random() < changed else r, rng, wild) for r in records]
        lines = [_inputs_written(line, rng) if rng.random() < 0.3 else line for line in lines]
        data = b"\n".join(lines) + rng.choice([b"", b"\n"])
        compiled = _held(Source(f"made-{n}.jsonl", data, ".jsonl", after=rng.choice([0, 9])), True, n, seen)
        seen["messages"] += sum(len(call.messages or ()) for call in compiled[1]) if compiled else 0
    assert seen["read"] > 1500 and seen["rejected"] > 500 and seen["messages"] > 4000


@pytest.mark.parametrize("usage", ["reported", "auto"])
def test_a_run_bills_the_same_with_the_scan_and_without_it(usage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Claude Code log of the project billed at once (copies, resumed sessions and side questions joined),
    with the compiled scan and with the Python reader alone: the same JSON."""
    from click.testing import CliRunner

    from kcost.cli import cli

    args = ["bill", str(FIXTURES), "--usage", usage, "--format", "json"]
    compiled = CliRunner().invoke(cli, args)
    monkeypatch.setattr(claude_code, "_claude", None)
    alone = CliRunner().invoke(cli, args)
    assert compiled.exit_code == alone.exit_code == 0, compiled.stderr
    assert compiled.stdout == alone.stdout and compiled.stdout.count('"turn":') >= 17
