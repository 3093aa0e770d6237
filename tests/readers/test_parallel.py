"""Large folders of logs billed as reported are read by several processes at once: the sessions are the same as
one process reads them, in the same order, and a bad line in any file is still one error naming it (or, with
`--lenient`, a record skipped and counted in its session's notes, as in this process)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import InputError
from kcost.prompts.tokenizer import Estimate
from kcost.readers import read_all

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def logs(tmp_path: Path) -> Path:
    """Copies of every log fixture with usage, several of each, under one folder."""
    root = tmp_path / "logs"
    for i in range(3):
        shutil.copytree(FIXTURES / "claude-code", root / f"claude-{i}")
        shutil.copytree(FIXTURES / "codex", root / f"codex-{i}")
        shutil.copytree(FIXTURES / "kimi-code", root / f"kimi-code-{i}")
        shutil.copytree(FIXTURES / "kimi-cli", root / f"kimi-cli-{i}")
    return root


def test_workers_read_the_same_sessions_in_the_same_order(tmp_path: Path) -> None:
    root = logs(tmp_path)
    one = read_all([str(root)], prompts=False, workers=1)
    two = read_all([str(root)], prompts=False, workers=2)
    assert len(one.sessions) >= 12
    assert one.sessions == two.sessions
    assert one.skipped == two.skipped


def test_a_bad_line_read_by_a_worker_is_one_error_naming_it(tmp_path: Path) -> None:
    root = logs(tmp_path)
    bad = root / "codex-1" / "ccusage-session-alpha.jsonl"
    bad.write_text(bad.read_text().replace('"output_tokens":125', '"output_tokens":-125', 1))
    try:
        read_all([str(root)], prompts=False, workers=2)
    except InputError as exc:
        assert exc.source == str(bad) and exc.line == 2 and "negative" in exc.message
    else:
        raise AssertionError("the negative count was not reported")


def _bad_copy(tmp_path: Path, rel: str) -> Path:
    """A copy of a log fixture whose first usage record has a negative output count."""
    bad = tmp_path / Path(rel).name
    text = (FIXTURES / rel).read_text()
    assert '"output_tokens":125' in text
    bad.write_text(text.replace('"output_tokens":125', '"output_tokens":-125', 1))
    return bad


@pytest.mark.parametrize("rel", ["codex/ccusage-session-alpha.jsonl", "claude-code/ccusage-chat-alpha.jsonl"])
def test_lenient_skips_a_bad_record_read_as_a_job(tmp_path: Path, rel: str) -> None:
    """`--usage reported` reads each log apart, as a job (in worker processes, for large folders): `--lenient`
    holds there as it does when the prompts are rebuilt in this process."""
    bad = _bad_copy(tmp_path, rel)
    runner = CliRunner()
    lenient = runner.invoke(cli, ["bill", "--usage", "reported", "--lenient", str(bad)])
    assert lenient.exit_code == 0, lenient.output
    assert "1 bad record(s) skipped (--lenient), the first: " in lenient.output
    assert "a token count cannot be negative, got -125" in lenient.output
    strict = runner.invoke(cli, ["bill", "--usage", "reported", str(bad)])
    assert strict.exit_code == 2
    (line,) = strict.output.strip().splitlines()
    assert line.startswith(f"kcost: error: {bad}:") and line.endswith("a token count cannot be negative, got -125")
    # in worker processes too: every session keeps its note (three sessions, each its own ids: copies of one
    # session are one session)
    root = tmp_path / "logs"
    root.mkdir()
    for i in range(3):
        (root / f"{i}-{bad.name}").write_text(bad.read_text().replace("alpha", f"alpha{i}"))
    found = read_all([str(root)], prompts=False, workers=2, lenient=True)
    assert len(found.sessions) == 3
    assert all(any("bad record(s) skipped (--lenient)" in n for n in s.build_notes) for s in found.sessions)
    with pytest.raises(InputError, match="negative"):
        read_all([str(root)], prompts=False, workers=2)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_bills_made_by_the_workers_are_written_as_one_process_writes_them(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the workers that read the logs billed them too, the machine formats are written from those bills
    (not billed again here), piece by piece: the same text as one process billing every session itself."""
    from kcost import api
    from kcost.api.distributed import made_elsewhere
    from kcost.api.settings import resolve
    from kcost.readers import discover

    root = logs(tmp_path)
    alone = CliRunner().invoke(cli, ["bill", str(root), "--format", fmt, "--per-turn"])
    assert alone.exit_code == 0, alone.output
    monkeypatch.setattr(discover, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(discover, "PARALLEL_BYTES_PROMPTS", 0)
    settings = resolve()
    assert made_elsewhere(api.sessions([str(root)], settings, bill=True), settings)
    spread = CliRunner().invoke(cli, ["bill", str(root), "--format", fmt, "--per-turn"])
    assert spread.exit_code == 0, spread.output
    assert spread.stdout == alone.stdout and alone.stdout.count("\n") > 20


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("prompts", [False, True], ids=["reported", "prompts"])
def test_a_log_that_is_a_session_of_its_own_is_read_once_where_it_is_claimed(
    prompts: bool, workers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Claude Code log named after its session, with no sub-agents' folder beside it, is read as a session
    where it is claimed (in a worker, for large folders), not parsed again once the run is joined; where the join
    makes it part of a larger session after all (a resumed session's first file), it is read with the others. The
    sessions are those of a run that reads every log after the join."""
    from kcost.readers.agents import claude_code

    root = tmp_path / "logs"
    shutil.copytree(FIXTURES / "claude-code", root)
    reads: list[str] = []
    real = claude_code._Log.read

    def counted(self: Any, src: Any) -> Any:
        reads.append(Path(src.name).name)
        return real(self, src)

    monkeypatch.setattr(claude_code._Log, "read", counted)
    early = read_all([str(root)], prompts=prompts, workers=workers)
    early_reads = list(reads)
    monkeypatch.setattr(claude_code, "_looks_alone", lambda src: False)
    reads.clear()
    late = read_all([str(root)], prompts=prompts, workers=workers)
    assert early.sessions == late.sessions and early.skipped == late.skipped
    assert len(early.sessions) >= 5
    if workers == 1 and prompts:  # read here: counted here
        alone = ["e7a9c3b1-2d4f-4a6e-9b8c-1f3e5d7a9c02.jsonl", "f1b3d5e7-9a2c-4e6f-8b0d-2c4e6a8b0d13.jsonl"]
        assert [early_reads.count(name) for name in alone] == [1, 1]
        assert [reads.count(name) for name in alone] == [2, 2]  # scanned, then read with its prompts
        resumed = "3f6b2c1e-8d4a-4f0b-9c2e-5a7d1e9b4c10.jsonl"  # looked alone; its session spans two files
        assert early_reads.count(resumed) == 2


class _Doubled(Estimate):
    """A counter of the caller's own: no worker can load it, so prompts are counted in the run's process."""

    source = "twice the estimate"

    def count(self, text: str) -> int:
        return 2 * super().count(text)


def test_a_counter_of_the_callers_own_counts_every_prompt_where_it_is(tmp_path: Path) -> None:
    """With a counter no worker can load, the workers only claim the logs (a log that looks like a session of its
    own is sent back as the join needs it, not as a session counted there): every prompt is counted here, by
    that counter, as one process counts it."""
    root = tmp_path / "logs"
    shutil.copytree(FIXTURES / "claude-code", root)
    one = read_all([str(root)], counter=_Doubled(), workers=1)
    two = read_all([str(root)], counter=_Doubled(), workers=2)
    plain = read_all([str(root)], workers=1)
    assert one.sessions == two.sessions and len(two.sessions) >= 5
    assert one.sessions != plain.sessions  # the prompts counted by the caller's counter, not the estimate
