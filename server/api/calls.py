"""How one MemoryService call is run: admission, its deadline, the worker pool, and its log line.

- **Admission**: at most `server.max_concurrent_calls` reads and as many writes are in flight
  (validating, queued for a worker, or running), counted apart so that writers held back by
  backpressure never crowd out reads. One more gets RESOURCE_EXHAUSTED at once, with a
  QuotaFailure naming the setting, instead of queueing without end. A call counts until its work
  has really stopped, not merely until its client has gone.
- **Deadline**: each call's work gets a `Deadline` from the client's deadline, capped by
  `server.max_call_seconds`. If the client cancels (or the deadline passes) the deadline is
  cancelled, and the engine stops at its next check; work still queued never starts.
- **Log**: one line per call at INFO (WARNING above `server.slow_call_ms`): method, namespace,
  status, duration and item count, never texts or vectors.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import grpc

from server.core.deadline import Deadline
from server.core.errors import ResourceExhaustedError
from server.core.priority import run_below_readers
from server.core.settings import ServerSettings

T = TypeVar("T")
log = logging.getLogger("pocketd.calls")
_CODE_NAMES: dict[int, str] = {code.value[0]: code.name for code in grpc.StatusCode}


class CallRecord:
    """What the log line says about one call; filled in as the call goes."""

    def __init__(self, method: str, namespace: str, items: int) -> None:
        self.method = method
        self.namespace = namespace
        self.items = items
        self.status = "OK"
        self.t0 = time.perf_counter()


class WorkerPools:
    """Two bounded thread pools: one for reads, one for writes. A writer waiting on
    backpressure (or a long batch being encoded) holds a write worker, never a read's."""

    def __init__(self, read_threads: int, write_threads: int, write_nice: int = 0) -> None:
        self.read = ThreadPoolExecutor(read_threads, thread_name_prefix="pocketd-read")
        self.write = ThreadPoolExecutor(
            write_threads,
            thread_name_prefix="pocketd-write",
            initializer=run_below_readers,
            initargs=(write_nice,),
        )

    @classmethod
    def from_settings(cls, s: ServerSettings) -> WorkerPools:
        return cls(s.worker_threads, s.write_threads, s.background_nice)

    def shutdown(self) -> None:
        """Drop queued work and wait for the work that is running (it stops at its next
        deadline check once its call was cancelled)."""
        for pool in (self.read, self.write):
            pool.shutdown(wait=True, cancel_futures=True)


class CallRunner:
    """Runs calls' blocking work in the worker pools under the admission bound."""

    def __init__(self, settings: ServerSettings, pools: WorkerPools) -> None:
        self._pools = pools
        self._limit = settings.max_concurrent_calls
        self._max_seconds = settings.max_call_seconds
        self._slow_s = settings.slow_call_ms / 1000.0
        self._in_flight = {False: 0, True: 0}  # reads, writes
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        return self._in_flight[False] + self._in_flight[True]

    def admit(self, write: bool) -> None:
        """Count a new read or write in, or refuse it (RESOURCE_EXHAUSTED) at the bound."""
        with self._lock:
            n = self._in_flight[write]
            if n >= self._limit:
                what = "writes" if write else "reads"
                raise ResourceExhaustedError(
                    f"{n} {what} are in flight; server.max_concurrent_calls is {self._limit}"
                    f" (for {what}): retry with backoff",
                    limit="server.max_concurrent_calls",
                )
            self._in_flight[write] = n + 1

    def release(self, write: bool) -> None:
        with self._lock:
            self._in_flight[write] -= 1

    def deadline(self, time_remaining: float | None) -> Deadline:
        """The work's deadline: the client's, capped by `server.max_call_seconds`."""
        client = math.inf if time_remaining is None else max(time_remaining, 0.0)
        return Deadline(min(client, self._max_seconds))

    async def run(
        self,
        work: Callable[[Deadline], T],
        deadline: Deadline,
        write: bool,
        check: Callable[[], None] | None = None,
    ) -> T:
        """Run `check()` (the request's validation), then `work(deadline)` in the read or the
        write pool; the caller has been admitted, and this releases it once the work has
        stopped (or, if it never started, at once). A write's `check` runs in the read pool
        first, so a bad request is refused at once, never queued behind writers held back by
        backpressure."""

        def guarded(validate: bool) -> T:
            try:
                if validate and check is not None:
                    check()
                deadline.check("the work started")
                return work(deadline)
            finally:
                self.release(write)

        try:
            if write and check is not None:
                await asyncio.wrap_future(self._pools.read.submit(check))
            pool = self._pools.write if write else self._pools.read
            fut = pool.submit(guarded, not write)
        except BaseException:  # invalid, or the pool is shut down: the work will never run
            self.release(write)
            raise
        try:
            return await asyncio.wrap_future(fut)
        except asyncio.CancelledError:
            deadline.cancel()
            if fut.cancel():  # still queued: it will never run, so release it here
                self.release(write)
            raise

    def log(self, rec: CallRecord) -> None:
        took = time.perf_counter() - rec.t0
        fields: dict[str, Any] = {
            "method": rec.method,
            "namespace": rec.namespace,
            "status": rec.status,
            "ms": round(took * 1000.0, 3),
            "items": rec.items,
        }
        level = logging.WARNING if took >= self._slow_s else logging.INFO
        if log.isEnabledFor(level):
            log.log(
                level,
                "%s ns=%s status=%s ms=%.2f items=%d%s",
                rec.method,
                rec.namespace or "-",
                rec.status,
                took * 1000.0,
                rec.items,
                " (slow)" if level == logging.WARNING else "",
                extra={"fields": fields},
            )


def code_name(code: int) -> str:
    """`3` → "INVALID_ARGUMENT"."""
    return _CODE_NAMES.get(code, str(code))
