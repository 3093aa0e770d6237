"""Budgets: the limits `kcost check` holds sessions to, from flags or from a config file in the repository.

The config is `kcost.toml` (keys at the top level) or the `[tool.kcost]` table of `pyproject.toml`, found by
walking up from the working directory; flags win over it. It is validated strictly: an unknown key is an error
that names it. Money limits are exact decimals (`"2.50"` or `2.5`); a TOML float is read through its shortest
repr, so `2.5` means exactly 2.5.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from kcost.errors import InputError, pydantic_error
from kcost.model import bounds


def _decimal(value: Any, percent: str = "no") -> Any:
    """Floats through their shortest repr (TOML `2.5` is 2.5, not 2.4999...). `percent`: "no" (a `%` is an
    error), "keep" (`10%` is 10, for percent budgets), "fraction" (`85%` is 0.85, for rates)."""
    if isinstance(value, bool):
        raise ValueError("expected a number")
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, str):
        text = value.strip()
        share = text.endswith("%")
        if share and percent == "no":
            raise ValueError(f"an amount, not a percentage: {value!r}")
        try:
            number = Decimal(text.removesuffix("%").strip())
        except InvalidOperation:
            raise ValueError(f"not a number: {value!r}") from None
        value = number / 100 if share and percent == "fraction" else number
    if isinstance(value, int):
        value = Decimal(value)
    if isinstance(value, Decimal):
        try:
            bounds.money(value)
        except InputError as exc:
            raise ValueError(exc.message) from None
    return value


Amount = Annotated[Decimal, BeforeValidator(_decimal), Field(ge=0, allow_inf_nan=False)]
Percent = Annotated[Decimal, BeforeValidator(partial(_decimal, percent="keep")), Field(ge=0, allow_inf_nan=False)]
Rate = Annotated[
    Decimal, BeforeValidator(partial(_decimal, percent="fraction")), Field(ge=0, le=1, allow_inf_nan=False)
]


class Budgets(BaseModel):
    """Every limit is optional; a check with none set checks nothing and says so."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, alias_generator=lambda s: s.replace("_", "-")
    )

    max_session_usd: Amount | None = Field(None, description="Each session's total cost, USD.")
    max_turn_usd: Amount | None = Field(None, description="Each turn's cost, USD.")
    max_total_usd: Amount | None = Field(None, description="All sessions together, USD.")
    min_hit_rate: Rate | None = Field(None, description="Each session's cache hit rate, 0 to 1.")
    max_blended_usd_per_mtok: Amount | None = Field(None, description="Each session's input USD per 1M tokens.")
    max_increase_usd: Amount | None = Field(
        None, description="Each session's and the total's increase over the baseline, USD."
    )
    max_increase_pct: Percent | None = Field(None, description="The same, in percent of the baseline.")

    def any(self) -> bool:
        return any(v is not None for v in self.model_dump().values())


def _limit(value: Any) -> Any:
    """A window's limit as `--limit` takes it (a number: dollars)."""
    from kcost.model.limits import parse_limit

    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("expected dollars (12.50), tokens (\"2M tokens\") or \"max\"")
    try:
        return parse_limit(repr(value) if isinstance(value, float) else str(value))
    except InputError as exc:
        raise ValueError(f"{exc.message}: {exc.hint}") from None


def _warn(value: Any) -> Any:
    """Warning fractions as `--warn` takes them, or a list of them."""
    from kcost.model.limits import parse_warn

    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(v, bool) or not isinstance(v, (str, int, float)) for v in items):
        raise ValueError("expected fractions or percentages: [\"80%\", \"100%\"] or [0.8, 1]")
    try:
        return parse_warn(",".join(repr(v) if isinstance(v, float) else str(v) for v in items))
    except InputError as exc:
        raise ValueError(f"{exc.message}: {exc.hint}") from None


class WindowConfig(BaseModel):
    """`[window]`: the usage windows of `kcost bill --by window`, the status line and `kcost watch`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hours: int | None = Field(None, ge=1, le=24 * 31, description="A window's length in hours (default 5).")
    limit: Annotated[Any, BeforeValidator(_limit)] = Field(
        None, description="A window's limit: dollars, \"2M tokens\", or \"max\" (the dearest past window's)."
    )
    warn: Annotated[Any, BeforeValidator(_warn)] = Field(
        None, description="The shares of the limit warned of, once each a window (default [\"80%\", \"100%\"])."
    )


class Config(BaseModel):
    """`kcost.toml`, or `[tool.kcost]` in pyproject.toml, as validated (`kcost.api.settings.ConfigFile` holds it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cache: str | None = Field(None, description="The cache model, as --cache takes it.")
    prices: str | None = Field(None, description="A price table file, relative to the config file.")
    usage: str | None = Field(None, description="auto, simulated or reported.")
    baseline: str | None = Field(None, description="A bill JSON to compare with, relative to the config file.")
    budgets: Budgets = Field(default_factory=Budgets)
    ledger: str | bool | None = Field(None, description="The ledger's file, relative to the config file; false: "
                                      "none (as --no-ledger).")
    window: WindowConfig = Field(default_factory=WindowConfig)
    plan: str | dict[str, str | float | int | list[int] | list[str]] | None = Field(
        None, description="Your subscription plan: an id `kcost plan` lists, or a table of name, usd_month, "
        "windows_hours and agents."
    )
    selfhost: dict[str, float | int | str] = Field(
        default_factory=dict, description="`kcost selfhost` figures by key, as --set KEY=VALUE takes them."
    )


def validate_config(data: Any, source: str, prefix: tuple[object, ...] = (), *, modes: tuple[str, ...]) -> Config:
    """A config file's table, validated strictly; `prefix` is where the table sits in its file; `modes`: the
    usage modes a config may name."""
    if not isinstance(data, dict):
        raise InputError("expected a table", source=source, field=".".join(map(str, prefix)) or None)
    usage = data.get("usage")
    if usage is not None and usage not in modes:
        raise InputError(f"must be one of {', '.join(modes)} (got {usage!r})", source=source, field="usage")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source, prefix=prefix) from None


def merge(config: Budgets | None, flags: dict[str, Any]) -> Budgets:
    """The config's budgets with every flag that was given in place of its key."""
    given = {k: v for k, v in flags.items() if v is not None}
    held = config.model_dump(exclude_none=True) if config is not None else {}
    try:
        return Budgets.model_validate({**held, **given})
    except ValidationError as exc:
        err = pydantic_error(exc, "")
        err.source = None
        err.field = str(err.field).replace("_", "-")  # the key, as a config file writes it
        raise err from None
