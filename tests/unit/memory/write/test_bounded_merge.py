"""A batch of near-duplicates (one vector, long texts that differ in one identifier) stays
bounded: each text's identifiers are extracted once, each item weighs a few candidates, and the
write stops at its deadline inside the merge, not only before the commit (issue 17: 256 such
facts held the single writer 175 s)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import CallCancelledError, DeadlineExceededError
from server.core.memory.write import dedup
from server.core.memory.write.writer import MERGE_CANDIDATES
from tests.conftest import unit_vec
from tests.unit.test_engine import mem

N = 256


def tickets(rng: np.random.Generator) -> list[Any]:
    v = unit_vec(rng)
    body = "The customer reported that the export job fails on large files. " * 30
    return [mem(f"Ticket T-{10_000 + i}: {body}", vector=v) for i in range(N)]


def test_identifiers_once_per_text_and_few_verdicts(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"ids": 0, "verdicts": 0}
    real_ids = dedup.identifiers

    def counted(text: str) -> frozenset[str]:
        calls["ids"] += 1
        return real_ids(text)

    monkeypatch.setattr(dedup, "identifiers", counted)
    policy = engine._writer._merge  # type: ignore[attr-defined]
    policy._ids = dedup.TextMemo(counted, dedup.MEMO_TEXTS)
    real_verdict = policy.verdict

    def verdict(*args: Any) -> str | None:
        calls["verdicts"] += 1
        return real_verdict(*args)

    monkeypatch.setattr(policy, "verdict", verdict)
    results = engine.remember(tickets(np.random.default_rng(7)))
    assert len({r.memory_id for r in results}) == N  # one identifier apart: never merged
    assert calls["verdicts"] <= N * MERGE_CANDIDATES
    assert calls["ids"] <= N  # each text once, not once per pair weighed


def test_the_merge_checks_the_deadline(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = engine._writer._merge  # type: ignore[attr-defined]
    real_verdict = policy.verdict
    deadline = Deadline()
    weighed = 0

    def verdict(*args: Any) -> str | None:
        nonlocal weighed
        weighed += 1
        if weighed == 20:
            deadline.cancel()  # the client leaves during the merge
        return real_verdict(*args)

    monkeypatch.setattr(policy, "verdict", verdict)
    with pytest.raises((CallCancelledError, DeadlineExceededError)):
        engine.remember(tickets(np.random.default_rng(8)), deadline)
    assert weighed < 20 + 16 * MERGE_CANDIDATES  # stopped within the next check's stride
