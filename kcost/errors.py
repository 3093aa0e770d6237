"""The one error type that input problems raise, and how it names where the problem is.

Readers, the price loader and option parsers raise `InputError`; the CLI turns it into one line on stderr and
exit status 2. The message always reads `where: field: what (hint)`, so a user can go straight to the spot.
A read's `Leniency` says whether a bad record's error stands or the record is skipped (`--lenient`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import ValidationError


# C0 controls but tab and newline, DEL, C1 controls, the line and paragraph separators, and the bidirectional
# marks, embeddings, overrides and isolates (which make what follows them on the line read reversed)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` safe to show on a terminal: every control character (an escape sequence's ESC, a bell, a carriage
    return, C1 controls, a bidirectional override) written as its escape (`\\x1b`, `\\u202e`), so a log cannot
    retitle the window, clear the screen or make a figure read reversed. Tabs and newlines stay."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


class InputError(Exception):
    """Bad input: a file, line or record, a field, and what is wrong with it."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        self.hint = hint

    def __str__(self) -> str:
        where = self.source or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        parts = [p for p in (where, self.field) if p]
        text = ": ".join([*parts, self.message])
        if self.hint:
            text += f" ({self.hint})"
        return " ".join(text.split())  # one line, whatever the parts held

    def located(self, *, source: str | None = None, line: int | None = None) -> InputError:
        """Fill in the location where the raiser did not know it."""
        if self.source is None:
            self.source = source
        if self.line is None:
            self.line = line
        return self


def file_error(exc: OSError | UnicodeDecodeError, path: str, what: str = "file") -> InputError:
    """Why a file could not be read, as one line naming it."""
    if isinstance(exc, UnicodeDecodeError):
        return InputError("not UTF-8 text", source=path)
    if isinstance(exc, FileNotFoundError):
        return InputError("no such file", source=path)
    if isinstance(exc, IsADirectoryError):
        return InputError(f"is a directory; give a {what}", source=path)
    return InputError(f"cannot read: {exc.strerror}", source=path)


def pydantic_error(
    exc: ValidationError,
    source: str,
    line_of: Mapping[tuple[object, ...], int] | None = None,
    prefix: tuple[object, ...] = (),
) -> InputError:
    """The first pydantic error as an `InputError`: `field.path: message`, with its line where known."""
    err = exc.errors(include_url=False)[0]
    loc = prefix + tuple(err["loc"])
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        message = "unknown field"
    elif err["type"] not in ("missing", "value_error") and isinstance(err.get("input"), (str, int, float)):
        message = f"{message} (got {err['input']!r})"
    line = None
    if line_of:
        for cut in range(len(loc), -1, -1):
            line = line_of.get(loc[:cut])
            if line is not None:
                break
    return InputError(message, source=source, line=line, field=format_loc(loc))


def format_loc(loc: tuple[object, ...]) -> str:
    """`('turns', 3, 'new')` -> `turns[3].new`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class Leniency:
    """What a read does with a bad record (negative or absurd counts, a total that goes down, a time that is no
    time): strict, the error stands; lenient (`--lenient`), the record is skipped and its error kept in
    `skipped`. One is made per read and passed to the reader and the parsers it calls."""

    __slots__ = ("lenient", "skipped")

    def __init__(self, lenient: bool = False) -> None:
        self.lenient = lenient
        self.skipped: list[str] = []

    def forgive(self, exc: InputError) -> None:
        """Raise `exc`, unless the read is lenient: then the record is skipped and counted."""
        if not self.lenient:
            raise exc
        self.skipped.append(str(exc))

    def note(self) -> str | None:
        """What the session's notes say of the skipped records, if any was."""
        if not self.skipped:
            return None
        return f"{len(self.skipped)} bad record(s) skipped (--lenient), the first: {self.skipped[0]}"


STRICT = Leniency()  # never lenient, so it never keeps anything: safe to share
