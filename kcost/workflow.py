"""The steps behind `kcost check` and `kcost diff`, from options to reports: find the config, merge the flags
into it, read and bill the sessions, load the baseline, check, diff, and gather the top miss causes. No click,
no printing: the CLI renders what this returns."""

from __future__ import annotations

from typing import Any

from kcost.billing import report
from kcost.budgets import merge
from kcost.cache import CacheModel, parse_cache_model
from kcost.checks import check, diff
from kcost.config import Settings
from kcost.errors import InputError
from kcost.explain import explain, rank_together
from kcost.prices import load_prices
from kcost.readers import read_all
from kcost.readers.bill import is_bill, load_bill
from kcost.results import BillReport
from kcost.results.check import CheckOutcome
from kcost.results.explain import Ranked
from kcost.transcripts.tokenizer import load_counter


def run_check(paths: list[str], opts: dict[str, Any], config: Settings) -> CheckOutcome:
    """`opts`: the command's options by name (`cache` a `CacheModel`, budgets as given); `config`: the settings."""
    budgets = merge(config.budgets, _budget_flags(opts))
    if not budgets.any():
        raise InputError("no budgets to check", field="budgets",
                         hint="give a maximum or minimum, or a [budgets] table in kcost.toml")  # fmt: skip
    cache = opts.get("cache") or parse_cache_model(config.cache or "k3")
    prices = load_prices(opts.get("prices_file") or config.prices)
    usage = str(opts.get("usage") if opts.get("usage") not in (None, "auto") else config.usage or "auto")
    found = read_all(paths, opts.get("input_format") or "auto", counter=load_counter(opts.get("tokenizer")),
                     prompts=usage != "reported", lenient=bool(opts.get("lenient")))  # fmt: skip
    if found.skipped:  # a check never passes over input it could not read
        raise InputError(f"cannot check {len(found.skipped)} file(s): {found.skipped[0]}")
    current = report(found.sessions, [cache], prices, usage, **_pricing(opts))
    unbilled = [s for s in current.runs[0].sessions if s.unbilled_calls]
    if unbilled:
        raise InputError(f"{unbilled[0].unbilled_calls} call(s) have no reported usage", source=unbilled[0].source,
                         field="usage", hint="check the simulated usage instead")  # fmt: skip
    baseline_path = opts.get("baseline") or config.baseline
    baseline = load_bill(baseline_path) if baseline_path else None
    if baseline is not None and baseline.runs[0].cache.label != cache.label:
        raise InputError(f"billed under {baseline.runs[0].cache.label}, this run under {cache.label}",
                         source=baseline_path, field="cache",
                         hint=f"bill the baseline under {cache.label}")  # fmt: skip
    if (budgets.max_increase_usd is not None or budgets.max_increase_pct is not None) and baseline is None:
        raise InputError("an increase budget needs a baseline", field="max_increase", hint="give a baseline bill")
    result = check(current, budgets, baseline, baseline_path)
    changes = diff(baseline, current, before=baseline_path, after="this run") if baseline and baseline_path else None
    causes = _causes(found.sessions, current, cache.label)
    return CheckOutcome(result, changes, causes)


def bill_of(path: str, cache: CacheModel, opts: dict[str, Any]) -> BillReport:
    """A bill JSON as it is, or sessions billed under `cache`."""
    if is_bill(path):
        return load_bill(path)
    usage = opts.get("usage") or "auto"
    found = read_all([path], opts.get("input_format") or "auto", counter=load_counter(opts.get("tokenizer")),
                     prompts=usage != "reported", lenient=bool(opts.get("lenient")))  # fmt: skip
    return report(found.sessions, [cache], load_prices(opts.get("prices_file")), usage, **_pricing(opts))


def _pricing(opts: dict[str, Any]) -> dict[str, Any]:
    """`--model` and `--prices-at` as `report` takes them."""
    at = opts.get("prices_at")
    return {"model": opts.get("price_model"), "at": at.date() if at is not None else None}


def _budget_flags(opts: dict[str, Any]) -> dict[str, Any]:
    flags = {
        "max_session_usd": opts.get("max_session_usd"),
        "max_turn_usd": opts.get("max_turn_usd"),
        "max_total_usd": opts.get("max_total_usd"),
        "min_hit_rate": opts.get("min_hit_rate"),
        "max_blended_usd_per_mtok": opts.get("max_blended"),
    }
    increase = opts.get("max_increase")
    if increase is not None:
        key = "max_increase_pct" if increase.strip().endswith("%") else "max_increase_usd"
        flags[key] = increase
    return flags


def _causes(sessions: list[Any], current: BillReport, label: str) -> list[Ranked]:
    """The miss causes of all sessions together, by cost."""
    bills = current.runs[0].sessions
    return rank_together(explain(b, s, label).ranked for s, b in zip(sessions, bills, strict=True))
