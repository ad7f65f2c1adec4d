"""Seconds as a UTC date at the calendar's ends (issue 28: a timestamp in the last microsecond of
year 9999, which validation accepts, is a float of year 10000, and `datetime` raised on it)."""

from __future__ import annotations

import datetime as dt

from server.adapters.analysis import date_terms
from server.core.agent.context import _day
from server.core.clock import LAST, utc

LAST_FLOAT = 253_402_300_799 + 999_999_999 / 1e9  # == 253402300800.0


def test_the_last_instant_is_read_as_itself() -> None:
    assert LAST_FLOAT == 253_402_300_800.0  # the rounding this module exists for
    assert utc(LAST_FLOAT) == LAST
    assert utc(253_402_300_799.5) == dt.datetime(9999, 12, 31, 23, 59, 59, 500_000, tzinfo=dt.UTC)
    assert utc(0.0) == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def test_a_date_at_the_calendars_end_is_its_own_day() -> None:
    assert date_terms(LAST_FLOAT) == ["d1231"]  # the keyword channel's date term
    assert _day(LAST_FLOAT) == "9999-12-31"  # the Step's context line
