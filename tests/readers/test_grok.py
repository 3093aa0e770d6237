"""Grok Build sessions (`sessions/<cwd>/<session>/updates.jsonl` under GROK_HOME): a call per completed turn and
model, billed as reported, a turn two sessions log counted once, and what Grok's counts mean.

The fixture (`tests/fixtures/grok/home/.grok`, written by its `make_fixture.py`): session 019f2a6e has turn ev-a1
(grok-4.5-build), turn ev-a2 (grok-4.5-build and grok-code-fast-1) and a third still running; session 019f2b10,
a fork, logs ev-a2 again, then ev-b1 and an older line with neither `_meta` nor `modelUsage`. Reference figures are
ccusage 20.0.24's output (`ccusage grok daily|session --json --offline -z UTC`, HOME holding the fixture as
`.grok`).
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

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "grok" / "home" / ".grok"
PROJECT = FIXTURE / "sessions" / "%2Fhome%2Fdev%2Fsrc%2Fwidget-api"
FIRST, FORK = "019f2a6e-5b1c-7d3e-8f4a-1b2c3d4e5f60", "019f2b10-77aa-7c01-9d2e-3f4a5b6c7d8e"


def calls(session: Any) -> list[tuple[str | None, int, int, int, int | None]]:
    """(model, prompt, cached, output, reasoning) of each call."""
    return [(m, u.prompt, u.cached, u.output, u.reasoning)
            for m, u in zip(session.call_models, (r.reported for r in session.records), strict=True) if u]  # fmt: skip


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def as_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output + result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_a_call_per_turn_and_model() -> None:
    found = read_all([str(FIXTURE)])
    first, fork = found.sessions
    assert (first.name, fork.name) == (FIRST, FORK) and first.agent == "grok" and not found.foreign
    assert first.project == fork.project == "/home/dev/src/widget-api"  # the summaries' info.cwd
    # inputTokens holds the cache reads, outputTokens the reasoning (totalTokens = input + output)
    assert calls(first) == [("grok-4.5-build", 48_213, 40_960, 1_822, 1_290),
                            ("grok-4.5-build", 71_544, 65_536, 2_410, 980),
                            ("grok-code-fast-1", 12_880, 0, 640, 0)]  # fmt: skip
    assert "its last turn was still running: not billed" in first.read_notes
    # the fork's copy of ev-a2 counts in the first session only; its old line is the summary's current model's,
    # at the envelope's Unix seconds
    assert calls(fork) == [("grok-4.5-build", 9_050, 0, 512, 200), ("grok-4.5-build", 10_240, 8_192, 300, 120)]
    assert fork.times[1] == 1_784_282_460.0 and fork.times[0] == 1_784_282_412.0


def test_the_counts_equal_ccusages() -> None:
    first, fork = read_all([str(FIXTURE)]).sessions
    everything = calls(first) + calls(fork)
    by_model: dict[str, list[int]] = {}
    for model, prompt, cached, output, _ in everything:
        row = by_model.setdefault(str(model), [0, 0, 0])
        row[0] += prompt - cached
        row[1] += cached
        row[2] += output
    # ccusage 20.0.24, daily: grok-4.5-build 13261 + 11098 input, 106496 + 8192 cache read, 4232 + 812 output;
    # grok-code-fast-1 12880 / 0 / 640; totals 37239 / 114688 / 5684, cache create 0. Token for token (its
    # totalTokens 157611 leaves the 2,590 reasoning tokens inside the output, as kcost does).
    assert by_model == {"grok-4.5-build": [13_261 + 11_098, 106_496 + 8_192, 4_232 + 812],
                        "grok-code-fast-1": [12_880, 0, 640]}  # fmt: skip
    assert sum(p + o for _, p, _, o, _ in everything) == 157_611
    # per session as ccusage: the duplicate in the first file by path (137509 and 20102 tokens)
    assert sum(p + o for _, p, _, o, _ in calls(first)) == 137_509
    assert sum(p + o for _, p, _, o, _ in calls(fork)) == 20_102


def test_a_session_given_alone_counts_the_turn_it_shares() -> None:
    (fork,) = read_all([str(PROJECT / FORK / "updates.jsonl")]).sessions
    assert [c[1] for c in calls(fork)] == [71_544, 12_880, 9_050, 10_240]


def test_the_bill() -> None:
    session = as_json("bill", str(PROJECT / FIRST / "updates.jsonl"))["runs"][0]["sessions"][0]
    assert session["usage"] == "reported" and session["name"] == FIRST
    assert any("one call per turn and model, billed as reported" in n for n in session["notes"])
    assert [t["logged_model"] for t in session["turns"]] == ["grok-4.5-build", "grok-4.5-build", "grok-code-fast-1"]
    reported = as_json("bill", str(FIXTURE), "--usage", "reported")["runs"][0]["sessions"]
    assert sum(s["summary"]["input_tokens"] for s in reported) == 37_239 + 114_688
    assert sum(s["summary"]["output_tokens"] for s in reported) == 5_684


@pytest.mark.parametrize("variable", [False, True])
def test_found_in_its_home(variable: bool, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grok = home / ("elsewhere" if variable else ".grok")
    shutil.copytree(FIXTURE / "sessions", grok / "sessions")
    (grok / "logs").mkdir()
    (grok / "logs" / "unified.jsonl").write_text('{"prompt_tokens": 1}\n')  # none of the sessions' logs
    if variable:
        monkeypatch.setenv("GROK_HOME", str(grok))
    result = run("bill", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [f"kcost: read 2 sessions from ~/{grok.name}/sessions (grok)"]
    assert json.loads(result.stdout) == as_json("bill", "--input-format", "grok")
    assert json.loads(result.stdout) == as_json("bill", str(grok / "sessions"))
    rows = as_json("bill", "--by", "agent")["rows"]
    assert [(r["group"], r["sessions"]) for r in rows] == [("grok", 2)]


def test_the_project_without_a_summary(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "%2Fsrv%2Fapp" / FIRST
    folder.mkdir(parents=True)
    shutil.copy(PROJECT / FIRST / "updates.jsonl", folder)
    (session,) = read_all([str(folder / "updates.jsonl")]).sessions
    assert session.project == "/srv/app"  # the folder the session lies in, decoded


def test_a_bad_count_names_its_line_and_field(tmp_path: Path) -> None:
    log = tmp_path / "updates.jsonl"
    lines = (PROJECT / FIRST / "updates.jsonl").read_text().splitlines()
    lines[6] = lines[6].replace('"cachedReadTokens":40960,', '"cachedReadTokens":-1,', 2)
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as error:
        read_all([str(log)])
    assert error.value.line == 7 and error.value.field == "params.update.usage.modelUsage.grok-4.5-build" \
        ".cachedReadTokens"  # fmt: skip
    expect_error(run("bill", str(log)), f"{log}:7", "-1", field="params.update.usage.modelUsage.grok-4.5-build"
                 ".cachedReadTokens")  # fmt: skip
    (session,) = read_all([str(log)], lenient=True).sessions
    assert [c[1] for c in calls(session)] == [71_544, 12_880]
