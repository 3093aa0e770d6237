"""The providers kcost prices and simulates: one module each in this package, listed once in `MODULES`.

A provider module holds one `Provider` (`kcost.pricing.providers.base`) named `PROVIDER`: its cache rule, its usage
records' field names, its models in `kcost compare` and its price data file in kcost/pricing/data/. Everything
else asks this registry, so a new provider is one module, one line here and one price file.

Importing this package loads no provider module: each is imported when the registry is first asked.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from kcost.pricing.providers.base import CacheRule, Provider, UsageFields

# In this order: `kcost prices` lists them, `kcost compare` runs their default models, `--cache` hints their rules.
MODULES = (
    "kcost.pricing.providers.moonshot",
    "kcost.pricing.providers.anthropic",
    "kcost.pricing.providers.openai",
    "kcost.pricing.providers.deepseek",
    "kcost.pricing.providers.google",
)


@lru_cache(maxsize=1)
def providers() -> tuple[Provider, ...]:
    """Every provider, in the order of `MODULES`."""
    return tuple(_each())


def _each() -> Iterator[Provider]:
    """The providers in the order of `MODULES`, each module imported as the walk reaches it (a lookup that the
    first answers, as K3's rule is Moonshot's, loads no other)."""
    import importlib

    for name in MODULES:
        yield importlib.import_module(name).PROVIDER


def by_id(provider: str) -> Provider | None:
    """The provider of that id (as price files name it); None for one kcost has no module of."""
    return next((p for p in _each() if p.id == provider), None)


def rule_named(cache: str) -> CacheRule | None:
    """The rule that `--cache NAME` names (a provider's, or one of its variants'); None for a name no rule has."""
    for p in _each():
        if p.cache == cache:
            return p.rule
        for v in p.variants:
            if v.cache == cache:
                return v.rule
    return None


def rule_names() -> list[str]:
    """Every provider rule's `--cache` name, each provider's own then its variants', in the registry's order."""
    return [name for p in providers() for name in (p.cache, *(v.cache for v in p.variants))]


def usage_schemes() -> dict[str, UsageFields]:
    """The providers' usage wire schemes by name."""
    return {p.usage.scheme: p.usage for p in providers() if p.usage is not None}


def compare_defaults() -> tuple[str, ...]:
    """`kcost compare`'s default models: each provider's, in order."""
    return tuple(model for p in providers() for model in p.compare)


def short_name(model: str) -> str:
    """How a note names a model: its provider's short name for it (`K3`), else its id."""
    return next((short for p in providers() for m, short in p.short_names if m == model), model)
