"""The command line: parse options, call the core, pick a renderer, set the exit code.

Only click is imported at the top, so `kcost --help` and `--version` stay fast; every command imports the
parts it needs. Exit codes: 0 ok, 2 bad usage or bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import click

from kcost import __version__
from kcost.errors import InputError
from kcost.options import DEFAULT_WIDTH, INPUT_FORMATS, MAX_REPEAT, MAX_TOKENS, USAGE_MODES
from kcost.readers.registry import READERS
from kcost.render import Format

EXIT_OK, EXIT_BAD_INPUT = 0, 2


class _Kcost(click.Group):
    """Every error the user can cause ends as one line on stderr and exit status 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        argv = args[0] if args else kwargs.get("args")
        if argv is None:
            argv = sys.argv[1:]
        if not argv:  # bare `kcost`: the help, not an error
            args, kwargs = (["--help"], *args[1:]), {k: v for k, v in kwargs.items() if k != "args"}
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except InputError as exc:
            click.echo(f"kcost: error: {exc}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except click.ClickException as exc:
            click.echo(f"kcost: error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("kcost: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


@click.group(cls=_Kcost, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kcost")
def cli() -> None:
    """What a Kimi K3 session will cost, what it cost, and why.

    kcost runs sessions through a simulator of K3's hybrid prefix cache and the K3 price table, and prints
    per-turn and per-session bills.
    """


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
ALL_FORMATS = tuple(fmt.value for fmt in Format)


def _format_option(choices: Sequence[str] = ALL_FORMATS) -> Decorator:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default="table",
        show_default=True,
        help="Output format.",
    )


_prices_option: Decorator = click.option(
    "--prices",
    "prices_file",
    type=click.Path(dir_okay=False),
    help="A price table file (JSON) to use instead.",
)
_output_option: Decorator = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report here, not stdout.",
)


def _input_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option("--input-format", type=click.Choice(INPUT_FORMATS), default="auto", show_default=True,
                         help="The input's format, when the guess from name and content is wrong: yaml, json, "
                         "jsonl (turn specs); " + "; ".join(f"{e.name}: {e.what}" for e in READERS) + "."),
            click.option("--usage", type=click.Choice(USAGE_MODES), default="auto", show_default=True,
                         help="auto: simulate every prompt, each sized from the usage the log records (turn specs "
                         "as written); simulated: the same; reported: only the tokens the log says were billed "
                         "(no prompt is rebuilt)."),
            click.option("--tokenizer", type=click.Path(dir_okay=False), envvar="KCOST_TOKENIZER",
                         help="A Kimi tiktoken.model file for exact token counts (needs kcost[tokenizer])."),
        ]
    ):  # fmt: skip
        fn = option(fn)
    return fn


_width_option: Decorator = click.option(
    "--width", type=click.IntRange(40, 400), help="Table width (default: the terminal's)."
)


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--cache",
    "caches",
    multiple=True,
    help="Cache model (default: the config's, else k3): k3, k3:hash=256,ttl=1800, k3:every=1, k3:output=on, "
    "shared:6144, ideal, none. Repeat to "
    "compare models side by side.",
)
@_format_option()
@_input_options
@click.option("--summary", is_flag=True, help="Only the summaries, no per-turn rows (table, markdown).")
@_prices_option
@_output_option
@_width_option
def bill(
    paths: tuple[str, ...],
    caches: tuple[str, ...],
    fmt: str,
    input_format: str,
    usage: str,
    tokenizer: str | None,
    summary: bool,
    prices_file: str | None,
    output: str | None,
    width: int | None,
) -> None:
    """Bill sessions under one or more cache models.

    PATHS are turn specs (YAML, JSON, JSONL), Kimi API logs, Kimi CLI or Kimi Code sessions, Claude Code logs
    or Codex rollouts, or folders of them; `-` reads stdin.
    """
    from kcost.billing import report
    from kcost.cache import parse_cache_model
    from kcost.config import config_for
    from kcost.prices import load_prices
    from kcost.render import render

    config = config_for(None)  # kcost.toml or [tool.kcost] up from here: what `check` will use too
    models = [parse_cache_model(c) for c in caches or (config.cache or "k3",)]
    prices = load_prices(prices_file or config.prices)
    usage = usage if usage != "auto" else config.usage or "auto"
    sessions = _read(paths, input_format, tokenizer, usage)
    result = report(sessions, models, prices, usage)
    color = _use_color(output)
    _emit(render(result, Format(fmt), width=_width(width), color=color, summary=summary), output)


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--cache", default="k3", show_default=True, help="The cache model to explain the misses under.")
@_format_option(("table", "json"))
@_input_options
@_prices_option
@_width_option
def explain(
    paths: tuple[str, ...],
    cache: str,
    fmt: str,
    input_format: str,
    usage: str,
    tokenizer: str | None,
    prices_file: str | None,
    width: int | None,
) -> None:
    """Why each session's misses cost money: turn by turn, then the causes ranked by dollars, with fixes."""
    import json

    from kcost.billing import bill
    from kcost.cache import parse_cache_model
    from kcost.explain import explain as explain_session
    from kcost.prices import load_prices

    model = parse_cache_model(cache)
    prices = load_prices(prices_file)
    items = [
        explain_session(bill(s, cache=model, prices=prices, usage=usage), s, model.label)
        for s in _read(paths, input_format, tokenizer, usage)
    ]
    if fmt == "json":
        _emit(json.dumps([e.model_dump(mode="json") for e in items], indent=2) + "\n", None)
    else:
        from kcost.render.explain import render_explanations

        _emit(render_explanations(items, width=_width(width), color=_use_color(None)), None)


def _read(paths: tuple[str, ...], input_format: str, tokenizer: str | None, usage: str) -> list[Any]:
    """The sessions in `paths`; files passed over in a folder are counted on stderr. Prompts are rebuilt only
    where they will be simulated."""
    from kcost.readers import read_all
    from kcost.transcripts.tokenizer import load_counter

    counter = load_counter(tokenizer) if usage != "reported" else None
    found = read_all(list(paths), input_format, counter=counter, prompts=usage != "reported")
    if found.skipped:
        click.echo(f"kcost: passed over {len(found.skipped)} file(s) that are no session: {found.skipped[0]}"
                   + (" ..." if len(found.skipped) > 1 else ""), err=True)  # fmt: skip
    return found.sessions


@cli.command()
@click.option(
    "--prefix", type=click.IntRange(0, MAX_TOKENS), required=True, help="Prefix tokens carried by every turn."
)
@click.option("--new", type=click.IntRange(0, MAX_TOKENS), required=True, help="New input tokens per turn.")
@click.option("--turns", type=click.IntRange(1, MAX_REPEAT), default=50, show_default=True)
@click.option(
    "--output-tokens", "--out", "output_tokens", type=click.IntRange(0, MAX_TOKENS), default=0, show_default=True,
    help="Output tokens per turn.",
)  # fmt: skip
@click.option("--hit-rate", default="0.9", show_default=True, help="Hit rate for the blended price (0.9 or 90%).")
@_format_option(("table", "json"))
@_prices_option
@click.option("--model", help="Model to price at (default: the price table's default).")
def quote(
    prefix: int,
    new: int,
    turns: int,
    output_tokens: int,
    hit_rate: str,
    fmt: str,
    prices_file: str | None,
    model: str | None,
) -> None:
    """The lesson's arithmetic: one turn of PREFIX + NEW tokens, missed or hit, and TURNS of them."""
    from kcost.prices import load_prices
    from kcost.quote import make_quote, parse_rate

    result = make_quote(
        prefix=prefix,
        new=new,
        turns=turns,
        output=output_tokens,
        hit_rate=parse_rate(hit_rate),
        prices=load_prices(prices_file),
        model=model,
    )
    if fmt == "json":
        _emit(result.model_dump_json(indent=2) + "\n", None)
    else:
        from kcost.render.quote import render_quote

        _emit(render_quote(result, width=_width(None), color=_use_color(None)), None)


@cli.command()
@_format_option(("table", "json"))
@_prices_option
def prices(fmt: str, prices_file: str | None) -> None:
    """Show the price table in use: rates per million tokens, its source and date."""
    from kcost.prices import PriceTable, load_prices

    table = load_prices(prices_file)
    if fmt == "json":
        from kcost.results import adapter

        _emit(adapter(PriceTable).dump_json(table, indent=2).decode() + "\n", None)
        return
    from kcost.render.prices import render_prices

    _emit(render_prices(table), None)


@cli.command()
@click.argument(
    "what", type=click.Choice(["bill", "turns", "quote", "explain", "check", "diff", "trace"]), default="bill"
)
def schema(what: str) -> None:
    """Print a JSON Schema: of `bill --format json` (default), of turn specs, or of `quote --format json`."""
    import json

    from pydantic import TypeAdapter

    from kcost.checks import CheckReport, DiffReport
    from kcost.explain import Explanation
    from kcost.models import SessionSpec
    from kcost.quote import Quote
    from kcost.results import BillReport
    from kcost.traces import TraceReport

    schemas: dict[str, tuple[type[Any], Literal["validation", "serialization"]]] = {
        "bill": (BillReport, "serialization"),
        "turns": (SessionSpec, "validation"),
        "quote": (Quote, "serialization"),
        "explain": (Explanation, "serialization"),
        "check": (CheckReport, "serialization"),
        "diff": (DiffReport, "serialization"),
        "trace": (TraceReport, "serialization"),
    }
    model, mode = schemas[what]
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **TypeAdapter(model).json_schema(mode=mode),
    }
    _emit(json.dumps(document, indent=2) + "\n", None)


# ---- where output goes ---------------------------------------------------------------------------------


def _emit(text: str, output: str | None) -> None:
    """To stdout, or to `output` all at once and only now that the run succeeded."""
    if output is None or output == "-":
        click.echo(text, nl=False)
        return
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


def _mode_for(target: Path) -> int:
    """The mode a plain `open()` would give: the old file's, or 0o666 less the umask."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _width(width: int | None) -> int:
    """--width, else the terminal's, else COLUMNS, else the default; clamped to what a table can use."""
    if width:
        return width
    if sys.stdout.isatty():
        columns = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    else:
        raw = os.environ.get("COLUMNS", "")
        columns = int(raw) if raw.isdecimal() else DEFAULT_WIDTH
    return min(max(columns, 40), 400)


def _use_color(output: str | None) -> bool:
    return output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


# the commands that live in modules of their own register themselves on `cli` when imported
from kcost import cli_ci, cli_trace  # noqa: E402, F401


def main() -> None:
    cli(prog_name="kcost")
