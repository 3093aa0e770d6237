"""`kcost bill` with no path: every agent's logs, found where each agent writes them (its home, or the folder
its variable names), billed exactly as billing each log folder by path bills them, each folder named on stderr;
none found is one line and exit 2. A fake home holds a log of every agent with a home, laid out as the agent
lays it out: Claude Code `projects/<project>/<session>.jsonl` (two config folders named by CLAUDE_CONFIG_DIR),
Codex `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, the Kimi CLI `sessions/<md5 of the work dir>/<session>/`
with its `kimi.json`, Kimi Code `sessions/<work dir key>/<session>/agents/<agent>/wire.jsonl` beside its
`state.json`."""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import InputError
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "KIMI_SHARE_DIR", "KIMI_CODE_HOME", "XDG_CONFIG_HOME")
KIMI_WORK_DIR = "/home/u/kimi-project"
ROLLOUT = "rollout-2026-05-13T09-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def as_json(*args: str) -> dict[str, Any]:
    code, out, err = run(*args, "--format", "json")
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home folder, the agents' variables unset."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: folder))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return folder


def claude(config: Path, project: str, fixture: str) -> Path:
    log = config / "projects" / project / fixture
    log.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "claude-code" / fixture, log)
    return log


def codex(codex_home: Path, folder: str = "sessions/2026/05/13") -> Path:
    log = codex_home / folder / ROLLOUT
    log.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "codex" / "ccusage-session-alpha.jsonl", log)
    return log


def kimi_cli(share: Path) -> Path:
    """The two fixture sessions of one work dir, as the CLI keeps them, and the `kimi.json` naming it."""
    bucket = share / "sessions" / hashlib.md5(KIMI_WORK_DIR.encode()).hexdigest()
    for session in (FIXTURES / "kimi-cli" / "sessions").glob("*/*"):
        shutil.copytree(session, bucket / session.name)
    (share / "kimi.json").write_text(json.dumps({"work_dirs": [{"path": KIMI_WORK_DIR, "kaos": "local"}]}))
    return share / "sessions"


def kimi_code(kimi_home: Path) -> Path:
    session = kimi_home / "sessions" / "wd-1a2b3c" / "session-1"
    (session / "agents" / "main").mkdir(parents=True)
    shutil.copy(FIXTURES / "kimi-code" / "sample-main.wire.jsonl", session / "agents" / "main" / "wire.jsonl")
    (session / "state.json").write_text(json.dumps({"id": "session-1", "workDir": "/tmp/work"}))  # no session
    return kimi_home / "sessions"


@pytest.fixture
def logs(home: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """A log of every agent where it writes them, two Claude Code config folders named by CLAUDE_CONFIG_DIR:
    the log folders, in the order kcost reads them."""
    claude(home / "claude-work", "-home-marco-projects-spotter", "spotter-short.jsonl")
    claude(home / "claude-personal", "-home-u-alpha", "ccusage-chat-alpha.jsonl")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{home / 'claude-work'}, ~/claude-personal")
    codex(home / ".codex")
    return [kimi_cli(home / ".kimi"), kimi_code(home / ".kimi-code"), home / ".codex" / "sessions",
            home / "claude-work" / "projects", home / "claude-personal" / "projects"]  # fmt: skip


def summary(bill: dict[str, Any]) -> list[Any]:
    """Each run's sessions (where from, what, and their totals) and its total."""
    return [([(s["source"], s["name"], s["summary"]) for s in r["sessions"]], r["total"]) for r in bill["runs"]]


def test_no_path_bills_every_agents_logs_as_their_folders_by_path(logs: list[Path]) -> None:
    code, out, err = run("bill", "--format", "json")
    assert code == 0, err
    found = json.loads(out)
    by_path = as_json("bill", *map(str, logs))
    assert summary(found) == summary(by_path) and found == by_path
    assert len(found["runs"][0]["sessions"]) == 6
    assert err.splitlines() == [
        "kcost: read 2 sessions from ~/.kimi/sessions (kimi-cli)",
        "kcost: read 1 session from ~/.kimi-code/sessions (kimi-code)",
        "kcost: read 1 session from ~/.codex/sessions (codex)",
        "kcost: read 1 session from ~/claude-work/projects (claude-code)",
        "kcost: read 1 session from ~/claude-personal/projects (claude-code)",
    ]  # the Kimi Code session's state.json is none of its logs: not offered, not passed over


def test_no_path_groups_by_agent_and_project(logs: list[Path]) -> None:
    rows = as_json("bill", "--by", "agent")["rows"]
    assert {r["group"]: r["sessions"] for r in rows} == {"kimi-cli": 2, "kimi-code": 1, "codex": 1,
                                                         "claude-code": 2}  # fmt: skip
    assert all(r["agents"] == [r["group"]] for r in rows)
    projects = {r["group"]: r["agents"] for r in as_json("bill", "--by", "project")["rows"]}
    assert projects[KIMI_WORK_DIR] == ["kimi-cli"]  # from kimi.json, by the bucket's hash
    assert projects["/home/marco/projects/spotter"] == ["claude-code"]  # the log's cwd
    assert projects["/tmp/work"] == ["kimi-code"]  # the wire's config.update
    assert projects["no project"] == ["codex"]  # no cwd in this rollout (its day folder `13` names no project)
    assert projects["-home-u-alpha"] == ["claude-code"]  # no cwd in this log: Claude Code's project folder


def test_explain_compare_and_check_with_no_path(logs: list[Path]) -> None:
    for command in (["explain"], ["compare"]):
        code, out, err = run(*command, "--format", "json")
        assert code == 0, err
        assert json.loads(out) == as_json(*command, *map(str, logs))
        assert len(err.splitlines()) == len(logs) and err.startswith("kcost: read 2 sessions from ~/.kimi/sessions")
    code, out, err = run("check", "--max-total-usd", "100", "--format", "json")
    assert code == 0, err
    # by path, a check will not pass over Kimi Code's state.json: the wire named instead of its folder
    wire = logs[1] / "wd-1a2b3c" / "session-1" / "agents" / "main" / "wire.jsonl"
    paths = [str(p) for p in (logs[0], wire, *logs[2:])]
    assert json.loads(out) == as_json("check", "--max-total-usd", "100", *paths)
    code, _, _ = run("check", "--max-total-usd", "0.0001")
    assert code == 1


def test_an_empty_home_is_one_line_naming_the_places_looked(home: Path) -> None:
    for command in (["bill"], ["explain"], ["compare"], ["check", "--max-total-usd", "1"]):
        code, out, err = run(*command)
        assert code == 2 and not out
        assert err.count("\n") == 1 and err.startswith("kcost: error: no agent logs found in "), err
        for place in ("~/.kimi/sessions", "~/.kimi-code/sessions", "~/.codex/sessions", "~/.codex/archived_sessions",
                      "~/.config/claude/projects", "~/.claude/projects"):  # fmt: skip
            assert place in err
    (home / ".codex" / "sessions").mkdir(parents=True)  # a log folder with no log in it
    code, _, err = run("bill")
    assert code == 2 and err.count("\n") == 1 and "no agent logs found" in err


def test_a_home_holding_nothing_readable_is_named_with_why_under_verbose(home: Path) -> None:
    """A log folder that exists but gives no session is named under `--verbose` with why (no log files in it; each
    file passed over, the first named); without it, only the folders read are told of."""
    claude(home / ".claude", "-home-u-alpha", "ccusage-chat-alpha.jsonl")
    (home / ".codex" / "sessions" / "2026").mkdir(parents=True)  # a home with no log in it
    chats = home / ".qwen" / "projects" / "demo" / "chats"
    chats.mkdir(parents=True)
    (chats / "notes.jsonl").write_text('{"todo": "not a chat record"}\n')  # a file of no format kcost reads
    code, _, err = run("bill", "--verbose", "--format", "json")
    assert code == 0, err
    told = err.splitlines()
    assert "kcost: nothing read from ~/.codex/sessions (codex): no log files in it (named *.jsonl)" in told
    assert ("kcost: nothing read from ~/.qwen/projects (qwen-code): 1 file(s) passed over, the first "
            "demo/chats/notes.jsonl: of no format kcost reads") in told, err  # fmt: skip
    assert "kcost: read 1 session from ~/.claude/projects (claude-code)" in told
    code, _, err = run("bill", "--format", "json")
    assert code == 0 and "nothing read" not in err and "read 1 session from ~/.claude/projects" in err, err


def test_the_variables_move_each_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude(home / ".claude", "at-home", "spotter-short.jsonl")  # each default home holds a log...
    codex(home / ".codex")
    kimi_cli(home / ".kimi")
    kimi_code(home / ".kimi-code")
    moved = home / "moved"  # ... and each variable names another place, which replaces it
    claude(moved / "claude", "moved", "ccusage-chat-alpha.jsonl")
    codex(moved / "codex", "archived_sessions")  # Codex's archived rollouts are read too
    kimi_cli(moved / "kimi")
    kimi_code(moved / "kimi-code")
    for name, folder in (("CLAUDE_CONFIG_DIR", "claude"), ("CODEX_HOME", "codex"), ("KIMI_SHARE_DIR", "kimi"),
                         ("KIMI_CODE_HOME", "kimi-code")):  # fmt: skip
        monkeypatch.setenv(name, str(moved / folder))
    code, out, err = run("bill", "--format", "json")
    assert code == 0, err
    sources = [s["source"] for s in json.loads(out)["runs"][0]["sessions"]]
    assert sources and all(s.startswith(str(moved)) for s in sources), sources
    assert err.splitlines() == [
        "kcost: read 2 sessions from ~/moved/kimi/sessions (kimi-cli)",
        "kcost: read 1 session from ~/moved/kimi-code/sessions (kimi-code)",
        "kcost: read 1 session from ~/moved/codex/archived_sessions (codex)",
        "kcost: read 1 session from ~/moved/claude/projects (claude-code)",
    ]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved / "claude" / "projects"))  # the projects folder itself
    monkeypatch.setenv("CODEX_HOME", "")  # empty: unset, as Codex takes it
    _, _, err = run("bill", "--input-format", "claude-code")
    assert err.splitlines() == ["kcost: read 1 session from ~/moved/claude/projects (claude-code)"]
    _, _, err = run("bill", "--input-format", "codex")
    assert err.splitlines() == ["kcost: read 1 session from ~/.codex/sessions (codex)"]


def test_both_claude_code_homes_are_read_and_a_session_in_both_counted_once(home: Path) -> None:
    claude(home / ".claude", "p", "spotter-short.jsonl")
    claude(home / ".claude", "p", "ccusage-chat-alpha.jsonl")
    copy = claude(home / ".config" / "claude", "p", "ccusage-chat-alpha.jsonl")  # the same session, moved
    code, out, err = run("bill", "--format", "json")
    assert code == 0, err
    assert err.splitlines() == [
        "kcost: read 1 session from ~/.config/claude/projects (claude-code)",
        "kcost: read 1 session from ~/.claude/projects (claude-code)",
    ]  # the Claude Code reader joins the copies (one sessionId) into one session, each response billed once
    sessions = json.loads(out)["runs"][0]["sessions"]
    spotter = home / ".claude" / "projects" / "p" / "spotter-short.jsonl"
    assert [s["source"] for s in sessions] == [str(copy), str(spotter)]
    assert "read from 2 files of one session" in sessions[0]["notes"]
    assert len(sessions[0]["turns"]) == 3  # the copy's three calls, once


def test_a_format_reads_only_its_homes(logs: list[Path]) -> None:
    code, out, err = run("bill", "--input-format", "codex", "--format", "json")
    assert code == 0, err
    assert err.splitlines() == ["kcost: read 1 session from ~/.codex/sessions (codex)"]
    assert json.loads(out) == as_json("bill", "--input-format", "codex", str(logs[2]))
    for fmt in ("kimi-api", "yaml"):  # formats no agent keeps in a home of its own
        code, _, err = run("bill", "--input-format", fmt)
        assert code == 2 and err.count("\n") == 1 and "give a session file or folder" in err, err


def test_sessions_carry_their_agent_and_project(logs: list[Path]) -> None:
    from kcost import api
    from kcost.api.settings import Settings

    told: list[str] = []
    found = api.sessions([], Settings(), told.append)
    assert [(s.agent, s.project) for s in found] == [
        ("kimi-cli", KIMI_WORK_DIR), ("kimi-cli", KIMI_WORK_DIR), ("kimi-code", "/tmp/work"), ("codex", None),
        ("claude-code", "/home/marco/projects/spotter"), ("claude-code", "-home-u-alpha"),  # its project folder
    ]  # fmt: skip
    assert len(told) == len(logs)
    (spec,) = api.read(ROOT / "sample_sessions" / "coding-400k.yaml")
    assert spec.agent == "turn spec" and spec.project is None


def test_the_homes_module_names_no_reader() -> None:
    """Each reader brings its home on its registry line: the code that finds and reads homes names no format."""
    from kcost.readers.registry import NAMES, TURN_FORMATS

    tree = ast.parse((ROOT / "kcost" / "readers" / "homes.py").read_text())
    named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not named & (set(NAMES) | set(TURN_FORMATS))


def test_a_walk_holds_no_logs_bytes_and_a_released_file_is_read_again(tmp_path: Path) -> None:
    """A folder walk keeps what it found of each log (its format, its size), not its bytes: each is read again
    where it is read (a worker process, or here); the bills are those of the files as given one by one."""
    from kcost.readers import discover
    from kcost.readers.source import Source, open_source

    logs = sorted((FIXTURES / "claude-code").glob("*.jsonl"))[:3]
    for log in logs:
        shutil.copy(log, tmp_path / log.name)
    found = discover.Found()
    units = list(discover._units(str(tmp_path), "auto", found, discover._Readers()))
    assert [Path(u.name).name for _, u in units] == [p.name for p in logs]
    for (_, unit), log in zip(units, logs, strict=True):
        assert isinstance(unit, Source) and unit._data is None and unit.size == len(log.read_bytes())
        assert unit.data == log.read_bytes() and unit.first_record == open_source(str(log)).first_record
    assert as_json("bill", str(tmp_path))["runs"][0]["total"] == as_json("bill", *map(str, logs))["runs"][0]["total"]
    # a released file cut to nothing is said as such when it is asked for again; stdin and bytes given (not read
    # whole from the file) are never let go
    (tmp_path / logs[0].name).write_bytes(b"  \n")
    units[0][1].release()
    with pytest.raises(InputError, match="is empty"):
        _ = units[0][1].data
    for given in (Source("-", b'{"turns": []}'), Source(str(tmp_path / logs[1].name), b'{"turns": []}')):
        given.release()  # stdin, or bytes not read whole from the file named: held
        assert given.data == b'{"turns": []}'


def _looked(source: Any) -> tuple[Any, ...]:
    """What detection asks of a source, or the error it meets."""
    try:
        return source.size, source.lead(), source.first_line(), source.first_record, source.sniff()
    except InputError as exc:
        return ("error", str(exc))


def _inputs() -> list[Path]:
    shared = ROOT.parent / "shared"
    found = [*FIXTURES.rglob("*"), *(ROOT / "sample_sessions").rglob("*")]
    if shared.is_dir():
        found += [p for p in (shared / "samples").rglob("*") if p.suffix in (".jsonl", ".json", ".yaml")]
    return sorted(p for p in found if p.is_file() and p.stat().st_size < 4 * 2**20)


@pytest.mark.parametrize("head", [1, 7, 64, 4096, None])
def test_a_peeked_file_is_looked_at_as_the_file_read_whole(head: int | None, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:  # fmt: skip
    """A walk reads only a log's head to know its format (`peek_source`): whatever the head's length, detection
    sees what it sees of the file read whole (its size, first byte, first line and record, its sniffed format, or
    the same error), for every fixture and sample and for files built at the head's edges."""
    from kcost.readers import source as sources

    if head is not None:
        monkeypatch.setattr(sources, "HEAD_BYTES", head)
    built = {
        "bom.jsonl": b"\xef\xbb\xbf" + b'{"type": "user"}\n' * 3,
        "blank-first.jsonl": b"\n" * 70 + b' {"a": 1}\n{"b": 2}\n',
        "spaces.jsonl": b" " * 5000 + b"\n",
        "spaces-then-json.json": b" " * 5000 + b'{"turns": []}',
        "long-first.jsonl": b'{"text": "' + b"x" * 9000 + b'"}\n{"b": 2}\n',
        "broken-first.jsonl": b'{"text": "' + b"x" * 90 + b'\n{"b": 2}\n',
        "one-document.json": b'{\n  "turns": [\n    {"new": 10}\n  ]\n}\n',
        "not-json.yaml": b"turns:\n  - new: 10\n",
    }
    for name, data in built.items():
        (tmp_path / name).write_bytes(data)
    inputs = [*_inputs(), *sorted(tmp_path.iterdir())]
    assert len(inputs) > 50
    for path in inputs:
        try:
            whole: Any = sources.open_source(str(path))
        except InputError as exc:
            with pytest.raises(InputError) as peeked:
                sources.peek_source(str(path))
            assert str(peeked.value) == str(exc), path
            continue
        assert _looked(sources.peek_source(str(path))) == _looked(whole), path
        peeked_source = sources.peek_source(str(path))
        assert peeked_source.data == whole.data and peeked_source.size == whole.size, path


def test_a_walk_reads_no_log_whole_whose_first_line_fits_its_head(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A walk over a folder of large logs reads each one's head, not the whole file; the bill reads their records
    a piece at a time, never the whole file at once (and bills as before)."""
    from kcost.readers import discover, source

    log = (FIXTURES / "claude-code").glob("*.jsonl").__next__().read_bytes()
    for n in range(3):
        (tmp_path / f"s{n}.jsonl").write_bytes(log * 200)
    whole_reads: list[str] = []
    read_file = source._read_file
    monkeypatch.setattr(source, "_read_file", lambda path, name: whole_reads.append(path) or read_file(path, name))
    units = list(discover._units(str(tmp_path), "auto", discover.Found(), discover._Readers()))
    assert [kind for kind, _ in units] == ["claude-code"] * 3 and whole_reads == []
    assert [u.size for _, u in units] == [len(log) * 200] * 3
    turns = as_json("bill", str(tmp_path), "--usage", "reported")["runs"][0]["total"]["turns"]
    assert turns == as_json("bill", str(tmp_path / "s0.jsonl"), "--usage", "reported")["runs"][0]["total"]["turns"] > 0
    assert whole_reads == []
