"""Roo Code's task folders: one call per `api_req_started` row, `tokensIn` read as Roo's version wrote it, the
model from the environment details the request sent, the prompt rebuilt less what a condense stands for, and
where `kcost bill` finds them.

ccusage 20.0.24 does not read Roo Code: the reference totals are Roo's own (RooCodeInc/Roo-Code v3.52.1
`consolidateTokenUsage`, kept in each task's `history_item.json`), derived in the research notes of issue 48.
tokscale (junhoyeo/tokscale v4.6.0 `sessions/roocode.rs`) takes `tokensIn` as the uncached input, so since Roo
3.29.5 it counts the cached tokens twice (input 66,003 and cache read 43,904 for the parent task), gives every
row the last `<model>` of the history and reads neither VSCodium nor the Roo CLI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcost.cli import cli
from kcost.errors import Leniency
from kcost.readers.agents.roo_code import RooCode
from kcost.readers.discover import read_all
from tests.readers.helpers import as_home, bill, counts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "roo-code"
PARENT = FIXTURES / "019d77b3-46b8-74fa-9a51-3f0c2b8e4d11"  # Orchestrator, Anthropic, one condense
CHILD = FIXTURES / "019d77b3-bfd0-79f1-84d0-e91b6f03a5c2"  # its subtask, Moonshot's kimi-k2.5
LEGACY = FIXTURES / "6f1d2c9e-3b7a-4e55-8d1e-2a9c0b7f5e31"  # Roo 3.28 (in VSCodium): `tokensIn` without the cache


def sessions(report: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = report["runs"][0]["sessions"]
    return found


def test_tokens_in_holds_the_cache_since_3_29_5() -> None:
    (session,) = read_all([str(PARENT)]).sessions
    assert session.agent == "roo-code" and session.project == "/home/dev/dateparse"
    assert counts(session) == [(15_890, 0, 15_872, 512), (18_185, 15_872, 2_304, 389), (19_598, 18_176, 1_410, 240),
                               (12_330, 9_856, 2_460, 198)]  # fmt: skip
    assert session.call_models == ("claude-sonnet-4-5",) * 4
    item = json.loads((PARENT / "history_item.json").read_text())
    prompt, cached, written, output = (sum(c[i] for c in counts(session)) for i in range(4))
    assert (prompt, cached, written, output) == (item["tokensIn"], item["cacheReads"], item["cacheWrites"],
                                                 item["tokensOut"])  # fmt: skip
    # tokscale's reading: input = tokensIn, cache on top: each cached token twice
    assert prompt + cached == 66_003 + 43_904


def test_an_older_anthropic_row_left_the_cache_out() -> None:
    (session,) = read_all([str(LEGACY)]).sessions
    assert counts(session) == [(4 + 12_210, 0, 12_210, 398), (6 + 880 + 12_210, 12_210, 880, 145)]
    assert session.call_models == ("claude-sonnet-4-20250514",) * 2 and session.project == "/home/dev/cachelib"


def test_an_openai_protocol_row_and_a_subtask() -> None:
    (session,) = read_all([str(CHILD)]).sessions
    assert counts(session) == [(10_240, 0, 0, 640), (11_322, 10_240, 0, 212)]
    assert session.call_models == ("kimi-k2.5",) * 2
    (parent,) = read_all([str(PARENT)]).sessions
    assert parent.name != session.name  # a subtask is a session of its own: no usage is copied to its parent


def test_a_condense_leaves_its_summary_and_its_cost_in_the_notes() -> None:
    notes: list[str] = []
    calls = list(RooCode().read(PARENT, notes, leniency=Leniency(False)))
    last = calls[-1]
    assert last.compacted and last.messages is not None and [m.role for m in last.messages] == ["user", "user"]
    assert last.messages[0].content.startswith("## Conversation Summary")
    assert calls[2].messages is not None and len(calls[2].messages) == 7 and not calls[2].compacted
    assert any("condense" in n and "0.059565" in n for n in notes)
    assert all(c.unlogged == "system prompt and tools" for c in calls)


def test_the_default_bill_simulates_the_cache() -> None:
    (session,) = sessions(bill(str(PARENT)))
    assert session["usage"] == "simulated" and [t["input_tokens"] for t in session["turns"]] == [
        15_890, 18_185, 19_598, 12_330]  # fmt: skip


def test_a_checkpoint_restore_total_is_billed_as_reported(tmp_path: Path) -> None:
    folder = tmp_path / CHILD.name
    shutil.copytree(CHILD, folder)
    ui = json.loads((folder / "ui_messages.json").read_text())
    removed = {"tokensIn": 9_000, "tokensOut": 50, "cacheWrites": 0, "cacheReads": 8_192}
    ui.append({"ts": 1775829830000, "type": "say", "say": "api_req_deleted", "text": json.dumps(removed)})
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    (session,) = sessions(bill(str(folder), "--usage", "reported"))
    assert [t["input_tokens"] for t in session["turns"]] == [10_240, 11_322, 9_000]
    (simulated,) = sessions(bill(str(folder)))
    assert len(simulated["turns"]) == 2 and any("api_req_deleted" in n for n in simulated["notes"])


def test_whose_task_a_folder_is(tmp_path: Path) -> None:
    """Cline's and Roo's task folders hold the same files: told apart by the storage folder they lie in, then by
    the task id (Cline's `Date.now()`, Roo's a UUID), then by what only one writes (Roo's `apiProtocol`)."""
    (session,) = read_all([str(PARENT)]).sessions
    assert session.agent == "roo-code"
    named = tmp_path / "saoudrizwan.claude-dev" / "tasks" / PARENT.name
    shutil.copytree(PARENT, named)
    (session,) = read_all([str(named)]).sessions
    assert session.agent == "cline"
    shutil.copytree(LEGACY, tmp_path / "my-task")
    (session,) = read_all([str(tmp_path / "my-task")]).sessions
    assert session.agent == "roo-code"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home holding Roo's tasks in VS Code's and VSCodium's globalStorage, the agents' variables unset."""
    folder = tmp_path / "home"
    tasks = "User/globalStorage/rooveterinaryinc.roo-cline/tasks"
    for task in (PARENT, CHILD):
        shutil.copytree(task, folder / ".config/Code" / tasks / task.name)
    shutil.copy(FIXTURES / "_index.json", folder / ".config/Code" / tasks / "_index.json")
    shutil.copytree(LEGACY, folder / ".config/VSCodium" / tasks / LEGACY.name)
    as_home(folder, monkeypatch, "APPDATA", "LOCALAPPDATA")
    return folder


def test_kcost_finds_every_home(home: Path) -> None:
    for args in ((), ("--input-format", "roo-code")):
        found = sessions(bill(*args))
        assert sorted(s["name"] for s in found) == sorted([PARENT.name, CHILD.name, LEGACY.name])
    result = CliRunner().invoke(cli, ["bill", "--by", "agent", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)["rows"]
    assert row["group"] == "roo-code" and row["turns"] == 4 + 2 + 2


def test_its_variable_names_a_custom_storage_path(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(CHILD, home / "roo-storage" / "tasks" / CHILD.name)
    shutil.rmtree(home / ".config")
    monkeypatch.setenv("ROO_CODE_STORAGE_PATH", str(home / "roo-storage"))
    (session,) = sessions(bill("--input-format", "roo-code"))
    assert session["name"] == CHILD.name
