"""The library's face, re-exported by `kcost`: read sessions, bill them, quote the lesson's arithmetic, load the
price table. Cache models and prices may be given as text (`"k3:hash=256"`, a price file's path) or as objects.

    import kcost
    (session,) = kcost.read("sample_sessions/coding-400k.yaml")
    print(kcost.bill(session, cache="k3").summary.total)  # 6.6172800
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path

from kcost.billing import bill as _bill
from kcost.billing import report as _report
from kcost.cache import CacheModel, parse_cache_model
from kcost.errors import InputError
from kcost.options import USAGE_MODES
from kcost.prices import load_prices
from kcost.quotes import make_quote, parse_rate
from kcost.readers import read_all
from kcost.results import BillReport, SessionBill
from kcost.results.prices import PriceTable
from kcost.results.quote import Quote
from kcost.session import Session
from kcost.transcripts.tokenizer import load_counter


def read(path: str | Path, fmt: str = "auto", *, tokenizer: str | None = None) -> list[Session]:
    """Every session in a file or folder (`-`: stdin): turn specs, Kimi API, Kimi CLI, Kimi Code, Claude Code
    or Codex logs. `tokenizer`: a Kimi `tiktoken.model` for exact counts where a log has no usage."""
    return read_all([str(path)], fmt, counter=load_counter(tokenizer)).sessions


def bill(
    session: Session,
    *,
    cache: str | CacheModel = "k3",
    prices: str | PriceTable | None = None,
    usage: str = "auto",
    model: str | None = None,
    at: date | None = None,
) -> SessionBill:
    """One session's bill under one cache model; `usage` is auto, simulated or reported; `model` prices every
    call at one model (`logged`: each at its own); `at` takes the rates in force that day."""
    _usage(usage)
    return _bill(session, cache=_model(cache), prices=price_table(prices), usage=usage, model=model, at=at)


def report(
    sessions: Sequence[Session],
    *,
    caches: Sequence[str | CacheModel] = ("k3",),
    prices: str | PriceTable | None = None,
    usage: str = "auto",
    model: str | None = None,
    at: date | None = None,
) -> BillReport:
    """Every session under every cache model, with totals: what `kcost bill --format json` writes."""
    _usage(usage)
    return _report(sessions, [_model(c) for c in caches], price_table(prices), usage, model=model, at=at)


def quote(
    *,
    prefix: int,
    new: int,
    turns: int = 50,
    output: int = 0,
    hit_rate: str | Decimal | float = "0.9",
    prices: str | PriceTable | None = None,
    model: str | None = None,
) -> Quote:
    """One turn of `prefix` + `new` tokens missed and hit, and `turns` of them: the seed lesson's arithmetic."""
    rate = parse_rate(str(hit_rate))  # checked the same way whatever its type
    return make_quote(prefix=prefix, new=new, turns=turns, output=output, hit_rate=rate, prices=price_table(prices),
                      model=model)  # fmt: skip


def price_table(prices: str | Path | PriceTable | None = None) -> PriceTable:
    """The shipped price snapshot (every provider's models), or the table in a file."""
    return prices if isinstance(prices, PriceTable) else load_prices(prices)


def _model(cache: str | CacheModel) -> CacheModel:
    return cache if isinstance(cache, CacheModel) else parse_cache_model(cache)


def _usage(usage: str) -> None:
    if usage not in USAGE_MODES:
        raise InputError(f"usage must be one of {', '.join(USAGE_MODES)} (got {usage!r})", field="usage")
