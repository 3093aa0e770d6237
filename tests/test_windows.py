"""Usage windows and hours (`kcost bill --by window`, `--by hour`, `--last`): each call placed by its own time; a
window opens at a call's hour and runs its length; the active one's burn rate, projection and limit. Every figure
here is worked out by hand from the calls' logged usage at K3's rates ($3.00 a million missed input tokens, $0.30
hit, $15.00 output; `--usage reported`)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost import api
from kcost.api.settings import resolve
from kcost.cli import cli

Call = tuple[str, int, int, int]  # (UTC time, missed input, hit input, output)


def claude_log(path: Path, session: str, calls: list[Call], model: str = "kimi-k3") -> Path:
    """A Claude Code session log: a question and an answer with its usage per call, each logged on `model`."""
    lines: list[dict[str, Any]] = []
    parent = None
    for n, (at, miss, hit, out) in enumerate(calls):
        stamp = f"{at}:00.000Z"
        base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/shop", "sessionId": session,
                "version": "2.1.38", "gitBranch": "main", "timestamp": stamp}  # fmt: skip
        lines.append({**base, "parentUuid": parent, "type": "user", "uuid": f"{session}-u{n}",
                      "message": {"role": "user", "content": f"Question {n}?"}})  # fmt: skip
        lines.append({**base, "parentUuid": f"{session}-u{n}", "type": "assistant", "uuid": f"{session}-a{n}",
                      "requestId": f"req_{session}_{n}",
                      "message": {"model": model, "id": f"msg_{session}_{n}", "type": "message",
                                  "role": "assistant", "content": [{"type": "text", "text": f"Answer {n}."}],
                                  "stop_reason": "end_turn", "stop_sequence": None,
                                  "usage": {"input_tokens": miss, "cache_creation_input_tokens": 0,
                                            "cache_read_input_tokens": hit, "output_tokens": out}}})  # fmt: skip
        parent = f"{session}-a{n}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def overview(folder: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["bill", str(folder), "--usage", "reported", "--format", "json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def rows(report: Any) -> dict[str, tuple[int, str]]:
    return {r["group"]: (r["turns"], r["cost"]) for r in report["rows"] if r["model"] is None}


# 09:10 $0.315 (100k missed, 1k out); 11:40 $0.06 (100k hit, 2k out); 13:30 $0.06 (10k missed, 50k hit, 1k out):
# one window from 09:00 to 14:00. 14:20 $0.06 (20k missed): the first has run its 5 hours, another opens at 14:00.
# 20:00 $0.03 (10k missed): 5 hours 40 after the last call, another opens at its own hour, not at 19:00.
DAY = [("2026-12-01T09:10", 100_000, 0, 1_000), ("2026-12-01T11:40", 0, 100_000, 2_000),
       ("2026-12-01T13:30", 10_000, 50_000, 1_000), ("2026-12-01T14:20", 20_000, 0, 0),
       ("2026-12-01T20:00", 10_000, 0, 0)]  # fmt: skip


def test_a_window_runs_its_length_and_one_after_a_gap_opens_at_its_own_hour(tmp_path: Path) -> None:
    claude_log(tmp_path / "logs" / "day.jsonl", "s-day", DAY[:3])
    claude_log(tmp_path / "logs" / "evening.jsonl", "s-eve", DAY[3:])  # another session: windows span sessions
    report = overview(tmp_path / "logs", "--by", "window", "--timezone", "UTC")
    assert rows(report) == {"2026-12-01 09:00": (3, "0.435"), "2026-12-01 14:00": (1, "0.06"),
                            "2026-12-01 20:00": (1, "0.03")}  # fmt: skip
    assert [r["ends"] for r in report["rows"]] == ["2026-12-01T14:00:00+00:00", "2026-12-01T19:00:00+00:00",
                                                   "2026-12-02T01:00:00+00:00"]  # fmt: skip
    assert report["window_hours"] == 5 and report["active"] == []  # nothing within 5 hours of now
    assert report["totals"][0]["cost"] == "0.525"
    # a weekly window holds them all
    assert rows(overview(tmp_path / "logs", "--by", "window", "--window-hours", "168", "--timezone", "UTC")) == {
        "2026-12-01 09:00": (5, "0.525")}


def test_a_window_that_spans_midnight_in_the_users_time_zone(tmp_path: Path) -> None:
    # Tokyo is 9 hours ahead: the 14:00 UTC window opens at 23:00 on the 1st and holds a call at 01:10 on the 2nd
    claude_log(tmp_path / "logs" / "late.jsonl", "s-late", [("2026-12-01T14:20", 20_000, 0, 0),
                                                          ("2026-12-01T16:10", 0, 100_000, 0)])  # fmt: skip
    report = overview(tmp_path / "logs", "--by", "window", "--timezone", "Asia/Tokyo")
    assert rows(report) == {"2026-12-01 23:00": (2, "0.09")}
    assert report["rows"][0]["ends"] == "2026-12-02T04:00:00+09:00"
    hours = overview(tmp_path / "logs", "--by", "hour", "--timezone", "Asia/Tokyo")
    assert rows(hours) == {"2026-12-01 23:00": (1, "0.06"), "2026-12-02 01:00": (1, "0.03")}
    days = overview(tmp_path / "logs", "--by", "day", "--timezone", "Asia/Tokyo")
    assert rows(days) == {"2026-12-01": (2, "0.09")}  # a session's day is its first call's


# 10:05 $0.60 (200k missed); 10:40 $0.12 (200k hit, 4k out); 11:20 $0.12 (200k hit, 10k missed, 2k out)
ACTIVE = [("2026-12-01T10:05", 200_000, 0, 0), ("2026-12-01T10:40", 0, 200_000, 4_000),
          ("2026-12-01T11:20", 10_000, 200_000, 2_000)]  # fmt: skip
NOW = datetime(2026, 12, 1, 11, 30, tzinfo=timezone.utc).timestamp()


def _active(tmp_path: Path, limit: str | None = None) -> Any:
    log = claude_log(tmp_path / "active.jsonl", "s-active", ACTIVE)
    settings = resolve(usage="reported", timezone="UTC")
    report = api.overview(api.sessions([str(log)], settings), settings, by="window", now=NOW, limit=limit)
    (active,) = report.active
    return active


def test_the_active_windows_burn_rate_and_projection(tmp_path: Path) -> None:
    active = _active(tmp_path)
    assert (active.group, active.turns, active.cost) == ("2026-12-01 10:00", 3, Decimal("0.84"))
    assert active.ends == "2026-12-01T15:00:00+00:00"
    # the last hour before 11:30: the calls at 10:40 and 11:20, $0.24 and 416,000 tokens
    assert active.burn_usd_per_hour == Decimal("0.24")
    assert active.burn_tokens_per_minute == pytest.approx(6933.3)
    assert active.projected_cost == Decimal("0.84") + Decimal("0.24") * Decimal("3.5")  # $1.68 at 15:00


def test_a_limit_is_reached_at_the_burn_rate_or_was_by_a_call(tmp_path: Path) -> None:
    ahead = _active(tmp_path, "$1.50").limit
    assert ahead.used == 0.56 and ahead.hours_left == 2.75  # ($1.50 - $0.84) / $0.24 an hour
    assert ahead.reached_at == "2026-12-01T14:15:00+00:00" and ahead.source == "given"
    crossed = _active(tmp_path, "0.80").limit
    assert crossed.hours_left == 0 and crossed.reached_at == "2026-12-01T11:20:00+00:00"  # $0.60, $0.72, $0.84
    tokens = _active(tmp_path, "1M tokens").limit
    assert tokens.tokens == 1_000_000 and tokens.used == 0.616  # 200k + 204k + 212k
    assert tokens.hours_left == pytest.approx(384_000 / (416_000 / 60) / 60, abs=1e-4)
    assert _active(tmp_path, "5").limit.reached_at is None  # $5 is not reached before 15:00 at $0.24 an hour
    assert _active(tmp_path, "max").limit is None  # no past window to take its cost


def test_max_is_the_dearest_past_windows_cost(tmp_path: Path) -> None:
    claude_log(tmp_path / "logs" / "yesterday.jsonl", "s-y", [("2026-11-30T09:10", 100_000, 0, 0)])  # $0.30
    claude_log(tmp_path / "logs" / "active.jsonl", "s-active", ACTIVE)
    settings = resolve(usage="reported", timezone="UTC")
    report = api.overview(api.sessions([str(tmp_path / "logs")], settings), settings, by="window", now=NOW,
                          limit="max")  # fmt: skip
    held = report.active[0].limit
    assert held is not None and held.source == "max" and held.usd == Decimal("0.30") and held.used == 2.8


def test_the_table_says_the_active_window_and_its_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    calls = [((now - timedelta(minutes=m)).strftime("%Y-%m-%dT%H:%M"), miss, hit, out)
             for m, (_, miss, hit, out) in zip((50, 30, 10), ACTIVE, strict=True)]  # fmt: skip
    claude_log(tmp_path / "logs" / "now.jsonl", "s-now", calls)
    result = CliRunner().invoke(cli, ["bill", str(tmp_path / "logs"), "--usage", "reported", "--by", "window",
                                      "--limit", "1.00", "--timezone", "UTC", "--width", "160"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "(active)" in result.stdout and "active window" in result.stdout and "$0.84 so far" in result.stdout
    assert "limit $1.00: 84% used" in result.stdout


@pytest.mark.parametrize(("args", "says"), [
    (["--limit", "1.00"], "--limit: only rows by window"),
    (["--by", "window", "--limit", "lots"], "--limit: not a limit"),
    (["--window-hours", "0", "--by", "window"], "--window-hours"),
    (["--last", "7", "--since", "2026-01-01"], "--last: give --since or --last"),
])  # fmt: skip
def test_window_options_refused_in_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    log = claude_log(tmp_path / "a.jsonl", "s-a", ACTIVE)
    result = CliRunner().invoke(cli, ["bill", str(log), *args])
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_last_days_keeps_the_sessions_that_started_in_them(tmp_path: Path) -> None:
    today = datetime.now(timezone.utc)
    claude_log(tmp_path / "logs" / "new.jsonl", "s-new", [(today.strftime("%Y-%m-%dT00:05"), 10_000, 0, 0)])
    claude_log(tmp_path / "logs" / "old.jsonl", "s-old", [((today - timedelta(days=9)).strftime("%Y-%m-%dT12:00"),
                                                          10_000, 0, 0)])  # fmt: skip
    assert overview(tmp_path / "logs", "--by", "day", "--last", "7", "--timezone", "UTC")["totals"][0]["sessions"] == 1
    assert overview(tmp_path / "logs", "--by", "day", "--last", "10", "--timezone", "UTC")["totals"][0]["sessions"] == 2
