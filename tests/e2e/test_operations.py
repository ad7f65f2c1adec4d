"""What an operator reads off a running `pocketd serve`: the Prometheus endpoint after a known
sequence of calls (counts by method, tenant and status, latency histograms, a Recall's pockets
and cost, the router's decisions, the ledger's reservations and refusals, the gauges), and the
JSON log lines with their request ids and tenants."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.server_proc import ServerProcess
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api.auth import token_sha256
from tests.conftest import MODEL_DIR, wait_for

pytestmark = pytest.mark.e2e
ACME = "acme-token-0123456789abcdef"
GLOBEX = "globex-token-0123456789abcdef"
METRICS_RE = re.compile(r"metrics on http://[^ ]+:(\d+)/metrics")
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tokens = [
        {"tenant": "acme", "sha256": token_sha256(ACME)},
        {"tenant": "globex", "sha256": token_sha256(GLOBEX)},
    ]
    p = ServerProcess(
        tmp_path_factory.mktemp("ops") / "data",
        env={
            "POCKETD__ENCODER__MODEL_DIR": str(MODEL_DIR),
            "POCKETD__SERVER__METRICS_LISTEN": "127.0.0.1:0",
            "POCKETD__AUTH__TOKENS": json.dumps(tokens),
        },
        extra_args=["--log-format", "json"],
    )
    try:
        p.wait_serving(timeout=300)
        yield p
    finally:
        p.stop()


def metrics_port(p: ServerProcess) -> int:
    for line in p.log:
        if m := METRICS_RE.search(line):
            return int(m.group(1))
    raise AssertionError("no metrics line:\n" + "".join(p.log))


def scrape(p: ServerProcess) -> Samples:
    url = f"http://127.0.0.1:{metrics_port(p)}/metrics"
    with urllib.request.urlopen(url, timeout=30) as r:
        text = r.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def auth(token: str, request_id: str = "") -> list[tuple[str, str]]:
    md = [("authorization", f"Bearer {token}")]
    return [*md, ("x-request-id", request_id)] if request_id else md


def test_metrics_count_a_known_sequence_of_calls(server: ServerProcess) -> None:
    before = scrape(server)
    with grpc.insecure_channel(server.target) as ch:
        mem = spb_grpc.MemoryServiceStub(ch)
        led = lpb_grpc.LedgerServiceStub(ch)
        for text in ("The invoice for order 8812 is overdue", "The office is on floor 3"):
            rec = pb.MemoryRecord(namespace="ops", text=text, kind=pb.MEMORY_KIND_FACT)
            mem.Remember(spb.RememberRequest(record=rec), metadata=auth(ACME), timeout=30)
        for q in ("which invoice is overdue", "what floor is the office", "order 8812"):
            req = spb.RecallRequest(namespace="ops", query_text=q, route_policy="heuristic")
            mem.Recall(req, metadata=auth(ACME), timeout=30)
        with pytest.raises(grpc.RpcError) as bad:
            mem.Recall(spb.RecallRequest(namespace="ops"), metadata=auth(ACME), timeout=30)
        assert bad.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        mem.Recall(spb.RecallRequest(namespace="ops", query_text="floor"), metadata=auth(GLOBEX))
        with pytest.raises(grpc.RpcError) as anon:
            mem.Recall(spb.RecallRequest(namespace="ops", query_text="floor"), timeout=30)
        assert anon.value.code() is grpc.StatusCode.UNAUTHENTICATED
        budget = lpb.TaskBudget(total_micros=1000, emergency_ratio=0.1)
        led.OpenTask(
            lpb.OpenTaskRequest(task_id="t1", namespace="ops", budget=budget),
            metadata=auth(ACME),
            timeout=30,
        )
        kind = lpb.SPEND_KIND_MODEL_INPUT_TOKENS
        ok = lpb.ReserveRequest(
            task_id="t1", round=1, kind=kind, estimate_micros=100, idempotency_key="a"
        )
        led.Reserve(ok, metadata=auth(ACME), timeout=30)
        too_much = lpb.ReserveRequest(
            task_id="t1", round=1, kind=kind, estimate_micros=5000, idempotency_key="b"
        )
        led.Reserve(ok, metadata=auth(ACME), timeout=30)  # a retry: its stored reply
        with pytest.raises(grpc.RpcError) as refused:
            led.Reserve(too_much, metadata=auth(ACME), timeout=30)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED

    # An aborted call's status reaches the client before the interceptor counts it (the abort
    # sends it, then unwinds): the last call, refused, is counted a moment later.
    last = {"method": "LedgerService/Reserve", "tenant": "acme", "code": "RESOURCE_EXHAUSTED"}
    after: Samples = {}

    def counted() -> bool:
        after.clear()
        after.update(scrape(server))
        return value(after, "pocketd_calls_total", **last) > value(
            before, "pocketd_calls_total", **last
        )

    wait_for(counted)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    calls = "pocketd_calls_total"
    recall = "MemoryService/Recall"
    assert grew(calls, method="MemoryService/Remember", tenant="acme", code="OK") == 2
    assert grew(calls, method=recall, tenant="acme", code="OK") == 3
    assert grew(calls, method=recall, tenant="acme", code="INVALID_ARGUMENT") == 1
    assert grew(calls, method=recall, tenant="globex", code="OK") == 1
    assert grew(calls, method=recall, tenant="-", code="UNAUTHENTICATED") == 1
    assert grew(calls, method="LedgerService/Reserve", tenant="acme", code="OK") == 2
    assert (
        grew(calls, method="LedgerService/Reserve", tenant="acme", code="RESOURCE_EXHAUSTED") == 1
    )
    assert grew("pocketd_call_seconds_count", method=recall, tenant="acme") == 4
    assert grew("pocketd_call_seconds_sum", method=recall, tenant="acme") > 0
    # The Recalls that ran: acme's three and globex's one, each searching at least a pocket.
    assert grew("pocketd_recall_pockets_count", tenant="acme") == 3
    assert grew("pocketd_recall_pockets_sum", tenant="acme") >= 3
    assert grew("pocketd_recall_cost_units_sum", tenant="acme") > 0
    assert grew("pocketd_recall_pockets_count", tenant="globex") == 1

    def decisions() -> float:  # an explored decision is counted after its shadow run
        return sum(
            v - before.get(k, 0.0)
            for k, v in scrape(server).items()
            if k[0] == "pocketd_router_decisions_total" and ("asked", "heuristic") in k[1]
        )

    wait_for(lambda: decisions() == 3)
    reservations = "pocketd_ledger_reservations_total"
    assert grew(reservations, tenant="acme", outcome="granted") == 1
    assert grew(reservations, tenant="acme", outcome="refused_total") == 1
    for gauge in (
        "pocketd_index_pending_records",
        "pocketd_index_lag_revisions",
        "pocketd_hot_records",
        "pocketd_encoder_queue",
        "pocketd_read_calls_in_flight",
        "pocketd_write_calls_in_flight",
        "pocketd_bulk_calls_in_flight",
        "pocketd_agent_calls_in_flight",
        "pocketd_media_pending",
        "pocketd_media_failed",
        "pocketd_media_blobs",
    ):
        assert (gauge, frozenset()) in after, gauge
    assert value(after, "pocketd_encoder_queue") == 0
    assert value(after, "pocketd_media_pending") == 0  # no medium was sent
    wait_for(lambda: value(scrape(server), "pocketd_index_lag_revisions") == 0)


def test_log_lines_carry_the_request_id_and_the_tenant_but_no_text(server: ServerProcess) -> None:
    with grpc.insecure_channel(server.target) as ch:
        mem = spb_grpc.MemoryServiceStub(ch)
        rec = pb.MemoryRecord(
            namespace="logs", text="The vault code is 7314", kind=pb.MEMORY_KIND_FACT
        )
        mem.Remember(spb.RememberRequest(record=rec), metadata=auth(ACME, "req-42.a"), timeout=30)
        mem.Recall(
            spb.RecallRequest(namespace="logs", query_text="vault code"),
            metadata=auth(GLOBEX, "bad id with spaces"),
            timeout=30,
        )

    def lines() -> list[dict[str, object]]:
        out = []
        for line in list(server.log):
            rec = json.loads(line)
            if rec["logger"] == "pocketd.calls" and rec.get("namespace") == "logs":
                out.append(rec)
        return out

    wait_for(lambda: len(lines()) == 2)
    remember, recall = lines()
    assert (remember["method"], remember["tenant"], remember["request_id"]) == (
        "Remember",
        "acme",
        "req-42.a",
    )
    # A request id that is not a plausible one is replaced by one the server makes.
    assert recall["tenant"] == "globex"
    assert re.fullmatch(r"[0-9a-f]{16}", str(recall["request_id"]))
    assert not any("7314" in line or "vault" in line for line in server.log)
