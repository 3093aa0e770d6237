"""`kcost statusline` and `kcost watch`: a running session's cost and cache clock, as a status line and live."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from kcost.cli.options import (
    CACHE_MODEL,
    prices_option,
    pricing_options,
    run_settings,
    tokenizer_option,
    warn_option,
    window_options,
)

if TYPE_CHECKING:
    from rich.console import Group, RenderableType

    from kcost.live.watch import Frame


@click.command()
@click.argument("path", required=False)
@click.option("--cache", type=CACHE_MODEL, help="Cache model (default: the config's, else k3).")
@prices_option
@pricing_options
@tokenizer_option
@window_options
@warn_option
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the clock (auto: on a terminal; NO_COLOR and FORCE_COLOR are heeded).")  # fmt: skip
@click.pass_context
def statusline(ctx: click.Context, path: str | None, cache: Any, prices_file: str | None, price_model: str | None,
               prices_at: Any, tokenizer: str | None, window_hours: int | None, limit: str | None, warn: str | None,
               color: str) -> None:  # fmt: skip
    """One line for a status-line hook: cost so far, hit rate and the cache clock.

    Reads the hook's JSON on stdin (Claude Code: `"statusLine": {"type": "command", "command": "kcost
    statusline"}`), or the log at PATH. With a window's limit (--limit, or the config's [window]), a second line:
    the usage window across sessions against it, and a warning as it reaches each share, once. Never fails the
    hook: a problem is one short line, exit 0.
    """
    from kcost.live.statusline import hook_line

    def settings() -> Any:
        return run_settings(ctx, caches=(cache,) if cache else (), prices=prices_file, model=price_model,
                            at=prices_at, tokenizer=tokenizer, window_hours=window_hours, limit=limit,
                            warn=warn)  # fmt: skip

    click.echo(hook_line(path, settings, color, sys.stdin, sys.stdout), color=True)  # coloured as hook_line chose


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--cache", type=CACHE_MODEL, help="Cache model (default: the config's, else k3).")
@prices_option
@pricing_options
@tokenizer_option
@window_options
@warn_option
@click.option("--once", is_flag=True, help="Print one frame and exit.")
@click.option("--interval", type=click.FloatRange(0.05, 60), default=1.0, show_default=True,
              help="Seconds between looks at the logs.")  # fmt: skip
@click.pass_context
def watch(ctx: click.Context, paths: tuple[str, ...], cache: Any, prices_file: str | None, price_model: str | None,
          prices_at: Any, tokenizer: str | None, window_hours: int | None, limit: str | None, warn: str | None,
          once: bool, interval: float) -> None:  # fmt: skip
    """Follow the newest active session (or the logs in PATHS) as it runs.

    Each new turn with its cost and cause, the running total, the cache clock counting down, and a warning when
    a budget of the config ([budgets] in kcost.toml) is about to be crossed. With a window's limit (--limit, or
    the config's [window]): the usage window across sessions against it, and a warning as it reaches each share,
    once. On a terminal the view redraws; piped, one line per new turn and per warning. Ctrl-C ends it (exit 130).
    """
    from kcost.live.clock import now
    from kcost.live.watch import frames, newest_session, turn_line
    from kcost.render.printable import printable_texts

    settings = run_settings(ctx, caches=(cache,) if cache else (), prices=prices_file, model=price_model,
                            at=prices_at, tokenizer=tokenizer, window_hours=window_hours, limit=limit,
                            warn=warn)  # fmt: skip
    targets = list(paths) or [newest_session()]
    drawn = sys.stdout.isatty() and not once  # redrawn at every look, so the clock counts down between turns
    stream = frames(targets, settings, interval=interval, wait=not once, beat=drawn)
    if once:
        from rich.console import Console

        Console(soft_wrap=True).print(table(next(stream), now()))
        return
    if not drawn:
        for frame in map(printable_texts, stream):  # a log's name and texts escaped, as the table's (`table`)
            for w in frame.sessions:
                for turn in w.turns[len(w.turns) - w.new :]:
                    click.echo(turn_line(w.path, turn))
                for warning in w.warnings if w.new else ():
                    click.echo(f"warning: {warning}")
            for warning in frame.warned:
                click.echo(f"warning: {warning}")
            sys.stdout.flush()
        return
    from rich.live import Live

    with Live(table(next(stream), now()), refresh_per_second=2, transient=False) as live:
        for frame in stream:
            live.update(table(frame, now()))


def table(frame: Frame, now: float, rows: int = 12) -> Group:
    """The frame for a terminal: each session's last turns, its total, its clock and its warnings. Every text of
    the frame is shown escaped (`kcost.render.printable`: a log's name holding an escape sequence reaches the
    terminal as `\\x1b`), and as text, never read as rich's markup (a log named `[bold]x` shows as named)."""
    from pathlib import Path

    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from kcost.live.statusline import line
    from kcost.render.display import money, percent
    from kcost.render.printable import printable_texts

    frame = printable_texts(frame)
    parts: list[RenderableType] = []
    for w in frame.sessions:
        t = Table(title=Text(Path(w.path).name, style="table.title"), title_justify="left", expand=False)
        for name, justify in (("turn", "right"), ("time", "left"), ("input", "right"), ("hit", "right"),
                              ("cost", "right"), ("cause", "left"), ("total", "right")):  # fmt: skip
            t.add_column(name, justify=justify)  # type: ignore[arg-type]
        for turn in w.turns[-rows:]:
            t.add_row(str(turn.turn), (turn.time or "-")[11:19], f"{turn.input_tokens:,}", percent(turn.hit_rate),
                      money(turn.total), turn.reason, money(turn.cumulative, total=True))  # fmt: skip
        parts.append(t)
        parts.append(Text(line(w.figures, now)))
        for warning in w.warnings:
            parts.append(Text(f"warning: {warning}", style="bold yellow"))
    if frame.window is not None:  # the window's figures, and every warning it earned (each printed once, piped)
        from kcost.live.limits import window_line

        parts.append(Text(window_line(frame.window)))
        for share, warning in zip(frame.window.reached, frame.window.warnings(), strict=True):
            parts.append(Text(f"warning: {warning}", style="bold red" if share >= 1 else "bold yellow"))
    return Group(*parts)
