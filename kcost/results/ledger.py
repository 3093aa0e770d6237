"""One line of `kcost ledger export` (JSON Lines, version 1), as `kcost schema ledger` describes it: a header,
then per session a `session` line and one `call` line per billed call (`kcost.ledger.manage`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from kcost.model.frozen import frozen


@frozen(slots=True, kw_only=True)
class Header:
    """The export's first line: its format's version, the machine whose ledger it is, and the layout (field names
    in order) of the arrays its records are written as."""

    kind: Literal["header"]
    version: Literal[1]
    machine: str
    layout: dict[str, list[str]]


@frozen(slots=True, kw_only=True)
class UsageLine:
    """A call's usage as its log reports it: prompt tokens (cached and written included), cached, output
    (reasoning included), cache writes, reasoning, and of the writes those kept an hour (null: not said)."""

    prompt: int
    cached: int
    output: int
    written: int
    reasoning: int | None
    written_1h: int | None
    cached_logged: bool


@frozen(slots=True, kw_only=True)
class SessionLine:
    """A session: its machine and identity (agent, log path, name, joined by NUL), whether its log is gone, its
    number of calls, and its fields as the ledger keeps them (all but its records)."""

    kind: Literal["session"]
    machine: str
    ident: str
    agent: str
    gone: bool
    calls: int
    session: dict[str, Any]


@frozen(slots=True, kw_only=True)
class CallLine:
    """One billed call of the session before it: when, on which model, for which conversation (null: the main
    one), where it was read (its log, where the session was read from one file, and the line there), the usage its
    log reports (null: none), the size of its rebuilt prompt in tokens (null: not rebuilt), and its record as the
    ledger keeps it (in the header's `layout.record` order)."""

    kind: Literal["call"]
    machine: str
    ident: str
    index: int
    time: float | None
    model: str | None
    conversation: str | None
    file: str | None
    line: int | None
    usage: UsageLine | None
    prompt_tokens: int | None
    record: list[Any]


ExportLine = Annotated[Union[Header, SessionLine, CallLine], Field(discriminator="kind")]  # noqa: UP007
