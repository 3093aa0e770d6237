"""Every input kind, broken many ways, through the CLI in-process: the contract of `harness.check_contract` holds.

CI runs a short budget (`KCOST_FUZZ_EXAMPLES`, default 25 inputs per kind and command); `bench/fuzz.py` runs it
long and keeps what fails as a regression fixture.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import FIXTURES, OPENCODE, SAMPLES, SEEDS, check_contract, mutate, run

EXAMPLES = int(os.environ.get("KCOST_FUZZ_EXAMPLES", "25"))
FOUND = Path(__file__).parent / "found"  # inputs a long run found breaking the contract: replayed by every run
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("KCOST_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip


def broken(seed: Path, rng: random.Random, times: int) -> bytes:
    data = seed.read_bytes()
    for _ in range(times):
        data = mutate(data, rng)
    return data


def held(out: Any, file: Path, **contract: Any) -> None:
    """The contract; an input that breaks it is kept under tests/fuzz/found/ when KCOST_FUZZ_KEEP is set."""
    try:
        check_contract(out, **contract)
    except AssertionError:
        if os.environ.get("KCOST_FUZZ_KEEP") and file.is_file():
            FOUND.mkdir(exist_ok=True)
            data = file.read_bytes()
            (FOUND / f"{hashlib.sha256(data).hexdigest()[:12]}-{file.name.split('-', 1)[-1]}").write_bytes(data)
        raise


COMMANDS = {
    "bill": ["bill", "{file}", "--format", "json", "-o", "{out}"],
    "reported": ["bill", "{file}", "--usage", "reported", "--format", "json", "-o", "{out}"],
    "lenient": ["bill", "{file}", "--lenient", "--format", "json", "-o", "{out}"],
    "explain": ["explain", "{file}", "--format", "json", "-o", "{out}"],
    "check": ["check", "{file}", "--max-session-usd", "1", "--format", "json", "-o", "{out}"],
    "html": ["bill", "{file}", "--cache", "k3", "--cache", "anthropic", "--format", "html", "-o", "{out}"],
    "compare": ["compare", "{file}", "--format", "json", "-o", "{out}"],
}


@pytest.mark.parametrize("kind", [k for k in SEEDS if k != "trace"])
@pytest.mark.parametrize("command", list(COMMANDS))
@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3), which=st.integers(0, 9))
def test_logs_and_turn_specs(kind: str, command: str, seed: int, times: int, which: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    source = SEEDS[kind][which % len(SEEDS[kind])]
    file = tmp_path / f"input-{seed}{''.join(source.suffixes[-2:])}"
    file.write_bytes(broken(source, rng, times))
    out = tmp_path / f"out-{seed}.json"
    args = [a.format(file=file, out=out) for a in COMMANDS[command]]
    held(run(args), file, verdicts=command == "check", written=out)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3))
def test_kimi_cli_folders(seed: int, times: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(dir=tmp_path)) / "session"
    shutil.copytree(FIXTURES / "kimi-cli" / "sessions" / "0b7c55b8e1d46a1f3c2e9d8a7b6c5d4e" / "with-thinking", folder)
    victim = folder / rng.choice(["wire.jsonl", "context.jsonl"])
    victim.write_bytes(broken(victim, rng, times))
    out = tmp_path / f"out-{seed}.json"
    check_contract(run(["bill", str(folder), "--format", "json", "-o", str(out)]), written=out)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3), command=st.sampled_from(sorted(COMMANDS)))
def test_opencode_json_stores(seed: int, times: int, command: str, tmp_path: Path) -> None:
    """An OpenCode JSON store with one of its message or part files broken, read by its data folder."""
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(dir=tmp_path)) / "opencode"
    shutil.copytree(OPENCODE, folder)
    victim = rng.choice(sorted(f for f in (folder / "storage").rglob("*.json")))
    victim.write_bytes(broken(victim, rng, times))
    out = tmp_path / f"out-{seed}.json"
    args = [a.format(file=folder, out=out) for a in COMMANDS[command]]
    check_contract(run(args), verdicts=command == "check", written=out)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3), command=st.sampled_from(sorted(COMMANDS)))
def test_opencode_databases(seed: int, times: int, command: str, tmp_path: Path) -> None:
    """An OpenCode database (built from its schema) with a message's or part's JSON broken, or the file itself."""
    import sqlite3

    from tests.readers.test_opencode import MIGRATED, _session_files, build_database, new_session

    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    db = build_database(folder / "opencode.db", [_session_files(OPENCODE / "storage", MIGRATED), new_session()])
    if rng.randrange(5) == 0:  # the file itself: cut short or a byte flipped
        db.write_bytes(mutate_times(db.read_bytes(), rng, 1) if rng.randrange(2) else db.read_bytes()[:4096])
    else:
        connection = sqlite3.connect(db)
        table = rng.choice(["message", "part"])
        rows = connection.execute(f"SELECT id, data FROM {table}").fetchall()  # noqa: S608 (a table of two)
        rid, data = rng.choice(rows)
        connection.execute(f"UPDATE {table} SET data = ? WHERE id = ?",  # noqa: S608
                           (mutate_times(data.encode(), rng, times).decode("utf-8", "replace"), rid))  # fmt: skip
        connection.commit()
        connection.close()
    out = tmp_path / f"out-{seed}.json"
    args = [a.format(file=folder, out=out) for a in COMMANDS[command]]
    check_contract(run(args), verdicts=command == "check", written=out)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3))
def test_traces(seed: int, times: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    file = tmp_path / f"trace-{seed}.jsonl"
    file.write_bytes(broken(SEEDS["trace"][0], rng, times))
    out = tmp_path / f"out-{seed}.json"
    held(run(["trace", str(file), "--capacity", "1M,inf", "--format", "json", "-o", str(out)]), file, written=out)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3), pyproject=st.booleans())
def test_config_files(seed: int, times: int, pyproject: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    text = 'cache = "k3:ttl=1800"\nusage = "auto"\n\n[budgets]\nmax-session-usd = "2.50"\nmin-hit-rate = "85%"\n'
    if pyproject:
        text = "[project]\nname = 'x'\n\n[tool.kcost]\n" + text.replace("[budgets]", "[tool.kcost.budgets]")
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    (folder / ("pyproject.toml" if pyproject else "kcost.toml")).write_bytes(mutate_times(text.encode(), rng, times))
    monkeypatch.chdir(folder)
    out = folder / "out.json"
    check_contract(run(["bill", str(SAMPLES / "growing-chat.yaml"), "--format", "json", "-o", str(out)]), written=out)
    check_contract(run(["check", str(SAMPLES / "growing-chat.yaml")]), verdicts=True)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3))
def test_price_files(seed: int, times: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    table = tmp_path / f"prices-{seed}.json"
    table.write_bytes(mutate_times(run(["prices", "--format", "json"]).stdout.encode(), rng, times))
    out = tmp_path / f"out-{seed}.json"
    args = ["bill", str(SAMPLES / "growing-chat.yaml"), "--prices", str(table), "--format", "json", "-o", str(out)]
    check_contract(run(args), written=out)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3))
def test_bills_read_back(seed: int, times: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    good = tmp_path / "good.json"
    run(["bill", str(SAMPLES / "growing-chat.yaml"), "--format", "json", "-o", str(good)])
    bad = tmp_path / f"bill-{seed}.json"
    bad.write_bytes(mutate_times(good.read_bytes(), rng, times))
    check_contract(run(["diff", str(bad), str(good), "--format", "json"]))
    args = ["check", str(SAMPLES / "growing-chat.yaml"), "--baseline", str(bad), "--max-increase", "10%"]
    check_contract(run(args), verdicts=True)


OPTIONS = {
    "--cache": ["k3", "k3:hash=0", "k3:hash=99999999999", "k3:ttl=nan", "k3:ttl=-1", "shared:", "ideal:x=1", ""],
    "--width": ["0", "-1", "39", "401", "1e3", "x"],
    "--max-session-usd": ["1e-999999999", "-1", "nan", "inf", "1e999999", "0x10", ""],
    "--min-hit-rate": ["150%", "-1", "nan", "1e-999", "%"],
}


@FUZZ
@given(option=st.sampled_from(sorted(OPTIONS)), pick=st.integers(0, 99), junk=st.text(max_size=30))
def test_option_values(option: str, pick: int, junk: str) -> None:
    values = OPTIONS[option]
    value = values[pick % len(values)] if pick < 80 else junk
    command = "check" if option in ("--max-session-usd", "--min-hit-rate") else "bill"
    check_contract(run([command, str(SAMPLES / "growing-chat.yaml"), option, value]), verdicts=command == "check")


def mutate_times(data: bytes, rng: random.Random, times: int) -> bytes:
    for _ in range(times):
        data = mutate(data, rng)
    return data


@pytest.mark.parametrize("found", sorted(FOUND.glob("*")) if FOUND.is_dir() else [], ids=lambda p: p.name)
def test_inputs_found_before(found: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    for command in COMMANDS.values():
        args = [a.format(file=found, out=out) for a in command]
        check_contract(run(args), verdicts=args[0] == "check", written=out)
