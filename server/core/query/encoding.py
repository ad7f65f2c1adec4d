"""Text encoding for the engine: memories on the writes' encoder session, queries on theirs, and
the queries' vectors kept in a small LRU.

A text-only Recall's query is encoded on one encoding thread while the keyword channel runs (the
encoder releases the GIL); an agent asks the same question of several steps, so a cached vector
answers at once. The cache is keyed by namespace too, so one tenant cannot time whether another
asked the same, and it is partitioned by tenant, so one tenant's queries never evict another's.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial

import numpy as np

from server.core.deadline import Deadline
from server.core.errors import DeadlineExceededError, FailedPreconditionError, Location
from server.core.memo import PartitionedLRU
from server.core.memory.model import Vector
from server.core.memory.ports import TextEncoder
from server.core.tenancy import tenant_of

# Texts encoded between two deadline checks (a few encoder batches: ~0.1 s on two cores).
ENCODE_CHUNK = 64
# Query texts whose vectors are kept per tenant (512 floats each: about 2 MiB).
QUERY_CACHE = 1024


class Encoding:
    """The engine's encoders (None: clients send vectors) and the queries' vector cache."""

    def __init__(
        self, encoder: TextEncoder | None, write_encoder: TextEncoder | None, dim: int
    ) -> None:
        self._encoder = encoder
        self._write_encoder = write_encoder or encoder
        self._dim = dim
        self._queries: PartitionedLRU[tuple[str, str], Vector] = PartitionedLRU(QUERY_CACHE)
        self._lock = threading.Lock()
        # One thread: the encoder runs one batch at a time anyway.
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="pocketd-encode")

    def ready(self, what: str, where: Location | None = None) -> TextEncoder:
        """The encoder, or the precise error why `what` cannot be encoded."""
        if self._encoder is None:
            raise FailedPreconditionError(
                f"{what} has no vector and the built-in encoder is disabled (encoder.text: none)",
                reason="ENCODER_DISABLED",
                where=where,
            )
        if self._encoder.dim != self._dim:
            raise FailedPreconditionError(
                f"{what} has no vector and the built-in encoder makes"
                f" {self._encoder.dim}-d vectors,"
                f" but memory.embedding_dim is {self._dim}",
                reason="ENCODER_DIM_MISMATCH",
                where=where,
            )
        return self._encoder

    def available(self) -> bool:
        """Whether queries can be encoded (an encoder of the configured dimension)."""
        return self._encoder is not None and self._encoder.dim == self._dim

    def encode(
        self,
        texts: list[str],
        what: str,
        deadline: Deadline,
        where: Location | None = None,
        write: bool = False,
    ) -> Vector:
        """Unit vectors of `texts`, checking the deadline between chunks; `write`: on the
        writes' session."""
        encoder = self.ready(what, where)
        if write and self._write_encoder is not None:
            encoder = self._write_encoder
        out = np.empty((len(texts), encoder.dim), dtype=np.float32)
        for start in range(0, len(texts), ENCODE_CHUNK):
            deadline.check("encoding")
            out[start : start + ENCODE_CHUNK] = encoder.encode(texts[start : start + ENCODE_CHUNK])
        return out

    def cached(self, namespace: str, text: str) -> Vector | None:
        with self._lock:
            return self._queries.get(tenant_of(namespace), (namespace, text))

    def query(self, namespace: str, text: str, deadline: Deadline) -> Vector:
        """The query's vector, from the cache or encoded (and then cached)."""
        return self.queries(namespace, [text], deadline)[0]

    def queries(self, namespace: str, texts: list[str], deadline: Deadline) -> list[Vector]:
        """The texts' vectors as queries: from the cache, the others encoded in one batch on
        the queries' session and cached (a memory written later from one of these texts is not
        encoded again)."""
        out = [self.cached(namespace, t) for t in texts]
        missing = list(dict.fromkeys(t for t, v in zip(texts, out, strict=True) if v is None))
        if not missing:
            return [v for v in out if v is not None]
        fresh = dict(zip(missing, self.encode(missing, "the query", deadline), strict=True))
        with self._lock:
            for t, v in fresh.items():
                self._queries.put(tenant_of(namespace), (namespace, t), v)
        return [v if v is not None else fresh[t] for t, v in zip(texts, out, strict=True)]

    def soon(
        self, namespace: str, text: str, deadline: Deadline
    ) -> tuple[Future[Vector], Callable[[], Vector]]:
        """Start encoding the query on the encoding thread; the future, and a function that
        waits for its vector no longer than the deadline allows."""
        job = self._pool.submit(self.query, namespace, text, deadline)
        return job, partial(_within, job, deadline)

    def close(self) -> None:
        self._pool.shutdown()


def _within(job: Future[Vector], deadline: Deadline) -> Vector:
    """The job's vector, waited for no longer than the call's deadline allows."""
    left = deadline.remaining()
    try:
        return job.result(timeout=None if math.isinf(left) else max(left, 0.0))
    except TimeoutError:
        job.cancel()
        raise DeadlineExceededError(
            "the deadline passed while the query was being encoded"
        ) from None
