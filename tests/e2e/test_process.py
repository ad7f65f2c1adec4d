"""End-to-end: the real `pocketd serve` process, its health, SIGTERM drain and SIGKILL recovery."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import grpc
import numpy as np
import pytest

from bench.server_proc import serve_command
from pocketd import Client, MemoryInput
from tests.conftest import MODEL_DIR, ROOT, wait_for
from tests.e2e.conftest import Proc, spawn

pytestmark = pytest.mark.e2e


def test_serve_round_trip_then_sigterm_exits_cleanly(tmp_path: Path, procs: list[Proc]) -> None:
    p = spawn(procs, tmp_path / "data")
    with Client(p.target) as c:
        r = c.remember("e2e", "The release train leaves every Tuesday", kind="fact")
        assert r.stored
        assert (
            c.recall("e2e", "when does the release train leave").hits[0].memory.memory_id
            == r.memory_id
        )
    assert p.stop() == 0
    assert any("stopped" in line for line in p.log)


def test_sigterm_drains_calls_in_flight(tmp_path: Path, procs: list[Proc]) -> None:
    # The drain waits as long as the batch needs: this checks draining, not encoding speed.
    p = spawn(procs, tmp_path / "data", env={"POCKETD__SERVER__DRAIN_SECONDS": "600"}, debug=True)
    texts = [f"Ticket {i}: customer {i} asked for invoice copy number {i * 7}" for i in range(256)]
    result: dict[str, object] = {}

    def write() -> None:
        with Client(p.target, timeout=600) as c:
            try:
                result["ok"] = c.remember_batch(
                    [MemoryInput("drain", t, kind="episode", importance=3) for t in texts]
                )
            except grpc.RpcError as exc:
                result["err"] = exc

    t = threading.Thread(target=write)
    t.start()
    wait_for(lambda: any("RememberBatch ns=drain started" in line for line in p.log))
    assert p.stop() == 0
    t.join()
    assert "ok" in result, result.get("err")
    acked = [r.memory_id for r in result["ok"] if r.stored]  # type: ignore[attr-defined]
    assert acked
    p2 = spawn(procs, tmp_path / "data")
    with Client(p2.target) as c:
        for mid in acked[:: max(1, len(acked) // 20)]:
            assert c.get("drain", mid).memory_id == mid


def test_sigkill_mid_stream_loses_no_acknowledged_record(tmp_path: Path, procs: list[Proc]) -> None:
    p = spawn(procs, tmp_path / "data")
    rng = np.random.default_rng(7)
    acked: dict[str, list[float]] = {}
    stop = threading.Event()

    def stream() -> None:
        with Client(p.target, timeout=10) as c:
            i = 0
            while not stop.is_set():
                vecs = rng.normal(size=(32, 512)).astype(np.float32)
                items = [
                    MemoryInput(
                        "crash",
                        f"record {i + j}",
                        kind="observation",
                        importance=3,
                        vector=vecs[j].tolist(),
                    )
                    for j in range(32)
                ]
                try:
                    res = c.remember_batch(items)
                except grpc.RpcError:
                    return  # the server died mid-call: that batch was never acknowledged
                for r, item in zip(res, items, strict=True):
                    acked[r.memory_id] = list(item.vector or [])
                i += 32

    t = threading.Thread(target=stream)
    t.start()
    wait_for(lambda: len(acked) >= 256 or not t.is_alive())
    p.stop(signal.SIGKILL)
    stop.set()
    t.join()
    assert len(acked) >= 64, "too few writes before the kill to mean anything"
    p2 = spawn(procs, tmp_path / "data")
    with Client(p2.target, timeout=10) as c:
        assert c.stats("crash").namespaces[0].record_count >= len(acked)
        for mid in acked:
            assert c.get("crash", mid).memory_id == mid
        for mid in list(acked)[:: max(1, len(acked) // 25)]:
            top = c.recall("crash", vector=acked[mid], top_k=1).hits[0]
            assert top.memory.memory_id == mid


def test_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("memory:\n  hybrid_search:\n    vector_weigth: 0.7\n")
    out = subprocess.run(
        [*serve_command(tmp_path / "d"), "--config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "vector_weigth" in out.stderr


def test_a_second_server_on_the_same_data_dir_is_refused(tmp_path: Path, procs: list[Proc]) -> None:
    spawn(procs, tmp_path / "data")
    out = subprocess.run(
        serve_command(tmp_path / "data"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, POCKETD__ENCODER__MODEL_DIR=str(MODEL_DIR)),
    )
    assert out.returncode == 2 and "in use" in out.stderr
