"""The router (server/core/routing/router.py) over a real engine: the full switch, the heuristic
plan under its budget, the safety net and the confidence floor, and a routed Recall."""

from __future__ import annotations

import datetime as dt
import hashlib
from functools import partial
from pathlib import Path

import msgspec
import numpy as np
import pytest

from server.adapters.decision_log import FileDecisionLog, read_log
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import DeadlineExceededError
from server.core.memory.model import Kind, MemoryFilter, RecallQuery
from server.core.routing.ports import DecisionSink
from server.core.routing.router import Router
from server.core.settings import MemorySettings, RouterSettings
from tests.conftest import FakeClock, unit_vec
from tests.unit.test_engine import NS, mem

WEEK = 7 * 86_400.0


# Each intent's one example: a query that says it exactly reads as that intent.
EXAMPLES = {
    "profile": ("what is my shoe size",),
    "history": ("what exactly did we say about the printer last week, back then",),
    "summary": ("give me an overview of our chats",),
    "session": ("what did I just say",),
    "skill": ("how do I deploy",),
    "none": ("hello there",),
}


def encode(texts: list[str]) -> np.ndarray:
    """A stand-in encoder: a text's own random unit vector (the same text, the same vector)."""
    return np.stack(
        [unit_vec(np.random.default_rng(int.from_bytes(hashlib.blake2b(t.encode()).digest()[:8])))
         for t in texts]
    )  # fmt: skip


def vec(text: str) -> np.ndarray:
    return encode([text])[0]


def router(
    engine: MemoryEngine, sink: DecisionSink | None = None, explore: bool = False, **kw: object
) -> Router:
    kw.setdefault("intent_examples", EXAMPLES)
    s = msgspec.structs.replace(RouterSettings(), **kw)
    return Router(
        s,
        MemorySettings(),
        engine._keywords.analyze,
        engine.routable,
        engine._keywords.pocket_terms,
        sink,
        partial(engine.recall, shadow=True) if explore else None,
        seed=0,
        encode=encode,
    )


@pytest.fixture
def loaded(engine: MemoryEngine, clock: FakeClock) -> MemoryEngine:
    rng = np.random.default_rng(3)
    now = clock.now()
    items = [
        mem(f"My shoe size is {40 + i % 5}", Kind.PREFERENCE, unit_vec(rng), importance=4)
        for i in range(5)
    ]
    items += [
        mem(f"Deploy checklist step {i}", Kind.SKILL, unit_vec(rng), importance=3)
        for i in range(40)
    ]
    for w in range(6):  # six weeks of episodes, a week bucket each
        items += [
            mem(
                f"We talked about the printer, week {w} turn {i}",
                Kind.EPISODE,
                unit_vec(rng),
                importance=3,
                created_at=now - (w + 1) * WEEK - i * 60.0,
            )
            for i in range(30)
        ]
    engine.remember(items)
    engine.indexer.catch_up()
    return engine


def test_the_full_policy_searches_every_allowed_pocket(
    loaded: MemoryEngine, clock: FakeClock
) -> None:
    r = router(loaded, policy="full")
    d = r.decide(RecallQuery(NS, text="what is my shoe size"), None, clock.now())
    names = {p.name for p in loaded.routable(NS, MemoryFilter())}
    assert d.policy == "full" and {s.pocket for s in d.steps} == names and d.widened == ""
    assert r.plan(RecallQuery(NS, text="x"), None, clock.now()) is None  # the engine's default
    kinds = r.decide(
        RecallQuery(NS, text="x", filter=MemoryFilter(kinds=(Kind.SKILL,))), None, clock.now()
    )
    assert {s.pocket for s in kinds.steps} == {"skill/warm/text"}


def test_the_heuristic_routes_a_profile_question_to_the_profile(
    loaded: MemoryEngine, clock: FakeClock
) -> None:
    r = router(loaded, policy="heuristic")
    q = "what is my shoe size"
    d = r.decide(RecallQuery(NS, text=q), vec(q), clock.now())
    assert d.policy == "heuristic" and "about_me" in d.features.flags
    assert d.context.similarity["profile"] == pytest.approx(1.0, abs=1e-5)
    assert [s.pocket for s in d.steps] == ["preference/warm/text"]  # the rest below skip_below
    assert d.cost_units < d.full_cost_units
    # Routed through the engine: the answer is the same as the full plan's.
    loaded.planner = r
    routed = loaded.recall(RecallQuery(NS, text=q, vector=vec(q), top_k=3))
    loaded.planner = None
    full = loaded.recall(RecallQuery(NS, text=q, vector=vec(q), top_k=3))
    assert [h.record.key for h in routed.hits] == [h.record.key for h in full.hits]
    assert routed.cost_units < full.cost_units


def test_a_critical_pattern_widens_the_plan_to_full(loaded: MemoryEngine, clock: FakeClock) -> None:
    r = router(loaded, policy="heuristic")
    d = r.decide(RecallQuery(NS, text="which medication am I allergic to"), None, clock.now())
    assert d.policy == "full" and d.widened == "safety: allergic, medication"
    routed = r.plan(RecallQuery(NS, text="my passport number"), None, clock.now())
    names = {p.name for p in loaded.routable(NS, MemoryFilter())}
    assert routed is not None and {s.pocket for s in routed.steps} == names  # logged, in full


def test_an_unsure_policy_widens_the_plan_to_full(loaded: MemoryEngine, clock: FakeClock) -> None:
    r = router(loaded, policy="heuristic", min_confidence=0.99)
    d = r.decide(RecallQuery(NS, text="zebra"), vec("zebra"), clock.now())
    assert d.policy == "full" and d.widened.startswith("low confidence")
    # A query read blind (no vector) with no rule firing is unsure at the default floor too.
    blind = router(loaded, policy="heuristic").decide(RecallQuery(NS, text="zebra"), None, 0.0)
    assert blind.policy == "full" and blind.widened.startswith("low confidence: 0.30")
    assert blind.context.similarity == {}


def test_small_talk_searches_one_pocket(loaded: MemoryEngine, clock: FakeClock) -> None:
    d = router(loaded, policy="heuristic").decide(
        RecallQuery(NS, text="hello there"), vec("hello there"), clock.now()
    )
    assert d.policy == "heuristic" and len(d.steps) == 1


def test_a_time_cue_routes_to_the_buckets_it_names(loaded: MemoryEngine, clock: FakeClock) -> None:
    r = router(loaded, policy="heuristic")
    q = "what exactly did we say about the printer last week, back then"
    d = r.decide(RecallQuery(NS, text=q), vec(q), clock.now())
    last_week = dt.datetime.fromtimestamp(clock.now() - WEEK, dt.UTC).isocalendar()
    bucket = f"episode/warm/text/{last_week.year}-W{last_week.week:02d}"
    assert "time_window" in d.rules and [s.pocket for s in d.steps] == [bucket]
    # With no time cue, the history is searched whole: its topic may be in any week.
    q = "what exactly did we say about the printer back then"
    d = r.decide(RecallQuery(NS, text=q), vec(q), clock.now())
    weeks = {p.name for p in loaded.routable(NS, MemoryFilter()) if p.name.startswith("episode")}
    assert d.policy == "heuristic" and weeks <= {s.pocket for s in d.steps}


def test_a_routed_recall_is_logged_with_what_each_step_did(
    loaded: MemoryEngine, tmp_path: Path
) -> None:
    log = FileDecisionLog(tmp_path / "router", 1 << 20, 1)
    loaded.planner = router(loaded, log, policy="heuristic")
    res = loaded.recall(
        RecallQuery(
            NS, text="what is my shoe size", vector=unit_vec(np.random.default_rng(1)), top_k=3
        )
    )
    loaded.recall(RecallQuery(NS, text="my passport number"))
    loaded.planner.close()
    loaded.planner = None
    first, second = list(read_log(tmp_path / "router"))
    assert first.policy == "heuristic" and "about_me" in first.flags and first.hits == len(res.hits)
    assert first.steps[0].pocket == "preference/warm/text" and first.steps[0].method == "exact"
    assert first.steps[0].best > 0 and first.cost_units == pytest.approx(res.cost_units)
    assert second.policy == "full" and second.widened == "safety: passport"
    assert "shoe" not in first.features  # a digest, never the query's text


def test_a_failing_router_never_fails_a_recall(loaded: MemoryEngine) -> None:
    class Broken:
        def routes(self, *_: object) -> bool:
            return True

        def plan(self, *_: object) -> None:
            raise IndexError("a pocket appeared meanwhile")

        def close(self) -> None:
            pass

    q = dict(namespace=NS, text="what is my shoe size", top_k=3)
    expected = [h.record.key for h in loaded.recall(RecallQuery(**q)).hits]  # type: ignore[arg-type]
    loaded.planner = Broken()
    try:
        got = [h.record.key for h in loaded.recall(RecallQuery(**q)).hits]  # type: ignore[arg-type]
    finally:
        loaded.planner = None
    assert got == expected


def test_explored_decisions_log_the_full_plan_beside_the_routed_one(
    loaded: MemoryEngine, tmp_path: Path
) -> None:
    """Exploration (seed 003 §5.1): the full plan runs in shadow, off the request path, and the
    record gets its overlap, its cost and the pockets of its top k (the training label)."""
    log = FileDecisionLog(tmp_path / "router", 1 << 20, 1)
    r = router(loaded, log, explore=True, policy="heuristic", explore_share=1.0)
    loaded.planner = r
    q = RecallQuery(
        NS, text="what is my shoe size", vector=unit_vec(np.random.default_rng(4)), top_k=3
    )
    routed = loaded.recall(q)
    full = loaded.recall(RecallQuery(NS, text=q.text, vector=q.vector, top_k=3), shadow=True)
    r.close()
    loaded.planner = None
    (rec,) = list(read_log(tmp_path / "router"))
    assert rec.shadow is not None
    assert rec.shadow.needed == sorted({h.pocket for h in full.hits})
    top = {h.record.key for h in full.hits}
    assert rec.shadow.recall_at_k == pytest.approx(
        len(top & {h.record.key for h in routed.hits}) / len(top)
    )
    assert rec.shadow.cost_units == pytest.approx(full.cost_units)
    # Not explored: no shadow.
    log2 = FileDecisionLog(tmp_path / "r2", 1 << 20, 1)
    loaded.planner = router(loaded, log2, explore=True, policy="heuristic", explore_share=0.0)
    loaded.recall(RecallQuery(NS, text=q.text, top_k=3))
    loaded.planner.close()
    loaded.planner = None
    assert [x.shadow for x in read_log(tmp_path / "r2")] == [None]


class Spy:
    """A planner that records what the engine hands it, and routes nothing."""

    def __init__(self, routes: bool) -> None:
        self._routes = routes
        self.seen: list[np.ndarray | None] = []

    def routes(self, q: RecallQuery) -> bool:
        return self._routes

    def plan(self, q: RecallQuery, vector: np.ndarray | None, now: float) -> None:
        self.seen.append(vector)

    def close(self) -> None:
        pass


def test_a_routed_text_query_is_encoded_before_its_plan_is_chosen(loaded: MemoryEngine) -> None:
    spy = Spy(routes=True)
    loaded.planner = spy  # type: ignore[assignment]
    try:
        loaded.recall(RecallQuery(NS, text="what is my shoe size", top_k=3))
        (v,) = spy.seen
        assert v is not None and v.shape == (loaded._s.embedding_dim,)
        assert np.array_equal(v, loaded.cached_vector(NS, "what is my shoe size"))
        # A deadline that passes while encoding is the Recall's error, not a routing failure.
        with pytest.raises(DeadlineExceededError):
            loaded.recall(RecallQuery(NS, text="a new question"), Deadline(-1.0))
        assert len(spy.seen) == 1
        # Unrouted: the planner is not asked, and the query is still encoded (meanwhile).
        off = Spy(routes=False)
        loaded.planner = off  # type: ignore[assignment]
        assert loaded.recall(RecallQuery(NS, text="shoe size please", top_k=3)).hits
        assert off.seen == [] and loaded.cached_vector(NS, "shoe size please") is not None
    finally:
        loaded.planner = None
