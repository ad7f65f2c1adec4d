"""How one MemoryService call is run: admission, its deadline, the worker pool, and its log line.

- **Admission**: at most `server.max_concurrent_calls` reads, as many single writes (Remember,
  Unsupersede, EndSession), as many bulk writes (RememberBatch, Reconcile, Maintain) and as many
  agent calls (LedgerService, AgentService) are in flight (validating, queued for a worker, or
  running), counted apart and across every service, so that writers held back by backpressure
  never crowd out reads, an import or a maintenance run never takes a Remember's slot, and Steps
  never crowd out either. With more than one tenant, a tenant has at most
  `server.max_calls_per_tenant` of each in flight, a StepBatch counting as its Steps. One more
  gets RESOURCE_EXHAUSTED at once, with a QuotaFailure naming the setting, instead of queueing
  without end. A call counts until its work has really stopped, not merely until its client has
  gone. The pools serve tenants in turn (`server.api.fairpool`).
- **Deadline**: each call's work gets a `Deadline` from the client's deadline, capped by
  `server.max_call_seconds`. If the client cancels (or the deadline passes) the deadline is
  cancelled, and the engine stops at its next check; work still queued never starts.
- **Log**: one line per call at INFO (WARNING above `server.slow_call_ms`): method, tenant,
  request id (`server.api.observe`), namespace, status (DEADLINE_EXCEEDED when the client's
  deadline passed, CANCELLED when it left), duration and item count, never texts or vectors.
  A call whose client left while its work ran is logged when the work has stopped, with the
  time it really took.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from server.api.fairpool import FairPool
from server.core.deadline import Deadline
from server.core.errors import ResourceExhaustedError
from server.core.metrics import Metrics, NoMetrics
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
        # The client left while the work ran on: the line is written once the work stops.
        self.deferred = False
        self.tenant = ""
        self.request_id = ""


class Lane(enum.Enum):
    """The pools a call can run in, each with its own admission bound."""

    READ = "reads"
    WRITE = "writes"
    BULK = "bulk writes"
    AGENT = "agent calls"

    @property
    def writes(self) -> bool:
        return self in (Lane.WRITE, Lane.BULK)


class WorkerPools:
    """Four bounded pools that serve tenants in turn (`FairPool`): MemoryService's reads, its
    single writes (a writer waiting on backpressure holds a write worker, never a read's), its
    bulk writes, and LedgerService and AgentService calls (a ledger transaction, a Step and the
    memory write it may fall back to never hold a Recall's worker).

    Only the bulk pool runs niced (`write_nice`, `server.background_nice`): an import's
    batches yield the cores to everything else. A single Remember is as interactive as a
    Recall, and runs at its priority: niced, the writes of a steady mixed load starved whenever
    the reads and Steps filled both cores (a 30-minute `make soak` at 80 % of capacity had a
    burst fill the write lane's 64 slots; in a 6-minute one, Remember's p99 was 195 ms against
    Recall's 44 ms). Both write pools still take the writer's lock in turn."""

    def __init__(
        self,
        read_threads: int,
        write_threads: int,
        write_nice: int = 0,
        agent_threads: int = 2,
        spare_one: bool = False,
    ) -> None:
        self.read = FairPool(read_threads, "pocketd-read", spare_one=spare_one)
        self.write = FairPool(write_threads, "pocketd-write", spare_one=spare_one)
        self.bulk = FairPool(
            write_threads,
            "pocketd-bulk",
            initializer=run_below_readers,
            initargs=(write_nice,),
            spare_one=spare_one,
        )
        self.agent = FairPool(agent_threads, "pocketd-agent", spare_one=spare_one)

    @classmethod
    def from_settings(cls, s: ServerSettings, tenants: int = 1) -> WorkerPools:
        """`tenants`: how many tenants may call (more than one: each leaves a worker free)."""
        return cls(
            s.worker_threads, s.write_threads, s.background_nice, s.agent_threads, tenants > 1
        )

    def lane(self, lane: Lane) -> FairPool:
        pools = {
            Lane.READ: self.read,
            Lane.WRITE: self.write,
            Lane.BULK: self.bulk,
            Lane.AGENT: self.agent,
        }
        return pools[lane]

    def shutdown(self) -> None:
        """Drop queued work and wait for the work that is running (it stops at its next
        deadline check once its call was cancelled)."""
        for pool in (self.read, self.write, self.bulk, self.agent):
            pool.shutdown(wait=True, cancel_futures=True)


class CallRunner:
    """Runs calls' blocking work in the worker pools under the admission bounds. One runner
    serves every service, so the bounds count every call of a lane."""

    def __init__(
        self,
        settings: ServerSettings,
        pools: WorkerPools,
        tenants: int = 1,
        metrics: Metrics | None = None,
    ) -> None:
        """`tenants`: how many tenants may call; with one, it has the whole bound. `metrics`:
        where the handlers report what they did (none: nowhere)."""
        self.metrics: Metrics = metrics or NoMetrics()
        self._pools = pools
        self._limit = settings.max_concurrent_calls
        self._per_tenant = settings.max_calls_per_tenant if tenants > 1 else 0
        self._max_seconds = settings.max_call_seconds
        self._slow_s = settings.slow_call_ms / 1000.0
        self._in_flight = dict.fromkeys(Lane, 0)
        self._tenants: dict[tuple[Lane, str], int] = {}
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        return sum(self._in_flight.values())

    def in_lane(self, lane: Lane) -> int:
        """Calls in flight in `lane` (admitted, not yet stopped)."""
        return self._in_flight[lane]

    def admit(self, lane: Lane, tenant: str, weight: int = 1) -> None:
        """Count a new call in, or refuse it (RESOURCE_EXHAUSTED): beyond the lane's bound of
        calls, or beyond the tenant's share of work (`weight`: a StepBatch counts as its Steps).
        With more than one tenant, a tenant with nothing in flight in the lane may always start
        one call, so other tenants filling the lane never lock it out (the bound can be passed
        by at most one call per tenant)."""
        with self._lock:
            n = self._in_flight[lane]
            mine = self._tenants.get((lane, tenant), 0)
            idle = bool(self._per_tenant) and not mine  # with tenants, an idle one gets in
            if n >= self._limit and not idle:
                what = lane.value
                raise ResourceExhaustedError(
                    f"{n} {what} are in flight; server.max_concurrent_calls is {self._limit}"
                    f" (for {what}): retry with backoff",
                    limit="server.max_concurrent_calls",
                )
            if self._per_tenant and mine and mine + weight > self._per_tenant:
                raise ResourceExhaustedError(
                    f"this tenant has {mine} {lane.value} in flight (a StepBatch counts as its"
                    f" Steps); server.max_calls_per_tenant is {self._per_tenant}: retry with"
                    " backoff",
                    limit="server.max_calls_per_tenant",
                )
            self._in_flight[lane] = n + 1
            self._tenants[(lane, tenant)] = mine + weight

    def release(self, lane: Lane, tenant: str, weight: int = 1) -> None:
        with self._lock:
            self._in_flight[lane] -= 1
            left = self._tenants[(lane, tenant)] - weight
            if left:
                self._tenants[(lane, tenant)] = left
            else:
                del self._tenants[(lane, tenant)]

    def deadline(self, time_remaining: float | None) -> Deadline:
        """The work's deadline: the client's, capped by `server.max_call_seconds`."""
        client = math.inf if time_remaining is None else max(time_remaining, 0.0)
        return Deadline(min(client, self._max_seconds))

    async def run(
        self,
        work: Callable[[Deadline], T],
        deadline: Deadline,
        lane: Lane,
        tenant: str,
        weight: int = 1,
        check: Callable[[], None] | None = None,
        rec: CallRecord | None = None,
    ) -> T:
        """Run `check()` (the request's validation), then `work(deadline)` in the lane's pool;
        the caller has been admitted, and this releases it once the work has stopped (or, if it
        never started, at once). A write's `check` runs in the read pool first, so a bad
        request is refused at once, never queued behind writers held back by backpressure. If
        the client leaves while the work runs, `rec`'s line is logged when the work stops."""
        write = lane.writes

        def guarded(validate: bool) -> T:
            try:
                if validate and check is not None:
                    check()
                deadline.check("the work started")
                return work(deadline)
            finally:
                self.release(lane, tenant, weight)

        try:
            if write and check is not None:
                await asyncio.wrap_future(self._pools.read.submit_for(tenant, check))
            fut = self._pools.lane(lane).submit_for(tenant, guarded, not write)
        except BaseException:  # invalid, or the pool is shut down: the work will never run
            self.release(lane, tenant, weight)
            raise
        try:
            return await asyncio.wrap_future(fut)
        except asyncio.CancelledError:
            deadline.cancel()
            if fut.cancel():  # still queued: it will never run, so release it here
                self.release(lane, tenant, weight)
            elif rec is not None:  # running: its line says when it really stopped
                rec.deferred = True
                fut.add_done_callback(lambda _: self.log(rec))
            raise

    def log(self, rec: CallRecord) -> None:
        took = time.perf_counter() - rec.t0
        fields: dict[str, Any] = {
            "method": rec.method,
            "tenant": rec.tenant,
            "request_id": rec.request_id,
            "namespace": rec.namespace,
            "status": rec.status,
            "ms": round(took * 1000.0, 3),
            "items": rec.items,
        }
        level = logging.WARNING if took >= self._slow_s else logging.INFO
        if log.isEnabledFor(level):
            log.log(
                level,
                "%s tenant=%s ns=%s status=%s ms=%.2f items=%d rid=%s%s",
                rec.method,
                rec.tenant or "-",
                rec.namespace or "-",
                rec.status,
                took * 1000.0,
                rec.items,
                rec.request_id or "-",
                " (slow)" if level == logging.WARNING else "",
                extra={"fields": fields},
            )


def code_name(code: int) -> str:
    """`3` → "INVALID_ARGUMENT"."""
    return _CODE_NAMES.get(code, str(code))
