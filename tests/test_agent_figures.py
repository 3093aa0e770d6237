"""The status line beside the agent's own figures: Claude Code's hook JSON (code.claude.com/docs/en/statusline:
`cost.total_cost_usd`, `rate_limits.five_hour|seven_day.used_percentage`, `prompt_cache.expires_at`, and from
2.1.260 `prompt_cache.last_miss_at` with `last_miss_cause.causes`) gives a second line labelled as the agent's, and
each miss it names is compared once with kcost's cause of a call at that time, counted by `kcost ledger`."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from tests.test_windows import claude_log


def at(hhmm: str) -> float:
    return datetime.fromisoformat(f"2026-12-01T{hhmm}:00+00:00").timestamp()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    # 10:00 a cold start; 10:02 warm; 10:30, 28 minutes idle: its 55,000-token prompt missed as expired
    return claude_log(tmp_path / "s.jsonl", "s-agent", [("2026-12-01T10:00", 50_000, 0, 1_000),
                                                       ("2026-12-01T10:02", 2_000, 50_000, 1_000),
                                                       ("2026-12-01T10:30", 55_000, 0, 800)])  # fmt: skip


def call(hook: dict[str, Any]) -> list[str]:
    """The status line's lines for the hook's JSON (its state in the test's own ledger: tests/conftest.py)."""
    result = CliRunner().invoke(cli, ["statusline"], input=json.dumps(hook),
                                env={"KCOST_NOW": "2026-12-01T10:31:00Z"})  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return result.stdout.rstrip("\n").split("\n")


def held() -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["ledger", "--format", "json"])
    return dict(json.loads(result.stdout))


def test_a_hook_without_the_agents_figures_gives_one_line(log: Path, tmp_path: Path) -> None:
    lines = call({"transcript_path": str(log), "session_id": "s-agent", "model": {"id": "claude-opus-4-5"}})
    assert len(lines) == 1 and lines[0].startswith("kimi-k3 $")


def test_the_agents_cost_windows_and_cache_are_shown_as_its_own(log: Path, tmp_path: Path) -> None:
    hook = {"transcript_path": str(log), "cost": {"total_cost_usd": 0.4213},
            "rate_limits": {"five_hour": {"used_percentage": 23.5, "resets_at": at("14:00")},
                            "seven_day": {"used_percentage": 41.2, "resets_at": at("14:00") + 86_400}},
            "prompt_cache": {"warm": True, "ttl": "5m", "expires_at": at("10:35")}}  # fmt: skip
    first, second = call(hook)
    assert first.startswith("kimi-k3 $")  # kcost's own line as without them
    assert second == "claude-code: $0.42 · 5h 24% · 7d 41% · cache 4m00s"


def test_a_miss_the_agent_names_is_compared_once_with_kcosts_cause(log: Path, tmp_path: Path) -> None:
    expired = {"transcript_path": str(log), "cost": {"total_cost_usd": 0.5},
               "prompt_cache": {"last_miss_at": at("10:30"), "last_miss_cause": {"causes": ["ttl_expired_5m"]}}}
    assert call(expired)[1] == "claude-code: $0.50 · last miss ttl_expired_5m (kcost agrees)"
    assert call(expired)[1].endswith("(kcost agrees)")  # asked again: counted once
    assert (held()["misses_compared"], held()["misses_agreed"]) == (1, 1)
    # another miss the agent puts down to the tool list, where kcost saw the cache expire: they differ
    cause = {"causes": ["tools_changed"]}
    tools = {**expired, "prompt_cache": {"last_miss_at": at("10:30") + 5, "last_miss_cause": cause}}
    assert call(tools)[1] == "claude-code: $0.50 · last miss tools_changed (kcost: expired)"
    # one at a time kcost saw no miss
    early = {**expired, "prompt_cache": {"last_miss_at": at("10:02"), "last_miss_cause": {"causes": ["unknown"]}}}
    assert call(early)[1].endswith("(kcost: expired)")
    summary = held()
    assert (summary["misses_compared"], summary["misses_agreed"]) == (3, 1)
    table = CliRunner().invoke(cli, ["ledger"]).stdout
    assert "misses   3 the agent named, kcost's cause agreed on 1" in table


@pytest.mark.parametrize("junk", [{"cost": "lots"}, {"rate_limits": {"five_hour": {"used_percentage": "x"}}},
                                  {"prompt_cache": {"last_miss_cause": "tools"}}, {"cost": [1]}])  # fmt: skip
def test_figures_of_the_wrong_shape_are_passed_over(junk: dict[str, Any], log: Path, tmp_path: Path) -> None:
    lines = call({"transcript_path": str(log), **junk})
    assert len(lines) == 1 and lines[0].startswith("kimi-k3 $")
