"""Bills made where their logs are read: in worker processes (the default mode too, prompts rebuilt, calibrated
and simulated) and on a Dask cluster (`--scheduler`), each byte-identical to one process's. A session its reader
joins from several files (a resumed Claude Code session, its sub-agents' files) is one job; an unreachable or
wrong scheduler is one line and exit 2."""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.readers import discover, forked
from tests.conftest import generate_claude_logs

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
LOGS = ("claude-code", "codex", "kimi-code", "kimi-cli", "gemini-cli", "qwen-code", "opencode")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every log fixture of the agents' formats, the turn specs, and Claude Code logs from the benchmark's
    generator (sessions of 20-400 requests), under one folder."""
    root = tmp_path_factory.mktemp("logs")
    for name in LOGS:
        shutil.copytree(FIXTURES / name, root / name)
    shutil.copytree(ROOT / "sample_sessions", root / "specs")
    generate_claude_logs(root / "generated", 1.5, 7)
    return root


@pytest.fixture
def processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Logs read (and billed) in two worker processes, however few bytes and cores there are."""
    if not forked.available():
        pytest.skip("worker processes are forked")
    monkeypatch.setattr(discover, "PARALLEL_BYTES_PROMPTS", 0)
    monkeypatch.setattr(discover, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    yield


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def alone(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    """A run in this one process."""
    with monkeypatch.context() as m:
        m.setattr(discover, "PARALLEL_BYTES_PROMPTS", 1 << 60)
        m.setattr(discover, "PARALLEL_BYTES", 1 << 60)
        return run(*args)


COMMANDS = [
    ("bill", "--format", "json"),
    ("bill", "--usage", "reported", "--format", "json"),
    ("bill", "--cache", "k3", "--cache", "ideal", "--cache", "k3:auto", "--format", "json"),
    ("bill", "--format", "json", "--json-numbers"),
    ("bill", "--model", "logged", "--format", "json"),  # each turn priced at the model its call names
    ("bill", "--by", "day", "--breakdown", "--format", "json"),
    ("bill", "--since", "2026-02-10", "--format", "json"),
    ("check", "--max-session-usd", "5", "--format", "json"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[1:]))
def test_worker_processes_bill_as_one_process_does(
    logs: Path, processes: None, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    one = alone(monkeypatch, command[0], str(logs), *command[1:])
    two = run(command[0], str(logs), *command[1:])
    assert two == one
    assert one[0] in (0, 1), one[2]
    if command == COMMANDS[0]:
        sessions = json.loads(one[1])["runs"][0]["sessions"]
        assert len(sessions) >= 30
        # the resumed session is one, and so is the side question's parent with its sub-agent's file
        resumed = [s for s in sessions if "/resumed/" in s["source"]]
        assert len(resumed) == 1
        assert sum("/btw/" in s["source"] for s in sessions) == 1


def test_the_default_mode_is_billed_where_it_is_read(logs: Path, processes: None) -> None:
    """With prompts rebuilt, each log's session comes back from its worker with its bills made: this process
    bills only the sessions it read itself (the turn specs)."""
    from kcost import api
    from kcost.api import distributed
    from kcost.api.settings import resolve

    settings = resolve()
    sessions = api.sessions([str(logs / "generated")], settings, bill=True)
    made = [distributed._made(s, distributed.terms(settings), settings.cache) for s in sessions]
    assert len(sessions) >= 2 and all(m is not None and not isinstance(m, tuple) for m in made)
    assert sessions[0].requests  # prompts were rebuilt there
    specs = api.sessions([str(logs / "specs")], settings, bill=True)
    assert all(distributed._made(s, distributed.terms(settings), settings.cache) is None for s in specs)


def test_a_json_bill_brings_its_turns_back_written(logs: Path, processes: None) -> None:
    """A run that writes the bill as JSON has each worker write the turns of its bills (the text the writer makes
    of each here), with the models they were priced at; any other run takes the turns back as they are."""
    from dataclasses import replace

    from kcost import api
    from kcost.api import distributed
    from kcost.api.settings import resolve
    from kcost.results.bill import WrittenTurns
    from kcost.results.common import written

    plain = resolve(model="logged")
    for numbers in (False, True):
        settings = replace(plain, json_turns=numbers)
        sessions = api.sessions([str(logs / "generated")], settings, bill=True)
        made = [distributed._made(s, distributed.terms(settings), settings.cache) for s in sessions]
        assert made and all(isinstance(getattr(m, "turns", None), WrittenTurns) for m in made)
        here = [api.report([s], settings=plain).runs[0].sessions[0] for s in sessions]
        for there, bill in zip(made, here, strict=True):
            assert list(there.turns) == [written(t, numbers) for t in bill.turns]  # type: ignore[union-attr]
            assert there.priced_models() == bill.priced_models()  # type: ignore[union-attr]
    kept = api.sessions([str(logs / "generated")], plain, bill=True)
    bills = [distributed._made(s, distributed.terms(plain), plain.cache) for s in kept]
    assert all(type(b.turns) is list for b in bills)  # type: ignore[union-attr]


def test_a_bad_line_in_a_worker_is_the_one_line_one_process_gives(
    tmp_path: Path, processes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("claude-code", "codex"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
    bad = tmp_path / "codex" / "ccusage-session-alpha.jsonl"
    bad.write_text(bad.read_text().replace('"output_tokens":125', '"output_tokens":-125', 1))
    one = alone(monkeypatch, "bill", str(tmp_path), "--format", "json")
    two = run("bill", str(tmp_path), "--format", "json")
    assert two == one
    assert one[0] == 2 and one[1] == ""
    (line,) = one[2].strip().splitlines()
    assert line.startswith(f"kcost: error: {bad}:2:") and "negative" in line


# -- Dask


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as local:
        yield local.scheduler_address


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[1:]))
def test_bills_on_a_dask_cluster_are_byte_identical(
    logs: Path, cluster: str, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    one = alone(monkeypatch, command[0], str(logs), *command[1:])
    on_dask = run(command[0], str(logs), *command[1:], "--scheduler", cluster)
    assert on_dask == one
    assert one[0] in (0, 1), one[2]


def test_a_table_of_sessions_on_dask_is_the_same_table(logs: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:  # fmt: skip
    args = ("bill", str(logs / "generated"), "--width", "160", "--color", "never")
    one = alone(monkeypatch, *args)
    assert run(*args, "--scheduler", cluster) == one
    assert one[1].splitlines()[-1].startswith("total ")


def test_a_bad_line_read_on_dask_is_the_one_line_one_process_gives(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(FIXTURES / "claude-code", tmp_path / "claude-code")
    bad = tmp_path / "claude-code" / "ccusage-chat-alpha.jsonl"
    assert '"output_tokens":125' in bad.read_text()
    bad.write_text(bad.read_text().replace('"output_tokens":125', '"output_tokens":-125', 1))
    one = alone(monkeypatch, "bill", str(tmp_path), "--format", "json")
    assert run("bill", str(tmp_path), "--format", "json", "--scheduler", cluster) == one
    assert one[0] == 2 and one[1] == ""
    (line,) = one[2].strip().splitlines()
    assert line.startswith(f"kcost: error: {bad}:") and "negative" in line


def test_relative_paths_on_dask_are_read_where_the_run_started(
    logs: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers started in another folder than the run's: a relative log path, price file and bad line are
    read, billed and named as one process names them (each worker resolved `logs/a.yaml` in its own folder)."""
    monkeypatch.chdir(logs)
    table = run("prices", "--format", "json")[1]
    (logs / "prices.json").write_text(table)
    for args in (("bill", "specs", "--format", "json"), ("bill", "generated", "codex", "--format", "json"),
                 ("bill", "specs", "--prices", "prices.json", "--format", "json")):  # fmt: skip
        one = alone(monkeypatch, *args)
        assert one[0] == 0, one[2]
        assert run(*args, "--scheduler", cluster) == one
    shutil.copytree(FIXTURES / "codex", logs / "bad")
    bad = logs / "bad" / "ccusage-session-alpha.jsonl"
    bad.write_text(bad.read_text().replace('"output_tokens":125', '"output_tokens":-125', 1))
    one = alone(monkeypatch, "bill", "bad", "--format", "json")
    assert run("bill", "bad", "--format", "json", "--scheduler", cluster) == one
    assert one[2].startswith("kcost: error: bad/ccusage-session-alpha.jsonl:2:"), one[2]
    shutil.rmtree(logs / "bad")
    (logs / "prices.json").unlink()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["bill", "check"])
def test_an_unreachable_scheduler_is_one_line(monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    pytest.importorskip("distributed")
    import dask.config

    monkeypatch.setitem(dask.config.config["distributed"]["comm"]["timeouts"], "connect", "1s")
    address = f"tcp://127.0.0.1:{_closed_port()}"
    extra = ["--max-session-usd", "5"] if command == "check" else []
    code, out, err = run(command, str(FIXTURES / "codex"), *extra, "--scheduler", address)
    assert (code, out) == (2, "")
    (line,) = err.strip().splitlines()
    assert line.startswith(f"kcost: error: --scheduler: cannot reach the Dask scheduler at {address}")


@pytest.mark.parametrize("address", ["http://example.org", "tcp://", "udp://127.0.0.1:8786"])
def test_a_wrong_scheduler_address_is_one_line(address: str) -> None:
    pytest.importorskip("distributed")
    code, out, err = run("bill", str(FIXTURES / "codex"), "--scheduler", address)
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == [
        f"kcost: error: --scheduler: not a Dask scheduler address: {address!r} (tcp://host:8786)"
    ]
