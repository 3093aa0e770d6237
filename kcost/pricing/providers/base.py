"""What kcost knows of a provider, as named fields: its cache rule, its usage records' field names, its models in
`kcost compare` and its price data file. Each provider module in this package fills one `Provider`; nothing here
imports the rest of kcost."""

from __future__ import annotations

from typing import Literal

from kcost.model.frozen import frozen


@frozen(kw_only=True)
class CacheRule:
    """A provider's prefix-cache rule, as published (or, for K3, as kcost models it)."""

    anywhere: bool  # True: a hit may end anywhere on a cached prefix (an automatic cache); False: only at the
    # checkpoints or breakpoints an earlier request left
    step: int  # the block, tokens: an automatic cache counts hits in its multiples; a checkpointed one keeps
    # checkpoints on them (and at turn boundaries)
    least: int = 0  # the least prompt that is cached, tokens (0: any)
    minimums: tuple[tuple[str, int], ...] = ()  # per-model least prompts: the first (part of the id, tokens) found
    lifetimes: tuple[float | None, ...]  # seconds an unused entry lives (None: forever); the first is the default
    bills_writes: bool  # a write costs its own rate (False: an automatic cache that charges nothing for writing)
    turn_start: bool = True  # a checkpointed rule keeps one where the newest turn starts, as well as at the end
    junctions: bool = False  # a checkpointed rule keeps one where a request's prompt leaves a cached prefix that
    # no checkpoint ends (a common prefix of two requests, found once the second is served)
    output: bool = False  # the end of each reply is kept too (`output=on` by default)
    placement: str | None = None  # where checkpoints are placed, as a report says it (None: where kcost's model
    # of the rule puts them, which its parameters say)
    source: str | None  # where the rule is documented, and what it says (None: kcost's own model)

    def least_for(self, model: str) -> int | None:
        """The least cacheable prompt of `model` where it differs from the rule's (None: the rule's own)."""
        return next((tokens for part, tokens in self.minimums if part in model), None)


@frozen(kw_only=True)
class Variant:
    """A rule a provider's newer models run under, with its own `--cache` name: the models whose id contains one
    of `models` (`compare` bills them under it)."""

    cache: str
    models: tuple[str, ...]
    rule: CacheRule


@frozen(kw_only=True)
class UsageFields:
    """Where a usage record holds each count: an API's wire scheme (`kcost.pricing.providers.wire`), or an agent
    log's."""

    scheme: str  # the name `parse_usage` takes
    layout: Literal["chat", "flat"]  # chat: the chat-completions record (counts, `*_details` objects, the cached
    # count in the first of several places); flat: every count at the top level
    prompt: tuple[str, ...]  # the fields summed into the prompt (cached tokens included)
    cached: tuple[str, ...]  # where the cached count is, the first present wins (dotted: inside an object)
    written: str | None = None  # tokens written to the cache
    written_1h: str | None = None  # of them, those kept an hour (dotted: inside an object); the rest kept 5 minutes
    output: str  # output tokens (reasoning included)
    reasoning: str | None = None  # reasoning tokens (dotted: inside an object)
    optional: frozenset[str] = frozenset()  # counts that may be absent (0)


@frozen(kw_only=True)
class Provider:
    """One provider: one module of this package, one line of the registry (`kcost.pricing.providers.MODULES`)."""

    id: str  # as price files and genai-prices name it
    name: str  # as people name it
    cache: str  # the `--cache` name of its rule
    rule: CacheRule
    usage: UsageFields | None  # its API's usage records (None: kcost reads none of its logs)
    compare: tuple[str, ...]  # its models in `kcost compare`'s default list, in order
    prices: str  # its price data file in kcost/pricing/data/
    short_names: tuple[tuple[str, str], ...] = ()  # (model id, how a note names it) where a name is shorter
    variants: tuple[Variant, ...] = ()  # the rules of some of its models, where they differ from `rule`

    def cache_for(self, model: str) -> tuple[str, CacheRule]:
        """The `--cache` name and rule `model` runs under: a variant's that names it, else the provider's."""
        found = next((v for v in self.variants if any(part in model for part in v.models)), None)
        return (found.cache, found.rule) if found is not None else (self.cache, self.rule)
