"""Model-tier routing (seed 000 §3.2, §4.4; 001 §3.2, §4.1): which model an agent's round calls.

- **The difficulty classifier** combines rules with an optional learned model:
  - an image in the input → `vision`;
  - rules over the text: structured intents (an order status, a lookup, a format or a
    translation) → `simple`; analysis, comparison, planning, design or proof, or a long input →
    `complex`; several steps → `medium`;
  - the learned model (`DifficultyModel`: an MLP over the built-in encoder's vector, trained
    by `pocketd models train-difficulty`) gives each tier a probability; it decides where no
    rule fired, and overrules a rule only with `overrule_confidence` (0.9);
  - below `min_confidence` the answer is `medium`.
- **The intent cache**: a task's tier is cached under a hash of the first 100 normalised
  characters of its prefix (NFKC, lower case, spaces collapsed), for 30 minutes, so the same
  kind of task is not classified again; each tenant has its own cache (and its own tasks'
  sticky tiers), so one tenant's goals never set, reveal or evict another's. A round with an
  image is routed to vision without it, and a tier an image decided is not cached. The router
  reports its own cost: zero on a hit.
- **Sticky routing**: the tier chosen in a task's first round holds, unless the difficulty jumps
  (a higher tier with at least `jump_confidence`). A round with an image goes to `vision`, and
  the next round without one returns to the task's tier.
- **Round rules**: `complex` only for the first `complex_rounds` rounds (5), then `medium`;
  from `escalate_round` (10) on, the route says to escalate.
- **The degrade ladder**: from level 2 (a cheaper model tier) each tier but vision is one step
  cheaper.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol

from server.core.clock import Clock
from server.core.memo import PartitionedLRU
from server.core.tenancy import tenant_of

TIERS = ("simple", "medium", "complex", "vision")
RANK = {"simple": 0, "medium": 1, "complex": 2, "vision": 3}
_SIMPLE = re.compile(
    r"\b(?:status of|where is my|track(?:ing)?|look ?up|format|convert|translate|what time|"
    r"how much is|reset my password|order (?:number|status)|list my)\b"
    r"|查询|订单|状态|格式|翻译|多少钱",
    re.I,
)
_COMPLEX = re.compile(
    r"\b(?:analy[sz]e|analysis|compare|comparison|trade-?offs?|design|architect|plan|strategy|"
    r"prove|derive|root cause|why does|evaluate|optimi[sz]e|refactor)\b|分析|比较|对比|设计|规划|"
    r"方案|证明|原因|评估|优化",
    re.I,
)
_STEPS = re.compile(
    r"\b(?:then|after that|and also|step by step|first\b.*\bthen)\b|然后|接着|步骤", re.I
)
_IMAGE = re.compile(r"\b(?:screenshot|image|photo|picture|attached)\b|截图|图片|照片|这张图", re.I)


class DifficultyModel(Protocol):
    def probabilities(self, text: str) -> dict[str, float]:
        """P(simple), P(medium), P(complex) for a text."""
        ...


@dataclass(frozen=True)
class Difficulty:
    tier: str
    confidence: float
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Route:
    name: str  # the tier
    model: str
    max_rounds: int
    token_budget_round: int


@dataclass(frozen=True)
class TierSettings:
    routes: dict[str, Route]
    min_confidence: float = 0.6
    overrule_confidence: float = 0.9  # the model's, against a rule that fired
    jump_confidence: float = 0.75
    long_input_chars: int = 2000
    complex_rounds: int = 5
    escalate_round: int = 10
    intent_ttl_s: float = 1800.0
    intent_capacity: int = 4096
    task_capacity: int = 65_536  # tasks whose tier is remembered (the least recent forgotten)
    prefix_chars: int = 100


@dataclass(frozen=True)
class Routed:
    route: Route
    difficulty: Difficulty
    cached: bool  # the intent cache answered
    sticky: bool  # the task's tier held
    escalate: bool  # the round reached `escalate_round`
    why: str  # what decided the tier


def classify(text: str, image: bool, model: DifficultyModel | None, s: TierSettings) -> Difficulty:
    if image or _IMAGE.search(text):
        return Difficulty("vision", 1.0, ("image",))
    reasons = []
    rule, conf = "medium", 0.5
    if _COMPLEX.search(text) or len(text) > s.long_input_chars:
        rule, conf = "complex", 0.75
        reasons.append("complex cue" if _COMPLEX.search(text) else "long input")
    elif _SIMPLE.search(text) and not _STEPS.search(text):
        rule, conf = "simple", 0.75
        reasons.append("structured intent")
    elif _STEPS.search(text):
        rule, conf = "medium", 0.7
        reasons.append("several steps")
    if model is not None:  # it decides where no rule fired, and overrules one only when sure
        p = model.probabilities(text)
        best = max(p, key=lambda t: p[t])
        if (not reasons and p[best] >= s.min_confidence) or (
            best != rule and p[best] >= s.overrule_confidence
        ):
            rule, conf = best, p[best]
            reasons.append(f"model {p[best]:.2f}")
    if conf < s.min_confidence:
        return Difficulty("medium", conf, (*reasons, "low confidence"))
    return Difficulty(rule, conf, tuple(reasons))


def intent_key(prefix: str, chars: int = 100) -> str:
    norm = " ".join(unicodedata.normalize("NFKC", prefix).lower().split())[:chars]
    return hashlib.sha256(norm.encode()).hexdigest()


@dataclass
class _Task:
    tier: str
    first_round: int


@dataclass
class TierRouter:
    settings: TierSettings
    clock: Clock
    model: DifficultyModel | None = None
    _cache: PartitionedLRU[str, tuple[float, Difficulty]] = field(init=False)
    _tasks: PartitionedLRU[str, _Task] = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    classified: int = 0  # classifications actually run (the router's own cost)

    def __post_init__(self) -> None:
        # Per tenant: one tenant's goals never set, reveal or evict another's.
        self._cache = PartitionedLRU(self.settings.intent_capacity)
        self._tasks = PartitionedLRU(self.settings.task_capacity)

    def route(
        self, task_id: str, round_: int, prefix: str, text: str, image: bool, level: int
    ) -> Routed:
        """The route for `task_id`'s round `round_`: `prefix` is the task's prefix (its goal),
        `text` this round's input, `level` the ledger's degrade level."""
        s = self.settings
        now = self.clock.now()
        key = intent_key(prefix, s.prefix_chars)
        part = tenant_of(task_id)
        with self._lock:
            held = self._tasks.get(part, task_id)
            hit = None if image else self._cache.get(part, key)  # an image decides by itself
            if hit is not None and hit[0] <= now:
                self._cache.pop(part, key)
                hit = None
        # Classified outside the lock (the learned model encodes the text).
        fresh = None
        if held is None and hit is None:
            fresh = self._classify(prefix + "\n" + text, image)
        elif held is not None:
            fresh = self._classify(text, image)
        with self._lock:
            held = self._tasks.get(
                part, task_id
            )  # another round of the task may have run meanwhile
            if held is None:
                d = hit[1] if hit is not None else fresh or self._classify(prefix, image)
                tier, why, first = d.tier, "first round", round_
                if hit is None and d.tier != "vision":  # the tier the text alone decides
                    self._cache.put(part, key, (now + s.intent_ttl_s, d))
            else:
                d = fresh or Difficulty(held.tier, 1.0, ())
                tier, why, first = held.tier, "sticky", held.first_round
                if RANK[d.tier] > RANK[held.tier] and d.confidence >= s.jump_confidence:
                    tier, why = d.tier, "difficulty jumped"
            # An image routes its own round to vision; the task's tier stays what the text made it.
            if tier != "vision":
                keep = tier
            elif held is not None:
                keep = held.tier
            else:  # a first round with an image: the task's tier is what its text says
                keep = classify(prefix + "\n" + text, False, None, s).tier
            self._tasks.put(part, task_id, _Task(keep, first))
            if d.tier == "vision" and held is not None:
                tier, why = "vision", "image"
        cached = hit is not None and held is None
        sticky = held is not None and why == "sticky"
        if tier == "complex" and round_ - first + 1 > s.complex_rounds:
            tier, why = "medium", f"complex only for the first {s.complex_rounds} rounds"
        if level >= 2 and tier in ("complex", "medium"):
            tier, why = TIERS[RANK[tier] - 1], f"degrade level {level}: a cheaper tier"
        return Routed(
            s.routes[tier], d, cached, sticky, round_ - first + 1 >= s.escalate_round, why
        )

    def forget(self, task_id: str) -> None:
        with self._lock:
            self._tasks.pop(tenant_of(task_id), task_id)

    def _classify(self, text: str, image: bool) -> Difficulty:
        with self._lock:
            self.classified += 1
        return classify(text, image, self.model, self.settings)
