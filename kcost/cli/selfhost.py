"""`kcost selfhost`: the sessions' (or a trace's) API bill beside a self-hosted fleet of the model's open weights."""

from __future__ import annotations

from typing import Any

import click

from kcost.cli.options import (
    format_option,
    input_options,
    json_numbers_option,
    output_options,
    prices_option,
    run_settings,
)
from kcost.cli.output import emit, view
from kcost.errors import InputError, printable
from kcost.render.registry import formats

# a figure given by a flag of its own: the flag, and the figure's key
NAMED = {"--utilization": "utilization", "--hourly": "hourly", "--accelerators": "accelerators",
         "--concurrent": "concurrent", "--context-tokens": "context_tokens"}  # fmt: skip
CHOICES = {"selfhost-model": "--model", "accelerator": "--accelerator", "deployment": "--deployment",
           "pricing": "--pricing"}  # fmt: skip


@click.command()
@click.argument("paths", nargs=-1, metavar="[SESSIONS | TRACE]")
@click.option("--model", "arch", metavar="ID", help="The open-weights model to host (default: kimi-k3).")
@click.option("--accelerator", metavar="ID", help="h100, h200, b200 (default) or gb200-nvl72.")
@click.option("--deployment", metavar="ID", help="The published deployment throughput is scaled from "
              "(default: sglang-deepseek-v3-96xh100; or deepseek-v3-r1-h800).")  # fmt: skip
@click.option("--pricing", type=click.Choice(["reserved", "on-demand"]), default="reserved", show_default=True,
              help="Which hourly range the fleet is costed at (its middle, unless --hourly).")  # fmt: skip
@click.option("--utilization", metavar="SHARE", help="The share of the month the fleet is busy (default 0.6).")
@click.option("--hourly", metavar="USD", help="USD an accelerator-hour, in place of the range's middle.")
@click.option("--accelerators", metavar="N", help="Accelerators in the fleet's floor (default: the supernode).")
@click.option("--concurrent", metavar="N", help="Contexts in flight (default: from the workload's calls).")
@click.option("--context-tokens", metavar="N", help="Tokens of one context in flight (default: from the calls).")
@click.option("--set", "sets", metavar="KEY=VALUE", multiple=True,
              help="Override any figure by its key (repeat; the JSON lists every key with its source).")  # fmt: skip
@click.option("--detail", is_flag=True, help="The facts behind the answer, every figure and its source (table, "
              "markdown).")  # fmt: skip
@format_option(formats("selfhost"))
@prices_option
@input_options
@output_options
@json_numbers_option
@click.pass_context
def selfhost(
    ctx: click.Context, paths: tuple[str, ...], arch: str | None, accelerator: str | None, deployment: str | None,
    pricing: str, utilization: str | None, hourly: str | None, accelerators: str | None, concurrent: str | None,
    context_tokens: str | None, sets: tuple[str, ...], detail: bool, fmt: str, prices_file: str | None,
    input_format: str, usage: str, tokenizer: str | None, lenient: bool, output: str | None, width: int | None,
    color: str, json_numbers: bool,
) -> None:  # fmt: skip
    """Above what monthly volume a fleet of the model's open weights costs less than the API: the answer in a few
    lines (the API's cost normalised to a month at the logged pace), and with --detail the memory floor, the
    accelerators that hold it, the fleet's cost at a utilisation, and every figure's source and date. SESSIONS
    are billed as `kcost bill` bills them; a TRACE as `kcost trace` does."""
    from kcost import api
    from kcost.analysis.selfhost import catalogue, defaults, parse_value
    from kcost.render.registry import render

    settings = run_settings(ctx, prices=prices_file, usage=usage, input_format=input_format, tokenizer=tokenizer,
                            lenient=lenient)  # fmt: skip
    config = ctx.find_root().obj
    overrides: dict[str, Any] = {}
    where: dict[str, str] = {}
    for key, value in (getattr(config, "selfhost", None) or {}).items():
        overrides[key] = parse_value(key, value, source=config.path)
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq:
            raise click.BadParameter(f"expected KEY=VALUE (got {item!r})", param_hint="--set")
        overrides[key.strip()] = _parse(key.strip(), value, f"--set {key.strip()}")
        where[key.strip()] = f"--set {key.strip()}"
    for flag, value in (("--utilization", utilization), ("--hourly", hourly), ("--accelerators", accelerators),
                        ("--concurrent", concurrent), ("--context-tokens", context_tokens)):  # fmt: skip
        if value is not None:
            overrides[NAMED[flag]] = _parse(NAMED[flag], value, flag)
            where[NAMED[flag]] = flag
    try:
        chosen = catalogue()["defaults"]  # the model, accelerator and deployment named: known before a log is read
        defaults(arch or chosen["model"], accelerator or chosen["accelerator"], deployment or chosen["deployment"])
        report = api.selfhost(
            list(paths),
            settings,
            model=arch,
            accelerator=accelerator,
            deployment=deployment,
            pricing=pricing,
            overrides=overrides,
            tell=lambda line: click.echo(printable(line), err=True),  # a file passed over, named escaped
        )
    except InputError as exc:
        if exc.source is None and exc.field in CHOICES:
            exc.field = CHOICES[exc.field]
        elif exc.source is None and exc.field in where:
            exc.field = where[exc.field]
        raise
    emit(render("selfhost", report, fmt, view(output, width, color, numbers=json_numbers, detail=detail)), output)


def _parse(key: str, value: str, flag: str) -> Any:
    from kcost.analysis.selfhost import parse_value

    try:
        return parse_value(key, value)
    except InputError as exc:
        raise click.BadParameter(exc.message + (f" ({exc.hint})" if exc.hint else ""), param_hint=flag) from None
