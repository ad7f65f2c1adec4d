"""The Python client's media calls against a real `pocketd serve` (its OCR on): a rendered
screenshot remembered with `wait`, found by the code it shows, and read back with its bytes.
The fake-server tests (tests/api/test_client_media.py) cover the wire; this one round trip
covers what the server answers (one OCR, about 1-2 s warm on two cores, more on the first)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pocketd import Client
from tests.e2e.conftest import Proc, spawn
from tests.media_samples import render_screenshot

pytestmark = pytest.mark.e2e


def test_a_screenshot_is_remembered_then_found_by_its_code(
    tmp_path: Path, procs: list[Proc]
) -> None:
    p = spawn(procs, tmp_path / "data")
    shot = render_screenshot(["Refund failed", "Error code: E7781"], title="Payments", seed=3)
    # A cold server loads its OCR models on the first image: the wait needs more than 5 s.
    with Client(p.target, timeout=60) as c:
        r = c.remember_image("py-media", shot, session_id="s1", wait=True)
        assert (r.decision, r.processing_state) == ("stored", "ready"), r.reason
        found = c.recall("py-media", "what was the error code E7781?", top_k=5)
        hit = next(
            h for h in found.hits if r.memory_id in (h.memory.memory_id, *h.group_member_ids)
        )
        assert "E7781" in hit.memory.text
        got = c.get("py-media", r.memory_id, include_blob_data=True)
        stats = c.stats()
    assert got.modality == "image" and got.processing_state == "ready"
    assert got.blob is not None and got.blob.data == shot
    assert (got.blob.mime_type, got.blob.sha256) == ("image/png", hashlib.sha256(shot).hexdigest())
    assert stats.media.processed >= 1 and stats.media.blobs == 1
