"""The command line: parse options, call the core, pick a renderer, set the exit code.

Only click is imported at the top, so `kcost --help` and `--version` stay fast; every command imports the
parts it needs. Exit codes: 0 ok, 2 bad usage or bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import math
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
                         help="The input's format, when the guess from name and content is wrong."),
            click.option("--usage", type=click.Choice(USAGE_MODES), default="auto", show_default=True,
                         help="simulated: cache hits from the simulator; reported: the tokens the log says were "
                         "billed; auto: simulated where the log has prompts."),
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
    from kcost.prices import load_prices
    from kcost.render import render
    from kcost.workflow import config_for

    config = config_for(None)  # kcost.toml or [tool.kcost] up from here: what `check` will use too
    models = [parse_cache_model(c) for c in caches or (config.cache or "k3",)]
    prices = load_prices(prices_file or config.prices)
    sessions = _read(paths, input_format, tokenizer)
    result = report(sessions, models, prices, usage if usage != "auto" else config.usage or "auto")
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
        for s in _read(paths, input_format, tokenizer)
    ]
    if fmt == "json":
        _emit(json.dumps([e.model_dump(mode="json") for e in items], indent=2) + "\n", None)
    else:
        from kcost.render.explain import render_explanations

        _emit(render_explanations(items, width=_width(width), color=_use_color(None)), None)


EXIT_OVER_BUDGET = 1
CHECK_FORMATS = ("table", "json", "markdown", "junit")


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--max-session-usd", help="Each session's cost may not exceed this (USD).")
@click.option("--max-turn-usd", help="No turn may cost more than this (USD).")
@click.option("--max-total-usd", help="All sessions together may not cost more than this (USD).")
@click.option("--min-hit-rate", help="Each session's cache hit rate must reach this (0.85 or 85%).")
@click.option("--max-blended", "max_blended", help="Each session's input price per 1M tokens may not exceed this.")
@click.option("--max-increase", help="Over the baseline, per session and in total: USD (0.50) or percent (10%).")
@click.option("--baseline", type=click.Path(dir_okay=False), help="A bill (kcost bill --format json) to compare with.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="A kcost.toml or pyproject.toml (default: the nearest one up from here).")  # fmt: skip
@click.option("--cache", help="The cache model (default: the config's, else k3).")
@click.option("--format", "fmt", type=click.Choice(CHECK_FORMATS), default="table", show_default=True)
@_input_options
@_prices_option
@_output_option
@_width_option
def check(paths: tuple[str, ...], fmt: str, output: str | None, width: int | None, **opts: Any) -> None:
    """Hold sessions to budgets: exit 0 when all hold, 1 when one is exceeded, 2 when input cannot be read.

    Budgets come from flags, or from kcost.toml / [tool.kcost] in pyproject.toml (flags win). With
    GITHUB_STEP_SUMMARY set, the markdown report is appended there and failures become ::error annotations.
    """
    from kcost.render import check as views
    from kcost.workflow import run_check

    outcome = run_check(list(paths), opts)
    report = outcome.report
    text = {
        "table": lambda: views.check_table(report, width=_width(width), color=_use_color(output)),
        "json": lambda: report.model_dump_json(indent=2, by_alias=True) + "\n",
        "markdown": lambda: views.check_markdown(report, outcome.diff, outcome.causes),
        "junit": lambda: views.junit(report),
    }[fmt]()
    _emit(text, output)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(views.check_markdown(report, outcome.diff, outcome.causes) + "\n")
        except OSError as exc:
            raise InputError(f"cannot append: {exc.strerror}", source=summary, field="GITHUB_STEP_SUMMARY") from None
        # workflow commands on stderr: the runner reads both streams, and stdout may carry a report
        click.echo(views.github_annotations(report), nl=False, err=True)
    sys.exit(EXIT_OK if report.passed else EXIT_OVER_BUDGET)


@cli.command()
@click.argument("before")
@click.argument("after")
@click.option("--cache", default="k3", show_default=True, help="The cache model, for sides that are sessions.")
@_format_option(("table", "json", "markdown"))
@_input_options
@_prices_option
@_width_option
def diff(before: str, after: str, cache: str, fmt: str, width: int | None, **opts: Any) -> None:
    """Two bills (kcost bill --format json) or two sessions side by side: cost, hit rate and blended price per
    session and in total, what changed and by how much, new and removed sessions."""
    from kcost.checks import diff as compare
    from kcost.render import check as views
    from kcost.workflow import bill_of

    result = compare(bill_of(before, cache, opts), bill_of(after, cache, opts), before=before, after=after)
    text = {
        "table": lambda: views.diff_table(result, width=_width(width), color=_use_color(None)),
        "json": lambda: result.model_dump_json(indent=2) + "\n",
        "markdown": lambda: "\n".join(views.diff_markdown(result)) + "\n",
    }[fmt]()
    _emit(text, None)


@cli.command()
@click.argument("path")
@click.option("--cache", "caches", multiple=True, default=("k3",), show_default=True, help="Cache model (repeat).")
@click.option("--capacity", default="inf", show_default=True,
              help="Cache per cluster; a comma list for a curve: KV tokens (10M), bytes (80GiB), inf.")  # fmt: skip
@click.option("--clusters", type=click.IntRange(1, 1024), default=1, show_default=True)
@click.option("--fail", "failures", multiple=True, help="CLUSTER@START-END: a cluster down (seconds, or 10m-20m).")
@click.option("--prefill-rate", type=click.FloatRange(min=1), default=50_000, show_default=True,
              help="Tokens a second a cluster prefills (an assumption).")  # fmt: skip
@click.option("--long-from", type=click.IntRange(min=1), default=2048, show_default=True,
              help="Inputs this long or longer are the long class.")  # fmt: skip
@click.option("--class-budget", help="The long class's share of prefill while short requests wait: long=30%.")
@click.option("--checkpoint-mb", type=click.FloatRange(min=0.001), default=449.0, show_default=True,
              help="Megabytes one KDA checkpoint takes in the pool (K3: about 449).")  # fmt: skip
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Processes, each simulating some clusters.")  # fmt: skip
@click.option("--plot", type=click.Path(dir_okay=False), help="Write the hit-rate-vs-capacity curve here (.svg).")
@_format_option(("table", "json"))
@_prices_option
@_output_option
@_width_option
def trace(
    path: str, caches: tuple[str, ...], capacity: str, clusters: int, failures: tuple[str, ...], prefill_rate: float,
    long_from: int, class_budget: str | None, checkpoint_mb: float, workers: int, plot: str | None, fmt: str,
    prices_file: str | None,
    output: str | None, width: int | None,
) -> None:  # fmt: skip
    """Bill a request trace (Mooncake or kcost JSONL) under each cache model and capacity: hit rates, cost, the
    cost of a cluster failure, and time to first token per traffic class."""
    from kcost.cache import parse_cache_model
    from kcost.cache.pool import EntryKind, pages_for
    from kcost.fleet import FleetSpec
    from kcost.prices import load_prices
    from kcost.render.trace import curve_svg, trace_table
    from kcost.traces import parse_capacity, parse_failure, run

    if plot and not plot.lower().endswith(".svg"):
        raise InputError("kcost draws the curve as SVG", field="--plot", hint="name a .svg file")
    for name, value in (("--prefill-rate", prefill_rate), ("--checkpoint-mb", checkpoint_mb)):
        if not math.isfinite(value):
            raise InputError(f"must be a finite number (got {value})", field=name)
    shown = "stdin" if path == "-" else path
    if path == "-":  # each model, capacity, baseline and worker reads the trace again: keep stdin on disk
        path = _spool_stdin()
    spec = FleetSpec(
        clusters=clusters,
        failures=tuple(parse_failure(f, clusters) for f in failures),
        prefill_rate=prefill_rate,
        long_from=long_from,
        long_share=_share(class_budget),
        checkpoint_pages=pages_for(EntryKind.CHECKPOINT, checkpoint_bytes=int(checkpoint_mb * 1_000_000)),
    )
    report = run(path, [parse_cache_model(c) for c in caches], [parse_capacity(c) for c in capacity.split(",")],
                 spec, load_prices(prices_file), workers, progress=_progress(path), name=shown)  # fmt: skip
    text = (
        report.model_dump_json(indent=2) + "\n"
        if fmt == "json"
        else trace_table(report, width=_width(width), color=_use_color(output))
    )
    if plot and output and output != "-" and not Path(output).resolve().parent.is_dir():
        raise InputError("no such folder", source=output)  # before the picture is written: all or nothing
    if plot:
        _emit(curve_svg(report), plot)
    _emit(text, output)


def _spool_stdin() -> str:
    """stdin copied to a temporary file (removed at exit), read in chunks: memory stays flat."""
    import atexit

    fd, name = tempfile.mkstemp(prefix="kcost-trace-", suffix=".jsonl")
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return name


def _share(text: str | None) -> float | None:
    if text is None:
        return None
    name, _, value = text.partition("=")
    raw = value.strip().removesuffix("%")
    if name.strip() != "long" or not raw.replace(".", "", 1).isdecimal():
        raise InputError(f"not a class budget: {text!r}", field="--class-budget", hint="long=30% or long=0.3")
    share = float(raw) / 100 if value.strip().endswith("%") else float(raw)  # 30% or a fraction, 0.3
    if not 0 < share <= 1:
        raise InputError(f"must be above 0 and at most 100% (got {text})", field="--class-budget")
    return share


def _progress(path: str) -> Any:
    """A rich progress bar on stderr for a terminal (bytes read of the trace); nothing otherwise."""
    if not sys.stderr.isatty() or path == "-":
        return None

    def wrap(requests: Any) -> Any:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("simulating", total=None)
            for n, req in enumerate(requests, start=1):
                if n % 1000 == 0:
                    bar.update(task, completed=n, description=f"{n:,} requests")
                yield req

    return wrap


def _read(paths: tuple[str, ...], input_format: str, tokenizer: str | None) -> list[Any]:
    """The sessions in `paths`; files passed over in a folder are counted on stderr."""
    from kcost.readers import read_all
    from kcost.tokenizer import load_counter

    found = read_all(list(paths), input_format, counter=load_counter(tokenizer or os.environ.get("KCOST_TOKENIZER")))
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
    from kcost.prices import load_prices

    table = load_prices(prices_file)
    if fmt == "json":
        _emit(table.model_dump_json(indent=2) + "\n", None)
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

    from pydantic import BaseModel

    from kcost.checks import CheckReport, DiffReport
    from kcost.explain import Explanation
    from kcost.models import BillReport, SessionSpec
    from kcost.quote import Quote
    from kcost.traces import TraceReport

    schemas: dict[str, tuple[type[BaseModel], Literal["validation", "serialization"]]] = {
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
        **model.model_json_schema(mode=mode),
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


def main() -> None:
    cli(prog_name="kcost")
