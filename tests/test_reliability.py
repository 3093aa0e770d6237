"""Nothing lost, nothing hangs, nothing lies: each class an independent fuzzing found, through the public command,
with its exit code, its one error line, and no file written or changed."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from tests.conftest import ROOT, SAMPLES

LESSON = str(SAMPLES / "coding-400k.yaml")


def run(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    return result.exit_code, result.output


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under `folder` by its content: what a failed run must leave as it found it."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def one_error(code: int, out: str, *words: str) -> None:
    assert code == 2, out
    assert out.count("\n") == 1 and out.startswith("kcost: error: ") and "Traceback" not in out, out
    for word in words:
        assert word in out, out


def price_file(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """The shipped table as a --prices file, edited: the kimi-k3 model's latest period handed to `edit`."""
    table = json.loads(run("prices", "--format", "json")[1])
    kimi = next(m for p in table["providers"] for m in p["models"] if m["id"] == "kimi-k3")
    edit(kimi)
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(table))
    return path


# 1. negative money from a price file


def test_a_write_below_a_miss_is_refused(tmp_path: Path) -> None:
    def cheap_writes(model: dict) -> None:  # type: ignore[type-arg]
        model["prices"][-1]["cache_write_5m"] = "1.00"  # a miss is 3.00

    path = price_file(tmp_path, cheap_writes)
    before = fingerprint(tmp_path)
    code, out = run("bill", LESSON, "--prices", str(path), "-o", str(tmp_path / "bill.json"))
    one_error(code, out, "cache_write_5m", "costs less than a miss", "write_discount")
    assert fingerprint(tmp_path) == before


def test_a_declared_write_discount_is_billed_and_shown_as_one(tmp_path: Path) -> None:
    def discount(model: dict) -> None:  # type: ignore[type-arg]
        model["prices"][-1]["cache_write_5m"] = "1.00"
        model["prices"][-1]["write_discount"] = True

    path = price_file(tmp_path, discount)
    code, out = run("bill", LESSON, "--prices", str(path), "--format", "json")
    assert code == 0, out
    total = json.loads(out)["runs"][0]["total"]
    assert float(total["write_premium"]) < 0  # the discount, stated
    from decimal import Decimal

    assert Decimal(total["total"]) == Decimal(total["hit_cost"]) + Decimal(total["miss_cost"]) + Decimal(
        total["write_premium"]) + Decimal(total["output_cost"])  # fmt: skip
    _, table = run("bill", LESSON, "--prices", str(path), "--color", "never")
    assert "write discount" in table


def test_tiers_out_of_order_are_refused(tmp_path: Path) -> None:
    def tiers(model: dict) -> None:  # type: ignore[type-arg]
        model["prices"][-1]["tiers"] = {"input_cache_miss": [{"from_tokens": 200000, "rate": "6"},
                                                             {"from_tokens": 100000, "rate": "4"}]}  # fmt: skip

    path = price_file(tmp_path, tiers)
    one_error(*run("bill", LESSON, "--prices", str(path)), "tiers", "growing prompt sizes")


# 2. a regular expression that backtracks


def test_a_catastrophic_regex_is_refused_at_load_and_fast(tmp_path: Path) -> None:
    def clause(model: dict) -> None:  # type: ignore[type-arg]
        model["match"] = {"or": [{"equals": "kimi-k3"}, {"regex": "^(a|aa)+$"}]}

    path = price_file(tmp_path, clause)
    started = time.monotonic()
    one_error(*run("bill", LESSON, "--prices", str(path), "--model", "a" * 40 + "!"), "regex", "exponential")
    assert time.monotonic() - started < 30  # refused, not run (a catastrophic match takes minutes)


def test_every_shipped_regex_is_of_the_safe_kind() -> None:
    from kcost.results.prices import backtracks

    shipped = json.loads(run("prices", "--format", "json")[1])

    def regexes(clause: object) -> list[str]:
        if isinstance(clause, dict):
            return [v for k, v in clause.items() if k == "regex"] + [r for v in clause.values() for r in regexes(v)]
        return [r for c in clause for r in regexes(c)] if isinstance(clause, list) else []

    found = [r for p in shipped["providers"] for m in p["models"] for r in regexes(m["match"])]
    assert found and not [r for r in found if backtracks(r)]


# 3. a trace session id that is a lone surrogate


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_a_lone_surrogate_session_id_routes(tmp_path: Path, engine: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"time": t, "input_tokens": 1200, "output_tokens": 10, "blocks": [1, 2, 3],
                                         "session": "\ud800"}) + "\n" for t in (0, 1, 2)))  # fmt: skip
    code, out = run("trace", str(trace), "--clusters", "3", "--engine", engine, "--format", "json")
    assert code == 0, out
    assert json.loads(out)["curve"][0]["requests"] == 3


# 4. special files


@pytest.mark.parametrize("option", ["--prices", "--baseline", "--tokenizer"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_file_as_a_file_option_is_refused(tmp_path: Path, option: str, special: str) -> None:
    import os

    path = str(tmp_path / "fifo") if special == "fifo" else special
    if special == "fifo":
        os.mkfifo(path)
    args = ["check", LESSON, "--max-session-usd", "100"] if option == "--baseline" else ["bill", LESSON]
    started = time.monotonic()
    one_error(*run(*args, option, path, "--usage", "simulated"), "not a regular file")
    assert time.monotonic() - started < 30  # refused at once, not read


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_file_as_a_trace_is_refused(tmp_path: Path, special: str) -> None:
    import os

    path = str(tmp_path / "fifo") if special == "fifo" else special
    if special == "fifo":
        os.mkfifo(path)
    one_error(*run("trace", path), "not a regular file", "trace")


@pytest.mark.parametrize("name", ["kcost.toml", "pyproject.toml"])
def test_a_config_that_is_no_regular_file_is_named(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / name).symlink_to("/dev/zero")
    monkeypatch.chdir(tmp_path)
    one_error(*run("bill", LESSON), name, "not a regular file")


# 9. output written onto an input


def test_an_output_onto_an_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    import shutil

    spec = tmp_path / "s.yaml"
    shutil.copy(LESSON, spec)
    (tmp_path / "link.yaml").symlink_to(spec)
    before = fingerprint(tmp_path)
    for target in (spec, tmp_path / "link.yaml"):
        one_error(*run("bill", str(spec), "-o", str(target)), "would overwrite a file this run read")
    trace = tmp_path / "t.svg"
    shutil.copy(ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl", trace)
    before = fingerprint(tmp_path)
    one_error(*run("trace", str(trace), "--plot", str(trace)), "would overwrite a file this run read")
    assert fingerprint(tmp_path) == before


# 5. --scheduler pointed at a service that is not Dask


@pytest.mark.parametrize("speaks", ["first", "when spoken to"])
def test_a_scheduler_that_is_no_dask_is_one_line(speaks: str) -> None:
    pytest.importorskip("distributed")
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:  # bounded: a few connections, then it stops by itself
        server.settimeout(0.5)
        for _ in range(40):
            if stop.is_set():
                break
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    if speaks == "first":
                        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                    conn.recv(1024)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
                except OSError:
                    pass
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        trace = str(ROOT / "tests" / "fixtures" / "traces" / "synthetic-400.jsonl")
        started = time.monotonic()
        one_error(*run("trace", trace, "--scheduler", f"tcp://127.0.0.1:{port}"), "--scheduler", "Dask scheduler")
        assert time.monotonic() - started < 60
    finally:
        stop.set()
        thread.join(timeout=25)


# 6. bills read back are held to kcost's invariants


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["runs"][0]["total"].update(total="-984.85"), "not the sum of its sessions"),
        (lambda d: d["runs"][0]["sessions"][0]["summary"].update(total="-1"), "cannot be negative"),
        (lambda d: d["runs"][0]["sessions"][0]["turns"][0].update(total="99"), "not the sum of its turns"),
    ],  # fmt: skip
)
def test_a_bill_read_back_that_breaks_an_invariant_is_named(tmp_path: Path, edit, said: str) -> None:  # type: ignore[no-untyped-def]
    code, out = run("bill", str(SAMPLES), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc, indent=2))
    good = tmp_path / "good.json"
    good.write_text(out)
    one_error(*run("diff", str(bad), str(good)), said, str(bad))
    one_error(*run("check", str(SAMPLES), "--baseline", str(bad), "--max-increase", "0%"), said)
    assert run("diff", str(good), str(good))[0] == 0


# 10. terminal escapes from a log; 12. markdown passing HTML through; two equal figures in a trace error


def test_a_logs_escape_sequences_never_reach_the_terminal(tmp_path: Path) -> None:
    spec = tmp_path / "evil.yaml"
    spec.write_text('name: "evil \\e]0;pwned\\a \\e[2J"\nturns:\n  - {new: 100, label: "\\e[31mred"}\n')
    _, out = run("bill", str(spec), "--color", "never")
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;pwned\\x07" in out
    bad = tmp_path / "model.yaml"
    bad.write_text('model: "kimi-k3\\e[2J"\nturns:\n  - {new: 100}\n')
    code, err = run("bill", str(bad))
    one_error(code, err, "\\x1b[2J")
    assert "\x1b" not in err


def test_markdown_escapes_what_could_open_a_tag(tmp_path: Path) -> None:
    spec = tmp_path / "evil.yaml"
    spec.write_text('name: "<img src=x onerror=alert(1)> | pipe"\nturns:\n  - {new: 100}\n')
    for command in (("bill",), ("explain",), ("compare",)):
        _, out = run(*command, str(spec), "--format", "markdown")
        assert "<img" not in out and "&lt;img" in out, command


def test_a_trace_going_back_in_time_names_two_different_times(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"time": 30.0000001, "input_tokens": 600, "output_tokens": 1, "blocks": [1, 2]}\n'
                     '{"time": 30.00000001, "input_tokens": 600, "output_tokens": 1, "blocks": [1, 2]}\n')  # fmt: skip
    for engine in ("auto", "python"):
        code, out = run("trace", str(trace), "--engine", engine)
        one_error(code, out, "goes back in time (30 s after 30.0000001 s)")


# 12. memory that grows with the longest trace line


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_a_trace_line_past_the_limit_is_named_and_one_at_it_read(tmp_path: Path, engine: str) -> None:
    from kcost.fleet.requests import MAX_LINE_BYTES

    request = '{"time": 0, "input_tokens": 600, "output_tokens": 1, "blocks": [1, 2]}'
    at = request + " " * (MAX_LINE_BYTES - len(request))
    trace = tmp_path / "t.jsonl"
    trace.write_text(f"{request}\n{at}\n")
    code, out = run("trace", str(trace), "--engine", engine, "--format", "json")
    assert code == 0, out[:300]
    assert json.loads(out)["curve"][0]["requests"] == 2
    for past in (at + " ", " " * (MAX_LINE_BYTES + 1)):  # a request, and a run of blanks that would be skipped
        trace.write_text(f"{request}\n{past}\n")
        before = fingerprint(tmp_path)
        said = f"t.jsonl:2: line is longer than {MAX_LINE_BYTES:,} bytes"
        one_error(*run("trace", str(trace), "--engine", engine), said)
        assert fingerprint(tmp_path) == before


# 12. a SIGINT to the parent of a --workers run alone


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (Linux's /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # not a process, or one that ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds worker processes through Linux's /proc")
def test_a_sigint_to_the_parent_alone_ends_a_workers_run_at_once(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    trace = tmp_path / "t.jsonl"  # some ten seconds of work for the Python engine, far more than the test needs
    with trace.open("w") as fh:
        for n in range(150_000):
            blocks = [n % 97, *range(10**6 + n * 3, 10**6 + n * 3 + 3)]
            fh.write(json.dumps({"time": n / 10, "input_tokens": 2048, "output_tokens": 5, "blocks": blocks,
                                 "session": f"s{n % 97}"}) + "\n")  # fmt: skip
    args = ["trace", str(trace), "--clusters", "2", "--workers", "2", "--engine", "python"]
    child = subprocess.Popen([sys.executable, "-m", "kcost", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(workers := children(child.pid)) < 2 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # into the replay
        assert child.poll() is None and len(workers) == 2, "the run should still be replaying in two workers"
        signalled = time.monotonic()
        child.send_signal(signal.SIGINT)  # the parent only, not its process group
        out, err = child.communicate(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130
    assert took < 5, f"{took:.1f} s after the signal"  # a behaviour bound (it was the replay's remaining time)
    assert out == "" and [line for line in err.splitlines() if line.strip()] == ["kcost: interrupted"]
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()], "a worker was left behind"


# ---- issue 47: a third fuzzing ---------------------------------------------------------------------------------


def test_an_output_onto_a_file_the_run_found_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bill logs -o logs/a.yaml`, `bill -o <a log discovery found>`, `bill -o kcost.toml` (the config it read), a
    price or tokenizer file, a link to any of them: refused before anything is written, the input as it was."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.yaml").write_text((SAMPLES / "growing-chat.yaml").read_text())
    home = tmp_path / "home"
    found = home / ".claude" / "projects" / "p" / "s.jsonl"
    found.parent.mkdir(parents=True)
    found.write_text((ROOT / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl").read_text())
    (tmp_path / "kcost.toml").write_text('cache = "k3"\n')
    prices = price_file(tmp_path, lambda model: None)
    (tmp_path / "link.txt").symlink_to(logs / "a.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    for k in ("CLAUDE_CONFIG_DIR", "KIMI_SHARE_DIR", "KIMI_CODE_HOME", "CODEX_HOME", "OPENCODE_DATA_DIR", "QWEN_HOME",
              "GEMINI_CLI_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):  # fmt: skip
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("KCOST_LEDGER", str(tmp_path.parent / f"{tmp_path.name}.ledger"))  # kcost's own, apart
    before = fingerprint(tmp_path)
    for args, target in [
        (["bill", "logs"], "logs/a.yaml"),
        (["bill", "logs"], "link.txt"),
        (["bill", "logs"], "kcost.toml"),
        (["bill", "logs", "--prices", str(prices)], str(prices)),
        (["bill"], str(found)),
    ]:
        result = CliRunner().invoke(cli, [*args, "-o", target])
        assert result.exit_code == 2, (args, target, result.output)
        assert "would overwrite a file this run read" in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr  # the one line: the homes read are not told of first
        assert fingerprint(tmp_path) == before, (args, target)
    code, _ = run("bill", "logs", "-o", "logs/new.txt")  # a new file beside them is no input
    assert code == 0 and (logs / "new.txt").is_file()


def test_watch_of_a_log_named_twice_ends_and_of_no_file_says_so(tmp_path: Path) -> None:
    """`watch s.json s.json --once` never ended (two looks at one log, one frame awaited for each); a piped
    `watch` of a folder, a FIFO or /dev/zero waited silently forever."""
    import os
    import subprocess
    import sys

    spec = tmp_path / "s.yaml"
    spec.write_text((SAMPLES / "growing-chat.yaml").read_text())
    code, out = run("watch", str(spec), str(spec), "--once")
    assert code == 0 and out.count("s.yaml\n") == 1 and out.count(" · hit ") == 1, out
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (tmp_path, fifo, Path("/dev/zero")):
        done = subprocess.run([sys.executable, "-m", "kcost", "watch", str(target)], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
        assert done.returncode == 2 and done.stderr == f"kcost: error: {target}: not a regular file: give a log's " \
            "path\n", done.stderr  # fmt: skip


def test_a_log_larger_than_the_memory_it_may_use_is_one_line(tmp_path: Path) -> None:
    """A 230 MB log under a 300 MB address space was exit 70 (MemoryError) in `bill` and in the status line: one
    error line (exit 2), one short line (exit 0)."""
    import resource
    import subprocess
    import sys

    line = json.dumps({"request": {"model": "kimi-k3", "messages": [{"role": "user", "content": "x" * 1000}]},
                       "response": {"usage": {"prompt_tokens": 300, "completion_tokens": 5}}}) + "\n"  # fmt: skip
    log = tmp_path / "big.jsonl"
    with log.open("w") as f:
        for _ in range(200):
            f.write(line * 1000)

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))

    for args in (["bill", str(log), "--usage", "reported"], ["bill", str(log)], ["statusline", str(log)]):
        done = subprocess.run([sys.executable, "-m", "kcost", *args], capture_output=True, text=True, timeout=120,
                              preexec_fn=capped, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")})  # fmt: skip
        said = done.stderr if args[0] == "bill" else done.stdout
        assert "Traceback" not in said and "internal error" not in said, said
        assert said.count("\n") == 1 and "memory" in said, said
        assert done.returncode == (2 if args[0] == "bill" else 0), said


def test_the_overviews_markdown_caption_escapes_the_model_it_names(tmp_path: Path) -> None:
    """Found by the harness (seed 604625): `bill --by model --format markdown` named the priced model raw in its
    caption ("cost at kimi-k3<kcostx onerror=alert(1)>`code` name prices"), a tag an input opened."""
    import random

    from tests.fuzz.harness import check_contract
    from tests.fuzz.harness import run as run_fuzzed
    from tests.fuzz.test_contract import terminal_case

    args = terminal_case("spec-model", "<kcostx onerror=alert(1)>`code` name ", tmp_path, random.Random(604625))
    session, prices = args[args.index("--prices") - 1], args[args.index("--prices") + 1]
    result = run_fuzzed(["bill", "--by", "model", session, "--prices", prices, "--format", "markdown"])
    check_contract(result)
    assert result.code == 0 and "kcostx" in result.stdout and "<kcostx" not in result.stdout, result.stdout[:400]
