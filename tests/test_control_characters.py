"""No control character of an input reaches what people read (issue 47): a log whose file name holds an escape
sequence, a bell, a C1 control, a carriage return and a bidirectional override, followed by `kcost watch` and
weighed by `kcost selfhost` in every human format, shows that name escaped (`\\x1b`) and still recognisable, and
writes no control character but the newline; the machine formats keep it exact."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from collections.abc import Iterator
from decimal import Decimal
from enum import Enum
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kcost.cli import cli
from kcost.model.frozen import frozen
from kcost.render import registry
from kcost.render.printable import LAID_OUT, WRITTEN, printable_texts
from tests.conftest import ROOT

SAMPLE = ROOT / "sample_sessions" / "growing-chat.yaml"
NAME = "a\x1b[31mb\x07\x9b\r\u202ec.yaml"
SHOWN = "a\\x1b[31mb\\x07\\x9b"  # the name as a human format shows it, as far as every format shows it alike
# a control character (C0 but the newline, DEL, C1), or a mark that reverses the text after it on its line
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # a colour or a style, as a coloured table writes its own


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A session log under the file name `NAME`, in the working directory (its path is its name)."""
    shutil.copyfile(SAMPLE, tmp_path / NAME)
    monkeypatch.chdir(tmp_path)
    return NAME


def run(*args: str) -> Result:
    """The command as a user runs it; click strips no escape sequence of its own accord (`color=True`), so what
    kcost writes is what is looked at."""
    result = CliRunner().invoke(cli, list(args), color=True, env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result


def controls(result: Result) -> list[str]:
    """Each control character on stdout and stderr, as its escape."""
    return [f"{ord(c):#x}" for c in CONTROL.findall(result.stdout + result.stderr)]


HUMAN = {"watch": ["--once"], **{f"selfhost {fmt}": ["--format", fmt] for fmt in registry.formats("selfhost")
                                 if fmt in registry.HUMAN}}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HUMAN))
def test_a_file_name_s_control_characters_are_shown_escaped(log: str, case: str) -> None:
    result = run(case.split()[0], log, *HUMAN[case])
    assert not controls(result)
    assert SHOWN in result.stdout  # escaped, not dropped


def test_every_human_format_of_selfhost_is_held() -> None:
    assert {c.split()[-1] for c in HUMAN if c.startswith("selfhost")} == {"table", "markdown", "html"}
    assert registry.HUMAN == LAID_OUT | WRITTEN


def test_watch_piped_shows_each_turn_s_line_escaped(log: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped, `watch` writes a line a new turn, under the log's name: the first frame's lines, then the end."""
    import kcost.live.watch

    endless = kcost.live.watch.frames

    def first(*args: object, **kwargs: object) -> Iterator[object]:
        return itertools.islice(endless(*args, **kwargs), 1)  # type: ignore[arg-type]

    monkeypatch.setattr(kcost.live.watch, "frames", first)
    result = run("watch", log)
    lines = result.stdout.splitlines()
    assert len(lines) > 1 and all(line.startswith(SHOWN) and " turn " in line for line in lines)
    assert not controls(result)


def test_a_coloured_table_keeps_its_colours_and_escapes_the_name(log: str) -> None:
    result = run("selfhost", log, "--color", "always")
    assert SGR.search(result.stdout)  # coloured
    assert not CONTROL.findall(SGR.sub("", result.stdout)) and SHOWN in result.stdout


def test_the_live_view_reads_no_markup_in_a_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "[bold]x[red]:warning:.yaml"  # markup and an emoji code, read as such, would show as x⚠.yaml
    shutil.copyfile(SAMPLE, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    assert run("watch", name, "--once").stdout.splitlines()[0] == name


def test_a_file_passed_over_is_named_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`selfhost` of a folder tells on stderr of a log in it with no model call, by its name."""
    import json as codec

    lines = (ROOT / "tests" / "fixtures" / "claude-code" / "spotter-short.jsonl").read_text().splitlines()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / NAME.replace(".yaml", ".jsonl")).write_text(
        "".join(line + "\n" for line in lines if codec.loads(line).get("type") != "assistant")
    )
    shutil.copyfile(SAMPLE, tmp_path / "logs" / "growing-chat.yaml")
    monkeypatch.chdir(tmp_path)
    result = run("selfhost", "logs", "--format", "markdown")
    assert "no model calls in it" in result.stderr and SHOWN in result.stderr
    assert not controls(result)


def test_json_keeps_the_name_exact(log: str) -> None:
    assert json.loads(run("selfhost", log, "--format", "json").stdout)["workload"]["source"] == NAME


class Kind(str, Enum):
    A = "a"


@frozen
class Inner:
    label: str | None
    count: int


@frozen(slots=True)
class Outer:
    name: str
    cost: Decimal
    kind: Kind
    inner: tuple[Inner, ...]
    by_name: dict[str, list[str]]


def test_printable_texts_escapes_every_text_and_copies_only_what_changes() -> None:
    clean = Inner("fine", 1)
    report = Outer("n\x1b", Decimal("0.1"), Kind.A, (clean, Inner("l\x07", 2)), {"k\x9b": ["v\r"], "ok": ["ok"]})
    shown = printable_texts(report)
    assert shown == Outer("n\\x1b", Decimal("0.1"), Kind.A, (clean, Inner("l\\x07", 2)),
                          {"k\\x9b": ["v\\x0d"], "ok": ["ok"]})  # fmt: skip
    assert shown.inner[0] is clean and shown.by_name["ok"] is report.by_name["ok"]
    assert report.name == "n\x1b" and report.inner[1].label == "l\x07"  # the report itself as it was
    untouched = Outer("n", Decimal(0), Kind.A, (clean,), {"tab\tand no-break\u00a0space": []})
    assert printable_texts(untouched) is untouched


def test_what_a_run_tells_on_stderr_escapes_a_file_name(tmp_path: Path) -> None:
    """`kcost bill` of a folder that holds a file of no session, named with controls: the "passed over" line
    escapes them (it reached the terminal raw through bill, explain, compare and check)."""
    from click.testing import CliRunner

    from kcost.cli import cli

    (tmp_path / "s.yaml").write_text((ROOT / "sample_sessions" / "growing-chat.yaml").read_text())
    (tmp_path / "a\x1b[31mred\x07.jsonl").write_text('{"x": 1}\n')
    for command in ("bill", "explain", "compare", "check"):
        result = CliRunner().invoke(cli, [command, str(tmp_path), "--verbose"] if command == "bill" else
                                    [command, str(tmp_path)])  # fmt: skip
        assert "\x1b" not in result.stderr and "\x07" not in result.stderr, (command, result.stderr)
