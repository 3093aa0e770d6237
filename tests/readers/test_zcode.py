"""ZCode's usage ledger (`cli/db/db.sqlite` under ZCODE_HOME): a session each, a call per completed request,
billed as reported, and what ZCode's counts mean.

The fixture (`tests/fixtures/zcode/home/.zcode`, built by its `make_fixture.py`) holds two sessions: main calls, a title
call, an error attempt and its completed retry, a cancelled and a running request, a custom provider's `kimi-k3`
call with cache writes, and a session across UTC midnight. Reference figures are ccusage 20.0.24's output
(`ccusage zcode daily|session --json --offline -z UTC` with HOME holding the fixture as `.zcode`).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import InputError
from kcost.readers.discover import read_all
from tests.conftest import expect_error

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "zcode" / "home" / ".zcode"
DB = FIXTURE / "cli" / "db" / "db.sqlite"
WIDGETS, BILLING = "sess_01J9Z7K4M2Q8W3E5R6T7Y8U9I0", "sess_01J9ZB3N5P7R9T1V3X5Z7B9D1F"


def calls(session: Any) -> list[tuple[str | None, int, int, int, int]]:
    """(model, prompt, cached, written, output) of each call."""
    return [(m, u.prompt, u.cached, u.written, u.output)
            for m, u in zip(session.call_models, (r.reported for r in session.records), strict=True) if u]  # fmt: skip


def uncached(session: Any) -> int:
    """What ccusage calls input: the prompt that neither read nor wrote the cache."""
    return sum(p - c - w for _, p, c, w, _ in calls(session))


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def as_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output + result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_a_call_per_completed_request() -> None:
    widgets, billing = read_all([str(DB)]).sessions
    assert (widgets.name, billing.name) == (WIDGETS, BILLING) and widgets.agent == billing.agent == "zcode"
    assert widgets.source == f"{DB}#{WIDGETS}" and widgets.project == "/home/dev/src/widget-api"
    assert billing.project == "/home/dev/src/billing"
    # input_tokens holds the cache reads and writes: mu_0001 16,507 of which 11,712 read; the title call; the
    # retry (its failed attempt mu_0003 and the cancelled mu_0005 logged no tokens, and are not billed); the custom
    # provider's call, 40,000 of which 32,768 read and 2,048 written
    assert calls(widgets) == [("GLM-5.2", 16_507, 11_712, 0, 59), ("GLM-4.5-Air", 812, 0, 0, 14),
                              ("GLM-5.2", 18_230, 16_384, 0, 412), ("kimi-k3", 40_000, 32_768, 2_048, 900)]  # fmt: skip
    assert [r.reported.reasoning for r in widgets.records if r.reported] == [0, 0, 128, 310]
    # the running mu_0009 is billed once it completes
    assert calls(billing) == [("GLM-5.3", 22_140, 19_968, 0, 640), ("GLM-5.3", 23_020, 22_016, 0, 288)]
    assert "1 request(s) still running when the ledger was read: not billed" in billing.read_notes


def test_the_counts_equal_ccusages() -> None:
    widgets, billing = read_all([str(DB)]).sessions
    # ccusage 20.0.24, session report: widget-api input 12637, output 1385, cacheRead 60864, cacheCreate 2048;
    # billing 3176 / 928 / 41984 / 0. Token for token.
    assert (uncached(widgets), sum(c[4] for c in calls(widgets)), sum(c[2] for c in calls(widgets)),
            sum(c[3] for c in calls(widgets))) == (12_637, 1_385, 60_864, 2_048)  # fmt: skip
    assert (uncached(billing), sum(c[4] for c in calls(billing)), sum(c[2] for c in calls(billing))) == (
        3_176, 928, 41_984)  # fmt: skip
    # and its daily rows: 2026-08-21 holds the request started at 23:59:58.900, 2026-08-22 the next
    assert [datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds") for t in billing.times] == [
        "2026-08-21T23:59:58.900+00:00", "2026-08-22T00:00:14.250+00:00"]  # fmt: skip


def test_the_bill(tmp_path: Path) -> None:
    report = as_json("bill", str(DB))
    first = report["runs"][0]["sessions"][0]
    assert first["usage"] == "reported" and "ZCode's ledger holds each request's counts" in " ".join(first["notes"])
    reported = as_json("bill", str(FIXTURE), "--usage", "reported")
    totals = [s["summary"] for s in reported["runs"][0]["sessions"]]
    # the prompt billed is ccusage's input + cache read + cache create: 15813 + 102848 + 2048
    assert sum(t["input_tokens"] for t in totals) == 15_813 + 102_848 + 2_048
    assert sum(t["hit_tokens"] for t in totals) == 102_848 and sum(t["output_tokens"] for t in totals) == 2_313


def test_found_in_its_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / ".zcode" / "cli" / "db").mkdir(parents=True)
    shutil.copy(DB, home / ".zcode" / "cli" / "db" / "db.sqlite")
    (home / ".zcode" / "cli" / "config.json").write_text('{"apiKey": "not a log"}')
    result = run("bill", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == ["kcost: read 2 sessions from ~/.zcode/cli/db (zcode)"]
    assert as_json("bill", "--input-format", "zcode") == json.loads(result.stdout)
    rows = as_json("bill", "--by", "agent")["rows"]
    assert [(r["group"], r["sessions"]) for r in rows] == [("zcode", 2)]
    # ZCODE_HOME names several homes: the same ledger in two is counted once, as ccusage counts a request's id once
    shutil.copytree(home / ".zcode", home / "other")
    monkeypatch.setenv("ZCODE_HOME", f"{home / '.zcode'},{home / 'other'}")
    result = run("bill", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "kcost: 2 session(s) found in two places counted once" in result.stderr
    assert len(json.loads(result.stdout)["runs"][0]["sessions"]) == 2


def _edited(tmp_path: Path, sql: str) -> Path:
    db = tmp_path / "db.sqlite"
    shutil.copy(DB, db)
    with sqlite3.connect(db) as connection:
        connection.execute(sql)
    connection.close()
    return db


def test_a_bad_count_names_its_row_and_column(tmp_path: Path) -> None:
    db = _edited(tmp_path, "UPDATE model_usage SET cache_read_input_tokens = -5 WHERE id = 'mu_0004'")
    with pytest.raises(InputError, match=r"mu_0004.*cache_read_input_tokens"):
        read_all([str(db)])
    widgets, _ = read_all([str(db)], lenient=True).sessions
    assert [c[1] for c in calls(widgets)] == [16_507, 812, 40_000]
    expect_error(run("bill", str(db)), f"{db}#{WIDGETS} (model_usage mu_0004)", "not a token count: -5",
                 field="cache_read_input_tokens")  # fmt: skip


def test_reasoning_counted_apart_where_the_total_says(tmp_path: Path) -> None:
    db = _edited(tmp_path, "UPDATE model_usage SET computed_total_tokens = 18230 + 412 + 128 WHERE id = 'mu_0004'")
    widgets, _ = read_all([str(db)]).sessions
    assert calls(widgets)[2] == ("GLM-5.2", 18_230, 16_384, 0, 412 + 128)


def test_a_ledger_of_another_schema_is_no_zcode_one(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE model_usage (id TEXT, tokens INTEGER)")
    connection.close()
    found = read_all([str(tmp_path)], required=False)
    assert not found.sessions and found.foreign == [str(db)]
    with pytest.raises(InputError, match="model_usage lacks"):
        read_all([str(db)], "zcode")
