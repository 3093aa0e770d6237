"""K3's cache rule fitted to a log's own cached counts (issue 21, part 3): `--cache k3:auto`, and the default bill
of a log of K3's own.

Each session is a Kimi CLI session folder written in the test as the CLI writes it (`tests/fixtures/kimi-cli/`,
`kcost/readers/agents/kimi_cli.py`: a `wire.jsonl` of turns, steps and `StatusUpdate` usage, a `context.jsonl` of the
system prompt, messages and the `_usage` counts around each reply), its cached counts worked out here from the
rule it is built to follow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

import kcost
from kcost.cli import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
START = 1_777_000_000.0
GAP_AT = 8  # the turn (0-based) that follows the 20-minute idle gap


def write_session(folder: Path, prompts: list[int], outputs: list[int], cached: list[int], times: list[float]) -> Path:
    """A Kimi CLI session folder: one turn per prompt, each one step whose `StatusUpdate` logs the prompt as
    `input_other + input_cache_read` and the cached tokens as `input_cache_read`."""
    folder.mkdir(parents=True)
    wire: list[dict[str, Any]] = [{"type": "metadata", "protocol_version": "1.10"}]
    context: list[dict[str, Any]] = [{"role": "_system_prompt", "content": "You are Kimi CLI, a coding agent."}]
    for k, (prompt, output, hit, t) in enumerate(zip(prompts, outputs, cached, times, strict=True)):
        user, reply = f"question {k}: " + "word " * 50, f"answer {k}: " + "text " * 20
        usage = {"input_other": prompt - hit, "output": output, "input_cache_read": hit, "input_cache_creation": 0}
        wire += [
            {"timestamp": t, "message": {"type": "TurnBegin", "payload": {
                "user_input": [{"type": "text", "text": user}]}}},
            {"timestamp": t + 0.01, "message": {"type": "StepBegin", "payload": {"n": 1}}},
            {"timestamp": t + 1, "message": {"type": "ContentPart", "payload": {"type": "text", "text": reply}}},
            {"timestamp": t + 1.01, "message": {"type": "StatusUpdate", "payload": {
                "context_tokens": prompt, "max_context_tokens": 262144, "token_usage": usage,
                "message_id": f"chatcmpl-fit-{k}", "plan_mode": False}}},
            {"timestamp": t + 1.02, "message": {"type": "TurnEnd", "payload": {}}},
        ]  # fmt: skip
        context += [
            {"role": "_checkpoint", "id": k},
            {"role": "user", "content": [{"type": "text", "text": user}]},
            {"role": "_usage", "token_count": prompt},
            {"role": "assistant", "content": [{"type": "text", "text": reply}]},
            {"role": "_usage", "token_count": prompt + output},
        ]
    for name, rows in (("wire.jsonl", wire), ("context.jsonl", context)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


# 15 turns; each prompt the last one with its output and a new message; 30 s apart, but 20 minutes before GAP_AT.
PROMPTS = [3000, 3569, 4687, 5035, 5655, 6688, 7486, 7883, 8621, 9156, 9621, 10587, 11446, 11987, 12598]
OUTPUTS = [265, 302, 124, 374, 287, 129, 209, 144, 314, 223, 382, 130, 163, 398, 395]
TIMES = [START + 30 * k + (20 * 60 - 30 if k >= GAP_AT else 0) for k in range(len(PROMPTS))]


def blocks_of_256() -> list[int]:
    """The log's cached counts: 256 x floor(previous prompt / 256), the outputs never cached; nothing after the
    20-minute gap, which missed."""
    cached = [0] + [256 * (p // 256) for p in PROMPTS[:-1]]
    cached[GAP_AT] = 0
    return cached


@pytest.fixture
def k256(tmp_path: Path) -> Path:
    return write_session(tmp_path / "k256", PROMPTS, OUTPUTS, blocks_of_256(), TIMES)


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def session_bill(*args: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(run("bill", *args, "--format", "json"))["runs"][0]["sessions"][0]
    return found


def test_a_log_following_256_token_blocks_fits_256_outputs_off_and_a_ttl_below_the_missed_gap(k256: Path) -> None:
    bill = session_bill(str(k256), "--cache", "k3:auto")
    fit = bill["cache_fit"]
    assert fit["asked"] == "k3:auto" and fit["fitted"] and fit["reason"] is None
    assert fit["label"] == "k3:hash=256,ttl=300,output=off"  # 256-token blocks, outputs off, the 300 s TTL kept
    assert fit["ttl_below"] == 1200.0  # the 20-minute gap missed: the TTL is shorter
    assert fit["ttl_at_least"] == 30.0  # the longest gap after which a request still hit
    assert (fit["requests"], fit["agree"], fit["default_agree"]) == (15, 15, 7)  # the published 512 on 7 of 15
    assert [c["label"] for c in fit["candidates"][:2]] == ["k3:hash=256,ttl=300,output=off",
                                                          "k3:hash=128,ttl=300,output=off"]  # fmt: skip
    assert fit["candidates"][1]["agree"] < 15
    # every logged request agrees: the simulated hit is the logged cached count, turn by turn
    assert [t["check"]["reported_cached_tokens"] for t in bill["turns"]] == blocks_of_256()
    assert all(t["check"]["agree"] for t in bill["turns"])
    assert bill["agreement"] == {"turns": 15, "agree": 15, "rate": 1.0}
    assert bill["turns"][GAP_AT]["hit_tokens"] == 0 and bill["turns"][GAP_AT]["reason"] == "expired"
    assert bill["notes"][0] == (
        "k3:auto fitted hash=256, output=off, ttl between 30 s and 20 min (ttl=300 kept) from 15 logged requests: "
        "agrees on 15 of 15 (the default hash=512 on 7)"
    )


def test_the_fit_through_the_api_is_the_command_s(k256: Path) -> None:
    (session,) = kcost.read(k256)
    bill = kcost.bill(session, cache="k3:auto")
    assert bill.cache_fit is not None and bill.cache_fit.label == "k3:hash=256,ttl=300,output=off"
    assert (bill.cache_fit.requests, bill.cache_fit.agree) == (15, 15)
    same = kcost.bill(session, cache="k3:hash=256")  # the fitted rule given by hand bills the same
    assert bill.summary == same.summary and same.cache_fit is None
    command = session_bill(str(k256), "--cache", "k3:auto")
    assert command["summary"]["total"] == str(bill.summary.total)


def test_the_table_names_the_fitted_rule_and_says_what_was_fitted(k256: Path) -> None:
    out = run("bill", str(k256), "--cache", "k3:auto", "--width", "200", "--color", "never")
    assert out.splitlines()[0] == "k256 · kimi-k3 · cache k3:hash=256,ttl=300,output=off (fitted)"
    assert "note: k3:auto fitted hash=256, output=off, ttl between 30 s and 20 min (ttl=300 kept)" in out


def test_the_default_bill_of_a_log_of_k3_s_own_is_the_unambiguous_fit_and_says_so(k256: Path) -> None:
    bill = session_bill(str(k256))
    fit = bill["cache_fit"]
    assert fit["asked"] == "default" and fit["label"] == "k3:hash=256,ttl=300,output=off"
    assert bill["agreement"]["agree"] == 15
    assert bill["notes"][0].startswith("cache rule fitted to this log of K3's own (k3:auto, the default for one; "
                                       "--cache k3 for the published rule): hash=256, output=off")  # fmt: skip
    assert bill["summary"] == session_bill(str(k256), "--cache", "k3:hash=256")["summary"]
    (session,) = kcost.read(k256)
    assert kcost.bill(session).cache_fit is not None  # the library's default bill is the command's
    published = session_bill(str(k256), "--cache", "k3")  # asked for by name: the published rule, no fit
    assert "cache_fit" not in published and published["agreement"]["agree"] == 7


def test_a_config_s_cache_is_a_choice_the_default_bill_keeps(k256: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    (work / "kcost.toml").write_text('cache = "k3"\n', encoding="utf-8")
    monkeypatch.chdir(work)
    bill = session_bill(str(k256))
    assert "cache_fit" not in bill and bill["agreement"]["agree"] == 7


def test_too_few_cached_counts_get_the_default_rule_named_with_the_reason(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "short", PROMPTS[:3], OUTPUTS[:3], blocks_of_256()[:3], TIMES[:3])
    fit = session_bill(str(folder), "--cache", "k3:auto")["cache_fit"]
    assert fit["fitted"] is False and fit["label"] == "k3:hash=512,ttl=300,output=off"
    assert fit["reason"] == "only 2 follow-up requests log a cached count (3 needed to fit)"
    bill = session_bill(str(folder), "--cache", "k3:auto")
    assert bill["notes"][0] == ("k3:auto: billed under the default rule k3:hash=512,ttl=300,output=off: only 2 "
                                "follow-up requests log a cached count (3 needed to fit)")  # fmt: skip
    assert "cache_fit" not in session_bill(str(folder))  # the default bill: the published rule, nothing said


def ambiguous(tmp_path: Path, rest: int) -> Path:
    """Prompts each `rest` past a multiple of 1,024 (small outputs, new messages of 974 tokens), cached as 256-token
    blocks would cache them: with `rest` 700 the 512-token blocks cache the same, with 352 the 128-token ones do."""
    prompts = [1024 * (3 + k) + rest for k in range(8)]
    outputs = [50] * 8
    cached = [0] + [256 * (p // 256) for p in prompts[:-1]]
    return write_session(tmp_path / f"tie-{rest}", prompts, outputs, cached, [START + 30 * k for k in range(8)])


def test_an_ambiguous_fit_shows_the_candidates_and_uses_the_default_among_them(tmp_path: Path) -> None:
    folder = ambiguous(tmp_path, 700)
    bill = session_bill(str(folder), "--cache", "k3:auto")
    fit = bill["cache_fit"]
    best = [c["label"] for c in fit["candidates"] if c["agree"] == fit["agree"]]
    assert fit["agree"] == fit["requests"] == 8 and len(best) > 1
    assert {"k3:hash=256,ttl=300,output=off", "k3:hash=512,ttl=300,output=off"} <= set(best)
    assert fit["label"] == "k3:hash=512,ttl=300,output=off" and fit["fitted"]  # the default among them
    assert fit["reason"].startswith("an ambiguous fit: ") and fit["reason"].endswith(
        " agree on 8 of 8 each; the default rule among them"
    )
    assert "hash=256,output=off" in fit["reason"] and "hash=512,output=off" in fit["reason"]
    assert bill["notes"][0].startswith("k3:auto: an ambiguous fit: ")
    assert "cache_fit" not in session_bill(str(folder))  # the default bill uses no ambiguous fit


def test_an_ambiguous_fit_without_the_default_among_them_uses_the_smallest_block(tmp_path: Path) -> None:
    fit = session_bill(str(ambiguous(tmp_path, 352)), "--cache", "k3:auto")["cache_fit"]
    best = {c["hash_block"] for c in fit["candidates"] if c["agree"] == fit["agree"]}
    assert fit["agree"] == 8 and best == {128, 256}
    assert fit["label"] == "k3:hash=128,ttl=300,output=off"
    assert fit["reason"].endswith("; the smallest block among them")


def test_a_log_of_another_provider_s_cache_gets_the_default_rule_with_the_reason() -> None:
    log = FIXTURES / "claude-code" / "spotter-short.jsonl"
    bill = session_bill(str(log), "--cache", "k3:auto")
    fit = bill["cache_fit"]
    assert fit["fitted"] is False and fit["label"] == "k3:hash=512,ttl=300,output=off" and fit["requests"] == 0
    assert fit["reason"] == ("its cached counts come from another provider's cache (claude-code log on "
                             "claude-opus-4-6): they say nothing of K3's rule")  # fmt: skip
    assert "cache_fit" not in session_bill(str(log))


def test_the_real_kimi_cli_session_fits_256_token_blocks() -> None:
    # 22 calls, 15 of them with a StatusUpdate (the other 7 sized from `_usage` counts, which log no cached
    # count); 13 of the 14 follow-ups cache 256 x floor(previous prompt / 256), the 4th an older prefix's 12,544
    fit = session_bill(str(FIXTURES / "kimi-cli" / "large-100msgs"), "--cache", "k3:auto")["cache_fit"]
    assert fit["label"] == "k3:hash=256,ttl=300,output=off" and fit["reason"] is None
    assert (fit["requests"], fit["agree"], fit["default_agree"]) == (15, 13, 6)
    assert fit["ttl_below"] is None  # no follow-up missed after a gap


def test_the_bill_with_a_fit_meets_the_schema_and_reads_back(k256: Path, tmp_path: Path) -> None:
    schema = json.loads(run("schema", "bill"))
    fit = schema["$defs"]["SessionBill"]["properties"]["cache_fit"]
    assert "cache_fit" not in schema["$defs"]["SessionBill"].get("required", [])
    assert any(option.get("$ref") == "#/$defs/CacheFit" for option in fit["anyOf"])
    text = run("bill", str(k256), "--cache", "k3:auto", "--format", "json")
    jsonschema.validate(json.loads(text), schema)
    saved = tmp_path / "bill.json"
    saved.write_text(text, encoding="utf-8")
    diff = json.loads(run("diff", str(saved), str(saved), "--format", "json"))  # read back through its validator
    assert diff["cache_before"] == "k3:auto" and diff["sessions"][0]["status"] == "unchanged"


@pytest.mark.parametrize("text", ["k3:auto,hash=256", "k3:auto,ttl=1h", "k3:auto,output=on"])
def test_auto_with_a_parameter_it_fits_is_a_one_line_error(text: str) -> None:
    result = CliRunner().invoke(cli, ["bill", str(FIXTURES / "kimi-cli" / "clamp"), "--cache", text])
    assert result.exit_code == 2
    (line, *_) = result.stderr.splitlines()
    assert "k3:auto fits" in line and "give auto alone" in line


def test_a_gap_past_the_default_ttl_that_still_hit_sets_the_ttl_it_proves(tmp_path: Path) -> None:
    # as above, and 10 minutes before turn 4, after which the request still hit all 256-token blocks
    times = [t + (600 - 30 if k >= 4 else 0) for k, t in enumerate(TIMES)]
    folder = write_session(tmp_path / "ten", PROMPTS, OUTPUTS, blocks_of_256(), times)
    bill = session_bill(str(folder), "--cache", "k3:auto")
    fit = bill["cache_fit"]
    assert (fit["ttl_at_least"], fit["ttl_below"]) == (600.0, 1200.0)
    assert fit["label"] == "k3:hash=256,ttl=600,output=off" and fit["agree"] == 15  # 300 s would miss turn 4
    assert "ttl between 10 min and 20 min (ttl=600 chosen)" in bill["notes"][0]
    assert session_bill(str(folder), "--cache", "k3:hash=256")["agreement"]["agree"] == 14
