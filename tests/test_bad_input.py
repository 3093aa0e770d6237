"""Bad input through the public CLI: exit status 2, one `kcost: error:` line on stderr naming the file as
given, the line and the field, no traceback, and nothing written to `-o`.

Every case runs in `tmp_path` (the working directory for the test), so the paths on the command line are
relative and the message must repeat them exactly as given. Expected lines are computed from the text
written: `Case.marker` is text found on exactly one line of the file, and that line is the one to name.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kcost.cli import cli
from tests.conftest import expect_error

GOOD = "turns:\n  - new: 5\n"  # a valid session, for cases whose problem is elsewhere
Invoke = Callable[..., Result]  # run(*args, stdin=None): the CLI, in tmp_path
OLD_REPORT = b"an earlier report\r\nthat must survive\n"


def _runner() -> CliRunner:
    # click 8.2+ always keeps stderr apart (`result.stderr`); 8.1 needs asking.
    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # pragma: no cover - click < 8.2
    return CliRunner()


def line_of(text: str, marker: str) -> int:
    """The 1-based line holding `marker`, which must be on exactly one line."""
    hits = [n for n, line in enumerate(text.splitlines(), start=1) if marker in line]
    assert len(hits) == 1, f"marker {marker!r} is on lines {hits}"
    return hits[0]


@dataclass
class Case:
    args: list[str]
    files: dict[str, str] = field(default_factory=dict)
    source: str | None = None  # the path the message must name, as given
    marker: str | None = None  # text on the line the message must name, in files[source]
    field: str | None = None
    says: str | None = None
    stdin: str | None = None

    @property
    def where(self) -> str | None:
        if self.source and self.marker:
            return f"{self.source}:{line_of(self.files[self.source], self.marker)}"
        return self.source

    def write(self, root: Path) -> None:
        for name, text in self.files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def spec(name: str, text: str, marker: str | None = None, field: str | None = None, says: str | None = None) -> Case:
    """One session file, `sessions/NAME`, billed on its own."""
    path = f"sessions/{name}"
    return Case([path], {path: text}, path, marker, field, says)


def cache(option: str, says: str) -> Case:
    return Case(["--cache", option, "sessions/ok.yaml"], {"sessions/ok.yaml": GOOD}, field="--cache", says=says)


def priced(text: str | None, marker: str | None = None, field: str | None = None, says: str | None = None) -> Case:
    """A good session billed with `--prices prices/table.json` holding `text` (None: no such file)."""
    path = "prices/table.json"
    files = {"sessions/ok.yaml": GOOD} | ({path: text} if text is not None else {})
    return Case(["--prices", path, "sessions/ok.yaml"], files, path, marker, field, says)


def price_table(**changes: object) -> str:
    """The shipped table's shape, one key a line; `changes` set keys (None deletes), `rate_*` the model's."""
    rates: dict[str, object] = {"input_cache_hit": "0.30", "input_cache_miss": "3.00", "output": "15.00"}
    table: dict[str, object] = {
        "name": "test prices",
        "currency": "USD",
        "effective": "2026-01-01",
        "source": "test",
        "default_model": "m",
        "models": {"m": rates},
    }
    for key, value in changes.items():
        target, key = (rates, key.removeprefix("rate_")) if key.startswith("rate_") else (table, key)
        if value is None:
            del target[key]
        else:
            target[key] = value
    return json.dumps(table, indent=2) + "\n"


BILL_CASES = [
    # 1-3: documents that do not parse
    pytest.param(
        spec(
            "broken.json",
            '{\n  "name": "broken",\n  "turns": [\n    {"new": 5},\n    {"new": 6,}\n  ]\n}\n',
            marker='{"new": 6,}',
            says="not valid JSON",
        ),
        id="json-syntax",
    ),
    pytest.param(
        spec(
            "broken.yaml",
            "name: broken\nturns:\n  - new: 5\n  - new: 6: 7\n",
            marker="new: 6: 7",
            says="not valid YAML",
        ),
        id="yaml-syntax",
    ),
    pytest.param(
        spec(
            "broken.jsonl",
            '{"session": {"name": "broken"}}\n{"new": 5}\n{"new": 6\n{"new": 7}\n',
            marker='{"new": 6',
            says="not valid JSON",
        ),
        id="jsonl-line-3",
    ),
    # 4-5: token counts
    pytest.param(
        spec(
            "negative.yaml",
            "name: negative\nturns:\n  - new: 5\n  - output: 3\n    new: -5\n",
            marker="new: -5",
            field="turns[1].new",
            says="greater than or equal to 0",
        ),
        id="negative-yaml",
    ),
    pytest.param(
        spec(
            "negative.json",
            '{\n  "turns": [\n    {"new": 5},\n    {\n      "output": 3,\n      "new": -5\n    }\n  ]\n}\n',
            marker='"new": -5',
            field="turns[1].new",
            says="greater than or equal to 0",
        ),
        id="negative-json",
    ),
    pytest.param(
        spec(
            "negative.jsonl",
            '{"session": {"name": "negative"}}\n{"new": 5}\n{"new": -5}\n',
            marker='"new": -5',
            field="turns[1].new",
            says="greater than or equal to 0",
        ),
        id="negative-jsonl",
    ),
    pytest.param(
        spec(
            "float.yaml",
            "turns:\n  - new: 5\n  - new: 1.5\n",
            marker="new: 1.5",
            field="turns[1].new",
            says="valid integer",
        ),
        id="float-count",
    ),
    pytest.param(
        spec(
            "text.yaml",
            'turns:\n  - new: 5\n  - new: "abc"\n',
            marker='new: "abc"',
            field="turns[1].new",
            says="valid integer",
        ),
        id="text-count",
    ),
    # 6-7: unknown fields
    pytest.param(
        spec(
            "typo.yaml",
            "turns:\n  - output: 0\n    nwe: 5\n",
            marker="nwe: 5",
            field="turns[0].nwe",
            says="unknown field",
        ),
        id="unknown-turn-field",
    ),
    pytest.param(
        spec(
            "typo-top.yaml",
            "version: 1\nnmae: typo\nturns:\n  - new: 5\n",
            marker="nmae",
            field="nmae",
            says="unknown field",
        ),
        id="unknown-top-field",
    ),
    # 8-9: counts that contradict each other
    pytest.param(
        spec(
            "keep.yaml",
            "turns:\n  - new: 100\n    output: 10\n  - keep: 200\n    new: 5\n",
            marker="keep: 200",
            field="turns[1].keep",
            says="carries over 110",
        ),
        id="keep-too-large",
    ),
    pytest.param(
        spec(
            "keep-later.yaml",
            "turns:\n  - new: 100\n    output: 10\n  - new: 5\n    keep: 200\n",
            marker="keep: 200",
            field="turns[1].keep",
            says="carries over 110",
        ),
        id="keep-too-large-own-line",
    ),
    pytest.param(
        spec(
            "edit.yaml",
            "turns:\n  - new: 100\n  - new: 5\n    edit_at: 500\n",
            marker="edit_at: 500",
            field="turns[1].edit_at",
            says="carries 100",
        ),
        id="edit-at-too-large-own-line",
    ),
    pytest.param(
        spec(
            "reasoning.yaml",
            "turns:\n  - new: 100\n  - new: 5\n    output: 10\n    reasoning: 20\n",
            marker="reasoning: 20",
            field="turns[1].reasoning",
            says="cannot exceed output",
        ),
        id="reasoning-over-output",
    ),
    # 10: --cache
    pytest.param(cache("k9", "unknown cache model 'k9'"), id="cache-unknown-model"),
    pytest.param(cache("k3:hash=abc", "hash must be a whole number"), id="cache-bad-value"),
    pytest.param(cache("k3:bogus=1", "unknown parameter 'bogus'"), id="cache-unknown-parameter"),
    # 11: --prices
    pytest.param(
        priced(
            '{\n  "name": "broken",\n  "models": {\n    "m": {"output": "15.00",}\n  }\n}\n',
            marker='"output": "15.00",}',
            says="not valid JSON",
        ),
        id="prices-not-json",
    ),
    pytest.param(
        priced(price_table(rate_output=None), marker='"m": {', field="models.m.output", says="required"),
        id="prices-missing-rate",
    ),
    pytest.param(
        priced(
            price_table(rate_input_cache_hit="-0.30"),
            marker='"input_cache_hit"',
            field="models.m.input_cache_hit",
            says="greater than or equal to 0",
        ),
        id="prices-negative",
    ),
    pytest.param(
        priced(price_table(colour="blue"), marker='"colour"', field="colour", says="unknown field"),
        id="prices-unknown-key",
    ),
    pytest.param(priced(None, says="no such file"), id="prices-missing-file"),
    # 12-13: nothing to read
    pytest.param(spec("empty.yaml", "", says="empty"), id="empty-file"),
    pytest.param(spec("blank.yaml", "  \n\t\n\n", says="empty"), id="whitespace-file"),
    pytest.param(Case(["-"], source="-", says="empty", stdin=""), id="empty-stdin"),
    pytest.param(
        Case(["sessions/missing.yaml"], source="sessions/missing.yaml", says="no such file"),
        id="missing-file",
    ),
    pytest.param(
        Case(["sessions"], {"sessions/notes.txt": "not a session\n"}, source="sessions", says="no sessions found"),
        id="folder-without-sessions",
    ),
    # 14: duplicate keys
    pytest.param(
        spec(
            "dup.yaml",
            "turns:\n  - new: 5\n    output: 3\n    new: 6\n",
            marker="new: 6",
            field="turns[0].new",
            says="duplicate key",
        ),
        id="duplicate-key-yaml",
    ),
    pytest.param(
        spec(
            "dup-top.yaml",
            "name: a\nturns:\n  - new: 5\nname: b\n",
            marker="name: b",
            field="name",
            says="duplicate key",
        ),
        id="duplicate-top-key-yaml",
    ),
    pytest.param(
        spec(
            "dup.json",
            '{\n  "turns": [\n    {"new": 5,\n     "new": 6}\n  ]\n}\n',
            marker='"new": 6',
            field="turns[0].new",
            says="duplicate key",
        ),
        id="duplicate-key-json",
    ),
    # 15: JSONL headers
    pytest.param(
        spec(
            "late-header.jsonl",
            '{"new": 5}\n{"session": {"name": "late"}}\n',
            marker='"session"',
            field="session",
            says="must be the first line",
        ),
        id="jsonl-header-not-first",
    ),
    pytest.param(
        spec(
            "header-turns.jsonl",
            '{"session": {"name": "x", "turns": [{"new": 1}]}}\n{"new": 5}\n',
            marker='"session"',
            field="turns",
            says="lines of their own",
        ),
        id="jsonl-header-with-turns",
    ),
    pytest.param(
        spec(
            "header-extra.jsonl",
            '{"session": {"name": "x"}, "new": 1}\n{"new": 5}\n',
            marker='"session"',
            field="session",
        ),
        id="jsonl-header-with-more-keys",
    ),
    # beyond the brief, found while probing: errors that lose the file and line
    pytest.param(
        spec(
            "idle.yaml",
            "turns:\n  - new: 5\n  - new: 5\n    idle: -5\n",
            marker="idle: -5",
            field="turns[1].idle",
            says="must be >= 0",
        ),
        id="negative-idle",
    ),
    pytest.param(
        spec(
            "model.yaml",
            "model: nope\nturns:\n  - new: 5\n",
            marker="model: nope",
            field="model",
            says="no price for model 'nope'",
        ),
        id="unpriced-model",
    ),
    # inputs that once gave a traceback (found by review)
    pytest.param(spec("huge.yaml", "turns:\n  - new: " + "9" * 5000 + "\n", says="cannot read"), id="huge-int-yaml"),
    pytest.param(
        spec("huge.json", '{"turns": [{"new": ' + "9" * 5000 + "}]}", marker="turns", says="not valid JSON"),
        id="huge-int-json",
    ),
    pytest.param(spec("deep.json", "[" * 100_000 + "]" * 100_000, marker="[", says="not valid JSON"), id="deep-json"),
    pytest.param(
        spec(
            "big.yaml",
            "turns:\n  - new: 2000000000\n",
            marker="new: 2000000000",
            field="turns[0].new",
            says="less than or equal",
        ),  # fmt: skip
        id="token-count-over-the-bound",
    ),
    pytest.param(
        spec(
            "idle.yaml",
            "turns:\n  - new: 5\n    idle: " + "9" * 400 + "\n",
            marker="idle:",
            field="turns[0].idle",
            says="too large",
        ),  # fmt: skip
        id="idle-overflow",
    ),
    pytest.param(
        spec("dup.jsonl", '{"new": 5}\n{"new": 5, "new": 6000}\n', marker="6000", field="new", says="duplicate key"),
        id="duplicate-key-jsonl",
    ),
    pytest.param(cache("k3:hash=\u00b2", "whole number"), id="cache-superscript-digit"),
    pytest.param(cache("k3:ttl=" + "9" * 400, "too large"), id="cache-ttl-overflow"),
]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str, stdin: str | None = None) -> Result:
        return _runner().invoke(cli, list(args), input=stdin)

    return invoke


@pytest.mark.parametrize("case", BILL_CASES)
def test_bill_rejects(case: Case, run: Invoke, tmp_path: Path) -> None:
    case.write(tmp_path)
    out = tmp_path / "out"
    out.mkdir()

    # -o to a new file: it must not appear, nor any temporary file beside it.
    result = run("bill", *case.args, "-o", "out/report.txt", stdin=case.stdin)
    expect_error(result, where=case.where, field=case.field, says=case.says)
    assert list(out.iterdir()) == []

    # -o over an earlier report: it must be left byte for byte.
    (out / "report.txt").write_bytes(OLD_REPORT)
    result = run("bill", *case.args, "-o", "out/report.txt", stdin=case.stdin)
    expect_error(result, where=case.where, field=case.field, says=case.says)
    assert list(out.iterdir()) == [out / "report.txt"]
    assert (out / "report.txt").read_bytes() == OLD_REPORT


def test_bill_output_in_missing_directory(run: Invoke, tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(GOOD, encoding="utf-8")
    result = run("bill", "ok.yaml", "-o", "nowhere/report.txt")
    expect_error(result, where="nowhere/report.txt", says="cannot write")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    ("rate", "says"),
    [
        pytest.param("1.5", "between 0 and 1", id="above-one"),
        pytest.param("-10%", "between 0 and 1", id="negative-percent"),
        pytest.param("abc", "not a number", id="not-a-number"),
        pytest.param("nan", None, id="nan"),
        pytest.param(
            "sNaN",
            None,
            id="snan",
        ),
    ],
)
def test_quote_rejects_hit_rate(rate: str, says: str | None, run: Invoke) -> None:
    result = run("quote", "--prefix", "100000", "--new", "1000", "--hit-rate", rate)
    expect_error(result, where=None, field="--hit-rate", says=says)


def test_a_bill_read_back_is_composed_for_its_lines_only_when_an_error_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON document is parsed once; the YAML composition that gives each value its line runs for a bad one
    alone, and the error still names the line."""
    from kcost.inputs import documents as document
    from tests.conftest import ROOT

    made = CliRunner().invoke(cli, ["bill", str(ROOT / "sample_sessions" / "coding-400k.yaml"), "--format", "json"])
    good = tmp_path / "good.json"
    good.write_text(made.output)
    composed: list[str] = []
    load_yaml = document.load_yaml

    def counted(text: str, name: str) -> object:
        composed.append(name)
        return load_yaml(text, name)

    monkeypatch.setattr(document, "load_yaml", counted)
    result = CliRunner().invoke(cli, ["diff", str(good), str(good)])
    assert result.exit_code == 0 and composed == [], result.output
    bill = json.loads(made.output)
    bill["runs"][0]["sessions"][0]["summary"]["hit_tokens"] = -5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bill, indent=2))
    result = CliRunner().invoke(cli, ["diff", str(good), str(bad)])
    line = next(n for n, text in enumerate(bad.read_text().splitlines(), 1) if '"hit_tokens": -5' in text)
    assert result.exit_code == 2 and composed == [str(bad)], result.output
    assert f"{bad}:{line}:" in result.output, result.output
