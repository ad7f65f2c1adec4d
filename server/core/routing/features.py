"""Route features: what a routing policy knows about a query before any pocket is searched.

Computed from the query alone in a few microseconds (seed 003 §3.2: the router must cost far
less than the search it saves):
- the first `prefix_dim` values of the unit query vector (MiniLM's leading dimensions carry most
  of its variance), renormalised;
- lexical flags, in English and Chinese, each a compiled pattern: a time cue, a quantity, a
  comparison, a reference to what was just said, a question about the user ("what is my …"),
  an exact identifier, a safety pattern (allergy, medication, payment, identity, security), and
  the question's form: the gist of past conversations, an exact detail, a pointer to a past
  conversation, or to the current one;
- the query's length in analysed terms and whether it is an image query.

Latin patterns match whole words ("ago" is not in "Chicago"); CJK ones match as substrings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from server.core.memory.timecues import cue_pattern
from server.core.query.channels import exact_identifiers
from server.core.settings import RouterSettings

FLAGS = (
    "time",
    "quantity",
    "comparison",
    "just_said",
    "about_me",
    "identifier",
    "safety",
    "summary",
    "detail",
    "past",
    "current",
)


@dataclass(frozen=True)
class QueryFeatures:
    prefix: npt.NDArray[np.float32]  # (prefix_dim,), unit length, zeros without a vector
    flags: frozenset[str]  # the names in FLAGS that fired
    terms: tuple[str, ...]  # the analysed query terms
    identifiers: tuple[str, ...]
    image: bool
    safety: tuple[str, ...]  # the safety cues that fired, for the decision log

    def vector(self) -> npt.NDArray[np.float32]:
        """The query part of a model's input: the prefix, the flags, and the length."""
        flags = np.array([f in self.flags for f in FLAGS], dtype=np.float32)
        length = np.array([min(len(self.terms), 32) / 32.0, float(self.image)], np.float32)
        return np.concatenate([self.prefix, flags, length])


class FeatureExtractor:
    """Builds `QueryFeatures`; `analyze` is the keyword index's analyser."""

    def __init__(self, settings: RouterSettings, analyze: Callable[[str], list[str]]) -> None:
        self._dim = settings.prefix_dim
        self._analyze = analyze
        self._patterns = {
            "time": cue_pattern(settings.time_cues),
            "quantity": re.compile(
                cue_pattern(settings.quantity_cues).pattern + r"|\d+(?:\.\d+)?\s*(?:%|[a-z]{1,3}\b)"
            ),
            "comparison": cue_pattern(settings.comparison_cues),
            "just_said": cue_pattern(settings.just_said_cues),
            "about_me": cue_pattern(settings.about_me_cues),
            "summary": cue_pattern(settings.summary_cues),
            "detail": cue_pattern(settings.detail_cues),
            "past": cue_pattern(settings.past_cues),
            "current": cue_pattern(settings.current_cues),
        }
        self._safety = [(c, cue_pattern([c])) for c in settings.safety_cues]
        self._any_safety = cue_pattern(settings.safety_cues)  # one search when none is named

    def extract(
        self, text: str, vector: npt.NDArray[np.float32] | None, image: bool
    ) -> QueryFeatures:
        low = text.lower()
        flags = {name for name, p in self._patterns.items() if p.search(low)}
        terms = tuple(self._analyze(text)) if text else ()
        ident = exact_identifiers(list(terms))
        if ident:
            flags.add("identifier")
        safety = (
            tuple(c for c, p in self._safety if p.search(low))
            if self._any_safety.search(low)
            else ()
        )
        if safety:
            flags.add("safety")
        prefix = np.zeros(self._dim, np.float32)
        if vector is not None:
            head = np.asarray(vector[: self._dim], dtype=np.float32)
            norm = float(np.linalg.norm(head))
            if norm > 0:
                prefix[: len(head)] = head / norm
        return QueryFeatures(prefix, frozenset(flags), terms, ident, image, safety)
