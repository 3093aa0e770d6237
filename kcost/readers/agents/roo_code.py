"""Roo Code tasks (`<VS Code user data>/User/globalStorage/rooveterinaryinc.roo-cline/tasks/<task id>/`): what each
would cost on K3.

Roo Code is a fork of Cline and keeps a task as Cline's classic extension does (`kcost.readers.agents.cline`,
which reads both): `ui_messages.json`, `api_conversation_history.json`, `task_metadata.json` and, from 3.49.0,
`history_item.json` (RooCodeInc/Roo-Code v3.52.1 `src/shared/globalFileNames.ts`,
`src/core/task-persistence/TaskHistoryStore.ts`); the folder is `rooveterinaryinc.roo-code-nightly` for the
nightly build, `roo-cline.customStoragePath` when that setting is set (`src/utils/storage.ts`), and the Roo CLI's
`~/.vscode-mock/global-storage/tasks/` (`apps/cli/src/lib/task-history/index.ts`). Task ids are UUIDs.

A `say: "api_req_started"` row is one request (`src/core/task/Task.ts`, `updateApiReqMsg`; a retry streams into
the same row); its `text` is `ClineApiReqInfo` (`packages/types/src/vscode-extension-host.ts`): `tokensIn`,
`tokensOut`, `cacheWrites`, `cacheReads`, `cost` and, from 3.23.7, `apiProtocol` (`anthropic` for Anthropic,
Bedrock, MiniMax and Claude on Vertex; `openai` for the rest: `getApiProtocol`,
`packages/types/src/provider-settings.ts`). From 3.29.5 (commit `416fa5727e`) `tokensIn` is the whole prompt,
the cache reads and writes in it, for both protocols (`src/shared/cost.ts`, `totalInputTokens`;
`packages/core/src/message-utils/consolidateTokenUsage.ts`); before it an `anthropic` row's `tokensIn` left them
out, which such a row's counts show (`tokensIn` below `cacheReads + cacheWrites`): its prompt is then
`tokensIn + cacheWrites + cacheReads`. The cached tokens are `cacheReads`, the writes `cacheWrites` (on an
`openai` row that holds just the rest of the prompt, DeepSeek's misses: `src/api/providers/deepseek.ts`; no
writes), the output `tokensOut` (reasoning in it). The logged `cost` of Anthropic's own handler prices only the
first output token (`src/api/providers/anthropic.ts`): kcost does not use it.

The model is not in the row: each request's user message in the API history carries the environment details,
whose `<model>` names it (`src/core/environment/getEnvironmentDetails.ts`); the row comes before its user
message (`Task.ts`, `say("api_req_started")` then `addToApiConversationHistory`), so a row's model is that of
the first user message added after it. The prompt is the API history up to that message, less what a condense
summary (`isSummary`, `condenseId`) or truncation marker stands for (`condenseParent`, `truncationParent`:
`src/core/task-persistence/apiMessages.ts`); the system prompt and tools are not logged. A condense's own call
logs its cost only (`say: "condense_context"`, `contextCondense.cost`: `src/core/condense/index.ts`), no tokens:
it is named in the notes, not billed. A checkpoint restore folds the requests it removes into one
`api_req_deleted` row (`src/core/checkpoints/index.ts`), billed as reported (Roo's own totals leave it out). A
subtask (`new_task`) is a task folder of its own, linked by `parentTaskId` in its `history_item.json`. ccusage
20.0.24 does not read Roo Code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kcost.errors import InputError, Leniency
from kcost.model.calls import Call, Usage
from kcost.readers.agents.cline import (
    API_FILE,
    TASK_FILES,
    ModelOf,
    Row,
    counts,
    first_match,
    is_task_folder,
    load_json,
    task_calls,
    task_owner,
)
from kcost.readers.registry import Reader
from kcost.readers.source import Source
from kcost.readers.usage import MAX_COUNT

_HISTORY_ITEM = "history_item.json"
_MODEL = re.compile(r"<model>([^<\n]+)</model>")
_WORKSPACE = re.compile(rb"# Current Workspace Directory \(([^)\n]+)\)")


class RooCode(Reader):
    name = "roo-code"
    one_call = "an `api_req_started` row of a task's `ui_messages.json`"
    usage_read = (
        "`tokensIn` (holds `cacheReads` and `cacheWrites`; an older `anthropic` row whose `tokensIn` is below "
        "them: + both), `tokensOut` (holds the reasoning)"
    )
    source_read = (
        "RooCodeInc/Roo-Code v3.52.1 `src/core/task/Task.ts`, `src/shared/cost.ts`, "
        "`packages/core/src/message-utils/consolidateTokenUsage.ts`; v3.28.0 for the older rows"
    )
    comparable = False  # whichever provider's cache served it: its hits need not be Kimi's

    def is_session_folder(self, folder: Path) -> bool:
        """A task folder that is not Cline's."""
        return is_task_folder(folder) and task_owner(folder) in ("roo-code", None)

    def folder_of(self, file: Path) -> Path | None:
        named = file.name in (*TASK_FILES, _HISTORY_ITEM)
        return file.parent if named and self.is_session_folder(file.parent) else None

    def read(
        self, unit: Source | Path, notes: list[str], *, prompts: bool = True, leniency: Leniency
    ) -> Iterator[Call]:
        if not isinstance(unit, Path):
            raise InputError("give the Roo Code task folder", source=unit.name, field="input_format")
        return task_calls(unit, notes, prompts=prompts, leniency=leniency, usage_of=roo_usage,
                          model_of=_model_of(), totals=frozenset({"api_req_deleted"}),
                          said=lambda messages: _condensed(messages, notes))  # fmt: skip

    def project(self, unit: Source | Path) -> str | None:
        """The task's workspace: its `history_item.json`, else the "Current Workspace Directory" of its first
        request's environment details."""
        if not isinstance(unit, Path):
            return None
        if (unit / _HISTORY_ITEM).is_file():
            try:
                item = load_json(unit / _HISTORY_ITEM)
            except InputError:
                item = {}
            workspace = item.get("workspace") if isinstance(item, Mapping) else None
            if isinstance(workspace, str) and workspace:
                return workspace
        return first_match(_WORKSPACE, unit / API_FILE)


def roo_usage(row: Row, provider: str | None) -> Usage | None:
    """A row's counts (see the module's docstring); None: no usage in it."""
    tokens_in, tokens_out, writes, reads = counts(row.info, "text")
    if not (tokens_in or tokens_out or writes or reads):
        return None
    anthropic = row.info.get("apiProtocol") == "anthropic"
    prompt = tokens_in + writes + reads if anthropic and tokens_in < reads + writes else tokens_in
    if prompt > MAX_COUNT:
        raise InputError(f"{prompt:,} prompt tokens is past any context window", field="text.tokensIn")
    if reads + writes > prompt:
        raise InputError(f"cacheReads ({reads}) and cacheWrites ({writes}) exceed tokensIn ({prompt})",
                         field="text.tokensIn")  # fmt: skip
    misses = not anthropic and writes and reads + writes == prompt  # DeepSeek's misses, no writes
    return Usage(prompt=prompt, cached=reads, output=tokens_out, written=0 if misses else writes)


def _model_of() -> ModelOf:
    """A row's model: the `<model>` of the environment details its request sent, else the last one named."""
    last: list[str | None] = [None]

    def model_of(row: Row, user: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
        found = _MODEL.findall(_text_of(user.get("content"))) if user is not None else []
        if found:
            last[0] = found[-1].strip() or last[0]
        return last[0], None

    return model_of


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)) \
        if isinstance(content, list) else ""  # fmt: skip


def _condensed(messages: list[Any], notes: list[str]) -> None:
    """Names the condenses whose calls logged a cost but no tokens."""
    costs = [m["contextCondense"].get("cost") for m in messages if isinstance(m, Mapping)
             and m.get("say") == "condense_context" and isinstance(m.get("contextCondense"), Mapping)]  # fmt: skip
    if costs:
        spent = sum(c for c in costs if isinstance(c, (int, float)) and not isinstance(c, bool))
        notes.append(f"{len(costs)} context condense call(s) logged with a cost (${spent:.6g} at Roo's prices) "
                     "and no token counts: not billed")  # fmt: skip
