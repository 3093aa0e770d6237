"""The library, and the one orchestration layer every command calls: read, bill, explain, compare, quote, check,
diff, trace, selfhost and the price table, each from a `kcost.api.settings.Settings`. Knows no argv and prints nothing:
what a run tells the user besides its report (files passed over) goes to `tell`, which the CLI sends to stderr.

Re-exported by `kcost`. Cache models and prices may be given as text (`"k3:hash=256"`, a price file's path) or
as objects:

    import kcost
    (session,) = kcost.read("sample_sessions/coding-400k.yaml")
    print(kcost.bill(session, cache="k3").summary.total)  # 6.6172800

Each function imports the stages it calls in its body: `kcost.api.settings`, which every command's options
import, loads this package first, and `kcost --help` must load no stage (tests/test_cli.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from kcost.api.settings import DEFAULT_USAGE, Settings, check_usage, resolve
from kcost.errors import InputError

if TYPE_CHECKING:
    from kcost.billing.bills import Streamed
    from kcost.cache.model import CacheModel
    from kcost.fleet.engines import Progress
    from kcost.fleet.spec import FleetSpec
    from kcost.model.session import Session
    from kcost.readers.discover import Found, Keeper, Spread
    from kcost.results import BillReport, SessionBill
    from kcost.results.check import CheckOutcome, DiffReport
    from kcost.results.compare import CompareReport
    from kcost.results.explain import Explanation
    from kcost.results.forecast import ForecastReport
    from kcost.results.formats import FormatListing
    from kcost.results.overview import OverviewReport
    from kcost.results.plan import PlanReport
    from kcost.results.prices import PriceTable
    from kcost.results.quote import Quote
    from kcost.results.selfhost import SelfhostReport
    from kcost.results.trace import TraceReport

Tell = Callable[[str], None]


def _quiet(line: str) -> None:
    """Where the library sends what it would say on stderr, unless told where to send it."""


# -- reading


def read(path: str | Path, fmt: str = "auto", *, tokenizer: str | None = None) -> list[Session]:
    """Every session in a file or folder (`-`: stdin): turn specs, Kimi API, Kimi CLI, Kimi Code, Claude Code
    or Codex logs. `tokenizer`: a Kimi `tiktoken.model` for exact counts where a log has no usage."""
    return sessions([str(path)], Settings(input_format=fmt, tokenizer=tokenizer))


def sessions(paths: Sequence[str], settings: Settings, tell: Tell = _quiet, *, bill: bool = False,
             verbose: bool = False) -> list[Session]:  # fmt: skip
    """The sessions in `paths` (none: every agent log on this machine, from each agent's home, each folder read
    told of), read as `settings` say; files in a folder that are no session are passed over and told of, and so
    are sessions that cannot be billed in the usage mode asked (`--usage reported` and a log with no usage),
    while others can: the rest of the run goes on (one such session alone is billing's error, as `check`'s is).
    Prompts are rebuilt only where they will be simulated. Logs are read in worker processes where they are
    large enough, or on the settings' Dask scheduler; `bill`: each billed there too, under the settings, for
    `report` and `overview` to take (`kcost.api.distributed`). Files of no format kcost reads are counted, and
    named where `verbose`."""
    found = _found(paths, settings, tell, bill=bill, verbose=verbose)
    for line in found.told:
        tell(line)
    _foreign(found.foreign, tell, verbose)
    if found.skipped:
        tell(f"kcost: passed over {len(found.skipped)} file(s) that are no session: {found.skipped[0]}"
             + (" ..." if len(found.skipped) > 1 else ""))  # fmt: skip
    return _billable(list(found.sessions), settings.usage, tell)


def _foreign(files: list[str], tell: Tell, verbose: bool) -> None:
    """Tell of the files a folder walk passed over as of no format kcost reads (a Gemini CLI `logs.json` beside
    its chats, a config): how many, and with `verbose` which."""
    if not files:
        return
    if verbose:
        for file in files:
            tell(f"kcost: passed over {file}: of no format kcost reads")
    else:
        tell(f"kcost: passed over {len(files)} file(s) of no format kcost reads (--verbose names them)")


def _billable(found: list[Session], usage: str, tell: Tell) -> list[Session]:
    """The sessions that can be billed in the `usage` mode; those that cannot, passed over and told of by why
    (none passed over when none can: billing then says why the first cannot)."""
    from kcost.billing.bills import unbillable

    why = [unbillable(s, usage) for s in found]
    kept = [s for s, reason in zip(found, why, strict=True) if reason is None]
    if not kept or len(kept) == len(found):
        return found
    for reason in dict.fromkeys(r for r in why if r is not None):
        over = [s.source for s, r in zip(found, why, strict=True) if r == reason]
        tell(f"kcost: passed over {len(over)} session(s) with {reason}: {over[0]}" + (" ..." if len(over) > 1 else ""))
    return kept


def _found(paths: Sequence[str], settings: Settings, tell: Tell = _quiet, *, bill: bool = False,
           verbose: bool = False) -> Found:  # fmt: skip
    """The sessions in `paths`; none given: in the agents' homes (`kcost.readers.homes`), each folder told of."""
    from kcost.api.distributed import spread

    with spread(settings, bill=bill) as how:
        return _read(paths, settings, tell, how, verbose)


def _read(paths: Sequence[str], settings: Settings, tell: Tell, how: Spread, verbose: bool = False) -> Found:
    """The sessions in `paths` (none: the agents' homes), through the settings' ledger where there is one (none
    for stdin)."""
    if settings.ledger is None or "-" in paths:
        return _read_kept(paths, settings, how, verbose, None)
    import os

    from kcost.inputs.files import noted, outputs_not_read
    from kcost.ledger.reading import Kept, read_key
    from kcost.ledger.store import Ledger

    def opened() -> Ledger | None:
        """The ledger (made where there is none yet); None where its place cannot hold one by default."""
        try:
            return Ledger(str(settings.ledger))
        except InputError as exc:
            from kcost.ledger import default_path

            if exc.field != "ledger" or settings.ledger != default_path():
                raise
            tell(f"kcost: no ledger kept: {exc}")  # the default place cannot hold one: the run goes on without it
            return None

    # a ledger is made once there is something to keep in it (a run of turn specs alone makes none)
    ledger = opened() if os.path.lexists(settings.ledger) else None
    if ledger is None and os.path.lexists(settings.ledger):
        return _read_kept(paths, settings, how, verbose, None)
    try:
        noted(settings.ledger)  # read and written: no output may replace it
        key = read_key(prompts=settings.prompts, tokenizer_file=settings.tokenizer, lenient=settings.lenient,
                       input_format=settings.input_format)
        kept = Kept(ledger, key, settings.input_format)
        found = _read_kept(paths, settings, how, verbose, kept)
        outputs_not_read()  # an output onto the ledger, or onto a log read: refused before the ledger is written
        if ledger is None and kept.news():
            kept.ledger = ledger = opened()
        if ledger is not None:
            kept.commit()  # nothing refused the run: what it read is kept
            from kcost.ledger.reports import read_at

            read_at(ledger.path, kept.generation)
        if not paths and ledger is not None:  # this machine's whole view: other machines' sessions imported too
            from kcost.ledger.manage import imported

            others = [s for s in imported(ledger, None) if settings.input_format in ("auto", s.agent)]
            if others:
                found.sessions += others
                found.told.append(f"kcost: {len(others)} session(s) of other machines from the ledger")
    finally:
        if ledger is not None:
            ledger.close()
    if kept.gone_count:
        found.told.append(f"kcost: {kept.gone_count} session(s) whose logs are gone billed from the ledger "
                          f"({settings.ledger})")  # fmt: skip
    return found


def _read_kept(paths: Sequence[str], settings: Settings, how: Spread, verbose: bool, kept: Keeper | None) -> Found:
    from kcost.prompts.tokenizer import load_counter
    from kcost.readers import read_all

    counter = load_counter(settings.tokenizer) if settings.prompts else None
    if paths:
        found = read_all(list(paths), settings.input_format, counter=counter, prompts=settings.prompts,
                         lenient=settings.lenient, spread=how, kept=kept)  # fmt: skip
        found.sessions = [s.printable() for s in found.sessions]  # a log's text made safe once, where it enters
        return found
    from kcost.inputs.files import outputs_not_read
    from kcost.readers.homes import nothing_read, read_homes, shown

    homes = read_homes(settings.input_format, counter=counter, prompts=settings.prompts, lenient=settings.lenient,
                       spread=how, kept=kept)  # fmt: skip
    outputs_not_read()  # an output onto a log found here: refused before the folders are told of
    told = homes.found.told  # said by the caller once nothing it checks refuses the run (an error is one line)
    for read in homes.read:
        n = read.sessions
        if n == 0 and verbose:  # a home that holds nothing readable: named, with why
            told.append(f"kcost: nothing read from {shown(read.folder.path)} ({read.folder.agent}): "
                        f"{nothing_read(read.folder, homes.found)}")  # fmt: skip
        elif n:
            told.append(f"kcost: read {n} session{'' if n == 1 else 's'} from {shown(read.folder.path)} "
                        f"({read.folder.agent})")  # fmt: skip
    if homes.copies:
        told.append(f"kcost: {homes.copies} session(s) found in two places counted once")
    homes.found.sessions = [s.printable() for s in homes.found.sessions]
    return homes.found


# -- bills


def bill(
    session: Session,
    *,
    cache: str | CacheModel | None = None,
    prices: str | PriceTable | None = None,
    usage: str = DEFAULT_USAGE,
    model: str | None = None,
    at: date | None = None,
    settings: Settings | None = None,
) -> SessionBill:
    """One session's bill under one cache model (none: the default, as `kcost bill` without `--cache`); `usage` is
    auto, simulated or reported; `model` prices every call at one model (`logged`: each at its own); `at` takes
    the rates in force that day. `settings`, when given, stands for all of these."""
    check_usage(usage)
    s = settings or resolve(caches=[] if cache is None else [cache], prices=prices, usage=usage, model=model, at=at)
    return _bill_one(session, s, price_table(s.prices), s.cache)


def report(
    sessions: Sequence[Session],
    *,
    caches: Sequence[str | CacheModel] = (),
    prices: str | PriceTable | None = None,
    usage: str = DEFAULT_USAGE,
    model: str | None = None,
    at: date | None = None,
    settings: Settings | None = None,
) -> BillReport:
    """Every session under every cache model (none: the default), with totals: what `kcost bill --format json`
    writes (only the sessions that started within the settings' `since` and `until`, where they name any)."""
    from kcost.api.distributed import report as billed

    check_usage(usage)
    s = settings or resolve(caches=list(caches), prices=prices, usage=usage, model=model, at=at)
    kept = [session for session in sessions if s.within(session.span[0])]
    return billed(kept, list(s.caches), price_table(s.prices), s)


def streamed(sessions: Sequence[Session], settings: Settings) -> Streamed:
    """`report` billed a turn at a time, for a writer that holds no turn (`kcost.billing.bills.Streamed`)."""
    from kcost.billing.bills import Streamed

    kept = [session for session in sessions if settings.within(session.span[0])]
    return Streamed(kept, list(settings.caches), price_table(settings.prices), settings.usage, model=settings.model,
                    at=settings.at)  # fmt: skip


def _bill_one(session: Session, settings: Settings, prices: PriceTable, cache: CacheModel) -> SessionBill:
    from kcost.billing.bills import bill as billed

    return billed(session, cache=cache, prices=prices, usage=settings.usage, model=settings.model, at=settings.at)


def overview(
    sessions: Sequence[Session],
    settings: Settings,
    *,
    by: str = "session",
    sort: str | None = None,
    breakdown: bool = False,
    since: str | None = None,
    until: str | None = None,
    window_hours: int | None = None,
    now: float | None = None,
    limit: str | None = None,
) -> OverviewReport:
    """The sessions at a glance: billed under the settings' cache models, those that started within the settings'
    `since` and `until` grouped `by` session, hour, day, week, month, usage window, model, project or agent (`since`
    and `until`: the text they were given as, for the report to state). By window: windows of `window_hours` (None:
    the settings', else the plans' 5), the active one judged at `now` (None: the present) and held to `limit`
    (dollars, `$12.50` or `12.50`; tokens, `2000000 tokens` or `2M tokens`; `max`: the largest past window's cost;
    None: the settings')."""
    import time

    from kcost.analysis.overview import overview as grouped
    from kcost.api.distributed import report as billed
    from kcost.model.limits import parse_limit
    from kcost.results.grouping import WINDOW_HOURS

    kept = [s for s in sessions if settings.within(s.span[0])]
    result = billed(kept, list(settings.caches), price_table(settings.prices), settings)
    hours = window_hours or settings.window.hours or WINDOW_HOURS
    moment = time.time() if now is None else now
    held = settings.window.limit if limit is None else parse_limit(limit)
    return grouped(result, kept, by=by, sort=sort, breakdown=breakdown, zone=settings.zone,
                   zone_name=settings.zone_name, since=since, until=until, left_out=len(sessions) - len(kept),
                   window_hours=hours, now=moment, limit=held)  # fmt: skip


def forecast(sessions: Sequence[Session], settings: Settings, *, today: date | None = None) -> ForecastReport:
    """The month's spend to date and its projection to the month's end under the settings' first cache model, with
    an interval from the user's own days (`kcost.analysis.forecast`); `today`: the day it is made (None: today in
    the settings' time zone)."""
    from datetime import datetime

    from kcost.analysis.forecast import forecast as projected
    from kcost.api.distributed import report as billed

    day = today or datetime.now(settings.zone).date()
    result = billed(list(sessions), [settings.cache], price_table(settings.prices), settings)
    return projected(result, today=day, zone=settings.zone, zone_name=settings.zone_name)


def plan(sessions: Sequence[Session], settings: Settings, *, plan: str | None = None, month: date | None = None,
         today: date | None = None) -> PlanReport:
    """The month's sessions at API prices (K3's, and each call's logged model's own) beside subscription plans
    (`kcost.analysis.plan`): `plan` an id, `all`, or None (the settings' plan, else those of the agents whose logs
    the sessions are); `month`: its first day (None: this month); `today`: None for today in the settings' zone."""
    from dataclasses import replace
    from datetime import datetime

    from kcost.analysis.plan import plan_report
    from kcost.api.distributed import report as billed
    from kcost.pricing.plans import plan as named
    from kcost.pricing.plans import plans

    day = today or datetime.now(settings.zone).date()
    first = month or day.replace(day=1)
    table = price_table(settings.prices)
    k3 = billed(list(sessions), [settings.cache], table, replace(settings, model=None))
    logged = billed(list(sessions), [settings.cache], table, replace(settings, model="logged"))
    agents = [s.agent for s in sessions if s.agent]
    if plan == "all":
        chosen = list(plans())
    elif plan is not None or settings.plan is not None:
        chosen = [named(plan if plan is not None else settings.plan or "", None if plan else settings.config)]
    else:
        chosen = [p for p in plans() if set(p.agents) & set(agents)] or list(plans())
    return plan_report(k3, logged, agents, chosen, month=first, today=day, zone=settings.zone,
                       zone_name=settings.zone_name)  # fmt: skip


# -- why


def explain(sessions: Sequence[Session], settings: Settings, top: int | None = None) -> list[Explanation]:
    """Why each session's misses cost money under the settings' cache model, and what each fix would save (priced
    by billing the session again with it), with what 1-hour writes would change; `top`: only the N fixes that
    save most in each."""
    from dataclasses import replace
    from functools import partial

    from kcost.analysis.explain import explain as explained
    from kcost.analysis.explain import hour_writes

    prices = price_table(settings.prices)
    out = []
    for s in sessions:
        first = _bill_one(s, settings, prices, settings.cache)
        cache = _billed_under(first, settings.cache)  # a fitted rule's own: the fixes are billed under it
        rebill = _Rebills(settings, prices)
        hour = hour_writes(first, s, cache, partial(rebill, s))
        e = explained(first, s, cache, rebill, hour)
        out.append(replace(e, fixes=e.fixes[:top]) if top is not None else e)
    return out


class _Rebills:
    """A session billed again under a cache model, each (session object, cache model) once: a fix that leaves the
    prompts as they are (the idle gaps closed by 1-hour writes: `fixes.plan` hands the session itself on) is the
    session under 1-hour writes, billed for `hour_writes` already."""

    def __init__(self, settings: Settings, prices: PriceTable) -> None:
        self.settings, self.prices = settings, prices
        self.made: list[tuple[Session, CacheModel, SessionBill]] = []

    def __call__(self, session: Session, cache: CacheModel) -> SessionBill:
        for seen, under, bill in self.made:
            if under == cache and seen is session:
                return bill
        bill = _bill_one(session, self.settings, self.prices, cache)
        self.made.append((session, cache, bill))
        return bill


def _billed_under(bill: SessionBill, cache: CacheModel) -> CacheModel:
    """The rule `bill` was made under: the one fitted to the session where it was fitted, else `cache` as given
    (never fitted again)."""
    from dataclasses import replace

    from kcost.cache.model import parse_cache_model

    if bill.cache_fit is not None:
        return parse_cache_model(bill.cache_fit.label)
    return replace(cache, auto=False, fit_own=False)


def compare(sessions: Sequence[Session], models: Sequence[str], settings: Settings) -> CompareReport:
    """The sessions on each model in `models` (none: each provider's default ones), under its provider's rule."""
    from kcost.analysis.compare import compare as compared

    chosen = compare_models(models, settings)
    return compared(sessions, chosen, price_table(settings.prices), settings.usage, settings.at)


def compare_models(models: Sequence[str], settings: Settings) -> list[str]:
    """The models `compare` prices sessions on: `models`, each checked against the settings' price table (an
    unknown one is an error that names `--on`), else each provider's default ones. Reads no session: a command
    asks it before any log is read."""
    from kcost.pricing.providers import compare_defaults

    chosen = list(models or compare_defaults())
    prices = price_table(settings.prices)
    for model in chosen:  # each checked here, where the error can name the setting that gave it
        if model == "logged":
            raise InputError("compare prices every call at each model given: `logged` is for bill", field="on",
                             hint="give model ids, as `kcost prices` lists them")  # fmt: skip
        try:
            prices.entry(model)
        except InputError as exc:
            raise InputError(exc.message, field="on", hint=exc.hint) from None
    return chosen


def quote(
    *,
    prefix: int,
    new: int,
    turns: int = 50,
    output: int = 0,
    hit_rate: str | Decimal | float = "0.9",
    prices: str | PriceTable | None = None,
    model: str | None = None,
    settings: Settings | None = None,
) -> Quote:
    """One turn of `prefix` + `new` tokens missed and hit, and `turns` of them: the seed documents' arithmetic."""
    from kcost.analysis.quotes import make_quote, parse_rate

    rate = parse_rate(str(hit_rate))  # checked the same way whatever its type
    s = settings or resolve(prices=prices, model=model)
    return make_quote(prefix=prefix, new=new, turns=turns, output=output, hit_rate=rate,
                      prices=price_table(s.prices), model=s.model)  # fmt: skip


# -- CI


def check(paths: Sequence[str], settings: Settings, tell: Tell = _quiet) -> CheckOutcome:
    """The sessions in `paths` (none: the agents' homes, each folder told of) held to the settings' budgets (and to
    their baseline, where there is one)."""
    from kcost.analysis.checks import check as checked
    from kcost.analysis.checks import diff as diffed
    from kcost.analysis.explain import rank_together, ranked_causes
    from kcost.api.distributed import report as billed
    from kcost.results.bill_files import load_bill
    from kcost.results.check import CheckOutcome

    budgets = settings.budgets
    if budgets is None or not budgets.any():
        raise InputError("no budgets to check", field="budgets",
                         hint="give a maximum or minimum, or a [budgets] table in kcost.toml")  # fmt: skip
    cache = settings.cache
    prices = price_table(settings.prices)
    found = _found(paths, settings, tell, bill=True)
    if found.skipped:  # a check never passes over input it could not read
        raise InputError(f"cannot check {len(found.skipped)} file(s): {found.skipped[0]}")
    current = billed(found.sessions, [cache], prices, settings)
    unbilled = [s for s in current.runs[0].sessions if s.unbilled_calls]
    if unbilled:
        raise InputError(f"{unbilled[0].unbilled_calls} call(s) have no reported usage", source=unbilled[0].source,
                         field="usage", hint="check the simulated usage instead")  # fmt: skip
    for line in found.told:
        tell(line)
    _foreign(found.foreign, tell, False)
    path = settings.baseline
    baseline = load_bill(path) if path else None
    if baseline is not None and baseline.runs[0].cache.label != cache.label:
        raise InputError(f"billed under {baseline.runs[0].cache.label}, this run under {cache.label}", source=path,
                         field="cache", hint=f"bill the baseline under {cache.label}")  # fmt: skip
    if (budgets.max_increase_usd is not None or budgets.max_increase_pct is not None) and baseline is None:
        raise InputError("an increase budget needs a baseline", field="max_increase", hint="give a baseline bill")
    result = checked(current, budgets, baseline, path)
    changes = diffed(baseline, current, before=path, after="this run") if baseline and path else None
    bills = current.runs[0].sessions
    ranked = (ranked_causes(b, s) for s, b in zip(found.sessions, bills, strict=True))
    return CheckOutcome(result, changes, rank_together(ranked))


def diff(before: str, after: str, settings: Settings) -> DiffReport:
    """Two bills, or two sessions billed under the settings' cache model, side by side."""
    from kcost.analysis.checks import diff as diffed

    return diffed(bill_of(before, settings), bill_of(after, settings), before=before, after=after)


def bill_of(path: str, settings: Settings) -> BillReport:
    """A bill JSON as it is, or the sessions in `path` billed under the settings' cache model."""
    from kcost.api.distributed import report as billed
    from kcost.results.bill_files import is_bill, load_bill

    if is_bill(path):
        return load_bill(path)
    found = _found([path], settings, bill=True)
    return billed(found.sessions, [settings.cache], price_table(settings.prices), settings)


# -- fleets


def trace(
    path: str,
    spec: FleetSpec,
    settings: Settings,
    *,
    capacities: Sequence[tuple[str, int | None]] = (("inf", None),),
    workers: int = 1,
    scheduler: str | None = None,
    engine: str | None = None,
    progress: Progress | None = None,
    name: str | None = None,
) -> TraceReport:
    """A request trace through a fleet under each of the settings' cache models and each capacity."""
    from kcost.fleet.run import run
    from kcost.inputs.files import check_regular

    if path != "-":  # a FIFO or a device would block the replay or never end: refused before anything is read
        check_regular(path, "trace")
    return run(path, list(settings.caches), list(capacities), spec, price_table(settings.prices), workers,
               progress=progress, name=name, scheduler=scheduler, engine=engine)  # fmt: skip


# -- prices


def price_table(prices: str | Path | PriceTable | None = None) -> PriceTable:
    """The shipped price snapshot (every provider's models), or the table in a file."""
    from kcost.pricing.prices import load_prices
    from kcost.results.prices import PriceTable

    return prices if isinstance(prices, PriceTable) else load_prices(prices)


def formats() -> FormatListing:
    """Every input format, in the order detection tries them: what each reads, where its agent keeps its logs, and
    what its reader says of its usage."""
    from kcost.readers.registry import DETECTION
    from kcost.results.formats import Format, FormatListing

    listed = []
    for entry in DETECTION:
        reader, home = entry.load(), entry.home
        where = None
        if home is not None:
            logs = ", ".join(f"{folder}/" for folder in home.logs if folder != ".")
            where = (f"{home.env}{' (comma-separated)' if home.several else ''}, else {' and '.join(home.defaults)}"
                     f"{f': {logs}' if logs else ''} ({home.files})")  # fmt: skip
        listed.append(Format(name=entry.name, reads=entry.what, home=where, variable=home and home.env,
                             defaults=list(home.defaults) if home else [], logs=list(home.logs) if home else [],
                             files=home and home.files, one_call=reader.one_call, usage=reader.usage_read,
                             source=reader.source_read))  # fmt: skip
    return FormatListing(formats=listed)


def update_prices() -> list[str]:
    """Refresh the shipped snapshot from an installed genai-prices: what changed, a line each."""
    from kcost.pricing.prices import update_snapshot

    return update_snapshot()


# -- self-hosting


def selfhost(
    paths: Sequence[str],
    settings: Settings,
    *,
    model: str | None = None,
    accelerator: str | None = None,
    deployment: str | None = None,
    pricing: str = "reserved",
    overrides: dict[str, Decimal] | None = None,
    tell: Tell = _quiet,
) -> SelfhostReport:
    """The sessions in `paths` (or the one request trace there) billed as `bill` or `trace` bills them, beside a
    self-hosted fleet of the model's open weights: its memory floor, accelerators, monthly cost and break-even."""
    from kcost.analysis import selfhost as sh
    from kcost.fleet.spec import FleetSpec

    cache = settings.cache
    if len(paths) == 1 and paths[0] != "-" and _is_trace(paths[0]):
        from kcost.fleet.requests import read_trace

        point = trace(paths[0], FleetSpec(), settings).curve[0]
        calls = [sh.Call(r.time, r.input, r.output) for r in read_trace(paths[0])]
        work = sh.Workload(kind="trace", source=paths[0], units=point.requests, input_tokens=point.input_tokens,
                           hit_tokens=point.hit_tokens, output_tokens=point.output_tokens, api_cost=point.cost,
                           cache=cache.label, calls=calls, contexts_without_times=1)  # fmt: skip
    else:
        found = sessions(paths, settings, tell, bill=True)
        billed = report(found, settings=settings)
        run = billed.runs[0]
        calls = [sh.Call(_seconds(t.time), t.input_tokens, t.output_tokens) for s in run.sessions for t in s.turns]
        work = sh.Workload(kind="sessions", source=", ".join(paths) or "the agents' homes", units=len(run.sessions),
                           input_tokens=run.total.input_tokens, hit_tokens=run.total.hit_tokens,
                           output_tokens=run.total.output_tokens, api_cost=run.total.total, cache=cache.label,
                           calls=calls, contexts_without_times=len(run.sessions))  # fmt: skip
    return sh.report(
        work, model=model, accelerator=accelerator, deployment=deployment, pricing=pricing, overrides=overrides
    )


def _is_trace(path: str) -> bool:
    """Whether `path` is a request trace (Mooncake's or kcost's JSONL): its first record has block ids."""
    import json

    if not Path(path).is_file():
        return False
    with open(path, "rb") as handle:
        for raw in handle:
            if len(raw) > 1 << 20:
                return False
            if raw.strip():
                try:
                    first = json.loads(raw)
                except ValueError:
                    return False
                return isinstance(first, dict) and ("hash_ids" in first or "blocks" in first)
    return False


def _seconds(iso: str | None) -> float | None:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None
