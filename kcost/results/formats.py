"""`kcost formats`: every input format kcost reads, where each agent keeps its logs, and what its usage means, as
the registry (`kcost.readers.registry`) and each reader say."""

from __future__ import annotations

from dataclasses import field

from kcost.model.frozen import frozen


@frozen(slots=True, kw_only=True)
class Format:
    """One input format: its `--input-format` name, what it reads, where its agent keeps its logs (none: kcost reads
    them only where told), and, for an agent's logs, what one call is, how its usage becomes a prompt and an output,
    and the source that was read from."""

    name: str
    reads: str
    home: str | None = None  # "VARIABLE, else ~/.agent: sessions/ (*.jsonl)"
    variable: str | None = None  # the environment variable that moves the home
    defaults: list[str] = field(default_factory=list)  # the folders the home is, the variable unset
    logs: list[str] = field(default_factory=list)  # the log folders read under it
    files: str | None = None  # how its log files are named (a pattern)
    one_call: str = ""
    usage: str = ""
    source: str = ""


@frozen(slots=True, kw_only=True)
class FormatListing:
    """Every format, in the order detection tries them (turn specs first)."""

    formats: list[Format]
