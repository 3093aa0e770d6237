"""The agents' homes: where `kcost bill` with no path finds the logs on this machine, and reading them all.

Each reader with a home names it on its registry line (`registry.Home`): the variable that moves it, the folders
it defaults to, the log folders under it and how its log files are named. A variable that is set (and not empty)
replaces the defaults, as the agent itself does; a log folder counts where it exists, each once (two names of
one folder are one). A session found in two homes of one agent (the same file under two log folders: a home
copied to its new place, as Claude Code's moved from `~/.claude` to `~/.config/claude`) is counted once, the
copy that logs more calls kept: ccusage counts each logged response once too. Nothing here names a reader.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kcost.errors import InputError
from kcost.model.frozen import frozen
from kcost.model.session import Session
from kcost.prompts.tokenizer import TokenCounter
from kcost.readers.discover import Found, Keeper, Spread, Walk, read_all
from kcost.readers.registry import READERS, Home

_VARIABLE = re.compile(r"\$\{(\w+):-([^}]*)\}")


@frozen
class LogFolder:
    """One agent's folder of logs on this machine."""

    agent: str  # the reader's name
    path: Path
    files: str  # how its log files are named (a pattern)


@dataclass
class Read:
    """One log folder read: how many sessions it held (those counted once apart)."""

    folder: LogFolder
    sessions: int = 0


@dataclass
class HomeRead:
    """What reading the homes found: the sessions, each folder's count, and the copies counted once."""

    found: Found
    read: list[Read] = field(default_factory=list)
    copies: int = 0  # sessions found in two places, counted once


def shown(path: Path) -> str:
    """`path` as the user knows it: under the home folder, from `~`."""
    home = Path.home()
    try:
        rest = path.relative_to(home)
    except ValueError:
        return str(path)
    return "~" if rest == Path() else f"~{os.sep}{rest}"


def _expand(raw: str, env: Mapping[str, str]) -> Path:
    """A home as written: `~` the user's home, `${VAR:-fallback}` the folder VAR names, else the fallback."""
    text = _VARIABLE.sub(lambda m: env.get(m.group(1)) or m.group(2), raw.strip())
    if text == "~" or text.startswith("~/"):
        return Path.home() / text[2:]
    return Path(text)


def _homes(home: Home, env: Mapping[str, str]) -> list[Path]:
    """The agent's home folders: those its variable names when it is set, else its defaults."""
    value = env.get(home.env, "").strip()
    if value:
        raw = value.split(",") if home.several else [value]
        return [_expand(r, env) for r in raw if r.strip()]
    return [_expand(d, env) for d in home.defaults]


def _log_folders(home: Home, folder: Path) -> list[Path]:
    """The log folders under one home; a home named by its log folder itself (`.../projects`) is that folder."""
    inside = [folder / logs for logs in home.logs]
    if folder.name in home.logs and not any(p.is_dir() for p in inside):
        return [folder]
    return inside


def places(fmt: str = "auto", env: Mapping[str, str] | None = None) -> tuple[list[LogFolder], list[Path]]:
    """The log folders that exist, in the registry's order (only those of `fmt`'s reader when a format is asked
    for), each once; and every place looked."""
    env = os.environ if env is None else env
    found: list[LogFolder] = []
    looked: list[Path] = []
    seen: set[Path] = set()
    for entry in READERS:
        if entry.home is None or fmt not in ("auto", entry.name):
            continue
        for home in _homes(entry.home, env):
            for folder in _log_folders(entry.home, home):
                looked.append(folder)
                if not folder.is_dir():
                    continue
                real = folder.resolve()
                if real not in seen:
                    seen.add(real)
                    found.append(LogFolder(entry.name, folder, entry.home.files))
    return found, looked


def read_homes(
    fmt: str = "auto",
    *,
    counter: TokenCounter | None = None,
    prompts: bool = True,
    lenient: bool = False,
    env: Mapping[str, str] | None = None,
    spread: Spread | None = None,
    kept: Keeper | None = None,
) -> HomeRead:
    """Every session in the agents' homes (of `fmt`'s reader only, when a format is asked for), read as
    `kcost bill <log folder> ...` reads each. None found is an `InputError` naming the places looked."""
    if fmt != "auto" and not any(e.home is not None and e.name == fmt for e in READERS):
        raise InputError(f"kcost looks for {fmt} logs nowhere by itself", field="input_format",
                         hint="give a session file or folder")  # fmt: skip
    folders, looked = places(fmt, env)
    if folders:
        walks = [Walk(str(f.path), f.files) for f in folders]
        found = read_all(walks, fmt, counter=counter, prompts=prompts, lenient=lenient, required=False,
                         spread=spread, kept=kept)  # fmt: skip
    else:
        found = Found()
    result = _counted_once(found, folders)
    if not result.found.sessions:
        where = ", ".join(dict.fromkeys(shown(p) for p in looked))
        raise InputError(f"no agent logs found in {where}", hint="give a session file or folder")
    return result


def _counted_once(found: Found, folders: list[LogFolder]) -> HomeRead:
    """The sessions with each found in two places of one agent counted once (the copy logging more calls, in
    the place of the first), and how many each folder holds."""
    kept: list[tuple[Session, int | None]] = []  # each session, and the folder it lies in
    at: dict[tuple[str, str], int] = {}  # (agent, path under its log folder) -> index in `kept`
    copies = 0
    for session in found.sessions:
        index = _folder_of(session.source, folders)
        if index is None:
            kept.append((session, None))
            continue
        key = (folders[index].agent, session.source[len(str(folders[index].path)) + 1 :])
        if key not in at:
            at[key] = len(kept)
            kept.append((session, index))
            continue
        copies += 1
        first = at[key]
        if len(session.records) > len(kept[first][0].records):
            kept[first] = (session, index)
    read = [Read(f, sum(i == n for _, i in kept)) for n, f in enumerate(folders)]
    return HomeRead(Found([s for s, _ in kept], found.skipped, found.foreign), read, copies)


def _folder_of(source: str, folders: list[LogFolder]) -> int | None:
    """The log folder a session's source lies in (the deepest, where one holds another)."""
    inside = [n for n, f in enumerate(folders) if source.startswith(str(f.path) + os.sep)]
    return max(inside, key=lambda n: len(str(folders[n].path)), default=None)


def nothing_read(folder: LogFolder, found: Found) -> str:
    """Why a log folder gave no session: it holds no file named as its agent names its logs, or those it holds
    were passed over (how many, and why the first was)."""
    from fnmatch import fnmatchcase

    inside = str(folder.path) + os.sep
    passed = [s for s in found.skipped if s.startswith(inside)] + [f"{f}: of no format kcost reads"
                                                                  for f in found.foreign if f.startswith(inside)]
    if passed:
        return f"{len(passed)} file(s) passed over, the first {passed[0].removeprefix(inside)}"
    if not any(fnmatchcase(f.name, folder.files) for f in folder.path.rglob("*") if f.is_file()):
        return f"no log files in it (named {folder.files})"
    return "its logs hold no model calls"

