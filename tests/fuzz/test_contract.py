"""Every input kind, broken many ways, through the CLI in-process: the contract of `harness.check_contract` holds.

CI runs a short budget (`KCOST_FUZZ_EXAMPLES`, default 25 inputs per kind and command); `bench/fuzz.py` runs it
long and keeps what fails as a regression fixture. Special files are also tried exhaustively, each kind as each
file option, on every run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.cli import cli
from tests import test_kept_state as kept_state
from tests.fuzz import generators as gen
from tests.fuzz.harness import FIXTURES, OPENCODE, SAMPLES, SEEDS, Kept, Outcome, check_contract, mutate, run

BILLED = [str(SAMPLES / n) for n in gen.BILLED]  # the sessions of `gen.good_bill`
EXAMPLES = int(os.environ.get("KCOST_FUZZ_EXAMPLES", "25"))
FOUND = Path(__file__).parent / "found"  # inputs a long run found breaking the contract: replayed by every run
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("KCOST_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip


def broken(seed: Path, rng: random.Random, times: int) -> bytes:
    data = seed.read_bytes()
    for _ in range(times):
        data = mutate(data, rng)
    return data


@contextlib.contextmanager
def keeping(file: Path) -> Iterator[None]:
    """An input that breaks the contract is kept under tests/fuzz/found/ when KCOST_FUZZ_KEEP is set (a price file
    or a bill under its kind's name, so that the replay knows what to give it to)."""
    try:
        yield
    except AssertionError:
        if os.environ.get("KCOST_FUZZ_KEEP") and file.is_file():
            FOUND.mkdir(exist_ok=True)
            data = file.read_bytes()
            digest = hashlib.sha256(data).hexdigest()[:12]
            kind = file.name.split("-", 1)[0]
            name = f"{kind}-{digest}.json" if kind in ("prices", "bill") else f"{digest}-{file.name.split('-', 1)[-1]}"
            (FOUND / name).write_bytes(data)
        raise


def held(out: Any, file: Path, **contract: Any) -> None:
    """The contract, the input kept if it breaks it (`keeping`)."""
    with keeping(file):
        check_contract(out, **contract)


COMMANDS = {
    "bill": ["bill", "{file}", "--format", "json", "-o", "{out}"],
    "reported": ["bill", "{file}", "--usage", "reported", "--format", "json", "-o", "{out}"],
    "lenient": ["bill", "{file}", "--lenient", "--format", "json", "-o", "{out}"],
    "explain": ["explain", "{file}", "--format", "json", "-o", "{out}"],
    "check": ["check", "{file}", "--max-session-usd", "1", "--format", "json", "-o", "{out}"],
    "html": ["bill", "{file}", "--cache", "k3", "--cache", "anthropic", "--format", "html", "-o", "{out}"],
    "compare": ["compare", "{file}", "--format", "json", "-o", "{out}"],
    "watch": ["watch", "{file}", "--once"],
}


def output_of(command: str, out: Path) -> Path | None:
    """The output a command writes (None: one that writes none, whose `out` may be an earlier example's)."""
    return out if "{out}" in COMMANDS[command] else None


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
    held(run(args), file, verdicts=command == "check", written=output_of(command, out))


# every agent whose fixtures are laid out as its home (`tests/fixtures/<agent>/home/`): a reader added joins here
AGENT_HOMES = sorted(p.parent.name for p in FIXTURES.glob("*/home") if p.is_dir())


@pytest.mark.parametrize("agent", AGENT_HOMES)
@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(1, 3),
       command=st.sampled_from(["bill", "reported", "lenient", "explain", "check"]))  # fmt: skip
def test_agent_homes(agent: str, seed: int, times: int, command: str, tmp_path: Path) -> None:
    """An agent's home (its logs, stores and databases where it writes them) with one of its files broken, read
    with no path as `kcost bill` reads a machine: a report or one error line, the home as it was."""
    from kcost.readers.registry import READERS

    rng = random.Random(seed)
    home = Path(tempfile.mkdtemp(dir=tmp_path)) / "home"
    shutil.copytree(FIXTURES / agent / "home", home)
    victim = rng.choice(sorted(f for f in home.rglob("*") if f.is_file()))
    victim.write_bytes(broken(victim, rng, times))
    env: dict[str, str | None] = {e.home.env: None for e in READERS if e.home is not None}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": None, "XDG_DATA_HOME": None, "APPDATA": None, "LOCALAPPDATA": None,
            "KCOST_LEDGER": str(home.parent / "ledger.sqlite3")}  # kcost's own data, kept apart from the home
    out = tmp_path / f"out-{seed}.json"
    args = [a for a in COMMANDS[command] if a != "{file}"]
    args = [a.format(out=out) for a in args] + ["--input-format", agent]
    kept = Kept(home)
    check_contract(run(args, env=env), verdicts=command == "check", written=out, kept=kept)


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
    check_contract(run(args), verdicts=command == "check", written=output_of(command, out))


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
    check_contract(run(args), verdicts=command == "check", written=output_of(command, out))


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


# ---- the kinds an independent fuzzing found: special files, price files, bills, schedulers, terminal text ----

MEMORY = 1 << 30  # bytes a run given a special file may take beyond what the tests hold: a read that never ends
SUFFIXES = ["", ".json", ".jsonl", ".yaml", ".toml", ".model", ".svg"]


Run = tuple[list[str], dict[str, str | None], Path | None, contextlib.ExitStack]


def special_run(slot: str, kind: str, folder: Path, suffix: str = "") -> Run:
    """The argv, environment, working folder and open special file of one (file option, special file) pair."""
    stack = contextlib.ExitStack()
    env: dict[str, str | None] = {"GITHUB_STEP_SUMMARY": None, "KCOST_TOKENIZER": None}
    cwd = None
    if slot in gen.READS or slot in gen.WRITES:
        x = stack.enter_context(gen.special_file(kind, folder, "special" + suffix, fed=gen.SPEC.read_bytes()))
        template = gen.READS.get(slot) or gen.WRITES[slot]
        if slot == "check GITHUB_STEP_SUMMARY":
            env["GITHUB_STEP_SUMMARY"] = x
        return [a.replace("{x}", x) for a in template], env, cwd, stack
    name, template = gen.FOUND[slot]
    home = folder / "home"
    if name == "wire.jsonl":
        shutil.copytree(gen.KIMI_CLI, home)
        (home / name).unlink()
    else:
        home.mkdir()
        if name == "x.jsonl":
            shutil.copy(gen.SPEC, home / "spec.yaml")
    x = stack.enter_context(gen.special_file(kind, home, name or "tokenizer.model", gen.SPEC.read_bytes(), named=True))
    if not name:
        env["KCOST_TOKENIZER"] = x
    if name.endswith(".toml"):
        cwd = home
    return [a.replace("{x}", str(home)) for a in template], env, cwd, stack


def held_special(slot: str, kind: str, folder: Path, suffix: str = "") -> None:
    """A special file as `slot`: the contract, within the deadline and the memory cap; a read ends in exit 2."""
    args, env, cwd, stack = special_run(slot, kind, folder, suffix)
    kept = Kept(folder, gen.SPEC, gen.TRACE)
    with stack, contextlib.chdir(cwd) if cwd else contextlib.nullcontext():
        out = run(args, env=env, memory=MEMORY)
    check_contract(out, verdicts=args[0] == "check", kept=kept)
    must_fail = slot in gen.READS and not (slot.endswith("PATH") and kind == "folder") or kind == "folder" and (
        slot in gen.WRITES) or slot.endswith(".toml") and kind != "dangling-link"  # fmt: skip
    if must_fail:
        assert out.code == 2, f"{slot} as {kind}: exit {out.code}: {out.stderr[-300:]}"
    if slot in gen.WRITES and kind != "folder" and slot != "trace --plot":  # a device is written through
        assert out.code in (0, 1), f"{slot} as {kind}: exit {out.code}: {out.stderr[-300:]}"


@pytest.mark.parametrize("kind", gen.SPECIALS)
@pytest.mark.parametrize("slot", [*gen.READS, *gen.FOUND])
def test_every_special_file_as_every_file_option(slot: str, kind: str, tmp_path: Path) -> None:
    held_special(slot, kind, tmp_path)


@pytest.mark.parametrize("kind", gen.OUTPUT_SPECIALS)
@pytest.mark.parametrize("slot", list(gen.WRITES))
def test_every_special_file_as_every_output(slot: str, kind: str, tmp_path: Path) -> None:
    held_special(slot, kind, tmp_path)


@FUZZ
@given(slot=st.sampled_from([*gen.READS, *gen.FOUND, *gen.WRITES]), pick=st.integers(0, 2**16),
       suffix=st.sampled_from(SUFFIXES))  # fmt: skip
def test_special_files(slot: str, pick: int, suffix: str, tmp_path: Path) -> None:
    """A special file of any kind (the suffix a format is guessed from) as any file option."""
    kinds = gen.OUTPUT_SPECIALS if slot in gen.WRITES else gen.SPECIALS
    held_special(slot, kinds[pick % len(kinds)], Path(tempfile.mkdtemp(dir=tmp_path)), suffix)


PRICE_COMMANDS = {
    "bill": ["bill", str(gen.SPEC), "--format", "json", "-o", "{out}"],
    "bill-table": ["bill", *BILLED, "--cache", "k3", "--cache", "anthropic", "--breakdown"],
    "explain": ["explain", str(gen.SPEC), "--format", "json", "-o", "{out}"],
    "compare": ["compare", str(gen.SPEC), "--format", "json", "-o", "{out}"],
    "check": ["check", str(gen.SPEC), "--max-session-usd", "5", "--format", "json", "-o", "{out}"],
    "quote": ["quote", "--prefix", "400k", "--new", "4k", "--format", "json", "-o", "{out}"],
    "prices": ["prices", "--format", "markdown"],
    "trace": ["trace", str(gen.TRACE), "--capacity", "1M,inf", "--format", "json", "-o", "{out}"],
}


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), command=st.sampled_from(sorted(PRICE_COMMANDS)), model=st.integers(0, 15))
def test_hostile_price_files(seed: int, command: str, model: int, tmp_path: Path) -> None:
    """A price table with rates, tiers, match clauses or periods made hostile: refused in one line where it is
    wrong (a write below a miss, tiers out of order, a regular expression that backtracks), never run long."""
    rng = random.Random(seed)
    text, fault = gen.hostile_prices(rng)
    file = tmp_path / f"prices-{seed}.json"
    file.write_text(text)
    out = tmp_path / f"out-{seed}.json"
    args = [a.replace("{out}", str(out)) for a in PRICE_COMMANDS[command]] + ["--prices", str(file)]
    if model < len(gen.ADVERSARIAL_IDS) and command not in ("compare", "prices", "trace"):
        args += ["--model", gen.ADVERSARIAL_IDS[model]]  # an id no shipped clause matches: every clause is tried
    with keeping(file):
        held_prices(args, file, out, fault)


# a write discount declared, as pydantic reads a boolean (lax: `"yes"` and `1` are true too)
DECLARED = r'"write_discount":\s*(true|1(\.0)?\b|"(?i:1|on|t|true|y|yes)")'


def held_prices(args: list[str], file: Path, out: Path, fault: str | None) -> None:
    """A price file's run: the contract (a bill that holds together; a declared write discount may make a premium
    negative); refused if `fault`."""
    kept = Kept(file)
    result = run(args)
    written = out if "-o" in args else None  # `out` may be an earlier example's (same seed, another command)
    discount = re.search(DECLARED, file.read_text()) is not None
    check_contract(result, verdicts=args[0] == "check", written=written, kept=kept, discount=discount)
    assert fault is None or result.code == 2, f"taken despite {fault}: {result.stderr[-300:]}"


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), command=st.sampled_from(["diff-before", "diff-after", "check"]),
       fmt=st.sampled_from(["json", "table", "markdown", "html"]))  # fmt: skip
def test_broken_bills_read_back(seed: int, command: str, fmt: str, tmp_path: Path) -> None:
    """A real bill with negative money, totals that are not their sums, tokens that do not add up or figures of
    the wrong type, given to `diff` and `check --baseline`: one that breaks what kcost guarantees is refused."""
    rng = random.Random(seed)
    bill, holds = gen.broken_bill(rng)
    bad = tmp_path / f"bill-{seed}.json"
    bad.write_text(json.dumps(bill, indent=rng.choice([None, 2])))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(gen.good_bill()))
    args = {"diff-before": ["diff", str(bad), str(good)], "diff-after": ["diff", str(good), str(bad)],
            "check": ["check", *BILLED, "--baseline", str(bad), "--max-increase", "10%"]}[command]  # fmt: skip
    with keeping(bad):
        held_bill([*args, "--format", fmt], bad, good, holds)


def held_bill(args: list[str], bad: Path, good: Path, holds: bool) -> None:
    """A bill read back: the contract, and refused if it breaks what kcost guarantees of a bill."""
    kept = Kept(bad, good)
    result = run(args)
    check_contract(result, verdicts=args[0] == "check", kept=kept)
    assert holds or result.code == 2, f"{gen.bill_faults(gen.parsed(bad.read_text()))}, read back: exit {result.code}"


@pytest.fixture(scope="module")
def listener() -> Iterator[gen.Listener]:
    pytest.importorskip("distributed")
    server = gen.Listener()
    yield server
    server.close()


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), answer=st.sampled_from(gen.ANSWERS))
def test_scheduler_addresses(seed: int, answer: str, listener: gen.Listener) -> None:
    """`--scheduler` at a local listener that is no Dask scheduler (each answer a way of being something else),
    or at no address at all: one line naming the option, soon."""
    rng = random.Random(seed)
    listener.answer, listener.seed = answer, seed
    address = gen.scheduler_address(rng, listener.port)
    result = run(["trace", str(gen.TRACE), "--clusters", "2", "--scheduler", address, "--format", "json"])
    check_contract(result)
    assert result.code == 2 and "--scheduler" in result.stderr, (address, result.stderr)


# the commands that show a session's texts: its name, labels, models (grouped by), project
SHOWING = [["bill"], ["bill", "--by", "model"], ["bill", "--by", "project"], ["bill", "--breakdown"],
           ["bill", "--per-turn"], ["explain"], ["compare"], ["check", "--max-session-usd", "0.01"]]  # fmt: skip


def terminal_case(carrier: str, text: str, folder: Path, rng: random.Random) -> list[str]:
    """An input whose `carrier` (a name, label, model id, project, file name, option value) holds `text`, and a
    command that shows it; the input written under `folder`."""
    spec = {"name": "chat", "turns": [{"new": 1000, "output": 100, "label": "first"}, {"new": 200, "output": 50}]}
    model = "kimi-k3"
    prices = gen.price_table()
    if carrier in ("spec-name", "spec-label", "spec-model", "file-name", "--model", "compare --on", "watch-file-name",
                   "selfhost-file-name"):
        if carrier == "spec-name":
            spec["name"] = text
        elif carrier == "spec-label":
            spec["turns"][0]["label"] = text  # type: ignore[index]
        elif carrier == "spec-model":
            spec["model"] = model = "kimi-k3" + text
        name = f"{gen.fs_safe(text)}.json" if carrier.endswith("file-name") else "spec.json"
        session = folder / name
        session.write_text(json.dumps(spec))
        if carrier == "watch-file-name":
            return ["watch", str(session), "--once"]
        if carrier == "selfhost-file-name":
            return ["selfhost", str(session), "--format", rng.choice(["table", "markdown"])]
        if carrier == "--model":
            return ["bill", str(session), "--model", text]
        if carrier == "compare --on":
            return ["compare", str(session), "--on", text]
    elif carrier in ("claude-model", "claude-project", "codex-model", "kimi-api-model"):
        seed, old = {"claude-model": ("claude-code/spotter-short.jsonl", "claude-opus-4-6"),
                     "claude-project": ("claude-code/spotter-short.jsonl", "/home/marco/projects/spotter"),
                     "codex-model": ("codex/ccusage-session-alpha.jsonl", "gpt-5.2-codex"),
                     "kimi-api-model": ("kimi-api/pairs.jsonl", "kimi-k3")}[carrier]  # fmt: skip
        new = old + text
        if carrier != "claude-project":
            model = new
        session = folder / Path(seed).name
        session.write_text((FIXTURES / seed).read_text().replace(json.dumps(old), json.dumps(new)))
    elif carrier == "trace-session":
        lines = [json.dumps({"time": t, "input_tokens": 1200, "output_tokens": 10, "blocks": [1, 2, 3],
                             "session": text + str(t % 2)}) for t in range(6)]  # fmt: skip
        session = folder / "trace.jsonl"
        session.write_text("\n".join(lines) + "\n")
        return ["trace", str(session), "--clusters", "2", "--format", rng.choice(["table", "html"])]
    elif carrier == "bill-read-back":
        bill = gen.good_bill()
        for s in bill["runs"][0]["sessions"]:
            s["name"], s["source"] = text + s["name"], text + s["source"]
            for t in s["turns"]:
                t["label"] = text
        bad, good = folder / "evil.json", folder / "good.json"
        bad.write_text(json.dumps(bill))
        good.write_text(json.dumps(gen.good_bill()))
        fmt = rng.choice(["table", "markdown", "html"])
        if rng.randrange(2):
            return ["diff", str(bad), str(good), "--format", fmt]
        return ["check", *BILLED, "--baseline", str(bad), "--max-increase", "0%", "--format", fmt]
    else:  # the price file: a model's id and name, a provider's name
        model = "kimi-k3" + text
        provider = prices["providers"][0]
        provider["name"] += text
        kimi = next(m for m in provider["models"] if m["id"] == "kimi-k3")
        provider["models"].append({**kimi, "id": model, "name": text, "match": {"equals": model}})
        file = folder / "prices.json"
        file.write_text(json.dumps(prices))
        return ["prices", "--prices", str(file), "--format", rng.choice(["table", "markdown"])]
    if model != "kimi-k3":  # the logged id is priced (a table that knows it), so the bill shows it
        kimi = next(m for p in prices["providers"] for m in p["models"] if m["id"] == "kimi-k3")
        prices["providers"][0]["models"].append({**kimi, "id": model, "name": model, "match": {"equals": model}})
    file = folder / "prices.json"
    file.write_text(json.dumps(prices))
    command = rng.choice(SHOWING)
    fmt = rng.choice(["table", "markdown", "html"])
    return [*command, str(session), "--prices", str(file), "--format", fmt]


CARRIERS = ["spec-name", "spec-label", "spec-model", "file-name", "watch-file-name", "selfhost-file-name", "--model",
            "compare --on", "claude-model",
            "claude-project", "codex-model", "kimi-api-model", "trace-session", "bill-read-back",
            "price-file"]  # fmt: skip


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), carrier=st.sampled_from(CARRIERS))
def test_terminal_text(seed: int, carrier: str, tmp_path: Path) -> None:
    """Escape sequences, C0 and C1 controls, bidirectional overrides, markdown and HTML specials in every text
    an input carries to the screen: shown escaped on a terminal and in markdown, never opening a tag in HTML."""
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    args = terminal_case(carrier, gen.hostile_text(rng), folder, rng)
    if args[0] != "trace" and "--color" not in args:
        args += ["--color", "never"]
    kept = Kept(folder)
    result = run(args)
    check_contract(result, verdicts=args[0] == "check", kept=kept)


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("kind", [k for k in SEEDS if k != "trace"])
@FUZZ
@given(seed=st.integers(0, 2**32 - 1), times=st.integers(0, 3), which=st.integers(0, 9),
       via=st.sampled_from(["path", "hook", "hook-broken"]), grown=st.integers(0, 3))  # fmt: skip
def test_status_lines(kind: str, seed: int, times: int, which: int, via: str, grown: int, tmp_path: Path) -> None:
    """A status line never fails its hook: for any log, broken any way (and the hook's JSON broken too), each
    call exits 0 with one line of at most 80 columns and no raw control character, nothing on stderr, the log
    untouched; a call through the state the last one kept (the log grown by garbage or by itself) as well; and
    where the log (its lines whole) bills as one session, the line shows that bill's total."""
    rng = random.Random(seed)
    source = SEEDS[kind][which % len(SEEDS[kind])]
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    file = folder / f"input-{seed}{''.join(source.suffixes[-2:])}"
    file.write_bytes(broken(source, rng, times) if times else source.read_bytes())
    env: dict[str, str | None] = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}
    hook = json.dumps({"session_id": "s", "transcript_path": str(file), "model": {"id": "m"}}).encode()
    for look in range(2):
        before = file.read_bytes()
        if via == "path":
            result = run(["statusline", str(file)], env=env)
        else:
            result = run(["statusline"], stdin=hook if via == "hook" else mutate(hook, rng), env=env)
        with keeping(file):
            assert result.code == 0 and result.stderr == "" and "Traceback" not in result.stdout, result
            (line,) = result.stdout.splitlines()
            assert 0 < len(line) <= 80 and not CONTROL.search(line), line
            assert file.read_bytes() == before
        if look == 0:
            bill = run(["bill", str(file), "--format", "json"])
            sessions = [s for r in json.loads(bill.stdout)["runs"][:1] for s in r["sessions"]] if bill.code == 0 else []
            # a last line with no newline yet is a line being written: a look waits for it, a bill reads it
            if len(sessions) == 1 and via != "hook-broken" and before.endswith(b"\n"):
                from decimal import Decimal

                from kcost.render.display import money

                assert f" {money(Decimal(sessions[0]['summary']['total']), total=True)} · " in line, (line, sessions)
            with file.open("ab") as f:  # grown before the second look: by garbage, or by the log's own lines
                f.write(mutate(before[-200:], rng) if grown == 1 else before[: len(before) // (grown or 1)])


# ---- the classes of the third fuzzing (issue 47) -----------------------------------------------------------------


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), target=st.sampled_from(["log", "deep", "config", "prices", "link", "home"]),
       command=st.sampled_from(["bill", "explain", "compare", "check"]))  # fmt: skip
def test_outputs_onto_found_inputs(seed: int, target: str, command: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """An output named as any file the run reads or finds (a log in a walked folder, the config found, a price
    file, a link to any, a log discovery found in a home): refused, every input as it was, whoever found it."""
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    logs = folder / "logs"
    (logs / "deep").mkdir(parents=True)
    for n, kind in enumerate(rng.sample(sorted(k for k in SEEDS if k != "trace"), 3)):
        source = rng.choice(SEEDS[kind])
        (logs / ("deep" if n else ".") / f"{kind}-{n}{''.join(source.suffixes[-2:])}").write_bytes(source.read_bytes())
    home = folder / "home"
    found = home / ".claude" / "projects" / "p" / "s.jsonl"
    found.parent.mkdir(parents=True)
    found.write_bytes(SEEDS["claude-code"][0].read_bytes())
    (folder / "kcost.toml").write_text('cache = "k3"\n')
    (folder / "prices.json").write_text(json.dumps(gen.price_table()))
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "KIMI_SHARE_DIR", "KIMI_CODE_HOME", "CODEX_HOME", "OPENCODE_DATA_DIR",
                 "QWEN_HOME", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KCOST_LEDGER", str(Path(tempfile.mkdtemp()) / "ledger.sqlite3"))  # kcost's own, apart
    inputs = sorted(p for p in logs.rglob("*") if p.is_file())
    out = {"log": rng.choice(inputs), "deep": inputs[-1], "config": folder / "kcost.toml",
           "prices": folder / "prices.json", "link": folder / "link.json", "home": found}[target]  # fmt: skip
    if target == "link":
        out.symlink_to(rng.choice([*inputs, folder / "kcost.toml"]))
    args = [command, *([] if target == "home" else ["logs"]), "--prices", "prices.json", "--format", "json",
            "-o", str(out), *(["--max-session-usd", "5"] if command == "check" else [])]  # fmt: skip
    kept = Kept(folder)
    done = CliRunner().invoke(cli, args)  # not `run`, which clears an output's old file first
    result = Outcome(args, done.exit_code, done.stdout, done.stderr)  # refused before the homes read are told of
    check_contract(result, verdicts=command == "check", kept=kept)
    assert result.code == 2 and "would overwrite a file this run read" in result.stderr, result


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), edge=st.sampled_from(["0001-01-01T00:00:00", "9999-12-31T23:59:59"]),
       offset=st.integers(-14 * 60, 14 * 60), shift=st.integers(-3, 3),
       by=st.sampled_from([None, "day", "week", "month"]),
       window=st.sampled_from([None, "since", "until"]))  # fmt: skip
def test_times_at_the_calendars_edges(seed: int, edge: str, offset: int, shift: int, by: str | None,
                                      window: str | None, tmp_path: Path) -> None:  # fmt: skip
    """A log whose times sit at the calendar's edges, in any time zone, by any grouping and window: a bill or one
    error line, never an internal error; the status line one line."""
    rng = random.Random(seed)
    kind = rng.choice(["claude-code", "codex"])
    source = SEEDS[kind][0]
    sign = "+" if offset >= 0 else "-"
    stamp = f"{edge[:-2]}{int(edge[-2:]) if shift >= 0 else 0:02d}{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
    data = re.sub(rb'"timestamp":\s*"[^"]*"', f'"timestamp":"{stamp}"'.encode(), source.read_bytes())
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    file = folder / f"log{''.join(source.suffixes[-2:])}"
    file.write_bytes(data)
    args = ["bill", str(file), "--format", "table" if by else rng.choice(["json", "table"]), "--color", "never",
            *(["--by", by] if by else []),
            *([f"--{window}", "0001-01-01" if window == "since" else "9999-12-31"] if window else [])]  # fmt: skip
    check_contract(run(args), kept=Kept(folder))
    line = run(["statusline", str(file)], env={"XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"})
    assert line.code == 0 and len(line.stdout.splitlines()) == 1 and "Traceback" not in line.stdout, line


@FUZZ
@given(seed=st.integers(0, 2**32 - 1),
       steps=st.lists(st.sampled_from(["append", "edit", "cut", "replace", "prices", "state"]), min_size=1,
                      max_size=6))  # fmt: skip
def test_kept_state_is_never_stale(seed: int, steps: list[str], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Between status-line calls a log is appended to, edited in place, cut, replaced; its price file edited; the
    kept state removed or spoiled: every line is a fresh bill's (no report equals a stale one)."""
    rng = random.Random(seed)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = rng.choice(kept_state.LOGS)
    prices = kept_state.price_table(tmp_path)
    lines = source.read_bytes().splitlines(keepends=True)
    shown = [max(2, len(lines) // 2)]
    log = tmp_path / source.name
    log.write_bytes(b"".join(lines[: shown[0]]))
    model = rng.choice([None, "logged"])
    assert kept_state.line(log, prices, model) == kept_state.fresh(log, prices, model)
    for kind in steps:
        arg = {"append": rng.randint(1, 6), "edit": rng.random(), "cut": rng.randint(1, 6),
               "replace": rng.randrange(len(kept_state.LOGS)), "prices": rng.choice("2345"),
               "state": rng.choice(["remove", "fifo", "garbage"])}[kind]  # fmt: skip
        kept_state.apply((kind, arg), log, lines, shown, prices)
        assert kept_state.line(log, prices, model) == kept_state.fresh(log, prices, model), (kind, arg)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 4))
def test_selfhost_overrides_at_their_bounds(seed: int, count: int, tmp_path: Path) -> None:
    """`selfhost --set KEY=VALUE` with values at, beyond and far beyond each key's declared bounds (tiny, huge,
    exponents of a million, not numbers): a report or one error line, in seconds (the run's deadline)."""
    from kcost.analysis.selfhost import BOUNDS

    rng = random.Random(seed)
    sets: list[str] = []
    for _ in range(count):
        key = rng.choice(sorted(BOUNDS))
        least, most = (float(x) for x in BOUNDS[key][:2])
        value = rng.choice([
            str(least), str(most), repr(least * rng.uniform(0.5, 1)), repr(most * rng.uniform(1, 2)),
            f"1e-{rng.randint(1, 999_999)}", f"1e{rng.randint(1, 999_999)}", f"-{most}", "0", "nan", "inf", "",
            "9" * rng.randint(1, 400), f"{rng.uniform(least, most) if most < 1e300 else least:.{rng.randint(0, 40)}f}",
        ])  # fmt: skip
        sets += ["--set", f"{key}={value}"]
    args = ["selfhost", str(SAMPLES / "growing-chat.yaml"), *sets, "--format", rng.choice(["json", "table"])]
    check_contract(run(args))


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), which=st.sampled_from(["claude-code", "kimi-code", "codex"]),
       command=st.sampled_from(["bill", "statusline", "watch"]))  # fmt: skip
def test_concurrent_writers(seed: int, which: str, command: str, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A log grown by another thread while kcost reads it, its lines cut anywhere between writes: the run keeps its
    contract (a bill, or one error line; the status line one line), and once the writer is done the status line is
    a fresh bill's (what it kept while the log grew is not stale)."""
    import threading
    import time

    rng = random.Random(seed)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = SEEDS[which][0]
    data = source.read_bytes()
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    log = folder / f"log{''.join(source.suffixes[-2:])}"
    cut = rng.randrange(1, len(data))
    log.write_bytes(data[:cut])

    def writer() -> None:
        at = cut
        with log.open("ab") as f:
            while at < len(data):
                step = rng.randint(1, max(1, len(data) // 8))
                f.write(data[at : at + step])
                f.flush()
                at += step
                time.sleep(rng.random() / 200)

    thread = threading.Thread(target=writer)
    thread.start()
    args = {"bill": ["bill", str(log), "--format", "json"], "statusline": ["statusline", str(log)],
            "watch": ["watch", str(log), "--once"]}[command]  # fmt: skip
    result = run(args, env={"NO_COLOR": "1"})
    thread.join()
    if command == "statusline":
        assert result.code == 0 and len(result.stdout.splitlines()) == 1, result
    else:
        check_contract(result)
    prices = kept_state.price_table(folder)
    assert kept_state.line(log, prices, None) == kept_state.fresh(log, prices, None)


def mutate_times(data: bytes, rng: random.Random, times: int) -> bytes:
    for _ in range(times):
        data = mutate(data, rng)
    return data


@pytest.mark.parametrize("found", sorted(FOUND.glob("*")) if FOUND.is_dir() else [], ids=lambda p: p.name)
def test_inputs_found_before(found: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    if found.name.startswith("prices-"):  # a price file, under every command that prices
        fault = gen.price_faults(gen.parsed(found.read_text()))
        for command in PRICE_COMMANDS.values():
            held_prices([a.replace("{out}", str(out)) for a in command] + ["--prices", str(found)], found, out, fault)
        return
    if found.name.startswith("bill-"):  # a bill, read back by diff and check
        good = tmp_path / "good.json"
        good.write_text(json.dumps(gen.good_bill()))
        holds = gen.bill_faults(gen.parsed(found.read_text())) is None
        held_bill(["diff", str(found), str(good)], found, good, holds)
        held_bill(["check", *BILLED, "--baseline", str(found), "--max-increase", "10%"], found, good, holds)
        return
    for command in COMMANDS.values():
        args = [a.format(file=found, out=out) for a in command]
        check_contract(run(args), verdicts=args[0] == "check", written=out)
