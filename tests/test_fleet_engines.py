"""The compiled replay core against its oracle, the Python engine: the same report, byte for byte but the line
that names the engine, on the shipped traces and on hypothesis-made ones; the same error where a trace is bad."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.cli import cli
from tests.conftest import ROOT, SHARED

pytest.importorskip("kcost.fleet._core", reason="the compiled core was not built here")

FIXTURE = ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl"
TRACES = [SHARED / "traces" / name for name in ("conversation_trace.jsonl", "synthetic_trace.jsonl")]
SHIPPED = [FIXTURE] + [path for path in TRACES if path.exists()]


def both(path: Path | str, *args: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(exit code, report without its engine line, engine) from each engine."""
    out = []
    for engine in ("compiled", "python"):
        result = CliRunner().invoke(cli, ["trace", str(path), "--format", "json", "--engine", engine, *args])
        text = result.output
        ran = json.loads(text)["engine"] if result.exit_code == 0 else ""
        body = "\n".join(line for line in text.splitlines() if not line.startswith('  "engine": '))
        out.append((result.exit_code, body, ran))
    return out[0], out[1]


OPTIONS = [
    ["--cache", "k3", "--cache", "ideal", "--cache", "none", "--capacity", "1M,10M,inf"],
    ["--cache", "k3:every=4,ttl=60", "--cache", "shared:1024", "--capacity", "300K,inf", "--class-budget", "long=30%"],
    ["--cache", "k3:ttl=inf", "--capacity", "40K", "--checkpoint-mb", "50"],  # evictions, a pool full of pins
    ["--clusters", "6", "--fail", "2@60-400", "--fail", "4@100-200", "--capacity", "2M"],
]


@pytest.mark.parametrize("options", OPTIONS, ids=["curve", "every-ttl-shared", "evictions", "failover"])
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_both_engines_give_the_same_report_on_the_shipped_traces(path: Path, options: list[str]) -> None:
    compiled, python = both(path, *options)
    assert compiled[0] == python[0] == 0
    assert compiled[2] == "compiled" and python[2] == "python"
    assert compiled[1] == python[1]


# ---- hypothesis-made traces -------------------------------------------------------------------------------------

SESSIONS = st.one_of(st.none(), st.sampled_from(["a", "b", "c\\u00e9", 'd\\"q', "é", "s/1"]))


@st.composite
def trace_files(draw: st.DrawFn) -> str:
    """Conversations that grow turn by turn, written as a tool might write them: either shape, extra and repeated
    keys, blank lines, CRLF ends, float times, ids negative or past 64 bits, now and then a bad line."""
    mooncake = draw(st.booleans())
    lines, chains = [], {}
    time = 0.0
    next_id = draw(st.sampled_from([0, -(2**40), 2**62]))
    for _ in range(draw(st.integers(1, 40))):
        conv = draw(st.integers(0, 4))
        chain = chains.setdefault(conv, [])
        for _ in range(draw(st.integers(0, 5))):
            chain.append(next_id)
            next_id += 1
        size = max(1, len(chain) * 512 - draw(st.integers(0, 511)))
        ids = [*chain, next_id][: -(-size // 512)] if chain else [next_id]
        size = min(size, len(ids) * 512)
        next_id += 1
        time += draw(st.sampled_from([0.0, 0.5, 3.0, 90.0, 700.0]))
        out = draw(st.integers(0, 300))
        if mooncake:
            stamp = int(time * 1000) if draw(st.booleans()) else time * 1000
            fields = [f'"timestamp": {json.dumps(stamp)}', f'"input_length": {size}', f'"output_length": {out}',
                      f'"hash_ids": {json.dumps(ids)}']  # fmt: skip
        else:
            fields = [f'"time": {json.dumps(time)}', f'"input_tokens": {size}', f'"output_tokens": {out}',
                      f'"blocks": {json.dumps(ids)}']  # fmt: skip
        session = draw(SESSIONS)
        if session is not None:
            fields.append(f'"session": "{session}"')
        if draw(st.integers(0, 9)) == 0:
            fields.append('"extra": {"nested": [1, 2.5, "x", null, true]}')
        if draw(st.integers(0, 9)) == 0:
            fields.insert(0, fields[1].replace(str(size), "7"))  # a repeated key: the last one counts
        lines.append("{" + ", ".join(fields) + "}")
        if draw(st.integers(0, 14)) == 0:
            lines.append("")
    if draw(st.integers(0, 14)) == 0:  # a bad line somewhere
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = draw(st.sampled_from(['{"time": -1}', "[1, 2]", lines[at][:-1], '{"time": NaN}',
                                          lines[at].replace("[", '["x", ', 1)]))  # fmt: skip
    if draw(st.integers(0, 9)) == 0:
        big = draw(st.sampled_from(["18446744073709551616", "-9223372036854775809"]))
        lines[0] = re.sub(r"\[-?\d+", "[" + big, lines[0], count=1)  # the core declines; Python replays
    end = "\r\n" if draw(st.integers(0, 4)) == 0 else "\n"
    return end.join(lines) + end


RUN_OPTIONS = st.one_of(
    st.just(["--cache", "k3", "--capacity", "inf"]),
    st.just(["--cache", "k3:ttl=60,every=2", "--cache", "ideal", "--capacity", "4K,20K,inf"]),
    st.just(["--cache", "shared:1024", "--cache", "none", "--capacity", "8K", "--checkpoint-mb", "20"]),
    st.just(["--clusters", "3", "--fail", "1@1-100", "--capacity", "10K", "--class-budget", "long=50%"]),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=trace_files(), options=RUN_OPTIONS)
def test_both_engines_agree_on_made_traces(tmp_path: Path, text: str, options: list[str]) -> None:
    path = tmp_path / "made.jsonl"
    path.write_bytes(text.encode())
    compiled, python = both(path, *options)
    assert compiled[:2] == python[:2]


def test_the_core_declines_what_it_cannot_replay_exactly(tmp_path: Path) -> None:
    """A block id past 64 bits: the Python engine replays the trace, and the report says so."""
    path = tmp_path / "big-ids.jsonl"
    line = '"input_tokens": 1024, "output_tokens": 1, "blocks": [18446744073709551616, 2]}'
    path.write_text(f'{{"time": 0, {line}\n{{"time": 1, {line}\n')
    compiled, python = both(path, "--cache", "ideal")
    assert compiled == (0, python[1], "python")
    assert '"hit_tokens": 512' in python[1]  # the second request hits its first block


@pytest.mark.parametrize(
    ("ids", "engine"),
    [
        (["999999999999999999", "-999999999999999999"], "compiled"),  # 18 digits
        (["1000000000000000000", "-1000000000000000000"], "compiled"),  # 19
        (["9223372036854775807", "-9223372036854775808"], "compiled"),  # the ends of 64 bits
        (["9223372036854775808", "7"], "python"),
        (["-9223372036854775809", "7"], "python"),  # just past them
        (["99999999999999999999", "7"], "python"),
    ],
    ids=["18-digits", "19-digits", "int64-ends", "past-max", "past-min", "20-digits"],
)
def test_block_ids_at_the_edges_of_64_bits_are_read_as_the_python_engine_reads_them(
    tmp_path: Path, ids: list[str], engine: str
) -> None:
    """Ids of 18 digits and fewer are read without a range check, longer ones with it: an id the core cannot hold
    sends the trace to the Python engine, one it can is the id Python reads (the same blocks hit)."""
    path = tmp_path / "edges.jsonl"
    line = f'"input_tokens": 1536, "output_tokens": 1, "blocks": [{", ".join(ids)}, 5]}}'
    path.write_text(f'{{"time": 0, {line}\n{{"time": 1, {line}\n')
    compiled, python = both(path, "--cache", "ideal")
    assert compiled == (0, python[1], engine)
    assert '"hit_tokens": 1024' in python[1]  # the second request hits its first two blocks


# ---- the longest line either engine reads ------------------------------------------------------------------------

REQUEST = '{"time": 1, "input_tokens": 600, "output_tokens": 1, "blocks": [1, 2]'


def padded(size: int, *, session: str = "a") -> str:
    """A request line of exactly `size` bytes in UTF-8 (its line break not counted), padded inside its session."""
    head = f'{REQUEST}, "session": "'
    fill = size - len(head.encode()) - len('"}')
    unit = len(session.encode())
    return head + session * (fill // unit) + " " * (fill % unit) + '"}'


@pytest.mark.parametrize("end", ["\n", "\r\n", ""], ids=["lf", "crlf", "at-eof"])
def test_a_line_at_the_limit_is_replayed_by_the_core(tmp_path: Path, end: str) -> None:
    from kcost.fleet.requests import MAX_LINE_BYTES

    path = tmp_path / "long.jsonl"
    path.write_bytes(f"{REQUEST.replace('1,', '0,', 1)}}}\n{padded(MAX_LINE_BYTES)}{end}".encode())
    compiled, python = both(path, "--clusters", "2")
    assert compiled == (0, python[1], "compiled")
    assert '"requests": 2' in python[1]


LONG = {
    "blanks": lambda n: " " * (n + 1),
    "blanks-and-tabs": lambda n: " \t" * (n // 2 + 1),
    "a-request": lambda n: padded(n + 1),
    "bytes-not-characters": lambda n: padded(n + 1, session="é"),  # fewer characters than the limit, more bytes
    "a-long-number": lambda n: REQUEST.replace("[1,", "[" + "1" * n + ",") + "}",
}


@pytest.mark.parametrize("end", ["\n", "\r\n", ""], ids=["lf", "crlf", "at-eof"])
@pytest.mark.parametrize("make", list(LONG.values()), ids=list(LONG))
def test_a_line_past_the_limit_is_the_same_error_from_both(tmp_path: Path, make, end: str) -> None:  # type: ignore[no-untyped-def]
    from kcost.fleet.requests import MAX_LINE_BYTES

    path = tmp_path / "long.jsonl"
    path.write_bytes(f"{REQUEST.replace('1,', '0,', 1)}}}\n{make(MAX_LINE_BYTES)}{end}".encode())
    for engine in ("compiled", "python"):
        result = CliRunner().invoke(cli, ["trace", str(path), "--engine", engine])
        assert result.exit_code == 2
        said = f"line is longer than {MAX_LINE_BYTES:,} bytes (a trace holds one request a line)"
        assert result.output == f"kcost: error: {path}:2: {said}\n"
