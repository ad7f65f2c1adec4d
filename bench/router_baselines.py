"""The rows of `bench router` that are not pocketd: what an afternoon's router would pick.

- `cue_rule` (the trivial row): pocketd's own router cue lists as a rule (`router_cues.CueRule`),
  its default for a question no cue family fires on chosen on the tune half;
- `supervised`: a logistic regression per store on hashed word and character n-grams
  (`router_supervised`), fitted on the tune half's questions and gold stores, no pocketd code;
- `regex` (the old trivial row, kept for comparison): a few regular expressions written for the
  template wordings.
All three are fitted or chosen on the tune half only, for the same coverage target.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench.router_cues import CueRule, choose_default
from bench.router_supervised import Choice, StoreClassifier, choose, chosen
from bench.routing_world import Question
from server.core.settings import RouterSettings

ROWS = ("cue_rule", "supervised", "regex")
# The coverage both fitted rows aim at on the tune half: the heuristic's at its shipped
# `skip_below` under the same cross-validation (0.974, `python -m bench router_fit --cv 5`).
TARGET = 0.97
# The old trivial router: a few regular expressions a developer would write for the templates.
REGEX = (
    ("session", re.compile(r"\b(just|a (moment|minute) ago|this (conversation|chat))\b|刚才|刚刚")),
    (
        "profile",
        re.compile(r"\b(what is my|what's my|my name|do i (like|prefer)|user's)\b|我叫|用户的"),
    ),
    (
        "summary",
        re.compile(
            r"\b(overall|summar\w*|in general|talked about|discuss\w*)\b|总结|聊了些什么|聊过"
        ),
    ),
)
PAST = re.compile(
    r"\b(ago|before|back then|last (time|week|month)|previous\w*|earlier)\b|以前|之前|那阵子|当时"
)


def regex_stores(text: str) -> set[str]:
    """The old trivial router: every store a regex names, transcripts too when the text points
    to the past, and transcripts alone when nothing matched."""
    low = text.lower()
    hit = {store for store, rx in REGEX if rx.search(low)}
    if PAST.search(low):
        hit.add("transcript")
    return hit or {"transcript"}


@dataclass
class Baselines:
    rule: CueRule
    model: StoreClassifier
    choice: Choice  # the supervised row's regularisation and threshold

    def decide(self, text: str) -> dict[str, tuple[set[str], float]]:
        """Each row's store set for a question, with the seconds its decision took."""
        out: dict[str, tuple[set[str], float]] = {}
        for row, pick in (
            ("cue_rule", self.rule.stores),
            ("supervised", self.supervised),
            ("regex", regex_stores),
        ):
            t0 = time.perf_counter()
            stores = pick(text)
            out[row] = (stores, time.perf_counter() - t0)
        return out

    def supervised(self, text: str) -> set[str]:
        return chosen(self.model.probabilities([text]), self.choice.threshold)[0]


def fit(tune: Sequence[Question], settings: RouterSettings, target: float = TARGET) -> Baselines:
    """The baselines from the tune half alone: the cue rule's default, and the classifier with
    the regularisation and threshold cross-validation chose."""
    rule = CueRule(settings, choose_default(CueRule(settings), tune, target))
    choice = choose(tune, target)
    model = StoreClassifier([q.text for q in tune], [q.stores for q in tune], choice.c)
    return Baselines(rule, model, choice)
