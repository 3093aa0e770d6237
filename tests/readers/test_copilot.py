"""GitHub Copilot CLI (`session-state/<session>/events.jsonl` under COPILOT_HOME, and the OpenTelemetry file
export under `otel/`): each model's usage per run from the shutdowns' running totals, a call per chat span, all
billed as reported.

The fixture (`tests/fixtures/github-copilot/home/.copilot`): session 7b1e2c4a shut down on 04-15 and again,
resumed, on 04-16 (totals running on; gpt-5-mini unchanged); the export holds session c0ffee00's two Claude chat
spans (with an inference log and an `invoke_agent` summary of the same trace), a gpt-5.2 chat span exported twice,
and a span of 7b1e2c4a dated before its last shutdown. Reference figures are ccusage 20.0.24's output (`ccusage
copilot daily|session --json --offline -z UTC`, HOME holding the fixture as `.copilot`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import InputError
from kcost.readers.discover import read_all
from tests.conftest import expect_error

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "github-copilot" / "home" / ".copilot"
STATE, EXPORTED = "7b1e2c4a-5d6f-4a8b-9c0d-1e2f3a4b5c6d", "c0ffee00-1111-4222-8333-944445555666"
EVENTS = FIXTURE / "session-state" / STATE / "events.jsonl"
OTEL = FIXTURE / "otel" / "copilot-otel-20260417-093000.jsonl"


def calls(session: Any) -> list[tuple[str | None, int, int, int, int]]:
    """(model, prompt, cached, written, output) of each call."""
    return [(m, u.prompt, u.cached, u.written, u.output)
            for m, u in zip(session.call_models, (r.reported for r in session.records), strict=True) if u]  # fmt: skip


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def as_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output + result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_each_models_usage_per_run() -> None:
    (session,) = read_all([str(EVENTS)]).sessions
    assert session.name == STATE and session.agent == "github-copilot"
    assert session.project == "/home/dev/src/widget-api"
    # inputTokens holds the cache reads and writes; the second shutdown's totals run on from the first's, so the
    # resumed run used the difference; gpt-5-mini did nothing in it
    assert calls(session) == [("claude-sonnet-4.5", 184_230, 151_900, 18_400, 6_120),
                              ("gpt-5-mini", 42_100, 30_720, 0, 2_380),
                              ("claude-sonnet-4.5", 301_455 - 184_230, 250_112 - 151_900, 29_952 - 18_400,
                               9_874 - 6_120)]  # fmt: skip
    assert [r.reported.reasoning for r in session.records if r.reported] == [0, 1_536, 0]
    assert any("one call per model and run, billed as reported" in n for n in session.read_notes)


def test_the_counts_equal_ccusages_but_for_the_export() -> None:
    state, exported = read_all([str(FIXTURE)]).sessions
    assert (state.name, exported.name) == (STATE, EXPORTED) and exported.source == f"{OTEL}#{EXPORTED}"

    def ccusage(rows: list[tuple[str | None, int, int, int, int]]) -> list[tuple[str | None, int, int, int, int]]:
        return [(m, p - c - w, o, c, w) for m, p, c, w, o in rows]  # input, output, cache read, cache create

    # ccusage 20.0.24, daily: 04-15 claude 13930 / 6120 / 151900 / 18400, gpt-5-mini 11380 / 2380 / 30720 / 0;
    # 04-16 claude 7461 / 3754 / 98212 / 11552 (the second shutdown less the first). Token for token; the span of
    # this session dated before its last shutdown is in the totals already (ccusage drops it too).
    assert ccusage(calls(state)) == [("claude-sonnet-4.5", 13_930, 6_120, 151_900, 18_400),
                                     ("gpt-5-mini", 11_380, 2_380, 30_720, 0),
                                     ("claude-sonnet-4.5", 7_461, 3_754, 98_212, 11_552)]  # fmt: skip
    # 04-17, the export: ccusage 20.0.24 has claude 23460 / 1058 / 21000 / 22900 and gpt-5.2 11848 / 2420 / 49152.
    # It takes the GenAI input less the cache reads only, so the 22,900 written tokens are in its input too
    # (23460 = 560 + 22900: newer ccusage subtracts them), and it counts the gpt-5.2 span exported twice (same
    # response id resp_0b1, same counts: newer ccusage drops the repeat) twice. kcost: each call once.
    assert ccusage(calls(exported)) == [("claude-sonnet-4.5", 450, 640, 0, 21_000),
                                        ("claude-sonnet-4.5", 110, 418, 21_000, 1_900),
                                        ("gpt-5.2", 5_924, 1_210, 24_576, 0)]  # fmt: skip
    assert 450 + 110 + 22_900 == 23_460 and 2 * 5_924 == 11_848 and 2 * 24_576 == 49_152
    assert exported.records[2].reported is not None and exported.records[2].reported.reasoning == 768


def test_the_export_alone() -> None:
    found = read_all([str(OTEL)]).sessions
    # no events file in the run: the span of 7b1e2c4a counts (as ccusage counts it given the export alone)
    assert {s.name: calls(s) for s in found}[STATE] == [("claude-sonnet-4.5", 9_999, 0, 0, 999)]
    assert len(found) == 2


def test_the_bill() -> None:
    session = as_json("bill", str(EVENTS))["runs"][0]["sessions"][0]
    assert session["usage"] == "reported" and session["name"] == STATE
    reported = as_json("bill", str(FIXTURE), "--usage", "reported")["runs"][0]["sessions"]
    assert [s["summary"]["input_tokens"] for s in reported] == [301_455 + 42_100, 21_450 + 23_010 + 30_500]


@pytest.mark.parametrize("variable", [False, True])
def test_found_in_its_home(variable: bool, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copilot = home / ("elsewhere" if variable else ".copilot")
    shutil.copytree(FIXTURE, copilot)
    (copilot / "session-state" / STATE / "workspace.yaml").write_text(f"id: {STATE}\ncwd: /home/dev\n")
    if variable:
        monkeypatch.setenv("COPILOT_HOME", str(copilot))
    result = run("bill", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"kcost: read 1 session from ~/{copilot.name}/session-state (github-copilot)",
        f"kcost: read 1 session from ~/{copilot.name}/otel (github-copilot)",
    ]
    assert json.loads(result.stdout) == as_json("bill", "--input-format", "github-copilot")
    rows = as_json("bill", "--by", "agent")["rows"]
    assert [(r["group"], r["sessions"]) for r in rows] == [("github-copilot", 2)]


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    log = tmp_path / "session-state" / STATE / "events.jsonl"
    log.parent.mkdir(parents=True)
    text = EVENTS.read_text()
    assert old in text
    log.write_text(text.replace(old, new))
    return log


def test_totals_that_start_again_count_whole(tmp_path: Path) -> None:
    # an older Copilot started its totals again on resuming: the second shutdown's are that run's alone
    log = _edited(tmp_path, '"inputTokens":301455,"outputTokens":9874,"cacheReadTokens":250112,'
                            '"cacheWriteTokens":29952', '"inputTokens":117225,"outputTokens":3754,'
                            '"cacheReadTokens":98212,"cacheWriteTokens":11552')  # fmt: skip
    (session,) = read_all([str(log)]).sessions
    assert calls(session)[2] == ("claude-sonnet-4.5", 117_225, 98_212, 11_552, 3_754)
    assert any("counted whole" in n for n in session.read_notes)


def test_a_bad_count_names_its_line_and_field(tmp_path: Path) -> None:
    log = _edited(tmp_path, '"cacheReadTokens":250112', '"cacheReadTokens":"many"')
    with pytest.raises(InputError) as error:
        read_all([str(log)])
    assert error.value.line == 17
    expect_error(run("bill", str(log)), f"{log}:17", "many",
                 field="data.modelMetrics.claude-sonnet-4.5.usage.cacheReadTokens")  # fmt: skip
    (session,) = read_all([str(log)], lenient=True).sessions
    assert [c[0] for c in calls(session)] == ["claude-sonnet-4.5", "gpt-5-mini"]
