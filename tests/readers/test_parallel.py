"""Large folders of logs billed as reported are read by several processes at once: the sessions are the same as
one process reads them, in the same order, and a bad line in any file is still one error naming it."""

from __future__ import annotations

import shutil
from pathlib import Path

from kcost.errors import InputError
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
