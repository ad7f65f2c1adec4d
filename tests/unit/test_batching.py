"""Batches from a queue: at most `limit` each, and a stop that still yields what came before."""

from __future__ import annotations

import queue

from server.core.batching import batches


def test_batches_take_what_is_queued_up_to_the_limit_and_end_at_the_stop() -> None:
    q: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    for x in (1, 2, 3, 4, 5, None, 6):
        q.put(x)
    assert list(batches(q, 2)) == [[1, 2], [3, 4], [5]]
    assert q.get_nowait() == 6  # what came after the stop is left for the caller
