"""Thread priorities: the threads that write in bulk and index yield the cores to the others.

While a bulk import (RememberBatch) runs, its writer, the indexer and its graph builders are
always runnable. On
two cores they starve a Recall of both the CPU and the GIL (which a thread can only take while it
runs). Raising their niceness lets the scheduler pick the reader first whenever both are ready: in
`bench memory --size 20000`, Recall during an import went from p50 18.0 / p99 68 ms to 8.5 /
40 ms, and the import took 26 % longer. A single Remember is not niced (`server.api.calls`): it
is as interactive as a Recall, and a niced one starved under a steady mixed load.
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)


def run_below_readers(nice: int) -> None:
    """Give the calling thread a niceness of at least `nice` (Linux sets it per thread; 0 leaves
    it as it is). Best effort: where threads have no priority of their own, nothing changes."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    tid = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, tid) < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError as exc:  # not Linux: the id names no process
        log.debug("thread priority left as it is: %s", exc)
