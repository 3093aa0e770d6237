"""Bills written a turn at a time (`kcost bill --format jsonl|csv`, `--summary`) against the same bills rendered
whole: byte for byte, over turn specs and logs, several sessions and cache models, and each call priced at the
model its log names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost import api
from kcost.api.settings import resolve
from kcost.cli import cli
from kcost.render.registry import View, render
from tests.conftest import ROOT

INPUTS = [
    ["sample_sessions/coding-400k.yaml"],
    ["sample_sessions/coding-400k.yaml", "sample_sessions/edit-early-message.yaml"],
    ["tests/fixtures/claude-code/ccusage-chat-alpha.jsonl"],
    ["tests/fixtures/kimi-cli/sessions"],
]
RUNS = [[], ["--cache", "k3", "--cache", "ideal"], ["--model", "logged"], ["--usage", "reported"]]


@pytest.mark.parametrize("paths", INPUTS)
@pytest.mark.parametrize("extra", RUNS)
@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table", "markdown"])
def test_a_streamed_bill_is_the_whole_bill(paths: list[str], extra: list[str], fmt: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(ROOT)
    if "--usage" in extra and paths[0].endswith(".yaml"):
        pytest.skip("a turn spec reports no usage")
    summary = ["--summary", "--per-turn"] if fmt in ("table", "markdown") else []
    args = ["bill", *paths, "--format", fmt, "--width", "100", "--color", "never", "--timezone", "UTC", *summary]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    caches = [extra[i + 1] for i, a in enumerate(extra) if a == "--cache"]
    usage = extra[extra.index("--usage") + 1] if "--usage" in extra else "auto"
    model = "logged" if "--model" in extra else None
    settings = resolve(caches=caches, usage=usage, model=model)
    sessions = api.sessions(paths, settings)
    whole = render("bill", api.report(sessions, settings=settings), fmt, View(width=100, summary=bool(summary)))
    assert result.stdout == whole


@pytest.mark.parametrize("paths", INPUTS[1:3])
def test_a_streamed_json_bill_with_money_as_numbers_is_the_whole_bills(
    paths: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--format json` is written a turn at a time (each turn's text as it is billed, none kept): with money as
    JSON numbers too, the text of the whole report."""
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, ["bill", *paths, "--format", "json", "--json-numbers"])
    assert result.exit_code == 0, result.output
    settings = resolve()
    whole = render("bill", api.report(api.sessions(paths, settings), settings=settings), "json", View(numbers=True))
    assert result.stdout == whole


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
@pytest.mark.parametrize("spool", [16, 1 << 22], ids=["spooled", "in-memory"])
def test_streamed_text_held_in_memory_or_spooled_is_written_only_once_whole(
    fmt: str, spool: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text made a piece at a time goes to stdout, or to a device, once the run has succeeded: held in memory
    while it is small, spooled to a temporary file past `SPOOL_BYTES`, the same text either way; a run that fails
    half way (a session that cannot be billed, after one that can) writes nothing."""
    from kcost.cli import output

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(output, "SPOOL_BYTES", spool)
    paths = INPUTS[1]
    result = CliRunner().invoke(cli, ["bill", *paths, "--format", fmt])
    assert result.exit_code == 0, result.output
    settings = resolve()
    whole = render("bill", api.report(api.sessions(paths, settings), settings=settings), fmt, View())
    assert result.stdout == whole
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: no-such-model\nturns:\n  - new: 10\n")
    failed = CliRunner().invoke(cli, ["bill", paths[0], str(broken), "--format", fmt])
    assert failed.exit_code == 2 and failed.stdout == "" and "no-such-model" in failed.output
