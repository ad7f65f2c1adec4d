"""Explain on a server with a router, two tenants: the attacker explains a Recall of the
victim's namespace name and learns nothing of the victim's memories (no pockets, no hits, no
costs of them), while the victim's own Explain sees them."""

from __future__ import annotations

from pathlib import Path

import msgspec

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.api.calls import WorkerPools
from server.api.server import GrpcServer
from server.app import build_engine
from tests.conftest import make_settings
from tests.security.conftest import ATTACKER, VICTIM, caller, with_tokens


async def test_explain_shows_only_the_callers_own_namespace(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    base = with_tokens(make_settings(tmp_path / "srv"))
    settings = msgspec.structs.replace(
        base, router=msgspec.structs.replace(base.router, policy="heuristic")
    )
    pools = WorkerPools(4, 2, spare_one=True)
    srv = GrpcServer(settings, pools)
    port = await srv.start("127.0.0.1:0")
    eng = build_engine(settings, encoder)
    eng.load()
    await srv.mark_serving(eng)
    target = f"127.0.0.1:{port}"
    v, a = caller(target, VICTIM), caller(target, ATTACKER)
    try:
        rec = pb.MemoryRecord(
            namespace="home", text="My bank card PIN is 4321", kind=pb.MEMORY_KIND_FACT
        )
        await v.memory.Remember(
            spb.RememberRequest(record=rec, hints=spb.WriteHints(remember=True))
        )
        eng.indexer.catch_up()
        ask = spb.ExplainRequest(
            recall=spb.RecallRequest(namespace="home", query_text="What is my PIN?"), run=True
        )
        own = await v.memory.Explain(ask)
        assert own.features.pockets  # the victim's pocket is there for the victim
        assert any("4321" in h.record.text for p in own.policies for h in p.result.hits)
        theirs = await a.memory.Explain(ask)
        assert list(theirs.features.pockets) == []
        for p in theirs.policies:
            assert list(p.result.hits) == [] and list(p.steps) == []
            assert p.full_cost_units == 0.0
    finally:
        for c in (v, a):
            await c.channel.close()
        await srv.drain(1.0)
        eng.close()
        pools.shutdown()
