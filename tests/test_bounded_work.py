"""Bounded work everywhere (issue 47, item 4): inputs an independent fuzzing found to run for ever, exhaust memory or
end in an internal error, each through the command line: now an answer, or one error line and exit 2, in bounded
time.

- `kcost explain` where the cache's TTL is 0 (given, or fitted by `k3:auto` to a log whose idle gaps all missed):
  keep-alive calls were planned every 90% of 0 seconds;
- `kcost selfhost --set` of a figure near 0, or with an exponent of a million places: a division past what the
  report can state (exit 70), or a division that runs for minutes;
- OpenCode: a FIFO named `opencode.db` blocked every read that looked at it; a message of 30,000 parts took time
  quadratic in its parts; a database whose schema is not UTF-8 was exit 70.

A call that could run for ever runs in a process of its own, with a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from tests.readers.test_opencode import build_database, new_session

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"
KIMI_LOG = ROOT / "tests" / "fixtures" / "kimi-cli" / "large-100msgs"
# Where the agents' logs are looked for: unset in a timed call, so discovery sees only the home it is given.
HOMES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "KIMI_CODE_HOME", "KIMI_SHARE_DIR",
         "OPENCODE_DATA_DIR", "QWEN_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")  # fmt: skip


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def timed(*args: str, seconds: float = 15, cwd: Path | None = None, env: dict[str, str] | None = None,
          ) -> tuple[int, str, str, float]:  # fmt: skip
    """The command line in a process of its own, ended after `seconds` (a call that blocks fails the test, not
    the run): its exit code, output, errors and how long it took."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])  # this tree's kcost
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "kcost", *args], capture_output=True, text=True,
                              timeout=seconds, stdin=subprocess.DEVNULL, cwd=cwd or ROOT, env=env)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"kcost {' '.join(args)}: no answer in {seconds} s")
    return done.returncode, done.stdout, done.stderr, time.monotonic() - start


def one_error(code: int, err: str, *named: str) -> None:
    """Exit 2 and one line `kcost: error: ...` naming each of `named`, no traceback."""
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("kcost: error: ") and "Traceback" not in err, err
    for name in named:
        assert name in err, err


def home_env(home: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HOMES}
    return {**env, "HOME": str(home), "KCOST_STATUSLINE_HELPER": "0", **more}


# ---- explain: keep-alive calls at a TTL of 0 -------------------------------------------------------------------


def idle_ways(out: str) -> list[list[str]]:
    """Each session's `idle` fix's ways, as the JSON lists them."""
    return [[w["way"] for w in f["ways"] or []] for e in json.loads(out) for f in e["fixes"] if f["fix"] == "idle"]


@pytest.mark.parametrize("cache", ["k3:ttl=0", "k3:ttl=0.001", "k3:ttl=5"])
def test_a_ttl_no_call_keeps_alive_closes_the_gaps_by_1_hour_writes(cache: str) -> None:
    code, out, _, seconds = timed("explain", "--cache", cache, "--format", "json", str(KIMI_LOG))
    assert code == 0 and seconds < 15
    assert idle_ways(out) == [["1-hour writes"]]  # no keep-alive way: no call keeps a TTL so short alive


def test_keep_alive_calls_are_still_offered_for_a_ttl_of_a_minute() -> None:
    code, out, err = run("explain", "--cache", "k3:ttl=60", "--format", "json", str(SAMPLES / "growing-chat.yaml"))
    assert code == 0, err
    assert ["keep-alive", "1-hour writes"] in idle_ways(out)


@pytest.mark.parametrize("sample", sorted(SAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_sample_explains_at_a_ttl_of_0(sample: Path) -> None:
    code, out, err, seconds = timed("explain", "--cache", "k3:ttl=0", "--format", "json", str(sample))
    assert code == 0 and seconds < 15, err
    assert all(ways == ["1-hour writes"] for ways in idle_ways(out))


def test_k3_auto_fitting_a_ttl_of_0_explains(tmp_path: Path) -> None:
    """A Kimi log whose cached counts are all 0: the fit proves the TTL shorter than every idle gap (ttl=0)."""
    log = tmp_path / "session"
    shutil.copytree(KIMI_LOG, log)
    lines = []
    for line in (log / "wire.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        usage = (record.get("message") or {}).get("payload", {}).get("token_usage")
        if usage:
            usage["input_other"] += usage["input_cache_read"]
            usage["input_cache_read"] = 0
        lines.append(json.dumps(record, ensure_ascii=False))
    (log / "wire.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err, seconds = timed("explain", "--cache", "k3:auto", "--format", "json", str(log))
    assert code == 0 and seconds < 15, err
    assert json.loads(out)[0]["cache"].startswith("k3:hash=512,ttl=0,")  # the case: the fit chose a TTL of 0
    assert idle_ways(out) == [["1-hour writes"]]


# ---- selfhost: overrides checked for the arithmetic they feed --------------------------------------------------

SESSION = str(SAMPLES / "growing-chat.yaml")


@pytest.mark.parametrize(
    ("item", "valid"),
    [
        ("utilization=1e-20", "from 0.0001 to 1"),
        ("active_params=1e-20", "from 1,000,000 to 1,000,000,000,000,000"),
        ("memory_gb=1e-20", "from 1 to 100,000"),
        ("fp8_tflops=1e-20", "from 1 to 1,000,000"),
        ("hbm_tbps=1e-20", "from 0.1 to 10,000"),
        ("hourly=1e-20", "from 0.01 to 1,000"),
        ("kv_bytes_per_token=1e-20", "from 0.000000001 to 1,000,000,000"),
        ("utilization=0." + "1" * 100, "from 0.0001 to 1"),  # too long to be a figure
    ],
)
def test_an_override_near_0_is_one_line_with_the_range(item: str, valid: str) -> None:
    key = item.partition("=")[0]
    code, out, err = run("selfhost", SESSION, "--set", item)
    one_error(code, err, f"--set {key}", valid)
    assert out == ""


@pytest.mark.parametrize("item", ["memory_gb=1e-999990", "utilization=1e-999990", "hourly=1e999990"])
def test_an_exponent_of_a_million_places_is_refused_at_once(item: str) -> None:
    code, out, err, seconds = timed("selfhost", SESSION, "--set", item)
    one_error(code, err, f"--set {item.partition('=')[0]}", "exponent")
    assert out == "" and seconds < 10


def test_figures_that_scale_throughput_past_what_the_report_states_are_refused() -> None:
    """Each within its bounds, together they make an accelerator decode 1e11 tokens a second."""
    code, _, err = run("selfhost", SESSION, "--set", "hbm_tbps=10000", "--set", "decode_per_node=1e9")
    one_error(code, err, "--set hbm_tbps", "decode", "hbm_tbps, decode_per_node")


@pytest.mark.parametrize("item", ["utilization=0.0001", "hourly=0.01", "active_params=1e6", "hbm_tbps=0.1",
                                  "memory_gb=1", "fp8_tflops=1"])  # fmt: skip
def test_the_least_of_each_range_is_a_report(item: str) -> None:
    code, out, err = run("selfhost", SESSION, "--set", item, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["fleet_per_mtok"] is not None


# ---- OpenCode: FIFOs, a message of many parts, a schema not UTF-8 ------------------------------------------------


def fifo_home(tmp_path: Path) -> Path:
    folder = tmp_path / "opencode"
    folder.mkdir()
    os.mkfifo(folder / "opencode.db")
    return folder


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("command", [["bill"], ["check", "--max-total-usd", "100"]])
def test_a_fifo_named_opencode_db_is_one_line_not_a_wait(tmp_path: Path, command: list[str]) -> None:
    folder = fifo_home(tmp_path)
    code, _, err, _ = timed(*command, str(folder), seconds=10)
    one_error(code, err, str(folder / "opencode.db"), "FIFO")
    code, _, err, _ = timed(*command, str(folder / "opencode.db"), seconds=10)
    one_error(code, err, str(folder / "opencode.db"), "not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_discovery_of_a_fifo_named_opencode_db_is_one_line_not_a_wait(tmp_path: Path) -> None:
    folder = fifo_home(tmp_path)
    env = home_env(tmp_path / "home", OPENCODE_DATA_DIR=str(folder))
    code, _, err, _ = timed("bill", seconds=10, cwd=tmp_path, env=env)
    one_error(code, err, str(folder / "opencode.db"), "FIFO")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_beside_a_database_is_passed_over_with_a_note(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    build_database(folder / "opencode.db", [new_session()])
    os.mkfifo(folder / "opencode-beta.db")
    code, out, err, _ = timed("bill", str(folder), "--format", "json", seconds=10)
    assert code == 0, err
    (session,) = json.loads(out)["runs"][0]["sessions"]
    assert f"passed over {folder / 'opencode-beta.db'}: not a regular file (a FIFO)" in session["notes"][0]


def many_parts(path: Path, parts: int) -> Path:
    """A database whose one reply is a message of `parts` text parts, in one step."""
    record, [(user, asked), (reply, replied)] = new_session()
    start, *_, finish = replied
    texts = [{"id": f"prt_{n:09d}", "sessionID": reply["sessionID"], "messageID": reply["id"], "type": "text",
              "text": f"word {n} "} for n in range(parts)]  # fmt: skip
    return build_database(path, [(record, [(user, asked), (reply, [start, *texts, finish])])])


def test_a_message_of_30000_parts_is_billed_in_bounded_time(tmp_path: Path) -> None:
    """Its parts grouped in one pass (32 s before, when each part was checked against the message's others)."""
    folder = tmp_path / "opencode"
    folder.mkdir()
    many_parts(folder / "opencode.db", 30_000)
    code, out, err, seconds = timed("bill", str(folder), "--format", "json", seconds=15)
    assert code == 0, err
    assert seconds < 15
    (session,) = json.loads(out)["runs"][0]["sessions"]
    assert session["summary"]["output_tokens"] == 120


def bad_schema(path: Path) -> Path:
    """A database whose `session` table's schema holds a byte that is not UTF-8 (sqlite reads it; Python cannot
    decode the column's name)."""
    db = build_database(path, [new_session()])
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA writable_schema=ON")
    (sql,) = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'session'").fetchone()
    connection.execute("UPDATE sqlite_master SET sql = CAST(? AS TEXT) WHERE name = 'session'",
                       (sql.encode().replace(b"title text", b"ti\xfftle text"),))  # fmt: skip
    connection.commit()
    connection.close()
    return db


def test_a_database_whose_schema_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    db = bad_schema(folder / "opencode.db")
    for given in (folder, db):
        code, out, err = run("bill", str(given))
        one_error(code, err, str(db), "UTF-8")
        assert out == ""


def test_a_database_sqlite_cannot_read_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    db = folder / "opencode.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    code, _, err = run("bill", str(folder))
    one_error(code, err, str(db), "not an OpenCode database")


def test_a_bad_database_beside_a_good_one_is_passed_over_with_a_note(tmp_path: Path) -> None:
    folder = tmp_path / "opencode"
    folder.mkdir()
    build_database(folder / "opencode.db", [new_session()])
    bad = bad_schema(tmp_path / "bad.db")
    bad.rename(folder / "opencode-beta.db")
    code, out, err = run("bill", str(folder), "--format", "json")
    assert code == 0, err
    sessions: list[Any] = json.loads(out)["runs"][0]["sessions"]
    assert len(sessions) == 1
    assert sessions[0]["notes"][0].startswith(f"passed over {folder / 'opencode-beta.db'}: ")
    assert "not UTF-8" in sessions[0]["notes"][0]


# A log larger than the memory kcost may use (a 1.5 GiB log under a 1.2 GB address space was exit 70): its records
# are read a piece at a time, so what the read holds is a block and the longest line, not the file.
PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.stdout.write(done.stdout)
"""


def _peak(*args: str) -> tuple[int, int, str]:
    """(exit status, peak resident bytes, stdout) of `kcost ARGS` as a process of its own."""
    done = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "kcost", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)  # fmt: skip
    status, peak = done.stdout.splitlines()[0].split()
    return int(status), int(peak), done.stdout.split("\n", 1)[1]


def test_a_log_larger_than_the_memory_used_is_read_a_piece_at_a_time(tmp_path: Path) -> None:
    """A 100 MB Claude Code log (one session's lines written five times over, as a log copied onto itself is) is
    billed as reported in less memory than the log holds, to the same bill as one copy."""
    import random

    from tests.claude_logs import Corpus, write_session

    rng = random.Random(47)
    one = tmp_path / "one" / "7d1c1b4e-5a57-4c3e-9a41-0f3a8c2b9d11.jsonl"
    one.parent.mkdir()
    write_session(one, "/home/dev/spotter", one.stem, 2_100, 1.75e9, rng, Corpus(rng))
    big = tmp_path / "big" / one.name
    big.parent.mkdir()
    big.write_bytes(one.read_bytes() * 5)
    size = big.stat().st_size
    assert size > 90_000_000
    status, peak, out = _peak("bill", str(big), "--usage", "reported", "--format", "json")
    assert status == 0, out
    assert peak < size * 0.8, f"peak {peak:,} bytes for a log of {size:,}"
    billed = json.loads(out)["runs"][0]["total"]
    code, alone, err = run("bill", str(one), "--usage", "reported", "--format", "json")
    assert code == 0 and billed == json.loads(alone)["runs"][0]["total"], err


def test_a_fifo_named_as_a_file_beside_a_log_is_never_opened(tmp_path: Path) -> None:
    """Files a reader looks at beside a log (Gemini CLI's `.project_root`, Grok's `summary.json`) go through the one
    opener: a FIFO named so is passed over, not waited on."""
    fixtures = ROOT / "tests" / "fixtures"
    chats = tmp_path / "gemini" / "tmp" / "abc" / "chats"
    chats.mkdir(parents=True)
    log = chats / "session-2026-01-10T09-30-5f0c2f3e.jsonl"
    log.write_bytes((fixtures / "gemini-cli" / log.name).read_bytes())
    os.mkfifo(chats.parent / ".project_root")
    grok = next((fixtures / "grok" / "home").rglob("updates.jsonl"))
    session = tmp_path / "grok" / grok.parent.name
    shutil.copytree(grok.parent, session)
    (session / "summary.json").unlink(missing_ok=True)
    os.mkfifo(session / "summary.json")
    for path in (log, session / "updates.jsonl"):
        code, out, err, _ = timed("bill", str(path), "--by", "project", "--format", "json")
        assert code == 0 and json.loads(out)["rows"], err


def test_bare_kcost_where_a_home_cannot_be_looked_at_is_one_line(tmp_path: Path) -> None:
    """Bare `kcost` with an agent's variable naming a folder the system refuses (a name too long): the bill's one
    error line, no traceback."""
    home = tmp_path / "home"
    home.mkdir()
    code, _, err, _ = timed(env=home_env(home, AMP_DATA_DIR=str(tmp_path / ("a" * 300))))
    assert "Traceback" not in err
    if code == 2:
        one_error(code, err)
    else:
        assert code == 0, err
