"""A session is one record per billed call; causes and miss reasons are enums, and every cause has its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcost.cache import Reason
from kcost.causes import BY_REASON, FIXES, Cause, Change
from kcost.readers import read
from kcost.session import CallRecord, Session

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
    from kcost.cache import Request, Span

    request = Request(0.0, 0, (Span(0, 0, 10),), 0)
    with pytest.raises(ValueError):
        Session(source="s", name="s", model=None, records=(CallRecord(request=request), CallRecord()))


def test_the_priced_note_names_the_rates_billing_used() -> None:
    from kcost.billing import bill
    from kcost.cache import parse_cache_model
    from kcost.prices import load_prices

    (session,) = read(str(FIXTURES / "claude-code" / "spotter-short.jsonl"))
    k3, prices = parse_cache_model("k3"), load_prices()
    assert "logged on claude-opus-4-6: priced at K3 rates" in bill(session, cache=k3, prices=prices).notes
    logged = bill(session, cache=k3, prices=prices, model="logged")
    assert "logged on claude-opus-4-6: priced at claude-opus-4-6 rates" in logged.notes


def test_the_hour_writes_keep_every_other_count_of_the_usage() -> None:
    """The 1-hour count is read with the record's other counts: a record that holds it is the same usage as the
    one without it, but for `written_1h`."""
    import dataclasses

    from kcost.transcripts.usage import parse_usage, schemes

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
