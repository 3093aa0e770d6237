"""`kcost prices`, `kcost formats` and `kcost schema`: every model's rates, every input format kcost reads, and the
JSON Schemas of what kcost reads and writes."""

from __future__ import annotations

from typing import Any

import click

from kcost.cli.options import format_option, output_options, prices_option, run_settings
from kcost.cli.output import emit, view
from kcost.render.registry import formats

# the names of kcost.results.SCHEMAS, listed here so that the help needs no import of the results package
REPORTS = (
    "bill",
    "jsonl",
    "turns",
    "quote",
    "explain",
    "check",
    "diff",
    "trace",
    "compare",
    "overview",
    "forecast",
    "plan",
    "prices",
    "selfhost",
    "formats",
    "ledger",
)


@click.command()
@click.argument("model_id", metavar="[MODEL]", required=False)
@format_option(formats("prices"))
@prices_option
@click.option("--at", "when", type=click.DateTime(formats=["%Y-%m-%d"]),
              help="The rates in force on this day (default: the day the snapshot was taken).")  # fmt: skip
@click.option("--model", help="One model's every period of rates, with their dates and sources.")
@click.option("--all", "every", is_flag=True, help="Every model, older ones too (default: each provider's newest).")
@click.option("--update", is_flag=True, help="Refresh the shipped snapshot from an installed genai-prices "
              "(kcost[prices]); kcost itself makes no network call.")  # fmt: skip
@output_options
@click.pass_context
def prices(ctx: click.Context, model_id: str | None, fmt: str, prices_file: str | None, when: Any, model: str | None,
           every: bool, update: bool, output: str | None, width: int | None, color: str) -> None:  # fmt: skip
    """Show each provider's current models and rates per million tokens, with their dates and sources (--all:
    every model, as for a --prices file); with MODEL (or --model), that model's every period of rates."""
    if model_id is not None and model is not None and model_id != model:
        raise click.BadParameter(f"two models given: {model_id!r} and --model {model!r}", param_hint="MODEL")
    hint = "--model" if model is not None else "MODEL"
    model = model if model is not None else model_id
    from kcost import api
    from kcost.errors import InputError
    from kcost.render.registry import render
    from kcost.results.prices import PriceListing

    if update:
        changes = api.update_prices()
        emit("".join(f"{line}\n" for line in changes) or "the snapshot is up to date\n", output)
        return
    table = api.price_table(run_settings(ctx, prices=prices_file).prices)
    if model is not None:
        try:
            table.entry(model)
        except InputError as exc:  # named as the user gave it: the argument or the option
            raise click.BadParameter(f"{exc.message} ({exc.hint})" if exc.hint else exc.message,
                                     param_hint=hint) from None  # fmt: skip
    # a table of the user's own (--prices FILE) is shown whole: only the shipped snapshot holds models of the past
    listing = PriceListing(table=table, when=when and when.date(), model=model, every=every or prices_file is not None)
    emit(render("prices", listing, fmt, view(output, width, color)), output)


@click.command("formats")
@format_option(formats("formats"))
@output_options
def formats_(fmt: str, output: str | None, width: int | None, color: str) -> None:
    """Show every input format kcost reads, in the order detection tries them, and where each agent keeps its logs
    (what `kcost bill` with no path reads); as markdown or JSON, also what one call is in each log and how its
    usage is read, with the agent's source it was read from."""
    from kcost import api
    from kcost.render.registry import render

    emit(render("formats", api.formats(), fmt, view(output, width, color)), output)


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
