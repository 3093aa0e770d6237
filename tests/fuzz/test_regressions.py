"""A minimal reproducer for every class of failure fuzzing found (issue: zero tracebacks), each held to the
contract: one clear line and exit 2 (or a right bill), nothing written on error, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.harness import FIXTURES, SAMPLES, check_contract, run

SPEC = str(SAMPLES / "growing-chat.yaml")
TRACE = str(FIXTURES / "traces" / "synthetic-400.jsonl")
CODEX_TOTALS_DOWN = [
    {"timestamp": "2026-05-13T09:00:00Z", "type": "turn_context", "payload": {"model": "gpt-5"}},
    {"timestamp": "2026-05-13T09:01:00Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 5000, "cached_input_tokens": 0, "output_tokens": 100}}}},
    {"timestamp": "2026-05-13T09:02:00Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 4000, "cached_input_tokens": 0, "output_tokens": 50}}}},
]  # fmt: skip

# (name, files {name: text}, args with {dir}, exit code, what the error line says)
CASES = [
    ("type-is-an-object", {"x.jsonl": '{"type":{},"payload":{}}\n'}, ["bill", "{dir}/x.jsonl"], 2, "not a format"),
    ("type-is-a-list", {"x.jsonl": '{"type":["user"],"uuid":"u","message":{"role":"user"}}\n'},
     ["bill", "{dir}/x.jsonl"], 2, "not a format"),
    ("codex-content-a-number", {"c.jsonl": "\n".join(json.dumps(r) for r in [
        {"timestamp": "2026-05-13T09:00:00Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": 7}},
        {"timestamp": "2026-05-13T09:00:01Z", "type": "response_item", "payload": {"type": "reasoning", "summary": 3}},
        {"timestamp": "2026-05-13T09:01:00Z", "type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": 50, "cached_input_tokens": 0, "output_tokens": 5}}}}]) + "\n"},
     ["bill", "{dir}/c.jsonl", "--format", "json"], 0, None),
    ("model-an-object", {"r.jsonl": json.dumps({"model": {"a": 1}, "messages": [{"role": "user",
                                                "content": [7, {"type": "text", "text": "hi"}]}]}) + "\n"},
     ["bill", "{dir}/r.jsonl", "--format", "json"], 0, None),
    ("codex-totals-go-down", {"c.jsonl": "\n".join(json.dumps(r) for r in CODEX_TOTALS_DOWN) + "\n"},
     ["bill", "{dir}/c.jsonl"], 2, "a running total went down"),
    ("usage-past-any-context", {"r.jsonl": json.dumps({"request": {"model": "kimi-k3", "messages": [
        {"role": "user", "content": "hi"}]}, "response": {"usage": {"prompt_tokens": 10**12}}}) + "\n"},
     ["bill", "{dir}/r.jsonl"], 2, "past any context window"),
    ("created-past-any-date", {"r.jsonl": json.dumps({"request": {"model": "kimi-k3", "messages": [
        {"role": "user", "content": "hi"}]}, "response": {"created": 10**15, "usage": {"prompt_tokens": 10}}}) + "\n"},
     ["bill", "{dir}/r.jsonl"], 2, "not a time"),
    ("cache-hash-absurd", {}, ["bill", SPEC, "--cache", "k3:hash=" + "9" * 5000], 2, "--cache"),
    ("capacity-absurd", {}, ["trace", TRACE, "--capacity", "1e400"], 2, "--capacity"),
    ("trace-tokens-past-the-bound", {"t.jsonl": '{"time": 0, "input_tokens": 1, "output_tokens": 1' + "0" * 30 +
                                     ', "blocks": [1]}\n'}, ["trace", "{dir}/t.jsonl", "--format", "json"], 2,
     "output_tokens: must be at most 1,000,000,000 tokens"),  # fmt: skip
    ("fail-cluster-absurd", {}, ["trace", TRACE, "--clusters", "4", "--fail", "9" * 5000 + "@1-2"], 2, "--fail"),
    ("checkpoint-mb-absurd", {}, ["trace", TRACE, "--checkpoint-mb", "1e308"], 2, "--checkpoint-mb"),
    ("turn-spec-too-many-turns", {"s.yaml": "turns:\n  - {new: 1, repeat: 100000}\n  - {new: 1, repeat: 2}\n"},
     ["bill", "{dir}/s.yaml"], 2, "at most 100,000"),
    ("price-of-a-million-places", {"p.json": json.dumps({"name": "x", "currency": "USD", "effective": "2026-01-01",
        "source": "s", "default_model": "kimi-k3", "models": {"kimi-k3": {"input_cache_hit": "1e-999999",
        "input_cache_miss": "3", "output": "15"}}})},
     ["bill", SPEC, "--prices", "{dir}/p.json"], 2, "decimal places"),
    ("budget-of-a-billion-places", {}, ["check", SPEC, "--max-session-usd", "1e-999999999"], 2, "decimal places"),
    ("lone-surrogate", {"s.json": '{"turns": [{"new": 1, "label": "\\ud800"}]}'}, ["bill", "{dir}/s.json"], 2,
     "surrogate"),
    ("lone-surrogate-jsonl", {"s.jsonl": '{"new": 1, "label": "\\ud800"}\n'}, ["bill", "{dir}/s.jsonl"], 2,
     "surrogate"),
    ("price-name-a-lone-surrogate", {"p.json": json.dumps({"name": "x\ud800", "currency": "USD",
        "effective": "2026-01-01", "source": "s", "default_model": "kimi-k3", "models": {"kimi-k3": {
        "input_cache_hit": "0.3", "input_cache_miss": "3", "output": "15"}}})},
     ["bill", SPEC, "--prices", "{dir}/p.json", "--format", "json"], 2, "surrogate"),
    ("prices-not-utf8", {"p.json": b'{"name": "\xff"}'}, ["bill", SPEC, "--prices", "{dir}/p.json"], 2, "UTF-8"),
    ("toml-not-utf8", {"kcost.toml": b'cache = "\xff"\n'}, ["bill", SPEC], 2, "UTF-8"),
    ("toml-nested-deep", {"kcost.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n"}, ["bill", SPEC], 2, "kcost.toml"),
    ("character-device", {}, ["bill", "/dev/zero"], 2, "not a regular file"),
    ("path-too-long", {}, ["bill", "a" * 5000], 2, "too long"),
    ("output-path-too-long", {}, ["bill", SPEC, "-o", "b" * 5000], 2, "too long"),
    ("explain-under-none", {}, ["explain", SPEC, "--cache", "none", "--format", "json"], 0, None),
    ("check-under-none", {}, ["check", SPEC, "--cache", "none", "--max-session-usd", "5"], 0, None),
    ("scheduler-an-open-bracket", {}, ["trace", TRACE, "--scheduler", "tcp://[:8786"], 2,
     "not a Dask scheduler address"),
    ("scheduler-port-past-65535", {}, ["trace", TRACE, "--scheduler", "tcp://127.0.0.1:99999"], 2,
     "not a Dask scheduler address"),
    ("scheduler-port-0", {}, ["trace", TRACE, "--scheduler", "tcp://localhost:0"], 2, "not a Dask scheduler address"),
    ("duplicate-custom-id", {"o.jsonl": "\n".join([json.dumps({"custom_id": "a", "response": {"status_code": 200,
        "body": {"usage": {"prompt_tokens": 5}}}})] * 2) + "\n"}, ["bill", "{dir}/o.jsonl"], 2, "custom_id"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "files", "args", "code", "says"), CASES, ids=[c[0] for c in CASES])
def test_regression(name: str, files: dict[str, str | bytes], args: list[str], code: int, says: str | None,
                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    for file, text in files.items():
        (tmp_path / file).write_bytes(text if isinstance(text, bytes) else text.encode())
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.json"
    argv = [a.format(dir=tmp_path) for a in args] + (["-o", str(out)] if "-o" not in args else [])
    result = run(argv)
    check_contract(result, verdicts=args[0] == "check", written=out)
    assert result.code == code, result.stderr
    if says:
        assert says in result.stderr, result.stderr


def test_bills_mixing_absolute_and_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLES)
    mixed = tmp_path / "mixed.json"
    run(["bill", "growing-chat.yaml", str(SAMPLES / "edit-early-message.yaml"), "--format", "json", "-o", str(mixed)])
    check_contract(run(["diff", str(mixed), str(mixed), "--format", "json"]))
    check_contract(
        run(["check", "growing-chat.yaml", "--baseline", str(mixed), "--max-increase", "10%"]), verdicts=True
    )


def test_links_and_fifos_in_a_folder_are_said_and_fail_a_check(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(Path(SPEC).read_text())
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    os.mkfifo(tmp_path / "pipe.jsonl")
    result = run(["check", str(tmp_path), "--max-session-usd", "5"])
    assert result.code == 2 and "not a regular file" in result.stderr
    result = run(["bill", str(tmp_path / "pipe.jsonl")])
    assert result.code == 2 and "not a regular file" in result.stderr


def test_times_that_run_backwards_count_no_idle_time(tmp_path: Path) -> None:
    lines = []
    for i, created in enumerate((1_000, 1_030, 900, 1_060)):
        messages = [{"role": "user", "content": "hello there " * 200}] + [{"role": "user", "content": f"q{j}"}
                                                                         for j in range(i)]  # fmt: skip
        response = {"created": 1_776_000_000 + created, "usage": {"prompt_tokens": 800 + 10 * i}}
        lines.append({"request": {"model": "kimi-k3", "messages": messages}, "response": response})
    path = tmp_path / "merged.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = run(["bill", str(path), "--format", "json"])
    (s,) = json.loads(result.stdout)["runs"][0]["sessions"]
    assert all(t["reason"] != "expired" for t in s["turns"])
    assert any("logged earlier than the call before them" in n for n in s["notes"])


def test_nothing_is_left_behind_when_a_second_output_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plot = tmp_path / "curve.svg"
    result = run(["trace", TRACE, "--plot", str(plot), "-o", str(tmp_path / "missing" / "out.json")])
    assert result.code == 2 and not plot.exists()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    report = tmp_path / "report.txt"
    result = run(["check", SPEC, "--max-session-usd", "5", "-o", str(report)])
    assert result.code == 2 and not report.exists()


def test_lenient_skips_bad_records_and_counts_them(tmp_path: Path) -> None:
    """Strict by default; with --lenient, a record whose usage or time is bad is skipped, and the bill says so."""
    codex = tmp_path / "codex.jsonl"
    codex.write_text("\n".join(json.dumps(r) for r in CODEX_TOTALS_DOWN) + "\n")
    assert run(["bill", str(codex)]).code == 2
    result = run(["bill", str(codex), "--lenient", "--format", "json"])
    check_contract(result)
    (s,) = json.loads(result.stdout)["runs"][0]["sessions"]
    assert [t["input_tokens"] for t in s["turns"]] == [5000]  # the total that went down is skipped
    assert any(n.startswith("1 bad record(s) skipped (--lenient)") and "went down" in n for n in s["notes"])

    claude = tmp_path / "claude.jsonl"
    lines = (FIXTURES / "claude-code" / "spotter-short.jsonl").read_text().splitlines()
    claude.write_text("\n".join(line.replace('"input_tokens":3,', '"input_tokens":-3,') for line in lines) + "\n")
    assert run(["bill", str(claude)]).code == 2
    result = run(["bill", str(claude), "--lenient", "--format", "json"])
    check_contract(result)
    (s,) = json.loads(result.stdout)["runs"][0]["sessions"]
    assert s["calls_sized_from_usage"] == 0 and any("--lenient" in n for n in s["notes"])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to run kcost as another user (setpriv)")  # fmt: skip
def test_an_unreadable_folder_is_said_and_fails_a_check_as_a_user() -> None:
    """As a user who may not read a sub-folder (root may read anything: kcost runs as `nobody` here), the folder is
    named, the rest is billed, and a check exits 2."""
    top = Path(tempfile.mkdtemp(prefix="kcost-unreadable-"))
    try:
        top.chmod(0o755)
        (top / "logs" / "private").mkdir(parents=True)
        shutil.copy(FIXTURES / "claude-code" / "spotter-short.jsonl", top / "logs" / "a.jsonl")
        shutil.copy(FIXTURES / "claude-code" / "spotter-short.jsonl", top / "logs" / "private" / "b.jsonl")
        for path in (top / "logs", top / "logs" / "a.jsonl"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        (top / "logs" / "private").chmod(0)
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "kcost"]
        if subprocess.run([*as_nobody, "--version"], capture_output=True, cwd=top).returncode:
            pytest.skip("kcost's install is not readable by another user here")
        bill = subprocess.run([*as_nobody, "bill", str(top / "logs"), "--format", "json"], capture_output=True,
                              text=True, cwd=top)  # fmt: skip
        assert bill.returncode == 0, bill.stderr
        assert f"{top / 'logs' / 'private'}: cannot read this folder" in bill.stderr
        assert len(json.loads(bill.stdout)["runs"][0]["sessions"]) == 1
        check = subprocess.run([*as_nobody, "check", str(top / "logs"), "--max-session-usd", "100"],
                               capture_output=True, text=True, cwd=top)  # fmt: skip
        assert check.returncode == 2 and "Traceback" not in check.stderr
        assert check.stderr.count("kcost: error:") == 1 and "cannot read this folder" in check.stderr
    finally:
        (top / "logs" / "private").chmod(0o755)
        shutil.rmtree(top)


# ---- what the generators of issue 20 (special files, price files, bills, schedulers, terminal text) found ----


def _bill_edited(tmp_path: Path, edit: Any) -> tuple[Path, Path]:
    good = tmp_path / "good.json"
    run(["bill", str(SAMPLES), "--format", "json", "-o", str(good)])
    doc = json.loads(good.read_text())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc, indent=2))
    return bad, good


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: _shift(d["runs"][0], 0, 0, "output_cost", "-0.5"), "turns.0.output_cost: money cannot be negative"),
        (lambda d: d["runs"][0]["total"].update(hit_cost="-0.01"), "runs.0.total.hit_cost: money cannot be negative"),
        (lambda d: d["runs"][0]["total"].update(input_tokens=0), "do not add up to input_tokens"),
        (lambda d: d["runs"][0]["sessions"][0]["summary"].update(miss_tokens=-1), "tokens cannot be negative"),
        (lambda d: d["runs"][0]["sessions"][2]["summary"].update(hit_rate=1.5), "hit_rate: a hit rate is a share"),
        (lambda d: _shift(d["runs"][0], 0, 0, "total", "0.5"), "turns.0.total: the total is not the sum of hit_cost"),
    ],
    ids=["turn-money-negative", "run-money-negative", "run-tokens", "summary-tokens", "hit-rate", "turn-parts"],
)
def test_a_bill_read_back_is_held_at_every_level(tmp_path: Path, edit: Any, said: str) -> None:
    """Every turn's, session's and run's figures of a bill read back, not only the sessions' totals: a bill whose
    totals still add up but whose parts are negative, or do not make their total, is named, not compared."""
    bad, good = _bill_edited(tmp_path, edit)
    check = ["check", str(SAMPLES), "--baseline", str(bad), "--max-increase", "0%"]
    for args in (["diff", str(bad), str(good)], check):
        result = run(args)
        check_contract(result, verdicts=True)
        assert result.code == 2 and said in result.stderr and str(bad) in result.stderr, result.stderr


def _shift(run_: dict[str, Any], session: int, turn: int, key: str, delta: str) -> None:
    """A turn's `key` moved by `delta`, with every total above the turn moved alike (so only the turn is wrong)."""
    s = run_["sessions"][session]
    t = s["turns"][turn]
    t[key] = str(Decimal(t[key]) + Decimal(delta))
    for holder in ({"total": None} if key == "total" else t, s["summary"], run_["total"]):
        if "total" in holder and holder["total"] is not None:
            holder["total"] = str(Decimal(holder["total"]) + Decimal(delta))


def test_a_tiered_write_below_the_miss_is_refused(tmp_path: Path) -> None:
    """A write rate that only a tier lowers below the miss (from 0 tokens, or past a prompt size): the premium
    would be a silent negative on the prompts the tier prices."""
    table = json.loads(run(["prices", "--format", "json"]).stdout)
    kimi = next(m for p in table["providers"] for m in p["models"] if m["id"] == "kimi-k3")
    kimi["prices"][-1]["tiers"] = {"cache_write_1h": [{"from_tokens": 0, "rate": "0.5"}]}
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(table))
    out = tmp_path / "out.json"
    result = run(["bill", SPEC, "--prices", str(prices), "--format", "json", "-o", str(out)])
    check_contract(result, written=out)
    assert result.code == 2 and "tiers.cache_write_1h: a write at 0.5 costs less than a miss at 3" in result.stderr
    kimi["prices"][-1]["tiers"] = {"input_cache_miss": [{"from_tokens": 1000, "rate": "9"}]}  # past both writes (3, 6)
    prices.write_text(json.dumps(table))
    result = run(["bill", SPEC, "--prices", str(prices)])
    assert result.code == 2 and "costs less than a miss at 9 on prompts of 1,000 tokens or more" in result.stderr


@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 6000 + "a" + ")" * 6000])
def test_a_regex_past_what_re_takes_is_one_line(tmp_path: Path, pattern: str) -> None:
    table = json.loads(run(["prices", "--format", "json"]).stdout)
    table["providers"][0]["models"][0]["match"] = {"regex": pattern}
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(table))
    result = run(["bill", SPEC, "--prices", str(prices)])
    check_contract(result)
    assert result.code == 2 and "past what Python's re takes" in result.stderr, result.stderr


def test_a_regex_of_many_free_repeats_is_refused_and_fast(tmp_path: Path) -> None:
    """`^[a-z]*[a-z]*...!` has no repeated group, yet takes minutes on 80 a's: refused when the file loads."""
    table = json.loads(run(["prices", "--format", "json"]).stdout)
    table["providers"][0]["models"][0]["match"] = {"regex": "^" + "[a-z]*" * 7 + "!"}
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(table))
    result = run(["bill", SPEC, "--prices", str(prices), "--model", "a" * 80], timeout=20)
    check_contract(result)
    assert result.code == 2 and "7 repeats of a variable count (at most 2)" in result.stderr, result.stderr


RATES = {"kimi-k3": {"input_cache_hit": "0.3", "input_cache_miss": "3", "output": "15"}}
PRICES = {"name": "x", "currency": "USD", "effective": "2026-01-01", "source": "s", "default_model": "kimi-k3",
          "models": RATES}  # fmt: skip
SHOWN = [  # (name, files, args, what must show, escaped)
    ("bidi-override-in-a-name", {"s.json": json.dumps({"name": "cost \u202e10.0$", "turns": [{"new": 10}]})},
     ["bill", "{dir}/s.json"], "cost \\u202e10.0$"),
    ("escape-in-a-session-model", {"s.json": json.dumps({"model": "kimi-k3\x1b[2J", "turns": [{"new": 10}]}),
     "p.json": json.dumps({**PRICES, "models": {**RATES, "kimi-k3\x1b[2J": RATES["kimi-k3"]}})},
     ["bill", "{dir}/s.json", "--prices", "{dir}/p.json"], "kimi-k3\\x1b[2J"),
    ("escape-in-a-price-table-name", {"p.json": json.dumps({**PRICES, "name": "x\x1b]0;pwned\x07"})},
     ["prices", "--prices", "{dir}/p.json"], "x\\x1b]0;pwned\\x07"),
    ("bars-in-a-price-model-id", {"p.json": json.dumps({**PRICES, "models": {**RATES, "k| a | b |<b>": RATES[
        "kimi-k3"]}})}, ["prices", "--prices", "{dir}/p.json", "--format", "markdown"], "k\\| a \\| b \\|&lt;b>"),
    ("rich-markup-in-a-name", {"s.json": json.dumps({"name": "n[/]x[bold]b", "turns": [{"new": 10, "label": "[/]"}]})},
     ["bill", "{dir}/s.json"], "n[/]x[bold]b"),
    ("rich-markup-in-compare", {"s.json": json.dumps({"name": "n[/]x", "turns": [{"new": 10}]})},
     ["compare", "{dir}/s.json"], "n[/]x"),
    ("rich-markup-in-a-price-table-name", {"p.json": json.dumps({**PRICES, "name": "[/]x:warning:"})},
     ["prices", "--prices", "{dir}/p.json"], "[/]x:warning:"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "files", "args", "shows"), SHOWN, ids=[c[0] for c in SHOWN])
def test_text_from_an_input_is_shown_as_written_and_harmless(name: str, files: dict[str, str], args: list[str],
                                                             shows: str, tmp_path: Path) -> None:  # fmt: skip
    """On a terminal (no raw control character, no rich markup acted on) and in markdown (bars and tags
    escaped): exit 0, the text shown escaped."""
    for file, text in files.items():
        (tmp_path / file).write_text(text)
    result = run([a.format(dir=tmp_path) for a in args] + ["--color", "never"])
    check_contract(result)  # with `harness.check_shown`: no raw control, markdown rows whole
    assert result.code == 0 and shows in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("command", [["trace", TRACE, "--clusters", "2"], ["bill", str(FIXTURES / "codex")]])
def test_a_listener_that_never_answers_is_no_scheduler(command: list[str]) -> None:
    """A TCP listener that accepts and never says a word: Dask's handshake would wait for it forever (a trace's
    replay and a bill connect in the one place)."""
    pytest.importorskip("distributed")
    import socket

    import dask.config

    with socket.create_server(("127.0.0.1", 0)) as server:
        held = []
        listening = threading.Thread(target=lambda: held.append(server.accept()), daemon=True)
        listening.start()
        with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):  # Dask's own bound, 30 s by default
            address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
            result = run([*command, "--scheduler", address], timeout=40)
        for conn, _ in held:
            conn.close()
    check_contract(result)
    assert result.code == 2 and "--scheduler" in result.stderr and "no answer in 2 s" in result.stderr, result.stderr
