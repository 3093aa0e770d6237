"""`kcost bill`, `kcost explain` and `kcost quote`: what sessions cost, why, and the lesson's arithmetic."""

from __future__ import annotations

from typing import Any

import click

from kcost.cli.options import (
    CACHE_MODEL,
    RATE,
    TOKENS,
    format_option,
    input_options,
    json_numbers_option,
    output_options,
    prices_at_option,
    prices_option,
    pricing_options,
    run_settings,
    scheduler_option,
)
from kcost.cli.output import emit, emit_lines, tell, view
from kcost.model.bounds import MAX_TURNS
from kcost.render.registry import formats
from kcost.results.grouping import BY, SORTS


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--cache", "caches", type=CACHE_MODEL, multiple=True,
              help="Cache model (default: the config's, else k3, fitted to a Kimi log's cached counts where the "
              "fit is unambiguous): k3, k3:hash=256,ttl=1800, k3:every=1, k3:output=on, k3:auto (fitted to each "
              "log), shared:6144, ideal, none. Repeat to compare models side by side.")  # fmt: skip
@format_option(formats("bill"))
@input_options
@click.option("--summary", is_flag=True, help="Only the summaries, no per-turn rows (table, markdown).")
@click.option("--by", type=click.Choice(BY), help="One row per session, day, week, month, model, project or agent, "
              "and the total (several sessions in a table or markdown: by session unless --per-turn).")  # fmt: skip
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
         breakdown: bool, since: str | None, until: str | None, timezone: str | None, per_turn: bool, verbose: bool,
         scheduler: str | None, prices_file: str | None, price_model: str | None, prices_at: Any,
         output: str | None, width: int | None, color: str, json_numbers: bool) -> None:  # fmt: skip
    """Bill sessions under one or more cache models.

    PATHS are turn specs (YAML, JSON, JSONL), Kimi API logs, Kimi CLI or Kimi Code sessions, Claude Code logs
    or Codex rollouts, or folders of them; `-` reads stdin. No PATHS: every agent log on this machine, in each
    agent's home (CLAUDE_CONFIG_DIR, CODEX_HOME, KIMI_SHARE_DIR, KIMI_CODE_HOME, else ~/.claude, ~/.codex, ~/.kimi
    and ~/.kimi-code). One session gets its per-turn bill; several, in a
    table or markdown, one row each and the total (--per-turn: every bill); --by groups the rows.
    """
    from dataclasses import replace

    from kcost import api
    from kcost.render.registry import formats, render

    settings = run_settings(ctx, caches=caches, prices=prices_file, usage=usage, model=price_model, at=prices_at,
                            input_format=input_format, tokenizer=tokenizer, lenient=lenient, timezone=timezone,
                            since=since, until=until, scheduler=scheduler)  # fmt: skip
    grouped = by is not None or sort is not None or breakdown
    if fmt == "json" and not grouped:  # the turns' one use: where logs are billed apart, written there
        settings = replace(settings, json_turns=json_numbers)
    sessions = api.sessions(paths, settings, tell, bill=True, verbose=verbose)
    if grouped and per_turn:
        raise click.BadParameter("a per-turn bill has no rows to group: drop --per-turn", param_hint="--by")
    several = len(sessions) > 1 and not per_turn and fmt in ("table", "markdown")  # HTML: the bill's page has both
    if grouped or several:
        if fmt not in formats("overview"):
            raise click.BadParameter(f"the rows of --by are not written as {fmt}", param_hint="--format")
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


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--cache", type=CACHE_MODEL, help="The cache model to explain the misses under (default: the "
              "config's, else k3).")  # fmt: skip
@format_option(formats("explain"))
@click.option("--top", type=click.IntRange(1, MAX_TURNS), help="Only the N fixes that save most (in every format; "
              "with --detail, the N costliest turns).")  # fmt: skip
@click.option("--detail", is_flag=True, help="Every turn's misses by cause, and the causes by cost, under the fixes.")
@input_options
@prices_option
@pricing_options
@output_options
@json_numbers_option
@click.pass_context
def explain(ctx: click.Context, paths: tuple[str, ...], cache: Any, fmt: str, top: int | None, detail: bool,
            input_format: str, usage: str, tokenizer: str | None, lenient: bool, prices_file: str | None,
            price_model: str | None, prices_at: Any, output: str | None, width: int | None, color: str,
            json_numbers: bool) -> None:  # fmt: skip
    """What each session could save, in dollars: the fixes ranked by what they save (each priced by billing the
    session again with it applied), what no fix removes, and with --detail every turn's misses by cause.

    PATHS as for bill (none: every agent log in the agents' homes).
    """
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, caches=(cache,) if cache else (), prices=prices_file, usage=usage,
                            model=price_model, at=prices_at, input_format=input_format, tokenizer=tokenizer,
                            lenient=lenient)  # fmt: skip
    items = api.explain(api.sessions(paths, settings, tell), settings, top=top)
    shown = view(output, width, color, numbers=json_numbers, detail=detail, top=top)
    emit(render("explain", items, fmt, shown), output)


@click.command()
@click.option("--prefix", type=TOKENS, required=True, help="Prefix tokens carried by every turn (400000, 400k, 1.5M).")
@click.option("--new", type=TOKENS, required=True, help="New input tokens per turn (4000, 4k).")
@click.option("--turns", type=click.IntRange(1, MAX_TURNS), default=50, show_default=True)
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
    """The lesson's arithmetic: one turn of PREFIX + NEW tokens, missed or hit, and TURNS of them."""
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, prices=prices_file, model=model)
    result = api.quote(prefix=prefix, new=new, turns=turns, output=output_tokens, hit_rate=hit_rate,
                       settings=settings)  # fmt: skip
    emit(render("quote", result, fmt, view(output, width, color, numbers=json_numbers)), output)


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--on", "models", multiple=True, metavar="MODEL",
              help="A model to price the sessions on, under its provider's own cache rule (repeat; default: "
                   "each provider's own comparison models, as kcost.pricing.providers lists them).")  # fmt: skip
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
    session and model, the cheapest marked.

    PATHS as for bill (none: every agent log in the agents' homes).
    """
    from kcost import api
    from kcost.render.registry import render

    settings = run_settings(ctx, prices=prices_file, usage=usage, at=prices_at, input_format=input_format,
                            tokenizer=tokenizer, lenient=lenient)  # fmt: skip
    result = api.compare(api.sessions(paths, settings, tell), models, settings)
    emit(render("compare", result, fmt, view(output, width, color, numbers=json_numbers)), output)
