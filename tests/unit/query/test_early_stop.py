"""The early stop (server/core/query/early_stop.py): it must be sound (a plan stopped early
returns exactly what the whole plan returns) and it must stop when the other pockets are far."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path

import hypothesis.strategies as st
import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from server.core.engine import MemoryEngine
from server.core.memory.model import Kind, RecallQuery
from server.core.query.early_stop import best_cosine
from server.core.settings import MemorySettings
from tests.conftest import DIM, FakeClock, open_engine, unit_vec
from tests.unit.test_engine import NS, mem

KINDS = (Kind.FACT, Kind.PREFERENCE, Kind.SKILL, Kind.EPISODE)
WORDS = ("deploy", "invoice", "vpn", "printer", "refund", "laptop", "quota", "alert")


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    spread=st.floats(0.0, 2.0),
    dim=st.integers(2, 16),
)
def test_best_cosine_bounds_every_vector_of_the_cap(seed: int, spread: float, dim: int) -> None:
    rng = np.random.default_rng(seed)
    anchor = unit_vec(rng, dim).astype(np.float64)
    anchor /= np.linalg.norm(anchor)  # unit in float64, as the adapter keeps it
    xs = anchor + spread * rng.standard_normal((64, dim))
    xs /= np.linalg.norm(xs, axis=1, keepdims=True)
    floor = float((xs @ anchor).min())
    q = unit_vec(rng, dim).astype(np.float64)
    q /= np.linalg.norm(q)  # unit in float64: a float32 one can have a norm above 1
    assert float((xs @ q).max()) <= best_cosine(q, anchor, floor) + 1e-9
    # And it is tight for a cap of one vector.
    assert best_cosine(q, anchor, 1.0) == pytest.approx(float(q @ anchor), abs=2e-4)


@contextlib.contextmanager
def fresh_engine(settings: MemorySettings | None = None) -> Iterator[MemoryEngine]:
    with tempfile.TemporaryDirectory() as tmp:
        eng = open_engine(Path(tmp), None, FakeClock(), settings)
        try:
            yield eng
        finally:
            eng.close()


def results(eng: MemoryEngine, q: RecallQuery) -> list[tuple[int, float]]:
    return [(h.record.key, round(h.score.final, 5)) for h in eng.recall(q).hits]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(5, 110),  # beyond 64: the keyword list can be full
    top_k=st.integers(1, 6),
    with_text=st.booleans(),
    noise=st.floats(0.05, 1.5),
    min_score=st.sampled_from([0.0, 0.1, 0.3, 0.6]),
    exact_rows=st.sampled_from([8, 2048]),  # 8: most pockets are searched by HNSW
)
def test_a_plan_stopped_early_returns_what_the_whole_plan_returns(
    seed: int,
    n: int,
    top_k: int,
    with_text: bool,
    noise: float,
    min_score: float,
    exact_rows: int,
) -> None:
    rng = np.random.default_rng(seed)
    centres = [unit_vec(rng) for _ in range(3)]
    base_settings = MemorySettings()
    pockets = msgspec.structs.replace(base_settings.pockets, exact_max_rows=exact_rows)
    with fresh_engine(msgspec.structs.replace(base_settings, pockets=pockets)) as eng:
        items = []
        for i in range(n):
            c = centres[int(rng.integers(3))]
            v = c + noise * rng.standard_normal(DIM) / math.sqrt(DIM)
            words = " ".join(rng.choice(WORDS, size=3))
            items.append(
                mem(
                    f"{words} item {i}",
                    KINDS[int(rng.integers(4))],
                    v / np.linalg.norm(v),
                    importance=3,
                )
            )
        eng.remember(items)
        eng.indexer.catch_up()
        for _ in range(3):
            c = centres[int(rng.integers(3))]
            qv = (c + noise * rng.standard_normal(DIM) / math.sqrt(DIM)).astype(np.float32)
            text = " ".join(rng.choice(WORDS, size=2)) if with_text else ""
            base = dict(namespace=NS, text=text, vector=qv, top_k=top_k, min_score=min_score)
            full = results(eng, RecallQuery(**base))  # type: ignore[arg-type]
            early = results(eng, RecallQuery(**base, early_stop=True))  # type: ignore[arg-type]
            assert [s for _, s in early] == [s for _, s in full]
            assert early == full or len({s for _, s in full}) < len(full)  # ties may reorder


def test_far_pockets_are_skipped(engine: MemoryEngine) -> None:
    rng = np.random.default_rng(21)
    near, far = unit_vec(rng), unit_vec(rng)
    engine.remember(
        [
            mem(f"fact {i}", Kind.FACT, (near + 0.05 * unit_vec(rng)), importance=3)
            for i in range(20)
        ]
        + [mem(f"skill {i}", Kind.SKILL, -near, importance=3) for i in range(1)]
        + [mem(f"pref {i}", Kind.PREFERENCE, (far - near), importance=3) for i in range(5)]
    )
    engine.indexer.catch_up()
    q = RecallQuery(NS, vector=near.astype(np.float32), top_k=5, early_stop=True)
    res = engine.recall(q)
    methods = {s.pocket: s.method for s in res.plan}
    assert methods["fact/warm/text"] == "exact"
    assert methods["skill/warm/text"] == "skipped"
    assert [h.record.key for h in res.hits] == [
        h.record.key for h in engine.recall(RecallQuery(NS, vector=q.vector, top_k=5)).hits
    ]


def test_a_memory_rounded_into_the_next_week_keeps_its_time_cue(
    engine: MemoryEngine, clock: FakeClock
) -> None:
    """Created a fraction of a microsecond before Monday 00:00, an episode is bucketed into the
    new week (datetime rounds to microseconds) but its time lies in "last week": the ceiling
    must use the pocket's event times, not its bucket's span."""
    d = dt.datetime.fromtimestamp(clock.now(), dt.UTC)
    monday = (d - dt.timedelta(days=d.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    t = float(np.nextafter(monday.timestamp(), -math.inf))
    rng = np.random.default_rng(3)
    q = unit_vec(rng)
    r = unit_vec(rng)
    r -= (r @ q) * q
    r /= np.linalg.norm(r)
    engine.remember(
        [
            mem("the fact", Kind.FACT, q.copy(), importance=3),
            mem("the episode", Kind.EPISODE, 0.6 * q + 0.8 * r, importance=3, created_at=t),
        ]
    )
    engine.indexer.catch_up()
    base = dict(namespace=NS, text="what happened last week", vector=q, top_k=1, min_score=0.0)
    full = results(engine, RecallQuery(**base))  # type: ignore[arg-type]
    assert full == results(engine, RecallQuery(**base, early_stop=True))  # type: ignore[arg-type]
