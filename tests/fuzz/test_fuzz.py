"""The attack as a test: fuzzed requests of every RPC of MemoryService, LedgerService and
AgentService, and raw garbage, against a real server.

Every call must get a status other than INTERNAL or UNKNOWN, must return within its deadline plus
a small margin, and afterwards a known record must still read back correctly. `make test` runs
`POCKETD_FUZZ_EXAMPLES` (default 300) cases; `make test-slow` runs 10,000 of the `slow` variant.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.server_proc import ServerProcess
from pocketd import Client
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from tests.conftest import MODEL_DIR
from tests.fuzz import agent_strategies
from tests.fuzz.strategies import _on, calls

ALL_CALLS = st.one_of(
    calls,
    *[s.map(_on(path)) for path, s in agent_strategies.CALLS],
    st.tuples(
        st.sampled_from([path for path, _ in agent_strategies.CALLS]),
        st.binary(min_size=1, max_size=512),
    ),
)

pytestmark = pytest.mark.e2e
DEADLINE_S = 20.0
MARGIN_S = 5.0
CANARY_NS = "canary"
CANARY_TEXT = "The canary's locker code is 4471"
# No fuzzed call may fail internally, nor run into its deadline: each one is small (at most six
# items of text to encode), so DEADLINE_EXCEEDED would mean the server hung on it.
BAD = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED}


class Target:
    """The server under attack, a raw channel to it, and the canary record."""

    def __init__(self, data: Path) -> None:
        self.proc = ServerProcess(data, env={"POCKETD__ENCODER__MODEL_DIR": str(MODEL_DIR)})
        self.proc.wait_serving(timeout=300)
        self.channel = grpc.insecure_channel(
            self.proc.target, options=[("grpc.max_send_message_length", 64 << 20)]
        )
        self.vector = np.random.default_rng(0).normal(size=512).astype(np.float32)
        with Client(self.proc.target, timeout=30) as c:
            r = c.remember(CANARY_NS, CANARY_TEXT, kind="fact", vector=self.vector.tolist())
            self.canary = r.memory_id
        ledger = lpb_grpc.LedgerServiceStub(self.channel)
        tools = {"search": lpb.ToolBudget(cost_per_call_micros=5, idempotent=True)}
        for task in agent_strategies.TASKS:  # so that fuzzed Steps reach the loop
            ledger.OpenTask(
                lpb.OpenTaskRequest(
                    task_id=task,
                    namespace="fz1",
                    budget=lpb.TaskBudget(total_micros=10**12, tools=tools),
                ),
                timeout=30,
            )
        self.calls = 0
        self.codes: dict[str, int] = {}

    def call(self, method: str, body: bytes) -> None:
        stub = self.channel.unary_unary(method)
        t0 = time.monotonic()
        try:
            stub(body, timeout=DEADLINE_S)
            code = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            assert code not in BAD, f"{method}: {code} {exc.details()}"  # type: ignore[attr-defined]
        took = time.monotonic() - t0
        assert took <= DEADLINE_S + MARGIN_S, f"{method} took {took:.1f}s"
        self.calls += 1
        self.codes[code.name] = self.codes.get(code.name, 0) + 1

    def check_canary(self) -> None:
        with Client(self.proc.target, timeout=30) as c:
            got = c.get(CANARY_NS, self.canary)
            assert got.text == CANARY_TEXT and got.kind == "fact" and not got.obsolete
            hits = c.recall(CANARY_NS, vector=self.vector.tolist(), top_k=1).hits
            assert [h.memory.memory_id for h in hits] == [self.canary]
            assert hits[0].score.vector == pytest.approx(1.0, abs=1e-3)
            assert c.stats(CANARY_NS).namespaces[0].record_count == 1

    def close(self) -> None:
        self.channel.close()
        assert self.proc.stop() == 0, "".join(self.proc.log[-20:])


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    t = Target(tmp_path_factory.mktemp("fuzz") / "data")
    yield t
    t.close()


def fuzz(target: Target, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(ALL_CALLS)
    def attack(call: tuple[str, bytes]) -> None:
        target.call(*call)
        if target.calls % 250 == 0:
            target.check_canary()

    attack()
    target.check_canary()
    print(f"\n{target.calls} fuzzed calls, statuses {dict(sorted(target.codes.items()))}")


def test_fuzzed_calls_never_fail_internally(target: Target) -> None:
    fuzz(target, int(os.environ.get("POCKETD_FUZZ_EXAMPLES", "300")))


@pytest.mark.slow
def test_fuzzed_calls_never_fail_internally_long(target: Target) -> None:
    fuzz(target, int(os.environ.get("POCKETD_FUZZ_EXAMPLES", "10000")))
