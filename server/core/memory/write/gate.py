"""The write gate's importance rules (seed 000 §2.2, 001 §2.3 and §5.1).

Importance is scored by fixed, configurable rules rather than by a model, since a model tends to
rate everything as important (seed 000 §2.2):

1. An explicit importance from the client is kept, clamped into the configured bounds.
2. Otherwise start from `base_importance`; each keyword group that matches (identity, payment,
   company policy, preference, …) adds `boost_amount`; small talk and little else (at most
   `small_talk_max_rest` besides it) with no such keyword drops to `small_talk_importance`.
3. The `remember` flag, or an "error, then fix" experience (the `error_resolved` hint, or text
   naming both an error and its fix), raises importance to at least `flag_importance`.

A record below `min_importance` is not stored. Near-duplicate merging needs the indexes and is done
by the engine (`server.core.memory.write.writer`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from server.core.memory.model import WriteHints
from server.core.settings import WritePolicySettings


def keyword_pattern(words: Iterable[str], whole_words: bool = False) -> re.Pattern[str]:
    """One case-insensitive pattern for a keyword list. Latin keywords match at a word start
    ("pay" matches "payment"; "ok" never matches "token"), or only as whole words with
    `whole_words` ("hi" must not match "history"). CJK keywords match anywhere, since Chinese has
    no spaces."""
    parts = []
    end = r"\b" if whole_words else ""
    for w in sorted({w.strip().lower() for w in words if w.strip()}, key=len, reverse=True):
        esc = re.escape(w)
        parts.append(rf"\b{esc}{end}" if w.isascii() else esc)
    return re.compile("|".join(parts) or r"(?!)", re.IGNORECASE)


_NOT_WORD = re.compile(r"[\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@dataclass(frozen=True)
class Verdict:
    """The gate's importance, whether the record passes, and why, in words."""

    importance: int
    accepted: bool
    reason: str


class ImportanceGate:
    """Scores importance and decides admission from a `WritePolicySettings`."""

    def __init__(self, policy: WritePolicySettings) -> None:
        self._p = policy
        self._groups = {
            name: keyword_pattern(words) for name, words in policy.boost_keywords.items()
        }
        self._small_talk = keyword_pattern(policy.small_talk, whole_words=True)
        self._errors = keyword_pattern(policy.error_keywords)
        self._fixes = keyword_pattern(policy.fix_keywords)

    def _rest(self, text: str) -> int:
        """The length of what the text says besides small talk: its letters and digits, a CJK
        character counting as two (one carries about what a short Latin word does)."""
        rest = _NOT_WORD.sub("", self._small_talk.sub(" ", text))
        return len(rest) + len(_CJK.findall(rest))

    def judge(self, text: str, explicit: int | None, hints: WriteHints) -> Verdict:
        p = self._p
        reasons: list[str] = []
        if explicit is not None:
            score = min(max(explicit, p.client_importance_min), p.client_importance_max)
            reasons.append(
                f"client importance {explicit}"
                + ("" if score == explicit else f" clamped to {score}")
            )
        else:
            matched = [name for name, pat in self._groups.items() if pat.search(text)]
            score = p.base_importance + p.boost_amount * len(matched)
            if matched:
                reasons.append("keywords: " + ", ".join(matched))
            elif self._small_talk.search(text) and self._rest(text) <= p.small_talk_max_rest:
                score = p.small_talk_importance
                reasons.append("small talk")
            else:
                reasons.append("base importance")
        error_fix = hints.error_resolved or (
            self._errors.search(text) is not None and self._fixes.search(text) is not None
        )
        if hints.remember or error_fix:
            if score < p.flag_importance:
                score = p.flag_importance
            reasons.append("remember flag" if hints.remember else "error then fix")
        score = min(max(score, 1), 5)
        accepted = score >= p.min_importance
        cmp = ">=" if accepted else "<"
        reason = (
            f"importance {score} {cmp} min_importance {p.min_importance} ({'; '.join(reasons)})"
        )
        return Verdict(score, accepted, reason)
