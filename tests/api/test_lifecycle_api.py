"""The memory lifecycle over gRPC (issue 29): supersession without ids, Reconcile and
Unsupersede, EndSession, Maintain and include_cold, their errors and grants, and the hot tier's
Redis going away and coming back, against a real server on port 0.

The server's engine runs on a fake clock whose frequent tick (session ends, tier moves) and
maintenance schedule are kept out of the way, so that only the calls the test makes move memory
between tiers (`life_settings`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import msgspec
import pytest
import redis
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from pocketd import AsyncClient, Client, Fact
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.redis_sessions import session_name
from server.core.settings import Settings
from tests.api.test_memory_api import expect, record, violations
from tests.conftest import DAY, FakeClock, RunningServer, make_settings, start_server, stop_server
from tests.redis_server import RedisServer
from tests.security.conftest import ATTACKER, NARROW, VICTIM, caller, with_tokens

GARDEN = [
    "The tomatoes in the north bed need watering every two days",
    "Basil grows best in the sunny corner by the shed",
    "The compost heap gets turned every Sunday morning",
    "Slugs ate the lettuce seedlings, so we put copper tape around the beds",
    "The apple tree was pruned in February and fertilised in March",
    "Rainwater from the barrel is used for the greenhouse cucumbers",
]


def life_settings(tmp: Path, **hot: object) -> Settings:
    """Settings for a lifecycle test: the engine's frequent tick (session ends, hot tier moves)
    at its longest interval and the maintenance schedule off, so that only the test's calls
    move memory; `hot`: overrides of `memory.hot`."""
    s = make_settings(tmp, access_flush_seconds=3600.0)
    lc = s.memory.lifecycle
    mem = msgspec.structs.replace(
        s.memory,
        hot=msgspec.structs.replace(s.memory.hot, **hot),
        lifecycle=msgspec.structs.replace(
            lc, maintenance=msgspec.structs.replace(lc.maintenance, enabled=False)
        ),
    )
    return msgspec.structs.replace(s, memory=mem)


class Life:
    """A started server with the composition root's lifecycle parts, and its fake clock."""

    def __init__(self, srv: RunningServer, clock: FakeClock) -> None:
        self.srv = srv
        self.clock = clock
        self.stub = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(srv.target))

    async def caught_up(self) -> None:
        """The warm and cold indexes hold every change made so far."""
        await asyncio.to_thread(self.srv.engine.indexer.catch_up)


@pytest.fixture
async def life(tmp_path: Path, encoder: OnnxTextEncoder) -> AsyncIterator[Life]:
    clock = FakeClock(time.time())
    data = tmp_path / "srv"
    srv, executor = await start_server(data, encoder, life_settings(data), clock, True)
    yield Life(srv, clock)
    await stop_server(srv, executor)


def not_found(err: grpc.aio.AioRpcError) -> tuple[str, str]:
    """The ResourceInfo of a NOT_FOUND: (type, name)."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None
    for d in status.details:
        if d.Is(error_details_pb2.ResourceInfo.DESCRIPTOR):
            info = error_details_pb2.ResourceInfo()
            d.Unpack(info)
            return info.resource_type, info.resource_name
    raise AssertionError("no ResourceInfo")


# -- Supersession without ids, and a question about the past --------------------------------


async def test_a_value_change_supersedes_without_ids_and_the_past_finds_the_old_value(
    life: Life,
) -> None:
    async with AsyncClient(life.srv.target) as c:
        old = await c.remember("app", "The app does not support Android")
        life.clock.advance(60)  # a later statement (one made at the same instant is no update)
        new = await c.remember("app", "The app now supports Android")
        assert old.superseded == ()
        [s] = new.superseded
        assert (s.memory_id, s.superseded_by) == (old.memory_id, new.memory_id)
        assert s.reason.startswith("value:")
        got = await c.get("app", old.memory_id)
        assert got.obsolete and got.superseded_by == new.memory_id
        assert got.supersede_reason == s.reason
        assert not (await c.get("app", new.memory_id)).obsolete
        await life.caught_up()
        asked = "did the app support Android before?"
        current = [h.memory.memory_id for h in (await c.recall("app", asked)).hits]
        assert new.memory_id in current and old.memory_id not in current
        past = (await c.recall("app", asked, include_obsolete=True)).hits
        found = {h.memory.memory_id: h.memory for h in past}
        assert old.memory_id in found
        assert found[old.memory_id].superseded_by == new.memory_id


# -- Reconcile and Unsupersede --------------------------------------------------------------


async def test_reconcile_dry_run_decides_and_stores_nothing_then_applies_and_unsupersede_undoes(
    life: Life,
) -> None:
    async with AsyncClient(life.srv.target) as c:
        price = await c.remember("shop", "The product price is 3.2 dollars", topic="pricing")
        other = await c.remember("shop", "The shop opens at nine", topic="hours")
        fact = Fact("The product price is 4.0 dollars", topic="pricing")
        await life.caught_up()
        before = (await c.stats("shop")).namespaces[0].record_count

        dry = await c.reconcile("shop", [fact], dry_run=True)
        assert not dry.applied and dry.fact_ids == ()
        decided = {d.memory_id: d for d in dry.decisions}
        assert decided[price.memory_id].supersede and decided[price.memory_id].fact_index == 0
        assert decided[price.memory_id].reason.startswith("value:number")
        assert decided[price.memory_id].text == "The product price is 3.2 dollars"
        assert other.memory_id not in decided or not decided[other.memory_id].supersede
        assert (await c.stats("shop")).namespaces[0].record_count == before
        assert not (await c.get("shop", price.memory_id)).obsolete

        done = await c.reconcile("shop", [fact])
        assert done.applied and len(done.fact_ids) == 1
        assert [d.memory_id for d in done.decisions if d.supersede] == [price.memory_id]
        stored = await c.get("shop", done.fact_ids[0])
        assert stored.text == fact.text and stored.source_type == "official_document"
        assert stored.topic == "pricing" and stored.kind == "fact"
        gone = await c.get("shop", price.memory_id)
        assert gone.obsolete and gone.superseded_by == done.fact_ids[0]
        assert gone.supersede_reason == "reconcile"
        assert not (await c.get("shop", other.memory_id)).obsolete

        assert await c.unsupersede("shop", [price.memory_id, other.memory_id]) == (price.memory_id,)
        back = await c.get("shop", price.memory_id)
        assert not back.obsolete and back.superseded_by == "" and back.supersede_reason == ""
        assert await c.unsupersede("shop", [price.memory_id]) == ()  # already current


BAD_RECONCILE = [
    (spb.ReconcileRequest(facts=[spb.AuthoritativeFact(text="x")]), "namespace", "required"),
    (spb.ReconcileRequest(namespace="n"), "facts", "must have 1-1024"),
    (
        spb.ReconcileRequest(namespace="n", facts=[spb.AuthoritativeFact(text="x")] * 1025),
        "facts",
        "must have 1-1024",
    ),
    (
        spb.ReconcileRequest(
            namespace="n",
            facts=[
                spb.AuthoritativeFact(text="ok"),
                spb.AuthoritativeFact(text="x", topic="t" * 129),
            ],
        ),
        "facts[1].topic",
        "maximum is 128",
    ),
    (
        spb.ReconcileRequest(namespace="n", facts=[spb.AuthoritativeFact(topic="pricing")]),
        "facts[0].text",
        "is required",
    ),
    (
        spb.ReconcileRequest(namespace="n", facts=[spb.AuthoritativeFact(text="x" * 40_000)]),
        "facts[0].text",
        "maximum is 32768",
    ),
    (
        spb.ReconcileRequest(namespace="n", facts=[spb.AuthoritativeFact(text="x", vector=[1.0])]),
        "facts[0].vector",
        "embedding_dim",
    ),
    (
        spb.ReconcileRequest(namespace="n", facts=[spb.AuthoritativeFact(text="x", kind=42)]),
        "facts[0].kind",
        "not a known MemoryKind",
    ),
    (
        spb.ReconcileRequest(namespace="n", facts=[spb.AuthoritativeFact(text="x", source_type=9)]),
        "facts[0].source_type",
        "not a known SourceType",
    ),
]


@pytest.mark.parametrize(("req", "field", "why"), BAD_RECONCILE)
async def test_bad_reconcile_requests_name_the_field(
    life: Life, req: spb.ReconcileRequest, field: str, why: str
) -> None:
    v = violations(await expect(life.stub.Reconcile(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert field in v and why in v[field], v


async def test_unsupersede_names_the_unknown_id_and_changes_nothing(life: Life) -> None:
    async with AsyncClient(life.srv.target) as c:
        old = await c.remember("app", "The app does not support Android")
        life.clock.advance(60)
        await c.remember("app", "The app now supports Android")
    req = spb.UnsupersedeRequest(namespace="app", memory_ids=[old.memory_id, "m-nobody"])
    err = await expect(life.stub.Unsupersede(req), grpc.StatusCode.NOT_FOUND)
    assert violations(err) == {"memory_ids[1]": "not found"}
    assert not_found(err) == ("memory", "m-nobody")
    got = await life.stub.Get(spb.GetRequest(namespace="app", memory_id=old.memory_id))
    assert got.record.obsolete  # the known id was not restored either


@pytest.mark.parametrize(
    ("req", "field", "why"),
    [
        (spb.UnsupersedeRequest(memory_ids=["a"]), "namespace", "required"),
        (spb.UnsupersedeRequest(namespace="n"), "memory_ids", "must have 1-1024"),
        (spb.UnsupersedeRequest(namespace="n", memory_ids=["a"] * 1025), "memory_ids", "1-1024"),
        (spb.UnsupersedeRequest(namespace="n", memory_ids=["a", "b c"]), "memory_ids[1]", "must"),
    ],
)
async def test_bad_unsupersede_requests_name_the_field(
    life: Life, req: spb.UnsupersedeRequest, field: str, why: str
) -> None:
    v = violations(await expect(life.stub.Unsupersede(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert field in v and why in v[field], v


# -- EndSession -----------------------------------------------------------------------------

TURNS = [
    "I moved to Lisbon in March and I work at Acme as a data engineer.",
    "My sister Ana is visiting next week, and she is allergic to peanuts.",
    "We decided the quarterly report is due on the 14th of June.",
]


async def test_end_session_writes_summaries_from_the_turns_and_moves_them_to_warm(
    life: Life,
) -> None:
    async with AsyncClient(life.srv.target) as c:
        turns = [
            await c.remember("me", t, kind="episode", session_id="s1", speaker="user", turn=i)
            for i, t in enumerate(TURNS)
        ]
        assert all(t.stored and t.tier == "hot" for t in turns)
        ids = {t.memory_id for t in turns}
        assert {(await c.get("me", m)).tier for m in ids} == {"hot"}

        ended = await c.end_session("me", "s1")
        assert ended.turns_moved == len(TURNS)
        assert ended.summaries and all(s.stored for s in ended.summaries)
        for s in ended.summaries:
            got = await c.get("me", s.memory_id)
            assert got.kind == "summary" and got.session_id == "s1" and got.tier == "warm"
            assert got.derived_from and set(got.derived_from) <= ids
        assert {(await c.get("me", m)).tier for m in ids} == {"warm"}


@pytest.mark.parametrize(
    ("req", "field", "why"),
    [
        (spb.EndSessionRequest(session_id="s1"), "namespace", "required"),
        (spb.EndSessionRequest(namespace="n"), "session_id", "required"),
        (spb.EndSessionRequest(namespace="n", session_id="a b"), "session_id", "must be 1-128"),
    ],
)
async def test_bad_end_session_requests_name_the_field(
    life: Life, req: spb.EndSessionRequest, field: str, why: str
) -> None:
    v = violations(await expect(life.stub.EndSession(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert field in v and why in v[field], v


async def test_end_session_of_an_unknown_session_is_not_found(life: Life) -> None:
    async with AsyncClient(life.srv.target) as c:
        await c.remember("me", TURNS[0], kind="episode", session_id="s1")
    req = spb.EndSessionRequest(namespace="me", session_id="s2")
    err = await expect(life.stub.EndSession(req), grpc.StatusCode.NOT_FOUND)
    assert violations(err) == {"session_id": "not found"}
    assert not_found(err) == ("session", "s2")
    # Another namespace's session of that name is not this namespace's.
    other = spb.EndSessionRequest(namespace="you", session_id="s1")
    await expect(life.stub.EndSession(other), grpc.StatusCode.NOT_FOUND)


# -- Maintain and include_cold --------------------------------------------------------------


async def test_maintain_compresses_a_topic_once_and_include_cold_finds_the_originals(
    life: Life,
) -> None:
    async with AsyncClient(life.srv.target) as c:
        notes = [(await c.remember("g", t, topic="garden")).memory_id for t in GARDEN]
        await c.remember("g", "The car is due for its inspection in May")
        report = await c.maintain("g")
        assert (report.topics_compressed, report.compressed_records) == (1, len(GARDEN))
        assert (report.moved_to_cold, report.expired, report.sessions_ended) == (0, 0, 0)
        assert report.took_micros > 0

        originals = [await c.get("g", m) for m in notes]
        summary_id = originals[0].compressed_into
        assert summary_id and {o.compressed_into for o in originals} == {summary_id}
        assert {o.tier for o in originals} == {"cold"}
        summary = await c.get("g", summary_id)
        assert set(summary.derived_from) == set(notes) and summary.tier == "warm"

        again = await c.maintain("g")
        assert (again.topics_compressed, again.compressed_records) == (0, 0)

        await life.caught_up()
        asked = "how often do the tomatoes need watering"
        warm = [h.memory.memory_id for h in (await c.recall("g", asked, top_k=10)).hits]
        assert summary_id in warm and not set(warm) & set(notes)
        cold = await c.recall("g", asked, top_k=10, include_cold=True)
        assert notes[0] in [h.memory.memory_id for h in cold.hits]
        assert any(p.method == "cold" for p in cold.plan)


async def test_maintain_expires_and_moves_old_memories_to_cold_months_later(life: Life) -> None:
    async with AsyncClient(life.srv.target) as c:
        short = await c.remember(
            "old", "The visitor badge code is 5521", expires_at=life.clock.now() + 3600
        )
        # Kept a year (not `write_policy.expire_after_days`): its retention, not its expiry,
        # decides where it is after four months without a read.
        faded = await c.remember(
            "old",
            "The printer on the second floor jams on A3 paper",
            expires_at=life.clock.now() + 365 * DAY,
        )
        life.clock.advance(120 * DAY)
        report = await c.maintain("old")
        assert (report.expired, report.moved_to_cold) == (1, 1)
        await expect(
            life.stub.Get(spb.GetRequest(namespace="old", memory_id=short.memory_id)),
            grpc.StatusCode.NOT_FOUND,
        )
        assert (await c.get("old", faded.memory_id)).tier == "cold"
        tiers = (await c.stats("old")).namespaces[0].tiers
        assert tiers["cold"] == 1 and tiers["warm"] == 0


async def test_maintain_of_one_namespace_ends_only_its_own_idle_sessions(life: Life) -> None:
    async with AsyncClient(life.srv.target) as c:
        a = await c.remember("a", TURNS[0], kind="episode", session_id="s1")
        b = await c.remember("b", TURNS[1], kind="episode", session_id="s1")
        life.clock.advance(2 * Settings().memory.hot.ttl_seconds)
        report = await c.maintain("a")
        assert (report.sessions_ended, report.moved_to_warm) == (1, 1)
        assert (await c.get("a", a.memory_id)).tier == "warm"
        assert (await c.get("b", b.memory_id)).tier == "hot"  # not a's to end
        assert (await c.maintain("b")).sessions_ended == 1
        assert (await c.get("b", b.memory_id)).tier == "warm"


async def test_maintain_of_every_namespace_reports_the_whole_run(life: Life) -> None:
    async with AsyncClient(life.srv.target) as c:
        for ns in ("x", "y"):
            for t in GARDEN:
                await c.remember(ns, t, topic="garden")
        report = await c.maintain()
        assert (report.topics_compressed, report.compressed_records) == (2, 2 * len(GARDEN))


async def test_bad_maintain_namespace_is_invalid_argument(life: Life) -> None:
    req = spb.MaintainRequest(namespace="bad namespace!")
    v = violations(await expect(life.stub.Maintain(req), grpc.StatusCode.INVALID_ARGUMENT))
    assert "namespace" in v


async def test_the_blocking_client_has_the_lifecycle_calls(life: Life) -> None:
    def run() -> None:
        with Client(life.srv.target) as c:
            price = c.remember("shop", "The product price is 3.2 dollars", topic="pricing")
            done = c.reconcile("shop", [Fact("The product price is 4.0 dollars", "pricing")])
            assert done.applied and [d.memory_id for d in done.decisions if d.supersede] == [
                price.memory_id
            ]
            assert c.unsupersede("shop", [price.memory_id]) == (price.memory_id,)
            c.remember("shop", TURNS[0], kind="episode", session_id="s1")
            assert c.end_session("shop", "s1").turns_moved == 1
            assert c.maintain("shop").topics_compressed == 0

    await asyncio.to_thread(run)  # off the loop the in-process server answers on


# -- Grants ---------------------------------------------------------------------------------


@pytest.fixture
async def tokens(tmp_path: Path, encoder: OnnxTextEncoder) -> AsyncIterator[Life]:
    """A lifecycle server with the victim's (admin), the attacker's and the narrow token."""
    clock = FakeClock(time.time())
    data = tmp_path / "srv"
    settings = with_tokens(life_settings(data))
    srv, executor = await start_server(data, encoder, settings, clock, True)
    yield Life(srv, clock)
    await stop_server(srv, executor)


async def test_the_lifecycle_rpcs_need_a_token_that_grants_the_namespace(tokens: Life) -> None:
    v, a, narrow = (caller(tokens.srv.target, t) for t in (VICTIM, ATTACKER, NARROW))
    for who in (v, a):  # each tenant's own "home", with a topic to compress
        for text in GARDEN:
            rec = record(namespace="home", text=text, topic="garden")
            await who.memory.Remember(spb.RememberRequest(record=rec))
    turn = record(namespace="home", text=TURNS[0], session_id="s", kind=pb.MEMORY_KIND_EPISODE)
    await v.memory.Remember(spb.RememberRequest(record=turn))
    fact = spb.AuthoritativeFact(text="The product price is 4.0 dollars")
    for call in (
        narrow.memory.Reconcile(spb.ReconcileRequest(namespace="home", facts=[fact])),
        narrow.memory.Unsupersede(spb.UnsupersedeRequest(namespace="home", memory_ids=["m"])),
        narrow.memory.EndSession(spb.EndSessionRequest(namespace="home", session_id="s")),
        narrow.memory.Maintain(spb.MaintainRequest(namespace="home")),
        # Every namespace: only a token that grants every one may ask.
        narrow.memory.Maintain(spb.MaintainRequest()),
    ):
        err = await expect(call, grpc.StatusCode.PERMISSION_DENIED)
        assert violations(err) == {"namespace": "not granted to this token"}
    for token in (None, "not-a-token"):
        c = caller(tokens.srv.target, token)
        await expect(c.memory.Maintain(spb.MaintainRequest()), grpc.StatusCode.UNAUTHENTICATED)
        await c.channel.close()

    # The attacker's "every namespace" is its own tenant's: its topic is compressed, the
    # victim's stays whole.
    report = await a.memory.Maintain(spb.MaintainRequest())
    assert (report.topics_compressed, report.compressed_records) == (1, len(GARDEN))
    listed = await v.memory.List(spb.ListRequest(namespace="home"))
    assert {r.tier for r in listed.records if r.topic == "garden"} == {pb.TIER_WARM}
    # The attacker's "home" is another namespace than the victim's: the victim's session is
    # not in it.
    await expect(
        a.memory.EndSession(spb.EndSessionRequest(namespace="home", session_id="s")),
        grpc.StatusCode.NOT_FOUND,
    )
    # The victim's token sees its tenant: its run compresses its topic.
    mine = await v.memory.Maintain(spb.MaintainRequest())
    assert (mine.topics_compressed, mine.compressed_records) == (1, len(GARDEN))
    for c in (v, a, narrow):
        await c.channel.close()


# -- The hot tier's Redis at run time -------------------------------------------------------


async def test_a_remember_while_redis_is_down_is_unavailable_yet_durable(
    tmp_path: Path, encoder: OnnxTextEncoder, redis_server: RedisServer
) -> None:
    data = tmp_path / "srv"
    settings = life_settings(data, backend="redis", url=redis_server.url, redis_retries=1)
    srv, executor = await start_server(data, encoder, settings, FakeClock(time.time()), True)
    try:
        stub = spb_grpc.MemoryServiceStub(grpc.aio.insecure_channel(srv.target))

        def turn(mid: str, text: str) -> spb.RememberRequest:
            rec = record(namespace="chat", memory_id=mid, session_id="s1", text=text)
            rec.kind = pb.MEMORY_KIND_EPISODE
            return spb.RememberRequest(record=rec)

        first = await stub.Remember(turn("t1", "I moved to Lisbon in March"))
        assert first.tier == pb.TIER_HOT
        await asyncio.to_thread(redis_server.kill)

        err = await expect(
            stub.Remember(turn("t2", "My sister Ana is allergic to peanuts")),
            grpc.StatusCode.UNAVAILABLE,
        )
        assert "memory.hot.url" in (err.details() or "")

        await asyncio.to_thread(redis_server.start)  # empty: it kept nothing
        got = await stub.Get(spb.GetRequest(namespace="chat", memory_id="t2"))
        assert got.record.text == "My sister Ana is allergic to peanuts"
        third = await stub.Remember(turn("t3", "We decided the report is due on the 14th of June"))
        assert third.memory_id == "t3"
        # The hot memory Redis lost came back from the store with the first call after.
        key = f"{settings.memory.hot.key_prefix}session:{session_name('chat', 's1')}"
        with redis.Redis.from_url(redis_server.url) as r:
            held = r.hlen(key)
        assert held == 3
    finally:
        await stop_server(srv, executor)
