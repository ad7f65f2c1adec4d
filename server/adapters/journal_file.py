"""The maintenance journal as a file in the data directory: present while a run runs.

`begin` writes the run's namespace to a temporary file, fsyncs it and renames it into place (then
fsyncs the directory); `end` unlinks it (and fsyncs the directory). A file left behind means a run
that a crash interrupted: the next start-up finishes it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from server.adapters.durable import fsync_dir


class JournalFile:
    def __init__(self, path: Path) -> None:
        self._path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def begin(self, namespace: str) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"namespace": namespace}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)
        fsync_dir(self._path.parent)

    def end(self) -> None:
        try:
            self._path.unlink()
        except FileNotFoundError:
            return
        fsync_dir(self._path.parent)

    def pending(self) -> str | None:
        try:
            got = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # torn: a run began; finish it over every namespace
            return ""
        ns = got.get("namespace", "") if isinstance(got, dict) else ""
        return ns if isinstance(ns, str) else ""
