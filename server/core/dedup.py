"""The near-duplicate merge policy: when a new memory is the same as one already stored.

A close vector alone is not enough: MiniLM puts templated texts ("Ticket 77 …", "Ticket 78 …")
above 0.95 cosine, and an episode is something that happened, so the same words on another day
are another episode. The policy, per kind (`write_policy.merge`):
- `similar` (facts, preferences, skills): cosine ≥ `dedup_cosine`, the same identifiers (every
  token holding a digit: E1234, ORD-48213, 10:00, v2 must all agree), and lexical agreement (the
  Jaccard similarity of the indexed terms ≥ `dedup_lexical`);
- `identical_in_session` (episodes, observations, summaries): the same text, up to case and
  spacing, in the same session;
- `never`.
Nothing is ever merged on an empty text. When in doubt, store.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from server.core.model import Kind, Record
from server.core.settings import WritePolicySettings

MODES = ("similar", "identical_in_session", "never")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9:./-]*")
_SPACE = re.compile(r"\s+")


def identifiers(text: str) -> frozenset[str]:
    """The ASCII tokens of `text` that hold a digit: codes, numbers, times, versions (also
    inside Chinese text, where no space separates them)."""
    found = (m.group(0).lower().rstrip(".:/-") for m in _TOKEN.finditer(text))
    return frozenset(t for t in found if any(c.isdigit() for c in t))


def normalised(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


class MergePolicy:
    """Decides whether a candidate found by vector similarity may absorb a new memory."""

    def __init__(self, settings: WritePolicySettings, terms: Callable[[str], list[str]]) -> None:
        self._s = settings
        self._terms = terms
        self._modes = {int(Kind[k.upper()]): mode for k, mode in settings.merge.items()}

    def mode(self, kind: Kind) -> str:
        return self._modes.get(int(kind), "never")

    def verdict(self, new: Record, old: Record, cosine: float) -> str | None:
        """Why the two may merge, or None when they must stay apart."""
        if not new.text.strip() or not old.text.strip():
            return None
        mode = self.mode(new.kind)
        if mode == "identical_in_session":
            same = normalised(new.text) == normalised(old.text)
            return (
                "the same text in the same session"
                if same and (new.session_id == old.session_id)
                else None
            )
        if mode != "similar" or cosine < self._s.dedup_cosine:
            return None
        if identifiers(new.text) != identifiers(old.text):
            return None
        a, b = set(self._terms(new.text)), set(self._terms(old.text))
        overlap = len(a & b) / len(a | b) if a | b else 0.0
        if overlap < self._s.dedup_lexical:
            return None
        return f"cosine {cosine:.3f}, terms {overlap:.2f}"
