"""Claude Code across files: a session spread over several logs is one session, and a response logged in several
(a resumed session's copy of its parent, a `/btw` side question's replay of its parent's responses, a copy of the
whole log) is billed once, as ccusage counts it; behind a gateway that gives every response one message id and no
request id, each response is a call of its own; a log served by a Kimi model (Claude Code pointed at Kimi's
Anthropic-compatible endpoint) is held against the simulation.

The fixtures (`tests/fixtures/claude-code/<case>/`) are laid out and written as Claude Code 2.1 writes them (see
tests/fixtures/README.md). Reference figures are ccusage 20.0.24's `session --json --offline` on the same files
(`CLAUDE_CONFIG_DIR` at a folder whose `projects/<project>/` holds them), written here, never run; where ccusage
is wrong the true figure is worked out from the fixture. ccusage's `inputTokens` + `cacheCreationTokens` +
`cacheReadTokens` is kcost's `input_tokens`; its `cacheReadTokens` kcost's `hit_tokens`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kcost.cli import cli
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "claude-code"
RESUMED = FIXTURES / "resumed"
PARENT = RESUMED / "3f6b2c1e-8d4a-4f0b-9c2e-5a7d1e9b4c10.jsonl"
RESUMED_FILE = RESUMED / "b82e4d6a-1c3f-47e9-a5d0-2f9c8e1b7a63.jsonl"
BTW = FIXTURES / "btw"
BTW_PARENT = BTW / "c4d1a7e2-5b9f-4e3a-8c61-0d2f7b9e5a84.jsonl"
SIDE = BTW / "c4d1a7e2-5b9f-4e3a-8c61-0d2f7b9e5a84" / "subagents"
GATEWAY = FIXTURES / "gateway" / "e7a9c3b1-2d4f-4a6e-9b8c-1f3e5d7a9c02.jsonl"
KIMI = FIXTURES / "kimi" / "f1b3d5e7-9a2c-4e6f-8b0d-2c4e6a8b0d13.jsonl"
SPOTTER = FIXTURES / "spotter-short.jsonl"
REPEATED = "line(s) repeating a response billed once already dropped"


def sessions(*paths: Path | str, usage: str = "reported") -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["bill", *map(str, paths), "--usage", usage, "--format", "json"])
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)["runs"][0]["sessions"]
    return found


def totals(session: dict[str, Any]) -> tuple[int, int, int, int]:
    """(calls, input tokens, cache reads, output tokens) of a session's bill."""
    s = session["summary"]
    return s["turns"], s["input_tokens"], s["hit_tokens"], s["output_tokens"]


def notes(session: dict[str, Any], text: str) -> list[str]:
    return [n for n in session["notes"] if text in n]


# -- a resumed session: the resumed file opens with a summary and the parent's lines, copied (their message.id,
# requestId and sessionId the parent's), then its own lines under its own sessionId

# ccusage 20.0.24 on both files: inputTokens 16, cacheCreationTokens 30,525, cacheReadTokens 53,005,
# outputTokens 237 (the copies counted once: 3 + 5 from the parent, 3 + 5 from the resumed file)
RESUMED_TOTALS = (4, 16 + 30_525 + 53_005, 53_005, 237)


def test_a_resumed_session_in_two_files_is_one_session_its_copies_billed_once() -> None:
    (session,) = sessions(RESUMED)
    assert totals(session) == RESUMED_TOTALS
    assert session["name"] == PARENT.stem  # named after the session its lines name, its own file first
    assert session["source"] == str(PARENT)
    assert "read from 2 files of one session" in session["notes"]
    (dropped,) = notes(session, REPEATED)
    assert dropped.startswith("3 ")  # the copy's three assistant lines (two responses, one in two blocks)
    # found in either order, the same session, named alike
    (backwards,) = sessions(RESUMED_FILE, PARENT)
    assert totals(backwards) == RESUMED_TOTALS and backwards["name"] == PARENT.stem
    # alone, each file is what it holds: the resumed file the whole conversation, the parent its first part
    assert totals(sessions(RESUMED_FILE)[0]) == RESUMED_TOTALS
    assert totals(sessions(PARENT)[0]) == (2, 3 + 9_000 + 11_515 + 5 + 420 + 20_515, 11_515 + 20_515, 88 + 40)


def test_a_resumed_session_rebuilds_each_prompt_once() -> None:
    (session,) = sessions(RESUMED, usage="auto")
    assert session["usage"] == "simulated" and len(session["turns"]) == 4
    assert [t["logged_model"] for t in session["turns"]] == ["claude-opus-4-6"] * 4


# -- /btw side questions: `<session>/subagents/agent-aside_question-N.jsonl`, each replaying the parent's last
# response (its message.id, a new requestId, isSidechain) before its own answer; in -1 the replay is the file's
# first line, in -2 the side question's user line comes first

# The true figures: the parent's two calls (3 + 2,000 + 50,000 in, 60 out; 3 + 80 + 52,000 in, 30 out) and each
# side question's answer (4 + 300 + 52,080 in, 10 and 11 out); the replays are the parent's second call again.
# ccusage 20.0.24 counts the replays (inputTokens 20, cacheCreationTokens 2,840, cacheReadTokens 310,160,
# outputTokens 171: 52,000 cache reads and 30 output twice too many): wrong here.
BTW_TOTALS = (4, 14 + 2_680 + 206_160, 206_160, 111)


def test_a_side_question_adds_its_answer_not_its_parents_replay() -> None:
    (session,) = sessions(BTW)
    assert totals(session) == BTW_TOTALS
    assert session["name"] == BTW_PARENT.stem and "read from 3 files of one session" in session["notes"]
    (dropped,) = notes(session, REPEATED)
    assert dropped.startswith("2 ")  # one replay line in each side question


def test_a_replay_read_before_its_parent_gives_way_to_it() -> None:
    """The side questions found first (each replay then the first copy of the response seen, the first line of
    -1): the parent's copy is billed all the same, and the side questions' own answers."""
    (session,) = sessions(SIDE / "agent-aside_question-1.jsonl", SIDE / "agent-aside_question-2.jsonl", BTW_PARENT)
    assert totals(session) == BTW_TOTALS
    assert session["source"] == str(BTW_PARENT)  # the file named after the session first
    assert [t["output_tokens"] for t in session["turns"]] == [60, 30, 10, 11]  # in the order they were made


def test_a_replay_given_way_still_knows_the_parents_copies(tmp_path: Path) -> None:
    """The replay first, then the parent, then a copy of the parent (a resume's): the parent's response is
    billed once, under either of its request ids (ccusage's `refreshes_dedupe_indexes_when_parent_replaces_
    sidechain_replay`)."""
    copy = tmp_path / "copy.jsonl"
    shutil.copy(BTW_PARENT, copy)
    found = sessions(SIDE / "agent-aside_question-1.jsonl", BTW_PARENT, copy)
    assert sum(totals(s)[0] for s in found) == 3  # the parent's two calls and the side question's answer
    assert sum(totals(s)[2] for s in found) == 50_000 + 52_000 + 52_080


def test_a_side_question_alone_bills_its_replay_and_its_answer() -> None:
    """Given alone, the replay is the only copy of the parent's response there is: it is billed."""
    (session,) = sessions(SIDE / "agent-aside_question-1.jsonl")
    assert totals(session) == (2, (3 + 80 + 52_000) + (4 + 300 + 52_080), 52_000 + 52_080, 30 + 10)


# -- two copies of one session (the same log in both Claude Code homes, or copied under another name)

# ccusage 20.0.24 on spotter-short.jsonl copied into two config folders (CLAUDE_CONFIG_DIR=a,b) and on two copies
# in one project: one session, inputTokens 3, cacheCreationTokens 13,835, cacheReadTokens 11,515, outputTokens 13
SPOTTER_TOTALS = (1, 3 + 13_835 + 11_515, 11_515, 13)


def test_two_copies_of_one_session_are_billed_once(tmp_path: Path) -> None:
    for where in ("a/projects/-home-marco-projects-spotter", "b/projects/-home-marco-projects-spotter"):
        (tmp_path / where).mkdir(parents=True)
        shutil.copy(SPOTTER, tmp_path / where / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl")
    shutil.copy(SPOTTER, tmp_path / "a" / "projects" / "-home-marco-projects-spotter" / "copy.jsonl")
    (session,) = sessions(tmp_path)
    assert totals(session) == SPOTTER_TOTALS == totals(sessions(SPOTTER)[0])
    assert session["name"] == "55604662-cf2a-4331-851a-ec234028f8ca"
    assert "read from 3 files of one session" in session["notes"]
    (dropped,) = notes(session, REPEATED)
    assert dropped.startswith("10 ")  # the response's five lines, in each of two copies
    # rebuilt too: one call, its prompt once
    (rebuilt,) = sessions(tmp_path, usage="auto")
    assert rebuilt["usage"] == "simulated" and len(rebuilt["turns"]) == 1


def test_sessions_of_their_own_stay_apart() -> None:
    found = sessions(RESUMED, BTW, GATEWAY)
    assert [totals(s) for s in found] == [RESUMED_TOTALS, BTW_TOTALS, GATEWAY_TOTALS]


# -- a gateway that answers every response with one message id (`msg_gateway`) and no request id: a user line
# between two assistant lines starts a new response

# The true figures: three responses, the first in two blocks (the larger usage kept: 10 + 4,000 in, 40 out), then
# 60 + 4,050 in, 30 out and 200 + 4,080 in, 25 out. ccusage 20.0.24 collapses them into one (the largest:
# inputTokens 200, cacheReadTokens 4,080, outputTokens 25): wrong here.
GATEWAY_TOTALS = (3, 10 + 4_000 + 60 + 4_050 + 200 + 4_080, 4_000 + 4_050 + 4_080, 40 + 30 + 25)


def test_a_gateway_sharing_one_message_id_gives_each_response_its_call(tmp_path: Path) -> None:
    (session,) = sessions(GATEWAY)
    assert totals(session) == GATEWAY_TOTALS
    assert [t["output_tokens"] for t in session["turns"]] == [40, 30, 25]
    # two such sessions (their own sessionIds) share the message id: neither is taken for a copy of the other
    other = tmp_path / "other.jsonl"
    other.write_text(GATEWAY.read_text().replace("e7a9c3b1-", "0000aaaa-").replace('"uuid":"e1', '"uuid":"f9'))
    assert [totals(s) for s in sessions(GATEWAY, other)] == [GATEWAY_TOTALS, GATEWAY_TOTALS]
    # a copy of one is a copy still (its lines' own ids tell)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(GATEWAY, copy)
    assert [totals(s) for s in sessions(GATEWAY, copy)] == [GATEWAY_TOTALS]


def test_blocks_of_one_response_with_no_request_id_stay_one_call(tmp_path: Path) -> None:
    """A tool's result between two blocks of one response (Claude Code runs tools as the response streams): the
    later block repeats the usage as it stands, so it is the same response."""
    lines = GATEWAY.read_text().splitlines()
    first, second, result = lines[1], lines[2], lines[3]
    log = tmp_path / "streamed.jsonl"
    log.write_text("\n".join([lines[0], first, result, second.replace('"output_tokens":40', '"output_tokens":5')]))
    (session,) = sessions(log)
    assert totals(session) == (1, 10 + 4_000, 4_000, 5)


# -- Claude Code pointed at Kimi's Anthropic-compatible endpoint: model kimi-k3, K3's own cache reads

# ccusage 20.0.24: inputTokens 1,560, cacheReadTokens 8,704, outputTokens 33
KIMI_TOTALS = (2, 1_560 + 8_704, 8_704, 33)


def test_a_claude_code_log_served_by_kimi_carries_an_agreement_figure() -> None:
    (reported,) = sessions(KIMI)
    assert totals(reported) == KIMI_TOTALS
    (session,) = sessions(KIMI, usage="auto")
    assert session["agreement"] is not None and session["agreement"]["turns"] == 2
    checks = [t["check"] for t in session["turns"]]
    assert [c["reported_cached_tokens"] for c in checks] == [3_584, 5_120]
    # a log served by Anthropic's models carries none: its cache is not K3's
    assert sessions(SPOTTER, usage="auto")[0]["agreement"] is None
    assert all(t["check"] is None for t in sessions(SPOTTER, usage="auto")[0]["turns"])


def test_agreement_follows_each_calls_model(tmp_path: Path) -> None:
    """One log, a call on kimi-k3 and one on a Claude model (`/model` switched mid-session): only the Kimi call
    is compared."""
    log = tmp_path / "switched.jsonl"
    text = KIMI.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    log.write_text(text.replace(last, last.replace('"model":"kimi-k3"', '"model":"claude-sonnet-4-5"')))
    (session,) = sessions(log, usage="auto")
    assert session["agreement"]["turns"] == 1
    assert [t["check"] is not None for t in session["turns"]] == [True, False]


def _logs_with_copies(tmp_path: Path) -> list[Path]:
    """Every Claude Code log here, and each again with its first response's lines repeated at its end (one log
    billing a response it holds twice once)."""
    from tests.conftest import SHARED

    logs = sorted(FIXTURES.rglob("*.jsonl")) + sorted((SHARED / "samples" / "claude-code").glob("*.jsonl"))
    out = list(logs)
    for n, log in enumerate(logs):
        records = [json.loads(line) for line in log.read_bytes().splitlines() if line.strip()]
        for record in records:
            if "sessionId" in record:
                record["sessionId"] = f"copy-{n}"  # a session of its own, apart from the log it copies
        first = [r for r in records if r.get("type") == "assistant"][:2]
        if first:
            copy = tmp_path / f"copy-{n}-{log.name}"
            copy.write_text("".join(json.dumps(r) + "\n" for r in records + first))
            out.append(copy)
    return out


def test_a_log_billed_as_reported_is_read_once_with_the_calls_and_notes_of_a_second_read(tmp_path: Path) -> None:
    """Where prompts are not rebuilt, a one-log session is billed from what its scan kept: the same calls and
    notes as reading the log again under the run's drops, strict and lenient."""
    from dataclasses import replace

    from kcost.errors import Leniency
    from kcost.readers.agents.claude_code import read_session, scan, sessions_of
    from kcost.readers.registry import Part
    from kcost.readers.source import open_source

    logs = _logs_with_copies(tmp_path)
    kept = dropped = several = 0
    found = [Part(src, scan(src, keep=True)) for src in map(open_source, map(str, logs))]
    # found in either order: which copy is billed, and so which file's drops, turns on it
    for session in sessions_of(found) + sessions_of(found[::-1]):
        for lenient in (False, True):
            again = [Part(p.source, replace(p.parsed, calls=None)) for p in session]
            notes_kept: list[str] = []
            notes_read: list[str] = []
            got = list(read_session(session, notes_kept, prompts=False, leniency=Leniency(lenient)))
            want = list(read_session(again, notes_read, prompts=False, leniency=Leniency(lenient)))
            assert (billed(got), notes_kept) == (billed(want), notes_read), session[0].source.name
            if len(session) == 1:
                assert got == want  # to the letter: `unlogged` too
        if all(p.parsed.calls is not None for p in session):
            kept += 1
            dropped += any(p.parsed.drop for p in session)
            several += len(session) > 1
    assert kept >= 10 and dropped >= 3 and several >= 2, (kept, dropped, several)  # copies dropped in some


def billed(calls: list[Any]) -> list[tuple[Any, ...]]:
    """What a bill of reported usage reads of each call (`prompts.to_session`, no prompt rebuilt): all but the
    prefix a rebuilt prompt would leave out (`unlogged`, named across a session's files)."""
    return [(c.reported, c.time, c.model, c.line, c.id, c.messages, c.output) for c in calls]


def _duplicates_one_by_one(scans: list[Any]) -> list[set[int]]:
    """The run's de-duplication as its rule reads, every response looked up in turn (the oracle of the reader's,
    which passes over the responses whose message id no other shares)."""
    from kcost.readers.agents.claude_code import _better, _shared_ids

    shared = _shared_ids(scans)
    billed: list[Any] = []
    kept: dict[Any, int] = {}
    drops: list[set[int]] = [set() for _ in scans]
    for index, found in enumerate(scans):
        for head in found.heads:
            identity = (head.mid, head.request) if head.mid not in shared else (head.mid, "\0" + head.uuid)
            match = kept.get(identity)
            if match is None and head.mid not in shared:
                match = next((n for n, (_, b) in enumerate(billed) if b.mid == head.mid and
                              (head.sidechain or b.sidechain)), None)  # fmt: skip
            if match is None:
                kept[identity] = len(billed)
                billed.append((index, head))
                continue
            kept[identity] = match
            other, copy = billed[match]
            if _better(head, copy):
                drops[other].add(copy.line)
                billed[match] = (index, head)
            else:
                drops[index].add(head.line)
    return drops


def test_the_runs_de_duplication_keeps_its_rule_over_random_runs() -> None:
    """Over 400 random runs of logs (copies, resumed files, side questions, gateways' shared ids, sizes), the
    lines the run passes over are those the rule, applied response by response, passes over."""
    import random

    from kcost.readers.agents.claude_code import Head, Scan, _duplicates

    rng = random.Random(7)
    for _ in range(400):
        mids = [f"msg_{n}" for n in range(rng.randint(1, 12))]
        scans = []
        for _ in range(rng.randint(1, 4)):
            heads = [Head(line, rng.choice(mids), rng.choice(["", "req_a", "req_b"]), rng.random() < 0.3,
                          rng.randint(0, 5), f"u{rng.randint(0, 6)}")  # fmt: skip
                     for line in sorted(rng.sample(range(1, 200), rng.randint(0, 10)))]  # fmt: skip
            scans.append(Scan("s", tuple(heads)))
        assert _duplicates(scans) == _duplicates_one_by_one(scans)
