"""Run settings: the flags of one run, the config file and the defaults, resolved once into one frozen `Settings`.

A flag wins over the config, the config over the default; each default is written here, once. The config is
`kcost.toml` (keys at the top level) or the `[tool.kcost]` table of `pyproject.toml`, the nearest one up from the
working directory; this is the one module that reads it. It is validated by `kcost.model.budgets` (pydantic) only when
there is a file, so a run without one imports no validator. Nothing here knows a command-line flag: the CLI maps
its options onto `resolve`'s keywords, and the library API takes a `Settings` (or builds one from its keywords).

What `resolve` parses with (cache models, budgets) is imported in its body: every command's options import this
module, and `kcost --help` must load neither (tests/test_cli.py).
"""

from __future__ import annotations

import os
import sys
from datetime import date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError
from kcost.inputs.files import LIMITS, check_regular, read_bytes
from kcost.model.frozen import frozen
from kcost.model.limits import Window

if TYPE_CHECKING:
    from kcost.cache.model import CacheModel
    from kcost.model.budgets import Budgets
    from kcost.results.prices import PriceTable

# The defaults, each written once.
DEFAULT_CACHE = "k3"  # K3's own hybrid prefix cache, at its published parameters (kcost.cache.model)
DEFAULT_USAGE = "auto"  # simulate every prompt, each sized from the usage its log records
DEFAULT_INPUT_FORMAT = "auto"  # the format is found from each file's name and content
USAGE_MODES = ("auto", "simulated", "reported")  # how a log's calls are billed (`--usage`, the config's `usage`)
CONFIG_NAME = "kcost.toml"
TOKENIZER_ENV = "KCOST_TOKENIZER"  # names the tokenizer file where no --tokenizer is given


@frozen
class ConfigFile:
    """What a config file says (paths made relative to it), or nothing at all (`path` None)."""

    path: str | None = None
    cache: str | None = None
    prices: str | None = None
    usage: str | None = None
    baseline: str | None = None
    budgets: Budgets | None = None
    selfhost: dict[str, Any] | None = None  # `kcost selfhost` figures by key, checked by that command
    ledger: str | bool | None = None  # the ledger's path; False: none (None: not said)
    plan: str | dict[str, Any] | None = None  # the user's plan: an id, or a plan of their own (`kcost.pricing.plans`)
    window: Window | None = None  # `[window]`: usage windows' length, limit and warnings


@frozen
class Settings:
    """Everything a run is asked to do, resolved: which cache models, which prices on which day, how logs are read.

    `caches`: the cache models, in order (a bill shows each side by side; other commands take the first).
    `prices`: a price file (None: the shipped snapshot) or a loaded table. `model`: price every call at this model
    (`logged`: each at its own; None: a turn spec's `model:`, else the table's default). `at`: the rates in force
    that day (None: the day each session ran, else today). `usage`, `input_format`, `tokenizer`, `lenient`: how
    sessions are read. `baseline`, `budgets`: what `check` holds a run to. `config`: the file they came from.
    `scheduler`: the Dask scheduler whose workers read and bill the run's logs (None: this machine).
    `json_turns`: where logs are billed apart from this process, each bill's turns are written there as the JSON
    writer writes them (True: money as JSON numbers), for a run whose one use of them is the bill as JSON (None:
    the turns come back as they are).
    """

    caches: tuple[CacheModel, ...] = ()
    prices: str | PriceTable | None = None
    usage: str = DEFAULT_USAGE
    model: str | None = None
    at: date | None = None
    input_format: str = DEFAULT_INPUT_FORMAT
    tokenizer: str | None = None
    lenient: bool = False
    baseline: str | None = None
    budgets: Budgets | None = None
    config: str | None = None
    timezone: str | None = None  # days, weeks and months are placed in it (None: the machine's)
    since: float | None = None  # only sessions that started at or after this (Unix seconds)
    until: float | None = None  # only sessions that started before this (Unix seconds)
    scheduler: str | None = None
    json_turns: bool | None = None
    ledger: str | None = None  # the ledger's file (`kcost.ledger`); None: logs are read without one
    plan: str | dict[str, Any] | None = None  # the user's subscription plan (`kcost.pricing.plans`); None: not said
    window: Window = Window()  # usage windows' length, limit and warnings, where given

    def __post_init__(self) -> None:
        if not self.caches:
            object.__setattr__(self, "caches", (default_cache(),))
        check_usage(self.usage)

    @property
    def cache(self) -> CacheModel:
        """The cache model of a command that takes one."""
        return self.caches[0]

    @property
    def zone(self) -> tzinfo | None:
        """The time zone of `timezone` (None: the machine's)."""
        return None if self.timezone is None else time_zone(self.timezone)

    @property
    def zone_name(self) -> str:
        """The time zone's name as a report states it: as given, else the machine's (`CET`, `UTC`)."""
        return self.timezone or datetime.now().astimezone().tzname() or "local"

    def within(self, start: float | None) -> bool:
        """Whether a session that started then is within `since` and `until` (one with no time is not, where
        either is given)."""
        if self.since is None and self.until is None:
            return True
        if start is None:
            return False
        return (self.since is None or start >= self.since) and (self.until is None or start < self.until)

    @property
    def prompts(self) -> bool:
        """Whether prompts are rebuilt (they are, unless only the logged usage is billed)."""
        return self.usage != "reported"


def default_cache() -> CacheModel:
    """The cache model of a run that names none (no flag, no config): K3's published rule, and for a log of K3's
    own whose logged cached counts fit another unambiguously, that one (`kcost.cache.fit`)."""
    from dataclasses import replace

    from kcost.cache.model import parse_cache_model

    return replace(parse_cache_model(DEFAULT_CACHE), fit_own=True)


def resolve(
    config: ConfigFile | None = None,
    *,
    caches: tuple[CacheModel | str, ...] | list[CacheModel | str] = (),
    prices: str | PriceTable | None = None,
    usage: str | None = None,
    model: str | None = None,
    at: date | None = None,
    input_format: str | None = None,
    tokenizer: str | None = None,
    lenient: bool = False,
    baseline: str | None = None,
    budgets: dict[str, Any] | None = None,
    timezone: str | None = None,
    since: str | None = None,
    until: str | None = None,
    scheduler: str | None = None,
    ledger: str | bool | None = None,
    plan: str | dict[str, Any] | None = None,
    window_hours: int | None = None,
    limit: str | None = None,
    warn: str | None = None,
) -> Settings:
    """The settings of one run: each value given here, else the config's, else the default. `budgets`: the limits
    given for this run by name (`max_session_usd`, ..., `max_increase` as USD or a percentage), merged over the
    config's; they are validated only when some are given or the config holds some. `window_hours`, `limit`,
    `warn`: usage windows' length, limit and warning shares (`kcost.model.limits`), each over the config's."""
    from kcost.cache.model import CacheModel, parse_cache_model

    config = config or ConfigFile()
    chosen = tuple(c if isinstance(c, CacheModel) else parse_cache_model(c) for c in caches)
    if not chosen:
        chosen = (parse_cache_model(config.cache) if config.cache else default_cache(),)
    zone = time_zone(timezone) if timezone is not None else None
    lo = moment(since, zone, field="since") if since is not None else None
    hi = moment(until, zone, field="until", end=True) if until is not None else None
    if lo is not None and hi is not None and hi <= lo:
        raise InputError(f"{until!r} is not after --since {since!r}", field="until")
    given = {k: v for k, v in _budget_names(budgets or {}).items() if v is not None}
    if ledger is None:
        ledger = config.ledger
    if ledger is True:  # the default place
        from kcost.ledger import default_path

        ledger = default_path()
    merged = config.budgets
    if given:
        from kcost.model.budgets import merge

        merged = merge(config.budgets, given)
    return Settings(
        caches=chosen,
        prices=prices if prices is not None else config.prices,
        usage=usage or config.usage or DEFAULT_USAGE,
        model=model,
        at=at,
        input_format=input_format or DEFAULT_INPUT_FORMAT,
        tokenizer=tokenizer,
        lenient=lenient,
        baseline=baseline or config.baseline,
        budgets=merged,
        config=config.path,
        timezone=timezone,
        since=lo,
        until=hi,
        scheduler=scheduler,
        ledger=ledger or None,
        plan=plan if plan is not None else config.plan,
        window=_window(config.window, window_hours, limit, warn),
    )


def _window(config: Window | None, hours: int | None, limit: str | None, warn: str | None) -> Window:
    """The config's `[window]` with each value given for the run in place of its key."""
    from kcost.model.limits import parse_limit, parse_warn

    held = config or Window()
    return Window(hours=hours if hours is not None else held.hours,
                  limit=parse_limit(limit) if limit is not None else held.limit,
                  warn=parse_warn(warn) if warn is not None else held.warn)  # fmt: skip


def time_zone(name: str) -> tzinfo:
    """An IANA time zone (`Europe/Berlin`, `UTC`), checked."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        if not name or name != name.strip() or ".." in name or name.startswith("/"):
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InputError(f"not a time zone: {name!r}", field="timezone",
                         hint="an IANA name such as UTC, Europe/Berlin or America/New_York") from None  # fmt: skip


def moment(text: str, zone: tzinfo | None, *, field: str, end: bool = False) -> float:
    """A date (`2026-11-30`, `20261130`) or a time (`2026-11-30T14:00`, with an offset or `Z` if wanted) as Unix
    seconds, in `zone` unless it names its own offset (None: the machine's). A date given as an end (`--until`)
    takes in the whole day: the bound is the next day's start. The calendar's edges are bounds too: the next day
    after 9999-12-31, which `datetime` cannot hold, is 86,400 seconds after its start."""
    raw = text.strip()
    day = raw[:4] + "-" + raw[4:6] + "-" + raw[6:] if len(raw) == 8 and raw.isdecimal() else raw
    whole_day = len(day) == 10
    try:
        when = datetime.fromisoformat(day if whole_day or not day.endswith(("Z", "z")) else day[:-1] + "+00:00")
    except ValueError:
        raise InputError(f"not a date or time: {text!r}", field=field,
                         hint="a date (2026-11-30 or 20261130) or a time (2026-11-30T14:00)") from None  # fmt: skip
    if not end:
        return _seconds(when, zone)
    step = timedelta(days=1) if whole_day else timedelta(milliseconds=1)  # a time: up to the next millisecond
    try:
        return _seconds(when + step, zone)
    except OverflowError:  # past 9999-12-31
        return _seconds(when, zone) + step.total_seconds()


def _seconds(when: datetime, zone: tzinfo | None) -> float:
    """`when` as Unix seconds, in `zone` unless it names its own offset (None: the machine's). On the calendar's
    first and last day the machine's clock is read two days inside it, where converting does not overflow."""
    if when.tzinfo is None:
        if zone is not None:
            when = when.replace(tzinfo=zone)
        else:
            try:
                when = when.astimezone()
            except (OverflowError, ValueError):
                inside = when + timedelta(days=2) if when.year == 1 else when - timedelta(days=2)
                when = when.replace(tzinfo=inside.astimezone().tzinfo)
    return when.timestamp()


def check_usage(usage: object) -> None:
    if usage not in USAGE_MODES:
        raise InputError(f"usage must be one of {', '.join(USAGE_MODES)} (got {usage!r})", field="usage")


def _budget_names(given: dict[str, Any]) -> dict[str, Any]:
    """Budgets as the config names them: `max_increase` is USD, or a percentage when it ends in `%`."""
    out = dict(given)
    increase = out.pop("max_increase", None)
    if increase is not None:
        out["max_increase_pct" if str(increase).strip().endswith("%") else "max_increase_usd"] = increase
    return out


def config_for(path: str | None) -> ConfigFile:
    """The config named, else the nearest one up from the working directory, else none."""
    if path:
        if not os.path.lexists(path):
            raise InputError("no such file", source=path, field="config")
        check_regular(path, "config file", LIMITS["config file"])
        found: Path | None = Path(path)
    else:
        found = find_config()
    return ConfigFile() if found is None else load_config(found)


def load_config(path: Path) -> ConfigFile:
    """A config file, validated strictly (by `kcost.model.budgets`); paths in it are relative to it."""
    from kcost.model.budgets import validate_config

    data: Any = read_toml(path)
    prefix: tuple[object, ...] = ()
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data, prefix = (tool.get("kcost", {}) if isinstance(tool, dict) else None), ("tool", "kcost")
    config = validate_config(data, str(path), prefix, modes=USAGE_MODES)
    if config.cache is not None:  # checked here, where the file and the key can be named
        from kcost.cache.model import parse_cache_model

        try:
            parse_cache_model(config.cache)
        except InputError as exc:
            raise InputError(exc.message, source=str(path), field=".".join([*map(str, prefix), "cache"]),
                             hint=exc.hint) from None  # fmt: skip
    base = path.parent
    return ConfigFile(
        path=str(path),
        cache=config.cache,
        prices=str(base / config.prices) if config.prices else None,
        usage=config.usage,
        baseline=str(base / config.baseline) if config.baseline else None,
        budgets=config.budgets,
        selfhost=dict(config.selfhost) or None,
        ledger=str(base / config.ledger) if isinstance(config.ledger, str) else config.ledger,
        plan=config.plan,
        window=_config_window(config.window),
    )


def _config_window(config: Any) -> Window | None:
    """The config's `[window]` as settings hold it (None: it says nothing of windows)."""
    if config.hours is None and config.limit is None and config.warn is None:
        return None
    return Window(hours=config.hours, limit=config.limit, warn=config.warn)


def config_places(start: Path | None = None) -> list[Path]:
    """Every file `find_config` may look at, nearest first: a kcost.toml and a pyproject.toml in each folder up."""
    here = (start or Path.cwd()).resolve()
    return [folder / name for folder in (here, *here.parents) for name in (CONFIG_NAME, "pyproject.toml")]


def find_config(start: Path | None = None) -> Path | None:
    """The nearest kcost.toml, or pyproject.toml with a [tool.kcost] table, from `start` up."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / CONFIG_NAME
        if os.path.lexists(own):  # there, whatever it is: taken, or refused with a word (a FIFO, a broken link)
            check_regular(str(own), "config file", LIMITS["config file"])
            return own
        project = folder / "pyproject.toml"
        if os.path.lexists(project) and _mentions_kcost(project):
            tool = read_toml(project).get("tool")
            if isinstance(tool, dict) and "kcost" in tool:
                return project
    return None


def _mentions_kcost(path: Path) -> bool:
    """Whether a pyproject.toml could hold a [tool.kcost] table: most projects' do not (a project that depends on
    kcost names it, but not as a key under `tool`), and their TOML is then not parsed (a cold start saves the
    parser's import and the parse). One that is no regular file, too large or unreadable is refused, naming it: a
    run never goes on with other settings than the ones its folder holds."""
    import re

    data = read_bytes(path, "config file")
    # every way TOML can write a key under `tool` named kcost: `[tool.kcost...]`, `tool.kcost... =` (quotes and
    # spaces allowed around the dot), `kcost` under a `[tool]` table or in a `tool = {...}` inline table; a key
    # written with escapes is parsed to be sure
    if b"\\u" in data or b"\\U" in data:
        return True
    return b"kcost" in data and (
        re.search(rb"""tool["']?\s*\.\s*["']?kcost""", data) is not None
        or re.search(rb"""^[ \t]*(?:\[[ \t]*["']?tool["']?[ \t]*\]|["']?tool["']?[ \t]*=)""", data, re.M) is not None
    )


def read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    data = read_bytes(path, "config file")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=str(path)) from None
    except RecursionError:
        raise InputError("cannot read: nested too deep", source=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"not valid TOML: {str(exc).split(' (at')[0]}", source=str(path), line=line) from None
