"""The blob store on disk: each medium's bytes once, named by their sha256, under
`<data_dir>/blobs/<first two hex digits>/<sha256>`.

A put writes a temporary file, fsyncs it, renames it into place and fsyncs the directory, so
the bytes are durable before the write that names them is acknowledged; a blob already present
is not written again (content addressing: the same bytes are the same file). Which blobs are
still held, and when one may go, is the core's (`server.core.media.blobs.BlobKeeper`).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path

from server.adapters.durable import fsync_dir

_SHA = re.compile(r"[0-9a-f]{64}")


class FileBlobStore:
    """Implements `server.core.media.ports.BlobStore` over a directory."""

    def __init__(self, root: Path) -> None:
        self._root = root
        root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # one writer of a name at a time

    def _path(self, sha256: str) -> Path:
        if not _SHA.fullmatch(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self._root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self._path(sha)
        with self._lock:
            if path.exists() and path.stat().st_size == len(data):
                return sha
            path.parent.mkdir(exist_ok=True)
            tmp = path.with_name(f".{sha}.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            fsync_dir(path.parent)
        return sha

    def get(self, sha256: str) -> bytes | None:
        try:
            return self._path(sha256).read_bytes()
        except FileNotFoundError:
            return None

    def has(self, sha256: str) -> bool:
        return self._path(sha256).exists()

    def remove(self, sha256: str) -> None:
        with self._lock:
            self._path(sha256).unlink(missing_ok=True)

    def all(self) -> list[str]:
        out: list[str] = []
        for sub in self._root.iterdir():
            if sub.is_dir() and len(sub.name) == 2:
                out.extend(p.name for p in sub.iterdir() if _SHA.fullmatch(p.name))
        # A temporary file left by a crash mid-put holds nothing anyone was told of.
        for tmp in self._root.glob("*/.*.tmp"):
            tmp.unlink(missing_ok=True)
        return out
