"""One registry of transcript readers: detection, `--input-format`, the help text and `kcost formats` all list the
same readers, in the registry's order, and every reader implements the same contract. Adding a reader touches its
module, its registry line, its fixtures (`tests/fixtures/<format>/`) and its tests, nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.cli.bills import bill
from kcost.errors import InputError
from kcost.readers.discover import read_all, reads_folders
from kcost.readers.registry import INPUT_FORMATS, NAMES, READERS, TURN_FORMATS, Reader
from tests.conftest import ROOT

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIRST = {  # where a format's fixtures folder holds several kinds of file: the one its contract is checked on
    "kimi-api": "kimi-api/pairs.jsonl",
    "kimi-cli": "kimi-cli/sessions/0b7c55b8e1d46a1f3c2e9d8a7b6c5d4e/with-thinking",
    "kimi-code": "kimi-code/tool-turn.wire.jsonl",
    "claude-code": "claude-code/spotter-short.jsonl",
    "codex": "codex/ccusage-session-alpha.jsonl",
    "opencode": "opencode/storage/message/ses_6a1f0c2e8ffeQm3cVtD9bX4kLw",
    "gemini-cli": "gemini-cli/session-2026-01-10T09-30-5f0c2f3e.jsonl",
    "qwen-code": "qwen-code/7d2e9a4c-1b3f-4e5d-8a6b-9c0d1e2f3a4b.jsonl",
}


def one_each() -> dict[str, str]:
    """A fixture of every format, found without --input-format: its `FIRST`, else the first file or folder (in name
    order) of `tests/fixtures/<format>/` that detection reads as one session of that format, else (a store holding
    several, as a database) as sessions of that format."""
    found: dict[str, str] = {}
    for name in NAMES:
        if name in FIRST:
            found[name] = FIRST[name]
            continue
        folder = FIXTURES / name
        assert folder.is_dir(), f"{name}: no fixtures in tests/fixtures/{name}/"
        several = None
        for path in sorted(p for p in folder.rglob("*") if not p.name.startswith((".", "_")) and p.suffix != ".py"):
            try:
                sessions = read_all([str(path)]).sessions
            except InputError:
                continue
            if sessions and all(s.agent == name for s in sessions):
                if len(sessions) == 1:
                    found[name] = str(path.relative_to(FIXTURES))
                    break
                several = several or str(path.relative_to(FIXTURES))
        if name not in found and several is not None:
            found[name] = several
        assert name in found, f"{name}: no file of tests/fixtures/{name}/ is read as {name}"
    return found


ONE_EACH = one_each()


def test_registry_detection_options_help_and_formats_list_the_same_readers() -> None:
    assert set(ONE_EACH) == set(NAMES)
    # detection: each format's file is found as that format
    for name, rel in ONE_EACH.items():
        found = read_all([str(FIXTURES / rel)])
        assert found.sessions, name
        explicit = read_all([str(FIXTURES / rel)], name)
        assert [s.requests for s in found.sessions] == [s.requests for s in explicit.sessions], name
    # --input-format: auto, the turn-spec formats, then the registry's, in its order
    option = next(p for p in bill.params if p.name == "input_format")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == INPUT_FORMATS == ("auto", *TURN_FORMATS, *NAMES)
    # the help text names every reader, and `kcost formats` lists each with its description and home, in order
    result = CliRunner().invoke(cli, ["bill", "--help"], terminal_width=10_000)
    help_text = " ".join(result.output.split())
    assert ", ".join(NAMES) + " (agents' logs" in help_text
    result = CliRunner().invoke(cli, ["formats", "--format", "json"])
    listed = json.loads(result.stdout)["formats"]
    assert [f["name"] for f in listed] == [*TURN_FORMATS, *NAMES]
    for e, f in zip(READERS, listed[len(TURN_FORMATS) :], strict=True):
        assert f["reads"] == e.what and (f["variable"] == (e.home and e.home.env))
        if e.home is not None:
            assert f["home"].startswith(e.home.env) and all(d in f["home"] for d in e.home.defaults)
    markdown = CliRunner().invoke(cli, ["formats", "--format", "markdown"]).stdout
    assert re.findall(r"^\| `([a-z-]+)` \|", markdown, flags=re.M) == [*TURN_FORMATS, *NAMES, *NAMES]


@pytest.mark.parametrize("entry", READERS, ids=lambda e: e.name)
def test_every_reader_implements_the_contract(entry: object) -> None:
    from kcost.readers.registry import Entry

    assert isinstance(entry, Entry)
    reader = entry.load()
    assert isinstance(reader, Reader) and reader.name == entry.name
    assert type(reader).read is not Reader.read
    # what `kcost formats` says of it: what one call is, how its usage is read, and from which source
    assert reader.one_call and reader.usage_read and reader.source_read, entry.name
    path = FIXTURES / ONE_EACH[entry.name]
    sessions = read_all([str(path)]).sessions
    if len(sessions) == 1 and (path.is_file() or reader.is_session_folder(path)):  # a file or folder of one session
        assert sessions[0].name == reader.session_name(path if path.is_dir() else _source(path))
    for session in sessions:
        assert len(session.times) == len(session.call_models) == len(session.labels)
    # the registry's word that it reads folders is its reader's: only those are loaded to ask of every path
    overrides = type(reader).folder_of is not Reader.folder_of or reads_folders(reader)
    assert bool(entry.folders) == overrides
    # and the names it gives are those of the files it claims the folder of (a file given alone is asked of it
    # only by them): every file of its fixtures
    from fnmatch import fnmatchcase

    fixtures = [f for f in (FIXTURES / ONE_EACH[entry.name].split("/")[0]).rglob("*") if f.is_file()]
    claimed = [f.name for f in fixtures if reader.folder_of(f) is not None]
    assert all(any(fnmatchcase(name, p) for p in entry.folders) for name in claimed)
    assert bool(claimed) == bool(entry.folders)


def _source(path: Path) -> object:
    from kcost.readers.source import open_source

    return open_source(str(path))


def test_a_file_given_alone_loads_only_the_readers_whose_folders_hold_its_kind() -> None:
    """A folder format's reader is asked whether a file given alone belongs to one of its session folders only for
    the names of the files its folders hold: a turn spec loads neither the Kimi CLI's reader nor OpenCode's (a log
    loads those detection asks before its own), a `context.jsonl` still loads the Kimi CLI's and is read as its
    folder."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from kcost.readers.discover import read_all\n"
        "read_all([sys.argv[1]])\n"
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m in ('kcost.readers.agents.kimi_cli', "
        "'kcost.readers.agents.opencode')))\n"
    )

    def loaded(path: Path) -> str:
        run = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
        return run.stdout.strip()

    assert loaded(ROOT / "sample_sessions" / "coding-400k.yaml") == "[]"
    assert loaded(FIXTURES / ONE_EACH["claude-code"]) == "['kimi_cli']"  # detection asked it first
    folder = FIXTURES / ONE_EACH["kimi-cli"]
    assert loaded(folder / "context.jsonl") == "['kimi_cli']"
    (session,) = read_all([str(folder / "context.jsonl")]).sessions
    assert session.source == str(folder)
