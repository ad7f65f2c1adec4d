"""The near-duplicate merge policy: when a new memory is the same as one already stored.

A close vector alone is not enough: MiniLM puts templated texts ("Ticket 77 …", "Ticket 78 …")
above 0.95 cosine, and an episode is something that happened, so the same words on another day
are another episode. The policy, per kind (`write_policy.merge`):
- `similar` (facts, preferences, skills): cosine ≥ `dedup_cosine`, the same identifiers, and
  lexical agreement (the Jaccard similarity of the indexed terms ≥ `dedup_lexical`). The
  identifiers are every token holding a digit in any script (E1234, ORD-48213, 10:00, v2, -5,
  ５), every run of Chinese numerals (五月三号), and the names of numbers, weekdays and months in
  English and Chinese (three, Monday, 星期一, 周二): "Ticket 77" and "Ticket 78", "E1234" and
  "E1235", "10:00" and "14:00", "Monday" and "Tuesday" are never the same memory;
- `identical_in_session` (episodes, observations, summaries): the same text, up to case and
  spacing, in the same, named session (two sessionless episodes are never the same one);
- `never`.
Both memories must be of the same namespace and kind. Nothing is ever merged on an empty text.
A memory of a medium pocketd holds (an image, a recording) merges by the medium's own signals
only: the same blob (its sha256), or image-space vectors at least `media_cosine` apart, never
by its text, which may be empty or generic ("image 800×600"). When in doubt, store.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from server.core.memo import TextMemo
from server.core.memory.model import Kind, Record
from server.core.settings import DEFAULT_MERGE, WritePolicySettings

MODES = ("similar", "identical_in_session", "never")
MEMO_TEXTS = 1024
# A token of letters and digits (any script but CJK) with its inner : . / - joins, and a sign.
_W = r"[^\W_\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"  # a letter or digit, not CJK
_TOKEN = re.compile(rf"[-+−]?{_W}(?:{_W}|[:./-](?={_W}))*")
_CJK_NUMERALS = re.compile(r"[〇零一二三四五六七八九十百千万亿两]+")
_NAMED = frozenset(
    [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "billion",
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
        "half",
        "dozen",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "mon",
        "tue",
        "tues",
        "wed",
        "thu",
        "thur",
        "thurs",
        "fri",
        "sat",
        "sun",
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
        "noon",
        "midnight",
    ]
)
_CJK_NAMED = re.compile(r"(?:星期|周|礼拜)[一二三四五六日天]")
_SPACE = re.compile(r"\s+")


def identifiers(text: str) -> frozenset[str]:
    """What must agree for two texts to be one memory: tokens holding a digit (codes, numbers,
    times, versions, signed values), Chinese numeral runs, and number, weekday and month names.
    Chinese text has no spaces, so CJK characters end a token."""
    out: set[str] = set()
    for m in _TOKEN.finditer(text):
        t = m.group(0).lower().rstrip(".:/-")
        if any(c.isdigit() for c in t):
            out.add(t.replace("−", "-"))
        elif t.lstrip("-+−") in _NAMED:
            out.add(t.lstrip("-+−"))
    out.update(_CJK_NAMED.findall(text))
    out.update(_CJK_NUMERALS.findall(_CJK_NAMED.sub(" ", text)))
    return frozenset(out)


def normalised(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


class MergePolicy:
    """Decides whether a candidate found by vector similarity may absorb a new memory."""

    def __init__(
        self,
        settings: WritePolicySettings,
        terms: Callable[[str], list[str]],
        media_cosine: float = 0.97,
    ) -> None:
        self._s = settings
        self._media_cosine = media_cosine
        # Each text's identifiers and terms once, not once per pair weighed (a batch of one
        # template weighs every item against its best candidates).
        self._ids: TextMemo[frozenset[str]] = TextMemo(identifiers, MEMO_TEXTS)
        self._terms: TextMemo[frozenset[str]] = TextMemo(lambda t: frozenset(terms(t)), MEMO_TEXTS)
        modes = {**DEFAULT_MERGE, **settings.merge}  # a partial setting keeps the defaults
        self._modes = {int(Kind[k.upper()]): mode for k, mode in modes.items()}

    def mode(self, kind: Kind) -> str:
        return self._modes.get(int(kind), "never")

    def verdict(self, new: Record, old: Record, cosine: float) -> str | None:
        """Why the two may merge, or None when they must stay apart."""
        if new.kind != old.kind or new.namespace != old.namespace:
            return None
        if new.speaker != old.speaker:  # two people saying the same words are two memories
            return None
        if _media(new) or _media(old):
            return self._same_medium(new, old)
        if not new.text.strip() or not old.text.strip():
            return None
        mode = self.mode(new.kind)
        if mode == "identical_in_session":
            same_session = bool(new.session_id) and new.session_id == old.session_id
            if same_session and normalised(new.text) == normalised(old.text):
                return "the same text in the same session"
            return None
        if mode != "similar" or cosine < self._s.dedup_floor:
            return None
        if self._ids(new.text) != self._ids(old.text):
            return None
        a, b = self._terms(new.text), self._terms(old.text)
        overlap = len(a & b) / len(a | b) if a | b else 0.0
        if overlap < self._s.dedup_lexical:
            return None
        return f"cosine {cosine:.3f}, terms {overlap:.2f}"

    def _same_medium(self, new: Record, old: Record) -> str | None:
        """Two memories of media are one when they hold the same blob, or when their vectors in
        a space both have are one picture's (`media_cosine`)."""
        a, b = new.blob, old.blob
        if a is not None and b is not None and a.held and b.held and a.sha256 == b.sha256:
            return "the same medium (sha256)"
        for sv in new.space_vectors:
            other = old.space_vector(sv.space)
            if other is not None and len(other) == len(sv.vector):
                cos = float(np.dot(sv.vector, other))
                if cos >= self._media_cosine:
                    return f"the same picture ({sv.space} cosine {cos:.3f})"
        return None


def _media(rec: Record) -> bool:
    """Whether the memory is of a medium pocketd holds or reads by its own vectors."""
    return (rec.blob is not None and rec.blob.held) or bool(rec.space_vectors)
