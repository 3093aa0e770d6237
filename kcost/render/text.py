"""What the human formats share: the bill's summary lines, turn grouping, the cost bar, the sparkline and the
short codes of miss reasons for narrow tables. Every figure is written by `kcost.render.display`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal

from kcost.render.display import count, money, percent, plural, rate_per_mtok
from kcost.results import BillReport, Run, SessionBill, Summary, TurnBill
from kcost.results.common import Routine

BARS = " ▏▎▍▌▋▊▉█"
SPARKS = "▁▂▃▄▅▆▇█"

# A miss reason's short code, for a table too narrow for the word (a legend under the table names each one shown).
REASON_CODES = {
    "new-input": "new", "cold": "cold", "prefix-changed": "chg", "output-not-cached": "out", "expired": "ttl",
    "no-checkpoint": "nochk", "block-granularity": "blk", "last-token": "last", "below-minimum": "min",
    "caching-off": "off", "reported": "rep", "model-switch": "sw",
}  # fmt: skip


def turn_groups(turns: Sequence[TurnBill]) -> Iterator[tuple[int, int, TurnBill, TurnBill]]:
    """Runs of consecutive turns that billed the same: (first turn, last turn, the first, the last of them)."""

    def same(a: TurnBill, b: TurnBill) -> bool:
        return (a.input_tokens, a.hit_tokens, a.output_tokens, a.label, a.reason, a.total) == (
            b.input_tokens, b.hit_tokens, b.output_tokens, b.label, b.reason, b.total,
        )  # fmt: skip

    i = 0
    while i < len(turns):
        j = i
        while j + 1 < len(turns) and same(turns[i], turns[j + 1]):
            j += 1
        yield turns[i].turn, turns[j].turn, turns[i], turns[j]
        i = j + 1


def bar(value: Decimal, top: Decimal, width: int = 10) -> str:
    """A horizontal bar of `value` against `top`, in eighths of a character."""
    if top <= 0:
        return ""
    eighths = int(value / top * width * 8)
    return (BARS[-1] * (eighths // 8) + (BARS[eighths % 8] if eighths % 8 else "")).ljust(width)


def sparkline(values: Sequence[Decimal], width: int = 60) -> str:
    """Cost per turn over the session, binned to at most `width` characters."""
    if not values:
        return ""
    per = -(-len(values) // max(width, 1))
    return _sparks([sum(values[i : i + per], Decimal(0)) for i in range(0, len(values), per)])


def bill_sparkline(bill: SessionBill, width: int = 60) -> str:
    """A session's cost per turn (`sparkline`), from its turns or, where they were streamed past, its digest."""
    digest = getattr(bill, "digest", None)
    if digest is None:
        return sparkline([t.total for t in bill.turns], width)
    return _sparks(digest.bins(width)) if digest.done else ""


def priced_models(bill: SessionBill) -> dict[str, bool]:
    """The models a session's turns were priced at, in order of first use, with whether any of its turns wrote at
    a premium."""
    digest = getattr(bill, "digest", None)
    if digest is not None:
        return dict(digest.priced)
    out: dict[str, bool] = {}
    for t in bill.turns:
        own = t.priced_model or bill.model
        out[own] = out.get(own, False) or bool(t.write_premium)
    return out


def _sparks(bins: list[Decimal]) -> str:
    top = max(bins)
    if top <= 0:
        return SPARKS[0] * len(bins)
    return "".join(SPARKS[min(len(SPARKS) - 1, int(b / top * len(SPARKS)))] for b in bins)


def summary_lines(s: Summary) -> list[str]:
    """The session (or total) figures a person reads first, one fact per line."""
    saved_pct = f" ({percent(s.saved_share)})" if s.uncached_total else ""
    lines = [
        f"{plural(s.turns, 'turn')} · {count(s.input_tokens)} input tokens, {percent(s.hit_rate)} cache hits · "
        f"{count(s.output_tokens)} output tokens",
        f"input {money(s.input_cost)} (hits {money(s.hit_cost)} + misses {money(s.miss_cost)}"
        + (f" + writes {money(s.write_premium)}" if s.write_premium > 0 else "")
        + (f" - write discount {money(-s.write_premium)}" if s.write_premium < 0 else "")
        + f") · output {money(s.output_cost)} · total {money(s.total, total=True)}",
        f"blended input {money(s.blended_input_per_mtok)}/M · without caching {money(s.uncached_total, total=True)}"
        f" · saved {money(s.saved, total=True)}{saved_pct}",
    ]
    if s.write_premium > 0:  # only where a write costs more than a miss: a figure of its own
        lines.append(f"cache writes: {count(s.written_tokens)} tokens, {money(s.write_premium)} above the miss rate")
    elif s.write_premium < 0:  # a price file's declared discount: never a silent negative
        lines.append(
            f"cache writes: {count(s.written_tokens)} tokens, a write discount of {money(-s.write_premium)} "
            "below the miss rate (the price file says write_discount)"
        )
    if s.miss_by_reason:
        causes = " · ".join(f"{r} {count(m.tokens)} ({money(m.cost)})" for r, m in s.miss_by_reason.items())
        lines.append(f"misses by cause: {causes}")
    return lines


def session_title(bill: SessionBill, run: Run) -> str:
    """The session, the models its turns were priced at and the cache rule it was billed under (a fitted one's,
    where one was fitted)."""
    fit, models = bill.cache_fit, " + ".join(priced_models(bill)) or bill.model
    if fit is None:
        return f"{bill.name} · {models} · cache {run.cache.label}"
    return f"{bill.name} · {models} · cache {fit.label} ({'fitted' if fit.fitted else 'k3:auto, not fitted'})"


def logged_span(bill: SessionBill) -> str:
    """What the log says of the session: its models, and from when to when it ran."""
    parts = [", ".join(bill.logged_models)] if bill.logged_models else []
    if bill.started and bill.ended:
        start, end = (t.replace("T", " ")[:16] for t in (bill.started, bill.ended))
        if end[:10] == start[:10]:
            end = end[11:]
        parts.append(f"{start} to {end} UTC")
    return " · ".join(parts)


def assumptions(report: BillReport, bill: SessionBill, verbose: bool = False) -> list[str]:
    """Which inputs produced the figures: the prices, and what was cached before turn 1; the notes (the routine
    ones, of lines that carry no usage, only when `verbose`)."""
    out = []
    wrote = priced_models(bill)
    priced = list(wrote) or [bill.model]
    if priced == [bill.model]:  # the session's own model: its rates, as they have always read
        rates = report.prices.rates.get(bill.model)
        if rates:
            out.append(
                f"prices: {report.prices.name} ({report.prices.effective}): hit {rate_per_mtok(rates.input_cache_hit)}"
                f"/M, miss {rate_per_mtok(rates.input_cache_miss)}/M, output {rate_per_mtok(rates.output)}/M"
                + (f", 1-hour writes {rate_per_mtok(rates.cache_write_1h)}/M"
                   if bill.summary.write_premium and rates.cache_write_1h else "")
            )  # fmt: skip
    else:  # priced at the models the log names (`--model logged`): each one's rates, writes at both lifetimes
        parts = []
        for model in priced:
            r = report.prices.rates.get(model)
            if r is None:
                continue
            writes = [
                f"{name} writes {rate_per_mtok(rate)}/M"
                for name, rate in (("5-minute", r.cache_write_5m), ("1-hour", r.cache_write_1h))
                if wrote.get(model) and rate is not None
            ]
            parts.append(f"{model}: " + ", ".join([f"hit {rate_per_mtok(r.input_cache_hit)}/M",
                                                   f"miss {rate_per_mtok(r.input_cache_miss)}/M", *writes,
                                                   f"output {rate_per_mtok(r.output)}/M"]))  # fmt: skip
        if parts:
            out.append(f"prices: {report.prices.name} ({report.prices.effective}): " + "; ".join(parts))
    if bill.usage == "reported":
        out.append("usage: as reported by the provider (cache hits from the log, not simulated)")
    elif bill.warm_prefix_tokens:
        out.append(f"warm start: {count(bill.warm_prefix_tokens)} prefix tokens were cached before turn 1")
    else:
        out.append("cold start: nothing was cached before turn 1")
    if bill.logged_models or bill.started:
        out.append(f"logged: {logged_span(bill)}")
    if bill.token_counts != "turn spec":
        out.append(f"token counts: {bill.token_counts}")
    if bill.agreement:
        a = bill.agreement
        out.append(
            f"reported vs simulated cached tokens agree on {count(a.agree)} of {plural(a.turns, 'turn')} "
            f"({percent(a.rate)})"
        )
    out += [f"note: {n}" for n in shown_notes(bill.notes, verbose)]
    return out


def shown_notes(notes: list[str], verbose: bool) -> list[str]:
    """The notes a person is shown: every one with `verbose`, else all but the routine ones."""
    return list(notes) if verbose else [n for n in notes if not isinstance(n, Routine)]
