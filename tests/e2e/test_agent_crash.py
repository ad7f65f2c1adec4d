"""The agent loop's memories across kill -9: a real `pocketd serve` is killed right after a
StepBatch acknowledged memories (written off the call), and the test checks in the record
store's file that some were still unwritten at the kill (else it tries again, at most three
times), and that those were kept by the engine's intake in its own file (not the ledger's);
after a restart every acknowledged memory id can be fetched, with its full text."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import grpc

from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from tests.conftest import wait_for
from tests.e2e.conftest import Proc, spawn

# Forty different sentences: a summary leaves most out, so the output is stored for its pointer.
FILLER = " ".join(
    f"Check {i} restarted the device and read log page {i} from the settings." for i in range(40)
)


def unwritten(data: Path, ids: set[str]) -> set[str]:
    """Of `ids`, those the record store's file does not hold (read after the kill, with write
    access, so that SQLite recovers the committed transactions from the WAL as the restart
    will)."""
    db = sqlite3.connect(data / "records.sqlite3")
    try:
        have = {m for (m,) in db.execute("SELECT memory_id FROM records WHERE namespace='ns'")}
    finally:
        db.close()
    return ids - have


def kept(data: Path) -> set[str]:
    """The memory ids the intake's file keeps (acknowledged, not known written)."""
    db = sqlite3.connect(data / "acknowledged.sqlite3")
    try:
        return {m for (m,) in db.execute("SELECT memory_id FROM kept")}
    finally:
        db.close()


def test_kill_9_loses_no_acknowledged_memory(tmp_path: Path, procs: list[Proc]) -> None:
    acked: dict[str, str] = {}  # memory id → a phrase of its text
    data = tmp_path / "data"
    first = 1
    for attempt in range(3):
        p = spawn(procs, data)
        with grpc.insecure_channel(p.target) as ch:
            led, agent = lpb_grpc.LedgerServiceStub(ch), apb_grpc.AgentServiceStub(ch)
            budget = lpb.TaskBudget(total_micros=10**12, emergency_ratio=0.0)
            led.OpenTask(lpb.OpenTaskRequest(task_id=f"t{attempt}", namespace="ns", budget=budget))
            steps = []
            for n in range(first, first + 24):
                said = f"For the record, I prefer to be called on line {n}."
                obs = f"Diagnostic run {n}: fault code E{n:03d} found. " + FILLER
                steps.append(
                    apb.StepRequest(
                        task_id=f"t{attempt}", round=n - first + 1, goal="Fix the device",
                        input=said, previous_action_json='{"type":"tool","tool":"diag"}',
                        observation=obs,
                    )
                )  # fmt: skip
            out = agent.StepBatch(apb.StepBatchRequest(steps=steps), timeout=120)
            mine = {m for r in out.results for m in r.response.committed_memory_ids}
        p.stop(signal.SIGKILL)
        first += 24
        assert len(mine) >= 24
        acked.update(dict.fromkeys(mine, ""))
        missing = unwritten(data, mine)
        assert missing <= kept(data)  # each one unwritten is kept, to be written at the start
        if missing:
            break  # the kill caught acknowledged memories still queued: what this test is for
    assert unwritten(data, set(acked)), "every write finished before each kill: nothing tested"
    p2 = spawn(procs, data)
    with grpc.insecure_channel(p2.target) as ch:
        mem = spb_grpc.MemoryServiceStub(ch)

        def fetched() -> bool:
            for mid in [m for m, text in acked.items() if not text]:
                try:
                    got = mem.Get(spb.GetRequest(namespace="ns", memory_id=mid), timeout=30)
                except grpc.RpcError as e:
                    if e.code() == grpc.StatusCode.NOT_FOUND:  # type: ignore[attr-defined]
                        return False  # not yet written again
                    raise
                acked[mid] = got.record.text
            return True

        wait_for(fetched, timeout=300)
    assert all(text for text in acked.values())
    assert any("fault code E" in text and len(text) > 1000 for text in acked.values())
