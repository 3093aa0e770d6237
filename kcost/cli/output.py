"""Where a report goes and how it looks there: stdout or `-o FILE` (written whole, only once the run has
succeeded), the table width, and colour.

Colour follows the usual rules, in order: `--color always|never`; then `FORCE_COLOR` (set and not empty: on);
then `NO_COLOR` (set and not empty: off, https://no-color.org); then on only for a terminal on stdout. Width:
`--width`, else the terminal's, else `COLUMNS`; piped output without either is not wrapped.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from kcost.errors import InputError

UNWRAPPED = 10_000  # columns: piped output is never wrapped, whatever its longest line
MIN_WIDTH = 40


def emit(text: str, output: str | None) -> None:
    """To stdout, or to `output` all at once and only now that the run succeeded."""
    if output is None or output == "-":
        click.echo(text, nl=False, color=True)  # colour was decided already: click must not strip it again
        return
    import tempfile
    from pathlib import Path

    target = Path(output)
    if target.is_symlink() or (target.exists() and not target.is_file()):
        try:  # a device or a link: write through it, as a shell redirection would
            with target.open("w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", source=output) from None
        return
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.chmod(tmp, _mode_for(target))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write: {exc.strerror}", source=output) from None


def _mode_for(target: Any) -> int:
    """The mode a plain `open()` would give: the old file's, or 0o666 less the umask."""
    try:
        mode: int = target.stat().st_mode & 0o777
        return mode
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def width(given: int | None, output: str | None = None) -> int:
    """--width, else the terminal's (output to stdout on a terminal), else COLUMNS, else not wrapped."""
    if given:
        return given
    raw = os.environ.get("COLUMNS", "")
    if (output is None or output == "-") and sys.stdout.isatty():
        import shutil

        columns = shutil.get_terminal_size((100, 24)).columns
    elif raw.isdecimal() and int(raw) > 0:
        columns = int(raw)
    else:
        return UNWRAPPED
    return min(max(columns, MIN_WIDTH), 400)


def use_color(choice: str, output: str | None = None) -> bool:
    """--color always|never|auto; auto: FORCE_COLOR, then NO_COLOR (each when set and not empty), then a terminal."""
    if choice in ("always", "never"):
        return choice == "always"
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return (output is None or output == "-") and sys.stdout.isatty()
