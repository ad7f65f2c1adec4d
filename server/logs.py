"""Log set-up for the process: one line per record, as text or as JSON.

A record may carry structured fields in `extra={"fields": {...}}` (the per-call log of
`server.api.calls` does). The text format appends nothing (the message already reads
`Recall ns=alice status=OK ms=2.31 items=5`); the JSON format puts every field in the object, so
log pipelines need no parsing.

Records are queued, then formatted and written by a thread of their own (the logging cookbook's
"Dealing with handlers that block"): every call logs a line on grpc.aio's event loop, and a
write to a pipe whose reader lags blocks it (measured in `bench agent`: 1.2 ms of a Step's
round, a tenth of it, was the stderr write). The queue is flushed when the process exits.
"""

from __future__ import annotations

import atexit
import copy
import json
import logging
import logging.handlers
import queue
import sys
import time
from typing import Any

FORMATS = ("text", "json")


class JsonFormatter(logging.Formatter):
    """`{"ts": ..., "level": ..., "logger": ..., "msg": ..., **fields}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:  # formatted when it was queued (`_Queued`)
            out["exc"] = record.exc_text
        return json.dumps(out, ensure_ascii=False, default=str)


QUEUED = 65_536  # records waiting to be written, at most: beyond, a record is dropped


class _Queued(logging.handlers.QueueHandler):
    """Queues a copy of each record with its message merged (its arguments may change once
    the call returns) and its traceback as text; the formatter, on the listener's thread,
    adds the time and the level (the stdlib's `prepare` would format the whole line here).
    When stderr's reader stalls and `QUEUED` records wait, a record is dropped and counted
    (never written in place: that is the stderr write that blocks); the count is written
    when the writing stops."""

    dropped = 0

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            _Queued.dropped += 1

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        out = copy.copy(record)
        out.msg, out.args = record.getMessage(), None
        if record.exc_info:
            out.exc_text = out.exc_text or _TRACEBACKS.formatException(record.exc_info)
            out.exc_info = None
        return out


class _Writer(logging.handlers.QueueListener):
    """Its stop waits for room in a full queue (the stdlib's would raise `queue.Full`)."""

    def enqueue_sentinel(self) -> None:
        self.queue.put(self._sentinel)  # type: ignore[attr-defined]


_TRACEBACKS = logging.Formatter()
_listener: _Writer | None = None
_at_exit = False


def stop() -> None:
    """Write what is queued and stop the writing thread (at exit; a later `configure` starts
    another); records logged after it are written in place."""
    global _listener
    if _listener is None:
        return
    listener, _listener = _listener, None
    plain = listener.handlers[0]
    root = logging.getLogger()
    root.handlers[:] = [plain]
    listener.stop()
    if _Queued.dropped:
        sys.stderr.write(f"pocketd: {_Queued.dropped} log records were dropped (stderr stalled)\n")
        _Queued.dropped = 0


def configure(level: str, fmt: str) -> None:
    """Send every log record to stderr in `fmt` ("text" or "json") at `level` and above, from
    a thread of their own."""
    global _listener, _at_exit
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if not _at_exit:
        atexit.register(stop)  # what was queued is written before the process ends
        _at_exit = True
    records: queue.Queue[logging.LogRecord] = queue.Queue(QUEUED)
    listener = _Writer(records, handler, respect_handler_level=True)
    listener.start()
    root = logging.getLogger()
    root.setLevel(level)
    old, _listener = _listener, listener
    root.handlers[:] = [_Queued(records)]  # then the old thread writes what it holds
    if old is not None:
        old.stop()
    # Neither format prints where a record was made, nor its thread or process: skip computing
    # them (the logging HOWTO's "Optimization"), since every call logs a line on the event loop.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
