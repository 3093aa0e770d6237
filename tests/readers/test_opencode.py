"""OpenCode's two stores: the JSON store (`storage/message/<session>/`, the fixture) and the SQLite database
(`opencode.db`, built here from OpenCode's schema, `packages/opencode/src/session/session.sql.ts`), a session
migrated into both counted once, one call per step, and the two meanings OpenCode's `output` has had.

Reference figures are ccusage 20.0.24's output (`ccusage opencode session --json --offline` with
OPENCODE_DATA_DIR pointing at a folder holding the same store); where kcost differs, the test says why.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from kcost.readers.discover import read_all
from kcost.readers.homes import places

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "opencode"
MIGRATED = "ses_6a1f0c2e8ffeQm3cVtD9bX4kLw"  # the JSON store's session (OpenCode 0.15.8)
NEW = "ses_5b2e1d3f7aa0Rn4dWuE8cY5mMx"  # a session only the database holds (OpenCode 1.3.17)

# OpenCode's tables as `session.sql.ts` declares them (drizzle: `Timestamps` is time_created, time_updated), the
# columns a reader needs and the NOT NULL ones.
SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, time_created integer NOT NULL,
    time_updated integer NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    workspace_id text, parent_id text, slug text NOT NULL, directory text NOT NULL, title text NOT NULL,
    version text NOT NULL, share_url text, summary_additions integer, summary_deletions integer,
    summary_files integer, summary_diffs text, revert text, permission text, time_created integer NOT NULL,
    time_updated integer NOT NULL, time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""


def _session_files(store: Path, session: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A JSON-store session as OpenCode's JSON migration reads it: its record, and its messages with parts."""
    (record,) = [json.loads(f.read_text()) for f in (store / "session").glob(f"*/{session}.json")]
    messages = []
    for file in sorted((store / "message" / session).glob("*.json")):
        message = json.loads(file.read_text())
        parts = [json.loads(p.read_text()) for p in sorted((store / "part" / message["id"]).glob("*.json"))]
        messages.append((message, parts))
    return record, messages


def build_database(path: Path, sessions: list[tuple[dict[str, Any], list[Any]]]) -> Path:
    """An `opencode.db` holding `sessions` as OpenCode writes them: `data` is the message or part without its
    ids (`InfoData`, `PartData` in session.sql.ts)."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    for record, messages in sessions:
        time = record["time"]
        db.execute("INSERT OR IGNORE INTO project VALUES (?, ?, ?, ?)",
                   (record["projectID"], record["directory"], time["created"], time["updated"]))  # fmt: skip
        db.execute("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, "
                   "time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (record["id"], record["projectID"], "calm-river", record["directory"], record["title"],
                    record["version"], time["created"], time["updated"]))  # fmt: skip
        for message, parts in messages:
            created = message["time"]["created"]
            data = {k: v for k, v in message.items() if k not in ("id", "sessionID")}
            db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                       (message["id"], record["id"], created, created, json.dumps(data)))  # fmt: skip
            for part in parts:
                body = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
                db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                           (part["id"], message["id"], record["id"], created, created, json.dumps(body)))  # fmt: skip
    db.commit()
    db.close()
    return path


def new_session() -> tuple[dict[str, Any], list[Any]]:
    """A session OpenCode 1.3.17 wrote: `output` leaves the reasoning out, `total` counts it apart."""
    t0 = 1780000000000
    record = {"id": NEW, "projectID": "8f2c1e0a9b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e", "directory": "/home/user/demo",
              "title": "Explain the layout", "version": "1.3.17",
              "time": {"created": t0, "updated": t0 + 9000}}  # fmt: skip
    user = {"id": "msg_a0b1c2d3e001AaBbCcDdEeFf", "sessionID": NEW, "role": "user", "time": {"created": t0 + 100},
            "agent": "build", "model": {"providerID": "moonshotai", "modelID": "kimi-k2.6"}}  # fmt: skip
    text = {"id": "prt_a0b1c2d3e002AaBbCcDdEeFf", "sessionID": NEW, "messageID": user["id"], "type": "text",
            "text": "Explain the layout of src in two lines."}  # fmt: skip
    tokens = {"total": 9920, "input": 500, "output": 80, "reasoning": 40, "cache": {"read": 9000, "write": 300}}
    reply = {"id": "msg_a0b1c2d3f001AaBbCcDdEeFf", "sessionID": NEW, "role": "assistant",
             "time": {"created": t0 + 200, "completed": t0 + 5200}, "parentID": user["id"], "modelID": "kimi-k2.6",
             "providerID": "moonshotai", "mode": "build", "agent": "build",
             "path": {"cwd": "/home/user/demo", "root": "/home/user/demo"}, "cost": 0.00213, "tokens": tokens,
             "finish": "stop"}  # fmt: skip
    parts = [
        {"type": "step-start", "snapshot": "4b825dc642cb6eb9a060e54bf8d69288fbee4904"},
        {"type": "reasoning", "text": "Three modules: entry, logic, helpers.", "time": {"start": 1, "end": 2}},
        {"type": "text", "text": "An entry point, its logic and its helpers.", "time": {"start": 2, "end": 3}},
        {"type": "step-finish", "reason": "stop", "cost": 0.00213, "tokens": tokens},
    ]
    reply_parts = [{"id": f"prt_a0b1c2d3f0{n + 10:02d}Part{n:02d}", "sessionID": NEW, "messageID": reply["id"], **p}
                   for n, p in enumerate(parts)]  # fmt: skip
    return record, [(user, [text]), (reply, reply_parts)]


def totals(session: Any) -> list[tuple[int, int, int, int]]:
    return [(u.prompt, u.cached, u.written, u.output) for u in (r.reported for r in session.records) if u]


def calls(unit: Any) -> list[Any]:
    from kcost.errors import Leniency
    from kcost.readers.agents.opencode import OpenCode

    return list(OpenCode().read(unit, [], prompts=True, leniency=Leniency(False)))


# What kcost reads of the fixture's session, in either store: one call per step, `output` as OpenCode 0.15.8
# meant it (reasoning inside).
OLD = [(11_444, 10_240, 0, 61), (11_830, 11_520, 0, 140), (12_128, 12_032, 0, 52)]


def test_the_json_store_one_call_per_step() -> None:
    (session,) = read_all([str(FIXTURE / "storage" / "message" / MIGRATED)]).sessions
    assert session.name == MIGRATED and session.agent == "opencode" and session.project == "/home/user/demo"
    # ccusage 20.0.24 on this store: inputTokens 406, cacheReadTokens 23552, outputTokens 192, totalTokens 24180.
    # It reads the messages' `tokens`: the second message ran two steps (a tool call, then the reply) and OpenCode
    # overwrote its `tokens` with the last step's (`processor.ts`, finish-step), so ccusage never sees the first
    # step (1,204 uncached + 10,240 read, 61 out: its `step-finish` part). kcost reads each step's part, so it
    # counts that step on top of ccusage's figures.
    assert totals(session) == OLD
    assert sum(p - c for p, c, _, _ in OLD) == 406 + 1_204 and sum(c for _, c, _, _ in OLD) == 23_552 + 10_240
    # OpenCode 0.15.8 stored `output` with the reasoning in it (`Session.getUsage` up to 1.3.15): the last reply's
    # 52 hold its 30 reasoning tokens. ccusage adds `reasoning` again: its totalTokens 24180 = 406 + 23552 + 192 +
    # 30. kcost bills 52.
    assert session.records[2].reported is not None and session.records[2].reported.reasoning == 30
    assert 24_180 - (406 + 23_552 + 192) == 30


def test_the_prompt_is_rebuilt_from_the_parts() -> None:
    first, second, third = calls(FIXTURE / "storage" / "message" / MIGRATED)
    assert first.messages is not None and [m.role for m in first.messages] == ["user"]
    assert first.messages[0].content == "Fix the failing test in tests/test_math.py"
    assert first.output is not None and first.output.tool_calls[0].name == "bash"
    assert first.output.reasoning and first.output.content == "I'll run the test first."
    # the second step's prompt: the question, the first step's reply and its tool result
    assert second.messages is not None and [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert "1 failed" in second.messages[2].content and second.messages[2].tool_call_id == "call_0_bash"
    assert third.messages is not None and [m.role for m in third.messages][-1] == "user"
    assert third.unlogged == "system prompt and tools" and third.model == "kimi-k2-0905-preview"


def test_the_database_and_the_newer_output(tmp_path: Path) -> None:
    build_database(tmp_path / "opencode.db", [new_session()])
    (session,) = read_all([str(tmp_path)]).sessions
    assert session.name == NEW and session.source == f"{tmp_path / 'opencode.db'}#{NEW}"
    assert session.project == "/home/user/demo"
    # ccusage 20.0.24: inputTokens 500, cacheReadTokens 9000, cacheCreationTokens 300, outputTokens 80,
    # totalTokens 9920: the 40 reasoning tokens on top of the 80, as OpenCode 1.3.16 on means them (`total`
    # = input + output + reasoning + cache). Token for token.
    assert totals(session) == [(9_800, 9_000, 300, 120)]
    assert 9_920 == 500 + 9_000 + 300 + 80 + 40
    # the database file given alone is read through its data folder
    assert totals(read_all([str(tmp_path / "opencode.db")]).sessions[0]) == [(9_800, 9_000, 300, 120)]


def test_a_session_migrated_into_both_stores_is_counted_once(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    build_database(tmp_path / "opencode.db", [_session_files(FIXTURE / "storage", MIGRATED), new_session()])
    found = read_all([str(tmp_path)])
    # ccusage 20.0.24 on this folder: the same two sessions, the migrated one once (406 / 23552 / 192, as from
    # the JSON store alone), the new one 500 / 9000 / 300 / 80.
    assert sorted(s.name for s in found.sessions) == sorted([MIGRATED, NEW]) and not found.skipped
    by_name = {s.name: totals(s) for s in found.sessions}
    assert by_name == {MIGRATED: OLD, NEW: [(9_800, 9_000, 300, 120)]}
    # the session's folder given alone, beside a database that holds it: read from the database, once
    assert [s.name for s in read_all([str(tmp_path), str(tmp_path / "storage" / "message" / MIGRATED)]).sessions] \
        == [s.name for s in found.sessions]  # fmt: skip


def test_a_message_only_the_json_store_holds_is_read_with_the_database(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    record, messages = _session_files(FIXTURE / "storage", MIGRATED)
    build_database(tmp_path / "opencode.db", [(record, messages[:2])])  # migrated before the second question
    (session,) = read_all([str(tmp_path)]).sessions
    assert totals(session) == OLD


@pytest.mark.parametrize(
    ("tokens", "version", "output"),
    [
        ({"input": 1, "output": 80, "reasoning": 40, "total": 121}, "0.15.8", 120),  # `total` says apart
        ({"input": 1, "output": 80, "reasoning": 40, "total": 81}, "1.3.17", 80),  # `total` says inside
        ({"input": 1, "output": 80, "reasoning": 40}, "1.3.15", 80),  # no total: the version, before 1.3.16
        ({"input": 1, "output": 80, "reasoning": 40}, "1.3.16", 120),  # from 1.3.16
        ({"input": 1, "output": 10, "reasoning": 40}, "1.0.0", 50),  # more reasoning than output: apart
    ],
)
def test_what_output_means(tokens: dict[str, Any], version: str, output: int) -> None:
    from kcost.errors import Leniency
    from kcost.readers.agents.opencode import _Reasoning, _usage

    usage = _usage(tokens, _Reasoning(version, apart=False), "here", Leniency(False))
    assert usage is not None and usage.output == output and usage.reasoning == 40


def test_a_bad_count_names_its_field(tmp_path: Path) -> None:
    from kcost.errors import InputError

    store = tmp_path / "storage"
    shutil.copytree(FIXTURE / "storage", store)
    file = store / "message" / MIGRATED / "msg_9e0f1a2b6001WxYzAbCdEfGh.json"
    message = json.loads(file.read_text())
    message["tokens"]["cache"]["read"] = -1
    file.write_text(json.dumps(message))
    for part in (store / "part" / message["id"]).glob("*.json"):
        part.unlink()  # its usage then is the message's
    with pytest.raises(InputError, match=r"tokens\.cache\.read"):
        read_all([str(store / "message" / MIGRATED)])
    (session,) = read_all([str(store / "message" / MIGRATED)], lenient=True).sessions
    assert totals(session) == OLD[:2]


def test_the_home_is_opencodes_data_folder(tmp_path: Path) -> None:
    (tmp_path / "share" / "opencode").mkdir(parents=True)
    folders, _ = places("opencode", {"XDG_DATA_HOME": str(tmp_path / "share")})
    assert [f.path for f in folders] == [tmp_path / "share" / "opencode"]
    folders, _ = places("opencode", {"OPENCODE_DATA_DIR": f"{tmp_path / 'share'},{tmp_path / 'nowhere'}"})
    assert [f.path for f in folders] == [tmp_path / "share"]


def test_a_compaction_starts_the_prompt_again(tmp_path: Path) -> None:
    record, messages = _session_files(FIXTURE / "storage", MIGRATED)
    t0 = messages[-1][0]["time"]["created"] + 1000

    def message(n: int, role: str, parts: list[dict[str, Any]], **info: Any) -> tuple[dict[str, Any], list[Any]]:
        mid = f"msg_9e0f1a2b7{n:03d}Compact{n:02d}"
        info = {"id": mid, "sessionID": MIGRATED, "role": role, "time": {"created": t0 + n}, **info}
        return info, [{"id": f"prt_{mid[4:]}{k:02d}", "sessionID": MIGRATED, "messageID": mid, **p}
                      for k, p in enumerate(parts)]  # fmt: skip

    tokens = {"input": 200, "output": 90, "reasoning": 0, "cache": {"read": 12000, "write": 0}}
    messages += [
        message(1, "user", [{"type": "compaction", "auto": True}]),
        message(
            2,
            "assistant",
            [{"type": "text", "text": "We fixed add()."}],
            summary=True,
            finish="stop",
            modelID="kimi-k2-0905-preview",
            tokens=tokens,
        ),  # fmt: skip
        message(3, "user", [{"type": "text", "text": "Thanks."}]),
        message(
            4,
            "assistant",
            [{"type": "text", "text": "You're welcome."}],
            finish="stop",
            modelID="kimi-k2-0905-preview",
            tokens={"input": 30, "output": 5, "cache": {"read": 300}},
        ),  # fmt: skip
    ]
    build_database(tmp_path / "opencode.db", [(record, messages)])
    from kcost.readers.agents.opencode import OpenCode

    (unit,) = OpenCode().claim(tmp_path)
    *_, summary, after = calls(unit)
    assert summary.messages is not None and summary.messages[-1].content == "What did we do so far?"
    assert after.messages is not None and [m.content for m in after.messages] == [
        "What did we do so far?", "We fixed add().", "Thanks."]  # fmt: skip


def test_an_aborted_step_that_logged_zeros_is_no_call(tmp_path: Path) -> None:
    """A step OpenCode aborted logs every count 0, its reasoning's too (`"reasoning": 0`): nothing was billed, so it
    is no call (a zero-token call counted a phantom turn)."""
    record, messages = new_session()
    user, reply = messages[0], messages[1]
    zeros = {"total": 0, "input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    aborted = ({**reply[0], "id": "msg_a0b1c2d3f101AaBbCcDdEeFf", "tokens": zeros, "finish": "aborted"},
               [{**p, "id": f"{p['id']}x", "messageID": "msg_a0b1c2d3f101AaBbCcDdEeFf",
                 **({"tokens": zeros, "reason": "aborted"} if p["type"] == "step-finish" else {})} for p in reply[1]])
    build_database(tmp_path / "opencode.db", [(record, [user, aborted, reply])])
    (session,) = read_all([str(tmp_path)]).sessions
    assert totals(session) == [(9_800, 9_000, 300, 120)]
