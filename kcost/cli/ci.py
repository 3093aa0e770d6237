"""`kcost check` and `kcost diff`: budgets in CI, and two bills side by side."""

from __future__ import annotations

import os
from typing import Any

import click

from kcost.cli.options import (
    CACHE_MODEL,
    cache_option,
    format_option,
    input_options,
    json_numbers_option,
    output_options,
    prices_option,
    pricing_options,
    run_settings,
    scheduler_option,
)
from kcost.cli.output import echo, emit, tell, view
from kcost.errors import InputError
from kcost.render.registry import formats

EXIT_OK, EXIT_OVER_BUDGET = 0, 1


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--max-session-usd", help="Each session's cost may not exceed this (USD).")
@click.option("--max-turn-usd", help="No turn may cost more than this (USD).")
@click.option("--max-total-usd", help="All sessions together may not cost more than this (USD).")
@click.option("--min-hit-rate", help="Each session's cache hit rate must reach this (0.85 or 85%).")
@click.option(
    "--max-blended", "max_blended_usd_per_mtok", help="Each session's input price per 1M tokens may not exceed this."
)
@click.option("--max-increase", help="Over the baseline, per session and in total: USD (0.50) or percent (10%).")
@click.option("--baseline", type=click.Path(dir_okay=False), help="A bill (kcost bill --format json) to compare with.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="A kcost.toml or pyproject.toml (default: the nearest one up from here).")  # fmt: skip
@cache_option
@click.option("--all", "every", is_flag=True, help="List every budget held too (the table counts them past 10).")
@format_option(formats("check"))
@input_options
@scheduler_option
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def check(ctx: click.Context, paths: tuple[str, ...], max_session_usd: str | None, max_turn_usd: str | None,
          max_total_usd: str | None, min_hit_rate: str | None, max_blended_usd_per_mtok: str | None,
          max_increase: str | None, baseline: str | None, config_file: str | None, cache: Any, every: bool, fmt: str,
          input_format: str, usage: str, tokenizer: str | None, lenient: bool, scheduler: str | None,
          prices_file: str | None, price_model: str | None, prices_at: Any, output: str | None, width: int | None,
          color: str, json_numbers: bool) -> None:  # fmt: skip
    """Hold sessions to budgets: exit 0 when all hold, 1 when one is exceeded, 2 when input cannot be read. The
    failures come first, the furthest over its limit first.

    PATHS as for bill (none: every agent log in the agents' homes).

    Budgets come from flags, or from kcost.toml / [tool.kcost] in pyproject.toml (flags win). With
    GITHUB_STEP_SUMMARY set, the markdown report is appended there and failures become ::error annotations.
    """
    from kcost import api
    from kcost.render import check as views
    from kcost.render.registry import render

    budgets = {"max_session_usd": max_session_usd, "max_turn_usd": max_turn_usd, "max_total_usd": max_total_usd,
               "min_hit_rate": min_hit_rate, "max_blended_usd_per_mtok": max_blended_usd_per_mtok,
               "max_increase": max_increase}  # fmt: skip
    settings = run_settings(ctx, config_file=config_file, caches=_one(cache), prices=prices_file, usage=usage,
                            model=price_model, at=prices_at, input_format=input_format, tokenizer=tokenizer,
                            lenient=lenient, baseline=baseline, budgets=budgets, scheduler=scheduler)  # fmt: skip
    outcome = api.check(list(paths), settings, tell)
    report = outcome.report
    text = render("check", outcome, fmt, view(output, width, color, numbers=json_numbers, detail=every))
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
        echo(views.github_annotations(report), nl=False, err=True)
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
def diff(ctx: click.Context, before: str, after: str, cache: Any, only_changed: bool, fmt: str, input_format: str,
         usage: str, tokenizer: str | None, lenient: bool, prices_file: str | None, price_model: str | None,
         prices_at: Any, output: str | None, width: int | None, color: str, json_numbers: bool) -> None:  # fmt: skip
    """Two bills (kcost bill --format json) or two sessions side by side: cost, hit rate and blended price per
    session and in total, what changed and by how much, new and removed sessions."""
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, caches=_one(cache), prices=prices_file, usage=usage, model=price_model,
                            at=prices_at, input_format=input_format, tokenizer=tokenizer, lenient=lenient)  # fmt: skip
    result = api.diff(before, after, settings)
    emit(render("diff", result, fmt, view(output, width, color, numbers=json_numbers, only_changed=only_changed)),
         output)  # fmt: skip


def _one(cache: Any) -> tuple[Any, ...]:
    return (cache,) if cache is not None else ()
