"""`kcost bill`, `kcost explain` and `kcost quote`: what sessions cost, why, and the lesson's arithmetic."""

from __future__ import annotations

from typing import Any

import click

from kcost.bounds import MAX_TOKENS, MAX_TURNS
from kcost.cli.options import (
    CACHE_MODEL,
    RATE,
    format_option,
    input_options,
    json_numbers_option,
    output_options,
    prices_at_option,
    prices_option,
    pricing_options,
    run_settings,
)
from kcost.cli.output import emit, view
from kcost.render.registry import formats


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--cache", "caches", type=CACHE_MODEL, multiple=True,
              help="Cache model (default: the config's, else k3): k3, k3:hash=256,ttl=1800, k3:every=1, "
              "k3:output=on, shared:6144, ideal, none. Repeat to compare models side by side.")  # fmt: skip
@format_option(formats("bill"))
@input_options
@click.option("--summary", is_flag=True, help="Only the summaries, no per-turn rows (table, markdown).")
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def bill(ctx: click.Context, paths: tuple[str, ...], caches: tuple[Any, ...], fmt: str, input_format: str,
         usage: str, tokenizer: str | None, lenient: bool, summary: bool, prices_file: str | None,
         price_model: str | None, prices_at: Any, output: str | None, width: int | None, color: str,
         json_numbers: bool) -> None:  # fmt: skip
    """Bill sessions under one or more cache models.

    PATHS are turn specs (YAML, JSON, JSONL), Kimi API logs, Kimi CLI or Kimi Code sessions, Claude Code logs
    or Codex rollouts, or folders of them; `-` reads stdin.
    """
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, caches=caches, prices=prices_file, usage=usage, model=price_model, at=prices_at,
                            input_format=input_format, tokenizer=tokenizer, lenient=lenient)  # fmt: skip
    result = api.report(api.sessions(paths, settings, tell), settings=settings)
    emit(render("bill", result, fmt, view(output, width, color, summary=summary, numbers=json_numbers)), output)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--cache", type=CACHE_MODEL, help="The cache model to explain the misses under (default: the "
              "config's, else k3).")  # fmt: skip
@format_option(formats("explain"))
@input_options
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def explain(ctx: click.Context, paths: tuple[str, ...], cache: Any, fmt: str, input_format: str, usage: str,
            tokenizer: str | None, lenient: bool, prices_file: str | None, price_model: str | None, prices_at: Any,
            output: str | None, width: int | None, color: str, json_numbers: bool) -> None:  # fmt: skip
    """Why each session's misses cost money: turn by turn, then the causes ranked by dollars, with fixes."""
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, caches=(cache,) if cache else (), prices=prices_file, usage=usage,
                            model=price_model, at=prices_at, input_format=input_format, tokenizer=tokenizer,
                            lenient=lenient)  # fmt: skip
    items = api.explain(api.sessions(paths, settings, tell), settings)
    emit(render("explain", items, fmt, view(output, width, color, numbers=json_numbers)), output)


@click.command()
@click.option(
    "--prefix", type=click.IntRange(0, MAX_TOKENS), required=True, help="Prefix tokens carried by every turn."
)
@click.option("--new", type=click.IntRange(0, MAX_TOKENS), required=True, help="New input tokens per turn.")
@click.option("--turns", type=click.IntRange(1, MAX_TURNS), default=50, show_default=True)
@click.option("--output-tokens", "--out", "output_tokens", type=click.IntRange(0, MAX_TOKENS), default=0,
              show_default=True, help="Output tokens per turn.")  # fmt: skip
@click.option("--hit-rate", type=RATE, default="0.9", show_default=True,
              help="Hit rate for the blended price (0.9 or 90%).")  # fmt: skip
@format_option(formats("quote"))
@prices_option
@click.option("--model", help="Model to price at (default: the price table's default).")
@output_options
@json_numbers_option
@click.pass_context
def quote(ctx: click.Context, prefix: int, new: int, turns: int, output_tokens: int, hit_rate: Any, fmt: str,
          prices_file: str | None, model: str | None, output: str | None, width: int | None,
          color: str, json_numbers: bool) -> None:  # fmt: skip
    """The lesson's arithmetic: one turn of PREFIX + NEW tokens, missed or hit, and TURNS of them."""
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, prices=prices_file, model=model)
    result = api.quote(prefix=prefix, new=new, turns=turns, output=output_tokens, hit_rate=hit_rate,
                       settings=settings)  # fmt: skip
    emit(render("quote", result, fmt, view(output, width, color, numbers=json_numbers)), output)


def tell(line: str) -> None:
    """What a run says besides its report: to stderr."""
    click.echo(line, err=True)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--on", "models", multiple=True, metavar="MODEL",
              help="A model to price the sessions on, under its provider's own cache rule (repeat; default: "
                   "each provider's own comparison models, as kcost.providers lists them).")  # fmt: skip
@format_option(formats("compare"))
@input_options
@prices_option
@prices_at_option
@output_options
@json_numbers_option
@click.pass_context
def compare(ctx: click.Context, paths: tuple[str, ...], models: tuple[str, ...], fmt: str, input_format: str,
            usage: str, tokenizer: str | None, lenient: bool, prices_file: str | None, prices_at: Any,
            output: str | None, width: int | None, color: str, json_numbers: bool) -> None:  # fmt: skip
    """What the same sessions cost on other models, each under its provider's own cache rule: one row per
    session and model, the cheapest marked."""
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, prices=prices_file, usage=usage, at=prices_at, input_format=input_format,
                            tokenizer=tokenizer, lenient=lenient)  # fmt: skip
    result = api.compare(api.sessions(paths, settings, tell), models, settings)
    emit(render("compare", result, fmt, view(output, width, color, numbers=json_numbers)), output)
