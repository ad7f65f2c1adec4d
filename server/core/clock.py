"""The time source of the core, injected so tests can move it; and seconds as a UTC date."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

# The calendar's last microsecond. Validation accepts timestamps up to
# 9999-12-31T23:59:59.999999999Z; as a float they round up to 253402300800.0, the first second of
# year 10000, which `datetime` cannot hold: they are read as this instant.
LAST = dt.datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=dt.UTC)
_PAST_LAST = 253_402_300_800.0


def utc(t: float) -> dt.datetime:
    """`t` (seconds since the epoch, as validation accepts them: 0 to the end of 9999) as a UTC
    datetime, exactly: the float of a timestamp in the calendar's last microsecond is read as
    that microsecond, not as year 10000."""
    return LAST if t >= _PAST_LAST else dt.datetime.fromtimestamp(t, dt.UTC)


class Clock(Protocol):
    """Seconds since the epoch."""

    def now(self) -> float: ...
