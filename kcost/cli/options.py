"""The options commands share, and the parameter types that turn option strings into values.

Each type calls the core's parser and reports a bad value as a bad parameter, so the core never names a flag:
`kcost: error: --capacity: not a capacity: '10Q' (10M (tokens), 80GiB, 500GB, inf)`. Only click is imported at
the top; a type imports its parser when it first converts a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from kcost.api.settings import TOKENIZER_ENV, USAGE_MODES
from kcost.errors import InputError
from kcost.readers.registry import INPUT_FORMATS, READERS, TURN_FORMATS

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

# what a core error's field means on the command line, when the error came from an option (not a file)
FLAGS = {
    "usage": "--usage",
    "input_format": "--input-format",
    "tokenizer": "--tokenizer",
    "cache": "--cache",
    "config": "--config",
    "prefix": "--prefix",
    "model": "--model",
    "max_increase": "--max-increase",
    "max-session-usd": "--max-session-usd",
    "max-turn-usd": "--max-turn-usd",
    "max-total-usd": "--max-total-usd",
    "min-hit-rate": "--min-hit-rate",
    "max-blended-usd-per-mtok": "--max-blended",
    "max-increase-usd": "--max-increase",
    "max-increase-pct": "--max-increase",
    "on": "--on",
    "scheduler": "--scheduler",
    "since": "--since",
    "limit": "--limit",
    "plan": "--plan",
    "until": "--until",
    "timezone": "--timezone",
}


class Parsed(click.ParamType):  # type: ignore[type-arg]
    """A value the core parses (`target`: "module:function", imported when first used); its `InputError`
    becomes this option's error. `each`: a comma list, each item parsed."""

    def __init__(self, name: str, target: str, *, each: bool = False) -> None:
        self.name, self.target, self.each = name, target, each

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        from importlib import import_module

        module, _, function = self.target.partition(":")
        parse = getattr(import_module(module), function)
        try:
            return [parse(part) for part in value.split(",")] if self.each else parse(value)
        except InputError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            self.fail(f"{exc.message}{hint}", param, ctx)


CACHE_MODEL = Parsed("model", "kcost.cache.model:parse_cache_model")
CAPACITIES = Parsed("capacities", "kcost.fleet.spec:parse_capacity", each=True)
FAILURE = Parsed("failure", "kcost.fleet.spec:parse_failure_text")  # checked against --clusters by the command
SHARE = Parsed("share", "kcost.fleet.spec:parse_class_budget")
RATE = Parsed("rate", "kcost.analysis.quotes:parse_rate")  # 0 to 1, or a percentage: 0.9, 90%
TOKENS = Parsed("tokens", "kcost.model.bounds:parse_tokens")  # 400000, 400_000, 400k, 1.5M
POSITIVE_TOKENS = Parsed("tokens", "kcost.model.bounds:parse_positive_tokens")


def format_option(choices: Sequence[str], default: str = "table") -> Decorator:
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help="Output format.")  # fmt: skip


def output_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """-o, --width and --color: where the report goes and how a table looks."""
    for option in reversed(
        [
            click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
                         help="Write the report here (only once the run succeeded), not stdout."),
            click.option("--width", type=click.IntRange(40, 400),
                         help="Table width (default: the terminal's, else COLUMNS; piped output is not wrapped)."),
            click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
                         show_default=True, help="Colour: auto follows FORCE_COLOR, NO_COLOR and the terminal."),
        ]
    ):  # fmt: skip
        fn = option(fn)
    return fn


json_numbers_option: Decorator = click.option(
    "--json-numbers", is_flag=True,
    help="Money in JSON as numbers (exact to 15 significant digits), not exact decimal strings: for jq and "
    "spreadsheets.",
)  # fmt: skip
prices_option: Decorator = click.option(
    "--prices", "prices_file", type=click.Path(dir_okay=False), help="A price table file (JSON) to use instead."
)


prices_at_option: Decorator = click.option(
    "--prices-at",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="Price at the rates in force on this day (default: the day each session ran, else today).",
)


def pricing_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--model` and `--prices-at`: which model every call is priced at, and on which day's rates."""
    help_text = ("Price every call at this model (any id `kcost prices` lists), or `logged`: each at the model "
                 "its log names (default: a turn spec's `model:`, else kimi-k3).")  # fmt: skip
    return click.option("--model", "price_model", metavar="ID|logged", help=help_text)(prices_at_option(fn))


def window_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--window-hours` and `--limit`: a usage window's length and limit, over the config's `[window]`."""
    from kcost.results.grouping import WINDOW_HOURS

    hours = click.option("--window-hours", type=click.IntRange(1, 24 * 31), help="A usage window's length (default: "
                         f"the config's, else {WINDOW_HOURS}: the plans' rolling window; 168: a weekly one).")
    limit = click.option("--limit", metavar="LIMIT", help="The active window's limit, dollars (12.50) or tokens (2M "
                         "tokens), or max (the dearest past window's cost): the share used, and when it is reached "
                         "at the burn rate (default: the config's [window] limit).")  # fmt: skip
    return hours(limit(fn))


warn_option: Decorator = click.option(
    "--warn", metavar="SHARES", help="Warn as the active window reaches these shares of its limit, once each: "
    "comma-separated, 80%,100% or 0.8,1 (default: the config's [window] warn, else 80%,100%).",
)  # fmt: skip


tokenizer_option: Decorator = click.option(
    "--tokenizer", type=click.Path(dir_okay=False), envvar=TOKENIZER_ENV,
    help="A Kimi tiktoken.model file for exact token counts (needs kcost[tokenizer]).",
)  # fmt: skip


def input_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    options: list[Decorator] = [
        click.option("--input-format", type=click.Choice(INPUT_FORMATS), default="auto", show_default=True,
                     metavar="FORMAT",
                     help="The input's format, when the guess from name and content is wrong: "
                     + ", ".join(TURN_FORMATS) + " (turn specs), " + ", ".join(e.name for e in READERS)
                     + " (agents' logs; `kcost formats` says what each reads and where)."),
        click.option("--usage", type=click.Choice(USAGE_MODES), default="auto", show_default=True,
                     help="auto: simulate every prompt, each sized from the usage the log records (turn specs "
                     "as written), or bill a log that holds only usage as reported; simulated: simulate, and "
                     "fail on a log with no prompts; reported: only the tokens the log says were billed (no "
                     "prompt is rebuilt)."),
        tokenizer_option,
        click.option("--ledger", metavar="PATH", expose_value=False, callback=_ledger_option,
                     help="The ledger that keeps every session read, so a run reads only what changed and a bill "
                     "outlives its logs (default: the config's `ledger`, else $KCOST_LEDGER, else "
                     "$XDG_DATA_HOME/kcost/ledger.sqlite3)."),
        click.option("--no-ledger", is_flag=True, expose_value=False, callback=_ledger_option,
                     help="Read every log again and keep nothing: no ledger."),
        click.option("--lenient", is_flag=True,
                     help="Skip a log record whose usage or time is bad (negative or absurd counts, a running "
                     "total that goes down, a time that is no time), counted in the notes, instead of stopping."),
    ]  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn


def _ledger_option(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """`--ledger PATH` and `--no-ledger`, kept for `run_settings` (no command takes them as arguments)."""
    if param.name == "no_ledger" and value:
        ctx.meta["kcost.ledger"] = False
    elif param.name == "ledger" and value is not None and ctx.meta.get("kcost.ledger") is not False:
        ctx.meta["kcost.ledger"] = value


cache_option: Decorator = click.option("--cache", type=CACHE_MODEL,
                                      help="The cache model (default: the config's, else k3).")  # fmt: skip
zone_option: Decorator = click.option("--timezone", metavar="ZONE", help="The time zone of days and months (an IANA "
                                     "name; default: the machine's).")  # fmt: skip

scheduler_option: Decorator = click.option(
    "--scheduler", metavar="ADDRESS",
    help="Read and bill the logs on this Dask scheduler's workers (tcp://host:8786; needs kcost[dask]), one task "
    "per session; they must see the same files. The report is the one this machine makes.",
)  # fmt: skip


def run_settings(ctx: click.Context, *, config_file: str | None = None, **given: Any) -> Any:
    """The run's `kcost.api.settings.Settings`: each option the user gave (an option left at its default counts as not
    given, so the config's value stands), else the config's, else the default. `given` holds the options by the
    names `kcost.api.settings.resolve` takes. The config (kcost.toml or [tool.kcost]) is found and read once for the
    whole run, or taken from `config_file`."""
    from click.core import ParameterSource

    from kcost.api.settings import config_for, resolve
    from kcost.cli.output import refuse_overwrite

    refuse_overwrite(ctx.params)
    if config_file:
        config = config_for(config_file)
    else:
        root = ctx.find_root()
        if root.obj is None:
            root.obj = config_for(None)
        config = root.obj
    for name, option in _OPTION_OF.items():
        if name in given and ctx.get_parameter_source(option) is ParameterSource.DEFAULT:
            given[name] = None
    if "at" in given and given["at"] is not None:
        given["at"] = given["at"].date()
    given["ledger"] = ctx.meta.get("kcost.ledger", None if config.ledger is not None else True)  # True: the default
    settings = resolve(config, **{k: v for k, v in given.items() if v is not None})
    _kept_report(ctx, settings)
    return settings


def _kept_report(ctx: click.Context, settings: Any) -> None:
    """For a command whose reports are kept (`kcost.ledger.reports`), printing to stdout alone: the report kept for
    it printed, and the command ended (`click.exceptions.Exit`), where one is kept for the same terms and inputs;
    else what it prints is recorded from here on, for `keep_report`."""
    from kcost.cli.output import record
    from kcost.inputs.files import outputs
    from kcost.ledger import KEPT_REPORTS, reports

    paths = ctx.params.get("paths") or ()
    argv = ctx.meta.get("kcost.argv")
    if (ctx.command.name not in KEPT_REPORTS or argv is None or settings.ledger is None or settings.scheduler
            or "-" in paths or ctx.params.get("baseline") == "-" or outputs()
            or ctx.params.get("by") == "window"):  # fmt: skip  (the active window is judged at the moment asked)
        return
    code = reports.answered(argv, settings.ledger)
    if code is not None:
        raise click.exceptions.Exit(code)
    if paths:
        places = list(paths)
    else:
        from kcost.readers.homes import places as homes

        places = [str(p) for p in homes(settings.input_format)[1]]
    from kcost.api.settings import config_places

    files = reports.settings_files(settings) + [str(p) for p in config_places()]
    ctx.meta["kcost.report"] = reports.Asked(settings.ledger, argv, places, files)
    reports.watch()
    record()


def keep_report(ctx: click.Context, code: int) -> None:
    """Keep the report a command printed (`_kept_report` asked for it), where it ended 0 or 1 (`check`'s verdict);
    a report that cannot be kept is not, and the run's end is unchanged."""
    import contextlib
    import sqlite3

    from kcost.cli.output import recorded
    from kcost.inputs.files import reads

    printed = recorded()
    asked = ctx.meta.pop("kcost.report", None)
    if asked is None or printed is None or code not in (0, 1):
        return
    from kcost.ledger.reports import keep

    with contextlib.suppress(InputError, sqlite3.Error, OSError):
        keep(asked, *printed, code, reads())


# a setting -> the parameter that gives it, where the option has a default of its own that must not hide the config's
_OPTION_OF = {"usage": "usage", "input_format": "input_format"}
