"""A bounded thread pool that serves tenants in turn.

Each tenant's submitted work waits in its own queue; a free worker takes the next tenant's
oldest item, round-robin, so one tenant's burst (a few StepBatch calls, many Explains) never
sits in front of another tenant's call. While several tenants wait, none takes a worker beyond
its fair share (the workers over the tenants running or waiting). With `spare_one` (a server
with more than one tenant) a tenant runs on at most `threads - 1` workers at once, so a tenant
arriving at a pool busy with one other finds a worker free; otherwise it waits for the first
running call to end, never behind another tenant's queue. A server with one tenant uses them
all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from server.core.tenancy import DEFAULT

Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class FairPool(Executor):
    def __init__(
        self,
        threads: int,
        name: str,
        initializer: Callable[..., None] | None = None,
        initargs: tuple[Any, ...] = (),
        spare_one: bool = False,
    ) -> None:
        self._threads = threads
        self._cap = max(1, threads - 1) if spare_one else threads
        self._queues: OrderedDict[str, deque[Job]] = OrderedDict()
        self._running: dict[str, int] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._init = initializer
        self._initargs = initargs
        self._workers = [
            threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True)
            for i in range(threads)
        ]
        for w in self._workers:
            w.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """As `Executor.submit`, for the default tenant."""
        if kwargs:
            return self.submit_for(DEFAULT, lambda: fn(*args, **kwargs))
        return self.submit_for(DEFAULT, fn, *args)

    def submit_for(self, tenant: str, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queues.setdefault(tenant, deque()).append((fut, fn, args))
            self._cond.notify()
        return fut

    def _next(self) -> tuple[str, Job] | None:
        """The next tenant's oldest job (round-robin), under the lock; None: none may run."""
        if not self._queues:
            return None
        active = len(set(self._queues) | set(self._running))
        share = max(1, -(-self._threads // active))  # each active tenant's fair share
        contended = len(self._queues) > 1
        for tenant in list(self._queues):
            q = self._queues[tenant]
            running = self._running.get(tenant, 0)
            if running >= self._cap or (contended and running >= share):
                continue
            job = q.popleft()
            del self._queues[tenant]
            if q:
                self._queues[tenant] = q  # to the back of the turn
            return tenant, job
        return None

    def _work(self) -> None:
        if self._init is not None:
            self._init(*self._initargs)
        while True:
            with self._cond:
                got = self._next()
                while got is None:
                    if self._closed and not self._queues:
                        return
                    self._cond.wait()
                    got = self._next()
                tenant, (fut, fn, args) = got
                self._running[tenant] = self._running.get(tenant, 0) + 1
            try:
                if fut.set_running_or_notify_cancel():
                    try:
                        fut.set_result(fn(*args))
                    except BaseException as exc:
                        fut.set_exception(exc)
            finally:
                with self._cond:
                    self._running[tenant] -= 1
                    if not self._running[tenant]:
                        del self._running[tenant]
                    self._cond.notify_all()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = True) -> None:
        """Stop taking work; drop what is queued (`cancel_futures`) and wait for the work that
        is running (`wait`)."""
        with self._cond:
            self._closed = True
            if cancel_futures:
                for q in self._queues.values():
                    for fut, _, _ in q:
                        fut.cancel()
                self._queues.clear()
            self._cond.notify_all()
        if wait:
            for w in self._workers:
                w.join()
