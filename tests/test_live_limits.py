"""The usage window in the status line and `kcost watch`: the window spans every session a live view followed (each
keeps its calls in the ledger), the share of its limit, the time left at the burn rate, and a warning at each share,
said once. Every figure is worked out by hand: with `--cache none` each call costs its logged input at $3.00 a
million and its output at $15.00."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost import api
from kcost.api.settings import config_for, resolve
from kcost.cli import cli
from kcost.live.clock import RECENT_DAYS, recent
from kcost.live.watch import frames
from tests.test_windows import Call, claude_log

# session a: 10:05 $0.315 (100k in, 1k out), 10:40 $0.33 (100k in, 2k out); session b: 11:10 $0.60 (200k in),
# 11:50 $0.315 (100k in, 1k out). One 5-hour window from 10:00 to 15:00 holds all four: $1.56, 504,000 tokens.
A: list[Call] = [("2026-12-01T10:05", 100_000, 0, 1_000), ("2026-12-01T10:40", 100_000, 0, 2_000)]
B: list[Call] = [("2026-12-01T11:10", 200_000, 0, 0), ("2026-12-01T11:50", 100_000, 0, 1_000)]


def clock(hhmm: str) -> str:
    """A UTC time of the day as the machine's clock shows it (the status line's zone)."""
    at = datetime.fromisoformat(f"2026-12-01T{hhmm}:00+00:00")
    return at.astimezone().strftime("%H:%M")


def status(log: Path, now: str, *args: str) -> list[str]:
    result = CliRunner().invoke(cli, ["statusline", str(log), "--cache", "none", *args],
                                env={"KCOST_NOW": f"2026-12-01T{now}:00Z"})  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.stdout.rstrip("\n").split("\n")


def test_the_window_holds_every_session_a_live_view_kept(tmp_path: Path) -> None:
    a = claude_log(tmp_path / "a.jsonl", "s-a", A)
    b = claude_log(tmp_path / "b.jsonl", "s-b", B)
    # b alone: its window opens at 11:00, $0.915 ($0.92), 46% of $2.00; burning $0.915 an hour (both calls within
    # the hour before 12:00), so $1.085 more takes 1.1858 hours: 1h11m
    assert status(b, "12:00", "--limit", "2")[1] == f"5h window $0.92 of $2.00 (46%) · $0.92/h · limit in 1h11m · " \
                                                    f"ends {clock('16:00')}"  # fmt: skip
    # once a's status line kept its calls: $1.56 (78%); the rate is the last hour's calls, b's ($0.915/h): $0.44
    # more in 0.48087 hours, 28m51s
    assert status(a, "12:00", "--limit", "2")[1].startswith("5h window $1.56 of $2.00 (78%)")
    first, line = status(b, "12:00", "--limit", "2")
    assert first.startswith("kimi-k3 $0.92 · hit 0.0% · no cache")  # the session's own line as before
    assert line == f"5h window $1.56 of $2.00 (78%) · $0.92/h · limit in 28m51s · ends {clock('15:00')}"
    # without a limit, the status line is one line as ever
    assert status(b, "12:00") == [first]


def test_each_share_of_the_limit_is_warned_of_once(tmp_path: Path) -> None:
    claude_log(tmp_path / "a.jsonl", "s-a", A)
    b = claude_log(tmp_path / "b.jsonl", "s-b", B)
    status(tmp_path / "a.jsonl", "12:00", "--limit", "2")
    assert len(status(b, "12:00", "--limit", "2")) == 2  # 78%: no share reached
    # 12:10 b sends 100k more ($0.30): $1.86, 93%; the hour before 12:11 holds $0.615: 13m39s to the limit
    claude_log(b, "s-b", [*B, ("2026-12-01T12:10", 100_000, 0, 0)])
    _, line, warning = status(b, "12:11", "--limit", "2")
    assert line == f"5h window $1.86 of $2.00 (93%) · $0.62/h · limit in 13m39s · ends {clock('15:00')}"
    assert warning == "warning: 80% of the 5h window's limit ($2.00) is used"
    assert len(status(b, "12:11", "--limit", "2")) == 2  # said once
    # 12:20 another $0.30: $2.16, 108%, crossed by the call at 12:20
    claude_log(b, "s-b", [*B, ("2026-12-01T12:10", 100_000, 0, 0), ("2026-12-01T12:20", 100_000, 0, 0)])
    _, line, warning = status(b, "12:21", "--limit", "2")
    assert line == f"5h window $2.16 of $2.00 (108%) · reached {clock('12:20')} · ends {clock('15:00')}"
    assert warning == "warning: the 5h window's limit ($2.00) is reached"
    assert len(status(b, "12:21", "--limit", "2")) == 2
    # another limit is another warning: both shares at once, the lowest first
    assert status(b, "12:21", "--limit", "1.50")[2:] == ["warning: 80% of the 5h window's limit ($1.50) is used",
                                                         "warning: the 5h window's limit ($1.50) is reached"]


def test_a_token_limit_and_the_configs_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = claude_log(tmp_path / "a.jsonl", "s-a", A)
    b = claude_log(tmp_path / "b.jsonl", "s-b", B)
    status(a, "12:00", "--limit", "500k tokens")
    # 101k, 203k, 403k, 504k: the call at 11:50 crossed 500,000
    assert status(b, "12:00", "--limit", "500k tokens")[1:] == [
        f"5h window 504K of 500K tokens (101%) · reached {clock('11:50')} · ends {clock('15:00')}",
        "warning: 80% of the 5h window's limit (500,000 tokens) is used",
        "warning: the 5h window's limit (500,000 tokens) is reached"]  # fmt: skip
    # the config's [window]: a 1-hour window (11:00 to 12:00, b's two calls) is over at 12:00; at 11:55 it holds
    # $0.915 of $1.00: 91.5%, past the one share asked
    (tmp_path / "kcost.toml").write_text('[window]\nhours = 1\nlimit = "1.00"\nwarn = ["90%"]\n')
    monkeypatch.chdir(tmp_path)
    assert status(b, "12:00") == [status(b, "12:00")[0], "1h window: none open · limit $1.00"]
    lines = status(b, "11:55")
    assert lines[1].startswith("1h window $0.92 of $1.00 (92%)")
    assert lines[2] == "warning: 90% of the 1h window's limit ($1.00) is used"
    # the options win over the config
    assert status(b, "11:55", "--limit", "4", "--window-hours", "5")[1].startswith("5h window $1.56 of $4.00 (39%)")
    # and `kcost bill --by window` takes the config's window and limit too: a's window 10:00, b's 11:00 (active at
    # 11:55, 91.5% of $1.00)
    result = CliRunner().invoke(cli, ["bill", str(tmp_path), "--by", "window", "--cache", "none", "--format", "json",
                                      "--timezone", "UTC"])  # fmt: skip
    report = json.loads(result.stdout)
    assert report["window_hours"] == 1
    assert {r["group"]: r["cost"] for r in report["rows"]} == {"2026-12-01 10:00": "0.645", "2026-12-01 11:00": "0.915"}
    settings = resolve(config_for(None), caches=("none",), timezone="UTC")
    held = api.overview(api.sessions([str(tmp_path)], settings), settings, by="window",
                        now=datetime.fromisoformat("2026-12-01T11:55:00+00:00").timestamp())  # fmt: skip
    assert held.active[0].group == "2026-12-01 11:00" and held.active[0].limit is not None
    assert (held.active[0].limit.usd, held.active[0].limit.used) == (Decimal("1.00"), 0.915)


def test_max_is_the_dearest_window_the_live_views_kept(tmp_path: Path) -> None:
    # yesterday's window from 09:00: $0.63 (09:30 $0.615, 10:00 $0.015); today's so far $0.315: 50%
    old = claude_log(tmp_path / "old.jsonl", "s-old", [("2026-11-30T09:30", 200_000, 0, 1_000),
                                                       ("2026-11-30T10:00", 5_000, 0, 0)])  # fmt: skip
    now = claude_log(tmp_path / "now.jsonl", "s-now", A[:1])
    status(old, "10:30", "--limit", "max")
    lines = status(now, "10:30", "--limit", "max")
    assert lines[1].startswith("5h window $0.32 of $0.63 (50%)")


def test_bad_limits_are_one_line(tmp_path: Path) -> None:
    log = claude_log(tmp_path / "a.jsonl", "s-a", A)
    assert status(log, "12:00", "--limit", "lots") == ["kcost: not a limit: 'lots'"]
    result = CliRunner().invoke(cli, ["watch", str(log), "--once", "--warn", "80%,2000%"])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "not a share of the limit" in result.output


def test_watch_shows_the_window_and_warns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = claude_log(tmp_path / "a.jsonl", "s-a", A)
    b = claude_log(tmp_path / "b.jsonl", "s-b", B)
    monkeypatch.setenv("KCOST_NOW", "2026-12-01T12:11:00Z")
    settings = resolve(caches=("none",), limit="2", warn="50%,90%")
    grow = iter([("2026-12-01T12:10", 100_000, 0, 0)])

    def sleep(_: float) -> None:  # between looks, b sends one more call
        step = next(grow, None)
        if step is not None:
            claude_log(b, "s-b", [*B, step])

    looks = frames([str(a), str(b)], settings, interval=0, sleep=sleep)
    first, second = next(looks), next(looks)
    assert first.window is not None and first.window.window is not None
    assert first.window.window.cost == Decimal("1.56") and first.warned == ("50% of the 5h window's limit ($2.00) "
                                                                            "is used",)  # fmt: skip
    assert second.window is not None and second.window.window is not None
    assert second.window.window.cost == Decimal("1.86")  # 93%: the 90% share, said once
    assert second.warned == ("90% of the 5h window's limit ($2.00) is used",)
    result = CliRunner().invoke(cli, ["watch", str(a), str(b), "--once", "--cache", "none", "--limit", "2"],
                                env={"COLUMNS": "120"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"5h window $1.86 of $2.00 (93%) · $0.62/h · limit in 13m39s · ends {clock('15:00')}" in result.output
    assert "warning: 80% of the 5h window's limit ($2.00) is used" in result.output


def test_a_sessions_figures_keep_its_last_weeks_calls() -> None:
    day = 86_400.0
    calls = [(10 * day, Decimal("0.5"), 10), (2 * day, Decimal("0.1"), 1), (None, Decimal("9"), 9),
             (10 * day - RECENT_DAYS * day, Decimal("0.2"), 2)]  # fmt: skip
    assert recent(calls) == ((3 * day, Decimal("0.2"), 2), (10 * day, Decimal("0.5"), 10))


def test_a_warning_is_kept_for_the_window_not_for_the_clock_it_is_shown_on(tmp_path: Path) -> None:
    """The shares warned of are kept under the window's start as a moment: the same window on another zone's clock
    is not warned of again."""
    from kcost.live import limits

    spent = [(datetime.fromisoformat("2026-12-01T10:05:00+00:00").timestamp(), Decimal("1.9"), 1000)]
    now = datetime.fromisoformat("2026-12-01T10:30:00+00:00").timestamp()
    utc = limits.standing(spent, resolve(limit="2", timezone="UTC"), now)
    tokyo = limits.standing(spent, resolve(limit="2", timezone="Asia/Tokyo"), now)
    assert utc is not None and tokyo is not None and utc.window is not None and tokyo.window is not None
    assert utc.window.started != tokyo.window.started  # 10:00 UTC, 19:00 in Tokyo
    new, kept = limits.news(utc, {})
    assert new == [Decimal("0.8")]
    assert limits.news(tokyo, kept)[0] == []


@pytest.mark.parametrize(("option", "value"), [("--limit", "1e400"), ("--limit", "2e15 tokens"), ("--warn", "snan%"),
                                               ("--warn", "0")])  # fmt: skip
def test_limits_out_of_bounds_are_one_line(tmp_path: Path, option: str, value: str) -> None:
    log = claude_log(tmp_path / "a.jsonl", "s-a", A)
    result = CliRunner().invoke(cli, ["watch", str(log), "--once", "--limit", "2", option, value])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "kcost: error:" in result.output


def test_a_config_without_a_ledger_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ledger = false`: a status line keeps no state and no warning (each line says the shares reached)."""
    from kcost.ledger import default_path

    b = claude_log(tmp_path / "b.jsonl", "s-b", B)
    (tmp_path / "kcost.toml").write_text("ledger = false\n[window]\nlimit = \"0.50\"\n")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        assert status(b, "12:00")[2:] == ["warning: 80% of the 5h window's limit ($0.50) is used",
                                          "warning: the 5h window's limit ($0.50) is reached"]  # fmt: skip
    where = default_path()
    assert where is not None and not Path(where).exists()


def test_watch_warns_of_a_share_other_sessions_spending_reached(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """`watch` follows a; b's status line keeps b's calls in the ledger. When b's spending takes the window past a
    share, watch's next look warns of it, though a did not grow."""
    a = claude_log(tmp_path / "a.jsonl", "s-a", A)
    b = claude_log(tmp_path / "b.jsonl", "s-b", B)
    status(b, "12:00", "--limit", "2")  # $0.645 + $0.915 = $1.56: 78%
    monkeypatch.setenv("KCOST_NOW", "2026-12-01T12:11:00Z")
    settings = resolve(caches=("none",), limit="2", ledger=True)
    looks = iter(range(3))

    def sleep(_: float) -> None:
        if next(looks) == 0:  # b sends $0.30 more, and its status line keeps it: $1.86, 93%
            claude_log(b, "s-b", [*B, ("2026-12-01T12:10", 100_000, 0, 0)])
            status(b, "12:11", "--limit", "2")

    frames_seen = frames([str(a)], settings, interval=0, sleep=sleep)
    first, second = next(frames_seen), next(frames_seen)
    assert first.warned == () and second.warned == ("80% of the 5h window's limit ($2.00) is used",)
    assert second.sessions[0].new == 0 and second.window is not None and second.window.window is not None
    assert second.window.window.cost == Decimal("1.86")
