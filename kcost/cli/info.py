"""`kcost prices` and `kcost schema`: the price table in use, and the JSON Schemas of what kcost reads and writes."""

from __future__ import annotations

import click

from kcost.cli.options import format_option, output_options, prices_option, settings
from kcost.cli.output import emit

# the names of kcost.results.SCHEMAS, listed here so that the help needs no import of the results package
REPORTS = ("bill", "jsonl", "turns", "quote", "explain", "check", "diff", "trace", "prices")


@click.command()
@format_option(("table", "json", "markdown"))
@prices_option
@output_options
@click.pass_context
def prices(ctx: click.Context, fmt: str, prices_file: str | None, output: str | None, width: int | None,
           color: str) -> None:  # fmt: skip
    """Show the price table in use: rates per million tokens, its source and date."""
    from kcost.cli.output import table_width, use_color
    from kcost.prices import load_prices
    from kcost.render.prices import render_prices

    table = load_prices(prices_file or settings(ctx).prices)
    emit(render_prices(table, fmt, width=table_width(width, output), color=use_color(color, output)), output)


@click.command()
@click.argument("what", type=click.Choice(REPORTS), default="bill")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the schema here.")
def schema(what: str, output: str | None) -> None:
    """Print a JSON Schema (draft 2020-12): of `bill --format json` (default), of one line of `bill --format
    jsonl` (`jsonl`), of turn specs (`turns`), of a `--prices` file (`prices`), or of another command's JSON."""
    import json
    from importlib import import_module
    from typing import Literal

    from pydantic import TypeAdapter

    from kcost.results import SCHEMAS

    target, mode = SCHEMAS[what]
    module, _, name = target.partition(":")
    model = getattr(import_module(module), name)
    kind: Literal["validation", "serialization"] = "validation" if mode == "validation" else "serialization"
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema", **TypeAdapter(model).json_schema(mode=kind)}
    emit(json.dumps(document, indent=2) + "\n", output)
