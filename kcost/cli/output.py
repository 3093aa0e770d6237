"""Where a report goes and how it looks there: stdout or `-o FILE` (written whole, only once the run has
succeeded), the table width, and colour.

Colour follows the usual rules, in order: `--color always|never`; then `FORCE_COLOR` (set and not empty: on);
then `NO_COLOR` (set and not empty: off, https://no-color.org); then on only for a terminal on stdout. Width:
`--width`, else the terminal's, else `COLUMNS`; piped output without either is not wrapped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import click

from kcost.errors import InputError
from kcost.inputs.files import not_read, noted, will_write

if TYPE_CHECKING:
    from pathlib import Path

UNWRAPPED = 10_000  # columns: piped output is never wrapped, whatever its longest line
MIN_WIDTH = 40


def tell(line: str) -> None:
    """What a run says besides its report (files passed over, folders read): one line on stderr, every control
    character an input (a file's name) put in it escaped."""
    from kcost.errors import printable

    echo(printable(line), err=True)


RECORDED_MOST = 64 << 20  # characters a run's recording holds: past them, its report is not kept


class _Recorder:
    """What a run prints while it is recorded for its report to be kept (`kcost.ledger.reports`): stdout's and
    stderr's text as written (after click took the colour out, where it does)."""

    def __init__(self) -> None:
        self.texts: tuple[list[str], list[str]] = ([], [])
        self.size = 0

    def stream(self, err: bool) -> _Kept:
        return _Kept(self, err)


class _Kept:
    """A standard stream, its text kept by a `_Recorder` as it is written."""

    def __init__(self, recorder: _Recorder, err: bool) -> None:
        self.recorder, self.into, self.out = recorder, recorder.texts[err], sys.stderr if err else sys.stdout

    def write(self, text: str) -> int:
        self.recorder.size += len(text)
        self.into.append(text)
        return int(self.out.write(text))

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return bool(self.out.isatty())


_recording: _Recorder | None = None


def echo(text: str, *, err: bool = False, nl: bool = True, color: bool | None = None) -> None:
    """`click.echo`, kept where the run is recorded."""
    global _recording
    if _recording is not None and _recording.size > RECORDED_MOST:
        _recording = None  # too large to keep: printed, not recorded
    kept: Any = None if _recording is None else _recording.stream(err)  # a text stream, as click takes one
    click.echo(text, nl=nl, err=err, color=color, file=kept)


def record() -> None:
    """Keep from now on what the run prints (`recorded`)."""
    global _recording
    _recording = _Recorder()


def recorded() -> tuple[str, str] | None:
    """What the run printed since `record`, (stdout, stderr), and recording ends; None where none was recorded."""
    global _recording
    kept, _recording = _recording, None
    return None if kept is None else ("".join(kept.texts[0]), "".join(kept.texts[1]))


def emit(text: str, output: str | None) -> None:
    """To stdout, or to `output` all at once and only now that the run succeeded."""
    emit_all([(text, output)])


def emit_all(outputs: list[tuple[str, str | None]]) -> None:
    """Several outputs of one run (a report and a picture): every file is written aside first, and only when all
    are written are they put in place, then stdout; a failure leaves nothing behind."""
    from pathlib import Path

    staged: list[tuple[str, Path]] = []
    direct: list[tuple[str, str]] = []  # devices and links: written once every other file is staged
    for _, output in outputs:
        if output is not None and output != "-":
            not_read(output)
    try:
        for text, output in outputs:
            if output is None or output == "-":
                continue
            target = Path(output)
            if _through(target):
                direct.append((text, output))
            else:
                staged.append((_staged(target, output, [text]), target))
        for text, output in direct:
            _write(output, [text])
        for tmp, target in staged:
            os.replace(tmp, target)
        staged = []
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
    for text, output in outputs:
        if output is None or output == "-":
            echo(text, nl=False, color=True)  # colour was decided already: click must not strip it again


SPOOL_BYTES = 1 << 22  # text held in memory before `emit_lines` spools it to a temporary file
BLOCK = 1 << 20  # the text written (and read back from a spool) at a time


def emit_lines(chunks: Iterable[str], output: str | None) -> None:
    """Text made a piece at a time (a bill streamed as it is billed) to stdout or `output`, held nowhere whole and
    still written only once the run has succeeded: staged in a temporary file beside `output` and put in place at
    the end, or (for stdout, a link or a device) held until the end, in memory up to `SPOOL_BYTES`, past them in
    an anonymous temporary file, and copied out then."""
    from pathlib import Path

    target = Path(output) if output is not None and output != "-" else None
    if output is not None and output != "-":
        not_read(output)
    if target is not None and not _through(target):
        assert output is not None
        tmp = _staged(target, output, chunks)
        try:
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return
    held: list[str] = []
    size = 0
    pieces = iter(chunks)
    for chunk in pieces:
        held.append(chunk)
        size += len(chunk)
        if size > SPOOL_BYTES:
            break
    else:  # all of it, in memory
        _out("".join(held), output)
        return
    import tempfile

    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        spool.write("".join(held))
        held.clear()
        spool.writelines(_blocks(pieces))
        spool.seek(0)
        if target is None:
            while block := spool.read(BLOCK):
                echo(block, nl=False, color=True)
            return
        assert output is not None
        _write(output, iter(lambda: spool.read(BLOCK), ""))


def _out(text: str, output: str | None) -> None:
    """Text to stdout (`output` None or `-`), or straight into `output` (a device or a link)."""
    if output is None or output == "-":
        echo(text, nl=False, color=True)
    else:
        _write(output, [text])


def _through(target: Path) -> bool:
    """A device or a link: written through, as a shell redirection would, not replaced by a staged file."""
    return target.is_symlink() or (target.exists() and not target.is_file())


def _blocks(chunks: Iterable[str], size: int = BLOCK) -> Iterator[str]:
    """The chunks joined into blocks of about `size` characters: a file written a block at a time, not a piece
    at a time (a bill's JSON comes in some ten pieces a turn)."""
    block: list[str] = []
    held = 0
    for chunk in chunks:
        block.append(chunk)
        held += len(chunk)
        if held >= size:
            yield "".join(block)
            block.clear()
            held = 0
    if block:
        yield "".join(block)


def _staged(target: Path, output: str, chunks: Iterable[str]) -> str:
    """A temporary file beside `target`, with the mode `open()` would give it, holding `chunks`; its path. On any
    failure (the disk's, or the text's own: a bill streamed into it may fail half way) it is gone."""
    import tempfile
    from pathlib import Path

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", source=output) from None
    try:
        os.chmod(tmp, _mode_for(target))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.writelines(_blocks(chunks))
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write: {exc.strerror}", source=output) from None
        raise
    return tmp


def _write(output: str, blocks: Iterable[str]) -> None:
    """The text straight into `output` (a device or a link)."""
    try:
        with open(output, "w", encoding="utf-8") as fh:
            for block in blocks:
                fh.write(block)
    except OSError as exc:
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


def table_width(given: int | None, output: str | None = None) -> int:
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


def view(output: str | None, width: int | None, color: str, **shown: Any) -> Any:
    """How a report is shown (`kcost.render.registry.View`): the table's width and colour for where it goes, and
    what else the command asks (`summary`, `numbers`, `only_changed`)."""
    from kcost.render.registry import View

    return View(width=table_width(width, output), color=use_color(color, output), **shown)


# the options that name files a command reads, and those that name files it writes
_READS = ("paths", "path", "before", "after", "prices_file", "baseline", "tokenizer", "config_file")
_WRITES = ("output", "plot")


def refuse_overwrite(params: dict[str, Any]) -> None:
    """Refuse, before anything is read, an output that is one of the files the command line names (the same file,
    by device and inode, whatever path or link names it): `bill s.yaml -o s.yaml` would replace the session with
    its bill. The files the run goes on to find and read are held to the same rule when the report is written
    (`kcost.inputs.files.not_read`)."""
    for name in _READS:
        value = params.get(name)
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(path, str) and path != "-":
                noted(path)  # not there (yet): the read names it
    for name in _WRITES:
        path = params.get(name)
        if isinstance(path, str) and path != "-":
            will_write(path, "-o" if name == "output" else f"--{name}")
