"""Every transcript format kcost reads, billed through the CLI from the small files in `tests/fixtures/`.

For each format: one good file (turn counts, and in `--usage reported` mode the bill's input, cached and output
tokens equal what the file reports, call by call); its failure modes (a broken JSON line, a wrong-typed,
negative or contradictory usage count, a missing required field), each exit 2 with one `kcost: error:` line
naming the file and line; and format detection (`--input-format` given explicitly bills the same as the guess).

The fixtures are copies of `shared/samples/` (see `tests/fixtures/README.md`) or small hand-made files that
follow `shared/notes/formats.md`. The broken inputs are made in `tmp_path` by editing one line of a copy.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost.cli import cli
from tests.conftest import expect_error

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KIMI_CLI = "kimi-cli/sessions/0b7c55b8e1d46a1f3c2e9d8a7b6c5d4e"  # ~/.kimi/sessions/<md5 of the work dir>/
REQUESTS, PAIRS, STREAM_JSON = (
    "kimi-api/requests.jsonl",
    "kimi-api/pairs.jsonl",
    "kimi-api/kimi_cli_print_stream_json.jsonl",
)
NONSTREAM, CHUNK = "kimi-api/moonshot_chat_response_nonstream.json", "kimi-api/moonshot_stream_final_chunk.json"
BATCH_IN, BATCH_OUT = "kimi-api/batch_input.jsonl", "kimi-api/batch_output.jsonl"
SESSION = f"{KIMI_CLI}/with-thinking"
WIRE, CONTEXT = f"{SESSION}/wire.jsonl", f"{SESSION}/context.jsonl"
KIMI_CODE, CLAUDE, CODEX = (
    "kimi-code/tool-turn.wire.jsonl",
    "claude-code/spotter-short.jsonl",
    "codex/ccusage-session-alpha.jsonl",
)

Usage = tuple[int, int, int]  # (prompt incl. cached, cached, output), as the file reports one call


def kcost(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin)


def bill(*args: str, stdin: str | None = None) -> dict[str, Any]:
    """`kcost bill ARGS --format json`, which must succeed; the parsed report."""
    result = kcost("bill", *args, "--format", "json", stdin=stdin)
    assert result.exit_code == 0, result.output + result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def sessions(report: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = report["runs"][0]["sessions"]
    return found


def fixture(rel: str) -> str:
    return str(FIXTURES / rel)


# ---- 1. one good file per format ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Good:
    paths: tuple[str, ...]  # relative to tests/fixtures
    fmt: str  # the --input-format that names it
    turns: tuple[int, ...]  # turns of each session, in the default (auto) mode
    reported: tuple[Usage, ...] = ()  # every call's usage as the file reports it, in order; () = none logged


GOOD = [
    pytest.param(Good(("kimi-api/moonshot_chat_request.json",), "kimi-api", (1,)), id="kimi-api-request-json"),
    pytest.param(Good((REQUESTS,), "kimi-api", (2,)), id="kimi-api-requests-jsonl"),
    pytest.param(
        Good((PAIRS,), "kimi-api", (2,), ((1200, 0, 40), (1300, 1024, 12))),
        id="kimi-api-request-response-pairs",
    ),
    pytest.param(
        Good(
            ("kimi-api/openai_batch_request_line.jsonl", "kimi-api/openai_batch_output_line.jsonl"),
            "kimi-api",
            (1,),
            ((20, 0, 3),),
        ),
        id="kimi-api-batch",
    ),
    pytest.param(  # output lines in reverse order; request-3 failed (status 500): not billed, so left out
        Good((BATCH_IN, BATCH_OUT), "kimi-api", (2,), ((30, 0, 5), (50, 10, 7))),
        id="kimi-api-batch-joined-on-custom-id",
    ),
    pytest.param(
        Good((NONSTREAM,), "kimi-api", (1,), ((19, 10, 21),)),
        id="kimi-api-response-nonstream",
    ),
    pytest.param(
        Good((CHUNK,), "kimi-api", (1,), ((8, 8, 11),)),
        id="kimi-api-stream-final-chunk",
    ),
    pytest.param(Good((STREAM_JSON,), "kimi-api", (2,)), id="kimi-api-print-stream-json"),
    pytest.param(  # StatusUpdate 11 in / 5 out; the second turn never finished
        Good((SESSION,), "kimi-cli", (1,), ((11 + 0 + 0, 0, 5),)), id="kimi-cli-session"
    ),
    pytest.param(  # two session folders: 11 in / 5 out, and 10 in / 2 out (a second step without usage)
        Good(("kimi-cli/sessions",), "kimi-cli", (1, 1), ((11, 0, 5), (10, 0, 2))), id="kimi-cli-sessions-tree"
    ),
    pytest.param(  # usage in step.end and usage.record: counted once
        Good(("kimi-code/sample-main.wire.jsonl",), "kimi-code", (1,), ((10, 0, 5),)), id="kimi-code-v1.1"
    ),
    pytest.param(
        Good((KIMI_CODE,), "kimi-code", (2,), ((11, 0, 22), (38, 0, 12))),
        id="kimi-code-tool-turn",
    ),
    pytest.param(  # five lines of one message id: billed once
        Good((CLAUDE,), "claude-code", (1,), ((3 + 13_835 + 11_515, 11_515, 13),)),
        id="claude-code-dedup",
    ),
    pytest.param(  # usage-only lines; input_tokens excludes both cache fields
        Good(
            ("claude-code/ccusage-chat-alpha.jsonl",),
            "claude-code",
            (3,),
            ((100 + 25 + 10, 10, 50), (200 + 50 + 20, 20, 75), (300 + 0 + 40, 40, 125)),
        ),
        id="claude-code-usage-only",
    ),
    pytest.param(  # last_token_usage per request, not the cumulative total_token_usage
        Good((CODEX,), "codex", (2,), ((1_000, 250, 125), (2_500, 500, 300))),
        id="codex",
    ),
]


def _good(*, with_usage: bool) -> list[Any]:
    return [p for p in GOOD if bool(cast(Good, p.values[0]).reported) == with_usage]


@pytest.mark.parametrize("good", GOOD)
def test_good_file_turns(good: Good) -> None:
    report = bill(*map(fixture, good.paths))
    assert tuple(s["summary"]["turns"] for s in sessions(report)) == good.turns
    # where the log has prompts and usage, every simulated turn still carries the reported figures beside it
    checks = [t["check"] for s in sessions(report) for t in s["turns"] if t["check"]]
    if checks and good.reported:
        assert [(c["reported_input_tokens"], c["reported_cached_tokens"]) for c in checks] == [
            (prompt, cached) for prompt, cached, _ in good.reported
        ]


@pytest.mark.parametrize("good", _good(with_usage=True))
def test_reported_usage_is_billed_token_for_token(good: Good) -> None:
    report = bill(*map(fixture, good.paths), "--usage", "reported")
    turns = [t for s in sessions(report) for t in s["turns"]]
    assert [(t["input_tokens"], t["hit_tokens"], t["output_tokens"]) for t in turns] == list(good.reported)
    total = report["runs"][0]["total"]
    assert total["input_tokens"] == sum(prompt for prompt, _, _ in good.reported)
    assert total["hit_tokens"] == sum(cached for _, cached, _ in good.reported)
    assert total["miss_tokens"] == sum(prompt - cached for prompt, cached, _ in good.reported)
    assert total["output_tokens"] == sum(output for _, _, output in good.reported)


@pytest.mark.parametrize("good", _good(with_usage=False))
def test_logs_without_usage_cannot_be_billed_as_reported(good: Good) -> None:
    result = kcost("bill", *map(fixture, good.paths), "--usage", "reported")
    assert result.exit_code == 2
    assert "reports no usage" in result.stderr


def test_failed_batch_lines_are_left_out_and_noted() -> None:
    """request-3 failed with status 500: the provider billed nothing for it, in either mode."""
    for usage in ("reported", "simulated"):
        (session,) = sessions(bill(fixture(BATCH_IN), fixture(BATCH_OUT), "--usage", usage))
        assert "1 failed request(s) left out (an error response: not billed)" in session["notes"]
        assert session["summary"]["turns"] == 2


def test_kimi_code_unknown_record_is_skipped_and_counted(tmp_path: Path) -> None:
    lines = (FIXTURES / KIMI_CODE).read_text().splitlines(keepends=True)
    unknown = '{"type":"session.future_feature","detail":{"x":1},"time":1779256802050}\n'
    wire = tmp_path / "wire.jsonl"
    wire.write_text("".join(lines[:9] + [unknown, unknown] + lines[9:]))
    (session,) = sessions(bill(str(wire), "--usage", "reported"))
    assert session["summary"]["turns"] == 2
    assert (session["summary"]["input_tokens"], session["summary"]["output_tokens"]) == (11 + 38, 22 + 12)
    assert any("2 session.future_feature" in n and "skipped" in n for n in session["notes"]), session["notes"]


# ---- 2. failure modes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """`args` billed after `file` has `old` replaced by `new` on line `line` (`old=None`: the line is cut short,
    its closing braces never written). The error must name `file:line` and say `says`."""

    args: tuple[str, ...]
    file: str
    line: int
    old: str | None = None
    new: str = ""
    says: str = "not valid JSON"


def bad(
    name: str,
    file: str,
    line: int,
    old: str | None = None,
    new: str = "",
    says: str = "not valid JSON",
    *,
    args: tuple[str, ...] = (),
) -> Any:
    return pytest.param(Bad(args or (file,), file, line, old, new, says), id=name)


BATCH = (BATCH_IN, BATCH_OUT)

BAD = [
    # Kimi API logs
    bad("kimi-api-requests-broken-line", REQUESTS, 2),
    bad("kimi-api-requests-no-messages", REQUESTS, 2, '"messages":', '"msgs":', "messages"),
    bad("kimi-api-pairs-broken-line", PAIRS, 2),
    bad("kimi-api-pairs-wrong-type", PAIRS, 2, '"prompt_tokens":1300', '"prompt_tokens":"ten"', "prompt_tokens"),
    bad("kimi-api-pairs-negative", PAIRS, 1, '"completion_tokens":40', '"completion_tokens":-40', "completion_tokens"),
    bad("kimi-api-pairs-cached-over-prompt", PAIRS, 2, '"cached_tokens":1024', '"cached_tokens":2048', "exceed"),
    bad("kimi-api-pairs-no-messages", PAIRS, 2, '"messages":', '"msgs":', "messages"),
    bad("kimi-api-pairs-no-prompt-tokens", PAIRS, 1, '"prompt_tokens":1200,', "", "prompt_tokens"),
    bad("kimi-api-batch-broken-line", BATCH_OUT, 3, args=BATCH),
    bad(
        "kimi-api-batch-wrong-type",
        BATCH_OUT,
        2,
        '"prompt_tokens":50',
        '"prompt_tokens":"ten"',
        "prompt_tokens",
        args=BATCH,
    ),
    bad(
        "kimi-api-batch-cached-over-prompt",
        BATCH_OUT,
        3,
        '"cached_tokens":0',
        '"cached_tokens":31',
        "exceed",
        args=BATCH,
    ),
    bad("kimi-api-batch-no-body", BATCH_IN, 2, '"body":', '"bdy":', "body", args=BATCH),
    bad("kimi-api-nonstream-broken", NONSTREAM, 8, '"cached_tokens": 10}', '"cached_tokens": 10,}'),
    bad(
        "kimi-api-nonstream-wrong-type", NONSTREAM, 8, '"prompt_tokens": 19', '"prompt_tokens": "ten"', "prompt_tokens"
    ),
    bad(
        "kimi-api-nonstream-negative",
        NONSTREAM,
        8,
        '"completion_tokens": 21',
        '"completion_tokens": -21',
        "completion_tokens",
    ),
    bad("kimi-api-chunk-broken", CHUNK, 1, '"delta":{}', '"delta":{,}'),
    bad(
        "kimi-api-chunk-wrong-type", CHUNK, 1, '"completion_tokens":11', '"completion_tokens":1.5', "completion_tokens"
    ),
    bad("kimi-api-chunk-cached-over-prompt", CHUNK, 1, '"cached_tokens":8', '"cached_tokens":80', "exceed"),
    bad("kimi-api-stream-json-broken-line", STREAM_JSON, 2),
    bad("kimi-api-stream-json-no-role", STREAM_JSON, 2, '"role":"tool",', "", "role"),
    # legacy Kimi CLI session folder (cached > prompt cannot happen: prompt = other + cache read + cache creation)
    bad("kimi-cli-wire-broken-line", WIRE, 4, args=(SESSION,)),
    bad("kimi-cli-context-broken-line", CONTEXT, 3, args=(SESSION,)),
    bad("kimi-cli-wrong-type", WIRE, 6, '"input_other": 11', '"input_other": "ten"', "input_other", args=(SESSION,)),
    bad("kimi-cli-negative", WIRE, 6, '"output": 5', '"output": -5', "negative", args=(SESSION,)),
    bad("kimi-cli-no-output", WIRE, 6, '"output": 5, ', "", "token_usage.output", args=(SESSION,)),
    bad("kimi-cli-context-no-role", CONTEXT, 7, '"role":"assistant",', "", "role", args=(SESSION,)),
    # Kimi Code wire (prompt = inputOther + inputCacheRead + inputCacheCreation)
    bad("kimi-code-broken-line", KIMI_CODE, 10),
    bad("kimi-code-wrong-type", KIMI_CODE, 13, '"inputOther":11', '"inputOther":"ten"', "inputOther"),
    bad("kimi-code-negative", KIMI_CODE, 18, '"output":12', '"output":-12', "negative"),
    bad("kimi-code-no-output", KIMI_CODE, 13, '"output":22,', "", "usage.output"),
    bad("kimi-code-no-type", KIMI_CODE, 9, '"type":"permission.record_approval_result",', "", "type"),
    # Claude Code (prompt = input + cache writes + cache reads)
    bad("claude-code-broken-line", CLAUDE, 6),
    bad("claude-code-wrong-type", CLAUDE, 5, '"input_tokens":3,', '"input_tokens":"ten",', "input_tokens"),
    bad(
        "claude-code-negative",
        CLAUDE,
        7,
        '"cache_read_input_tokens":11515',
        '"cache_read_input_tokens":-1',
        "message.usage",
    ),
    bad("claude-code-no-message-id", CLAUDE, 10, '"id":"msg_01MKH1ccEGrZGNPvu8pYiiQa",', "", "message.id"),
    bad("claude-code-no-output", CLAUDE, 8, '"output_tokens":13,', "", "output_tokens"),
    # Codex rollout
    bad("codex-broken-line", CODEX, 2),
    bad("codex-wrong-type", CODEX, 3, '"input_tokens":2500', '"input_tokens":"ten"', "last_token_usage"),
    bad("codex-negative", CODEX, 2, '"output_tokens":125', '"output_tokens":-125', "last_token_usage"),
    bad("codex-cached-over-prompt", CODEX, 3, '"cached_input_tokens":500,', '"cached_input_tokens":5000,', "exceed"),
    bad("codex-no-input", CODEX, 3, '"input_tokens":2500,', "", "last_token_usage"),
    bad("codex-no-payload", CODEX, 2, ',"payload":{', ',"load":{', "rollout line"),
    # absurdly large counts (past a thousand context windows), for every usage scheme, and usage of the wrong shape
    bad("kimi-api-pairs-absurd", PAIRS, 2, '"prompt_tokens":1300', '"prompt_tokens":1000000000000', "context window"),
    bad("kimi-api-pairs-past-64-bits", PAIRS, 2, '"prompt_tokens":1300', '"prompt_tokens":' + "9" * 30, "whole number"),
    bad("kimi-api-pairs-usage-text", PAIRS, 2, '"usage":{', '"usage":"lots","u":{', "usage"),
    bad(
        "kimi-cli-absurd",
        WIRE,
        6,
        '"input_other": 11',
        '"input_other": 99999999999999',
        "context window",
        args=(SESSION,),
    ),
    bad("kimi-code-absurd", KIMI_CODE, 13, '"inputOther":11', '"inputOther":5000000000', "context window"),
    bad("claude-code-absurd", CLAUDE, 5, '"input_tokens":3,', '"input_tokens":3000000000000,', "context window"),
    bad("claude-code-usage-text", CLAUDE, 5, '"usage":{', '"usage":"lots","u":{', "message.usage"),
    bad("codex-absurd", CODEX, 3, '"input_tokens":2500', '"input_tokens":10000000000000', "context window"),
    bad("codex-usage-text", CODEX, 3, '"last_token_usage":{', '"last_token_usage":7,"u":{', "last_token_usage"),
]


def make_bad(case: Bad, root: Path) -> None:
    """A copy of the fixtures under `root`, with `case.file` edited."""
    shutil.copytree(FIXTURES, root, dirs_exist_ok=True)
    path = root / case.file
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    text = lines[case.line - 1]
    if case.old is None:
        edited = text.rstrip().rstrip("}") + "\n"  # the closing braces never written
    else:
        assert text.count(case.old) >= 1, f"{case.old!r} not on line {case.line} of {case.file}"
        edited = text.replace(case.old, case.new, 1)
    assert edited != text
    lines[case.line - 1] = edited
    path.write_text("".join(lines), encoding="utf-8")


@pytest.mark.parametrize("case", BAD)
def test_bad_input_names_file_and_line(case: Bad, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_bad(case, tmp_path)
    monkeypatch.chdir(tmp_path)  # relative paths: the message must repeat them as given
    expect_error(kcost("bill", *case.args), f"{case.file}:{case.line}", case.says)


@pytest.mark.parametrize(
    "file",
    [
        pytest.param(REQUESTS, id="kimi-api"),
        pytest.param(KIMI_CODE, id="kimi-code"),
        pytest.param(CLAUDE, id="claude-code"),
        pytest.param(CODEX, id="codex"),
    ],
)
@pytest.mark.parametrize("fmt", ["auto", "explicit"])
def test_broken_first_line_is_line_1(file: str, fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_bad(Bad((file,), file, 1), tmp_path)
    monkeypatch.chdir(tmp_path)
    option = [] if fmt == "auto" else ["--input-format", file.split("/")[0]]  # the folder is named for the format
    expect_error(kcost("bill", file, *option), f"{file}:1", "not valid JSON")


# ---- 3. format detection -----------------------------------------------------------------------------------


@pytest.mark.parametrize("good", GOOD)
def test_explicit_input_format_bills_as_the_guess(good: Good) -> None:
    paths = [fixture(p) for p in good.paths]
    guessed = kcost("bill", *paths, "--format", "json")
    named = kcost("bill", *paths, "--format", "json", "--input-format", good.fmt)
    assert guessed.exit_code == named.exit_code == 0, guessed.stderr + named.stderr
    assert named.stdout == guessed.stdout


@pytest.mark.parametrize("name", ["context.jsonl", "wire.jsonl"])
def test_a_file_of_a_kimi_cli_session_reads_its_folder(name: str) -> None:
    folder = bill(fixture(SESSION))
    from_file = bill(fixture(f"{SESSION}/{name}"))
    assert sessions(from_file) == sessions(folder)


@pytest.mark.parametrize("fmt", ["auto", "kimi-api"])
def test_single_line_jsonl_request_log_is_jsonl(fmt: str, tmp_path: Path) -> None:
    """`one_request.jsonl` is the first line of `requests.jsonl`: it bills as that log's first turn."""
    first_turn = sessions(bill(fixture(REQUESTS)))[0]["turns"][0]
    for args, stdin in [
        ((fixture("kimi-api/one_request.jsonl"),), None),
        (("-",), (FIXTURES / "kimi-api/one_request.jsonl").read_text()),
    ]:
        (session,) = sessions(bill(*args, "--input-format", fmt, stdin=stdin))
        assert session["summary"]["turns"] == 1
        assert session["turns"][0]["input_tokens"] == first_turn["input_tokens"]
    # and a one-line pairs log keeps its usage
    one_pair = tmp_path / "one_pair.jsonl"
    one_pair.write_text((FIXTURES / PAIRS).read_text().splitlines(keepends=True)[0])
    (session,) = sessions(bill(str(one_pair), "--input-format", fmt, "--usage", "reported"))
    assert [(t["input_tokens"], t["hit_tokens"], t["output_tokens"]) for t in session["turns"]] == [(1200, 0, 40)]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_a_tool_calls_arguments_are_written_as_json_writes_them(value: object) -> None:
    """`compact_json` is `json.dumps` with compact separators, whatever the value holds (floats and numbers past
    64 bits included, which orjson writes otherwise, and lone surrogates, which it refuses)."""
    from kcost.readers.jsonl import compact_json

    assert compact_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
