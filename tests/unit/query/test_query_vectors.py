"""`Encoding.queries`: several texts' query vectors at once, from the cache or encoded in one batch
on the queries' session, and cached."""

from __future__ import annotations

import numpy as np

from server.core.deadline import Deadline
from server.core.query.encoding import Encoding


class _Counting:
    dim = 4

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        rows = [[float(len(t)), 1.0, 0.0, 0.0] for t in texts]
        return np.asarray(rows, dtype=np.float32)


def test_the_uncached_texts_are_encoded_once_in_one_batch_and_cached() -> None:
    queries, writes = _Counting(), _Counting()
    enc = Encoding(queries, writes, 4)  # type: ignore[arg-type]
    try:
        enc.query("ns", "a", Deadline())
        got = enc.queries("ns", ["a", "bb", "ccc", "bb"], Deadline())
        assert queries.batches == [["a"], ["bb", "ccc"]] and writes.batches == []
        assert [float(v[0]) for v in got] == [1.0, 2.0, 3.0, 2.0]
        assert enc.cached("ns", "ccc") is not None and enc.cached("other", "ccc") is None
        again = enc.queries("ns", ["ccc", "a"], Deadline())
        assert len(queries.batches) == 2 and [float(v[0]) for v in again] == [3.0, 1.0]
    finally:
        enc.close()
