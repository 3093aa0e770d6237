"""Antigravity conversations (`conversations/<conversation>.db`): a session each, one call per model call however
often its records repeat it, billed as reported, and what its usage fields mean.

The fixture (`tests/fixtures/antigravity/`, under `home/.gemini/antigravity-cli`, built by its
`make_fixture.py`): a
conversation of three planner calls (each logged by its step and its `gen_metadata` row; the third with a failed
attempt sharing its message id) and a background call only `gen_metadata` holds; a sub-agent's conversation of a
call of its own and a copy of the parent's second. Reference figures are ccusage 20.0.24's output (`ccusage
antigravity daily|session --json --offline -z UTC`, HOME holding the fixture as `.gemini/antigravity-cli`).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import InputError
from kcost.readers.discover import read_all

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "antigravity" / "home" / ".gemini" / "antigravity-cli"
MAIN, SUB = "4f3c2b1a-9e8d-4c7b-a6f5-0e1d2c3b4a59", "b7a6c5d4-3e2f-4a1b-8c9d-0f1e2d3c4b5a"
CONVERSATIONS = FIXTURE / "conversations"


def calls(session: Any) -> list[tuple[int, int, int, int, int | None]]:
    """(prompt, cached, written, output, reasoning) of each call."""
    return [(u.prompt, u.cached, u.written, u.output, u.reasoning) for u in (r.reported for r in session.records) if u]


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def as_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output + result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_one_call_per_model_call() -> None:
    main, sub = read_all([str(FIXTURE)]).sessions
    assert (main.name, sub.name) == (MAIN, SUB) and main.agent == "antigravity"
    assert main.project == "/home/dev/src/widget-api" and main.call_models[0] == "gemini-3.5-flash-high"
    # input (2) is what neither read (5) nor wrote (4) the cache; the output (3) is thinking (9) + reply (10).
    # Call 3's failed attempt shares the call's message id: one call, as ccusage merges them
    assert calls(main) == [(9_120, 0, 0, 600, 412), (1_850 + 8_960, 8_960, 0, 440, 96),
                           (2_210 + 10_240, 10_240, 0, 505, None), (640, 0, 0, 14, None)]  # fmt: skip
    # the sub-agent's copy of call 2 is billed in the parent (the first conversation by path)
    assert calls(sub) == [(3_300, 0, 0, 380, 120)]


def test_the_counts_equal_ccusages() -> None:
    main, sub = read_all([str(FIXTURE)]).sessions
    every = calls(main) + calls(sub)
    # ccusage 20.0.24: input 17120, cacheRead 19200, cacheCreate 0, output 1311, totalTokens 38259. Its output is
    # the reply alone (field 10): the 628 thinking tokens it counts in its total only. Token for token, kcost's
    # output being ccusage's plus the thinking.
    assert sum(p - c - w for p, c, w, _, _ in every) == 17_120
    assert sum(c for _, c, _, _, _ in every) == 19_200 and sum(w for _, _, w, _, _ in every) == 0
    assert sum(o for *_, o, _ in every) == 1_311 + 628 and sum(r or 0 for *_, r in every) == 628
    assert sum(p + o for p, _, _, o, _ in every) == 38_259
    # per session: 4f3c2b1a input 13820, output 1051 (+ 508 thinking), cacheRead 19200; b7a6c5d4 3300 / 260 (+ 120)
    assert sum(p - c for p, c, *_ in calls(main)) == 13_820 and sum(o for *_, o, _ in calls(main)) == 1_051 + 508
    assert main.times[0] == 1_781_502_662.25 and main.times[-1] == 1_781_502_713.5


def test_a_conversation_alone_counts_what_it_holds() -> None:
    (sub,) = read_all([str(CONVERSATIONS / f"{SUB}.db")]).sessions
    assert calls(sub) == [(1_850 + 8_960, 8_960, 0, 440, 96), (3_300, 0, 0, 380, 120)]


def test_the_bill() -> None:
    session = as_json("bill", str(CONVERSATIONS / f"{MAIN}.db"))["runs"][0]["sessions"][0]
    assert session["usage"] == "reported" and any("billed as reported" in n for n in session["notes"])
    reported = as_json("bill", str(FIXTURE), "--usage", "reported")["runs"][0]["sessions"]
    assert sum(s["summary"]["input_tokens"] for s in reported) == 17_120 + 19_200


def test_found_in_its_homes(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ide = home / ".gemini" / "antigravity-ide"
    shutil.copytree(CONVERSATIONS, home / ".gemini" / "antigravity-cli" / "conversations")
    (ide / "conversations").mkdir(parents=True)
    (ide / "conversation_summaries.db").write_bytes(b"SQLite format 3\x00")  # its index: not in conversations/
    result = run("bill", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == ["kcost: read 2 sessions from ~/.gemini/antigravity-cli/conversations "
                                          "(antigravity)"]  # fmt: skip
    assert json.loads(result.stdout) == as_json("bill", "--input-format", "antigravity")
    assert [(r["group"], r["sessions"]) for r in as_json("bill", "--by", "agent")["rows"]] == [("antigravity", 2)]
    monkeypatch.setenv("ANTIGRAVITY_DATA_DIR", str(home / "nowhere") + "," + str(home / ".gemini" / "antigravity-cli"))
    result = run("bill", "--format", "json")
    assert result.exit_code == 0 and len(json.loads(result.stdout)["runs"][0]["sessions"]) == 2


def test_a_broken_record_names_its_step(tmp_path: Path) -> None:
    db = tmp_path / f"{MAIN}.db"
    shutil.copy(CONVERSATIONS / db.name, db)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE steps SET metadata = ? WHERE idx = 3", (b"\x4a\x10ab",))  # runs past its end
    connection.close()
    with pytest.raises(InputError, match="steps 3") as error:
        read_all([str(db)])
    assert error.value.source == str(db)


def test_another_database_is_none(tmp_path: Path) -> None:
    db = tmp_path / "cache.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE steps (idx INTEGER, payload BLOB)")
    connection.close()
    found = read_all([str(tmp_path)], required=False)
    assert not found.sessions and found.foreign == [str(db)]
