"""The decision log on disk: append-only, bounded, written off the request path.

Records are msgspec MessagePack frames, each behind its 4-byte big-endian length, in
`decisions.log`. Once that file passes `max_bytes` it is renamed `decisions.log.1` (the older
ones shift up, and `decisions.log.<files>` is deleted), so the log never takes more than about
`files + 1` × `max_bytes`. A writer thread drains a bounded queue; a Recall only enqueues, and
when the queue is full the record is dropped and counted (`dropped`). A frame cut short by a
crash ends its file: `read_log` stops there and goes on with the next file.
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
        try:
            self._queue.put_nowait(rec)
        except queue.Full:
            self.dropped += 1

    def close(self) -> None:
        """Write what is queued, then stop."""
        self._queue.put(_STOP)
        self._thread.join()
        if self.dropped:
            log.warning(
                "the decision log dropped %d records (its writer fell behind)", self.dropped
            )

    def _run(self) -> None:
        path = self._root / NAME
        fh = open(path, "ab")  # noqa: SIM115 - held open by the writer thread
        try:
            while (item := self._queue.get()) is not _STOP:
                frame = self._enc.encode(item)
                fh.write(_LEN.pack(len(frame)) + frame)
                if self._queue.empty():
                    fh.flush()
                if fh.tell() >= self._max:
                    fh.close()
                    self._rotate()
                    fh = open(path, "ab")  # noqa: SIM115
        except Exception:  # keep Recall unaffected; the log is lost from here on
            log.exception("the decision log stopped")
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


def read_log(root: Path) -> Iterator[DecisionRecord]:
    """Every record under `root`, oldest first."""
    dec = msgspec.msgpack.Decoder(DecisionRecord)
    rotated = sorted(
        (p for p in root.glob(f"{NAME}.*") if p.suffix[1:].isdigit()),
        key=lambda p: -int(p.suffix[1:]),
    )
    for path in [*rotated, root / NAME]:
        if not path.exists():
            continue
        data = path.read_bytes()
        at = 0
        while at + _LEN.size <= len(data):
            (n,) = _LEN.unpack_from(data, at)
            if at + _LEN.size + n > len(data):
                break  # cut short by a crash
            yield dec.decode(data[at + _LEN.size : at + _LEN.size + n])
            at += _LEN.size + n
