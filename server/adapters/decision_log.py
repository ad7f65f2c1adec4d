"""The decision log on disk: append-only, bounded, written off the request path.

Records are msgspec MessagePack frames, each behind its 4-byte big-endian length, in
`decisions.log`. Once that file passes `max_bytes` it is renamed `decisions.log.1` (the older
ones shift up, and `decisions.log.<files>` is deleted), so the log never takes more than about
`files + 1` × `max_bytes`. A writer thread drains a bounded queue; a Recall only enqueues, and
when the queue is full the record is dropped and counted (`dropped`). A frame cut short by a
crash is cut off when the log is next opened, and ends its file for `read_log`, which goes on
with the next file.
"""

from __future__ import annotations

import logging
import queue
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec

from server.core.routing.record import DecisionRecord

log = logging.getLogger(__name__)
NAME = "decisions.log"
QUEUE = 4096
_LEN = struct.Struct(">I")
_STOP = object()


class FileDecisionLog:
    """`DecisionSink` into files under `root`."""

    def __init__(self, root: Path, max_bytes: int, files: int) -> None:
        self._root = root
        self._root.mkdir(parents=True, exist_ok=True)
        self._max = max_bytes
        self._files = files
        self._queue: queue.Queue[object] = queue.Queue(QUEUE)
        self._enc = msgspec.msgpack.Encoder()
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="pocketd-decisions", daemon=True)
        self._thread.start()

    def write(self, rec: DecisionRecord) -> None:
        if not self._thread.is_alive():
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(rec)
        except queue.Full:
            self.dropped += 1

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop; a writer that is stuck (a full disk that blocks)
        is left behind after `timeout` seconds rather than holding up the shutdown."""
        if self._thread.is_alive():
            try:
                self._queue.put(_STOP, timeout=timeout)
            except queue.Full:
                log.warning("the decision log's writer is stuck; its queue is dropped")
            self._thread.join(timeout)
        if self.dropped:
            log.warning("the decision log dropped %d records", self.dropped)

    def _run(self) -> None:
        path = self._root / NAME
        _trim(path)  # a frame torn by a crash must not be followed by new ones
        fh = open(path, "ab")  # noqa: SIM115 - held open by the writer thread
        try:
            while (item := self._queue.get()) is not _STOP:
                try:
                    frame = self._enc.encode(item)
                    fh.write(_LEN.pack(len(frame)) + frame)
                    if self._queue.empty():
                        fh.flush()
                    if fh.tell() >= self._max:
                        fh.close()
                        self._rotate()
                        fh = open(path, "ab")  # noqa: SIM115
                except Exception:  # one record lost, never a Recall; the log goes on
                    self.dropped += 1
                    if self.dropped == 1 or self.dropped % 1000 == 0:
                        log.exception("the decision log lost a record (%d so far)", self.dropped)
                    if fh.closed:
                        fh = open(path, "ab")  # noqa: SIM115
        finally:
            fh.close()

    def _rotate(self) -> None:
        oldest = self._root / f"{NAME}.{self._files}"
        oldest.unlink(missing_ok=True)
        for n in range(self._files - 1, 0, -1):
            older = self._root / f"{NAME}.{n}"
            if older.exists():
                older.rename(self._root / f"{NAME}.{n + 1}")
        if self._files > 0:
            (self._root / NAME).rename(self._root / f"{NAME}.1")
        else:
            (self._root / NAME).unlink()


def _frames(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(end offset, frame) of each whole frame, up to the first one cut short."""
    at = 0
    while at + _LEN.size <= len(data):
        (n,) = _LEN.unpack_from(data, at)
        if at + _LEN.size + n > len(data):
            return
        yield at + _LEN.size + n, data[at + _LEN.size : at + _LEN.size + n]
        at += _LEN.size + n


def _trim(path: Path) -> None:
    """Cut a file back to its last whole frame."""
    if not path.exists():
        return
    data = path.read_bytes()
    end = max((e for e, _ in _frames(data)), default=0)
    if end < len(data):
        log.warning("the decision log %s ended in a torn frame; it was cut back", path)
        with open(path, "r+b") as fh:
            fh.truncate(end)


def read_log(root: Path) -> Iterator[DecisionRecord]:
    """Every record under `root`, oldest first. A file ends at its first frame cut short or
    unreadable."""
    dec = msgspec.msgpack.Decoder(DecisionRecord)
    rotated = sorted(
        (p for p in root.glob(f"{NAME}.*") if p.suffix[1:].isdigit()),
        key=lambda p: -int(p.suffix[1:]),
    )
    for path in [*rotated, root / NAME]:
        if not path.exists():
            continue
        for _, frame in _frames(path.read_bytes()):
            try:
                rec = dec.decode(frame)
            except msgspec.DecodeError:
                log.warning("the decision log %s has an unreadable frame; skipping the rest", path)
                break
            yield rec
