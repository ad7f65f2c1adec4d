"""The agent loop's memory writes, off the call: a Step chooses each memory's id and returns at
once, and one thread writes them through the engine's write gate.

What a Step acknowledges is durable first: its memories are kept in the ledger's file
(`PendingWrites.keep`) in the same transaction as the Step's last charge, and dropped once
written. At start-up the loop writes what a crash left there (`PendingWrites.load`). A memory
whose write fails stays kept, and is tried again at the next start.

Encoding and a durable write take tens of ms each, and an agent loop writes about one memory a
round (a key event, a long tool output stored for `Get`). Written one by one, the writes fell
behind the Steps of a loop that runs rounds back to back. So the thread takes everything queued
(up to `BATCH`) and writes it as one batch: one encoder batch for the summaries, one durable
write. The thread runs below the readers (`background_nice`), so a Step's Recall gets the cores
first. A batch that fails is written again one memory at a time, so one bad memory does not
hold back the others; what still fails, or what the gate merges or refuses, is logged, and
stays kept for the next start (given up after `MAX_REPLAYS` of them). One that failed for a
reason other than the engine's refusal (the disk) is also written again by the next call that
settles its namespace; one the engine refused is not (it would only fail again until the
configuration changes), so it never holds its namespace's calls back.

Backpressure: with `max_pending` writes queued, a Step writes its own on the call.

Read-your-writes: an id a Step returns behaves like a record from that moment. Every
MemoryService call on a namespace first settles it (`settle`): it waits until the namespace's
queued writes are written (the replayed ones of a restart too), and writes again on the call
any that failed. So Get finds the memory, Forget erases it, and a client's upsert of its id
lands after the queued write and wins; a restart never replays a memory the store has held
(a Forget's erasure stays). The queue of one namespace is a Step's few memories:
settling waits for at most a batch or two. (Writing before the answer would put an encoder
batch and a durable write on every Step; the barrier costs only the calls that race a Step.)
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence

import msgspec

from server.core.agent.ports import LedgerStore, LedgerTx
from server.core.batching import batches
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import DeadlineExceededError, PocketdError, UnavailableError
from server.core.memory.model import GateDecision, NewMemory, Record, WriteHints
from server.core.priority import run_below_readers

log = logging.getLogger(__name__)
BATCH = 32


class Pending(msgspec.Struct):
    record: Record
    gist: str  # its vector is its extractive summary's (a long tool output's gist, not filler)
    replays: int = 0  # start-ups that tried to write it again

    def item(self) -> NewMemory:
        return NewMemory(self.record, None, hints=WriteHints(remember=True), client_memory_id=True)


class PendingWrites:
    """The acknowledged memories not yet written, kept in the ledger's file.

    Dropping a written memory's copy needs no fsync of its own (after a crash, one still kept
    is written again: the same id and text), so the drops ride along with the next Step's
    transaction (`keep`), and `flush` commits what is left at shutdown."""

    def __init__(self, store: LedgerStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._written: list[str] = []

    def keep(self, tx: LedgerTx, batch: Sequence[Pending]) -> None:
        for p in batch:
            tx.put_pending(p.record.memory_id, msgspec.msgpack.encode(p))
        with self._lock:
            written, self._written = self._written, []
        if written:
            tx.drop_pending(written)  # (lost with the transaction if it fails: written again)

    def sort_out(
        self, known: Callable[[Pending], bool], max_replays: int
    ) -> tuple[list[Pending], int, int]:
        """At start-up: the kept memories to write again (each with one replay more, kept so),
        after dropping those the store already has (written before the crash, and perhaps
        forgotten or updated since: never written again) and those tried `max_replays` times.
        Returns them, how many were already there, and how many were given up."""
        again, drop, given_up = [], [], 0
        for p in self.load():
            if known(p):
                drop.append(p.record.memory_id)
            elif p.replays >= max_replays:
                log.error(
                    "agent memory %s failed %d start-ups: given up", p.record.memory_id, p.replays
                )
                drop.append(p.record.memory_id)
                given_up += 1
            else:
                p.replays += 1
                again.append(p)

        def work(tx: LedgerTx) -> None:
            tx.drop_pending(drop)
            for p in again:
                tx.put_pending(p.record.memory_id, msgspec.msgpack.encode(p))

        self._store.run(work)
        return again, len(drop) - given_up, given_up

    def done(self, memory_ids: list[str]) -> None:
        with self._lock:
            self._written.extend(memory_ids)

    def flush(self) -> None:
        with self._lock:
            written, self._written = self._written, []
        if written:
            self._store.run(lambda tx: tx.drop_pending(written))

    def load(self) -> list[Pending]:
        bodies = self._store.run(lambda tx: tx.pending())
        return [msgspec.msgpack.decode(b, type=Pending) for b in bodies]


class MemoryWriter:
    def __init__(
        self,
        engine: MemoryEngine,
        nice: int = 0,
        max_pending: int = 256,
        written: Callable[[list[str]], None] | None = None,
    ) -> None:
        """`written`: told the ids of each batch written (or merged, or refused by the gate),
        so that their kept copies can go."""
        self._engine = engine
        self._written = written
        self._nice = nice
        self._max = max_pending
        self._queue: queue.SimpleQueue[Pending | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0  # queued and not yet written
        self._by_ns: dict[str, int] = {}  # the same, per namespace
        self._failed: dict[str, dict[str, Pending]] = {}  # per namespace, by id: kept, unwritten
        self._closed = False
        self._idle = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._run, name="pocketd-agent-memory", daemon=True)
        self._thread.start()

    def submit(self, p: Pending, behind: bool = True) -> None:
        """Queue `p`; `behind` False: queue it even past `max_pending` (start-up's replay)."""
        ns = p.record.namespace
        with self._lock:
            on_call = self._closed or (behind and self._pending >= self._max)
            if not on_call:
                self._pending += 1
                self._by_ns[ns] = self._by_ns.get(ns, 0) + 1
                self._queue.put(p)
        if on_call:  # the writes fall behind (or the writer closed): this one on the call
            self._write([p])

    def settle(self, namespace: str, deadline: Deadline) -> None:
        """Return once every memory acknowledged in `namespace` so far is in the store: wait
        for its queued writes (DEADLINE_EXCEEDED if the call's deadline passes first), then
        write on the call any whose write failed (UNAVAILABLE if one fails again: it stays
        kept, and the call may be retried)."""
        with self._idle:
            left = deadline.remaining()
            done = self._idle.wait_for(
                lambda: not self._by_ns.get(namespace), None if left == float("inf") else left
            )
            failed = list(self._failed.get(namespace, {}).values())
        if not done:
            raise DeadlineExceededError(
                f"the deadline passed while {namespace!r}'s acknowledged agent memories were"
                " being written"
            )
        for p in failed:
            deadline.check("writing an acknowledged agent memory")
            self._write([p])
        with self._lock:
            if self._failed.get(namespace):
                raise UnavailableError(
                    "an agent memory this namespace acknowledged cannot be written yet (see the"
                    " server log); it is kept, and the call may be retried"
                )

    def pending(self) -> int:
        with self._lock:
            return self._pending

    def flush(self, timeout: float) -> bool:
        """Wait until what was queued so far is written; whether it was, within `timeout`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued, then stop (before the engine closes). With `timeout` (the
        queued memories are kept, so the next start writes what is left), it waits no longer."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("%d agent memories left to the next start", self.pending())

    def _run(self) -> None:
        run_below_readers(self._nice)
        for batch in batches(self._queue, BATCH):
            self._write(batch)
            with self._idle:
                self._pending -= len(batch)
                for p in batch:
                    ns = p.record.namespace
                    self._by_ns[ns] -= 1
                    if not self._by_ns[ns]:
                        del self._by_ns[ns]
                self._idle.notify_all()

    def _write(self, batch: list[Pending]) -> None:
        try:
            self._remember(batch)
        except Exception as exc:
            if len(batch) == 1:
                p = batch[0]
                if isinstance(exc, PocketdError):  # refused: writing it again now would not help
                    log.error(
                        "agent memory %s refused (%s); kept for the next start",
                        p.record.memory_id,
                        exc,
                    )
                    return
                log.exception(
                    "an agent memory was not written (%s); kept for the next start",
                    p.record.memory_id,
                )
                with self._lock:
                    self._failed.setdefault(p.record.namespace, {})[p.record.memory_id] = p
                return
            log.warning("a batch of %d agent memories failed; writing them one by one", len(batch))
            for p in batch:
                self._write([p])
            return
        self._drop_kept(batch)

    def _drop_kept(self, batch: list[Pending]) -> None:
        """`batch` is written (or refused for good): its kept copies can go."""
        with self._lock:
            for p in batch:
                held = self._failed.get(p.record.namespace)
                if held is not None:
                    held.pop(p.record.memory_id, None)
                    if not held:
                        del self._failed[p.record.namespace]
        if self._written is not None:
            try:
                self._written([p.record.memory_id for p in batch])
            except Exception:  # written again at the next start: the same id, the same text
                log.exception("the kept copies of %d written memories stay", len(batch))

    def _remember(self, batch: list[Pending]) -> None:
        items = [p.item() for p in batch]
        summarized = [
            (p.gist, it)
            for p, it in zip(batch, items, strict=True)
            if p.gist not in ("", p.record.text)
        ]
        if summarized:
            vectors = self._engine.encode([gist for gist, _ in summarized])
            for (_, it), v in zip(summarized, vectors, strict=True):
                it.vector = v
        results = self._engine.remember(items)
        for p, res in zip(batch, results, strict=True):
            mid = p.record.memory_id
            if res.memory_id != mid or res.decision != GateDecision.STORED:
                log.warning(
                    "agent memory %s was %s (%s) as %s",
                    mid, res.decision.name.lower(), res.reason, res.memory_id,
                )  # fmt: skip
