"""The `kcost` command's entry point: the command line (`kcost.cli`), except for a status-line hook's bare call.

A status-line hook runs `kcost statusline` (or `kcost statusline PATH`) on every prompt, so that call is answered
without loading the command line's parser: with no option given, its settings are the config's or the defaults,
as the command's own would be, and it prints the line `kcost.live.statusline.hook_line` makes, by the resident
helper where one runs (`kcost.live.helper`), else itself (then starting one). Any other call, an option among
them, goes to the command line.

It imports the command line, or the status line's modules, in its body: neither loads what the other uses.
"""

from __future__ import annotations

import gc
import os
import sys

# The cyclic collector's thresholds for a kcost process: a run builds its sessions and bills (hundreds of thousands
# of objects, few of them in cycles) and exits, and at the default thresholds the collector walks all it holds
# again and again as they grow (4-6% of a large read of Claude Code logs). As mypy's command line sets them.
GC_THRESHOLDS = (200_000, 30, 30)


def main() -> None:
    gc.set_threshold(*GC_THRESHOLDS)
    args = sys.argv[1:]
    if args[:1] == ["statusline"] and len(args) <= 2 and not any(a.startswith("-") for a in args[1:]):
        code = _statusline(args[1] if len(args) == 2 else None)
        # the line is out (stdout flushed) and every file closed: the process ends without freeing the state it
        # loaded object by object (a tenth of a call's time on a long session), as nothing is left to run at exit
        import contextlib

        with contextlib.suppress(OSError):
            sys.stderr.flush()
        os._exit(code)
    if args[:1] and not args[0].startswith("-"):  # a command: answered by the report kept for it, where one is
        from kcost.ledger import KEPT_REPORTS
        from kcost.ledger.reports import answered

        kept = answered(args, launched=True) if args[0] in KEPT_REPORTS else None
        if kept is not None:
            os._exit(kept)  # printed and flushed; nothing else is open
    from kcost.cli import main as command_line

    try:
        command_line()
    finally:
        # what the run built is left to the process's end: the collector's last pass at exit would walk every
        # object it still holds (a fifth of a small bill's time) only to find the few cycles among them
        gc.freeze()


def _statusline(path: str | None) -> int:
    try:
        from kcost.live import helper

        given = helper.Given.take(path, sys.stdin)
        answered = helper.ask(path, given, sys.stdout)  # by the resident helper, where one is running
        if answered is None:
            from kcost.live.statusline import default_settings, hook_line

            answered = hook_line(path, default_settings, "auto", given, sys.stdout)
            helper.start(GC_THRESHOLDS)  # for the calls after this one
        shown = answered + "\n"
    except KeyboardInterrupt:  # as the command line says it
        sys.stderr.write("kcost: interrupted\n")
        return 130
    try:
        try:
            sys.stdout.write(shown)
        except UnicodeEncodeError:  # a terminal whose encoding has no `·`: the line as UTF-8, as hooks read it
            sys.stdout.flush()
            sys.stdout.buffer.write(shown.encode("utf-8"))
        sys.stdout.flush()
    except OSError:  # the hook stopped reading (a broken pipe): nothing to tell it
        pass
    return 0
