"""The ledger across kill -9: a real `pocketd serve` streams Reserve and Commit calls, is killed
mid-stream and restarted; every acknowledged amount is there, and retrying the interrupted call
with its idempotency key neither loses nor double-counts it."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import grpc

from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from tests.conftest import wait_for
from tests.e2e.conftest import Proc, spawn

M = lpb.SPEND_KIND_MODEL_OUTPUT_TOKENS


class Spender:
    """Reserve then commit, round after round, until the server dies."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.done = 0  # pairs fully acknowledged
        self.stuck: tuple[int, str] | None = None  # (pair, "reserve" or "commit") cut short
        self.reservations: dict[int, str] = {}
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def amount(i: int) -> int:
        return 1000 + i % 7

    def _run(self) -> None:
        with grpc.insecure_channel(self.target) as ch:
            s = lpb_grpc.LedgerServiceStub(ch)
            i = 0
            while True:
                try:
                    r = s.Reserve(reserve(i), timeout=30)
                except grpc.RpcError:
                    self.stuck = (i, "reserve")
                    return
                self.reservations[i] = r.reservation_id
                try:
                    s.Commit(commit(i, r.reservation_id), timeout=30)
                except grpc.RpcError:
                    self.stuck = (i, "commit")
                    return
                self.done = i + 1
                i += 1

    def join(self) -> None:
        self._thread.join(120)


def reserve(i: int) -> lpb.ReserveRequest:
    return lpb.ReserveRequest(
        task_id="crash", round=1 + i // 50, kind=M, estimate_micros=Spender.amount(i),
        idempotency_key=f"r{i}",
    )  # fmt: skip


def commit(i: int, rid: str) -> lpb.CommitRequest:
    return lpb.CommitRequest(
        task_id="crash", reservation_id=rid, actual_micros=Spender.amount(i),
        idempotency_key=f"c{i}",
    )  # fmt: skip


def test_kill_9_loses_no_committed_amount_and_counts_none_twice(
    tmp_path: Path, procs: list[Proc]
) -> None:
    p = spawn(procs, tmp_path / "data")
    with grpc.insecure_channel(p.target) as ch:
        lpb_grpc.LedgerServiceStub(ch).OpenTask(
            lpb.OpenTaskRequest(
                task_id="crash", namespace="ns",
                budget=lpb.TaskBudget(total_micros=10**12, emergency_ratio=0.0),
            )
        )  # fmt: skip
    w = Spender(p.target)
    wait_for(lambda: w.done >= 300, timeout=300)
    p.stop(signal.SIGKILL)
    w.join()
    assert w.stuck is not None
    p2 = spawn(procs, tmp_path / "data")
    with grpc.insecure_channel(p2.target) as ch:
        s = lpb_grpc.LedgerServiceStub(ch)
        i, stage = w.stuck
        # The interrupted pair, retried with its keys: a hold or commit that reached the disk is
        # returned as it was, one that did not is made now.
        rid = s.Reserve(reserve(i)).reservation_id if stage == "reserve" else w.reservations[i]
        if stage == "commit":
            assert rid == s.Reserve(reserve(i)).reservation_id  # the same hold, not a new one
        s.Commit(commit(i, rid))
        st = s.Status(lpb.TaskStatusRequest(task_id="crash"))
    assert st.spent_micros == sum(Spender.amount(k) for k in range(i + 1))
    assert st.held_micros == 0
