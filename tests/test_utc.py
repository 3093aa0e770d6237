"""`kcost.utc.iso_time` against `datetime` itself: the ISO time of Unix seconds, as `fromtimestamp` makes it."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcost import utc


def by_datetime(seconds: float) -> object:
    """What `datetime` makes of `seconds` (the error's type, where it raises)."""
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError) as exc:
        return type(exc)


def by_utc(seconds: float) -> object:
    try:
        return utc.iso_time(seconds)
    except (OverflowError, OSError, ValueError) as exc:
        return type(exc)


DAY = 86_400
EDGES = [0.0, -0.0, 1e-7, 4.9999e-7, 5e-7, 5.000001e-7, 0.9999995, 0.9999994999, DAY - 5e-7, DAY - 4e-7, DAY - 1e-9,
         1_770_000_000.0005, 1_770_000_000.0004995, 1_770_000_000.9995, 1_770_000_000.9999995, 1_770_000_000.999999,
         951_782_400.0, 951_868_799.9999996, 4_107_542_400.0, 253_402_300_799.0, 253_402_300_799.9999,
         253_402_300_800.0, 1e12, -1.0, -1e-7, -86_400.5, math.inf, -math.inf, math.nan]  # fmt: skip


@pytest.mark.parametrize("seconds", EDGES)
def test_edges_are_what_datetime_makes(seconds: float) -> None:
    """Microseconds that round up into the next second or day, leap days, the last second datetime holds, and
    the seconds it refuses (before 1970 left to it, which answers for them)."""
    assert by_utc(seconds) == by_datetime(seconds)


@settings(max_examples=3000)
@given(st.floats(-1e10, 3e11) | st.integers(0, 4_000_000_000).map(float)
       | st.tuples(st.integers(0, 50_000), st.integers(-3, 3)).map(lambda t: t[0] * DAY + t[1] * 5e-7))  # fmt: skip
def test_any_seconds_are_what_datetime_makes(seconds: float) -> None:
    assert by_utc(seconds) == by_datetime(seconds)


def test_past_the_days_kept_datetime_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(utc, "_DATES", {})
    monkeypatch.setattr(utc, "_KEPT", 3)
    days = [n * DAY + 0.25 for n in range(10)]
    assert [by_utc(s) for s in days] == [by_datetime(s) for s in days]
    assert len(utc._DATES) == 3
