"""The metadata columns' snapshot on disk: one uncompressed `.npz` in `<data_dir>/columns/`.

The arrays are stored as they are (numpy's own format, read back without a copy per row); the
rest (namespaces, sessions, tags, pocket sizes and spans, the pocket catalog) is one MessagePack
blob inside the same file, with the layout version. A save writes a temporary file, fsyncs it and
renames it over the old one, so a crash leaves the old snapshot or the new one, never half of one.
A snapshot that cannot be read (another layout, a truncated file) is logged and ignored: the
columns are then rebuilt from the record store, which is the source of truth.
"""

from __future__ import annotations

import logging
import os
import zipfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from server.adapters.durable import fsync_dir
from server.core.memory.pockets import PocketKey
from server.core.memory.ports import ColumnsSnapshot

log = logging.getLogger(__name__)
LAYOUT = 1
FILE = "snapshot.npz"


class _Meta(msgspec.Struct):
    layout: int
    rev: int
    scheme: str
    namespaces: dict[str, int]
    session_ids: dict[str, int]
    tags: dict[int, list[str]]
    sizes: dict[int, int]
    spans: dict[int, tuple[float, float]]
    pockets: list[tuple[int, PocketKey]]


class ColumnsFile:
    """`ColumnsSnapshots` in one directory."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._path = root / FILE

    def save(self, snap: ColumnsSnapshot) -> None:
        self._root.mkdir(parents=True, exist_ok=True)
        meta = _Meta(
            LAYOUT,
            snap.rev,
            snap.scheme,
            snap.namespaces,
            snap.session_ids,
            snap.tags,
            snap.sizes,
            snap.spans,
            snap.pockets,
        )
        blob = np.frombuffer(msgspec.msgpack.encode(meta), dtype=np.uint8)
        arrays: dict[str, Any] = {f"col_{k}": v for k, v in snap.arrays.items()}
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            np.savez(
                fh,
                meta=blob,
                session_heads=snap.session_heads,
                session_keys=snap.session_keys,
                **arrays,
            )
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path)
        fsync_dir(self._root)

    def discard(self) -> None:
        if self._path.exists():
            self._path.unlink()
            fsync_dir(self._root)

    def load(self) -> ColumnsSnapshot | None:
        if not self._path.exists():
            return None
        try:
            with np.load(self._path, allow_pickle=False) as z:
                meta = msgspec.msgpack.decode(z["meta"].tobytes(), type=_Meta)
                if meta.layout != LAYOUT:
                    log.warning(
                        "the columns snapshot %s has layout %s, not %s: rebuilding the columns",
                        self._path,
                        meta.layout,
                        LAYOUT,
                    )
                    return None
                arrays = {n[4:]: z[n] for n in z.files if n.startswith("col_")}
                heads, keys = z["session_heads"], z["session_keys"]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, msgspec.DecodeError) as exc:
            log.warning("the columns snapshot %s cannot be read (%s): rebuilding", self._path, exc)
            return None
        return ColumnsSnapshot(
            rev=meta.rev,
            scheme=meta.scheme,
            arrays=arrays,
            namespaces=meta.namespaces,
            session_ids=meta.session_ids,
            tags=meta.tags,
            sizes=meta.sizes,
            spans=meta.spans,
            session_heads=heads.reshape(-1, 3),
            session_keys=keys,
            pockets=meta.pockets,
        )
