"""The decision log's record (seed 003 §5.4): one per routed Recall, enough to explain the
decision afterwards and to train a policy from it."""

from __future__ import annotations

import msgspec


class LoggedStep(msgspec.Struct, frozen=True):
    pocket: str
    depth: int
    probability: float
    estimated_cost: float  # what the plan expected it to cost
    method: str  # how it ran: "exact", "coarse", "hnsw", "hot", "skipped" (early stop)
    cost_units: float  # what it cost
    best: float  # the best cosine it found (0 when it found none)


class Inputs(msgspec.Struct, frozen=True):
    """What a learned policy sees of one decision, kept for explored decisions: the training
    rows, and enough of each candidate pocket to replay any policy's plan offline."""

    layout: int  # `inputs.LAYOUT`
    width: int  # values per row
    pockets: list[str]  # the candidates, in row order
    sizes: list[int]
    methods: list[str]
    heuristic: list[float]  # the heuristic's probability of each
    rows: bytes  # float32, len(pockets) × width, row-major
    top_k: int
    budget: float  # the cost cap of a routed plan (cost units)
    skip_below: float = 0.1  # the probability below which a pocket could be skipped
    nothing: float = 0.0  # the probability that the query needed no memory


class Shadow(msgspec.Struct, frozen=True):
    """The full plan run beside a routed one (exploration, seed 003 §5.1)."""

    recall_at_k: float  # the share of the full plan's top k that the routed top k held
    cost_units: float  # what the full plan cost
    needed: list[str]  # the pockets of the full plan's top k: the training label


class DecisionRecord(msgspec.Struct, frozen=True):
    at: float  # when (seconds since the epoch)
    namespace: str
    features: str  # a digest of the route features (not the query: the log holds no text)
    flags: list[str]
    rules: list[str]  # the heuristic rules that fired
    policy: str  # the policy whose plan ran ("heuristic" for learned or hybrid with no model)
    widened: str  # why the plan became the full one ("" when it did not)
    steps: list[LoggedStep]
    cost_units: float  # spent by the Recall, keyword channel included
    full_cost_units: float  # what the full plan was estimated to cost
    hits: int
    took_micros: int
    shadow: Shadow | None = None  # for the share of decisions explored
    inputs: Inputs | None = None  # with the shadow: the training example
    model: str = ""  # the learned model's version, when one scored the pockets
    asked: str = ""  # the policy asked for (the request's or the configured one)
