"""Every shipped sample billed, explained, compared, checked and traced as JSON (and a few human formats), held
byte for byte against outputs stored before the house was rearranged (issue 17: behaviour unchanged).

`python -m tests.test_snapshots` writes the stored outputs anew; do that only for a change meant to change them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from tests.conftest import ROOT

STORE = ROOT / "tests" / "golden" / "outputs"

SPECS = sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".jsonl")
)
LOGS = [
    "tests/fixtures/claude-code/ccusage-chat-alpha.jsonl",
    "tests/fixtures/claude-code/spotter-short.jsonl",
    "tests/fixtures/codex/ccusage-session-alpha.jsonl",
    "tests/fixtures/kimi-api/requests.jsonl",
    "tests/fixtures/kimi-api/pairs.jsonl",
    "tests/fixtures/kimi-api/kimi_cli_print_stream_json.jsonl",
    "tests/fixtures/kimi-cli/sessions",
    "tests/fixtures/kimi-code/sample-main.wire.jsonl",
    "tests/fixtures/kimi-code/tool-turn.wire.jsonl",
]
CACHES = ["k3", "ideal", "none", "k3:hash=256,ttl=1800,output=on", "shared:6144", "anthropic", "openai:ttl=1h"]
TRACE = "tests/fixtures/traces/synthetic-400.jsonl"


_UTC = ("--timezone", "UTC")  # the overview of several sessions shows local times: the same on every machine


def _slug(path: str) -> str:
    return Path(path).name.replace(".", "-")


def cases() -> dict[str, list[str]]:
    """name -> the command's arguments (run from the repository's root, so sources are relative)."""
    out: dict[str, list[str]] = {}
    caches = [a for c in CACHES for a in ("--cache", c)]
    for path in SPECS + LOGS:
        name = _slug(path)
        out[f"bill-{name}"] = ["bill", path, *caches, "--format", "json"]
        out[f"explain-{name}"] = ["explain", path, "--format", "json"]
        out[f"compare-{name}"] = ["compare", path, "--format", "json"]
        out[f"markdown-{name}"] = ["bill", path, "--format", "markdown", *_UTC]
        out[f"table-{name}"] = ["bill", path, "--width", "120", "--color", "never", *_UTC]
    for path in LOGS:
        name = _slug(path)
        out[f"reported-{name}"] = ["bill", path, "--usage", "reported", "--format", "json"]
        out[f"logged-{name}"] = ["bill", path, "--model", "logged", "--format", "json"]
        out[f"jsonl-{name}"] = ["bill", path, "--format", "jsonl"]
        out[f"csv-{name}"] = ["bill", path, "--format", "csv"]
    out["jsonl-specs"] = ["bill", *SPECS, "--format", "jsonl", "--cache", "k3", "--cache", "ideal"]
    out["csv-specs"] = ["bill", *SPECS, "--format", "csv"]
    out["explain-specs-markdown"] = ["explain", *SPECS, "--format", "markdown"]
    out["explain-specs-table"] = ["explain", *SPECS, "--width", "120", "--color", "never"]
    out["compare-specs-table"] = ["compare", *SPECS, "--width", "160", "--color", "never"]
    out["check-specs"] = ["check", *SPECS, "--max-session-usd", "1", "--min-hit-rate", "80%", "--format", "json"]
    out["check-specs-markdown"] = ["check", "sample_sessions", "--max-turn-usd", "0.5", "--format", "markdown"]
    out["check-logs"] = ["check", *LOGS[:3], "--max-total-usd", "0.01", "--format", "json"]
    out["diff-specs"] = ["diff", SPECS[0], SPECS[1], "--format", "json"]
    out["diff-specs-table"] = ["diff", SPECS[0], SPECS[1], "--width", "120", "--color", "never"]
    out["quote"] = ["quote", "--prefix", "400000", "--new", "4000", "--format", "json"]
    out["quote-model"] = ["quote", "--prefix", "120000", "--new", "900", "--out", "300", "--model", "kimi-k3.1-pro",
                          "--format", "json"]  # fmt: skip
    out["quote-table"] = ["quote", "--prefix", "400000", "--new", "4000", "--width", "100", "--color", "never"]
    out["prices"] = ["prices", "--format", "json"]
    out["prices-markdown"] = ["prices", "--format", "markdown"]
    out["trace"] = ["trace", TRACE, "--capacity", "1M,10M,inf", "--format", "json"]
    out["trace-fleet"] = ["trace", TRACE, "--clusters", "3", "--fail", "1@0-600", "--cache", "k3", "--cache",
                          "k3:ttl=1800", "--format", "json", "--engine", "python"]  # fmt: skip
    out["trace-table"] = ["trace", TRACE, "--capacity", "1M,inf", "--width", "120", "--color", "never"]
    return out


def run(args: list[str]) -> str:
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(cli, args)
    finally:
        os.chdir(here)
    return f"exit {result.exit_code}\n{result.output}"


@pytest.mark.parametrize("name", sorted(cases()))
def test_output_unchanged(name: str) -> None:
    stored = STORE / f"{name}.out"
    assert stored.exists(), f"no stored output for {name}: python -m tests.test_snapshots"
    assert run(cases()[name]) == stored.read_text(encoding="utf-8")


if __name__ == "__main__":
    STORE.mkdir(parents=True, exist_ok=True)
    for name, args in sorted(cases().items()):
        (STORE / f"{name}.out").write_text(run(args), encoding="utf-8")
    print(f"wrote {len(cases())} outputs", file=sys.stderr)
