"""`kcost check` and `kcost diff`: budgets in CI, and two bills side by side."""

from __future__ import annotations

import os
from typing import Any

import click

from kcost.cli.options import (
    CACHE_MODEL,
    format_option,
    input_options,
    json_numbers_option,
    output_options,
    prices_option,
    pricing_options,
    settings,
)
from kcost.cli.output import emit, table_width, use_color
from kcost.errors import InputError
from kcost.render.registry import formats

EXIT_OK, EXIT_OVER_BUDGET = 0, 1


@click.command()
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
@click.option("--cache", type=CACHE_MODEL, help="The cache model (default: the config's, else k3).")
@format_option(formats("check"))
@input_options
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def check(ctx: click.Context, /, paths: tuple[str, ...], fmt: str, output: str | None, width: int | None, color: str,
          json_numbers: bool, **opts: Any) -> None:  # fmt: skip
    """Hold sessions to budgets: exit 0 when all hold, 1 when one is exceeded, 2 when input cannot be read.

    Budgets come from flags, or from kcost.toml / [tool.kcost] in pyproject.toml (flags win). With
    GITHUB_STEP_SUMMARY set, the markdown report is appended there and failures become ::error annotations.
    """
    from kcost.config import config_for
    from kcost.render import check as views
    from kcost.render.registry import View, render
    from kcost.workflow import run_check

    config = config_for(opts.pop("config_file")) if opts.get("config_file") else settings(ctx)
    outcome = run_check(list(paths), opts, config)
    report = outcome.report
    text = render("check", outcome, fmt, View(width=table_width(width, output), color=use_color(color, output),
                                              numbers=json_numbers))  # fmt: skip
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and output not in (None, "-"):  # the report must be writable before the summary is appended to
        from pathlib import Path

        if not Path(output).resolve().parent.is_dir():
            raise InputError("no such folder", source=output)
    if summary:  # first: if it cannot be appended to, the run fails before it writes its report
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render("check", outcome, "markdown") + "\n")
        except OSError as exc:
            raise InputError(f"cannot append: {exc.strerror}", source=summary, field="GITHUB_STEP_SUMMARY") from None
    emit(text, output)
    if summary:  # workflow commands on stderr: the runner reads both streams, and stdout may carry a report
        click.echo(views.github_annotations(report), nl=False, err=True)
    ctx.exit(EXIT_OK if report.passed else EXIT_OVER_BUDGET)


@click.command()
@click.argument("before")
@click.argument("after")
@click.option("--cache", type=CACHE_MODEL,
              help="The cache model, for sides that are sessions (default: the config's, else k3).")  # fmt: skip
@click.option("--only-changed", is_flag=True, help="Leave out the sessions that did not change.")
@format_option(formats("diff"))
@input_options
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def diff(ctx: click.Context, /, before: str, after: str, cache: Any, only_changed: bool, fmt: str,
         output: str | None, width: int | None, color: str, json_numbers: bool, **opts: Any) -> None:  # fmt: skip
    """Two bills (kcost bill --format json) or two sessions side by side: cost, hit rate and blended price per
    session and in total, what changed and by how much, new and removed sessions."""
    from kcost.cache import parse_cache_model
    from kcost.checks import diff as compare
    from kcost.render.registry import View, render
    from kcost.workflow import bill_of

    config = settings(ctx)
    model = cache or parse_cache_model(config.cache or "k3")
    opts["prices_file"] = opts.get("prices_file") or config.prices
    if opts.get("usage") in (None, "auto"):
        opts["usage"] = config.usage or "auto"
    result = compare(bill_of(before, model, opts), bill_of(after, model, opts), before=before, after=after)
    view = View(width=table_width(width, output), color=use_color(color, output), numbers=json_numbers,
                only_changed=only_changed)  # fmt: skip
    emit(render("diff", result, fmt, view), output)
