"""Readers: one module per input format, each turning a file (or a folder of them) into sessions of requests.

`read_all(paths)` finds each format by name and first record: turn specs (YAML, JSON, JSONL) and the
transcript formats of `registry.READERS`. A folder is walked: every session in it is read, and files that are
none of these are passed over and counted. `--input-format` overrides the guess. Nothing heavy is imported
here: the command line's help imports the registry through this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kcost.model.session import Session
    from kcost.prompts.tokenizer import TokenCounter
    from kcost.readers.discover import Found, Keeper, Spread, Walk


def read(path: str, fmt: str = "auto", *, counter: TokenCounter | None = None) -> list[Session]:
    """Every session in `path` (`-` for stdin, a file, or a folder)."""
    return read_all([path], fmt, counter=counter).sessions


def read_all(
    paths: Sequence[str | Walk],
    fmt: str = "auto",
    *,
    counter: TokenCounter | None = None,
    prompts: bool = True,
    workers: int | None = None,
    lenient: bool = False,
    required: bool = True,
    spread: Spread | None = None,
    kept: Keeper | None = None,
) -> Found:
    """Every session in `paths`, and the files passed over. `prompts=False`: only what the logs say was billed
    is wanted (`--usage reported`), so no prompt is rebuilt or counted, and large folders of logs are read by
    `workers` processes at once (None: one per core, once the logs are large enough). `lenient`: a record whose
    usage or time is bad is skipped and counted in the session's notes, not an error. `required`: finding no
    session is an error. `spread`: where logs are read apart from this process, and what is done with each
    session there (`kcost.readers.discover.Spread`). `kept`: the ledger (`kcost.ledger.reading.Kept`)."""
    from kcost.readers.discover import read_all as read_all_

    return read_all_(paths, fmt, counter=counter, prompts=prompts, workers=workers, lenient=lenient,
                     required=required, spread=spread, kept=kept)  # fmt: skip
