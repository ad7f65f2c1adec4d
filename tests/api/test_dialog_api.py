"""Dialog memory over gRPC: event time apart from the stored time, speakers, turns, List, the
neighbouring turns of a hit, as-of recall and time cues, pockets in Stats and plans."""

from __future__ import annotations

import datetime as dt

import grpc

from pocketd import AsyncClient, MemoryInput
from pocketd.v1 import memory_service_pb2 as spb
from tests.api.test_memory_api import expect, record, stub, violations
from tests.conftest import DAY, RunningServer

NS = "dlg"
T0 = dt.datetime(2025, 3, 3, 9, tzinfo=dt.UTC).timestamp()  # a Monday, last year


def conversation(session: str, start: float) -> list[MemoryInput]:
    lines = [
        ("user", "Where did you go hiking last weekend?"),
        ("Priya", "We hiked the Lysefjord trail near Stavanger."),
        ("user", "How long did it take?"),
        ("Priya", "About six hours there and back."),
    ]
    return [
        MemoryInput(
            NS, text, kind="episode", session_id=session, speaker=who, occurred_at=start + i
        )
        for i, (who, text) in enumerate(lines)
    ]


async def test_imported_turns_keep_their_time_speaker_and_order(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        res = await c.remember_batch(conversation("s1", T0))
        assert all(r.decision == "stored" for r in res)
        got = await c.get(NS, res[1].memory_id)
        assert got.speaker == "Priya" and got.turn == 1 and got.session_id == "s1"
        assert got.occurred_at is not None and got.occurred_at.timestamp() == T0 + 1
        assert got.created_at is not None and got.created_at.timestamp() > T0 + 300 * DAY
        assert got.tier == "warm"  # last year's turn is not hot session memory
        # The next batch of the session continues its positions.
        more = await c.remember_batch(
            [
                MemoryInput(
                    NS, "Would you go again?", kind="episode", session_id="s1", speaker="user"
                )
            ]
        )
        assert (await c.get(NS, more[0].memory_id)).turn == 4


async def test_list_pages_a_session_in_turn_order(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        await c.remember_batch(conversation("s1", T0))
        await c.remember_batch(conversation("s2", T0 + 7 * DAY))
        first = await c.list(NS, page_size=3, session_id="s1")
        assert [m.turn for m in first.memories] == [0, 1, 2] and first.next_page_token
        rest = await c.list(NS, page_size=3, page_token=first.next_page_token, session_id="s1")
        assert [m.turn for m in rest.memories] == [3] and rest.next_page_token == ""
        window = await c.list(NS, created_after=T0 + 6 * DAY)
        assert {m.session_id for m in window.memories} == {"s2"}
        everything = await c.list(NS, page_size=1000)
        assert len(everything.memories) == 8
        times = [m.occurred_at for m in everything.memories]
        assert times == sorted(times)  # type: ignore[type-var]


async def test_list_refuses_a_bad_page_token_and_size(server: RunningServer) -> None:
    s = stub(server)
    err = await expect(
        s.List(spb.ListRequest(namespace=NS, page_token="not-a-token!", page_size=0)),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert set(violations(err)) == {"page_token", "page_size"}


async def test_a_hit_comes_with_its_neighbouring_turns(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        await c.remember_batch(conversation("s1", T0))
        res = await c.recall(NS, "six hours there and back", top_k=1, context_turns=1)
        (hit,) = res.hits
        assert hit.memory.text.startswith("About six hours")
        assert [m.text for m in hit.context] == ["How long did it take?"]
        res = await c.recall(NS, "Lysefjord trail", top_k=1, context_turns=8)
        assert [m.turn for m in res.hits[0].context] == [0, 2, 3]


async def test_the_speaker_is_searchable(server: RunningServer) -> None:
    """The same words from two speakers: the question naming one finds that one's first."""
    async with AsyncClient(server.target) as c:
        for who in ("Priya", "Jonas"):
            await c.remember(
                NS, "I ran the half marathon in Osaka", kind="episode", speaker=who, session_id="s"
            )
        server.engine.indexer.catch_up()
        for who in ("Priya", "Jonas"):
            res = await c.recall(NS, f"how did {who} run the half marathon", top_k=2)
            assert res.hits[0].memory.speaker == who


async def test_a_time_cue_is_read_against_as_of(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        await c.remember_batch(conversation("s1", T0))
        await c.remember_batch(conversation("s2", T0 + 21 * DAY))
        q = "the hiking trail"
        last_week = await c.recall(NS, f"{q} last week", as_of=T0 + 7 * DAY, top_k=1)
        assert last_week.hits[0].memory.session_id == "s1"
        later = await c.recall(NS, f"{q} last week", as_of=T0 + 28 * DAY, top_k=1)
        assert later.hits[0].memory.session_id == "s2"


async def test_bad_dialog_fields_are_named(server: RunningServer) -> None:
    s = stub(server)
    err = await expect(
        s.Remember(spb.RememberRequest(record=record(turn=3, speaker="a\tb"))),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert set(violations(err)) == {"record.turn", "record.speaker"}
    err = await expect(
        s.Recall(spb.RecallRequest(namespace=NS, query_text="x", context_turns=9)),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert set(violations(err)) == {"context_turns"}
    err = await expect(
        s.Recall(
            spb.RecallRequest(
                namespace=NS, query_text="x", plan=[spb.PlanStep(pocket="../etc", depth=5)]
            )
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert set(violations(err)) == {"plan[0].pocket"}


async def test_stats_lists_pockets_and_recall_reports_its_plan(server: RunningServer) -> None:
    async with AsyncClient(server.target) as c:
        await c.remember_batch(conversation("s1", T0))
        await c.remember(NS, "Priya is allergic to peanuts", kind="fact")
        st = await c.stats(NS)
        pockets = st.namespaces[0].pockets
        assert pockets == {"episode/warm/text/2025-W10": 4, "fact/warm/text": 1}
        res = await c.recall(NS, "peanuts", plan=[("fact/warm/text", 10)])
        assert [h.pocket for h in res.hits] == ["fact/warm/text"]
        assert [p.pocket for p in res.plan] == ["fact/warm/text"] and res.cost_units > 0
