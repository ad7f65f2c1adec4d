"""Summaries at a session's end and of a crowded topic (issue 29): a conversation's turns, or one
topic's memories, cut into sentences, of which the few that say the most are kept, each linked
to the passage it came from.

The default summariser is extractive and local: it needs only the built-in encoder, no network,
and what it keeps are the speakers' own words, so a summary cannot state what nobody said.

1. Greetings, acknowledgements and sentences too short to state anything ("ok", "thanks!",
   "好的", "嗯") are dropped by their words (`is_filler`).
2. What is left is weighed by meaning: a sentence's substance is one less its likeness to small
   talk (the highest cosine to `SMALL_TALK`'s prototypes, English and Chinese: "I'm doing well,
   thanks for asking", "今天天气真不错"), which no word list catches.
3. A sentence's relevance is its substance times its centrality, the cosine to the centroid of
   the sentences weighted by substance (what the conversation keeps coming back to, small talk
   aside), raised by `DETAIL_BONUS` when it holds a number or a date (a flight's time, an
   employee id: the details easy to lose and hard to guess again).
4. Sentences are picked by maximal marginal relevance (MMR): each pick's relevance less its
   likeness to the picks before it; a sentence within `duplicate_cosine` of a pick is the same
   fact said again and is never picked.

A session's summary is one candidate per kept sentence (a warm fact or episode through the write
gate, linked to its turn); a topic's is one candidate, the kept sentences joined, linked to every
memory it stands for. The kept sentences stay in time order, and ties are broken by time, then
key: the same passages always give the same candidates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from server.core.memory.model import Vector, units
from server.core.memory.timecues import has_time_expression

Purpose = Literal["session", "topic"]
Encode = Callable[[Sequence[str]], Vector]
Split = Callable[[str], list[str]]
F64 = npt.NDArray[np.float64]


class Passage(msgspec.Struct, frozen=True):
    """One thing said or stored: a hot turn at a session's end, a warm memory of a topic."""

    key: int
    text: str
    speaker: str
    at: float  # event time, seconds since the epoch


class Candidate(msgspec.Struct, frozen=True):
    """A summary line for the write gate, with the keys of the passages it was drawn from."""

    text: str
    derived_from: tuple[int, ...]
    importance_hint: int  # 1-5, see `importance_hint`


class Summariser(Protocol):
    def summarise(
        self, passages: Sequence[Passage], max_sentences: int, purpose: Purpose
    ) -> list[Candidate]:
        """At most `max_sentences` sentences of `passages`: for "session" one candidate each,
        for "topic" one candidate holding them all. Nothing worth keeping: []."""
        ...


# Sentence boundaries. A full-width terminator (。！？) or an ellipsis ends a sentence wherever it
# stands; a Latin one only before a space, the end or CJK text, so that 3.5, example.com and
# a?b=1 stay whole. Closing quotes and brackets stay with the sentence they close.
_CLOSERS = "\"')]}”’」』）"
_TERMINATORS = re.compile(f"[。！？!?.…]+[{re.escape(_CLOSERS)}]*")
_FULL_WIDTH = frozenset("。！？…")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_LAST_WORD = re.compile(r"([A-Za-z.]+)$")
# A word that a period follows without ending the sentence ("Dr. Chen", "e.g. this", "Jan. 5").
_ABBREVIATIONS = frozenset(
    (
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "vs",
        "etc",
        "inc",
        "ltd",
        "co",
        "corp",
        "dept",
        "approx",
        "est",
        "fig",
        "cf",
        "al",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    )
)
# Only before a number: "No. 5", "vol. 2" (but "I said no. Then …" ends a sentence).
_BEFORE_NUMBER = frozenset(["no", "nos", "vol", "p", "pp", "ch", "art", "ref"])
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]|[A-Z]")  # U.S., e.g, J (as in "J. Smith")


def split_sentences(text: str) -> list[str]:
    """`text` as sentences, English and Chinese: cut after 。！？!?. and at line breaks, numbers
    (3.5) and abbreviations (Dr., e.g., U.S.) kept whole. Blank pieces are left out."""
    out: list[str] = []
    for line in text.splitlines():
        start = 0
        for m in _TERMINATORS.finditer(line):
            if _ends_sentence(line, m):
                out.append(line[start : m.end()])
                start = m.end()
        out.append(line[start:])
    return [s.strip() for s in out if s.strip()]


def _ends_sentence(line: str, m: re.Match[str]) -> bool:
    marks = m.group().rstrip(_CLOSERS)
    if _FULL_WIDTH.intersection(marks):
        return True
    after = line[m.end() : m.end() + 1]
    if after and not after.isspace() and not _CJK_CHAR.match(after):
        return False  # 3.5, example.com, a?b=1, "wait...what"
    if marks != m.group() and line[m.end() :].lstrip()[:1].islower():
        return False  # "Is it?" she asked.
    if marks != ".":
        return True
    word = _LAST_WORD.search(line, 0, m.start())
    if word is None:
        return True
    w = word.group(1).strip(".")
    low = w.lower().replace(".", "")
    if low in _ABBREVIATIONS or _INITIALS.fullmatch(w):
        return False
    return not (low in _BEFORE_NUMBER and line[m.end() :].lstrip()[:1].isdigit())


# Greetings and acknowledgements: what is left of a sentence without them must still say
# something. Latin ones as whole words, CJK ones anywhere (Chinese has no spaces), and only the
# unambiguous ones ("对" and "行" are inside real statements: 我对花生过敏).
_FILLER_WORDS = (
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank you",
    "thx",
    "ok",
    "okay",
    "sure",
    "yes",
    "yeah",
    "yep",
    "no problem",
    "got it",
    "sounds good",
    "great",
    "cool",
    "nice",
    "awesome",
    "perfect",
    "alright",
    "bye",
    "goodbye",
    "see you",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "how are you",
    "you're welcome",
    "welcome",
    "lol",
    "haha",
    "hmm",
    "um",
    "uh",
)
_FILLER_CJK = (
    "你好",
    "您好",
    "谢谢",
    "多谢",
    "好的",
    "好吧",
    "嗯",
    "哦",
    "哈哈",
    "早上好",
    "下午好",
    "晚上好",
    "晚安",
    "再见",
    "拜拜",
    "在吗",
    "没问题",
    "不客气",
    "收到",
)
_FILLER = re.compile(
    "|".join(
        [rf"\b{re.escape(w)}\b" for w in sorted(_FILLER_WORDS, key=len, reverse=True)]
        + [re.escape(w) for w in sorted(_FILLER_CJK, key=len, reverse=True)]
    ),
    re.IGNORECASE,
)
_NOT_WORD = re.compile(r"[\W_]+")
# A sentence must say at least this much besides fillers, in letters and digits with a CJK
# character counting as two (one carries about what a short Latin word does): "我对花生过敏" (12)
# is kept, "see you tomorrow" (8 without its filler) and "ok" are not.
MIN_CONTENT = 10


def is_filler(sentence: str) -> bool:
    """Whether `sentence` is a greeting, an acknowledgement, or too short to state anything."""
    rest = _NOT_WORD.sub("", _FILLER.sub(" ", sentence))
    return len(rest) + len(_CJK_CHAR.findall(rest)) < MIN_CONTENT


def importance_hint(text: str) -> int:
    """The importance a summary line suggests to the write gate (1-5): the base 3, and 4 when it
    carries a detail that is easy to lose and hard to guess again (a number, a date, a time)."""
    return 4 if any(c.isdigit() for c in text) or has_time_expression(text) else 3


def in_time_order(passages: Sequence[Passage]) -> list[Passage]:
    """`passages` by event time, then key: the order a summary keeps and breaks ties in."""
    return sorted(passages, key=lambda p: (p.at, p.key))


def join_sentences(sentences: Sequence[str]) -> str:
    """Sentences as one text: a Chinese sentence follows a Chinese one directly, anything else
    after a space."""
    out = ""
    for s in sentences:
        chinese = (_CJK_CHAR.match(out[-1]) or out[-1] in _FULL_WIDTH) if out else True
        out += s if chinese and _CJK_CHAR.match(s) else " " + s
    return out.lstrip()


def speaker_label(passages: Sequence[Passage]) -> Callable[[Passage, str], str]:
    """How a sentence of a passage is written in a summary: after its speaker's name when the
    passages have more than one speaker (who said what matters then), else as it is."""
    if len({p.speaker for p in passages}) < 2:
        return lambda _p, s: s
    return lambda p, s: f"{p.speaker}: {s}" if p.speaker else s


def shape(
    lines: Sequence[str],
    sources: Sequence[tuple[int, ...]],
    passages: Sequence[Passage],
    purpose: Purpose,
) -> list[Candidate]:
    """Summary lines (each with the keys it came from) as candidates: one each for a session;
    one for a topic, joined, derived from every passage."""
    if not lines:
        return []
    if purpose == "session":
        return [Candidate(t, k, importance_hint(t)) for t, k in zip(lines, sources, strict=True)]
    text = join_sentences(lines)
    keys = tuple(dict.fromkeys(p.key for p in in_time_order(passages)))
    return [Candidate(text, keys, importance_hint(text))]


# Small talk, by meaning: a sentence near one of these says little worth keeping. Each kind of
# small talk in both languages (greetings, how-are-you, thanks, laughter, weather, offers of help,
# closings).
SMALL_TALK = (
    "Hello, how are you?",
    "I'm doing well, thank you.",
    "Thanks a lot, have a nice day!",
    "Haha, that's funny.",
    "The weather is nice today.",
    "Sure, no problem, I can help with that.",
    "Is there anything else I can help you with?",
    "That's all for now, bye.",
    "你好，最近怎么样？",
    "我很好，谢谢。",
    "谢谢，祝你愉快！",
    "哈哈，真有意思。",
    "今天天气不错。",
    "好的，没问题，我来帮你。",
    "还有什么需要帮忙的吗？",
    "就这些，再见。",
)
# How much more a sentence holding a number or a date weighs (see the module docstring).
DETAIL_BONUS = 0.2


class ExtractiveSummariser:
    """The local summariser (see the module docstring), over the built-in encoder's `encode`
    (one unit float32 row per text). Its small-talk prototypes are encoded once, here."""

    def __init__(
        self,
        encode: Encode,
        split: Split = split_sentences,
        diversity: float = 0.3,
        duplicate_cosine: float = 0.9,
    ) -> None:
        """`diversity`: the weight of a sentence's likeness to the picks against its relevance
        (0: relevance alone); `duplicate_cosine`: a sentence this close to a pick is the same
        fact said again, never picked."""
        if not 0.0 <= diversity <= 1.0:
            raise ValueError(f"diversity must lie in 0..1, not {diversity}")
        self._encode = encode
        self._split = split
        self._diversity = diversity
        self._duplicate = duplicate_cosine
        self._small_talk = self._vectors(SMALL_TALK)

    def summarise(
        self, passages: Sequence[Passage], max_sentences: int, purpose: Purpose
    ) -> list[Candidate]:
        ordered = in_time_order(passages)
        found = [(p, s) for p in ordered for s in self._split(p.text) if not is_filler(s)]
        if not found or max_sentences < 1:
            return []
        vectors = self._vectors([s for _, s in found])
        details = np.array([importance_hint(s) > 3 for _, s in found])
        picked = pick(
            vectors,
            relevance(vectors, self._small_talk, details),
            max_sentences,
            self._diversity,
            self._duplicate,
        )
        label = speaker_label(ordered)
        lines = [label(*found[i]) for i in picked]
        sources = [(found[i][0].key,) for i in picked]
        return shape(lines, sources, ordered, purpose)

    def _vectors(self, texts: Sequence[str]) -> Vector:
        return units(np.asarray(self._encode(list(texts)), dtype=np.float32))


def relevance(vectors: Vector, small_talk: Vector, details: npt.NDArray[np.bool_]) -> F64:
    """Each sentence's relevance (steps 2 and 3 of the module docstring) from its unit row, the
    small-talk prototypes' unit rows and whether it holds a detail."""
    rows = vectors.astype(np.float64)
    substance = 1.0 - np.clip((rows @ small_talk.T.astype(np.float64)).max(axis=1), 0.0, 1.0)
    centre = substance @ rows
    norm = float(np.linalg.norm(centre))
    central = np.clip(rows @ (centre / norm), 0.0, 1.0) if norm > 0 else np.zeros(len(rows))
    out: F64 = substance * central * np.where(details, 1.0 + DETAIL_BONUS, 1.0)
    return out


def pick(
    vectors: Vector, relevance: F64, k: int, diversity: float, duplicate_cosine: float
) -> list[int]:
    """Up to `k` rows of `vectors` (unit rows) by maximal marginal relevance: each pick the row
    with the best (1 - diversity) * relevance - diversity * likeness to the picks so far (the
    first best on a tie: rows come in time order); rows within `duplicate_cosine` of a pick are
    dropped. Returned in row order."""
    rows = vectors.astype(np.float64)
    nearest = np.zeros(len(rows))  # each row's highest cosine to a pick (0 before any pick)
    alive = np.ones(len(rows), dtype=bool)
    picked: list[int] = []
    while len(picked) < k and alive.any():
        score = (1.0 - diversity) * relevance - diversity * nearest
        i = int(np.argmax(np.where(alive, score, -np.inf)))
        picked.append(i)
        like = rows @ rows[i]
        nearest = np.maximum(nearest, like)
        alive &= like < duplicate_cosine
        alive[i] = False
    return sorted(picked)
