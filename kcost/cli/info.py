"""`kcost prices` and `kcost schema`: the price table in use, and the JSON Schemas of what kcost reads and writes."""

from __future__ import annotations

import click

from kcost.cli.options import format_option, output_options, prices_option, settings
from kcost.cli.output import emit

SCHEMAS = ("bill", "jsonl", "turns", "quote", "explain", "check", "diff", "trace", "prices")


@click.command()
@format_option(("table", "json", "markdown"))
@prices_option
@output_options
@click.pass_context
def prices(ctx: click.Context, fmt: str, prices_file: str | None, output: str | None, width: int | None,
           color: str) -> None:  # fmt: skip
    """Show the price table in use: rates per million tokens, its source and date."""
    from kcost.prices import load_prices
    from kcost.render.prices import render_prices

    emit(render_prices(load_prices(prices_file or settings(ctx).prices), fmt), output)


@click.command()
@click.argument("what", type=click.Choice(SCHEMAS), default="bill")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the schema here.")
def schema(what: str, output: str | None) -> None:
    """Print a JSON Schema (draft 2020-12): of `bill --format json` (default), of one line of `bill --format
    jsonl` (`jsonl`), of turn specs (`turns`), of a `--prices` file (`prices`), or of another command's JSON."""
    import json
    from typing import Any, Literal

    from pydantic import TypeAdapter

    from kcost.checks import CheckReport, DiffReport
    from kcost.explain import Explanation
    from kcost.models import SessionSpec
    from kcost.prices import PriceTable
    from kcost.quotes import Quote
    from kcost.results import BillReport, Record
    from kcost.traces import TraceReport

    schemas: dict[str, tuple[Any, Literal["validation", "serialization"]]] = {
        "bill": (BillReport, "serialization"),
        "jsonl": (Record, "serialization"),
        "turns": (SessionSpec, "validation"),
        "quote": (Quote, "serialization"),
        "explain": (list[Explanation], "serialization"),
        "check": (CheckReport, "serialization"),
        "diff": (DiffReport, "serialization"),
        "trace": (TraceReport, "serialization"),
        "prices": (PriceTable, "validation"),
    }
    model, mode = schemas[what]
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema", **TypeAdapter(model).json_schema(mode=mode)}
    emit(json.dumps(document, indent=2) + "\n", output)
