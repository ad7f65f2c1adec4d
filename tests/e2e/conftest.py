"""Shared by the end-to-end tests: server processes with the exported test model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.server_proc import ServerProcess
from tests.conftest import MODEL_DIR


class Proc(ServerProcess):
    """A `pocketd serve` process using the exported test model."""

    def __init__(self, data: Path, env: dict[str, str] | None = None, debug: bool = False) -> None:
        super().__init__(
            data,
            # No warm-up of the OCR and speech models: a test that reads media pays for them.
            env={
                "POCKETD__ENCODER__MODEL_DIR": str(MODEL_DIR),
                "POCKETD__MEDIA__QUEUE__WARM_UP": "false",
                **(env or {}),
            },
            extra_args=["--log-level", "DEBUG"] if debug else None,
        )


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    """Processes a test starts; any still running at its end are killed."""
    started: list[Proc] = []
    yield started
    for p in started:
        p.close()


def spawn(
    procs: list[Proc], data: Path, env: dict[str, str] | None = None, debug: bool = False
) -> Proc:
    """Start a server on `data` and wait (generously) until it reports SERVING."""
    p = Proc(data, env=env, debug=debug)
    procs.append(p)
    p.wait_serving(timeout=300)
    return p
