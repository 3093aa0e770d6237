"""Unix seconds as a bill writes them, once a turn: ISO 8601 in UTC, to the millisecond.

The text is what `datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")` makes of the
seconds, worked out from the seconds themselves at under half its time: the microseconds rounded half to even as
`datetime` rounds a float's, each day's date written once (a log's calls fall on a few days), the time of day from
tables. Outside the years `datetime` holds (and before 1970), or past the days kept, `datetime` itself answers, and
raises as it raises.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timezone

_EPOCH = date(1970, 1, 1).toordinal()
_END = 253_402_300_800  # 10000-01-01T00:00:00Z: past it `datetime` holds no year
_KEPT = 4096  # days whose dates are kept
_DATES: dict[int, str] = {}  # day number since 1970 -> its date, as ISO 8601 writes it
_MINUTES: list[str] = []  # a day's minutes, a minute's seconds and a second's milliseconds, as written: made at
_SECONDS: list[str] = []  # the first time written (a millisecond or two: not every run writes one)
_MILLIS: list[str] = []


def iso_time(seconds: float | None) -> str | None:
    """Unix seconds as ISO 8601 in UTC, to the millisecond: `2026-02-10T21:11:59.186Z`."""
    if seconds is None:
        return None
    if not 0 <= seconds < _END:
        return _by_datetime(seconds)
    fraction, whole = math.modf(seconds)
    micro = round(fraction * 1e6)  # half to even, as datetime rounds a float's microseconds
    second = int(whole)
    if micro >= 1_000_000:
        second += 1
        micro -= 1_000_000
    day, second = divmod(second, 86_400)
    text = _DATES.get(day)
    if text is None:
        if len(_DATES) >= _KEPT:
            return _by_datetime(seconds)
        text = _DATES[day] = date.fromordinal(_EPOCH + day).isoformat()
    if not _MINUTES:
        _MINUTES.extend(f"T{m // 60:02d}:{m % 60:02d}:" for m in range(1440))
        _SECONDS.extend(f"{s:02d}." for s in range(60))
        _MILLIS.extend(f"{ms:03d}Z" for ms in range(1000))
    minute, second = divmod(second, 60)
    return text + _MINUTES[minute] + _SECONDS[second] + _MILLIS[micro // 1000]


def _by_datetime(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
