"""`kcost ledger`: what the ledger holds, and forgetting, vacuuming, moving aside, exporting and importing it."""

from __future__ import annotations

from typing import Any

import click

from kcost.cli.output import emit, emit_lines, tell


def _path(ctx: click.Context) -> str:
    from kcost.api.settings import config_for

    named = ctx.meta.get("kcost.ledger.path")  # the group's --ledger
    if named:
        return str(named)
    config = config_for(None)
    if isinstance(config.ledger, str):
        return config.ledger
    from kcost.ledger import default_path

    path = default_path()
    if path is None:
        raise click.UsageError("no ledger: $KCOST_LEDGER is off (give --ledger PATH)")
    return path


def _when(seconds: float | None) -> str:
    from datetime import datetime, timezone

    return "-" if seconds is None else datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@click.group(invoke_without_command=True)
@click.option("--ledger", "ledger_path", metavar="PATH", help="The ledger (default: the config's `ledger`, else "
              "$KCOST_LEDGER, else $XDG_DATA_HOME/kcost/ledger.sqlite3).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write it here.")
@click.pass_context
def ledger(ctx: click.Context, ledger_path: str | None, fmt: str, output: str | None) -> None:
    """What the ledger holds: sessions, calls, agents and machines, first and last time, size, logs gone.

    The ledger keeps every session kcost read (one SQLite file), so that a run reads only the logs that changed
    and a bill outlives its logs. Its subcommands forget sessions, vacuum it, move a damaged one aside, and carry
    its calls between machines."""
    ctx.meta["kcost.ledger.path"] = ledger_path
    if ctx.invoked_subcommand is not None:
        return
    import json

    from kcost.ledger.manage import summary
    from kcost.ledger.store import Ledger

    path = _path(ctx)
    if output:
        from kcost.inputs.files import noted, will_write

        noted(path)
        will_write(output)
    with Ledger(path, create=False) as db:
        held = summary(db)
    if fmt == "json":
        emit(json.dumps(held, indent=2) + "\n", output)
        return
    lines = [f"ledger   {held['path']} ({held['size_bytes']:,} bytes)", f"machine  {held['machine']}",
             f"holds    {held['sessions']:,} sessions, {held['calls']:,} calls, from {held['files']:,} log files; "
             f"{held['gone']:,} sessions whose logs are gone",
             f"from     {_when(held['first'])} to {_when(held['last'])}",
             f"reports  {held['reports']:,} kept whole ({held['report_bytes']:,} bytes)"]  # fmt: skip
    if held["misses_compared"]:
        lines.append(f"misses   {held['misses_compared']:,} the agent named, kcost's cause agreed on "
                     f"{held['misses_agreed']:,}")  # fmt: skip
    lines.append("")
    head = ("machine", "agent", "sessions", "calls", "gone", "first", "last")
    rows = [(a["machine"], a["agent"], f"{a['sessions']:,}", f"{a['calls']:,}", f"{a['gone']:,}",
             _when(a["first"])[:10], _when(a["last"])[:10]) for a in held["agents"]]  # fmt: skip
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        lines.append("  ".join(str(v).ljust(w) if i < 2 else str(v).rjust(w)
                               for i, (v, w) in enumerate(zip(row, widths, strict=True))).rstrip())  # fmt: skip
    emit("\n".join(lines) + "\n", output)


@ledger.command()
@click.option("--before", metavar="DATE", help="Sessions that started before this day (2026-11-30).")
@click.option("--agent", help="Sessions of this agent (claude-code, codex, ...).")
@click.option("--session", help="The session of this name, or whose log's path holds this.")
@click.option("--machine", help="Sessions imported from this machine.")
@click.pass_context
def forget(ctx: click.Context, before: str | None, agent: str | None, session: str | None,
           machine: str | None) -> None:  # fmt: skip
    """Forget sessions: those that match every condition given (one at least). A log still on disk is read
    again by the next run that covers it."""
    from kcost.api.settings import moment
    from kcost.ledger.manage import forget as forgotten
    from kcost.ledger.store import Ledger

    if before is None and agent is None and session is None and machine is None:
        raise click.UsageError("say which sessions: --before, --agent, --session or --machine")
    when = moment(before, None, field="before") if before else None
    with Ledger(_path(ctx), create=False) as db:
        n = forgotten(db, before=when, agent=agent, session=session, machine=machine)
    tell(f"kcost: forgot {n} session(s)")


@ledger.command()
@click.pass_context
def vacuum(ctx: click.Context) -> None:
    """Give back the space of what was forgotten."""
    from kcost.ledger.manage import vacuum as vacuumed
    from kcost.ledger.store import Ledger

    with Ledger(_path(ctx), create=False) as db:
        before, after = vacuumed(db)
    tell(f"kcost: {before:,} bytes before, {after:,} after")


@ledger.command()
@click.pass_context
def rebuild(ctx: click.Context) -> None:
    """Move the ledger aside (kept, never deleted): the next run makes a new one from the logs on disk. For a
    ledger kcost cannot read."""
    from kcost.ledger.manage import rebuild as moved

    path = _path(ctx)
    aside = moved(path)
    tell(f"kcost: moved {path} to {aside}; the next run reads the logs again" if aside
         else f"kcost: no ledger at {path}")  # fmt: skip


@ledger.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write it here.")
@click.pass_context
def export(ctx: click.Context, output: str | None) -> None:
    """Every session and call the ledger holds as JSON Lines (`kcost schema ledger`), for `kcost ledger import`
    on another machine."""
    from kcost.inputs.files import will_write
    from kcost.ledger.manage import export as exported
    from kcost.ledger.store import Ledger

    path = _path(ctx)
    if output:
        from kcost.inputs.files import noted

        noted(path)
        will_write(output)
    with Ledger(path, create=False) as db:
        emit_lines((line + "\n" for line in exported(db)), output)


@ledger.command(name="import")
@click.argument("files", nargs=-1, required=True)
@click.pass_context
def import_(ctx: click.Context, files: tuple[str, ...]) -> None:
    """Merge other machines' exports into the ledger; each call is counted once however often it is imported.
    Reports over this machine's agent homes (no PATHS) then include them (`kcost bill --by machine`)."""
    from kcost.inputs.files import read_bytes
    from kcost.ledger.manage import import_ as imported
    from kcost.ledger.store import Ledger

    def lines() -> Any:
        for name in files:
            text = read_bytes(name, "ledger export").decode("utf-8", errors="strict")
            for number, line in enumerate(text.splitlines(), 1):
                yield name, number, line

    with Ledger(_path(ctx)) as db:
        try:
            sessions, calls = imported(db, lines())
        except UnicodeDecodeError:
            raise click.UsageError("an export is not UTF-8 text") from None
    tell(f"kcost: imported {sessions} session(s), {calls} call(s)")
