"""Where the settings come from: `kcost.toml` (keys at the top level) or the `[tool.kcost]` table of
`pyproject.toml`, the nearest one up from the working directory. Found and read for every command; validated by
`kcost.budgets` (pydantic) only when there is a file, so a run without one imports no validator.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError

if TYPE_CHECKING:
    from kcost.budgets import Budgets


@dataclass(frozen=True)
class Settings:
    """What the config file says (paths made relative to it), or the defaults."""

    cache: str | None = None
    prices: str | None = None
    usage: str | None = None
    baseline: str | None = None
    budgets: Budgets | None = None


def config_for(path: str | None) -> Settings:
    """The config named, else the nearest one up from the working directory, else the defaults."""
    if path:
        if not Path(path).is_file():
            raise InputError("no such file", source=path, field="config")
        found: Path | None = Path(path)
    else:
        found = find_config()
    return Settings() if found is None else load_config(found)


def load_config(path: Path) -> Settings:
    """A config file, validated strictly (by `kcost.budgets`); paths in it are relative to it."""
    from kcost.budgets import validate_config

    data: Any = read_toml(path)
    prefix: tuple[object, ...] = ()
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data, prefix = (tool.get("kcost", {}) if isinstance(tool, dict) else None), ("tool", "kcost")
    config = validate_config(data, str(path), prefix)
    if config.cache is not None:  # checked here, where the file and the key can be named
        from kcost.cache import parse_cache_model

        try:
            parse_cache_model(config.cache)
        except InputError as exc:
            raise InputError(exc.message, source=str(path), field=".".join([*map(str, prefix), "cache"]),
                             hint=exc.hint) from None  # fmt: skip
    base = path.parent
    return Settings(
        cache=config.cache,
        prices=str(base / config.prices) if config.prices else None,
        usage=config.usage,
        baseline=str(base / config.baseline) if config.baseline else None,
        budgets=config.budgets,
    )


def find_config(start: Path | None = None) -> Path | None:
    """The nearest kcost.toml, or pyproject.toml with a [tool.kcost] table, from `start` up."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / "kcost.toml"
        if own.is_file():
            return own
        project = folder / "pyproject.toml"
        if project.is_file() and _mentions_kcost(project):
            tool = read_toml(project).get("tool")
            if isinstance(tool, dict) and "kcost" in tool:
                return project
    return None


def _mentions_kcost(path: Path) -> bool:
    """Whether a pyproject.toml could hold a [tool.kcost] table: most projects' do not, and their TOML is then
    not parsed (a cold start saves the parser's import). An unreadable file is left to `read_toml` to name."""
    try:
        return b"kcost" in path.read_bytes()
    except OSError:
        return True


def read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=str(path)) from None
    except RecursionError:
        raise InputError("cannot read: nested too deep", source=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"not valid TOML: {str(exc).split(' (at')[0]}", source=str(path), line=line) from None
