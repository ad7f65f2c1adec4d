"""Log set-up for the process: one line per record, as text or as JSON.

A record may carry structured fields in `extra={"fields": {...}}` (the per-call log of
`server.api.calls` does). The text format appends nothing (the message already reads
`Recall ns=alice status=OK ms=2.31 items=5`); the JSON format puts every field in the object, so
log pipelines need no parsing.
"""

from __future__ import annotations

import json
import logging
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
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str, fmt: str) -> None:
    """Send every log record to stderr in `fmt` ("text" or "json") at `level` and above."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Neither format prints where a record was made, nor its thread or process: skip computing
    # them (the logging HOWTO's "Optimization"), since every call logs a line on the event loop.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
