"""`pocketd reembed`: re-encode a data directory's memories with the configured encoder.

A data directory records the vector space its memories were encoded in (`encoder.json`), and a
server with an encoder of another space refuses to start on it: its vectors cannot be compared
with the new encoder's queries. This command, run with the server stopped and the configuration
it will run with, encodes every live memory's text again and writes each new vector as a change
of the record store (one transaction per chunk, every memory a new revision), drops the vector
indexes (derived state, of the old space and perhaps the old dimension) and records the new
space. The next `pocketd serve` rebuilds the indexes from the store before it reports SERVING.

A memory with no text carries a client's vector, which no encoder can redo: if there are any
and the dimension changes, the command refuses before changing anything. While it runs the
directory is marked as half re-embedded, and no server starts on it; interrupted, it is run
again (it re-encodes every memory).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from server.adapters.sqlite_store import SqliteRecordStore
from server.app import (
    REEMBEDDING,
    StartupError,
    build_encoder,
    lock_data_dir,
    record_space,
    recorded_space,
)
from server.core.memory.changes import Cause, Put
from server.core.memory.model import embedded_text
from server.core.settings import Settings

CHUNK = 256


def reembed(settings: Settings, say: Callable[[str], None]) -> int:
    """Re-encode every live memory; return how many were written."""
    data = Path(settings.server.data_dir)
    if not (data / "records.sqlite3").is_file():
        raise StartupError(f"{data} holds no record store: nothing to re-embed")
    lock = lock_data_dir(data)
    try:
        encoders = build_encoder(settings)
        if encoders is None:
            raise StartupError("encoder.text is none: configure the encoder to re-embed with")
        enc = encoders[1]
        old = recorded_space(data)
        store = SqliteRecordStore(data / "records.sqlite3", cache_bytes=0)  # nothing to serve
        try:
            records = list(store.scan_live())
            textless = [r.key for r in records if not r.text]
            if textless:
                dims = {len(v) for v in store.get_vectors(textless[:64]).values()}
                if dims - {enc.dim}:
                    raise StartupError(
                        f"{len(textless)} memories have no text, only a client's vector of"
                        f" {sorted(dims)} dimensions, which the encoder cannot redo in"
                        f" {enc.dim}: forget them, or keep encoder space {old!r}"
                    )
            todo = [r for r in records if r.text]
            if old is not None and old.startswith(REEMBEDDING):
                old = "an interrupted re-embedding"
            say(f"re-embedding {len(todo)} memories of {data} from {old!r} to {enc.space!r}")
            # From here until the end the directory holds two spaces: no server may start on
            # it, and the vector indexes (derived state of the old space) are gone.
            record_space(data, REEMBEDDING + enc.space)
            shutil.rmtree(data / "vectors", ignore_errors=True)
            t0 = last = time.monotonic()
            for start in range(0, len(todo), CHUNK):
                chunk = todo[start : start + CHUNK]
                said = [embedded_text(r, settings.memory.embed_speaker) for r in chunk]
                vectors = enc.encode(said)
                store.apply([Put(r, v, Cause.REEMBED) for r, v in zip(chunk, vectors, strict=True)])
                if time.monotonic() - last >= 2.0:
                    last = time.monotonic()
                    done = start + len(chunk)
                    rate = done / (last - t0)
                    say(f"{done}/{len(todo)} re-embedded ({rate:.0f}/s)")
        finally:
            store.close()
        record_space(data, enc.space, name=enc.manifest.name, dim=enc.dim)
        say(
            f"done: {len(todo)} memories in {time.monotonic() - t0:.1f}s; the next"
            " `pocketd serve` rebuilds the vector indexes before it reports SERVING"
        )
        return len(todo)
    finally:
        lock.close()


def reembed_main(settings: Settings) -> int:
    try:
        reembed(settings, lambda m: print(f"pocketd: {m}", file=sys.stderr, flush=True))
    except StartupError as exc:
        print(f"pocketd: {exc}", file=sys.stderr)
        return 2
    return 0
