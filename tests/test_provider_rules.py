"""Each provider's cache rule as its documentation has it today (each module under kcost/pricing/providers cites
its page): OpenAI's GPT-5.6 breakpoints, DeepSeek V4's prefix units, Anthropic's per-model minimums, and K3 served
with multi-token prediction. Every figure comes from a turn spec's token counts: a prompt of `prefix + new`
tokens, hits capped one token short of it (a block short of it under K3's 512-token blocks)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.analysis.compare import rule_for
from kcost.cache.model import parse_cache_model
from kcost.cli import cli
from kcost.errors import InputError
from kcost.fleet.cluster import check_trace_model

PREFIX, NEW, OUTPUT = 3000, 2000, 500


def write(tmp_path: Path, name: str, *turns: str) -> Path:
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(f"prefix: {{tokens: {PREFIX}}}\nturns:\n" + "".join(f"  - {{{t}}}\n" for t in turns))
    return spec


def turns(spec: Path, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["bill", str(spec), "--format", "json", *args])
    assert result.exit_code == 0, result.output + result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)["runs"][0]["sessions"][0]["turns"]
    return found


def hits(spec: Path, cache: str, *args: str) -> list[int]:
    return [t["hit_tokens"] for t in turns(spec, "--cache", cache, *args)]


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    """Two turns, then one after 20 idle minutes and one after 40."""
    return write(tmp_path, "chat", f"new: {NEW}, output: {OUTPUT}", "new: 1000, output: 300",
                 "new: 1000, output: 300, idle: 20m", "new: 1000, output: 300, idle: 40m")  # fmt: skip


@pytest.fixture
def forked(tmp_path: Path) -> Path:
    """DeepSeek's own example: A + B, then A + C, then A + D (A the prefix; each turn replaces what follows it)."""
    return write(tmp_path, "forked", f"new: {NEW}, output: 100", f"edit_at: {PREFIX}, new: {NEW}, output: 100",
                 f"edit_at: {PREFIX}, new: {NEW}, output: 100")  # fmt: skip


# ---- OpenAI, GPT-5.6 and later ----------------------------------------------------------------------------------


def test_gpt_5_6_hits_only_at_a_breakpoint_for_30_minutes(chat: Path, forked: Path) -> None:
    first = PREFIX + NEW
    # the breakpoint at the end of each prompt: the next prompt hits all of it (less the token always computed)
    # after 20 idle minutes too, and nothing after 40 (30-minute lifetime; the older rule's 5 minutes lose both)
    second = first + OUTPUT + 1000
    assert hits(chat, "openai-5.6")[:3] == [0, first - 1, second - 1]
    assert hits(chat, "openai-5.6")[3] == 0
    assert hits(chat, "openai")[2:] == [0, 0]
    # no fallback to a shorter prefix: the shared system prompt of a forked conversation is no breakpoint
    assert hits(forked, "openai-5.6") == [0, 0, 0]
    assert hits(forked, "openai")[1] == PREFIX // 128 * 128  # the older rule: any cached prefix, in 128s


def test_gpt_5_6_writes_are_billed_at_their_rate(chat: Path) -> None:
    billed = turns(chat, "--cache", "openai-5.6", "--model", "gpt-5.6-sol")
    # gpt-5.6-sol: input $4.00/M, writes $5.00/M (1.25x): each written token costs $1.00/M above a miss
    for t in billed:
        assert t["written_tokens"] == t["input_tokens"] - t["hit_tokens"]
        assert Decimal(t["write_premium"]) == Decimal(t["written_tokens"]) / 1_000_000
    older = turns(chat, "--cache", "openai", "--model", "gpt-5.6-sol")
    assert all(Decimal(t["write_premium"]) == 0 for t in older)  # writes free before GPT-5.6


def test_compare_runs_each_openai_model_under_its_own_rule() -> None:
    assert rule_for("openai", "gpt-5.6-sol").label == "openai-5.6:min=1024,ttl=1800,output=off"
    assert rule_for("openai", "gpt-5.1").label == "openai:min=1024,ttl=300,output=off"


# ---- DeepSeek V4 ------------------------------------------------------------------------------------------------


def test_deepseek_v4_keeps_units_at_the_prompts_and_answers_ends(chat: Path) -> None:
    # the next prompt carries the answer: the unit at its end is hit whole
    assert hits(chat, "deepseek-v4")[1] == PREFIX + NEW + OUTPUT
    assert rule_for("deepseek", "deepseek-v4-pro").kind.value == "deepseek-v4"
    assert rule_for("deepseek", "deepseek-flash").kind.value == "deepseek-v4"
    assert rule_for("deepseek", "deepseek-chat").kind.value == "deepseek"


def test_deepseek_v4_needs_a_whole_unit_and_keeps_a_common_prefix_once_seen(forked: Path) -> None:
    # "the second request cannot hit the cache ... the system will detect that the two requests share a common
    # prefix A, and persist A as a cache prefix unit. When a third-round request A + D arrives, it can fully
    # match" (api-docs.deepseek.com/guides/kv_cache)
    assert hits(forked, "deepseek-v4") == [0, 0, PREFIX]
    # units at fixed intervals (their size unpublished: `every=N` tokens) let the second request hit too
    assert hits(forked, "deepseek-v4:every=1000") == [0, PREFIX, PREFIX]
    assert hits(forked, "deepseek")[1:] == [PREFIX // 64 * 64] * 2  # before V4: any prefix, in 64-token units


# ---- Anthropic --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "least"), [
    ("claude-opus-4-6", 4096), ("claude-opus-4-5", 4096), ("claude-haiku-4-5", 4096), ("claude-opus-4-7", 2048),
    ("claude-3-5-haiku-latest", 2048), ("claude-opus-5", 512), ("claude-fable-5-1", 512),
    ("claude-sonnet-4-5", 1024), ("claude-sonnet-4-6", 1024), ("claude-opus-4-8", 1024),
])  # fmt: skip
def test_anthropics_least_cacheable_prompt_is_the_models(model: str, least: int) -> None:
    assert rule_for("anthropic", model).min_tokens == least


def test_a_prompt_below_the_models_minimum_is_not_cached(chat: Path) -> None:
    opus, sonnet = (rule_for("anthropic", m).label for m in ("claude-opus-4-6", "claude-sonnet-4-5"))
    # a second prompt of 5,000 tokens hits its first 4,999, over both minimums
    assert hits(chat, sonnet)[1] == hits(chat, opus)[1] == PREFIX + NEW - 1
    short = write(chat.parent, "short", "new: 200, output: 10", "new: 200, output: 10")
    assert hits(short, sonnet)[1] == PREFIX + 200 - 1  # 3,199 tokens: cached under Sonnet's 1,024
    assert hits(short, opus)[1] == 0  # not under Opus 4.6's 4,096


# ---- K3 with speculative decoding ---------------------------------------------------------------------------------


def test_k3_with_mtp_keeps_each_checkpoint_a_block_lower(chat: Path) -> None:
    cap = (PREFIX + NEW - 1) // 512 * 512  # 4,608: the turn's end, in whole blocks, one token short
    assert hits(chat, "k3")[1] == cap
    assert hits(chat, "k3:mtp=on")[1] == cap - 512
    # a prompt of whole blocks (5,120): the dropped block leaves the token the logits need, so the checkpoint is
    # the same one block lower from its end (`get_mamba_prefill_checkpoint_position`, drop_eagle_block)
    whole = write(chat.parent, "whole", "new: 2120, output: 10", "new: 100, output: 10")
    assert hits(whole, "k3")[1] == hits(whole, "k3:mtp=on")[1] == 5120 - 512
    model = parse_cache_model("k3:mtp=on")
    assert model.label == "k3:hash=512,mtp=on,ttl=300,output=off"
    assert model.checkpoints == "turn boundaries, one block lower (MTP)"
    assert parse_cache_model(model.label) == model
    with pytest.raises(InputError, match="simulated for sessions, not traces"):
        check_trace_model(model)
