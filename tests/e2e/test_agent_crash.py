"""The agent loop's memories across kill -9: a real `pocketd serve` is killed right after Steps
acknowledged memories (written off the call, so some are still queued); after a restart every
acknowledged memory id can be fetched, with its full text."""

from __future__ import annotations

import signal
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

FILLER = "The device was restarted and its logs were read from the settings page. " * 40


def test_kill_9_loses_no_acknowledged_memory(tmp_path: Path, procs: list[Proc]) -> None:
    p = spawn(procs, tmp_path / "data")
    acked: dict[str, str] = {}  # memory id → a phrase of its text
    with grpc.insecure_channel(p.target) as ch:
        led, agent = lpb_grpc.LedgerServiceStub(ch), apb_grpc.AgentServiceStub(ch)
        budget = lpb.TaskBudget(total_micros=10**12, emergency_ratio=0.0)
        led.OpenTask(lpb.OpenTaskRequest(task_id="t", namespace="ns", budget=budget))
        for n in range(1, 25):
            said = f"For the record, I prefer to be called on line {n}."
            obs = f"Diagnostic run {n}: fault code E{n:03d} found. " + FILLER
            r = agent.Step(
                apb.StepRequest(
                    task_id="t", round=n, goal="Fix the device", input=said,
                    previous_action_json='{"type":"tool","tool":"diag"}', observation=obs,
                ),
                timeout=60,
            )  # fmt: skip
            for mid in r.committed_memory_ids:
                acked[mid] = ""
    p.stop(signal.SIGKILL)
    assert len(acked) >= 24
    p2 = spawn(procs, tmp_path / "data")
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
