"""Time cues in a query ("yesterday", "last week", "上周", "3 days ago"), read as a window of event
time relative to the query's reference time (`as_of`, else now).

Recall boosts the memories that occurred inside the window (`hybrid_search.time_cue_boost`) rather
than filtering on it: a cue is a hint about when, not a hard condition, and "last week" in a
question asked on Monday may mean the days just before. Weeks start on Monday and months on the
1st, in UTC.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from server.core.clock import utc

_DAY = dt.timedelta(days=1)
_N_DAYS = re.compile(r"\b(\d{1,3}) days? ago\b|(\d{1,3}) ?天前")
_CUES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), name)
    for p, name in (
        (r"\btoday\b|今天", "today"),
        (r"\byesterday\b|昨天", "yesterday"),
        (r"\bthis week\b|本周|这周|这个星期", "this_week"),
        (r"\blast week\b|上周|上个星期|上星期", "last_week"),
        (r"\bthis month\b|本月|这个月", "this_month"),
        (r"\blast month\b|上个月|上月", "last_month"),
        (r"\bthis year\b|今年", "this_year"),
        (r"\blast year\b|去年", "last_year"),
    )
)


# A time expression in a memory's text: the answer type of a "when" question.
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
TIME_EXPRESSION = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|(?:last|this|next) (?:week|weekend|month|year|"
    rf"{_WEEKDAYS})|on (?:{_WEEKDAYS})|in (?:{_MONTHS})|(?:{_MONTHS}) \d{{1,2}}|"
    r"\d+ (?:days?|weeks?|months?|years?) ago|\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2})\b"
    r"|昨天|前天|今天|明天|上周|这周|本周|下周|上个?月|去年|今年|(?:星期|周|礼拜)[一二三四五六日天]"
    r"|\d{1,2}月\d{1,2}[日号]|[一二三四五六七八九十]+月",
    re.IGNORECASE,
)


def cue_pattern(cues: Sequence[str]) -> re.Pattern[str]:
    """One pattern for a list of cues, matched against lower-cased text: Latin cues as whole
    words ("ago" is not in "Chicago"), CJK ones as substrings; no cues match nothing."""
    alternatives = [
        rf"\b{re.escape(c.lower())}\b" if c.isascii() else re.escape(c) for c in cues if c
    ]
    return re.compile("|".join(alternatives) or r"(?!)")


def has_time_expression(text: str) -> bool:
    """Whether `text` says when something happened ("last Saturday", "on 3 May", "上周六")."""
    return TIME_EXPRESSION.search(text) is not None


def _month_start(d: dt.datetime) -> dt.datetime:
    return d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def window(text: str, reference: float) -> tuple[float, float] | None:
    """The [start, end) event-time window the first cue of `text` names, or None (also when the
    window would reach past the calendar's ends)."""
    low = text.lower()
    ref = utc(reference)
    try:
        if m := _N_DAYS.search(low):
            start = ref.replace(hour=0, minute=0, second=0, microsecond=0)
            start -= int(m.group(1) or m.group(2)) * _DAY
            return start.timestamp(), (start + _DAY).timestamp()
        for pattern, name in _CUES:
            if pattern.search(low):
                start, end = _span(name, ref)
                return start.timestamp(), end.timestamp()
    except (OverflowError, ValueError):  # past 9999-12-31 or before 0001-01-01
        return None
    return None


def _span(name: str, ref: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The window of the cue `name` around `ref` (weeks from Monday, months from the 1st)."""
    day = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    week = day - day.weekday() * _DAY
    month = _month_start(ref)
    year = month.replace(month=1)
    if name == "today":
        return day, day + _DAY
    if name == "yesterday":
        return day - _DAY, day
    if name == "this_week":
        return week, week + 7 * _DAY
    if name == "last_week":
        return week - 7 * _DAY, week
    if name == "this_month":
        return month, _month_start(month + 32 * _DAY)
    if name == "last_month":
        return _month_start(month - _DAY), month
    if name == "this_year":
        return year, year.replace(year=year.year + 1)
    return year.replace(year=year.year - 1), year  # last_year
