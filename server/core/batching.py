"""Batches from a queue, for a writer thread that commits what has gathered in one go (group
commit): the ledger's writer and the agent loop's memory writer."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


def batches(q: queue.SimpleQueue[T | None], limit: int) -> Iterator[list[T]]:
    """What is queued, in batches of at most `limit`: it waits for the first item, then takes
    what is already there. A None is the stop: the batch before it is still yielded."""
    while True:
        first = q.get()
        if first is None:
            return
        batch = [first]
        while len(batch) < limit:
            try:
                nxt = q.get_nowait()
            except queue.Empty:
                break
            if nxt is None:
                yield batch
                return
            batch.append(nxt)
        yield batch
