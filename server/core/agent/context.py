"""The context builder (seed 000 §3.1, §3.3; 001 §3.3): the prompt payload of one round, within
the route's `token_budget_round`, with token counts from the real tokenizer.

What goes in, by priority (what is cut first is last here):
1. the task's goal;
2. the last `recent_rounds` rounds (3) verbatim: action and observation. An observation longer
   than `long_observation_tokens` is stored as a memory (the `store` callback) and replaced by
   its extractive summary and the memory's id, which `Get` fetches in full;
3. the recalled memories, the best that fit, shown oldest first, each with its source type,
   trust and date, as its extractive summary (`memory_tokens`; the full text is one `Get`
   away);
4. older rounds, one extractive line each (newest first when the budget is short).
Memory enters as recalled results, never as the full history. When the budget is short, older
rounds go first, then the weakest memories, then recent observations shrink to their summaries,
then the earliest recent rounds go, and last the goal and the last round are cut to what fits.

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
    return sum(ID_WEIGHT if _is_id(w) else 1 for w in words)


def _is_id(word: str) -> bool:
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
        return f"Round {self.round}: {said}{self.action}".rstrip()


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
    long_observation_tokens: int = 300
    summary_tokens: int = 60
    older_line_tokens: int = 30
    memory_tokens: int = 60  # a recalled memory enters as its extractive summary


def summarize(
    text: str, max_tokens: int, count: Callable[[str], int], focus: frozenset[str] = frozenset()
) -> str:
    """Whole sentences, in order, within `max_tokens`: those sharing the most `focus` words,
    then the first, then those with a signal."""
    sentences = list(dict.fromkeys(s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()))
    if not sentences:
        return ""
    shared = [_weight(focus.intersection(w.lower() for w in _WORD.findall(s))) for s in sentences]
    on_focus = sorted((i for i, n in enumerate(shared) if n), key=lambda i: (-shared[i], i))
    rest = [0] + [i for i, s in enumerate(sentences[1:], 1) if _SIGNAL.search(s)]
    keep = list(dict.fromkeys([*on_focus, *rest]))
    out: list[int] = []
    used = 0
    for i in keep:
        n = count(sentences[i])
        if used + n > max_tokens:
            if not out:  # the first sentence alone is too long: cut it by words
                return _cut(sentences[i], max_tokens, count)
            continue
        out.append(i)
        used += n
    return " ".join(sentences[i] for i in sorted(out))


class Summaries:
    """`summarize` remembered (`TextMemo`): the context builder summarizes a task's turns and
    memories again each round, and a summary is a pure function of the text and the size. Each
    tenant (`part`) has its own summaries and token counts."""

    def __init__(self, count: TokenCount, size: int = 4096) -> None:
        self._memo: TextMemo[str] = TextMemo(
            lambda t, n, f, p: summarize(t, n, partial(count, part=p), f), size
        )

    def __call__(
        self, text: str, max_tokens: int, focus: frozenset[str] = frozenset(), part: str = ""
    ) -> str:
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
        """`known`: the memory ids of observations stored by earlier builds, by round (so a long
        observation is stored once, not once per round it stays recent)."""
        s, out = self._s, Built()
        out.stored = dict(known or {})  # the ones reused count as stored
        ordered = sorted(turns, key=lambda t: t.round)
        k = min(max(s.recent_rounds, 1), len(ordered))
        recent, older = ordered[len(ordered) - k :], ordered[: len(ordered) - k]
        self._focus = focus_words(goal, current, *(x for t in recent for x in (t.user, t.action)))
        goal_s = self._section(
            "goal", f"Goal: {goal}" + (f"\nUser now: {current}" if current else "")
        )
        rounds = [self._recent(t, out) for t in recent]
        mems = self._memories(memories, recent, out.stored, current)
        lines = [self._older(t) for t in reversed(older)]  # newest first: cut from the oldest

        def total() -> int:  # cut by priority until it fits
            return sum(x.tokens for x in [goal_s, *rounds, *mems, *lines])

        while lines and total() > budget:
            out.dropped.append(f"round {lines.pop().round} (summary)")
        while mems and total() > budget:
            out.dropped.append(f"memory {mems.pop().memory_id}")
        for i, t in enumerate(recent):
            if total() <= budget:
                break
            pointer = f" [full text: {out.stored[t.round]}]" if t.round in out.stored else ""
            gist = self._sum(t.observation, s.summary_tokens, self._focus)
            short = self._section(
                "round",
                f"{t.head()}\nObservation (summary): {gist}{pointer}",
                round=t.round,
            )
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
        # preferences that disagree is the last said.
        mems.sort(key=lambda m: m.at)
        out.sections = [x for x in [goal_s, *mems, *reversed(lines), *rounds] if x.text]

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
        recent: Sequence[Turn],
        stored: Mapping[int, str],
        current: str,
    ) -> list[Section]:
        """The recalled memories, best first, each once: one that is already in the prompt
        verbatim (this round's input, a recent round's input, or a recent round's stored
        observation) or a summary already given by a better memory is left out."""
        there = {current.strip(), *(t.user.strip() for t in recent)}
        ids = {stored[t.round] for t in recent if t.round in stored}
        out, seen = [], set()
        for m in sorted(memories, key=lambda m: -m.score):
            gist = self._sum(m.text, self._s.memory_tokens, self._focus)
            if m.memory_id in ids or m.text.strip() in there or gist in seen:
                continue
            seen.add(gist)
            source = "" if m.source_type in ("", "unspecified") else f"{m.source_type}, "
            when = f", {_day(m.created_at)}" if m.created_at > 0 else ""
            shortened = self._count(m.text) > self._s.memory_tokens
            pointer = f" [full text: {m.memory_id}]" if shortened else ""
            line = f"- [{source}trust {m.trust:.1f}{when}] {gist}{pointer}"
            out.append(
                Section("memory", line, self._count(line), memory_id=m.memory_id, at=m.created_at)
            )
        return out

    def _sum(self, text: str, max_tokens: int, focus: frozenset[str] = frozenset()) -> str:
        return self._summaries(text, max_tokens, focus, self._part)

    def _section(self, kind: str, text: str, round: int = 0, memory_id: str = "") -> Section:
        return Section(kind, text, self._count(text), round, memory_id)

    def _recent(self, t: Turn, out: Built) -> Section:
        obs = t.observation
        if self._count(obs) > self._s.long_observation_tokens:
            mid = out.stored.get(t.round) or self._store(t)
            out.stored[t.round] = mid
            gist = self._sum(obs, self._s.summary_tokens, self._focus)
            obs = f"{gist} [full text: {mid}]" if mid else gist  # "": memory stores nothing
        return self._section("round", f"{t.head()}\nObservation: {obs}", t.round)

    def _older(self, t: Turn) -> Section:
        # One line each, by position and signal (not the focus): the same line every round, so
        # a long task's older rounds are summarized once.
        said = self._sum(t.user, self._s.older_line_tokens) if t.user else ""
        gist = self._sum(t.observation, self._s.older_line_tokens)
        line = f"Round {t.round}: " + " ".join(x for x in (said, t.action, "→", gist) if x)
        return self._section("summary", line.rstrip(" →"), t.round)
