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
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli

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
