"""The simulated use of `python -m bench lifecycle`: one user per language talking with an agent
for `days` days, laid out in time from a seed before anything runs, so that every row is given
the same world.

What is said is real text, none of it written here:
- episodes: MemoryBank's exchanges (`../shared/data/memorybank/`, `--memorybank PATH`), each of
  its user-days one session of turns (the user's query, speaker "user"; the companion's
  response, speaker "assistant"), the user-days shuffled and spread evenly over the run, up to
  `SESSIONS_PER_DAY` of them a day;
- facts that change and facts that hold side by side: the TUNE half of
  `bench/data/update_set.json` (never its report half), each case's `old` said first and its
  `new` `days_between` days later, the data's year scaled to the run (over 180 days the gaps are
  about half as long), as the kind (fact or preference) the case names;
- background facts: the set's distractors, said at times spread over the run; a third of them
  short-lived, with `expires_at` `EXPIRES_DAYS` after they are said (scaled to the run).

Every fact and preference carries a topic, as an agent would tag what it stores: the nearest of
`CATEGORIES` by meaning (`topic_of`) to its case's topic label, or, for a distractor, to its own
words. A category fills past `compress_after_count` within days, so compression fires.

A day's episode sessions start at 09:00, 12:00, 15:00...; their turns follow one another
`TURN_GAP` apart. The day's facts are said inside the day's sessions in time order (a day with
facts and no episodes gets a session of its own in the evening). A session ends by EndSession
(`EXPLICIT_END` of them) or is left idle for the hot TTL to end it. After its turns the user
asks up to `ASKS_PER_SESSION` questions about what holds now (a current or coexist question of a
case said before the session began): the agent's own Recalls, counted as accesses.

The questions a checkpoint asks at time `t` (`probes`), each with the item it asks for (the
target) and the item that must not outrank it (the rival, "" when none):
- `current`: an update's current questions: its `new` value once said (rival: `old`), before
  that its `old` value (no rival);
- `coexist`: a coexist pair's questions, for its `new` statement once said;
- `own`: a coexist pair's `old` statement asked in its own words, once said (it must stay
  findable: the new one does not replace it);
- `past`: an update's past questions, for its `old` value once the `new` one is said (asked with
  `include_obsolete`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from bench.update_data import DATA_PATH, Case, case_of

DAY = 86_400.0
START = datetime(2026, 1, 5, tzinfo=UTC).timestamp()  # the first day's midnight (a Monday)
DATA_YEAR_DAYS = 365.0  # the span the update set's gaps were written for
REFERENCE_DAYS = 180  # the run the issue asks for; shorter runs scale expiries and spacing
MEMORYBANK = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "memorybank"
MEMORYBANK_DIRS = {"en": "en", "zh": "cn"}  # a language → its MemoryBank directory
LANGS = ("en", "zh")
HALF = "tune"  # the only half this bench reads: the report half stays held out

FIRST_SESSION_HOUR = 9.0
SESSION_SPACING_HOURS = 3.0
SESSIONS_PER_DAY = 4  # episode sessions at most on one day (09:00 to 18:00)
FACTS_ONLY_HOUR = 20.0  # a day with facts and no episodes: its session starts then
TURN_GAP = (60.0, 180.0)  # seconds between two things said in a session
ASKS_PER_SESSION = 2  # 0..this many questions after a session's turns
EXPLICIT_END = 0.6  # the share of sessions ended by EndSession; the rest by the hot TTL
EXPIRING_SHARE = 1.0 / 3.0  # the distractors with an expiry
EXPIRES_DAYS = (7.0, 42.0)  # their lifetime after they are said (over a 180-day run)
CATEGORIES = (
    "health and fitness",
    "medical care and medicine",
    "work and career",
    "family and relatives",
    "home and housing",
    "food and drink",
    "travel and transport",
    "hobbies, music and entertainment",
    "money, banking and insurance",
    "shopping and services",
    "technology, software and devices",
    "pets and animals",
    "schedule and daily routine",
    "school and learning",
)

Group = Literal["current", "coexist", "own", "past"]
RELEVANT: tuple[Group, ...] = ("current", "coexist", "own")  # what holds now
TopicOf = Callable[[Sequence[str]], list[str]]  # texts → one of CATEGORIES each


@dataclass(frozen=True)
class Said:
    """One thing written during a session: a turn (an episode) or a fact or preference.
    `item`: `<case>:old`, `<case>:new`, `d:<lang>:<n>` (a distractor), `t:<lang>:<n>` (a turn)."""

    item: str
    text: str
    kind: str  # "episode", "fact" or "preference"
    speaker: str
    at: float
    topic: str = ""
    expires_at: float | None = None


@dataclass(frozen=True)
class Probe:
    """One question: its key (unique in the world), group, words, the item it asks for and the
    item that must not rank above it ("" when none)."""

    key: str
    lang: str
    group: Group
    text: str
    target: str
    rival: str

    @property
    def include_obsolete(self) -> bool:
        """A past question asks for a value that may be superseded."""
        return self.group == "past"


@dataclass(frozen=True)
class Session:
    lang: str
    session_id: str
    start: float
    said: tuple[Said, ...]
    asks: tuple[Probe, ...]  # asked after the last thing said
    explicit_end: bool

    @property
    def end(self) -> float:
        """When its last thing was said (or its start, when nothing was)."""
        return self.said[-1].at if self.said else self.start


@dataclass(frozen=True)
class World:
    days: int
    seed: int
    sessions: tuple[Session, ...]  # both languages, by start time
    cases: dict[str, tuple[Case, ...]]  # language → its cases
    said_at: dict[str, float] = field(default_factory=dict)  # item → when it was said
    texts: dict[str, str] = field(default_factory=dict)  # item → its words
    start: float = START

    def day_end(self, day: int) -> float:
        """Midnight after `day` (0-based)."""
        return self.start + (day + 1) * DAY

    def count(self, kind: str) -> int:
        return sum(1 for s in self.sessions for x in s.said if x.kind == kind)


@dataclass(frozen=True)
class Sources:
    """What a world is drawn from, per language."""

    cases: dict[str, tuple[Case, ...]]
    distractors: dict[str, tuple[str, ...]]
    user_days: dict[str, tuple[tuple[tuple[str, str], ...], ...]]  # (speaker, text) turns


def load_sources(memorybank: Path = MEMORYBANK, update_set: Path = DATA_PATH) -> Sources:
    """The update set's tune half and distractors, and MemoryBank's user-days, per language."""
    raw = json.loads(update_set.read_text(encoding="utf-8"))
    cases = {lang: tuple(case_of(c) for c in raw["halves"][HALF][lang]) for lang in LANGS}
    distractors = {lang: tuple(str(t) for t in raw["distractors"][lang]) for lang in LANGS}
    days: dict[str, tuple[tuple[tuple[str, str], ...], ...]] = {}
    for lang, sub in MEMORYBANK_DIRS.items():
        path = memorybank / sub / f"memory_bank_{sub}.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: MemoryBank's data (see --memorybank)")
        days[lang] = user_days(json.loads(path.read_text(encoding="utf-8")))
    return Sources(cases, distractors, days)


def user_days(bank: dict[str, Any]) -> tuple[tuple[tuple[str, str], ...], ...]:
    """Each user's each day as (speaker, text) turns, in the file's order (empty sides left
    out)."""
    out = []
    for user in bank.values():
        for exchanges in user["history"].values():
            turns = []
            for ex in exchanges:
                for speaker, key in (("user", "query"), ("assistant", "response")):
                    text = str(ex.get(key) or "").strip()
                    if text:
                        turns.append((speaker, text))
            if turns:
                out.append(tuple(turns))
    return tuple(out)


def probes(world: World, lang: str, t: float) -> list[Probe]:
    """The questions of `lang` that have an answer at time `t` (see the module's docstring)."""
    out: list[Probe] = []
    said = world.said_at

    def ask(c: Case, group: Group, texts: Sequence[str], target: str, rival: str = "") -> None:
        out.extend(
            Probe(f"{c.id}/{group}/{n}", lang, group, q, target, rival) for n, q in enumerate(texts)
        )

    for c in world.cases[lang]:
        old = said.get(c.old_item, float("inf")) <= t
        new = said.get(c.new_item, float("inf")) <= t
        if c.type == "update":
            if new:
                ask(c, "current", c.current, c.new_item, c.old_item)
                ask(c, "past", c.past, c.old_item)
            elif old:
                ask(c, "current", c.current, c.old_item)
        else:
            if new:
                ask(c, "coexist", c.current, c.new_item)
            if old:
                ask(c, "own", (c.old,), c.old_item)
    return out


@dataclass
class _Fact:
    item: str
    text: str
    kind: str
    day: float  # when, in days since the start (fractional)
    topic: str
    lifetime_days: float | None = None


def _facts(
    lang: str, src: Sources, days: int, rng: random.Random, topic_of: TopicOf
) -> list[_Fact]:
    cases = src.cases[lang]
    distractors = src.distractors[lang]
    case_topics = topic_of([c.topic for c in cases])
    dis_topics = topic_of(list(distractors))
    gap = days / DATA_YEAR_DAYS  # a data day in run days
    out: list[_Fact] = []
    for c, topic in zip(cases, case_topics, strict=True):
        between = min(c.days_between * gap, days * 0.9)
        old = rng.uniform(0.0, days - between)
        out.append(_Fact(c.old_item, c.old, c.kind, old, topic))
        out.append(_Fact(c.new_item, c.new, c.kind, min(old + between, days - 1e-6), topic))
    scale = days / REFERENCE_DAYS
    for n, (text, topic) in enumerate(zip(distractors, dis_topics, strict=True)):
        life = None
        if rng.random() < EXPIRING_SHARE:
            life = rng.uniform(*EXPIRES_DAYS) * scale
        out.append(_Fact(f"d:{lang}:{n}", text, "fact", rng.uniform(0.0, days), topic, life))
    return sorted(out, key=lambda f: f.day)


def _episode_days(n_sessions: int, days: int, rng: random.Random) -> list[int]:
    """The day of each of `n_sessions` episode sessions: spread evenly, jittered, at most
    `SESSIONS_PER_DAY` a day."""
    out: list[int] = []
    per_day: dict[int, int] = {}
    for j in range(n_sessions):
        day = min(int((j + rng.random()) * days / n_sessions), days - 1)
        while per_day.get(day, 0) >= SESSIONS_PER_DAY:  # full: the next day with room
            day = (day + 1) % days
        per_day[day] = per_day.get(day, 0) + 1
        out.append(day)
    return sorted(out)


def _language(
    lang: str,
    src: Sources,
    days: int,
    rng: random.Random,
    topic_of: TopicOf,
    rate: float | None,
) -> list[Session]:
    """One language's sessions, without their questions (they need every session's times)."""
    facts = _facts(lang, src, days, rng, topic_of)
    pool = list(src.user_days[lang])
    rng.shuffle(pool)
    per_day = len(pool) / REFERENCE_DAYS if rate is None else rate
    n_sessions = min(len(pool), round(per_day * days))
    episode_day = _episode_days(n_sessions, days, rng) if n_sessions else []
    by_day: dict[int, list[tuple[tuple[str, str], ...]]] = {}
    for day, turns in zip(episode_day, pool, strict=False):
        by_day.setdefault(day, []).append(turns)
    facts_on: dict[int, list[_Fact]] = {}
    for f in facts:
        facts_on.setdefault(min(int(f.day), days - 1), []).append(f)
    out: list[Session] = []
    turn_no = 0
    for day in range(days):
        episodes = by_day.get(day, [])
        todays = facts_on.get(day, [])
        if not episodes and not todays:
            continue
        midnight = START + day * DAY
        if episodes:
            starts = [FIRST_SESSION_HOUR + SESSION_SPACING_HOURS * k for k in range(len(episodes))]
        else:
            starts, episodes = [FACTS_ONLY_HOUR], [()]
        # the day's facts in time order, each in the session its hour falls in (the last
        # session takes the rest), at a random place among its turns
        share: list[list[_Fact]] = [[] for _ in episodes]
        for f in todays:
            hour = (f.day - day) * 24.0
            k = max([i for i, h in enumerate(starts) if h <= hour], default=0)
            share[k].append(f)
        for k, (turns, mine) in enumerate(zip(episodes, share, strict=True)):
            sid = f"{lang}-d{day:03d}-s{k}"
            slots = sorted(rng.randrange(len(turns) + 1) for _ in mine)
            seq: list[tuple[str, str, str, str, _Fact | None]] = []
            fi = 0
            for pos in range(len(turns) + 1):
                while fi < len(mine) and slots[fi] == pos:
                    f = mine[fi]
                    seq.append((f.item, f.text, f.kind, "user", f))
                    fi += 1
                if pos < len(turns):
                    speaker, text = turns[pos]
                    seq.append((f"t:{lang}:{turn_no}", text, "episode", speaker, None))
                    turn_no += 1
            start = midnight + starts[k] * 3600.0
            at = start
            said: list[Said] = []
            for item, text, kind, speaker, fact in seq:
                at += rng.uniform(*TURN_GAP)
                topic = fact.topic if fact is not None else ""
                expires = (
                    at + fact.lifetime_days * DAY
                    if fact is not None and fact.lifetime_days is not None
                    else None
                )
                said.append(Said(item, text, kind, speaker, at, topic, expires))
            out.append(Session(lang, sid, start, tuple(said), (), rng.random() < EXPLICIT_END))
    return out


def build(
    src: Sources,
    days: int,
    seed: int,
    topic_of: TopicOf,
    session_rate: float | None = None,
) -> World:
    """The world of `days` days from `seed`. `session_rate`: episode sessions a day (None:
    every user-day of the sources once over `REFERENCE_DAYS`, fewer in a shorter run)."""
    if days < 1:
        raise ValueError("days must be at least 1")
    rng = random.Random(seed)
    sessions: list[Session] = []
    for lang in LANGS:
        sessions.extend(_language(lang, src, days, rng, topic_of, session_rate))
    sessions.sort(key=lambda s: (s.start, s.lang))
    said_at = {x.item: x.at for s in sessions for x in s.said}
    texts = {x.item: x.text for s in sessions for x in s.said}
    world = World(days, seed, (), dict(src.cases), said_at, texts)
    asked: list[Session] = []
    for s in sessions:
        now = [p for p in probes(world, s.lang, s.start) if p.group in ("current", "coexist")]
        n = rng.randint(0, ASKS_PER_SESSION) if now else 0
        asks = tuple(rng.sample(now, min(n, len(now))))
        asked.append(Session(s.lang, s.session_id, s.start, s.said, asks, s.explicit_end))
    return World(days, seed, tuple(asked), dict(src.cases), said_at, texts)
