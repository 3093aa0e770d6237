"""The ledger under any sequence of changes to a folder of logs: logs added (copies too, which share sessions and
responses with others), appended to, cut short, replaced and touched, each bill through the ledger equal to the
bill without it (hypothesis; `KCOST_FUZZ_EXAMPLES` sequences, 8 by default)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcost.cli import cli
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
# a pool of logs of four agents, each kept under its agent's folder; Claude Code's from several sessions
POOL = [
    *sorted((FIXTURES / "claude-code").rglob("*.jsonl")),
    *sorted((FIXTURES / "codex").glob("*.jsonl")),
    *sorted((FIXTURES / "kimi-code").glob("*.wire.jsonl"))[:4],
    *sorted((FIXTURES / "gemini-cli").glob("*.json*")),
]
EXAMPLES = int(os.environ.get("KCOST_FUZZ_EXAMPLES", "8"))
ADD = st.tuples(st.just("add"), st.integers(0, len(POOL) - 1), st.integers(0, 2))
STEP = st.one_of(
    ADD,
    st.tuples(st.just("append"), st.integers(0, 99), st.integers(0, len(POOL) - 1)),
    st.tuples(st.just("cut"), st.integers(0, 99), st.integers(1, 3)),
    st.tuples(st.just("replace"), st.integers(0, 99), st.integers(0, len(POOL) - 1)),
    st.tuples(st.just("touch"), st.integers(0, 99), st.integers(0, 0)),
)


def _agent(path: Path) -> str:
    return path.relative_to(FIXTURES).parts[0]


def _logs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def apply(step: tuple[str, int, int], folder: Path, when: float) -> None:
    kind, a, b = step
    logs = _logs(folder)
    if kind == "add":
        source = POOL[a]
        target = folder / _agent(source) / source.relative_to(FIXTURES / _agent(source))
        if b:  # a copy under another name: the same session and responses in two files
            target = target.with_name(f"copy{b}-{target.name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    elif not logs:
        return
    elif kind == "append":
        log = logs[a % len(logs)]
        same = [p for p in POOL if p.suffix == log.suffix and _agent(p) == log.relative_to(folder).parts[0]]
        extra = same[b % len(same)].read_bytes() if same else b""
        if log.suffix == ".jsonl":
            log.write_bytes(log.read_bytes() + extra)
    elif kind == "cut":
        log = logs[a % len(logs)]
        lines = log.read_bytes().splitlines(keepends=True)
        if log.suffix == ".jsonl" and len(lines) > 2:
            log.write_bytes(b"".join(lines[: max(2, len(lines) * b // 4)]))
    elif kind == "replace":
        log = logs[a % len(logs)]
        same = [p for p in POOL if p.suffix == log.suffix and _agent(p) == log.relative_to(folder).parts[0]]
        if same:
            new = log.with_name(log.name + ".new")
            new.write_bytes(same[b % len(same)].read_bytes())
            os.replace(new, log)
    for path in [folder, *folder.rglob("*")]:  # every change written a while ago: its times tell a later write
        os.utime(path, (when, when))


def bill(folder: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["bill", str(folder), "--format", "json", *args])
    return result.exit_code, result.stdout, result.stderr


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(ADD, min_size=1, max_size=4), steps=st.lists(STEP, min_size=1, max_size=8),
       usage=st.sampled_from(["auto", "reported"]))
def test_every_bill_through_the_ledger_is_the_bill_without_it(first: list[tuple[str, int, int]],
                                                             steps: list[tuple[str, int, int]], usage: str,
                                                             tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    steps = [*first, *steps]
    tmp = tmp_path_factory.mktemp("changes")
    folder, ledger = tmp / "logs", str(tmp / "ledger.sqlite3")
    folder.mkdir()
    when = time.time() - 10_000
    for n, step in enumerate(steps):
        when += 60  # each change a minute after the one before
        apply(step, folder, when)
        if not _logs(folder):
            continue
        without = bill(folder, "--usage", usage, "--no-ledger")
        assert bill(folder, "--usage", usage, "--ledger", ledger) == without, (n, step)
        assert bill(folder, "--usage", usage, "--ledger", ledger) == without, (n, step, "again")

