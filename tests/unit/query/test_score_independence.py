"""A memory's score depends on the query, the namespace's statistics and the memory: not on the
plan, the pockets it searched or how deep."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.memory.model import Kind, PlanStep, RecallQuery
from tests.conftest import DIM, unit_vec
from tests.unit.query.test_early_stop import KINDS, WORDS, fresh_engine
from tests.unit.test_engine import NS, mem

ZH_WORDS = ["天气", "会议", "报告", "项目", "猫咪", "预算"]
SPEAKERS = ["user", "assistant", "Alice"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(8, 110),  # beyond 64: the keyword list can be full (then it bounds nothing)
    with_text=st.booleans(),
    data=st.data(),
)
def test_a_memorys_score_is_the_same_under_every_plan(
    seed: int, n: int, with_text: bool, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    centres = [unit_vec(rng) for _ in range(3)]
    indexed = data.draw(st.booleans(), label="indexed")
    with fresh_engine() as eng:
        if not indexed:  # some memories stay only in the hot tier, scored there, all along
            eng.indexer.step = lambda: 0  # type: ignore[method-assign]
        items = []
        for i in range(n):
            c = centres[int(rng.integers(3))]
            v = c + 0.8 * rng.standard_normal(DIM) / math.sqrt(DIM)
            # some memories in the other script, some turns of a chat role: the cross-script
            # share and the role factor are scored (and bounded by the early stop) like the rest
            pool = ZH_WORDS if rng.random() < 0.3 else WORDS
            words = " ".join(rng.choice(pool, size=3))
            kind = KINDS[int(rng.integers(len(KINDS)))]
            extra: dict[str, str] = (
                {"session_id": f"s{i % 3}", "speaker": str(rng.choice(SPEAKERS))}
                if kind == Kind.EPISODE
                else {}
            )
            items.append(
                mem(f"{words} item {i}", kind, v / np.linalg.norm(v), importance=3, **extra)
            )
        eng.remember(items)
        if indexed:
            eng.indexer.catch_up()
        qv = centres[int(rng.integers(3))] + 0.8 * rng.standard_normal(DIM) / math.sqrt(DIM)
        unrouted = eng.recall(RecallQuery(NS, vector=qv.astype(np.float32)))
        pockets = sorted({s.pocket for s in unrouted.plan})
        pool = ZH_WORDS if rng.random() < 0.3 else WORDS
        voice = str(rng.choice(["", "what did I say about ", "what did you suggest about "]))
        text = voice + " ".join(rng.choice(pool, size=2)) if with_text else ""
        base = dict(namespace=NS, text=text, vector=qv.astype(np.float32), min_score=0.0, top_k=n)
        full = {
            h.record.key: h.score.final
            for h in eng.recall(RecallQuery(**base)).hits  # type: ignore[arg-type]
        }
        for _ in range(3):
            chosen = data.draw(st.lists(st.sampled_from(pockets), min_size=1, unique=True))
            plan = [PlanStep(p, data.draw(st.integers(1, 8), label="depth")) for p in chosen]
            q = RecallQuery(**base, plan=plan, early_stop=data.draw(st.booleans()))  # type: ignore[arg-type]
            for h in eng.recall(q).hits:
                assert h.pocket in chosen
                # A shallow plan may not find a memory, but one it finds scores as under the
                # full plan, whichever channel found it.
                assert h.record.key in full
                assert math.isclose(h.score.final, full[h.record.key], rel_tol=1e-5, abs_tol=1e-6)
