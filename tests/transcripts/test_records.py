"""A session is one record per billed call; causes and miss reasons are enums, and every cause has its fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kcost.model.causes import BY_REASON, FIXES, Cause, Change
from kcost.model.requests import Reason
from kcost.model.session import CallRecord, Session
from kcost.readers import read

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from kcost.pricing.providers.base import UsageFields

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_every_cause_has_a_fix_and_every_reason_a_cause() -> None:
    assert set(FIXES) == set(Cause) and all(FIXES.values())
    # a miss of new input has no cause; a prefix change is named by the prompt's change
    assert set(BY_REASON) == set(Reason) - {Reason.NEW_INPUT, Reason.PREFIX_CHANGED}


def test_enums_are_their_text() -> None:
    """Reports carry a cause's or a reason's text, as they always have."""
    assert Cause.MESSAGE_EDITED == "message edited" and Reason.NEW_INPUT == "new-input"
    assert Change(Cause.MESSAGE_EDITED, "message 3 (user) differs") == ("message edited", "message 3 (user) differs")


def test_a_session_is_its_records() -> None:
    (session,) = read(str(FIXTURES / "claude-code" / "spotter-short.jsonl"))
    assert session.records and all(isinstance(r, CallRecord) for r in session.records)
    assert session.requests == tuple(r.request for r in session.records)
    assert session.reported == tuple(r.reported for r in session.records)
    assert session.call_models == tuple(r.model for r in session.records)
    assert all(c is None or isinstance(c.cause, Cause) for c in session.changes)


def test_a_session_has_requests_for_every_call_or_for_none() -> None:
    from kcost.model.requests import Request, Span

    request = Request(0.0, 0, (Span(0, 0, 10),), 0)
    with pytest.raises(ValueError):
        Session(source="s", name="s", model=None, records=(CallRecord(request=request), CallRecord()))


def test_the_priced_note_names_the_rates_billing_used() -> None:
    from kcost.billing.bills import bill
    from kcost.cache.model import parse_cache_model
    from kcost.pricing.prices import load_prices

    (session,) = read(str(FIXTURES / "claude-code" / "spotter-short.jsonl"))
    k3, prices = parse_cache_model("k3"), load_prices()
    assert "logged on claude-opus-4-6: priced at K3 rates" in bill(session, cache=k3, prices=prices).notes
    logged = bill(session, cache=k3, prices=prices, model="logged")
    assert "logged on claude-opus-4-6: priced at claude-opus-4-6 rates" in logged.notes


def test_the_hour_writes_keep_every_other_count_of_the_usage() -> None:
    """The 1-hour count is read with the record's other counts: a record that holds it is the same usage as the
    one without it, but for `written_1h`."""
    import dataclasses

    from kcost.readers.usage import parse_usage, schemes

    scheme, fields = next((name, f) for name, f in schemes().items() if f.written_1h)
    without: dict[str, object] = {name: 20 + n for n, name in enumerate((*fields.prompt, fields.output))}
    raw: dict[str, object] = {**without}
    node = raw
    *path, last = fields.written_1h.split(".")
    for name in path:
        node = node.setdefault(name, {})  # type: ignore[assignment]
    node[last] = 3
    alone = parse_usage(without, scheme)
    assert alone is not None and alone.written_1h is None and alone.written > 3
    assert parse_usage(raw, scheme) == dataclasses.replace(alone, written_1h=3)


def _counts(fields: UsageFields) -> SearchStrategy[dict[str, object]]:
    """Usage records of a flat scheme's fields: every count a whole number (the common record), every count
    there but some not a count, or each count anything JSON holds, in range or out, or absent (the hour's
    writes inside their object, or that object not an object)."""
    from hypothesis import strategies as st

    from kcost.readers.usage import MAX_COUNT

    good = st.integers(0, 10**6)
    value = st.one_of(good, st.integers(-3, MAX_COUNT + 3), st.just(MAX_COUNT), st.booleans(),
                      st.floats(allow_nan=False), st.none(), st.text(max_size=3),
                      st.lists(st.integers(), max_size=2))  # fmt: skip
    names = [*fields.prompt, *fields.cached, fields.output, *(n for n in (fields.written, fields.reasoning) if n)]
    flat = [name for name in dict.fromkeys(names) if "." not in name]
    near = st.one_of(good, good, st.booleans(), st.integers(-2, -1), st.just(MAX_COUNT + 1))  # every count there
    top = st.one_of(st.fixed_dictionaries(dict.fromkeys(flat, good)), st.fixed_dictionaries(dict.fromkeys(flat, near)),
                    st.fixed_dictionaries({}, optional=dict.fromkeys(flat, value)))  # fmt: skip
    hour = fields.written_1h
    if not hour:
        return top
    outer, _, inner = hour.partition(".")
    nested = st.one_of(st.fixed_dictionaries({inner: good}), st.fixed_dictionaries({}, optional={inner: value}), value)
    outer_part = st.one_of(st.fixed_dictionaries({outer: nested}), st.fixed_dictionaries({}, optional={outer: nested}))
    return st.tuples(top, outer_part).map(lambda t: {**t[0], **t[1]})


@pytest.mark.parametrize("scheme", ["anthropic", "kimi-cli", "kimi-code", "codex", "opencode", "gemini-cli",
                                    "qwen-code"])  # fmt: skip
def test_the_common_record_reads_as_every_count_checked_reads_it(scheme: str) -> None:
    """`parse_usage` reads the common flat record at once (`_flat_at_once`); whatever it reads so is what the
    record read count by count (`_flat`, which names a bad count) gives, and a record it does not read so is
    `_flat`'s to read or refuse."""
    from hypothesis import given, settings

    from kcost.errors import InputError
    from kcost.readers.usage import _flat, parse_usage, schemes

    fields = schemes()[scheme]

    def outcome(read: Callable[[dict[str, object]], object], raw: dict[str, object]) -> object:
        try:
            return read(raw)
        except InputError as exc:
            return (str(exc), exc.field)

    @settings(max_examples=400, deadline=None)
    @given(_counts(fields))
    def holds(raw: dict[str, object]) -> None:
        at_once = outcome(lambda r: parse_usage(r, scheme, where="u"), raw)
        assert at_once == outcome(lambda r: _flat(r, fields, "u"), raw)

    holds()
