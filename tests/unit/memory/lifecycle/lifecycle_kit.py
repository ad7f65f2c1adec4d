"""What the lifecycle's fake-clock tests share: settings that keep the background threads out of
the way, a maintenance run that the indexes have caught up with, and a memory's tier as the store
holds it."""

from __future__ import annotations

from typing import Any

import msgspec

from server.core.deadline import no_deadline
from server.core.engine import MemoryEngine
from server.core.memory.model import MaintainReport, MemoryFilter, RecallQuery, Record, Tier
from server.core.settings import MemorySettings
from tests.unit.test_engine import NS

DAY = 86_400.0
MONTH = 30 * DAY


def lifecycle_settings(
    expire_after_days: float = 3650.0, hot: dict[str, Any] | None = None, **lifecycle: Any
) -> MemorySettings:
    """Memory settings for a lifecycle test: `lifecycle` maps a part of `memory.lifecycle`
    (retention, compression, …) to the keys it overrides, `hot` those of `memory.hot`.

    The engine's frequent tick (access flush, session ends, hot tier moves) reads the fake clock
    from a real-time thread, so it would end a session or move a tier at an unknown moment after
    the test moves the clock: it is set to its longest interval, and the test runs what it needs
    (`engine.maintain`, `engine.access.flush`) itself. The schedule's interval is an hour of real
    time too, so it never runs during a test. Memories expire after ten years unless the test
    says otherwise, so that retention, not expiry, decides what a test about retention sees."""
    s = MemorySettings()
    parts = {
        name: msgspec.structs.replace(getattr(s.lifecycle, name), **keys)
        for name, keys in lifecycle.items()
    }
    return msgspec.structs.replace(
        s,
        access_flush_seconds=3600.0,
        hot=msgspec.structs.replace(s.hot, **(hot or {})),
        write_policy=msgspec.structs.replace(s.write_policy, expire_after_days=expire_after_days),
        lifecycle=msgspec.structs.replace(s.lifecycle, **parts),
    )


def maintain(engine: MemoryEngine, namespace: str = NS) -> MaintainReport:
    """One maintenance run, then the warm and cold indexes caught up with what it changed."""
    report = engine.maintain(namespace, no_deadline())
    engine.indexer.catch_up()
    return report


def records(engine: MemoryEngine, namespace: str = NS) -> dict[str, Record]:
    """Every live memory of the namespace by id, as List reads them (not counted as accesses,
    which would make them fresh)."""
    page = engine.list(namespace, MemoryFilter(), 100_000, None)
    assert page.next_after is None
    return {r.memory_id: r for r in page.records}


def tiers(engine: MemoryEngine, namespace: str = NS) -> dict[str, Tier]:
    """Where each live memory of the namespace lives now."""
    return {m: r.tier for m, r in records(engine, namespace).items()}


def recalled(engine: MemoryEngine, text: str, **q: Any) -> list[str]:
    """The ids a Recall of `text` returns (cold pockets only with include_cold=True)."""
    res = engine.recall(RecallQuery(namespace=NS, text=text, top_k=20, **q))
    return [h.record.memory_id for h in res.hits]
