"""`kcost bill`, `kcost explain`, `kcost compare` and `kcost quote`: what sessions cost, why, what they would cost
on other models, and what one turn costs missed and hit. Each refuses a bad option it can check without the logs
before it reads any."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kcost.cli.options import (
    CACHE_MODEL,
    RATE,
    TOKENS,
    cache_option,
    format_option,
    input_options,
    json_numbers_option,
    output_options,
    prices_at_option,
    prices_option,
    pricing_options,
    run_settings,
    scheduler_option,
    window_options,
    zone_option,
)
from kcost.cli.output import emit, emit_lines, tell, view
from kcost.model.bounds import MAX_TURNS
from kcost.render.registry import formats
from kcost.results.grouping import BY, SORTS

if TYPE_CHECKING:
    from kcost.api.settings import Settings


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--cache", "caches", type=CACHE_MODEL, multiple=True,
              help="Cache model (default: the config's, else k3, fitted to a Kimi log's cached counts where that "
              "is unambiguous): k3, k3:hash=256,ttl=1800, k3:auto, shared:6144, ideal, none. Repeat to bill under "
              "several side by side.")  # fmt: skip
@format_option(formats("bill"))
@input_options
@click.option("--summary", is_flag=True, help="Only the summaries, no per-turn rows (table, markdown).")
@click.option("--by", type=click.Choice(BY), help="One row per session, hour, day, week, month, usage window, model, "
              "project or agent, and the total (several sessions in a table or markdown: by session unless "
              "--per-turn). By hour and window each call counts where it was made; a window opens at a call's hour "
              "and runs --window-hours, the active one with its burn rate.")  # fmt: skip
@window_options
@click.option("--last", type=click.IntRange(1, 36_500), metavar="DAYS", help="Only sessions that started in the "
              "last DAYS days (1: today), in --timezone.")  # fmt: skip
@click.option("--sort", type=click.Choice(SORTS), help="Order the rows by cost (dearest first; the default by "
              "session, model, project and agent), time (the default by day, week and month), name, turns, "
              "input or hit-rate (the lowest first).")  # fmt: skip
@click.option("--breakdown", is_flag=True, help="Under each row, one row per model.")
@click.option("--since", metavar="DATE|TIME", help="Only sessions that started then or later: 2026-11-30, "
              "20261130 or 2026-11-30T14:00 (in --timezone).")  # fmt: skip
@click.option("--until", metavar="DATE|TIME", help="Only sessions that started then or earlier (a date: all of "
              "that day).")  # fmt: skip
@click.option("--timezone", metavar="ZONE", help="The time zone of days, weeks, months and --since/--until "
              "(an IANA name: UTC, Europe/Berlin; default: the machine's).")  # fmt: skip
@click.option("--per-turn", is_flag=True, help="A per-turn bill of every session, however many there are.")
@click.option("-v", "--verbose", is_flag=True, help="Every note, the routine ones too (lines that carry no usage).")
@scheduler_option
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def bill(ctx: click.Context, paths: tuple[str, ...], caches: tuple[Any, ...], fmt: str, input_format: str,
         usage: str, tokenizer: str | None, lenient: bool, summary: bool, by: str | None, sort: str | None,
         breakdown: bool, window_hours: int | None, limit: str | None, last: int | None, since: str | None,
         until: str | None, timezone: str | None, per_turn: bool, verbose: bool,
         scheduler: str | None, prices_file: str | None, price_model: str | None, prices_at: Any,
         output: str | None, width: int | None, color: str, json_numbers: bool) -> None:  # fmt: skip
    """Bill sessions under one or more cache models.

    PATHS are agents' session logs, turn specs (YAML, JSON, JSONL) or folders of them; `-` reads stdin. No PATHS:
    every agent log on this machine, from each agent's home (`kcost formats` lists the agents and their homes).
    One session gets its per-turn bill; several, in a table or markdown, one row each and the total (--per-turn:
    every bill); --by groups the rows.
    """
    from dataclasses import replace

    from kcost import api
    from kcost.render.registry import formats, render

    if (window_hours or limit) and by != "window":
        raise click.BadParameter("only rows by window have a window's length or limit: add --by window",
                                 param_hint="--window-hours" if window_hours else "--limit")  # fmt: skip
    if last is not None:
        if since is not None:
            raise click.BadParameter("give --since or --last, not both", param_hint="--last")
        since = _days_back(last, timezone)
    settings = run_settings(ctx, caches=caches, prices=prices_file, usage=usage, model=price_model, at=prices_at,
                            input_format=input_format, tokenizer=tokenizer, lenient=lenient, timezone=timezone,
                            since=since, until=until, scheduler=scheduler, window_hours=window_hours,
                            limit=limit)  # fmt: skip
    grouped = by is not None or sort is not None or breakdown
    if fmt == "json" and not grouped:  # the turns' one use: where logs are billed apart, written there
        settings = replace(settings, json_turns=json_numbers)
    if grouped and per_turn:
        raise click.BadParameter("a per-turn bill has no rows to group: drop --per-turn", param_hint="--by")
    if grouped and fmt not in formats("overview"):
        raise click.BadParameter(f"the rows of --by are not written as {fmt}", param_hint="--format")
    priced_as_asked(settings)
    sessions = api.sessions(paths, settings, tell, bill=True, verbose=verbose)
    several = len(sessions) > 1 and not per_turn and fmt in ("table", "markdown")  # HTML: the bill's page has both
    if grouped or several:
        rows = api.overview(sessions, settings, by=by or "session", sort=sort, breakdown=breakdown, since=since,
                            until=until)  # fmt: skip
        emit(render("overview", rows, fmt, view(output, width, color, numbers=json_numbers)), output)
        return
    shown = view(output, width, color, summary=summary, numbers=json_numbers, verbose=verbose)
    if fmt in ("json", "jsonl", "csv"):  # written a piece at a time: billed here, each turn as it is billed
        from kcost.api.distributed import made_elsewhere
        from kcost.render.data import pieces, streamed

        if made_elsewhere(sessions, settings):  # billed where the logs were read: the bills are held already
            emit_lines(pieces(fmt, api.report(sessions, settings=settings), shown), output)
        else:  # none kept: JSON Lines and CSV hold one turn at a time, JSON the text of the turns
            emit_lines(streamed(fmt, api.streamed(sessions, settings), shown), output)
        return
    if summary and fmt in ("table", "markdown"):  # no turn shown: none kept
        stream = api.streamed(sessions, settings)
        for _ in stream.events():
            pass
        emit(render("bill", stream.report(), fmt, shown), output)
        return
    emit(render("bill", api.report(sessions, settings=settings), fmt, shown), output)


def _days_back(days: int, timezone: str | None) -> str:
    """`--last DAYS` as a `--since` date: the first of the last DAYS days (today the last), in the time zone."""
    from datetime import datetime, timedelta

    from kcost.api.settings import time_zone

    today = datetime.now(time_zone(timezone) if timezone else None).date()  # None: the machine's clock
    return (today - timedelta(days=days - 1)).isoformat()


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--cache", type=CACHE_MODEL, help="The cache model to explain the misses under (default: the "
              "config's, else k3).")  # fmt: skip
@format_option(formats("explain"))
@click.option("--top", type=click.IntRange(1, MAX_TURNS), help="Only the N fixes that save most (in every format; "
              "with --detail, the N costliest turns).")  # fmt: skip
@click.option("--sessions", "each", is_flag=True, help="Several sessions: under the fixes ranked across them, each "
              "session with a fix that saves, the dearest first.")  # fmt: skip
@click.option("--detail", is_flag=True, help="Every turn's misses by cause, and the causes by cost, under each "
              "session's fixes (several sessions: implies --sessions).")  # fmt: skip
@input_options
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def explain(ctx: click.Context, paths: tuple[str, ...], cache: Any, fmt: str, top: int | None, each: bool,
            detail: bool, input_format: str, usage: str, tokenizer: str | None, lenient: bool,
            prices_file: str | None, price_model: str | None, prices_at: Any, output: str | None, width: int | None,
            color: str, json_numbers: bool) -> None:  # fmt: skip
    """Why sessions' misses cost money, and the fixes ranked by dollars saved (each priced by billing the session
    again with it applied), with what no fix removes. Several sessions: the fixes ranked across all of them
    (--sessions: then each session's).

    PATHS as for bill (none: every agent log on this machine).
    """
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, caches=(cache,) if cache else (), prices=prices_file, usage=usage,
                            model=price_model, at=prices_at, input_format=input_format, tokenizer=tokenizer,
                            lenient=lenient)  # fmt: skip
    priced_as_asked(settings)
    items = api.explain(api.sessions(paths, settings, tell), settings, top=top)
    shown = view(output, width, color, numbers=json_numbers, detail=detail, top=top, summary=not (each or detail))
    emit(render("explain", items, fmt, shown), output)


@click.command()
@click.option("--prefix", type=TOKENS, required=True, help="Prefix tokens carried by every turn (400000, 400k, 1.5M).")
@click.option("--new", type=TOKENS, required=True, help="New input tokens per turn (4000, 4k).")
@click.option("--turns", type=click.IntRange(1, MAX_TURNS), default=50, show_default=True,
              help="How many such turns, each carrying the prefix again.")  # fmt: skip
@click.option("--output-tokens", "--out", "output_tokens", type=TOKENS, default="0",
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
    """What one turn of --prefix + --new input tokens costs with its prefix missed and hit, the blended price at
    --hit-rate, and what --turns such turns cost."""
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, prices=prices_file, model=model)
    result = api.quote(prefix=prefix, new=new, turns=turns, output=output_tokens, hit_rate=hit_rate,
                       settings=settings)  # fmt: skip
    emit(render("quote", result, fmt, view(output, width, color, numbers=json_numbers)), output)


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--on", "models", multiple=True, metavar="MODEL",
              help="A model to price the sessions on, under its provider's own cache rule (repeat; default: a few "
                   "of each provider's; `kcost prices` lists every id).")  # fmt: skip
@click.option("--sessions", "each", is_flag=True, help="Several sessions: under the totals, each session's rows, the "
              "dearest first.")  # fmt: skip
@format_option(formats("compare"))
@input_options
@prices_option
@prices_at_option
@output_options
@json_numbers_option
@click.pass_context
def compare(ctx: click.Context, paths: tuple[str, ...], models: tuple[str, ...], each: bool, fmt: str,
            input_format: str, usage: str, tokenizer: str | None, lenient: bool, prices_file: str | None,
            prices_at: Any, output: str | None, width: int | None, color: str, json_numbers: bool) -> None:  # fmt: skip
    """What the same sessions cost on other models, each under its provider's own cache rule, the cheapest marked.
    Several sessions: one row per model for all of them together (--sessions: then each session's rows).

    PATHS as for bill (none: every agent log on this machine).
    """
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, prices=prices_file, usage=usage, at=prices_at, input_format=input_format,
                            tokenizer=tokenizer, lenient=lenient)  # fmt: skip
    chosen = api.compare_models(models, settings)
    result = api.compare(api.sessions(paths, settings, tell), chosen, settings)
    shown = view(output, width, color, numbers=json_numbers, summary=not each)
    emit(render("compare", result, fmt, shown), output)


@click.command()
@click.argument("paths", nargs=-1)
@cache_option
@format_option(formats("forecast"))
@input_options
@zone_option
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def forecast(ctx: click.Context, paths: tuple[str, ...], cache: Any, fmt: str, input_format: str, usage: str,
             tokenizer: str | None, lenient: bool, timezone: str | None, prices_file: str | None,
             price_model: str | None, prices_at: Any, output: str | None, width: int | None, color: str,
             json_numbers: bool) -> None:  # fmt: skip
    """The month's spend to date and its projection to the month's end: the median and an upper bound (P90) taken
    from your own days (at least 7 before today; fewer, and it says so). HTML draws it.

    PATHS as for bill (none: every agent log on this machine).
    """
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, caches=(cache,) if cache else (), prices=prices_file, usage=usage, model=price_model,
                            at=prices_at, input_format=input_format, tokenizer=tokenizer, lenient=lenient,
                            timezone=timezone)  # fmt: skip
    priced_as_asked(settings)
    result = api.forecast(api.sessions(paths, settings, tell, bill=True), settings)
    emit(render("forecast", result, fmt, view(output, width, color, numbers=json_numbers)), output)


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--plan", "plan_id", metavar="ID|all", help="The plan to hold the month to (default: the config's "
              "`plan`, else the plans of the agents whose logs these are); all: every plan kcost knows.")  # fmt: skip
@click.option("--month", type=click.DateTime(formats=["%Y-%m"]), help="The month (2026-11; default: this one).")
@cache_option
@format_option(formats("plan"))
@input_options
@zone_option
@prices_option
@output_options
@json_numbers_option
@click.pass_context
def plan(ctx: click.Context, paths: tuple[str, ...], plan_id: str | None, month: Any, cache: Any, fmt: str,
         input_format: str, usage: str, tokenizer: str | None, lenient: bool, timezone: str | None,
         prices_file: str | None, output: str | None, width: int | None, color: str,
         json_numbers: bool) -> None:  # fmt: skip
    """The month's sessions at API prices (K3's, and each call's logged model's own) beside subscription plans:
    whether each pays for itself at this month's pace, and at what share of that use it would. Prices are read from
    each plan's source, named with its date.

    PATHS as for bill (none: every agent log on this machine).
    """
    from kcost import api
    from kcost.render.registry import render

    if plan_id is not None and plan_id != "all":
        from kcost.pricing.plans import plan as named

        named(plan_id)  # refused before the logs are read
    settings = run_settings(ctx, caches=(cache,) if cache else (), prices=prices_file, usage=usage,
                            input_format=input_format, tokenizer=tokenizer, lenient=lenient,
                            timezone=timezone)  # fmt: skip
    result = api.plan(api.sessions(paths, settings, tell, bill=True), settings, plan=plan_id,
                      month=month.date() if month is not None else None)  # fmt: skip
    emit(render("plan", result, fmt, view(output, width, color, numbers=json_numbers)), output)


def priced_as_asked(settings: Settings) -> None:
    """The price file and the `--model` a run was given (or its config), checked before any log is read: a wrong
    one is refused at once, its option named."""
    from kcost import api

    if settings.prices is None and settings.model in (None, "logged"):
        return
    table = api.price_table(settings.prices)
    if settings.model not in (None, "logged"):
        table.entry(settings.model)
