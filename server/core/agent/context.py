"""The context builder (seed 000 §3.1, §3.3; 001 §3.3): the prompt payload of one round, within
the route's `token_budget_round`, with token counts from the real tokenizer.

What goes in, by priority (what is cut first is last here):
1. the task's goal, and the user's current message;
2. the last `recent_rounds` rounds (3): action and observation, the last round's observation
   whole when it is short (`verbatim_tokens`), the others as their summaries by the round's
   focus (`summary_tokens`). A summary that left out a sentence naming one of the focus's
   identifiers points to the full text (stored once as a memory by the `store` callback, which
   `Get` fetches); one that kept them all has no pointer, since a pointer invites a model call
   with the whole output in it;
3. the recalled memories, the best that fit, shown oldest first, each with its source type,
   trust and date, as its extractive summary (`memory_tokens`; the full text is one `Get`
   away); those the task's own rounds hold are left out;
4. older rounds, one extractive line each (newest first when the budget is short).
An action reads as a call, `tool(key=value, …)`, not as its JSON. The sections come in the
order goal, memories, older rounds, recent rounds, the user's current message: what changes
every round last, so consecutive prompts of a task share a long head (a provider's prompt
cache reuses it). Memory enters as recalled results, never as the full history. When the
budget is short, older rounds go first, then the weakest memories, then recent observations
shrink to their summaries, then the earliest recent rounds go, and last the goal and the last
round are cut to what fits.

An extractive summary keeps whole sentences (or lines) in their order, each once, chosen by what
the round is about (its `focus`: the goal's, the user's current and recent words, the agent's
recent actions): first those that share the most of its words, an identifier counting as
`ID_WEIGHT` (a log's line six that names the ticket the user asks about), then the first
sentence, then those that carry an identifier or a number (error codes, order ids, amounts),
while they fit. An older round's one line has no focus (it is the same every round). A recalled
memory's line says when it was written, and points to its full text when its summary is
shorter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from server.core.agent.ports import TokenCount
from server.core.clock import utc
from server.core.memo import TextMemo


def _day(t: float) -> str:
    return utc(t).strftime("%Y-%m-%d")


_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")
_SIGNAL = re.compile(r"\d|[A-Z]{2,}|#\w+|[A-Za-z]+-\d+")
# A focus word: an identifier (T-4411, FIX-77), a Latin word of three letters or more, or two
# CJK characters in a row.
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z0-9]+)+|[A-Za-z0-9]{3,}|[\u3400-\u9fff]{2}")
ID_WEIGHT = 4
_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "you",
        "your",
        "this",
        "that",
        "what",
        "was",
        "were",
        "are",
        "have",
        "has",
        "had",
        "not",
        "but",
        "from",
        "they",
        "them",
        "their",
        "there",
        "here",
        "when",
        "which",
        "who",
        "how",
        "can",
        "could",
        "would",
        "should",
        "please",
        "thanks",
        "thank",
        "will",
        "just",
        "about",
        "into",
        "than",
        "then",
        "also",
        "been",
        "being",
        "does",
        "did",
        "done",
        "its",
        "it's",
        "i'm",
        "i've",
        "i'd",
    ]
)


def _weight(words: frozenset[str]) -> int:
    """How much a sentence's focus words say: an identifier (letters with digits: the ticket
    T-4411) names the one thing asked about, a plain word or number only its topic."""
    return sum(ID_WEIGHT if is_id(w) else 1 for w in words)


def is_id(word: str) -> bool:
    """Letters and digits together (T-4411, fix-872, e42), not a bare number or date."""
    return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)


def focus_words(*texts: str) -> frozenset[str]:
    """The words a summary is chosen by (see the module docstring)."""
    out: set[str] = set()
    for t in texts:
        out.update(w for w in (m.lower() for m in _WORD.findall(t)) if w not in _COMMON)
    return frozenset(out)


@dataclass(frozen=True)
class Turn:
    """One reported round: what the user said, what the agent did, what it observed."""

    round: int
    action: str
    observation: str
    user: str = ""

    def head(self) -> str:
        said = f"User: {self.user}\n" if self.user else ""
        return f"Round {self.round}: {said}{action_line(self.action)}".rstrip()


def action_line(action: str) -> str:
    """An action as a call reads: `tool(key=value, …)`, or `finish: answer`; an action that is
    not the JSON of one (a client's own notation) as it came. The JSON's quotes and keys cost
    a prompt about 20 tokens an action, every round it stays in the context."""
    try:
        a = json.loads(action)
    except ValueError:
        return action
    if not isinstance(a, dict):
        return action
    if a.get("type") == "tool" and isinstance(a.get("params", {}), dict):
        params = ", ".join(f"{k}={_value(v)}" for k, v in a.get("params", {}).items())
        return f"{a.get('tool', '')}({params})"
    if a.get("type") == "finish":
        return f"finish: {_value(a.get('answer', ''))}"
    return action


def _value(v: object) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


@dataclass(frozen=True)
class Recalled:
    memory_id: str
    text: str
    score: float
    source_type: str
    trust: float
    created_at: float = 0.0  # when it was said or written (0: unknown)


@dataclass(frozen=True)
class Section:
    kind: str  # "goal", "round", "memory", "summary"
    text: str
    tokens: int
    round: int = 0
    memory_id: str = ""
    at: float = 0.0  # a memory's event time


@dataclass
class Built:
    sections: list[Section] = field(default_factory=list)
    tokens: int = 0
    dropped: list[str] = field(default_factory=list)  # what did not fit, for the agent's log
    # round → memory id of its stored observation (those passed in as `known` too)
    stored: dict[int, str] = field(default_factory=dict)

    def text(self) -> str:
        return "\n".join(s.text for s in self.sections)


@dataclass(frozen=True)
class ContextSettings:
    recent_rounds: int = 3
    # The last round's observation up to this size is shown whole; the others as summaries.
    verbatim_tokens: int = 150
    summary_tokens: int = 60
    older_line_tokens: int = 30
    memory_tokens: int = 60  # a recalled memory enters as its extractive summary


def summarize(
    text: str, max_tokens: int, count: Callable[[str], int], focus: frozenset[str] = frozenset()
) -> str:
    """Whole sentences, in order, within `max_tokens`: those sharing the most `focus` words,
    then the first, then those with a signal."""
    return gist(text, max_tokens, count, focus).text


@dataclass(frozen=True)
class Gist:
    """An extractive summary, and whether it kept every sentence that names one of the focus's
    identifiers (then the full text holds nothing more about what the round is about)."""

    text: str
    complete: bool


@dataclass(frozen=True)
class Parsed:
    """A text's sentences (each once, in order), each one's words, and whether it carries a
    signal (a digit, an acronym, an identifier): what a summary of it is chosen from, for any
    focus and size."""

    sentences: tuple[str, ...]
    words: tuple[frozenset[str], ...]
    signal: tuple[bool, ...]


def parse(text: str) -> Parsed:
    sentences = tuple(dict.fromkeys(s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()))
    return Parsed(
        sentences,
        tuple(frozenset(w.lower() for w in _WORD.findall(s)) for s in sentences),
        tuple(_SIGNAL.search(s) is not None for s in sentences),
    )


def gist(
    text: str,
    max_tokens: int,
    count: Callable[[str], int],
    focus: frozenset[str] = frozenset(),
    parsed: Parsed | None = None,
) -> Gist:
    """`summarize`, saying whether it is complete on the focus's identifiers: every sentence
    naming one is kept; when the focus names none, whether every sentence is (`parsed`: the
    text's `parse`, when it is at hand)."""
    p = parsed or parse(text)
    sentences = p.sentences
    if not sentences:
        return Gist("", True)
    words = [focus & w for w in p.words]
    shared = [_weight(w) for w in words]
    if any(is_id(w) for w in focus):
        named = {i for i, w in enumerate(words) if any(is_id(x) for x in w)}
    else:  # nothing tells what matters in it: complete only when whole
        named = set(range(len(sentences)))
    on_focus = sorted((i for i, n in enumerate(shared) if n), key=lambda i: (-shared[i], i))
    rest = [0] + [i for i in range(1, len(sentences)) if p.signal[i]]
    keep = list(dict.fromkeys([*on_focus, *rest]))
    out: list[int] = []
    used = 0
    for i in keep:
        n = count(sentences[i])
        if used + n > max_tokens:
            if not out:  # the first sentence alone is too long: cut it by words
                return Gist(_cut(sentences[i], max_tokens, count), False)
            continue
        out.append(i)
        used += n
    return Gist(" ".join(sentences[i] for i in sorted(out)), named <= set(out))


class Summaries:
    """`gist` remembered (`TextMemo`): the context builder summarizes a task's turns and
    memories again each round, and a summary is a pure function of the text, the size and the
    focus. The focus changes every round, so a text's `parse` (its sentences and their words)
    is remembered apart: a summary for a new focus only intersects word sets. Each tenant
    (`part`) has its own summaries and token counts."""

    def __init__(self, count: TokenCount, size: int = 4096) -> None:
        self._parsed: TextMemo[Parsed] = TextMemo(parse, size)
        self._memo: TextMemo[Gist] = TextMemo(
            lambda t, n, f, p: gist(t, n, partial(count, part=p), f, self._parsed(t, part=p)),
            size,
        )

    def __call__(
        self, text: str, max_tokens: int, focus: frozenset[str] = frozenset(), part: str = ""
    ) -> str:
        return self.gist(text, max_tokens, focus, part).text

    def gist(
        self, text: str, max_tokens: int, focus: frozenset[str] = frozenset(), part: str = ""
    ) -> Gist:
        return self._memo(text, max_tokens, focus, part, part=part)


def _cut(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """The longest head of `text` (by words, or by characters where there are no spaces) that
    fits `max_tokens` with its " …"; "" when not even that fits."""
    if count(text) <= max_tokens:
        return text
    words = text.split()
    parts, glue = (words, " ") if len(words) > 1 else (list(text), "")
    lo, hi = 0, len(parts)
    while lo < hi:  # the most parts that fit
        mid = (lo + hi + 1) // 2
        if count(glue.join(parts[:mid]) + " …") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return glue.join(parts[:lo]) + " …" if lo else ""


class ContextBuilder:
    def __init__(
        self,
        count: Callable[[str], int],
        store: Callable[[Turn], str],
        settings: ContextSettings | None = None,
        summaries: Summaries | None = None,
        part: str = "",
    ) -> None:
        """`count`: tokens of a text; `store`: keeps a long observation in memory and returns
        its memory id ("" when memory cannot store it); `summaries`: kept summaries to share
        between builds (the same count); `part`: the tenant whose summaries these are."""
        self._count = count
        self._store = store
        self._s = settings or ContextSettings()
        self._summaries = summaries or Summaries(lambda text, part="": count(text))
        self._part = part
        self._focus: frozenset[str] = frozenset()  # the build's (`focus_words`)

    def build(
        self,
        goal: str,
        turns: Sequence[Turn],
        memories: Sequence[Recalled],
        budget: int,
        known: Mapping[int, str] | None = None,
        current: str = "",
    ) -> Built:
        """`known`: the memory ids of observations stored as memories (by earlier builds, or as
        key events), by round: a long observation is stored once, not once per round it stays
        recent, and a recalled memory that is a round's observation shown whole is not shown
        again."""
        s, out = self._s, Built()
        out.stored = dict(known or {})  # the ones reused count as stored
        ordered = sorted(turns, key=lambda t: t.round)
        k = min(max(s.recent_rounds, 1), len(ordered))
        recent, older = ordered[len(ordered) - k :], ordered[: len(ordered) - k]
        self._focus = focus_words(goal, current, *(x for t in recent for x in (t.user, t.action)))
        goal_s = self._section("goal", f"Goal: {goal}")
        now_s = self._section("current", f"User now: {current}" if current else "")
        rounds = [self._recent(t, out, t is recent[-1]) for t in recent]
        mems, held = self._memories(memories, older, recent, out.stored, current)
        lines = [self._older(t) for t in reversed(older)]  # newest first: cut from the oldest

        def total() -> int:  # cut by priority until it fits
            return sum(x.tokens for x in [goal_s, *rounds, *mems, *lines, now_s])

        while lines and total() > budget:
            out.dropped.append(f"round {lines.pop().round} (summary)")
        shown = {x.round for x in lines}
        for m, by in held:  # left out for an older line that did not fit: shown after all
            if by not in shown and total() + m.tokens <= budget:
                mems.append(m)
        while mems and total() > budget:
            out.dropped.append(f"memory {mems.pop().memory_id}")
        for i, t in enumerate(recent):
            if total() <= budget:
                break
            short = self._summarised(t, out, s.summary_tokens)
            if short.tokens < rounds[i].tokens:
                rounds[i] = short
                out.dropped.append(f"round {t.round} (verbatim observation)")
        while len(rounds) > 1 and total() > budget:  # the earliest recent rounds, whole
            out.dropped.append(f"round {rounds.pop(0).round}")
        if total() > budget:  # the goal, to what is left beside the last round
            room = max(budget - total() + goal_s.tokens, 1)
            goal_s = self._section("goal", _cut(goal_s.text, room, self._count))
        if rounds and total() > budget:  # and last, the last round itself
            room = max(budget - total() + rounds[-1].tokens, 1)
            last = rounds[-1]
            rounds[-1] = self._section("round", _cut(last.text, room, self._count), last.round)
        # The memories that fit, oldest first, as a transcript reads: the newest of two
        # preferences that disagree is the last said. What changes every round (the rounds,
        # the user's message) comes last, so a task's prompts share the longest head.
        mems.sort(key=lambda m: m.at)
        out.sections = [x for x in [goal_s, *mems, *reversed(lines), *rounds, now_s] if x.text]

        # The counts of the parts need not add up to the count of the whole (the joins, and
        # tokens across them): check the whole, and cut until it fits.
        def whole() -> int:
            return self._count(out.text()) if out.sections else 0

        out.tokens = whole()
        while out.tokens > budget:
            if len(out.sections) > 1:
                gone = out.sections.pop(1 if out.sections[0].kind == "goal" else 0)
                out.dropped.append(f"{gone.kind} {gone.round or gone.memory_id}".strip())
            else:
                only = out.sections[0]
                cut = _cut(only.text, budget, self._count)
                out.sections = (
                    [self._section(only.kind, cut, only.round, only.memory_id)] if cut else []
                )
            out.tokens = whole()
        return out

    def _memories(
        self,
        memories: Sequence[Recalled],
        older: Sequence[Turn],
        recent: Sequence[Turn],
        stored: Mapping[int, str],
        current: str,
    ) -> tuple[list[Section], list[tuple[Section, int]]]:
        """The recalled memories, best first, each once: one that is already in the prompt
        whole (in this round's input, a recent round's input or observation) or in a better
        memory, or a summary already given by one, is left out. One in an older round's line
        (an input or observation short enough for it) is held with that round: shown only if
        the line is cut. A memory's line points to its full text only when its summary left out
        a sentence naming one of the focus's identifiers (or, when the focus names none, when
        it is shorter than the text)."""
        fits = self._s.older_line_tokens
        there = [current.strip(), *(t.user.strip() for t in recent)]
        older_there = [
            (t.round, t.user.strip()) for t in older if t.user and self._count(t.user) <= fits
        ]
        ids = {stored[t.round] for t in recent if t.round in stored}
        older_ids = {
            stored[t.round]: t.round
            for t in older
            if t.round in stored and self._count(t.observation) <= fits
        }
        out: list[Section] = []
        held: list[tuple[Section, int]] = []
        seen: set[str] = set()
        for m in sorted(memories, key=lambda m: -m.score):
            g = self._summaries.gist(m.text, self._s.memory_tokens, self._focus, self._part)
            text = m.text.strip()
            if m.memory_id in ids or any(text in x for x in there) or g.text in seen:
                continue
            if any(text in s for s in seen):  # a sentence kept apart, of a memory shown
                continue
            seen.add(g.text)
            source = "" if m.source_type in ("", "unspecified") else f"{m.source_type}, "
            when = f", {_day(m.created_at)}" if m.created_at > 0 else ""
            shortened = g.text != m.text.strip() and not g.complete
            pointer = f" [full text: {m.memory_id}]" if shortened else ""
            line = f"- [{source}trust {m.trust:.1f}{when}] {g.text}{pointer}"
            sec = Section("memory", line, self._count(line), memory_id=m.memory_id, at=m.created_at)
            by = older_ids.get(m.memory_id)
            by = next((r for r, u in older_there if text in u), by)
            if by is None:
                out.append(sec)
            else:
                held.append((sec, by))
        return out, held

    def _sum(self, text: str, max_tokens: int, focus: frozenset[str] = frozenset()) -> str:
        return self._summaries(text, max_tokens, focus, self._part)

    def _section(self, kind: str, text: str, round: int = 0, memory_id: str = "") -> Section:
        return Section(kind, text, self._count(text), round, memory_id)

    def _recent(self, t: Turn, out: Built, last: bool) -> Section:
        """The last round's observation whole when short (`verbatim_tokens`), the others as
        their summaries."""
        if last and self._count(t.observation) <= self._s.verbatim_tokens:
            return self._section("round", f"{t.head()}\nObservation: {t.observation}", t.round)
        return self._summarised(t, out, self._s.summary_tokens)

    def _summarised(self, t: Turn, out: Built, tokens: int) -> Section:
        """A round with its observation's summary by the round's focus. A summary that left out
        a sentence naming one of the focus's identifiers (the ticket, the order asked about)
        points to the full text, stored as a memory once (`store`); one that kept them all
        needs no pointer (a pointer invites a read: a model call with the whole output)."""
        g = self._summaries.gist(t.observation, tokens, self._focus, self._part)
        if g.text == t.observation.strip() or g.complete:
            return self._section("round", f"{t.head()}\nObservation: {g.text}", t.round)
        mid = out.stored.get(t.round) or self._store(t)
        out.stored[t.round] = mid
        pointer = f" [full text: {mid}]" if mid else ""  # "": memory stores nothing
        text = f"{t.head()}\nObservation (summary): {g.text}{pointer}"
        return self._section("round", text, t.round)

    def _older(self, t: Turn) -> Section:
        # One line each, by position and signal (not the focus): the same line every round, so
        # a long task's older rounds are summarized once.
        said = self._sum(t.user, self._s.older_line_tokens) if t.user else ""
        gist = self._sum(t.observation, self._s.older_line_tokens)
        act = action_line(t.action)
        line = f"Round {t.round}: " + " ".join(x for x in (said, act, "→", gist) if x)
        return self._section("summary", line.rstrip(" →"), t.round)
