"""The fields an afternoon's hybrid reads from a question: the speakers and the dates it names.

Generic rules, written from how people name a person or a day, not from pocketd's code and not
tuned on any half of any workload:
- a speaker is named when a speaker's name of the namespace occurs in the question: a Latin
  name as a whole word in any case ("Maya", "maya's"), a Chinese name as a substring ("小王的");
- a date is named as a calendar day or month: English "May 2nd", "2 May", "the 2nd of May",
  "May 2, 2023", "May 2023", "in May", ISO "2023-05-02" and "2023-05"; Chinese "5月2日",
  "5月2号", "五月二日", "2023年5月", "五月". A day or month without a year matches it in any
  year. Lone month names count when capitalised, and "May" only after a preposition ("in May"),
  since "may" is also a verb;
- a relative day, resolved against the question's `as_of` (UTC): "today", "yesterday", "the day
  before yesterday", "3 days ago", "last week" (the calendar week before `as_of`'s, Monday to
  Sunday), "last month" (the calendar month before), and 今天, 昨天, 前天, 3天前, 上周 /
  上星期 / 上个星期 / 上礼拜, 上个月.
Event times are read as UTC dates.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_FULL = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
MONTHS: dict[str, int] = {m: i for i, m in enumerate(_FULL, 1)} | {
    m[:3]: i for i, m in enumerate(_FULL, 1) if m != "may"
}
MONTHS["sept"] = 9
_M = "(?P<m>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_D = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?(?!\d)"
_Y = r"(?P<y>\d{4})(?!\d)"
_CN = r"\d{1,2}|[一二三四五六七八九十两]{1,3}"
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_PREP = r"(?:in|of|during|since|until|by|early|late|mid|mid-)"


@dataclass(frozen=True)
class Day:
    """A calendar day or month a question names; `year` and `day` may be unknown (None)."""

    month: int
    day: int | None = None
    year: int | None = None

    def matches(self, d: dt.date) -> bool:
        return (
            d.month == self.month
            and (self.day is None or d.day == self.day)
            and (self.year is None or d.year == self.year)
        )


@dataclass(frozen=True)
class Window:
    """The days from `first` to `last`, both included: a relative phrase resolved."""

    first: dt.date
    last: dt.date

    def matches(self, d: dt.date) -> bool:
        return self.first <= d <= self.last


When = Day | Window


def _cn_int(s: str) -> int:
    """A number of up to two digits, in digits or Chinese numerals ("十二", "二十三", "两")."""
    if s.isdigit():
        return int(s)
    digits = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}
    if "十" not in s:
        return digits[s] if len(s) == 1 else -1
    tens, _, ones = s.partition("十")
    return (digits.get(tens, -1) if tens else 1) * 10 + (digits.get(ones, -1) if ones else 0)


def _day(month: int, day: int | None, year: int | None) -> Day | None:
    """A valid calendar day (or month), else None ("May 45")."""
    try:
        dt.date(year or 2000, month, day or 1)  # 2000: a leap year, so 29 February is valid
    except ValueError:
        return None
    return Day(month, day, year)


def _int(s: str | None) -> int | None:
    return None if s is None else int(s)


_Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], Day | None]]


def _en(m: re.Match[str]) -> Day | None:
    g = m.groupdict()
    return _day(MONTHS[g["m"].lower()], _int(g.get("d")), _int(g.get("y")))


def _zh(m: re.Match[str]) -> Day | None:
    g = m.groupdict()
    day = g.get("d")
    return _day(_cn_int(g["m"]), None if day is None else _cn_int(day), _int(g.get("y")))


# Longest forms first: a span one rule took is not read again by a later one.
_CALENDAR: tuple[_Rule, ...] = (
    (
        re.compile(r"(?<!\d)(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?!\d)"),
        lambda m: _day(int(m["m"]), int(m["d"]), int(m["y"])),
    ),
    (
        re.compile(r"(?<!\d)(?P<y>\d{4})-(?P<m>\d{1,2})(?![\d-])"),
        lambda m: _day(int(m["m"]), None, int(m["y"])),
    ),
    (re.compile(rf"\b{_M}\s+{_D}(?:,?\s+{_Y})?", re.I), _en),
    (re.compile(rf"\b(?:the\s+)?{_D}\s+(?:of\s+)?{_M}(?:,?\s+{_Y})?\b", re.I), _en),
    (re.compile(rf"\b{_M}\s+(?:of\s+)?{_Y}", re.I), _en),
    (
        re.compile(
            r"\b(?P<m>January|February|March|April|June|July|August|September|October|"
            r"November|December)\b"
        ),
        _en,
    ),
    (re.compile(rf"\b{_PREP}\s+(?P<m>May)\b", re.I), _en),
    (re.compile(rf"(?:(?P<y>\d{{4}})年)?(?P<m>{_CN})月(?P<d>{_CN})[日号]"), _zh),
    (re.compile(rf"(?:(?P<y>\d{{4}})年)?(?P<m>{_CN})月份?(?![\d日号])"), _zh),
)

_EN_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def _days_ago(n: int) -> Callable[[dt.date], Window]:
    return lambda a: Window(a - dt.timedelta(days=n), a - dt.timedelta(days=n))


def _last_week(a: dt.date) -> Window:
    monday = a - dt.timedelta(days=a.weekday() + 7)
    return Window(monday, monday + dt.timedelta(days=6))


def _last_month(a: dt.date) -> Window:
    last = a.replace(day=1) - dt.timedelta(days=1)
    return Window(last.replace(day=1), last)


_RELATIVE: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], dt.date], Window]], ...] = (
    (re.compile(r"\bthe day before yesterday\b|前天", re.I), lambda m, a: _days_ago(2)(a)),
    (re.compile(r"\byesterday\b|昨天", re.I), lambda m, a: _days_ago(1)(a)),
    (re.compile(r"\btoday\b|今天", re.I), lambda m, a: _days_ago(0)(a)),
    (
        re.compile(r"\b(?P<n>\d{1,2}|one|two|three|four|five|six|seven) days? ago\b", re.I),
        lambda m, a: _days_ago(_EN_NUMBERS.get(m["n"].lower()) or int(m["n"]))(a),
    ),
    (
        re.compile(rf"(?P<n>{_CN})天(?:前|以前|之前)"),
        lambda m, a: _days_ago(_cn_int(m["n"]))(a),
    ),
    (re.compile(r"\blast week\b|上周|上星期|上个星期|上礼拜", re.I), lambda m, a: _last_week(a)),
    (re.compile(r"\blast month\b|上个月", re.I), lambda m, a: _last_month(a)),
)


def named_dates(text: str, as_of: float) -> list[When]:
    """The days, months and relative windows `text` names, in no particular order."""
    taken = [False] * len(text)
    out: list[When] = []

    def free(m: re.Match[str]) -> bool:
        if any(taken[m.start() : m.end()]):
            return False
        taken[m.start() : m.end()] = [True] * (m.end() - m.start())
        return True

    today = dt.datetime.fromtimestamp(as_of, dt.UTC).date()
    for pattern, resolve in _RELATIVE:
        for m in pattern.finditer(text):
            if free(m):
                out.append(resolve(m, today))
    for pattern, parse in _CALENDAR:
        for m in pattern.finditer(text):
            day = parse(m)
            if day is not None and free(m):
                out.append(day)
    return out


def utc_date(t: float) -> dt.date:
    return dt.datetime.fromtimestamp(t, dt.UTC).date()


def named_speakers(text: str, speakers: Iterable[str]) -> set[str]:
    """The speakers of `speakers` that `text` names (see the module's rules)."""
    out = set()
    for name in speakers:
        if not name.strip():
            continue
        if _CJK.search(name):
            if name in text:
                out.add(name)
        elif re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.I):
            out.add(name)
    return out
