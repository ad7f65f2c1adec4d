"""A seeded memory world for the store-routing bench: four stores per user, and questions whose
gold is the minimal set of stores that answers them (as in "Did You Check the Right Pocket?
Cost-Sensitive Store Routing for Memory-Augmented Agents").

The world. Each user is one namespace, writing English or Chinese (users alternate: even indices
English, odd Chinese); every memory of a user is in the user's language. A user has about 16-22
everyday topics out of `TOPICS` (42: trips, renovations, a job search, the dog's vet visits, a
wedding, piano lessons, a car repair, ...). A topic has three or four kinds of detail (`Slot`: the
hotel, the flight time, the contractor's quote), each told in one user turn with a value drawn at
random (names, places, prices, times, dates). The stores:
- `transcript`: 20-40 past sessions over the last six months, 10-30 turns each, alternating user
  and assistant, on 1-3 topics each: a turn that opens the topic, one turn per detail, the
  assistant's replies, and small talk. A kind of detail of a topic is told in one past session
  only, so every past detail has one answer turn.
- `summary`: one summary per past session (2-4 sentences, the gist: which topics, which kinds of
  detail, never a value), dated at the session's end, with no session id.
- `session`: the current conversation, 8-16 turns between 5 and 120 minutes before `NOW` (for
  some users all of it is older than 30 minutes), on 2-3 topics, most of which the past sessions
  also discussed. Per topic it holds a kind of detail no past session has (`session_only`), and
  often one that a past session holds with another value (`shared`).
- `profile`: 12-20 facts and preferences in the third person (`ATTRS`: the sister's name, the
  seat preference, the usual coffee, ...), dated over the past months; 2-4 attributes changed
  over time, with an older and a newer memory, and only the newer one is the answer.
So one topic lives in several stores with different details: the current session names the Kyoto
restaurant, a past transcript the Kyoto hotel, a summary says the Kyoto trip was planned, the
profile says the user prefers small family-run inns. Some details are linked to an attribute
(a hotel to the preferred kind of accommodation, a flight to the seat preference), and the
user's profile holds the attributes linked to the current session.

The questions (`bench/data/routing_questions.json`: whole templates, each of the `tune` or the
`report` half, balanced per language and type). Types: `session`, `profile`, `summary`,
`transcript`, the two-store `summary+transcript`, `profile+session`, `session+transcript`,
`profile+summary`, and `none` (small talk, no store). A user's questions cycle through the types,
so the types are about equally frequent; about 10 % are asked in the other language than the
user's memories. A template's `pick` says what it is drawn from (see the file's "about"), so a
question's gold stores are where its answers lie, and its answers are memory ids: the detail
turn (session or transcript), the profile memory (the newest of a changed attribute), and every
summary of the topic. A wording that does not say which conversation it means ("remind me of the
hotel for the Kyoto trip", "how are my plans for the Kyoto trip shaping up") only draws a detail
or topic that the other conversation stores do not hold, so every question has one right set.
`load_templates` reads and checks the template file; `check(world)` lists what is wrong with a
world (ids, text lengths, answers outside the gold stores).

What favours a router: many questions carry cues ("a few minutes ago", "over the past months",
"in March", "the user's"), the session is recent and small, profile questions name an attribute,
summary questions ask for a gist and never a value. What makes it hard: cue-free paraphrases
("remind me of the hotel for the Kyoto trip" asked of the session, "tell me the hotel for the
Kyoto trip" of a transcript, in the same words); words that mislead a keyword rule ("earlier",
"before", "my", "之前", "我的" in profile, summary, transcript and none questions); the same topic
in every store with other details, and the same kind of detail in the session and a transcript
(with "back then" deciding); changed preferences; explicit time references that must be matched
against event times; cross-lingual questions; held-out templates; and `big`, a namespace whose
transcripts hold about `big` memories (filler sessions on the topics its core world does not
use, so its questions stay unambiguous).

`build(seed)` is deterministic for a seed; all questions are asked at `NOW`.
"""

from __future__ import annotations

import calendar
import json
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

STORES = ("session", "profile", "summary", "transcript")
STORE_COST = {"session": 1.0, "profile": 1.0, "summary": 3.0, "transcript": 5.0}
TYPES = (
    "session",
    "profile",
    "summary",
    "transcript",
    "summary+transcript",
    "profile+session",
    "session+transcript",
    "profile+summary",
    "none",
)
HALVES = ("tune", "report")
LANGS = ("en", "zh")
NOW = float(calendar.timegm((2026, 11, 20, 12, 0, 0)))  # 2026-11-20T12:00:00Z
DAY = 86_400.0
MINUTE = 60.0
CROSS_LINGUAL = 0.1  # the share of questions asked in the other language
TEMPLATES = Path(__file__).parent / "data" / "routing_questions.json"

T = TypeVar("T")

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@dataclass(frozen=True)
class Memory:
    id: str  # unique within the namespace
    store: str  # "session" | "profile" | "summary" | "transcript"
    kind: str  # "episode" | "fact" | "preference" | "summary"
    text: str
    created_at: float  # event time, seconds since the epoch (UTC)
    session_id: str  # "" when none
    turn: int  # position in its session, -1 when none
    speaker: str  # "user" / "assistant" / ""
    lang: str  # "en" | "zh"


@dataclass(frozen=True)
class Question:
    namespace: str
    text: str
    lang: str
    type: str  # one of TYPES
    template: str  # template id
    half: str  # "tune" | "report"
    stores: tuple[str, ...]  # the gold minimal store set, sorted
    answers: tuple[str, ...]  # memory ids holding the answer


@dataclass
class World:
    now: float  # the time every question is asked at
    memories: dict[str, list[Memory]]  # namespace -> its memories
    questions: list[Question]


# ---------------------------------------------------------------------------------------------
# Content, in `bench/data/routing_world.json`. Pairs are (English, Chinese). A value list that
# starts with "@" is drawn by a generator: @time, @eve (an evening time), @date, @wday,
# @num:lo:hi, @money:lo:hi (dollars in English, about seven times as many yuan in Chinese).

Bi = tuple[str, str]
BiList = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Slot:
    """A kind of detail of a topic: `noun` bare ("hotel"), `thing` with its context ("hotel for
    the Kyoto trip"), the values and the user's sentences that tell one ({v})."""

    key: str
    noun: Bi
    thing: Bi
    values: BiList
    says: BiList
    links: tuple[str, ...]  # profile attributes a value of it should fit


@dataclass(frozen=True)
class Topic:
    key: str
    name: Bi  # in questions and in the user's words
    about: Bi  # in the assistant's words and in summaries
    gist: Bi  # one summary sentence, without details
    slots: tuple[Slot, ...]


@dataclass(frozen=True)
class Attr:
    """A profile attribute: the note that states it ({v}), and the note of a changed value
    ("" where it does not change)."""

    key: str
    kind: str  # "fact" | "preference"
    noun: Bi
    values: BiList
    says: Bi
    changed: Bi


CONTENT = Path(__file__).parent / "data" / "routing_world.json"


def _pair(x: list[str]) -> Bi:
    return str(x[0]), str(x[1])


def _both(x: dict[str, list[str]]) -> BiList:
    return tuple(x["en"]), tuple(x["zh"])


def _per_lang(x: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    return {lang: tuple(v) for lang, v in x.items()}


@dataclass(frozen=True)
class Content:
    """The world's topics, profile attributes and the lines around them, by language: small
    talk (the user's line and the assistant's), the assistant's openers, replies and
    acknowledgements, and the sentences of summaries."""

    topics: tuple[Topic, ...]
    attrs: tuple[Attr, ...]
    small_talk: dict[str, tuple[Bi, ...]]
    lines: dict[str, dict[str, tuple[str, ...]]]


def load_content(path: Path = CONTENT) -> Content:
    """The world's content from `path` (`bench/data/routing_world.json`)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    topics = tuple(
        Topic(
            t["key"],
            _pair(t["name"]),
            _pair(t["about"]),
            _pair(t["gist"]),
            tuple(
                Slot(
                    s["key"],
                    _pair(s["noun"]),
                    _pair(s["thing"]),
                    _both(s["values"]),
                    _both(s["says"]),
                    tuple(s["links"]),
                )
                for s in t["slots"]
            ),
        )
        for t in doc["topics"]
    )
    attrs = tuple(
        Attr(
            a["key"],
            a["kind"],
            _pair(a["noun"]),
            _both(a["values"]),
            _pair(a["says"]),
            _pair(a["changed"]),
        )
        for a in doc["attrs"]
    )
    lines = {
        name: _per_lang(doc[name])
        for name in ("openers", "replies", "acks", "summary_open", "summary_close", "summary_slots")
    }
    talk = {lang: tuple(_pair(x) for x in pairs) for lang, pairs in doc["small_talk"].items()}
    return Content(topics, attrs, talk, lines)


_CONTENT = load_content()
TOPICS, ATTRS = _CONTENT.topics, _CONTENT.attrs
ATTR = {a.key: a for a in ATTRS}
_SMALL_TALK = _CONTENT.small_talk
_OPENERS = _CONTENT.lines["openers"]
_REPLIES = _CONTENT.lines["replies"]
_ACKS = _CONTENT.lines["acks"]
_SUMMARY_OPEN = _CONTENT.lines["summary_open"]
_SUMMARY_CLOSE = _CONTENT.lines["summary_close"]
_SUMMARY_SLOTS = _CONTENT.lines["summary_slots"]

_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "zh": ("周一", "周二", "周三", "周四", "周五", "周六", "周日"),
}
_EN_NUM = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_ZH_NUM = ("零", "一", "两", "三", "四", "五", "六", "七", "八", "九", "十")


# ---------------------------------------------------------------------------------------------
# Values.


def _clock(lang: str, rng: random.Random, lo: int, hi: int) -> str:
    h, m = rng.randint(lo, hi), rng.choice((0, 10, 15, 20, 30, 40, 45, 50))
    if lang == "en":
        return f"{(h - 1) % 12 + 1}:{m:02d} {'am' if h < 12 else 'pm'}"
    part = (
        "早上"
        if h < 9
        else "上午"
        if h < 12
        else "中午"
        if h < 14
        else "下午"
        if h < 18
        else "晚上"
    )
    h12 = h if h <= 12 else h - 12
    return f"{part}{h12}点" + ("" if m == 0 else "半" if m == 30 else f"{m}分")


def _money(lang: str, rng: random.Random, lo: int, hi: int) -> str:
    step = 10 ** max(0, len(str(hi)) - 2)
    n = max(step, round(rng.randint(lo, hi) / step) * step)
    if lang == "en":
        return f"{n:,} dollars"
    y = round(n * 7 / (step * 5)) * step * 5
    return f"{y / 10_000:g}万元" if y >= 10_000 else f"{y}元"


def _date(lang: str, rng: random.Random) -> str:
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    return f"{_MONTHS[month - 1]} {day}" if lang == "en" else f"{month}月{day}日"


def _value(spec: tuple[str, ...], lang: str, rng: random.Random) -> str:
    """One value of a slot: a choice from its list, or the output of its generator."""
    if not spec[0].startswith("@"):
        return rng.choice(spec)
    kind, *args = spec[0][1:].split(":")
    if kind == "time":
        return _clock(lang, rng, 6, 21)
    if kind == "eve":
        return _clock(lang, rng, 18, 21)
    if kind == "date":
        return _date(lang, rng)
    if kind == "wday":
        return rng.choice(_WEEKDAYS[lang])
    lo, hi = int(args[0]), int(args[1])
    return _money(lang, rng, lo, hi) if kind == "money" else str(rng.randint(lo, hi))


def _when(t: float, lang: str, rng: random.Random) -> str:
    """A time reference to `t`, as said at NOW: by month ("in March", "上个月") or relative ("two
    weeks ago", "大概三个月前"); one of those that are true, drawn at random."""
    then, now = time.gmtime(t), time.gmtime(NOW)
    back = (now.tm_year - then.tm_year) * 12 + now.tm_mon - then.tm_mon
    en, zh = [], []
    if back == 0:
        en.append("earlier this month")
        zh.append("这个月早些时候")
    elif back == 1:
        en.append("last month")
        zh.append("上个月")
    if 1 <= back <= 10:
        en.append(f"in {_MONTHS[then.tm_mon - 1]}")
        zh.append(f"{then.tm_mon}月份")
    days = (NOW - t) / DAY
    if days < 9:
        en.append("a few days ago")
        zh.append("前几天")
    elif days < 46:
        w = max(1, round(days / 7))
        en.append("last week" if w == 1 else f"{_EN_NUM[w]} weeks ago")
        zh.append("上周" if w == 1 else f"{_ZH_NUM[w]}周前")
    elif days < 320:
        m = round(days / 30.4)
        en.append(f"about {_EN_NUM[m]} months ago")
        zh.append(f"大概{_ZH_NUM[m]}个月前")
    return rng.choice(en if lang == "en" else zh)


# ---------------------------------------------------------------------------------------------
# The world of one user.


@dataclass(frozen=True)
class _Detail:
    topic: Topic
    slot: Slot
    mem: str  # the id of the turn that tells it
    time: float
    past: bool  # in a transcript (True) or in the current session


@dataclass
class _User:
    ns: str
    lang: str
    memories: list[Memory] = field(default_factory=list)
    session: list[_Detail] = field(default_factory=list)  # details of the current session
    past: list[_Detail] = field(default_factory=list)  # details of the past sessions
    summaries: dict[str, list[str]] = field(default_factory=dict)  # topic key -> summary ids
    current: set[str] = field(default_factory=set)  # topic keys of the current session
    profile: dict[str, str] = field(default_factory=dict)  # attr key -> its newest memory id
    topics: set[str] = field(default_factory=set)  # every topic key of the user

    @property
    def li(self) -> int:
        return LANGS.index(self.lang)


_Plan = list[tuple[Topic, list[Slot]]]  # a session's topics and the kinds of detail it tells
_Pair = tuple[str, str, tuple[Topic, Slot] | None]  # a user turn, the reply, the detail told


def _topic_pairs(
    topic: Topic, told: list[tuple[Slot, str]], lang: str, rng: random.Random, opener: bool = True
) -> list[_Pair]:
    """A topic's exchanges: an opening one (`opener`), then one per detail told."""
    li = LANGS.index(lang)
    pairs: list[_Pair] = []
    if opener:
        user = rng.choice(_OPENERS[lang]).format(topic=topic.name[li])
        pairs.append((user, rng.choice(_REPLIES[lang]).format(topic=topic.about[li]), None))
    for slot, v in told:
        say = rng.choice(slot.says[li]).format(v=v)
        pairs.append((say, rng.choice(_ACKS[lang]), (topic, slot)))
    return pairs


def _arrange(blocks: list[list[_Pair]], n_pairs: int, lang: str, rng: random.Random) -> list[_Pair]:
    """The topic blocks in order, with small-talk pairs around them up to `n_pairs` pairs."""
    extra = max(0, n_pairs - sum(len(b) for b in blocks))
    pool = _SMALL_TALK[lang]
    talk = (
        rng.sample(pool, extra) if extra <= len(pool) else [rng.choice(pool) for _ in range(extra)]
    )
    slots = sorted(rng.randint(0, len(blocks)) for _ in talk)
    out: list[_Pair] = []
    for i, block in enumerate(blocks):
        out.extend((u, a, None) for (u, a), s in zip(talk, slots, strict=True) if s == i)
        out.extend(block)
    out.extend((u, a, None) for (u, a), s in zip(talk, slots, strict=True) if s == len(blocks))
    return out


def _emit(
    u: _User,
    pairs: list[_Pair],
    store: str,
    sid: str,
    prefix: str,
    times: Sequence[float],
) -> list[_Detail]:
    """The turns of one session as memories; returns the details they tell."""
    told: list[_Detail] = []
    for j, (user, assistant, detail) in enumerate(pairs):
        for k, (speaker, text) in enumerate((("user", user), ("assistant", assistant))):
            turn = 2 * j + k
            mid = f"{prefix}{turn}"
            u.memories.append(
                Memory(mid, store, "episode", text, times[turn], sid, turn, speaker, u.lang)
            )
            if detail is not None and k == 0:
                told.append(_Detail(detail[0], detail[1], mid, times[turn], store == "transcript"))
    return told


def _summary(plan: _Plan, lang: str, rng: random.Random) -> str:
    """2-4 sentences of gist: which topics, which kinds of detail, never a value."""
    li = LANGS.index(lang)
    for attempt in range(8):
        parts = []
        for topic, slots in plan:
            if slots and rng.random() < 0.5 and attempt < 6:
                nouns = [s.noun[li] for s in slots[: 2 if len(plan) < 3 else 1]]
                joined = (" and the " if lang == "en" else "和").join(nouns)
                form = rng.choice(_SUMMARY_SLOTS[lang])
                parts.append(form.format(nouns=joined, about=topic.about[li]))
            else:
                parts.append(topic.gist[li])
        if len(plan) < 3 and rng.random() < 0.6:
            parts.insert(0, rng.choice(_SUMMARY_OPEN[lang]))
        if len(parts) < 2 or (len(parts) < 4 and rng.random() < 0.3):
            parts.append(rng.choice(_SUMMARY_CLOSE[lang]))
        text = (" " if lang == "en" else "").join(parts)
        if _length_ok(text, lang):
            return text
    return text


def _times(start: float, n: int, rng: random.Random, lo: float, hi: float) -> list[float]:
    out, t = [], start
    for _ in range(n):
        out.append(t)
        t += rng.uniform(lo, hi)
    return out


def _draw_other(spec: tuple[str, ...], lang: str, rng: random.Random, avoid: str) -> str:
    v = _value(spec, lang, rng)
    for _ in range(8):
        if v != avoid:
            break
        v = _value(spec, lang, rng)
    return v


def _past_session(
    u: _User,
    k: int,
    plan: _Plan,
    start: float,
    values: dict[tuple[str, str], str],
    rng: random.Random,
    track: bool = True,
) -> None:
    """Past session k: its turns (`transcript`) and its summary; `track`: record its details
    and summary for questions."""
    li = u.li
    blocks = []
    for topic, slots in plan:
        told = []
        for s in slots:
            v = _value(s.values[li], u.lang, rng)
            values[(topic.key, s.key)] = v
            told.append((s, v))
        blocks.append(_topic_pairs(topic, told, u.lang, rng))
    pairs = _arrange(blocks, rng.randint(5, 15), u.lang, rng)
    times = _times(start, 2 * len(pairs), rng, 30.0, 150.0)
    details = _emit(u, pairs, "transcript", f"{u.ns}-s{k}", f"t{k}-", times)
    mid = f"m{k}"
    text = _summary(plan, u.lang, rng)
    u.memories.append(
        Memory(mid, "summary", "summary", text, times[-1] + MINUTE, "", -1, "", u.lang)
    )
    if track:
        u.past.extend(details)
        for topic, _ in plan:
            u.summaries.setdefault(topic.key, []).append(mid)


def _linked(topic: Topic) -> bool:
    return any(s.links for s in topic.slots)


def _choose_topics(rng: random.Random) -> tuple[list[Topic], list[Topic], Topic | None]:
    """The user's past topics, the current session's recurring topics (2, the first with a
    linked kind of detail), and maybe one fresh topic of the current session only."""
    linked = [t for t in TOPICS if _linked(t)]
    first = rng.sample(linked, 3)
    rest = [t for t in TOPICS if t not in first]
    mine = first + rng.sample(rest, rng.randint(13, 19))
    current = [first[0], rng.choice(mine[1:])]
    fresh = rng.choice([t for t in TOPICS if t not in mine]) if rng.random() < 0.35 else None
    if fresh is None and rng.random() < 0.5:
        current.append(rng.choice([t for t in mine if t not in current]))
    return mine, current, fresh


def _reserve(
    current: list[Topic], fresh: Topic | None, rng: random.Random
) -> dict[str, list[Slot]]:
    """The kinds of detail only the current session tells, per topic."""
    out: dict[str, list[Slot]] = {}
    for i, topic in enumerate(current):
        slots = list(topic.slots)
        first = rng.choice([s for s in slots if s.links] if i == 0 else slots)
        more = [s for s in slots if s is not first]
        two = len(slots) >= 4 and rng.random() < 0.35
        out[topic.key] = [first] + (rng.sample(more, 1) if two else [])
    if fresh is not None:
        out[fresh.key] = rng.sample(list(fresh.slots), rng.randint(1, 2))
    return out


def _past_plans(
    mine: list[Topic], reserved: dict[str, list[Slot]], rng: random.Random
) -> list[_Plan]:
    """20-40 past sessions, 1-3 topics each, every topic at least once; a kind of detail of a
    topic is told in one session only, and never one reserved for the current session."""
    n = rng.randint(20, 40)
    sizes = [rng.choices((1, 2, 3), (3, 5, 2))[0] for _ in range(n)]
    topics: list[list[Topic]] = [[] for _ in range(n)]
    order = rng.sample(mine, len(mine))
    for i, topic in enumerate(order):
        topics[i % n].append(topic)
    for i in range(n):
        others = [t for t in mine if t not in topics[i]]
        topics[i] += rng.sample(others, max(0, sizes[i] - len(topics[i])))
    used: dict[str, set[str]] = {}
    plans: list[_Plan] = []
    for session in topics:
        plan: _Plan = []
        for topic in session:
            taken = used.setdefault(topic.key, {s.key for s in reserved.get(topic.key, [])})
            free = [s for s in topic.slots if s.key not in taken]
            slots = rng.sample(free, min(len(free), rng.choice((1, 1, 2))))
            taken.update(s.key for s in slots)
            plan.append((topic, slots))
        plans.append(plan)
    return plans


def _current_plan(
    current: list[Topic],
    fresh: Topic | None,
    reserved: dict[str, list[Slot]],
    past: dict[tuple[str, str], str],
    rng: random.Random,
) -> _Plan:
    """The current session: per topic its reserved kinds, and often one a past session told."""
    plan: _Plan = []
    for i, topic in enumerate(current):
        told = [s for s in topic.slots if (topic.key, s.key) in past]
        room = len(reserved[topic.key]) == 1 and (i == 0 or rng.random() < 0.7)
        shared = rng.sample(told, 1) if told and room else []
        plan.append((topic, reserved[topic.key] + shared))
    if fresh is not None:
        plan.insert(rng.randint(0, len(plan)), (fresh, reserved[fresh.key]))
    return plan


def _current_session(
    u: _User, k: int, plan: _Plan, past: dict[tuple[str, str], str], rng: random.Random
) -> None:
    """The current session: 8-16 turns (at most 3 topics of at most 2 details each, only the
    first opened), between 5 and 120 minutes before NOW."""
    li = u.li
    blocks = []
    for i, (topic, slots) in enumerate(plan):
        told = [
            (s, _draw_other(s.values[li], u.lang, rng, past.get((topic.key, s.key), "")))
            for s in slots
        ]
        blocks.append(_topic_pairs(topic, told, u.lang, rng, opener=i == 0))
    pairs = _arrange(blocks, max(rng.randint(4, 8), sum(len(b) for b in blocks)), u.lang, rng)
    start = NOW - rng.uniform(25.0, 120.0) * MINUTE
    end = NOW - rng.uniform(5.0, min(60.0, (NOW - start) / MINUTE - 15.0)) * MINUTE
    n = 2 * len(pairs)
    times = [start + (end - start) * i / (n - 1) for i in range(n)]
    u.session.extend(_emit(u, pairs, "session", f"{u.ns}-s{k}", "s", times))
    u.current.update(t.key for t, _ in plan)


def _profile(u: _User, need: set[str], rng: random.Random) -> None:
    """10-16 attributes, 2-4 of them changed (an older and a newer note; the newer answers)."""
    li = u.li
    rest = [a.key for a in ATTRS if a.key not in need]
    keys = sorted(need) + rng.sample(rest, max(0, rng.randint(10, 16) - len(need)))
    changeable = [k for k in keys if ATTR[k].changed[li]]
    changed = set(rng.sample(changeable, min(len(changeable), rng.randint(2, 4))))
    for i, key in enumerate(keys):
        a = ATTR[key]
        v = _value(a.values[li], u.lang, rng)
        mid = f"p{i}"
        if key in changed:
            old = NOW - rng.uniform(200.0, 400.0) * DAY
            text = a.says[li].format(v=v)
            u.memories.append(Memory(f"{mid}a", "profile", a.kind, text, old, "", -1, "", u.lang))
            v = _draw_other(a.values[li], u.lang, rng, v)
            t, text = NOW - rng.uniform(5.0, 150.0) * DAY, a.changed[li].format(v=v)
        else:
            t, text = NOW - rng.uniform(20.0, 330.0) * DAY, a.says[li].format(v=v)
        u.memories.append(Memory(mid, "profile", a.kind, text, t, "", -1, "", u.lang))
        u.profile[key] = mid


def _needed_attrs(plan: _Plan, mine: list[Topic], rng: random.Random) -> set[str]:
    """Attributes linked to the details of the current session, and to some past topics."""
    need: set[str] = {link for _, slots in plan for s in slots for link in s.links}
    for topic in mine:
        links = sorted({link for s in topic.slots for link in s.links})
        if links and rng.random() < 0.5:
            need.add(rng.choice(links))
    return need


def _user(ns: str, lang: str, rng: random.Random) -> _User:
    u = _User(ns, lang)
    mine, current, fresh = _choose_topics(rng)
    u.topics = {t.key for t in mine} | ({fresh.key} if fresh else set())
    reserved = _reserve(current, fresh, rng)
    plans = _past_plans(mine, reserved, rng)
    starts = sorted(NOW - rng.uniform(1.0, 183.0) * DAY for _ in plans)
    values: dict[tuple[str, str], str] = {}
    for k, (plan, start) in enumerate(zip(plans, starts, strict=True)):
        _past_session(u, k, plan, start, values, rng)
    now_plan = _current_plan(current, fresh, reserved, values, rng)
    _current_session(u, len(plans), now_plan, values, rng)
    _profile(u, _needed_attrs(now_plan, mine, rng), rng)
    return u


def _filler(u: _User, total: int, rng: random.Random) -> None:
    """Past sessions on the topics the user's core world does not use, until the transcripts
    hold about `total` memories; their details and summaries are never asked about."""
    pool = [t for t in TOPICS if t.key not in u.topics]
    count = sum(1 for m in u.memories if m.store == "transcript")
    k = 1 + max(int(m.session_id.rsplit("-s", 1)[1]) for m in u.memories if m.session_id)
    values: dict[tuple[str, str], str] = {}
    while count < total:
        topics = rng.sample(pool, rng.choices((1, 2, 3), (3, 5, 2))[0])
        plan: _Plan = [(t, rng.sample(list(t.slots), rng.randint(1, 2))) for t in topics]
        before = len(u.memories)
        _past_session(u, k, plan, NOW - rng.uniform(1.0, 730.0) * DAY, values, rng, track=False)
        count += len(u.memories) - before - 1
        k += 1


# ---------------------------------------------------------------------------------------------
# Templates and questions.


@dataclass(frozen=True)
class Template:
    id: str
    lang: str
    type: str
    half: str
    stores: tuple[str, ...]
    texts: tuple[str, ...]
    detail: str  # "" or a detail kind (see the template file's "about")
    detail2: str
    topic: str  # "" | "past" | "past_only"
    attr: str  # "" | "any" | "link" | "list"
    attrs: tuple[str, ...]


_DETAILS = ("session_only", "session_any", "past_only", "past_any", "shared")


def _gold(qtype: str) -> tuple[str, ...]:
    return () if qtype == "none" else tuple(sorted(qtype.split("+")))


def _fields(t: Template) -> set[str]:
    """The placeholders a template's picks can fill."""
    out: set[str] = set()
    if t.detail:
        out |= {"thing", "noun", "topic", "about"}
        if t.detail in ("past_only", "past_any", "shared"):
            out.add("when")
    elif t.topic:
        out |= {"topic", "about"}
    if t.detail2:
        out.add("thing2")
    if t.attr:
        out.add("attr")
    return out


def _template(raw: dict[str, object]) -> Template:
    pick = raw.get("pick", {})
    assert isinstance(pick, dict)
    texts = raw["texts"]
    stores = raw["stores"]
    assert isinstance(texts, list) and isinstance(stores, list)
    t = Template(
        id=str(raw["id"]),
        lang=str(raw["lang"]),
        type=str(raw["type"]),
        half=str(raw["half"]),
        stores=tuple(sorted(str(s) for s in stores)),
        texts=tuple(str(x) for x in texts),
        detail=str(pick.get("detail", "")),
        detail2=str(pick.get("detail2", "")),
        topic=str(pick.get("topic", "")),
        attr=str(pick.get("attr", "")),
        attrs=tuple(str(a) for a in pick.get("attrs", [])),
    )
    _validate(t)
    return t


def _validate(t: Template) -> None:
    problems = []
    if t.lang not in LANGS or t.type not in TYPES or t.half not in HALVES:
        problems.append("lang, type or half")
    if t.stores != _gold(t.type):
        problems.append(f"stores {t.stores} for type {t.type}")
    if t.detail not in ("", *_DETAILS) or t.detail2 not in ("", "past_only", "past_any"):
        problems.append("detail")
    if t.attr not in ("", "any", "link", "list") or t.topic not in ("", "past", "past_only"):
        problems.append("attr or topic")
    if t.attr == "list" and (not t.attrs or not all(a in ATTR for a in t.attrs)):
        problems.append("attrs")
    if not t.texts:
        problems.append("no texts")
    extra = {p for x in t.texts for p in _PLACEHOLDER.findall(x)} - _fields(t)
    if extra:
        problems.append(f"placeholders {sorted(extra)} not filled by its pick")
    if problems:
        raise ValueError(f"template {t.id}: {'; '.join(problems)}")


def load_templates(path: Path | None = None) -> list[Template]:
    """The question templates of `path` (default: `TEMPLATES`), checked."""
    data = json.loads((path or TEMPLATES).read_text(encoding="utf-8"))
    if data.get("format") != 1:
        raise ValueError(f"{path}: unknown format {data.get('format')!r}")
    out = [_template(raw) for raw in data["templates"]]
    ids = [t.id for t in out]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate template ids")
    return out


def _detail_candidates(
    kind: str, u: _User, past_only_topic: bool
) -> list[tuple[_Detail, _Detail | None]]:
    past_keys = {(d.topic.key, d.slot.key): d for d in u.past}
    now_keys = {(d.topic.key, d.slot.key) for d in u.session}
    out: list[tuple[_Detail, _Detail | None]]
    if kind == "session_only":
        out = [(d, None) for d in u.session if (d.topic.key, d.slot.key) not in past_keys]
    elif kind == "session_any":
        out = [(d, None) for d in u.session]
    elif kind == "past_only":
        out = [(d, None) for d in u.past if (d.topic.key, d.slot.key) not in now_keys]
    elif kind == "past_any":
        out = [(d, None) for d in u.past]
    else:  # shared
        out = [
            (d, past_keys[k]) for d in u.session if (k := (d.topic.key, d.slot.key)) in past_keys
        ]
    if past_only_topic:
        out = [c for c in out if c[0].topic.key not in u.current]
    return out


def _linked_attrs(u: _User, slots: Sequence[Slot]) -> list[str]:
    return sorted({a for s in slots for a in s.links if a in u.profile})


def _pick_attr(t: Template, u: _User, slots: Sequence[Slot], rng: random.Random) -> str | None:
    if t.attr == "any":
        keys = sorted(u.profile)
    elif t.attr == "link":
        keys = _linked_attrs(u, slots)
    else:
        keys = [a for a in t.attrs if a in u.profile]
    return rng.choice(keys) if keys else None


_BY_KEY = {t.key: t for t in TOPICS}


def _pick_topic(t: Template, u: _User, rng: random.Random) -> Topic | None:
    keys = sorted(k for k in u.summaries if t.topic != "past_only" or k not in u.current)
    if t.attr == "link":
        keys = [k for k in keys if _linked_attrs(u, _BY_KEY[k].slots)]
    return _BY_KEY[rng.choice(keys)] if keys else None


def _render(text: str, fill: dict[str, str], lang: str) -> str:
    """The text with its placeholders filled; in English capitalised, in Chinese with "我的妹妹的
    名字" read as "我妹妹的名字"."""
    out = text.format_map(fill)
    if lang == "en":
        return out[0].upper() + out[1:]
    attr = fill.get("attr", "")
    return out.replace("的" + attr, attr) if "的" in attr else out


def _instantiate(t: Template, u: _User, rng: random.Random) -> Question | None:
    """One question of template `t` about user `u`, or None where `u` has nothing it asks."""
    li = LANGS.index(t.lang)
    fill: dict[str, str] = {}
    answers: list[str] = []
    topic: Topic | None = None
    slots: Sequence[Slot] = ()
    if t.detail:
        found = _detail_candidates(t.detail, u, t.topic == "past_only")
        if t.attr == "link":
            found = [c for c in found if _linked_attrs(u, (c[0].slot,))]
        if not found:
            return None
        d, also = rng.choice(found)
        topic, slots = d.topic, (d.slot,)
        fill |= {"thing": d.slot.thing[li], "noun": d.slot.noun[li]}
        answers += [d.mem] + ([also.mem] if also else [])
        dated = also or (d if d.past else None)
        if dated is not None:
            fill["when"] = _when(dated.time, t.lang, rng)
    elif t.topic:
        topic = _pick_topic(t, u, rng)
        if topic is None:
            return None
        slots = topic.slots
    if topic is not None:
        fill |= {"topic": topic.name[li], "about": topic.about[li]}
    if t.detail2:
        others = [c for c, _ in _detail_candidates(t.detail2, u, False) if c.topic is not topic]
        if not others:
            return None
        d2 = rng.choice(others)
        fill["thing2"] = d2.slot.thing[li]
        answers.append(d2.mem)
    if t.attr:
        key = _pick_attr(t, u, slots, rng)
        if key is None:
            return None
        fill["attr"] = ATTR[key].noun[li]
        answers.append(u.profile[key])
    if "summary" in t.stores and topic is not None:
        answers += u.summaries[topic.key]
    text = _render(rng.choice(t.texts), fill, t.lang)
    return Question(u.ns, text, t.lang, t.type, t.id, t.half, t.stores, tuple(sorted(set(answers))))


def _questions(
    u: _User, by: dict[tuple[str, str], list[Template]], n: int, offset: int, rng: random.Random
) -> list[Question]:
    """`n` questions cycling through the types; about CROSS_LINGUAL of them in the other
    language; no text twice for one user."""
    other = LANGS[1 - u.li]
    out: list[Question] = []
    seen: set[str] = set()
    for i in range(n):
        qtype = TYPES[(i + offset) % len(TYPES)]
        lang = other if rng.random() < CROSS_LINGUAL else u.lang
        for _ in range(30):
            q = _instantiate(rng.choice(by[(lang, qtype)]), u, rng)
            if q is not None and q.text not in seen:
                seen.add(q.text)
                out.append(q)
                break
    return out


# ---------------------------------------------------------------------------------------------
# The world.


def build(
    seed: int = 0,
    users: int = 16,
    questions_per_user: int = 40,
    big: int = 0,
    templates: Path | None = None,
) -> World:
    """The world of `users` namespaces ("u00", ...: even English, odd Chinese) and, with `big`,
    one more ("big", English for an even seed, Chinese for an odd one) whose transcripts hold
    about `big` memories; `questions_per_user` questions in each."""
    by: dict[tuple[str, str], list[Template]] = {}
    for t in load_templates(templates):
        by.setdefault((t.lang, t.type), []).append(t)
    missing = [(lang, q) for lang in LANGS for q in TYPES if (lang, q) not in by]
    if missing:
        raise ValueError(f"no templates for {missing}")
    made: list[_User] = []
    for i in range(users):
        made.append(_user(f"u{i:02d}", LANGS[i % 2], random.Random(f"{seed}:u{i:02d}")))
    if big > 0:
        rng = random.Random(f"{seed}:big")
        u = _user("big", LANGS[seed % 2], rng)
        _filler(u, big, rng)
        made.append(u)
    memories: dict[str, list[Memory]] = {}
    questions: list[Question] = []
    for i, u in enumerate(made):
        memories[u.ns] = sorted(u.memories, key=lambda m: (m.created_at, m.id))
        rng = random.Random(f"{seed}:{u.ns}:questions")
        questions += _questions(u, by, questions_per_user, i, rng)
    return World(NOW, memories, questions)


# ---------------------------------------------------------------------------------------------
# Checks.


def _length_ok(text: str, lang: str) -> bool:
    if lang == "en":
        return 8 <= len(text.split()) <= 40
    return 10 <= len(text) <= 60


def check(world: World) -> list[str]:
    """What is wrong with a world: ids not unique, texts out of length or language, answers
    missing or in other stores than the gold set."""
    problems: list[str] = []
    for ns, mems in world.memories.items():
        store = {m.id: m.store for m in mems}
        if len(store) != len(mems):
            problems.append(f"{ns}: duplicate memory ids")
        for m in mems:
            if not _length_ok(m.text, m.lang) or bool(_CJK.search(m.text)) != (m.lang == "zh"):
                problems.append(f"{ns}/{m.id} ({m.lang}, {m.store}): {m.text!r}")
        for q in (q for q in world.questions if q.namespace == ns):
            got = {store.get(a, "?") for a in q.answers}
            if got != set(q.stores):
                problems.append(f"{ns} {q.template}: answers in {sorted(got)}, gold {q.stores}")
    return problems


def store_cost(stores: Iterable[str]) -> float:
    """What searching `stores` costs (`STORE_COST`): the one price list of every row."""
    return sum(STORE_COST[s] for s in stores)


def coverage_and_cost(
    questions: Sequence[Question], chosen: Sequence[set[str]]
) -> tuple[float, float]:
    """The share of `questions` whose gold stores are all in their chosen store set, and the mean
    store cost (`store_cost`) of the sets."""
    if not questions:
        return 0.0, 0.0
    covered = sum(set(q.stores) <= c for q, c in zip(questions, chosen, strict=True))
    cost = sum(store_cost(c) for c in chosen)
    return covered / len(questions), cost / len(questions)


def cheapest_reaching(options: Sequence[tuple[float, float, T]], target: float) -> T:
    """Of (coverage, store cost, choice) options, the cheapest choice whose coverage reaches
    `target`; when none does, the one that covers most (the cheapest of those)."""
    reaching = [o for o in options if o[0] >= target]
    if reaching:
        return min(reaching, key=lambda o: (o[1], -o[0]))[2]
    return min(options, key=lambda o: (-o[0], o[1]))[2]


Printer = Callable[[str], None]


def _report(world: World, out: Printer = print) -> None:
    from collections import Counter

    mems = [m for ms in world.memories.values() for m in ms]
    out(f"memories by store: {dict(Counter(m.store for m in mems))}")
    qs = world.questions
    out(f"questions: {len(qs)}; by type: {dict(Counter(q.type for q in qs))}")
    out(f"by lang: {dict(Counter(q.lang for q in qs))}")
    out(f"by half: {dict(Counter(q.half for q in qs))}")


if __name__ == "__main__":
    w = build(seed=0)
    _report(w)
    for p in check(w)[:40]:
        print("PROBLEM", p)
