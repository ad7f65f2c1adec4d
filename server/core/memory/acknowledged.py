"""The engine's intake of acknowledged memories: memories a caller (the agent loop's Step)
acknowledged under ids it chose, before they are written. `Acknowledged.accept` keeps them
durable (`AcknowledgedStore`: the memory side's own file, `<data_dir>/acknowledged.sqlite3`)
and returns at once; one thread writes them through the engine's write gate, and their kept
copies go once written. At start-up the engine writes what a crash left kept (`replay`); a
ledger file of an older pocketd, which kept them with the Step's last charge, hands its kept
memories over first (`adopt`). A memory whose write fails stays kept, and is tried again at the
next start.

Encoding and a durable write take tens of ms each, and an agent loop writes about one memory a
round (a key event, a long tool output stored for `Get`). Written one by one, the writes fell
behind the Steps of a loop that runs rounds back to back. So the thread takes everything queued
(up to `BATCH`) and writes it as one batch: one encoder batch for the summaries, one durable
write. The thread runs below the readers (`background_nice`), so a Step's Recall gets the cores
first. A batch that fails is written again one memory at a time, so one bad memory does not
hold back the others; what still fails is logged, and stays kept for the next start (given up
after `MAX_REPLAYS` of them); what the gate merges into another record or refuses is logged and
its copy dropped (its id then names no record: writing it again would do the same). One that
failed for a reason other than the engine's refusal (the disk) is written again by the next call
that settles its namespace; one the engine refused is not (it would only fail again until the
configuration changes), so it never holds its namespace's calls back.

Backpressure: with `max_pending` writes queued, `accept` writes them on the call.

Read-your-writes is the engine's rule: an acknowledged id behaves like a record from that
moment. Every engine call that reads or changes a namespace (Remember, Recall, Get, Forget,
List, Stats, Reconcile, Unsupersede, EndSession, Maintain) first settles it (`settle`): it
takes the namespace's queued memories (the replayed ones of a restart too) and those whose
write failed onto its own thread and writes them, and waits for the ones the writer thread is
writing now (one batch at most). So Get finds the memory, Forget erases it, and a client's
upsert of its id lands after the queued write and wins; a restart never replays a memory the
store has held (a Forget's erasure stays). A settle writes only its own namespace's memories and
waits for nothing acknowledged after it began, so neither another namespace's flood nor a
stream of new Steps can hold it back. (Writing before the answer would put an encoder batch and
a durable write on every Step; the barrier costs only the calls that race a Step.) A Step's own
Recall does not settle (it would put the previous Steps' writes on its call). The writer thread
takes one memory of each namespace in turn, so one namespace's flood does not delay the others'
writes either.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence

import msgspec

from server.core.deadline import Deadline
from server.core.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    UnavailableError,
)
from server.core.memory.model import (
    GateDecision,
    NewMemory,
    Record,
    Vector,
    WriteHints,
    WriteResult,
)
from server.core.memory.ports import AcknowledgedStore
from server.core.priority import run_below_readers

log = logging.getLogger(__name__)
BATCH = 32
CLOSE_SECONDS = 30.0  # at shutdown, the longest kept memories wait (the next start writes the rest)
MAX_REPLAYS = 3  # start-ups that try a kept memory again before it is given up (logged)
MAX_PENDING_WRITES = 256  # beyond this many queued memory writes, `accept` writes on the call
Encode = Callable[[list[str]], Vector]
Write = Callable[[list[NewMemory]], list[WriteResult]]


class Pending(msgspec.Struct):
    record: Record
    gist: str  # its vector is its extractive summary's (a long tool output's gist, not filler)
    replays: int = 0  # start-ups that tried to write it again

    def item(self) -> NewMemory:
        return NewMemory(self.record, None, hints=WriteHints(remember=True), client_memory_id=True)


def _body(p: Pending) -> tuple[str, bytes]:
    return p.record.memory_id, msgspec.msgpack.encode(p)


class Kept:
    """The acknowledged memories not yet written, in the intake's store (None: not kept, and a
    crash may lose them).

    Dropping a written memory's copy needs no fsync of its own (after a crash, one still kept
    is written again: the same id and text), so the drops ride along with the next `keep`, and
    `flush` commits what is left at shutdown."""

    def __init__(self, store: AcknowledgedStore | None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._written: list[str] = []

    def keep(self, batch: Sequence[Pending]) -> None:
        """Keep `batch` durable, with the drops of what was written since the last keep."""
        if self._store is None:
            return
        with self._lock:
            written, self._written = self._written, []
        try:
            self._store.keep([_body(p) for p in batch], written)
        except BaseException:
            self.done(written)  # dropped with a later keep
            raise

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
        if self._store is not None and (again or drop):
            self._store.keep([_body(p) for p in again], drop)
        return again, len(drop) - given_up, given_up

    def done(self, memory_ids: list[str]) -> None:
        with self._lock:
            self._written.extend(memory_ids)

    def flush(self) -> None:
        with self._lock:
            written, self._written = self._written, []
        if written and self._store is not None:
            self._store.keep([], written)

    def load(self) -> list[Pending]:
        bodies = [] if self._store is None else self._store.load()
        return [msgspec.msgpack.decode(b, type=Pending) for b in bodies]


class Acknowledged:
    """The intake: `accept` keeps a batch durable and queues it, `settle` writes a namespace's
    queued memories before a call reads or changes it, `replay` (at start-up) writes what a
    crash left kept, `adopt` takes over memories kept elsewhere (an older ledger file)."""

    def __init__(
        self,
        store: AcknowledgedStore | None,
        encode: Encode,
        write: Write,
        known: Callable[[str, str], bool],
        nice: int = 0,
        max_pending: int = MAX_PENDING_WRITES,
    ) -> None:
        """`encode`, `write`: the engine's encoder and its write path (which does not settle);
        `known`: whether the store has ever held a memory id in a namespace. `nice`: the
        writer thread's niceness."""
        self._store = store
        self._kept = Kept(store)
        self._known = known
        self._writer = MemoryWriter(encode, write, nice, max_pending, self._kept.done)

    def accept(self, batch: Sequence[Pending]) -> None:
        """Keep `batch` durable, then queue it to be written off the call."""
        if not batch:
            return
        self._kept.keep(batch)
        for p in batch:
            self._writer.submit(p)

    def settle(self, namespace: str, deadline: Deadline) -> None:
        """Every memory acknowledged in `namespace` before this call is in the store once it
        returns (`MemoryWriter.settle`)."""
        self._writer.settle(namespace, deadline)

    def adopt(self, bodies: Sequence[bytes]) -> int:
        """Keep here the memories another store kept (encoded `Pending`s: an older ledger
        file's), to be written by the next `replay`; how many."""
        batch = [msgspec.msgpack.decode(b, type=Pending) for b in bodies]
        self._kept.keep(batch)
        return len(batch)

    def replay(self) -> int:
        """Write the memories a crash left acknowledged and unwritten; how many. One the store
        already has is not written again (a Forget or an Update since stays)."""
        again, there, given_up = self._kept.sort_out(
            lambda p: self._known(p.record.namespace, p.record.memory_id), MAX_REPLAYS
        )
        for p in again:
            self._writer.submit(p, behind=False)
        if there or given_up:
            log.info("kept agent memories: %d already written, %d given up", there, given_up)
        return len(again)

    def pending(self) -> int:
        """Memories queued or being written."""
        return self._writer.pending()

    def flush(self, timeout: float) -> bool:
        """Wait until what was queued so far is written; whether it was, within `timeout`."""
        return self._writer.flush(timeout)

    def close(self) -> None:
        """Finish the writes queued so far (before the engine closes); kept ones wait at most
        `CLOSE_SECONDS` (the next start writes the rest), then the store closes."""
        self._writer.close(None if self._store is None else CLOSE_SECONDS)
        self._kept.flush()  # the copies of what was written since the last accept
        if self._store is not None:
            self._store.close()


class MemoryWriter:
    """One thread that writes the loop's memories in batches, fed by a queue per namespace and
    taking from them in turn (one namespace's flood never stands in front of another's few),
    and `settle`, which takes a namespace's queued and failed memories onto the calling thread.
    """

    def __init__(
        self,
        encode: Encode,
        write: Write,
        nice: int = 0,
        max_pending: int = MAX_PENDING_WRITES,
        written: Callable[[list[str]], None] | None = None,
    ) -> None:
        """`encode`, `write`: the engine's encoder and write path. `written`: told the ids of
        each batch written (or merged, or refused by the gate), so that their kept copies can
        go."""
        self._encode = encode
        self._write_items = write
        self._written = written
        self._nice = nice
        self._max = max_pending
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queues: OrderedDict[str, deque[Pending]] = OrderedDict()  # by namespace, in turn
        self._busy: dict[str, int] = {}  # per namespace: memories being written now
        self._pending = 0  # queued or being written, by the thread or by a settle
        self._failed: dict[str, dict[str, Pending]] = {}  # per namespace, by id: kept, unwritten
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="pocketd-agent-memory", daemon=True)
        self._thread.start()

    def submit(self, p: Pending, behind: bool = True) -> None:
        """Queue `p`; `behind` False: queue it even past `max_pending` (start-up's replay)."""
        with self._lock:
            on_call = self._closed or (behind and self._pending >= self._max)
            if not on_call:
                self._pending += 1
                self._queues.setdefault(p.record.namespace, deque()).append(p)
                self._changed.notify_all()
        if on_call:  # the writes fall behind (or the writer closed): this one on the call
            self._write([p])

    def settle(self, namespace: str, deadline: Deadline) -> None:
        """Return once every memory acknowledged in `namespace` before this call is in the
        store. Its queued memories and those whose write failed (for a reason other than the
        engine's refusal) are taken off the queue and written on this thread; one the writer
        thread is writing now is waited for (one batch at most). DEADLINE_EXCEEDED (or
        CANCELLED) if the call's deadline passes (or its client leaves) first; UNAVAILABLE if a
        write fails again (the memory stays kept, and the call may be retried)."""
        with self._lock:
            queued = list(self._queues.pop(namespace, ()))  # counted in `_pending`
            mine = queued + list(self._failed.pop(namespace, {}).values())
            if not mine and not self._busy.get(namespace):
                return  # the common case: nothing of this namespace is in flight
            self._mark(namespace, len(mine))
        try:
            if mine:
                self._write(mine)
        finally:
            with self._lock:
                self._mark(namespace, -len(mine))
                self._pending -= len(queued)
                self._changed.notify_all()
        with self._lock:
            while self._busy.get(namespace):  # the thread's batch, or another settle's
                deadline.check("waiting for the namespace's acknowledged agent memories")
                self._changed.wait(min(0.05, max(deadline.remaining(), 0.0)))
            if self._failed.get(namespace):
                raise UnavailableError(
                    "an agent memory this namespace acknowledged cannot be written yet (see the"
                    " server log); it is kept, and the call may be retried"
                )

    def _mark(self, namespace: str, n: int) -> None:
        """Count `n` memories of `namespace` in (or out of) the ones being written; under the
        lock."""
        left = self._busy.get(namespace, 0) + n
        if left:
            self._busy[namespace] = left
        else:
            self._busy.pop(namespace, None)
            self._changed.notify_all()

    def pending(self) -> int:
        with self._lock:
            return self._pending

    def flush(self, timeout: float) -> bool:
        """Wait until what was queued so far is written; whether it was, within `timeout`."""
        with self._changed:
            return self._changed.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued, then stop (before the engine closes). With `timeout` (the
        queued memories are kept, so the next start writes what is left), it waits no longer."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._changed.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("%d agent memories left to the next start", self.pending())

    def _take(self) -> list[Pending] | None:
        """The next batch, one memory of each namespace in turn, marked as being written; None
        once closed and drained. Under the lock."""
        while not self._queues:
            if self._closed:
                return None
            self._changed.wait()
        batch: list[Pending] = []
        while self._queues and len(batch) < BATCH:
            ns, q = next(iter(self._queues.items()))
            batch.append(q.popleft())
            del self._queues[ns]
            if q:
                self._queues[ns] = q  # to the back of the turn
            self._mark(ns, 1)
        return batch

    def _run(self) -> None:
        run_below_readers(self._nice)
        while True:
            with self._lock:
                batch = self._take()
            if batch is None:
                return
            try:
                self._write(batch)
            finally:
                with self._lock:
                    for p in batch:
                        self._mark(p.record.namespace, -1)
                    self._pending -= len(batch)
                    self._changed.notify_all()

    def _write(self, batch: list[Pending]) -> None:
        try:
            self._remember(batch)
        except Exception as exc:
            if len(batch) == 1:
                p = batch[0]
                if isinstance(exc, (InvalidArgumentError, FailedPreconditionError)):
                    # Refused: writing it again now would not help.
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
        """`batch` is written: its kept copies can go."""
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
            vectors = self._encode([gist for gist, _ in summarized])
            for (_, it), v in zip(summarized, vectors, strict=True):
                it.vector = v
        results = self._write_items(items)
        for p, res in zip(batch, results, strict=True):
            mid = p.record.memory_id
            if res.memory_id != mid or res.decision != GateDecision.STORED:
                log.warning(
                    "agent memory %s was %s (%s) as %s",
                    mid, res.decision.name.lower(), res.reason, res.memory_id,
                )  # fmt: skip
