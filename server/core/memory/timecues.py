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
# "3 days ago", "two weeks ago", "a month ago", "a couple of years ago", "5天前", "两周前",
# "三个月前": a count (digits or a number word) of units before the reference day.
_COUNT_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 4,
}  # fmt: skip
_ZH_DIGITS = {
    "一": 1,
    "两": 2,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_EN_COUNT = (
    r"\d{1,3}|a couple of|a couple|couple of|a few|few|several|an|a|one|two|three|four|five|six"
    r"|seven|eight|nine|ten|eleven|twelve"
)
# A Chinese count: digits, or numerals up to 99 ("三", "十二", "二十五"), or 几 (a few).
_ZH_COUNT = r"\d{1,3}|[一两二三四五六七八九]?十[一二三四五六七八九]?|[一两二三四五六七八九几]"
_UNIT_DAYS = {
    "day": 1, "week": 7, "month": 30, "year": 365,
    "天": 1, "周": 7, "星期": 7, "个星期": 7, "礼拜": 7, "个礼拜": 7, "个月": 30, "年": 365,
}  # fmt: skip
_ZH_UNIT = r"天|个星期|星期|周|个礼拜|礼拜|个月|年"
# "3 days ago", "two weeks ago", "a month ago", "a couple of years ago", "5天前", "两周前",
# "十二个月前": a count of units before the reference day. (No count may follow a month: "5月
# 1日前" is a deadline, not "1 day ago"; 日 is no unit here for the same reason.)
_AGO = re.compile(
    rf"\b({_EN_COUNT}) (day|week|month|year)s? ago\b"
    rf"|(?<![月\d])({_ZH_COUNT}) ?({_ZH_UNIT})前"
)
# "last Saturday": the latest such weekday before the reference day; "上周六": that weekday of
# the calendar week before the reference day's.
_WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_LAST_WEEKDAY = re.compile(
    r"\b(?:last|this past|past) (" + "|".join(_WEEKDAY_NAMES) + r")\b"
    r"|(?:上周|上星期|上个星期|上礼拜)([一二三四五六日天])"
)
_ZH_WEEKDAYS = "一二三四五六日"
# "in the past three months", "during the past month", "the past few weeks", "the last 10
# days", "过去两周", "最近三个月": from that many units before the reference day up to it. "last"
# needs a count ("the last day of the trip" is no span; "last week" is the calendar's), and so
# does the Chinese form ("最近天气" is not "the past day").
_PAST_SPAN = re.compile(
    rf"\b(?:the )?past (?:({_EN_COUNT}) )?(day|week|month|year)s?\b"
    rf"|\b(?:the )?last ({_EN_COUNT}) (day|week|month|year)s?\b"
    rf"|(?:过去|最近)({_ZH_COUNT})({_ZH_UNIT})"
)
# How far either side of "N units ago" the event may lie: a share of the span named (people
# round: "two weeks ago" may be 10 or 17 days back). Spans under `_EXACT_DAYS` days ("3 days
# ago") are taken as that very day.
_AGO_SLACK = 0.25
_EXACT_DAYS = 7
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
        if m := _AGO.search(low):
            return _ago(m, ref)
        if m := _LAST_WEEKDAY.search(low):
            return _last_weekday(m, ref)
        counted = (m := _PAST_SPAN.search(low)) and (m.group(1) or m.group(3) or m.group(5))
        if m and (counted or not _named(low)):
            return _past_span(m, ref)
        for pattern, name in _CUES:
            if pattern.search(low):
                start, end = _span(name, ref)
                return start.timestamp(), end.timestamp()
    except (OverflowError, ValueError):  # past 9999-12-31 or before 0001-01-01
        return None
    return None


def _ago(m: re.Match[str], ref: dt.datetime) -> tuple[float, float]:
    """The window of an "N units ago" cue: that day, widened by `_AGO_SLACK` of the span."""
    count, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    days = _count(count) * _UNIT_DAYS[unit]
    day = ref.replace(hour=0, minute=0, second=0, microsecond=0) - days * _DAY
    slack = dt.timedelta(0) if days < _EXACT_DAYS else _AGO_SLACK * days * _DAY
    return (day - slack).timestamp(), (day + _DAY + slack).timestamp()


def _named(low: str) -> bool:
    """Whether `low` holds one of the calendar cues ("last week", "上个月")."""
    return any(pattern.search(low) for pattern, _ in _CUES)


def _count(word: str | None) -> int:
    """A count in digits, English words or Chinese numerals (none: one)."""
    if not word:
        return 1
    if word.isdigit():
        return int(word)
    if word in _COUNT_WORDS:
        return _COUNT_WORDS[word]
    if word == "几":
        return 3
    tens, ten, units = word.partition("十")
    if not ten:
        return _ZH_DIGITS[word]
    return _ZH_DIGITS.get(tens, 1) * 10 + _ZH_DIGITS.get(units, 0)


def _last_weekday(m: re.Match[str], ref: dt.datetime) -> tuple[float, float]:
    """ "last Saturday": the latest Saturday strictly before the reference day; "上周六": the
    Saturday of the week before the reference day's (weeks from Monday). The whole day."""
    day = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    if m.group(1):
        back = (day.weekday() - _WEEKDAY_NAMES.index(m.group(1))) % 7 or 7
        start = day - back * _DAY
    else:
        wanted = _ZH_WEEKDAYS.index("日" if m.group(2) == "天" else m.group(2))
        start = day - (day.weekday() + 7 - wanted) * _DAY
    return start.timestamp(), (start + _DAY).timestamp()


def _past_span(m: re.Match[str], ref: dt.datetime) -> tuple[float, float]:
    """From N units before the reference day to the end of it."""
    groups = m.groups()
    at = next(i for i in (1, 3, 5) if groups[i] is not None)  # the unit's group
    count, unit = groups[at - 1], groups[at]
    days = _count(count) * _UNIT_DAYS[unit]
    day = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    return (day - days * _DAY).timestamp(), (day + _DAY).timestamp()


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
