"""The lifecycle's start-up as an operator meets it: `memory.hot.backend: redis` with a Redis
that cannot be reached stops `pocketd serve` (exit 2) with a last line naming `memory.hot.url`,
and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_startup import serve
from tests.redis_server import free_port

pytestmark = pytest.mark.e2e


def test_an_unreachable_redis_exits_2_naming_memory_hot_url(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # a free port: nothing listens there
    out = serve(
        tmp_path,
        env={"POCKETD__MEMORY__HOT__BACKEND": "redis", "POCKETD__MEMORY__HOT__URL": url},
    )
    assert out.returncode == 2, out.stderr
    # The port was bound before the engine opened: its log lines come first, then the reason.
    assert "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("pocketd: "), out.stderr
    assert "memory.hot.url" in last and url in last and "memory.hot.backend" in last, last
