"""`kcost bill`, `kcost explain` and `kcost quote`: what sessions cost, why, and the lesson's arithmetic."""

from __future__ import annotations

from typing import Any

import click

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
    settings,
)
from kcost.cli.output import emit, table_width, use_color
from kcost.options import MAX_REPEAT, MAX_TOKENS
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
    from kcost.billing import report
    from kcost.prices import load_prices
    from kcost.render.registry import View, render

    config = settings(ctx)
    models = list(caches) or [_config_cache(config)]
    prices = load_prices(prices_file or config.prices)
    usage = usage if usage != "auto" else config.usage or "auto"
    sessions = read_sessions(paths, input_format, tokenizer, usage, lenient)
    result = report(sessions, models, prices, usage, model=price_model, at=prices_at and prices_at.date())
    columns, colored = table_width(width, output), use_color(color, output)
    emit(render("bill", result, fmt, View(width=columns, color=colored, summary=summary, numbers=json_numbers)), output)


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
    from functools import partial

    from kcost.billing import bill as bill_session
    from kcost.explain import explain as explain_session
    from kcost.explain import hour_writes
    from kcost.prices import load_prices
    from kcost.render.registry import View, render

    config = settings(ctx)
    model = cache or _config_cache(config)
    prices = load_prices(prices_file or config.prices)
    usage = usage if usage != "auto" else config.usage or "auto"

    def billed(session: Any, cache: Any) -> Any:
        at = prices_at.date() if prices_at else None
        return bill_session(session, cache=cache, prices=prices, usage=usage, model=price_model, at=at)

    items = []
    for s in read_sessions(paths, input_format, tokenizer, usage, lenient):
        first = billed(s, model)
        hour = hour_writes(first, s, model, partial(billed, s))
        items.append(explain_session(first, s, model.label, hour))
    emit(render("explain", items, fmt, View(width=table_width(width, output), color=use_color(color, output),
                                           numbers=json_numbers)), output)  # fmt: skip


@click.command()
@click.option(
    "--prefix", type=click.IntRange(0, MAX_TOKENS), required=True, help="Prefix tokens carried by every turn."
)
@click.option("--new", type=click.IntRange(0, MAX_TOKENS), required=True, help="New input tokens per turn.")
@click.option("--turns", type=click.IntRange(1, MAX_REPEAT), default=50, show_default=True)
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
    from kcost.prices import load_prices
    from kcost.quotes import make_quote
    from kcost.render.registry import View, render

    prices = load_prices(prices_file or settings(ctx).prices)
    result = make_quote(prefix=prefix, new=new, turns=turns, output=output_tokens, hit_rate=hit_rate, prices=prices,
                        model=model)  # fmt: skip
    columns, colored = table_width(width, output), use_color(color, output)
    emit(render("quote", result, fmt, View(width=columns, color=colored, numbers=json_numbers)), output)


def read_sessions(
    paths: tuple[str, ...], input_format: str, tokenizer: str | None, usage: str, lenient: bool = False
) -> list[Any]:
    """The sessions in `paths`; files passed over in a folder are counted on stderr. Prompts are rebuilt only
    where they will be simulated."""
    from kcost.readers import read_all
    from kcost.transcripts.tokenizer import load_counter

    counter = load_counter(tokenizer) if usage != "reported" else None
    found = read_all(list(paths), input_format, counter=counter, prompts=usage != "reported", lenient=lenient)
    if found.skipped:
        click.echo(f"kcost: passed over {len(found.skipped)} file(s) that are no session: {found.skipped[0]}"
                   + (" ..." if len(found.skipped) > 1 else ""), err=True)  # fmt: skip
    return found.sessions


def _config_cache(config: Any) -> Any:
    from kcost.cache import parse_cache_model

    return parse_cache_model(config.cache or "k3")


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--on", "models", multiple=True, metavar="MODEL",
              help="A model to price the sessions on, under its provider's own cache rule (repeat; default: "
                   "kimi-k3, kimi-k3.1-pro, claude-sonnet-4-5, gpt-5.1, deepseek-chat).")  # fmt: skip
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
    from kcost.compare import DEFAULT_MODELS
    from kcost.compare import compare as compare_sessions
    from kcost.prices import load_prices
    from kcost.render.registry import View, render

    config = settings(ctx)
    prices = load_prices(prices_file or config.prices)
    usage = usage if usage != "auto" else config.usage or "auto"
    sessions = read_sessions(paths, input_format, tokenizer, usage, lenient)
    at = prices_at.date() if prices_at else None
    result = compare_sessions(sessions, list(models or DEFAULT_MODELS), prices, usage, at)
    emit(render("compare", result, fmt, View(width=table_width(width, output), color=use_color(color, output),
                                             numbers=json_numbers)), output)  # fmt: skip
