"""`kcost trace`: a request trace through a fleet."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from kcost.cli.options import (
    CACHE_MODEL,
    CAPACITIES,
    FAILURE,
    POSITIVE_TOKENS,
    SHARE,
    format_option,
    json_numbers_option,
    output_options,
    prices_option,
    run_settings,
)
from kcost.cli.output import emit_all, view
from kcost.errors import InputError
from kcost.render.registry import formats


@click.command()
@click.argument("path")
@click.option("--cache", "caches", type=CACHE_MODEL, multiple=True,
              help="Cache model (repeat; default: the config's, else k3).")  # fmt: skip
@click.option("--capacity", "capacities", type=CAPACITIES, default="inf", show_default=True,
              help="Cache per cluster; a comma list for a curve: KV tokens (10M), bytes (80GiB), inf.")  # fmt: skip
@click.option("--clusters", type=click.IntRange(1, 1024), default=1, show_default=True)
@click.option("--fail", "failures", type=FAILURE, multiple=True,
              help="CLUSTER@START-END: a cluster down (seconds, or 10m-20m).")  # fmt: skip
@click.option("--prefill-rate", type=click.FloatRange(1, 1e12), default=50_000, show_default=True,
              help="Tokens a second a cluster prefills (an assumption).")  # fmt: skip
@click.option("--long-from", type=POSITIVE_TOKENS, default="2048", show_default=True,
              help="Inputs this long or longer are the long class.")  # fmt: skip
@click.option("--class-budget", type=SHARE,
              help="The long class's share of prefill while short requests wait: long=30%.")  # fmt: skip
@click.option("--checkpoint-mb", type=click.FloatRange(0.001, 1e6), default=449.0, show_default=True,
              help="Megabytes one KDA checkpoint takes in the pool (K3: about 449).")  # fmt: skip
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Processes, each simulating some clusters.")  # fmt: skip
@click.option("--scheduler", metavar="ADDRESS",
              help="Run the clusters' replays on this Dask scheduler (tcp://host:8786; needs kcost[dask]), split as "
                   "--workers splits them (default there: one task per cluster).")  # fmt: skip
@click.option("--engine", type=click.Choice(["auto", "compiled", "python"]), default="auto", show_default=True,
              help="The replay engine: the compiled core where it was built, or the Python one.")  # fmt: skip
@click.option("--plot", type=click.Path(dir_okay=False), help="Write the hit-rate-vs-capacity curve here (.svg).")
@format_option(formats("trace"))
@prices_option
@output_options
@json_numbers_option
@click.pass_context
def trace(
    ctx: click.Context, path: str, caches: tuple[Any, ...], capacities: list[Any], clusters: int,
    failures: tuple[Any, ...], prefill_rate: float, long_from: int, class_budget: float | None,
    checkpoint_mb: float, workers: int, scheduler: str | None, engine: str, plot: str | None, fmt: str,
    prices_file: str | None, output: str | None, width: int | None, color: str, json_numbers: bool,
) -> None:  # fmt: skip
    """Bill a request trace (Mooncake or kcost JSONL) under each cache model and capacity: hit rates, cost, the
    cost of a cluster failure, and time to first token per traffic class."""
    from kcost import api
    from kcost.fleet.spec import FleetSpec, check_failure
    from kcost.render.registry import render

    if plot and not plot.lower().endswith(".svg"):
        raise click.BadParameter("kcost draws the curve as SVG: name a .svg file", param_hint="--plot")
    for name, value in (("--prefill-rate", prefill_rate), ("--checkpoint-mb", checkpoint_mb)):
        if not math.isfinite(value):
            raise click.BadParameter(f"must be a finite number (got {value})", param_hint=name)
    try:
        failed = tuple(check_failure(f, clusters) for f in failures)
    except InputError as exc:
        raise click.BadParameter(exc.message + (f" ({exc.hint})" if exc.hint else ""), param_hint="--fail") from None
    shown = "stdin" if path == "-" else path
    if path == "-":  # each model, capacity, baseline and worker reads the trace again: keep stdin on disk
        path = _spool_stdin()
    spec = FleetSpec(
        clusters=clusters,
        failures=failed,
        prefill_rate=prefill_rate,
        long_from=long_from,
        long_share=class_budget,
        checkpoint_bytes=int(checkpoint_mb * 1_000_000),
    )
    settings = run_settings(ctx, caches=caches, prices=prices_file)
    try:
        with _progress(path) as progress:
            chosen = None if engine == "auto" else engine
            report = api.trace(path, spec, settings, capacities=capacities, workers=workers, progress=progress,
                               name=shown, scheduler=scheduler, engine=chosen)  # fmt: skip
    except InputError as exc:
        if exc.source == path and shown == "stdin":  # the spooled copy of stdin: say `-`
            exc.source = "-"
        raise
    text = render("trace", report, fmt, view(output, width, color, numbers=json_numbers))
    if plot:
        from kcost.render.trace import curve_svg

        emit_all([(curve_svg(report), plot), (text, output)])  # all or nothing
    else:
        emit_all([(text, output)])


def _spool_stdin() -> str:
    """stdin copied to a temporary file (removed at exit), read in chunks: memory stays flat."""
    import atexit
    import os
    import shutil
    import tempfile
    from pathlib import Path

    fd, name = tempfile.mkstemp(prefix="kcost-trace-", suffix=".jsonl")
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return name


@contextmanager
def _progress(path: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr for a terminal: bytes of the trace read, of its size, with the time left."""
    if not sys.stderr.isatty() or path == "-":
        yield None
        return
    import os

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("replaying"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("trace", total=os.path.getsize(path))
        yield lambda done: bar.update(task, completed=done)
