"""Prices: load, validate, and refresh the shipped snapshot.

The snapshot is data: one file per provider in `kcost/pricing/data/` (genai-prices' layout, as JSON: models, the
ids they are logged under, rates through time with dates and sources), each named by its provider's module
(`kcost.pricing.providers`, whose order the snapshot keeps), and `index.json` naming the snapshot and its default model.
It is read without pydantic; a test holds it to the same validation a `--prices` file gets.
`--prices FILE` replaces it with a file of the same shape (`kcost schema prices`), or of the older one-table shape
(`name`, `effective`, `source`, `default_model`, `models` with three rates each), which still loads.

`kcost prices --update` refreshes the snapshot from an installed genai-prices (`pip install 'kcost[prices]'`):
no network call of kcost's own. A rate that changed gets a new period; the old one stays (history is kept).
"""

from __future__ import annotations

import json
import re
from datetime import date
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcost.errors import InputError, printable, pydantic_error
from kcost.inputs.documents import load_json
from kcost.inputs.files import read_text
from kcost.inputs.files import stamp as stamp_of
from kcost.model import bounds
from kcost.model.frozen import frozen
from kcost.pricing import providers
from kcost.results.prices import RATES, ModelPrices, Period, PriceTable, ProviderPrices, Tier, Window, backtracks

if TYPE_CHECKING:
    from kcost.inputs.documents import Lines

DATA = Path(__file__).parent / "data"


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The shipped snapshot, or the table in `path`; a bad file raises `InputError` naming the field."""
    if path is None:
        return _shipped()

    source = str(path)
    return parse_prices(read_text(path, "price file"), source)


def stamp(path: str | Path | PriceTable | None = None) -> tuple[tuple[Any, ...], ...] | None:
    """What tells the table `load_prices(path)` gives apart, cheaply: the identity, size and times of each file
    it is read from (the shipped snapshot's folder, else the file, with a checksum of its bytes: a price file is
    small, and an edit in place within one tick of the clock keeps its times; None where one cannot be looked at,
    or for a table given as it is). A table kept beside its stamp is the one loading it again would give while the stamp
    is the same."""
    if isinstance(path, PriceTable):
        return None
    try:
        files = sorted(DATA.glob("*.json")) if path is None else [Path(path)]
        return tuple((str(f), *stamp_of(f, content=path is not None)) for f in files)
    except OSError:
        return None


def shipped_document() -> dict[str, Any]:
    """The shipped snapshot as one document of the `--prices` shape."""
    import orjson  # twice as fast as json on these files, and a bill has it loaded to write its JSON

    index = orjson.loads((DATA / "index.json").read_bytes())
    files = [orjson.loads((DATA / p.prices).read_bytes()) for p in providers.providers()]
    return {"name": index["name"], "default_model": index["default_model"], "providers": files}


@lru_cache(maxsize=1)
def _shipped() -> PriceTable:
    """The snapshot that ships with kcost, built without pydantic (a test holds it to `parse_prices`)."""
    return table_from(shipped_document())


def table_from(data: dict[str, Any]) -> PriceTable:
    """A table from a document already known to be valid."""

    def money(value: Any) -> Decimal | None:
        return None if value is None else Decimal(value)

    def period(p: dict[str, Any]) -> Period:
        return Period(
            starts=date.fromisoformat(p["starts"]) if p.get("starts") else None,
            as_of=date.fromisoformat(p["as_of"]),
            source=p["source"],
            input_cache_miss=Decimal(p["input_cache_miss"]),
            input_cache_hit=money(p.get("input_cache_hit")),
            cache_write_5m=money(p.get("cache_write_5m")),
            cache_write_1h=money(p.get("cache_write_1h")),
            output=Decimal(p["output"]),
            tiers={
                k: [Tier(from_tokens=t["from_tokens"], rate=Decimal(t["rate"])) for t in v]
                for k, v in p.get("tiers", {}).items()
            },  # fmt: skip
            write_discount=bool(p.get("write_discount", False)),
            hours=[_window(w) for w in p.get("hours", [])],
        )

    providers = [
        ProviderPrices(provider=p["provider"], name=p["name"], currency=p.get("currency", "USD"),
                       pricing_urls=p.get("pricing_urls", []), snapshot=p["snapshot"],
                       models=[ModelPrices(id=m["id"], name=m.get("name"), match=m["match"],
                                           prices=[period(x) for x in m["prices"]]) for m in p["models"]])
        for p in data["providers"]
    ]  # fmt: skip
    return PriceTable(name=data["name"], default_model=data["default_model"], providers=providers)


def _window(w: dict[str, Any]) -> Window:
    def money(value: Any) -> Decimal | None:
        return None if value is None else Decimal(value)

    return Window(label=w["label"], utc_offset_minutes=w["utc_offset_minutes"], weekdays=list(w["weekdays"]),
                  start=w["start"], end=w["end"], source=w["source"], input_cache_miss=Decimal(w["input_cache_miss"]),
                  input_cache_hit=money(w.get("input_cache_hit")), cache_write_5m=money(w.get("cache_write_5m")),
                  cache_write_1h=money(w.get("cache_write_1h")), output=Decimal(w["output"]))  # fmt: skip


def _make_printable(data: Any) -> None:
    """Every text of a price file made safe to show on a terminal (`kcost.errors.printable`) where it enters:
    names, ids, sources and match values alike, so that a logged id (made safe the same way where sessions
    enter) still matches; a regular expression stays as written. In place, without recursion (a document may
    nest as deep as `kcost.inputs.documents.MAX_DEPTH`)."""
    stack = [data]
    while stack:
        node = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        for key, value in list(node.items() if isinstance(node, dict) else enumerate(node)):
            if isinstance(value, str) and key != "regex":
                node[key] = printable(value)
            elif isinstance(value, (dict, list)):
                stack.append(value)


def parse_prices(text: str, source: str) -> PriceTable:
    """A price file, validated: every rate a bounded decimal >= 0 with a date and a source, at least one model,
    the default among them."""
    # deferred: pydantic: loaded only where used (start-up; tests/test_cli.py)
    from pydantic import TypeAdapter, ValidationError

    if not text.strip():
        raise InputError("prices file is empty", source=source)
    data, lines = load_json(text, source)
    if isinstance(data, dict) and "models" in data and "providers" not in data:
        data, lines = _from_one_table(data, source, lines), {}
    _make_printable(data)  # the one-table shape's ids are keys: made values first
    try:
        table: PriceTable = TypeAdapter(PriceTable).validate_python(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source, lines) from None
    if not any(p.models for p in table.providers):
        raise InputError("at least one model is needed", source=source, line=lines.get(("providers",)),
                         field="providers")  # fmt: skip
    for i, provider in enumerate(table.providers):
        for j, model in enumerate(provider.models):
            _check_clause(model.match, source, f"providers.{i}.models.{j}.match")
            if not model.prices:
                raise InputError("a model needs at least one period of prices", source=source,
                                 field=f"providers.{i}.models.{j}.prices")  # fmt: skip
            for k, period in enumerate(model.prices):
                where = ("providers", i, "models", j, "prices", k)
                for rate in RATES:
                    value = getattr(period, rate)
                    if value is not None:
                        _money(value, source, lines, (*where, rate))
                for name, tiers in period.tiers.items():
                    if name not in RATES:
                        raise InputError(f"tiers of an unknown rate {name!r}", source=source,
                                         field=".".join(map(str, (*where, "tiers"))))  # fmt: skip
                    for tier in tiers:
                        bounds.money(tier.rate, source=source, field=".".join(map(str, (*where, "tiers", name))))
                    _check_tiers(tiers, source, ".".join(map(str, (*where, "tiers", name))))
                _check_writes(period, source, lines, where)
                for n, window in enumerate(period.hours):
                    _check_window(window, source, ".".join(map(str, (*where, "hours", n))))
    try:
        table.entry(table.default_model)
    except InputError:
        raise InputError(f"default_model {table.default_model!r} is not among the models", source=source,
                         line=lines.get(("default_model",)), field="default_model") from None  # fmt: skip
    return table


def _money(value: Decimal, source: str, lines: Lines, at: tuple[object, ...]) -> None:
    """`bounds.money` of the rate at `at`; the line looked up only for an error (a JSON document's lines are
    composed by the YAML parser, which costs more than the rest of reading the table)."""
    try:
        bounds.money(value, source=source, field=".".join(map(str, at)))
    except InputError as exc:
        exc.line = lines.get(at)
        raise


CLAUSES = ("equals", "starts_with", "ends_with", "contains", "regex", "or", "and")


def _check_tiers(tiers: list[Tier], source: str, field: str) -> None:
    """Tiers in the order they are reached, each from a larger prompt than the one before: a file listing them out
    of order (or twice from one size) would be billed by whichever came last, so it is refused."""
    starts = [t.from_tokens for t in tiers]
    if any(t < 0 for t in starts) or starts != sorted(set(starts)):
        raise InputError(f"tiers must start at growing prompt sizes, each once (got from_tokens {starts})",
                         source=source, field=field, hint="list them from the smallest from_tokens up")  # fmt: skip


def _check_writes(period: Period, source: str, lines: Lines, where: tuple[object, ...]) -> None:
    """A cache write costs at least a miss (a write computes the tokens and stores them), at every prompt size the
    tiers price differently: a lower write rate is a typo unless the period says it is a discount
    (`write_discount: true`), and the bill then shows it as one."""
    if period.write_discount:
        return
    for prompt in sorted({0, *(max(0, t.from_tokens) for tiers in period.tiers.values() for t in tiers)}):
        flat = period.at(prompt)
        for name in ("cache_write_5m", "cache_write_1h"):
            rate = getattr(flat, name)
            if rate is None or rate >= flat.input_cache_miss:
                continue
            at = (*where, "tiers", name) if any(t.from_tokens <= prompt for t in period.tiers.get(name, ())) else (
                *where, name)  # fmt: skip
            size = f" on prompts of {prompt:,} tokens or more" if prompt else ""
            raise InputError(f"a write at {rate} costs less than a miss at {flat.input_cache_miss}{size}",
                             source=source, line=lines.get(at), field=".".join(map(str, at)),
                             hint="say write_discount: true if it is a discount")  # fmt: skip


def _check_window(window: Window, source: str, field: str) -> None:
    """A window kcost can place a call in: a clock offset within a day, ISO weekdays, a start before its end, both
    HH:MM, and rates within the bounds every rate is held to."""
    if not -14 * 60 <= window.utc_offset_minutes <= 14 * 60:
        raise InputError(f"not a UTC offset: {window.utc_offset_minutes} minutes", source=source,
                         field=f"{field}.utc_offset_minutes")  # fmt: skip
    if not window.weekdays or any(d not in range(1, 8) for d in window.weekdays):
        raise InputError(f"weekdays must be 1 (Monday) to 7 (Sunday), got {window.weekdays}", source=source,
                         field=f"{field}.weekdays")  # fmt: skip
    for name in ("start", "end"):
        value = getattr(window, name)
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d|24:00", value):
            raise InputError(f"expected HH:MM, got {value!r}", source=source, field=f"{field}.{name}")
    if window.start >= window.end:
        raise InputError(f"a window must end after it starts ({window.start}-{window.end})", source=source,
                         field=f"{field}.end", hint="split a window across midnight in two")  # fmt: skip
    for rate in RATES:
        value = getattr(window, rate)
        if value is not None:
            bounds.money(value, source=source, field=f"{field}.{rate}")


def _check_clause(clause: Any, source: str, field: str) -> None:
    """A match clause kcost can apply: one known key, a string (a regular expression of the safe kind for `regex`)
    or, for `or` and `and`, a list of clauses (nested as deep as the one JSON check lets a document be)."""
    if not isinstance(clause, dict) or len(clause) != 1 or next(iter(clause)) not in CLAUSES:
        raise InputError(f"expected one of {', '.join(CLAUSES)} as the only key", source=source, field=field)
    ((key, value),) = clause.items()
    if key in ("or", "and"):
        if not isinstance(value, list) or not value:
            raise InputError("expected a list of clauses", source=source, field=f"{field}.{key}")
        for k, part in enumerate(value):
            _check_clause(part, source, f"{field}.{key}.{k}")
    elif not isinstance(value, str):
        raise InputError("expected a string", source=source, field=f"{field}.{key}")
    elif key == "regex":
        try:
            re.compile(value)
            why = backtracks(value)
        except re.error as exc:
            raise InputError(f"not a regular expression: {exc}", source=source, field=f"{field}.regex") from None
        except (OverflowError, RecursionError):  # `a{99999999999}`; groups nested a thousand deep
            raise InputError("a regular expression past what Python's re takes (a repeat count or nesting too large)",
                             source=source, field=f"{field}.regex") from None  # fmt: skip
        if why:
            raise InputError(f"a regular expression that can take {why}", source=source,
                             field=f"{field}.regex", hint="repeat characters or classes, not groups")  # fmt: skip


@frozen(slots=True, kw_only=True)
class _OneRates:
    __pydantic_config__ = {"extra": "forbid"}
    input_cache_hit: Decimal
    input_cache_miss: Decimal
    output: Decimal


@frozen(slots=True, kw_only=True)
class _OneTable:
    """The older one-table shape of a prices file."""

    __pydantic_config__ = {"extra": "forbid"}
    name: str
    currency: str = "USD"
    effective: date
    source: str
    default_model: str
    models: dict[str, _OneRates]


def _from_one_table(data: dict[str, Any], source: str, lines: Lines) -> dict[str, Any]:
    """The older one-table shape, checked as it is written, as a document of the current shape: each model
    priced by its own id, from the table's effective date, at its source."""
    # deferred: pydantic: loaded only where used (start-up; tests/test_cli.py)
    from pydantic import TypeAdapter, ValidationError

    try:
        old = TypeAdapter(_OneTable).validate_python(data)
    except ValidationError as exc:
        raise pydantic_error(exc, source, lines) from None
    for name, rates in old.models.items():
        for rate in ("input_cache_hit", "input_cache_miss", "output"):
            _money(getattr(rates, rate), source, lines, ("models", name, rate))
    if old.default_model not in old.models:
        raise InputError(f"default_model {old.default_model!r} is not in models", source=source,
                         line=lines.get(("default_model",)), field="default_model")  # fmt: skip
    models = [{"id": name, "match": {"equals": name},
               "prices": [{"starts": old.effective.isoformat(), "as_of": old.effective.isoformat(),
                           "source": old.source, "input_cache_hit": str(r.input_cache_hit),
                           "input_cache_miss": str(r.input_cache_miss), "output": str(r.output)}]}
              for name, r in old.models.items()]  # fmt: skip
    provider = {"provider": "file", "name": old.name, "currency": old.currency,
                "snapshot": f"{source} (one-table shape)", "models": models}  # fmt: skip
    return {"name": old.name, "default_model": old.default_model, "providers": [provider]}


# ---- refreshing the snapshot from genai-prices ---------------------------------------------------------------

_GENAI_RATES = {"input_mtok": "input_cache_miss", "cache_read_mtok": "input_cache_hit",
                "cache_write_mtok": "cache_write_5m", "cache_write_1h_mtok": "cache_write_1h",
                "output_mtok": "output"}  # fmt: skip


def update_snapshot(directory: Path = DATA, taken: date | None = None) -> list[str]:
    """Refresh the provider files in `directory` from the installed genai-prices; what changed, a line each."""
    try:
        # deferred: the [prices] extra, only to refresh the snapshot
        import genai_prices
        from genai_prices.data import providers as listed
    except ImportError:
        raise InputError("kcost prices --update needs genai-prices", hint="pip install 'kcost[prices]'") from None
    taken = taken or date.today()
    version = getattr(genai_prices, "__version__", None) or _version("genai-prices")
    files = {p.id: p.prices for p in providers.providers()}
    changes = []
    for provider in listed:
        if provider.id not in files:
            continue
        path = directory / files[provider.id]
        old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        new = convert_provider(provider, f"genai-prices {version}", taken)
        merged, said = merge_provider(old, new)
        changes += [f"{provider.id}: {line}" for line in said]
        path.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return changes


def _version(dist: str) -> str:
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    from importlib.metadata import version

    return version(dist)


def convert_provider(provider: Any, snapshot: str, taken: date) -> dict[str, Any]:
    """One genai-prices provider as a kcost provider file: text-token rates only, each period dated (its start
    date where genai-prices has one) and sourced; time-of-day discounts and models without a text input rate are
    left out."""
    urls = list(provider.pricing_urls or [])
    models = []
    for info in provider.models:
        source = _source(info.price_comments, urls)
        periods = []
        for conditional in info.prices if isinstance(info.prices, list) else [info.prices]:
            constraint = getattr(conditional, "constraint", None)
            if constraint is not None and type(constraint).__name__ != "StartDateConstraint":
                continue  # a time-of-day discount: not modelled
            price = getattr(conditional, "prices", conditional)
            period = _period(price, constraint.start_date if constraint is not None else None, taken, source)
            if period is not None:
                periods.append(period)
        if periods:
            models.append({"id": info.id, "name": info.name, "match": _match(info.match), "prices": periods})
    return {"provider": provider.id, "name": provider.name, "currency": "USD", "pricing_urls": urls,
            "snapshot": f"{snapshot}, taken {taken.isoformat()}", "models": models}  # fmt: skip


def _period(price: Any, starts: date | None, taken: date, source: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {"starts": starts.isoformat() if starts else None, "as_of": taken.isoformat(),
                           "source": source}  # fmt: skip
    tiers: dict[str, list[dict[str, Any]]] = {}
    for genai, ours in _GENAI_RATES.items():
        value = getattr(price, genai, None)
        if value is None:
            continue
        if hasattr(value, "tiers"):  # TieredPrices: a base rate, and higher ones from a prompt size on
            tiers[ours] = [{"from_tokens": t.start, "rate": str(t.price)} for t in value.tiers]
            value = value.base
        out[ours] = str(value)
    if "input_cache_miss" not in out or "output" not in out:
        return None
    if tiers:
        out["tiers"] = tiers
    return out


def _source(comments: str | None, urls: list[str]) -> str:
    """A period's source: the model's own references where genai-prices gives them, else the provider's pages."""
    refs = re.findall(r"https?://[^\s,;)]+", comments or "")
    return ", ".join(dict.fromkeys(r.rstrip(".") for r in refs)) or ", ".join(urls) or "genai-prices"


def _match(clause: Any) -> dict[str, Any]:
    kind = type(clause).__name__
    if kind == "ClauseOr":
        return {"or": [_match(c) for c in clause.or_]}
    if kind == "ClauseAnd":
        return {"and": [_match(c) for c in clause.and_]}
    for name in ("equals", "starts_with", "ends_with", "contains", "regex"):
        if hasattr(clause, name):
            return {name: getattr(clause, name)}
    raise ValueError(f"a match clause kcost does not know: {kind}")


def merge_provider(old: dict[str, Any] | None, new: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`new` with the history of `old` kept: a model's periods are the old ones, plus each new one whose rates
    differ (genai-prices' undated rates are today's: against the latest period, and dated the day of the
    snapshot when they changed); unchanged rates only move their `as_of` date."""
    if old is None:
        return new, [f"{len(new['models'])} models added"]
    said = []
    before = {m["id"]: m for m in old["models"]}
    models = []
    for model in new["models"]:
        kept = before.pop(model["id"], None)
        if kept is None:
            models.append(model)
            said.append(f"{model['id']} added")
            continue
        periods = list(kept["prices"])
        current_only = len(model["prices"]) == 1 and model["prices"][0]["starts"] is None
        for period in model["prices"]:
            if current_only:  # genai-prices' undated rates are today's: against the latest known
                same = [max(periods, key=lambda p: p["starts"] or "")]
            else:
                same = [p for p in periods if p["starts"] == period["starts"]]
            if same and _rates(same[0]) == _rates(period):
                same[0]["as_of"] = period["as_of"]
                continue
            if same and not current_only:  # the same start, other rates: the source corrected them
                periods[periods.index(same[0])] = period
                said.append(f"{model['id']}: rates from {period['starts']} corrected")
                continue
            dated = dict(period, starts=period["starts"] or period["as_of"]) if same else period
            periods.append(dated)
            said.append(f"{model['id']}: new rates from {dated['starts']}")
        models.append({**kept, "name": model["name"], "match": model["match"], "prices": periods})
    models += before.values()  # a model genai-prices dropped keeps its history
    return {**new, "name": old.get("name", new["name"]), "models": models}, said


def _rates(period: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(Decimal(period[r]) if period.get(r) is not None else None for r in RATES) + (
        json.dumps(period.get("tiers", {}), sort_keys=True),
    )


# ---- the headings `kcost prices` lists the models under ----------------------------------------------------
