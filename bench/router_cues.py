"""pocketd's own router cue lists, read by `bench router` as an afternoon's rule would read them.

- `CueRule`: the trivial row. pocketd's router flags a question's form with its configured cue
  lists (`RouterSettings.*_cues`, matched by the router's own `FeatureExtractor`); the rule
  searches each store one of whose cue families fired (the session for `just_said` or `current`,
  the profile for `about_me`, summaries for `summary`, transcripts for `past`) and a fixed
  default when none fired. The default is chosen on the tune half (`choose_default`): the
  cheapest store set whose coverage reaches `target`, else the one that covers most.
- `CueScan`: whether a question holds any phrase of any of the router's cue lists (every
  `RouterSettings` field named `*_cues`), for the bench's cue-free split.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import msgspec

from bench.routing_world import STORES, Question, cheapest_reaching, coverage_and_cost
from server.core.memory.timecues import cue_pattern
from server.core.routing.features import FeatureExtractor
from server.core.settings import RouterSettings

# Which of the router's cue families name which store (the router's flags, `features.FLAGS`).
STORE_FLAGS = {
    "session": ("just_said", "current"),
    "profile": ("about_me",),
    "summary": ("summary",),
    "transcript": ("past",),
}


def cue_lists(settings: RouterSettings) -> dict[str, tuple[str, ...]]:
    """Every cue list of the router's settings, by field name."""
    return {
        f.name: getattr(settings, f.name)
        for f in msgspec.structs.fields(settings)
        if f.name.endswith("_cues")
    }


class CueScan:
    """Whether a text holds any of the router's cue phrases (Latin ones as whole words, CJK ones
    as substrings, as the router matches them)."""

    def __init__(self, settings: RouterSettings) -> None:
        self._any = cue_pattern([c for cues in cue_lists(settings).values() for c in cues])

    def has_cue(self, text: str) -> bool:
        return self._any.search(text.lower()) is not None


class CueRule:
    """The stores whose cue families the router's feature extractor finds in a question, or
    `default` when it finds none of them."""

    def __init__(self, settings: RouterSettings, default: frozenset[str] = frozenset()) -> None:
        self._features = FeatureExtractor(settings, str.split)
        self.default = default

    def fired(self, text: str) -> set[str]:
        flags = self._features.extract(text, None, False).flags
        return {s for s, names in STORE_FLAGS.items() if any(n in flags for n in names)}

    def stores(self, text: str) -> set[str]:
        return self.fired(text) or set(self.default)


def choose_default(rule: CueRule, tune: Sequence[Question], target: float) -> frozenset[str]:
    """The cheapest default whose rule covers `target` of `tune`; else the default that covers
    most (the cheapest of those)."""
    fired = [rule.fired(q.text) for q in tune]
    options = []
    for k in range(len(STORES) + 1):
        for d in combinations(STORES, k):
            options.append((*coverage_and_cost(tune, [f or set(d) for f in fired]), frozenset(d)))
    return cheapest_reaching(options, target)
