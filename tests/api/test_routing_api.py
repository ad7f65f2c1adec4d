"""Store routing over gRPC, on a server wired as `pocketd serve` wires it (router, decision log,
model watcher): Explain, the safety net, the switch, validation, hot reload and rollback, and the
whole loop (exploration traffic → train → reload → a routed Recall uses the new model)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import msgspec
import numpy as np
import pytest

from pocketd import AsyncClient
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.decision_log import read_log
from server.adapters.model_store import ModelStore
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.onnx_policy import export
from server.api.calls import WorkerPools
from server.api.server import GrpcServer
from server.app import build_engine
from server.cli import main
from server.core.engine import MemoryEngine
from server.core.routing.inputs import LAYOUT, input_width
from server.core.routing.mlp import TrainSettings, train
from server.core.settings import Settings
from tests.api.test_memory_api import expect, violations
from tests.conftest import make_settings

NS = "agent-1"
KINDS = (
    pb.MEMORY_KIND_FACT,
    pb.MEMORY_KIND_PREFERENCE,
    pb.MEMORY_KIND_SKILL,
    pb.MEMORY_KIND_EPISODE,
)
TEXTS = (
    "My shoe size is 43",
    "I prefer tea over coffee in the morning",
    "To reset the router hold the button for ten seconds",
    "We talked about the quarterly invoice from the printer vendor",
    "I am allergic to penicillin",
    "The staging database password rotates every month",
    "My favourite colour is green",
    "To deploy, tag the release and push it",
)
QUERIES = (
    "what is my shoe size",
    "how do I reset the router",
    "what did we say about the invoice",
    "do I like tea",
    "how do I deploy",
    "what is my favourite colour",
)


class Routed:
    def __init__(self, settings: Settings, engine: MemoryEngine, grpc_server: GrpcServer) -> None:
        self.settings = settings
        self.engine = engine
        self.grpc = grpc_server
        self.data = Path(settings.server.data_dir)
        self.stub: spb_grpc.MemoryServiceStub
        self.target = ""


@contextlib.asynccontextmanager
async def routed_server(
    tmp: Path, encoder: OnnxTextEncoder, **router: object
) -> AsyncIterator[Routed]:
    base = make_settings(tmp)
    settings = msgspec.structs.replace(
        base,
        router=msgspec.structs.replace(base.router, reload_interval_s=0.05, **router),
    )
    pools = WorkerPools(4, 2)
    srv = GrpcServer(settings, pools)
    port = await srv.start("127.0.0.1:0")
    eng = build_engine(settings, encoder)
    eng.load()
    await srv.mark_serving(eng)
    r = Routed(settings, eng, srv)
    r.target = f"127.0.0.1:{port}"
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        r.stub = spb_grpc.MemoryServiceStub(ch)
        await r.stub.RememberBatch(
            spb.RememberBatchRequest(
                items=[
                    spb.RememberRequest(
                        record=pb.MemoryRecord(
                            namespace=NS, kind=KINDS[i % len(KINDS)], text=t, importance=4
                        )
                    )
                    for i, t in enumerate(TEXTS)
                ]
            )
        )
        eng.indexer.catch_up()
        try:
            yield r
        finally:
            await srv.drain(1.0)
            eng.close()
            pools.shutdown()


def explain(text: str, *policies: str, run: bool = False) -> spb.ExplainRequest:
    return spb.ExplainRequest(
        recall=spb.RecallRequest(namespace=NS, query_text=text), policies=policies, run=run
    )


async def test_explain_gives_every_policy_without_searching(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path, encoder, policy="heuristic") as r:
        resp = await r.stub.Explain(explain("what is my shoe size"))
        assert [p.policy for p in resp.policies] == ["full", "heuristic", "learned", "hybrid"]
        assert "about_me" in resp.features.flags
        # A text query is read with its vector, encoded first: the intents say what it asks.
        assert resp.features.vector
        intents = {i.intent: i for i in resp.features.intents}
        assert max(intents, key=lambda k: intents[k].similarity) == "profile"
        assert max(intents, key=lambda k: intents[k].readout) == "profile"
        assert intents["profile"].probability > 0.5 > intents["none"].probability
        stores = {p.pocket: p.store for p in resp.features.pockets}
        assert all(stores[n] == "profile" for n in stores if n.startswith(("fact/", "preference/")))
        assert all(p.intent_probability >= 0 for p in resp.features.pockets if p.store)
        assert resp.policies[1].skip_below == pytest.approx(0.1)
        names = [p.pocket for p in resp.features.pockets]
        assert len(names) >= 4 and all(p.size > 0 for p in resp.features.pockets)
        by = {p.policy: p for p in resp.policies}
        assert {s.pocket for s in by["full"].steps} == set(names)
        h = by["heuristic"]
        assert h.ran == "heuristic" and "about_me" in resp.features.flags
        assert h.steps[0].pocket.startswith(("fact/", "preference/"))
        assert len(h.scores) == len(names) and h.cost_units < h.full_cost_units
        for cold in (by["learned"], by["hybrid"]):  # no model yet: the heuristic runs
            assert cold.ran == "heuristic" and cold.model_version == ""
        assert not any(p.HasField("result") for p in resp.policies)
        # nothing was searched, so nothing was logged
        r.engine.planner.close()  # type: ignore[union-attr]
        assert list(read_log(r.data / "router")) == []


async def test_explain_run_returns_each_plans_result(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path, encoder, policy="heuristic") as r:
        resp = await r.stub.Explain(
            explain("how do I reset the router", "full", "heuristic", run=True)
        )
        full, heur = resp.policies
        assert full.result.hits and heur.result.hits
        assert full.result.hits[0].record.text.startswith("To reset the router")
        assert heur.result.hits[0].record.memory_id == full.result.hits[0].record.memory_id
        assert full.searched_steps == len(full.steps)
        assert 1 <= heur.searched_steps <= len(heur.steps)
        assert heur.steps[0].pocket.startswith("skill/")  # the most probable, searched first
        assert heur.result.cost_units <= full.result.cost_units


async def test_the_safety_net_widens_a_routed_plan_to_full(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path, encoder, policy="heuristic") as r:
        resp = await r.stub.Explain(explain("am I allergic to any medication", "heuristic"))
        (h,) = resp.policies
        assert h.ran == "full" and h.widened.startswith("safety: ")
        assert "allergy" in h.widened or "allergic" in h.widened or "medication" in h.widened
        assert len(h.steps) == len(resp.features.pockets)
        res = await r.stub.Recall(
            spb.RecallRequest(namespace=NS, query_text="am I allergic to any medication")
        )
        assert "penicillin" in res.hits[0].record.text
        assert all(s.method != "skipped" for s in res.plan)


async def test_the_switch_runs_the_full_plan_per_request_and_in_config(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path / "a", encoder, policy="heuristic") as r:
        pockets = len((await r.stub.Explain(explain("x", "full"))).features.pockets)
        q = spb.RecallRequest(namespace=NS, query_text="what is my shoe size")
        routed = await r.stub.Recall(q)
        q.route_policy = "full"
        full = await r.stub.Recall(q)
        assert len(full.plan) == pockets and all(s.method != "skipped" for s in full.plan)
        assert routed.cost_units < full.cost_units
        r.engine.planner.close()  # type: ignore[union-attr]
        assert [d.policy for d in read_log(r.data / "router")] == ["heuristic"]  # full: no log
    async with routed_server(tmp_path / "b", encoder, policy="full") as r:
        res = await r.stub.Recall(
            spb.RecallRequest(namespace=NS, query_text="what is my shoe size")
        )
        assert len(res.plan) == pockets
        r.engine.planner.close()  # type: ignore[union-attr]
        assert list(read_log(r.data / "router")) == []


async def test_bad_routing_requests_name_the_field(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path, encoder) as r:
        q = spb.RecallRequest(namespace=NS, query_text="x", route_policy="oracle")
        err = await expect(r.stub.Recall(q), grpc.StatusCode.INVALID_ARGUMENT)
        assert "oracle" in violations(err)["route_policy"]
        q = spb.RecallRequest(
            namespace=NS, query_text="x", route_policy="heuristic",
            plan=[spb.PlanStep(pocket="fact/warm/text", depth=5)],
        )  # fmt: skip
        err = await expect(r.stub.Recall(q), grpc.StatusCode.INVALID_ARGUMENT)
        assert "plan" in violations(err)["route_policy"]
        bad = spb.ExplainRequest(
            recall=spb.RecallRequest(namespace="", route_policy="full"),
            policies=["heuristic", "heuristic", "best"],
        )
        v = violations(await expect(r.stub.Explain(bad), grpc.StatusCode.INVALID_ARGUMENT))
        assert {"recall.namespace", "recall.route_policy", "policies[1]", "policies[2]"} <= set(v)
        assert "twice" in v["policies[1]"] and "best" in v["policies[2]"]


def _install(r: Routed, version: str, seed: int) -> None:
    """A model of the server's input layout, installed as the trainer installs one."""
    width = input_width(r.settings.router.prefix_dim)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((200, width)).astype(np.float32)
    mlp = train(x, x[:, -1] > 0, TrainSettings(epochs=2, seed=seed))
    ModelStore(r.data / "router" / "models").install(
        version, export(mlp, LAYOUT, version), {}, None
    )


async def _learned_version(r: Routed) -> str:
    (p,) = (await r.stub.Explain(explain("what is my shoe size", "learned"))).policies
    return p.model_version


async def _until(r: Routed, version: str) -> None:
    for _ in range(2400):  # 120 s at most
        if await _learned_version(r) == version:
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"the server never loaded model {version!r}")


async def test_a_new_model_is_hot_reloaded_and_rolled_back(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path, encoder, policy="learned") as r:
        assert await _learned_version(r) == ""
        _install(r, "v1", 1)
        await _until(r, "v1")
        _install(r, "v2", 2)
        await _until(r, "v2")
        assert main(["router", "rollback", "--data-dir", str(r.data)]) == 0
        await _until(r, "v1")
        assert main(["router", "rollback", "--data-dir", str(r.data)]) == 0  # undo
        await _until(r, "v2")


async def test_exploration_then_training_then_a_routed_recall_uses_the_new_model(
    tmp_path: Path, encoder: OnnxTextEncoder, capsys: pytest.CaptureFixture[str]
) -> None:
    async with routed_server(tmp_path, encoder, policy="heuristic", explore_share=1.0) as r:
        log_dir = r.data / "router"
        n = 0
        for round_ in range(6):
            for text in (*QUERIES, *TEXTS):
                await r.stub.Recall(spb.RecallRequest(namespace=NS, query_text=f"{text} {round_}"))
                n += 1
                r.engine.planner.drain()  # type: ignore[union-attr]
        for _ in range(2400):  # the log's writer is a thread: wait for the last records
            if sum(1 for d in read_log(log_dir) if d.shadow is not None) >= n:
                break
            await asyncio.sleep(0.05)
        explored = [d for d in read_log(log_dir) if d.shadow is not None]
        assert len(explored) == n and all(d.inputs is not None for d in explored)
        assert main(["router", "train", "--data-dir", str(r.data), "--epochs", "20"]) == 0
        out = capsys.readouterr()
        assert "installed" in out.err and "epoch 1/20" in out.err
        for policy in ("full", "heuristic", "learned", "hybrid"):
            assert f"\n{policy} " in out.out
        version = ModelStore(log_dir / "models").pointer(None)["current"]  # type: ignore[index]
        await _until(r, version)
        q = spb.RecallRequest(
            namespace=NS, query_text="what is my shoe size", route_policy="learned"
        )
        res = await r.stub.Recall(q)
        assert res.hits
        r.engine.planner.drain()  # type: ignore[union-attr]
        for _ in range(2400):
            last = list(read_log(log_dir))[-1]
            if last.asked == "learned":
                break
            await asyncio.sleep(0.05)
        assert last.asked == "learned" and last.model == version
        assert last.policy in ("learned", "full")  # full only if the model was unsure


async def test_the_typed_client_explains_and_routes(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    async with routed_server(tmp_path, encoder, policy="full") as r, AsyncClient(r.target) as c:
        resp = await c.explain(NS, "what is my shoe size", policies=["heuristic"], run=True)
        (h,) = resp.policies
        assert h.ran == "heuristic" and h.result.hits
        routed = await c.recall(NS, "what is my shoe size", route_policy="heuristic")
        full = await c.recall(NS, "what is my shoe size")
        assert routed.hits[0].memory.memory_id == full.hits[0].memory.memory_id
