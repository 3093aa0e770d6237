"""The command line: one group, a module per command family, shared options, one place where errors end.

Only click is imported at the top, so `kcost --help` and `--version` stay fast; each command imports the parts
it needs. Exit codes: 0 ok, 1 `check` only (a budget is exceeded), 2 bad usage or bad input (one line on
stderr, no traceback, nothing written), 70 an internal error (a bug: one line, no traceback), 130 interrupted
(Ctrl-C).

Each command imports the library in its body, not at the top: `kcost --help` and `--version` load none of
it (tests/test_cli.py, bench/bench_startup.py).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from kcost.errors import InputError, printable
from kcost.version import __version__

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 2, 70, 130
QUOTES = "'\""  # around a parameter hint click quotes


# name -> (module, function, what `kcost --help` says of it): a command's module is imported only when it runs
COMMANDS: dict[str, tuple[str, str, str]] = {
    "bill": ("kcost.cli.bills", "bill", "Bill sessions under one or more cache models."),
    "explain": ("kcost.cli.bills", "explain", "Why each session's misses cost money, with fixes."),
    "compare": ("kcost.cli.bills", "compare", "The same sessions on other models, under their own cache rules."),
    "forecast": ("kcost.cli.bills", "forecast", "The month's spend to date and where it is heading."),
    "plan": ("kcost.cli.bills", "plan", "The month's use at API prices beside subscription plans."),
    "quote": ("kcost.cli.bills", "quote", "A turn's arithmetic: PREFIX + NEW tokens, missed or hit."),
    "check": ("kcost.cli.ci", "check", "Hold sessions to budgets (exit 1 when one is exceeded)."),
    "diff": ("kcost.cli.ci", "diff", "Two bills or two sessions side by side."),
    "trace": ("kcost.cli.fleet", "trace", "A request trace through a fleet: capacity, failures, TTFT."),
    "selfhost": ("kcost.cli.selfhost", "selfhost", "Self-host the open weights, or the API: floor, break-even."),
    "prices": ("kcost.cli.info", "prices", "Every model's rates, with dates and sources."),
    "formats": ("kcost.cli.info", "formats_", "Every input format and agent kcost reads, and where."),
    "schema": ("kcost.cli.info", "schema", "The JSON Schemas of what kcost reads and writes."),
    "statusline": ("kcost.cli.live", "statusline", "One status-line hook line: cost, hit rate, the cache clock."),
    "watch": ("kcost.cli.live", "watch", "Follow a running session live: turns, total, the cache clock."),
    "ledger": ("kcost.cli.ledger", "ledger", "What the ledger holds; forget, vacuum, export and import it."),
}


class _Interrupted(Exception):
    """Ctrl-C while a command ran."""


class _Kcost(click.Group):
    """Commands loaded when used; every error the user can cause ends as one line on stderr and exit status 2;
    Ctrl-C as 130."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        from importlib import import_module

        module, name, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(import_module(module), name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        """A command name, or an error that says which command was meant (as git does)."""
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-"):
            import difflib

            near = difflib.get_close_matches(name, list(COMMANDS), n=2, cutoff=0.5)
            meant = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
            raise click.UsageError(f"no such command {name!r}{meant}; `kcost --help` lists them", ctx)
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["kcost.argv"] = list(args)  # the command line as given: what a kept report is asked by
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from kcost.inputs.files import forget_reads

        forget_reads()  # a new run: what it reads is noted from here on, and no output may replace it
        try:
            done = super().invoke(ctx)
        except KeyboardInterrupt:  # ours to report, in one line (click's own handling adds a blank one)
            raise _Interrupted from None
        except click.exceptions.Exit as exc:
            _ended(ctx, exc.exit_code)
            raise
        except BaseException:
            _ended(ctx, None)
            raise
        _ended(ctx, done if isinstance(done, int) else EXIT_OK)
        return done

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, what) for name, (_, _, what) in COMMANDS.items()])

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # a log's value may nest as deep as the JSON parser allows (orjson: 1,024 levels); what shows or writes it
        # back (`str`, `json`) takes a frame or two a level: room for that while the command runs, as the JSON
        # writer takes it (and the limit as it was after, for a caller that runs kcost in its own process)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * 1024 + 1000))
        try:
            return self._main(*args, **kwargs)
        finally:
            sys.setrecursionlimit(limit)

    def _main(self, *args: Any, **kwargs: Any) -> Any:
        argv = args[0] if args else kwargs.get("args")
        if argv is None:
            argv = sys.argv[1:]
        if not argv:  # bare `kcost`: this machine's overview where an agent keeps logs here, else the help
            args, kwargs = (_bare(), *args[1:]), {k: v for k, v in kwargs.items() if k != "args"}
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except InputError as exc:
            from kcost.cli.options import FLAGS

            if exc.source is None and exc.field in FLAGS:  # a core error about a value given as an option
                exc.field = FLAGS[exc.field]
            click.echo(printable(f"kcost: error: {exc}"), err=True)
            sys.exit(EXIT_BAD_INPUT)
        except click.BadParameter as exc:
            where = exc.param_hint or (exc.param.opts[0] if exc.param is not None and exc.param.opts else None)
            if isinstance(where, (list, tuple)):
                where = where[0]
            label = str(where).strip(QUOTES) + ": " if where else ""
            message = exc.message or ("missing" if isinstance(exc, click.MissingParameter) else exc.format_message())
            click.echo(printable(f"kcost: error: {label}{' '.join(message.split())}"), err=True)
            sys.exit(EXIT_BAD_INPUT)
        except click.ClickException as exc:
            click.echo(printable(f"kcost: error: {' '.join(exc.format_message().split())}"), err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort as exc:
            click.echo("kcost: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED if not isinstance(exc.__cause__, EOFError) else EXIT_BAD_INPUT)
        except (KeyboardInterrupt, _Interrupted):
            click.echo("kcost: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except OSError as exc:  # a path the system refuses (too long, not permitted): the input is at fault
            where = str(exc.filename)[:120] + ("..." if len(str(exc.filename)) > 120 else "") if exc.filename else None
            error = InputError(f"cannot use it: {exc.strerror or exc}", source=where)
            click.echo(printable(f"kcost: error: {error}"), err=True)
            sys.exit(EXIT_BAD_INPUT)
        except MemoryError:  # an input larger than the memory it may use, met past where a read names it
            click.echo("kcost: error: out of memory: the input is larger than this process may hold", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except Exception as exc:  # a bug: one line, not a traceback, and never the exit status of a verdict
            if os.environ.get("KCOST_DEBUG"):
                raise
            what = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            click.echo(
                printable(f"kcost: internal error: {what} (a bug in kcost: KCOST_DEBUG=1 shows where)"), err=True
            )
            sys.exit(EXIT_INTERNAL)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def _ended(ctx: click.Context, code: int | None) -> None:
    """A command's end (`code` None: an error): its report kept where it asked for that (`kcost.ledger.reports`)."""
    if "kcost.report" in ctx.meta:
        from kcost.cli.options import keep_report

        keep_report(ctx, -1 if code is None else code)


def _bare() -> list[str]:
    """What bare `kcost` runs: `kcost bill` (every agent log on this machine, as an overview) where some agent's log
    folder exists here; else the help, with a line saying why no bill was made."""
    from kcost.readers.homes import places, shown

    try:
        found, looked = places()
    except OSError:  # a home the system refuses to look at (a name too long, no permission): `bill` says which
        return ["bill"]
    if found:
        return ["bill"]
    where = ", ".join(dict.fromkeys(shown(p) for p in looked[:3]))
    click.echo(f"kcost: no agent logs on this machine (looked in {where}, ...): `kcost bill FILE` bills a session, "
               "`kcost formats` lists where each agent keeps its logs", err=True)  # fmt: skip
    return ["--help"]


def _engine() -> str:
    """Which engine this install's trace replay has, compiled or Python (the compiled module is looked for in its
    package's folders: neither it nor its package is loaded)."""
    import os
    from importlib.machinery import PathFinder

    import kcost

    def which(module: str) -> str:
        folders = [os.path.join(p, *module.split(".")[1:-1]) for p in kcost.__path__]
        return "compiled" if PathFinder.find_spec(module, folders) else "python"

    return f"trace replay: {which('kcost.fleet._core')}"


@click.group(cls=_Kcost, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kcost", message=f"%(prog)s, version %(version)s ({_engine()})")
def cli() -> None:
    """What a Kimi K3 session will cost, what it cost, and why.

    kcost runs sessions through a simulator of K3's hybrid prefix cache and the K3 price table, and prints
    per-turn and per-session bills.
    """


def main() -> None:
    cli(prog_name="kcost")
