"""Bills made where their sessions are read: in worker processes on this machine, or on the workers of a Dask
cluster (`--scheduler`). Owns how a run's logs are spread (`spread`), what a worker does with each session it
reads (`_finish`: makes it printable and bills it under the run's terms), and the report made from those bills
(`report`), with the bills of the sessions read here made here.

`kcost.billing.bills.bill` is a pure function of a session and the terms it is billed under (the cache models, the
price table, the usage mode, the model and the day), so a bill made in a worker is the bill this process would
make: the report is byte-identical however its sessions were spread. A bill is taken from a worker only for the
very session object the read handed on and only under the same terms; any other is billed here. An error a
worker met billing a session is raised where this process would have met it (the first session in order, under
the first cache model), as the same one line.

On Dask, every log that would be read apart from this process is one task; the workers read the files by their
paths, so they must see the same files (one machine's `LocalCluster`, or a shared file system).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from decimal import localcontext
from functools import partial
from typing import TYPE_CHECKING

from kcost.api.settings import Settings
from kcost.billing import bills as billing
from kcost.billing.bills import bill, combine, prices_used
from kcost.errors import InputError
from kcost.model.bounds import PRECISION
from kcost.model.frozen import frozen
from kcost.pricing.prices import load_prices
from kcost.readers.discover import Spread, at
from kcost.results import BillReport, Run
from kcost.version import __version__

if TYPE_CHECKING:
    from kcost.api.settings import Settings
    from kcost.cache.model import CacheModel
    from kcost.model.session import Session
    from kcost.readers.discover import Spread
    from kcost.results import BillReport, SessionBill
    from kcost.results.prices import PriceTable

Error = tuple[str, str | None, int | None, str | None, str | None]  # an InputError as plain data: it pickles whole
Made = list[tuple["CacheModel", "SessionBill | Error"]]  # a session's bill (or billing error) under each cache model


@frozen
class Terms:
    """What a bill depends on besides its session; `since` and `until`: a session that started outside them is
    left out of every report, so it is not billed where it is read."""

    caches: tuple[CacheModel, ...]
    prices: str | PriceTable | None
    usage: str
    model: str | None
    at: date | None
    since: float | None = None
    until: float | None = None
    json_turns: bool | None = None  # the bills' turns written as JSON where billed (`Settings.json_turns`)

    def same(self, other: Terms) -> bool:
        mine = (self.prices, self.usage, self.model, self.at, self.json_turns)
        return mine == (other.prices, other.usage, other.model, other.at, other.json_turns)


def terms(settings: Settings) -> Terms:
    s = settings
    return Terms(tuple(s.caches), s.prices, s.usage, s.model, s.at, s.since, s.until, s.json_turns)


@contextmanager
def spread(settings: Settings, *, bill: bool) -> Iterator[Spread]:
    """How a run's logs are read: on the settings' Dask scheduler (connected to before anything is read, so a
    wrong address costs no read), else in worker processes where they are large enough; `bill`: each session
    billed under the settings' terms where it was read."""
    finish, keep = (partial(_finish, terms(settings)), partial(_keep, terms(settings))) if bill else (None, None)
    if settings.scheduler is None:
        if bill:  # here, once: forked workers start with billing imported and the prices loaded
            _prices(settings.prices)
            import kcost.billing.bills  # noqa: F401
        yield Spread(finish=finish, keep=keep)
        return
    # deferred: start-up: a cold bill does without it (bench/bench_startup.py)
    from kcost.billing.scheduler import connect, run_tasks

    with connect(settings.scheduler) as client:
        yield Spread(remote=partial(run_tasks, client), finish=finish, keep=keep)


# -- in the worker


# a worker's price tables, each loaded once for all the sessions it bills (by path and stamp)
_TABLES: dict[tuple[str | None, object], PriceTable] = {}


def _finish(run: Terms, session: Session) -> tuple[Session, Made | None]:
    """In a worker: the session as the run hands it on (printable), and its bill under each of the run's cache
    models (none where it started outside `since` and `until`)."""
    session = session.printable()
    window = Settings(caches=run.caches, since=run.since, until=run.until)
    if not window.within(session.span[0]):
        return session, None
    prices = _prices(run.prices)
    return session, [(cache, _bill(session, run, cache, prices)) for cache in run.caches]


def _prices(prices: str | PriceTable | None) -> PriceTable:
    if prices is not None and not isinstance(prices, str):
        return prices
    from kcost.pricing.prices import stamp

    where = at(prices) if prices is not None else None  # a relative path read where the run started
    key = (where, stamp(where))  # as the file is now: a table kept from before an edit is another's
    if key not in _TABLES:
        if len(_TABLES) > 8:
            _TABLES.clear()
        _TABLES[key] = load_prices(where)
    return _TABLES[key]


def _bill(session: Session, run: Terms, cache: CacheModel, prices: PriceTable) -> SessionBill | Error:
    """The session's bill under `cache`, its turns written as JSON here where the run asks it (the text the JSON
    writer would make of each there: a tenth of the objects to send, and the writing spread)."""
    try:
        return bill(session, cache=cache, prices=prices, usage=run.usage, model=run.model, at=run.at,
                    json_turns=run.json_turns)  # fmt: skip
    except InputError as exc:
        return (exc.message, exc.source, exc.line, exc.field, exc.hint)


# -- back here

# Each bill made in a worker, by the session it bills (while that session lives), with the terms it was made under.
_MADE: dict[int, tuple[weakref.ref[Session], Terms, Made]] = {}
_KEPT: set[int] = set()  # of those, the sessions whose bills the ledger kept (`_from_ledger`): not kept again
_ASKED: dict[str, set[int]] = {}  # the sessions the ledger was asked for bills of, under the one key asked


def _keep(run: Terms, session: Session, made: Made | None) -> None:
    if made is None:
        return
    key = id(session)

    def gone(_: object) -> None:
        _MADE.pop(key, None)
        _KEPT.discard(key)

    _MADE[key] = (weakref.ref(session, gone), run, made)


def _made(session: Session, run: Terms, cache: CacheModel) -> SessionBill | Error | None:
    kept = _MADE.get(id(session))
    if kept is None or kept[0]() is not session or not kept[1].same(run):
        return None
    return next((bill for model, bill in kept[2] if model == cache), None)


def made_elsewhere(sessions: Sequence[Session], settings: Settings) -> bool:
    """Whether any of the sessions' bills under the settings was made where its session was read, or is kept in
    the ledger, or would be (a session the ledger holds is billed whole, for its bills to be kept)."""
    from kcost.ledger.bills import row_of

    run = terms(settings)
    _from_ledger(sessions, run, settings.caches)
    return any(_made(s, run, cache) is not None for s in sessions for cache in settings.caches) or any(
        row_of(s) is not None for s in sessions
    )


def _ledger_key(run: Terms, caches: Sequence[CacheModel]) -> str | None:
    """The key the ledger keeps bills made under these terms by (`kcost.ledger.bills`): every term, the price file
    as it is now, this kcost and today (the day a session of no logged time is priced at); None for a price table
    given as an object."""
    if run.prices is not None and not isinstance(run.prices, str):
        return None
    from kcost.pricing.prices import stamp

    where = at(run.prices) if run.prices is not None else None
    return repr((__version__, tuple(map(repr, caches)), where, stamp(where), run.usage, run.model, str(run.at),
                 run.json_turns, date.today().isoformat()))  # fmt: skip


def _from_ledger(sessions: Sequence[Session], run: Terms, caches: Sequence[CacheModel]) -> str | None:
    """Take the bills the ledger keeps of `sessions` under these terms, as if made where each was read; the key."""
    from kcost.ledger.bills import fetch, row_of

    key = _ledger_key(run, caches)
    if key is None or not caches:
        return None
    asked = _ASKED.setdefault(key, set())
    if len(_ASKED) > 1:  # the terms of another run of this process: asked afresh
        _ASKED.clear()
        asked = _ASKED.setdefault(key, set())
    wanted = [s for s in sessions if id(s) not in asked and row_of(s) is not None and _made(s, run, caches[0]) is None]
    asked.update(map(id, wanted))  # a session the ledger keeps no bill of is not asked again (report after check)
    fetched = fetch(wanted, key) if wanted else {}
    for session in wanted:
        made = fetched.get(id(session))
        if made is not None:
            _keep(run, session, made)
            _KEPT.add(id(session))
    return key


def _to_ledger(sessions: Sequence[Session], runs: Sequence[Run], caches: Sequence[CacheModel], run: Terms,
               key: str | None) -> None:  # fmt: skip
    """Keep in the ledger the bills of its sessions that it did not hold."""
    from kcost.ledger.bills import keep, row_of

    if key is None:
        return
    fresh = [(s, [(cache, r.sessions[n]) for cache, r in zip(caches, runs, strict=True)])
             for n, s in enumerate(sessions) if row_of(s) is not None and id(s) not in _KEPT]  # fmt: skip
    if fresh:
        keep(fresh, key)


def report(sessions: Sequence[Session], caches: Sequence[CacheModel], prices: PriceTable, settings: Settings
           ) -> BillReport:  # fmt: skip
    """Every session under every cache model, with totals per model: `kcost.billing.bills.report`'s report, each bill
    taken from the worker that read its session where one made it (none made elsewhere: that report itself)."""
    run = terms(settings)
    key = _from_ledger(sessions, run, caches) if settings.ledger is not None else None
    if not any(_made(s, run, cache) is not None for s in sessions for cache in caches):
        whole = billing.report(sessions, caches, prices, run.usage, model=run.model, at=run.at,
                               json_turns=run.json_turns)  # fmt: skip
        _to_ledger(sessions, whole.runs, caches, run, key)
        return whole
    with localcontext() as exact:
        exact.prec = PRECISION
        runs = []
        for cache in caches:
            bills = []
            for s in sessions:
                made = _made(s, run, cache)
                if made is None:
                    made = bill(s, cache=cache, prices=prices, usage=run.usage, model=run.model, at=run.at,
                                json_turns=run.json_turns)  # fmt: skip
                elif isinstance(made, tuple):
                    message, source, line, field, hint = made
                    raise InputError(message, source=source, line=line, field=field, hint=hint)
                bills.append(made)
            runs.append(Run(cache=cache.info(), sessions=bills, total=combine(bills)))
        used = prices_used(prices, runs, sessions, run.at)
        _to_ledger(sessions, runs, caches, run, key)
        return BillReport(generator=f"kcost {__version__}", prices=used, runs=runs)
