"""What a turn costs: the rates a call is billed at (`Pricer`), one turn's charges (`charge`) and a session's sums
of them (`Sums`), in `Decimal`.

`kcost.billing.bills` builds the bill's report types around these; the live view's running bill (`kcost.live.running`)
uses them alone, so a status-line call loads none of the report types. Every amount here is the one a bill holds.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple

from kcost.errors import InputError
from kcost.model.bounds import PER

if TYPE_CHECKING:
    from kcost.model.calls import Usage
    from kcost.model.requests import Outcome
    from kcost.model.session import Session
    from kcost.results.bill import TurnBill
    from kcost.results.prices import ModelPrice, ModelPrices, Period, PriceTable


class Pricer:
    """The flat rates each call is billed at: the session's model's, or under `--model logged` (`by_log`) the
    model each call's log names; each model's period and each tier's rates are looked up once."""

    def __init__(self, prices: PriceTable, entry: ModelPrices, when: date, session: Session, *, by_log: bool,
                 fixed: bool = False) -> None:  # fmt: skip
        self.prices, self.entry, self.when, self.session, self.by_log = prices, entry, when, session, by_log
        self.fixed = fixed  # every call at `when`'s rates (`--prices-at`), else each at its own day's
        self.periods: dict[tuple[str, date], Period] = {}  # by model id and day: the rates in force that day
        self.owned: dict[str, str] = {}  # logged id -> the priced model's id
        self.flat: dict[tuple[int, int, tuple[int, ...]], ModelPrice] = {}  # by period, window and tier: built once
        self.used: dict[str, None] = {}  # the ids calls were priced at, in order of first use
        self.kept = [0, 0]  # tokens written at their logged lifetimes: kept 5 minutes, kept an hour
        self.windows: dict[str, int] = {}  # calls priced in a window of the day, by its label
        self.untimed = 0  # calls with no logged time in a period with windows of the day
        self.days: dict[int, date] = {}  # days since 1970 -> their dates (`_day`)
        self.plain: dict[tuple[str, date], ModelPrice] = {}  # by model id and day: a price for all its calls
        self.lacking: dict[str, int] = {}  # under `--model logged`: calls on a model the table lacks, by model

    def priced(self, logged: str | None) -> bool:
        """Whether a call logged on `logged` has rates: every call does, but under `--model logged` one whose
        model the table lacks (a gateway's own name, say), which is counted here, to be named and left out."""
        if not self.by_log or not logged or logged in self.owned:
            return True
        if logged not in self.lacking:
            found = self.prices.find(logged) if logged.strip() else None
            if found is not None:
                self.owned[logged] = found[1].id
                return True
            self.lacking[logged] = 0
        self.lacking[logged] += 1
        return False

    def lacking_note(self) -> list[str]:
        """The calls left out for a model the price table lacks, by model."""
        return [f"{n:,} call(s) logged on {model!r}, which the price table lacks: not priced, left out of the "
                "totals (`--prices FILE` can price it)" for model, n in self.lacking.items()]  # fmt: skip

    def lifetimes(self, written: int, logged: Usage | None) -> int | None:
        """Of a reported call's `written` tokens, those kept an hour, where each write is priced at its logged
        lifetime (under `--model logged`, where the log says: Claude Code's `cache_creation`); None: every write
        at the cache model's lifetime."""
        if not self.by_log or logged is None or logged.written_1h is None or not written:
            return None
        hour = min(logged.written_1h, written)
        self.kept[0] += written - hour
        self.kept[1] += hour
        return hour

    def lifetime_note(self) -> list[str]:
        """What the writes priced at their logged lifetimes were, where any were."""
        five, hour = self.kept
        if not five and not hour:
            return []
        return [f"cache writes priced at their logged lifetimes: {five:,} tokens at 5-minute write rates, "
                f"{hour:,} at 1-hour write rates"]  # fmt: skip

    def price(self, logged: str | None, prompt: int, time: float | None = None) -> tuple[str, ModelPrice]:
        """The id of the model a call of `prompt` tokens logged on `logged` at `time` is priced at, and its rates:
        those in force on the call's own day (or the run's `--prices-at`), in the window of the day it fell in."""
        own = self.entry.id
        if self.by_log and logged:
            own = self.owned.get(logged) or self.owned.setdefault(logged, _own(self.prices, logged, self.session))
        day = self.when if self.fixed or time is None else self._day(time)
        plain = self.plain.get((own, day))
        if plain is not None:  # that day's one price for every call (no windows of the day, no tiers)
            return own, plain
        period = self.periods.get((own, day))
        if period is None:
            entry = self.entry if own == self.entry.id else self.prices.entry(own)[1]
            period = self.periods.setdefault((own, day), entry.period(day))
        window = period.window(time)
        if period.hours:
            if time is None:
                self.untimed += 1
            elif window is not None:
                self.windows[window.label] = self.windows.get(window.label, 0) + 1
        key = (id(period), id(window), period.tier(prompt) if window is None else ())
        self.used[own] = None
        flat = self.flat.get(key) or self.flat.setdefault(key, period.at(prompt, window))
        if not period.hours and not period.tiers:
            self.plain[own, day] = flat
        return own, flat

    def _day(self, time: float) -> date:
        """The UTC day of `time`, as `datetime.fromtimestamp(time, timezone.utc).date()` says it: each day's date
        made once, from the whole seconds where rounding to the microsecond cannot carry past them (a log's calls
        fall on a few days, and `datetime` takes a microsecond a call)."""
        if 0 <= time < 2**52 and time - int(time) < 0.999999:  # not NaN, nor past a whole number of seconds
            day = int(time) // 86_400
            known = self.days.get(day)
            if known is None:
                known = self.days[day] = datetime.fromtimestamp(day * 86_400, timezone.utc).date()
            return known
        return datetime.fromtimestamp(time, timezone.utc).date()

    def window_note(self) -> list[str]:
        """How many calls were priced in a window of the day, and at which rates the untimed ones were."""
        said = [f"{n:,} call(s) priced at {label} rates by their logged time" for label, n in self.windows.items()]
        if self.untimed:
            said.append(f"{self.untimed:,} call(s) with no logged time priced at the rates of the first window of "
                        "the day (peak, where the provider has one): an upper bound")  # fmt: skip
        return said


def _own(prices: PriceTable, logged: str, session: Session) -> str:
    """The id of the model a logged id names (an unknown one is an error at the session's source)."""
    try:
        return prices.entry(logged)[1].id
    except InputError as exc:
        raise exc.located(source=session.source) from None


class Miss(NamedTuple):
    """Tokens of a turn that missed for one reason, at the miss price."""

    reason: str
    tokens: int
    at: int  # the position of the first of them in the prompt
    cost: Decimal


class Charge(NamedTuple):
    """One turn's tokens and what each part costs (a bill's turn holds the same figures)."""

    input_tokens: int
    hit_tokens: int
    miss_tokens: int
    output_tokens: int
    hit_cost: Decimal
    miss_cost: Decimal
    output_cost: Decimal
    written_tokens: int
    write_premium: Decimal
    total: Decimal
    misses: tuple[Miss, ...]


# a token's rates: a hit, a miss, an output token, the premium of a write kept 5 minutes and of one kept an hour
Rates = tuple[Decimal, Decimal, Decimal, Decimal, Decimal]
_RATES: dict[int, tuple[ModelPrice, Rates]] = {}  # by the price's id (and the price, held while its id is in use)


def per_million(price: ModelPrice) -> Rates:
    """`price`'s rates a million tokens: a hit, a miss, an output token, and the premium of a write kept 5 minutes
    and kept an hour (`ModelPrice.write_premium`'s), looked up once a price."""
    held = _RATES.get(id(price))
    if held is not None and held[0] is price:
        return held[1]
    miss = price.input_cache_miss
    rates = (price.input_cache_hit, miss, price.output, price.write_rate(False) - miss, price.write_rate(True) - miss)
    _RATES[id(price)] = (price, rates)
    return rates


def costs(prompt: int, hit: int, output: int, rates: Rates, *, written: int = 0, hour: bool = False,
          charged: bool = True, kept_1h: int | None = None) -> tuple[Decimal, Decimal, Decimal, Decimal]:  # fmt: skip
    """What a turn's hits, misses and output cost at `rates` (`per_million`), and the premium of its `written`
    tokens where the cache bills writes (`charged`); `kept_1h`: of those the log says were kept an hour, each write
    then priced at its logged lifetime (None: every write at the cache model's, an hour if `hour`). The one place a
    turn's figures are worked out: a bill's turns and the JSON a worker writes of them both come from here."""
    hit_r, miss_r, output_r, five_r, hour_r = rates
    if not charged:
        premium = _ZERO
    elif kept_1h is not None:
        premium = (written - kept_1h) * five_r / PER + kept_1h * hour_r / PER
    else:
        premium = written * (hour_r if hour else five_r) / PER
    return hit * hit_r / PER, (prompt - hit) * miss_r / PER, output * output_r / PER, premium


_ZERO = Decimal(0)


def charge(o: Outcome, price: ModelPrice, *, written: int = 0, hour: bool = False, charged: bool = True,
           kept_1h: int | None = None) -> Charge:  # fmt: skip
    """A turn's charges at `price` (`costs`): its hits, misses (each reason apart), output, and the premium of its
    `written` tokens."""
    rates = per_million(price)
    hit_cost, miss_cost, output_cost, premium = costs(o.input, o.hit, o.output, rates, written=written, hour=hour,
                                                      charged=charged, kept_1h=kept_1h)  # fmt: skip
    miss_r = rates[1]
    misses = tuple(Miss(m.reason.value, m.tokens, m.at, m.tokens * miss_r / PER) for m in o.misses)
    return Charge(o.input, o.hit, o.miss, o.output, hit_cost, miss_cost, output_cost, written, premium,
                  hit_cost + miss_cost + premium + output_cost, misses)  # fmt: skip


class Sums:
    """A session's totals, a turn at a time: what a bill's summary adds up, kept as each turn is billed."""

    __slots__ = ("turns", "inputs", "hits", "outputs", "hit_cost", "miss_cost", "output_cost", "uncached", "written",
                 "premium", "tokens", "costs")  # fmt: skip

    def __init__(self) -> None:
        self.turns = self.inputs = self.hits = self.outputs = self.written = 0
        zero = Decimal(0)
        self.hit_cost = self.miss_cost = self.output_cost = self.uncached = self.premium = zero
        self.tokens: dict[str, int] = {}
        self.costs: dict[str, Decimal] = {}

    def add(self, t: Charge | TurnBill, uncached: Decimal) -> None:
        """One turn, its charges or its bill (`uncached`: what it would cost with every input token a miss)."""
        self.turns += 1
        self.inputs += t.input_tokens
        self.hits += t.hit_tokens
        self.outputs += t.output_tokens
        self.hit_cost += t.hit_cost
        self.miss_cost += t.miss_cost
        self.output_cost += t.output_cost
        self.uncached += uncached
        self.written += t.written_tokens
        self.premium += t.write_premium
        for m in t.misses:
            self.add_cause(m.reason, m.tokens, m.cost)

    def add_counts(self, turns: int, inputs: int, hits: int, outputs: int, written: int) -> None:
        """Turns' token counts, summed by a writer that keeps running sums of its own."""
        self.turns += turns
        self.inputs += inputs
        self.hits += hits
        self.outputs += outputs
        self.written += written

    def add_cause(self, reason: str, tokens: int, cost: Decimal) -> None:
        """Missed tokens of one cause, and what they cost."""
        self.tokens[reason] = self.tokens.get(reason, 0) + tokens
        self.costs[reason] = self.costs.get(reason, Decimal(0)) + cost

    @property
    def total(self) -> Decimal:
        """What the turns so far cost (at the precision in force)."""
        return self.hit_cost + self.miss_cost + self.premium + self.output_cost


def rate(part: int | Decimal, whole: int | Decimal) -> float:
    return round(float(part) / float(whole), 6) if whole else 0.0
