"""Codex logs and Batch API files as their agents write them, and runs that go on past a session they cannot bill.

- a sub-agent rollout (`thread_spawn`) whose replayed parent events carry only running totals: the last replayed
  total is the baseline (Codex seeds a forked thread's total from its parent's, `InitialHistory::Forked` in
  codex-rs/core/src/codex.rs), so its own first call is what it used, not the parent's whole total;
- `codex exec --json` output (`turn.completed` with the thread's running total as `usage`) is a session;
- times in epoch milliseconds (and seconds) read as times;
- a Batch API output file alone is a session billed as reported;
- under `--usage reported` a session with no usage in a tree is passed over, named and counted on stderr, and the
  rest billed (bill, explain, compare, the overview); `check` fails on it.

Reference figures marked ccusage are `ccusage codex session --json --offline` (ccusage 20.0.24) on the same file
in a `CODEX_HOME`'s `sessions/2026/05/13/`; its `inputTokens` is the input without the cached tokens.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kcost.cli import cli
from kcost.errors import STRICT, InputError
from kcost.model.calls import timestamp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SUBAGENT = FIXTURES / "codex" / "thread-spawn-subagent.jsonl"
EXEC = FIXTURES / "codex" / "exec-json.jsonl"
EPOCH_MS = FIXTURES / "codex" / "epoch-ms-rollout.jsonl"
ALPHA = FIXTURES / "codex" / "ccusage-session-alpha.jsonl"
BATCH_OUT = FIXTURES / "kimi-api" / "batch_output.jsonl"
REQUESTS = FIXTURES / "kimi-api" / "requests.jsonl"  # requests with no usage
PAIRS = FIXTURES / "kimi-api" / "pairs.jsonl"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def bill(*args: str) -> dict[str, Any]:
    result = run("bill", *args, "--format", "json")
    assert result.exit_code == 0, result.output + result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def only(report: dict[str, Any]) -> dict[str, Any]:
    (session,) = report["runs"][0]["sessions"]
    return session  # type: ignore[no-any-return]


def calls(session: dict[str, Any]) -> list[tuple[int, int, int]]:
    return [(t["input_tokens"], t["hit_tokens"], t["output_tokens"]) for t in session["turns"]]


def ccusage_figures(session: dict[str, Any]) -> dict[str, int]:
    """A bill's totals as ccusage writes a Codex session's: input without the cached tokens, cached, output (its
    `totalTokens` is the log's own `total_tokens`, which some logs count otherwise: not compared)."""
    s = session["summary"]
    uncached = s["input_tokens"] - s["hit_tokens"]
    return {"inputTokens": uncached, "cacheReadTokens": s["hit_tokens"], "outputTokens": s["output_tokens"]}


def test_a_sub_agents_replayed_totals_are_its_baseline() -> None:
    session = only(bill(str(SUBAGENT), "--usage", "reported"))
    # the parent's totals ended at 1,500 / 150 / 300; the sub-agent's own reached 1,600 / 160 / 320, then 1,750
    assert calls(session) == [(100, 10, 20), (150, 40, 30)]
    assert "2 token_count(s) replayed from the parent session skipped" in session["notes"]
    # ccusage 20.0.24 on this file: inputTokens 200, cacheReadTokens 50, outputTokens 50
    assert ccusage_figures(session) == {"inputTokens": 200, "cacheReadTokens": 50, "outputTokens": 50}
    # simulated, the prompts are rebuilt from the replayed history too, and the same two calls are billed
    assert len(only(bill(str(SUBAGENT)))["turns"]) == 2


def test_codex_exec_json_output_is_a_session() -> None:
    session = only(bill(str(EXEC)))
    assert session["usage"] == "reported"  # the output holds no prompt
    # each turn.completed holds the thread's running total: the resumed thread's second turn is what it added
    assert calls(session) == [(24_763, 24_448, 122), (49_901 - 24_763, 49_152 - 24_448, 180 - 122)]
    assert only(bill(str(EXEC), "--input-format", "codex")) == session
    # ccusage 20.0.24 does not read exec output (it reads the rollouts): the figures are the file's, by hand


def test_codex_exec_json_failed_turns_and_broken_usage(tmp_path: Path) -> None:
    log = tmp_path / "exec.jsonl"
    log.write_text(EXEC.read_text() + '{"type":"turn.started"}\n{"type":"turn.failed","error":{"message":"x"}}\n')
    session = only(bill(str(log)))
    assert len(session["turns"]) == 2 and "1 failed turn(s) left out (`turn.failed`: no usage)" in session["notes"]
    log.write_text(EXEC.read_text().replace('"output_tokens":180', '"output_tokens":-1'))
    result = run("bill", str(log))
    assert result.exit_code == 2 and f"{log}:11: usage.output_tokens" in result.stderr


def test_epoch_millisecond_times_read_as_times() -> None:
    iso, ms = only(bill(str(ALPHA))), only(bill(str(EPOCH_MS)))
    assert [t["time"] for t in ms["turns"]] == [t["time"] for t in iso["turns"]] == [
        "2026-05-13T09:01:00.000Z", "2026-05-14T10:00:00.000Z"]  # fmt: skip
    assert calls(ms) == calls(iso) == [(1_000, 250, 125), (2_500, 500, 300)]
    # ccusage 20.0.24 on the epoch-ms file (and on the ISO one): inputTokens 2750, cacheReadTokens 750,
    # outputTokens 425
    assert ccusage_figures(ms) == {"inputTokens": 2_750, "cacheReadTokens": 750, "outputTokens": 425}


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(1_778_662_800, 1_778_662_800.0), (1_778_662_800_000, 1_778_662_800.0), ("1778662800000", 1_778_662_800.0),
     (1_778_662_800.5, 1_778_662_800.5), ("2026-05-13T09:00:00Z", 1_778_662_800.0)],
)  # fmt: skip
def test_a_time_in_seconds_milliseconds_or_iso(value: object, seconds: float) -> None:
    assert timestamp(value, field="timestamp", leniency=STRICT) == seconds


def test_a_time_past_any_date_is_still_an_error() -> None:
    with pytest.raises(InputError, match="not a time"):
        timestamp(10**15, field="created", leniency=STRICT)  # milliseconds of the year 33658


def test_a_batch_output_file_alone_is_billed_as_reported() -> None:
    session = only(bill(str(BATCH_OUT)))
    assert session["usage"] == "reported"
    assert calls(session) == [(50, 10, 7), (30, 0, 5)]  # in the file's order; request-3 failed (status 500)
    assert "1 failed request(s) left out (an error response: not billed)" in session["notes"]
    # with its input file it is the same batch, joined on custom_id, in the inputs' order
    joined = only(bill(str(FIXTURES / "kimi-api" / "batch_input.jsonl"), str(BATCH_OUT), "--usage", "reported"))
    assert calls(joined) == [(30, 0, 5), (50, 10, 7)]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder of logs, one of which (requests, no responses) has no usage to bill as reported."""
    for log in (REQUESTS, PAIRS, EXEC):
        shutil.copy(log, tmp_path / log.name)
    return tmp_path


def test_a_session_with_no_usage_is_passed_over_and_the_run_goes_on(tree: Path) -> None:
    told = f"kcost: passed over 1 session(s) with no usage to bill as reported: {tree / 'requests.jsonl'}"
    result = run("bill", str(tree), "--usage", "reported", "--format", "json")
    assert result.exit_code == 0 and result.stderr.splitlines() == [told]
    billed = json.loads(result.stdout)["runs"][0]["sessions"]
    assert sorted(s["name"] for s in billed) == ["exec-json", "pairs"]
    for command in (["bill"], ["explain"], ["compare"], ["bill", "--by", "day"]):  # the overview too
        result = run(*command, str(tree), "--usage", "reported")
        assert result.exit_code == 0 and result.stderr.splitlines() == [told], command


def test_check_fails_on_a_session_it_cannot_bill(tree: Path) -> None:
    result = run("check", str(tree), "--usage", "reported", "--max-total-usd", "5")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "requests.jsonl: usage: the log reports no usage" in result.stderr


def test_one_session_with_no_usage_alone_is_still_an_error() -> None:
    result = run("bill", str(REQUESTS), "--usage", "reported")
    assert result.exit_code == 2 and "the log reports no usage" in result.stderr


def _rollout_usage(line: dict[str, Any]) -> dict[str, Any] | None:
    payload = line.get("payload", {})
    return payload.get("info") if payload.get("type") == "token_count" else None


@pytest.mark.parametrize("per_request", [True, False], ids=["last_token_usage", "running-totals"])
def test_codex_reasoning_tokens_are_in_the_json(tmp_path: Path, per_request: bool) -> None:
    # Codex counts reasoning inside output_tokens and apart as reasoning_output_tokens (75 of 125, 200 of 300 in
    # this rollout); with only the running totals, the second call's is 275 - 75
    lines = [json.loads(x) for x in ALPHA.read_text().splitlines()]
    for line in lines:
        info = _rollout_usage(line)
        if info is not None and not per_request:
            del info["last_token_usage"]
    log = tmp_path / ALPHA.name
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    session = only(bill(str(log)))  # this rollout holds no prompts: billed as reported
    assert [(t["output_tokens"], t["reasoning_tokens"]) for t in session["turns"]] == [(125, 75), (300, 200)]
    exec_session = only(bill(str(EXEC)))  # `codex exec --json` counts no reasoning: none, not 0
    assert [t["reasoning_tokens"] for t in exec_session["turns"]] == [None, None]


def test_codex_cache_writes_are_read(tmp_path: Path) -> None:
    # Codex 0.145.0 on writes `cache_write_input_tokens` (part of input_tokens, as the cached ones are); the
    # second call wrote 600 of its 2,000 uncached tokens. A count past the prompt is an error naming the field.
    lines = [json.loads(x) for x in ALPHA.read_text().splitlines()]
    infos = [info for line in lines if (info := _rollout_usage(line)) is not None]
    infos[0]["last_token_usage"]["cache_write_input_tokens"] = 0
    infos[0]["total_token_usage"]["cache_write_input_tokens"] = 0
    infos[1]["last_token_usage"]["cache_write_input_tokens"] = 600
    infos[1]["total_token_usage"]["cache_write_input_tokens"] = 600
    log = tmp_path / ALPHA.name
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    session = only(bill(str(log), "--usage", "reported"))
    assert [t["written_tokens"] for t in session["turns"]] == [0, 600]
    assert calls(session) == [(1000, 250, 125), (2500, 500, 300)]  # the prompt still the logged input_tokens
    infos[1]["last_token_usage"]["cache_write_input_tokens"] = 2001
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = run("bill", str(log), "--usage", "reported")
    assert result.exit_code == 2
    assert "payload.info.last_token_usage.cache_write_input_tokens" in result.stderr
    assert "cached (500) and written (2001) tokens exceed the prompt (2500)" in result.stderr
