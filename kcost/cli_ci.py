"""`kcost check` and `kcost diff`: budgets in CI, and two bills side by side. Registered on the `kcost` group;
click only at the top, like `kcost.cli`."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from kcost.cli import (
    EXIT_OK,
    _emit,
    _format_option,
    _input_options,
    _output_option,
    _prices_option,
    _use_color,
    _width,
    _width_option,
    cli,
)
from kcost.errors import InputError

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
