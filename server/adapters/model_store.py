"""The installed router models, on disk under `<data_dir>/router/models`, and the server's live
view of them.

One folder per scope: `global` (the default tenant's), `tenant-<name>` (another tenant's), or
`ns-<digest>` for a namespace's own model (its kept name: tenant and namespace). A namespace is
scored by its own model, else its tenant's, never another tenant's. In it, one folder
per installed version (`model.onnx` and `report.json`, the training report), and `CURRENT`, a
small JSON file naming the current and the previous version. A version's folder is written whole
under a temporary name and renamed; then `CURRENT` is replaced by a rename. So a reader sees the
old pointer or the new one, never a half-written model, and a crash leaves at worst an unused
folder (removed by the next install). Only the current and the previous version are kept:
`rollback` swaps them.

`ModelWatcher` is the router's `ModelSource`: a thread that looks at each scope's `CURRENT` every
`interval` seconds and loads a changed one off the request path (hot reload). A model that does
not load is logged and the one before it stays.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from server.adapters.durable import fsync_dir
from server.core.routing.ports import PocketModel
from server.core.tenancy import tenant_of, tenant_wide

log = logging.getLogger(__name__)
GLOBAL = "global"
POINTER = "CURRENT"


class NoModelError(LookupError):
    pass


def scope_of(namespace: str | None) -> str:
    """The folder of a kept namespace's own model, or of a tenant's (`tenancy.tenant_wide`:
    None or "" is the default tenant's, `global`)."""
    if not namespace:
        return GLOBAL
    if namespace == tenant_wide(namespace):
        return "tenant-" + tenant_of(namespace)
    return "ns-" + hashlib.sha256(namespace.encode()).hexdigest()[:32]


def new_version() -> str:
    """A sortable, unique version name: the UTC time and a random suffix."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


class ModelStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def pointer(self, namespace: str | None) -> dict[str, Any] | None:
        """{"current": version, "previous": version or None, "namespace": ...}, or None."""
        try:
            data: dict[str, Any] = json.loads(
                (self.root / scope_of(namespace) / POINTER).read_text()
            )
        except FileNotFoundError:
            return None
        return data

    def model_bytes(self, namespace: str | None, version: str) -> bytes:
        return (self.root / scope_of(namespace) / version / "model.onnx").read_bytes()

    def report(self, namespace: str | None, version: str) -> dict[str, Any]:
        path = self.root / scope_of(namespace) / version / "report.json"
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def install(
        self, version: str, model: bytes, report: dict[str, Any], namespace: str | None
    ) -> None:
        """Install `model` as the scope's current one; the current one becomes the previous."""
        with self._locked(namespace) as scope:
            tmp = scope / f".{version}.tmp"
            tmp.mkdir()
            _write_file(tmp / "model.onnx", model)
            _write_file(tmp / "report.json", json.dumps(report, indent=2).encode())
            fsync_dir(tmp)
            tmp.rename(scope / version)
            fsync_dir(scope)  # the version is on disk before the pointer names it
            old = self.pointer(namespace)
            self._point(scope, namespace, version, None if old is None else old["current"])

    def rollback(self, namespace: str | None) -> tuple[str, str]:
        """Make the previous version current again (and the current one the previous, so a
        second rollback undoes the first). Returns (now current, was current)."""
        with self._locked(namespace) as scope:
            ptr = self.pointer(namespace)
            if ptr is None or not ptr.get("previous"):
                raise NoModelError(
                    f"no previous model to roll back to in {scope}"
                    + (" (none is installed)" if ptr is None else "")
                )
            self._point(scope, namespace, ptr["previous"], ptr["current"])
            return ptr["previous"], ptr["current"]

    def scopes(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if (p / POINTER).is_file())

    @contextmanager
    def _locked(self, namespace: str | None) -> Iterator[Path]:
        """The scope's folder, with an exclusive lock (two trainings install one at a time)."""
        scope = self.root / scope_of(namespace)
        scope.mkdir(parents=True, exist_ok=True)
        with open(scope / ".lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield scope

    def _point(
        self, scope: Path, namespace: str | None, current: str, previous: str | None
    ) -> None:
        data = {"current": current, "previous": previous, "namespace": namespace or ""}
        tmp = scope / f".{POINTER}.tmp"
        _write_file(tmp, json.dumps(data).encode())
        tmp.replace(scope / POINTER)
        fsync_dir(scope)
        keep = {current, previous, ".lock", POINTER}
        for p in scope.iterdir():  # older versions and what a crash left
            if p.name not in keep and p.is_dir():
                shutil.rmtree(p, ignore_errors=True)


class ModelWatcher:
    """A `ModelSource` over a `ModelStore`, reloading a scope when its `CURRENT` changes.
    `load` makes a model of a file's bytes, or raises ValueError (`onnx_policy.OnnxPocketModel`,
    which checks the input layout)."""

    def __init__(
        self, store: ModelStore, load: Callable[[bytes], PocketModel], interval: float
    ) -> None:
        self._store = store
        self._load_bytes = load
        self._interval = interval
        self._seen: dict[str, tuple[int, int, int]] = {}  # scope → CURRENT's (ino, mtime, size)
        self._models: dict[str, PocketModel] = {}
        self._failed: dict[str, tuple[int, int, int]] = {}  # a scope's CURRENT that did not load
        self._lock = threading.Lock()  # one poll at a time
        self._stop = threading.Event()
        self.reload()
        self._thread = threading.Thread(target=self._run, name="pocketd-models", daemon=True)
        self._thread.start()

    def model(self, namespace: str) -> PocketModel | None:
        models = self._models  # replaced whole by a reload, never changed in place
        return models.get(scope_of(namespace)) or models.get(scope_of(tenant_wide(namespace)))

    def reload(self) -> None:
        """Load every scope whose `CURRENT` changed since the last look (one that failed to
        load is tried again on the next look)."""
        with self._lock:
            models = dict(self._models)
            present = set()
            for scope in self._store.scopes():
                present.add(scope.name)
                try:
                    st = (scope / POINTER).stat()
                except FileNotFoundError:
                    continue
                mark = (st.st_ino, st.st_mtime_ns, st.st_size)
                if self._seen.get(scope.name) == mark:
                    continue
                loaded = self._load(scope, quiet=self._failed.get(scope.name) == mark)
                if loaded is not None:
                    models[scope.name] = loaded
                    self._seen[scope.name] = mark
                    self._failed.pop(scope.name, None)
                else:
                    self._failed[scope.name] = mark
            for gone in set(models) - present:
                del models[gone]
                self._seen.pop(gone, None)
            self._models = models

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def _load(self, scope: Path, quiet: bool) -> PocketModel | None:
        try:
            ptr = json.loads((scope / POINTER).read_text())
            data = (scope / ptr["current"] / "model.onnx").read_bytes()
            model = self._load_bytes(data)
        except Exception as e:  # whatever the file holds, the server keeps the model it has
            if not quiet:  # said once per pointer, though it is tried again on each look
                log.error("router model in %s not loaded (the one before stays): %s", scope, e)
            return None
        log.info("router model %s loaded for %s", model.version, scope.name)
        return model

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.reload()
            except Exception:
                log.exception("looking for new router models failed")
