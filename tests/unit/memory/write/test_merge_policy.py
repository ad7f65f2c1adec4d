"""The near-duplicate merge policy (server/core/memory/dedup.py) through the engine: regression
tests for distinct memories that cosine alone folded together."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np

from server.core.engine import MemoryEngine
from server.core.memory.model import GateDecision, Kind, RecallQuery
from server.core.memory.write.dedup import identifiers
from server.core.settings import MemorySettings
from tests.conftest import DAY, FakeClock, unit_vec
from tests.unit.test_engine import NS, mem


def decisions(engine: MemoryEngine, texts: list[str], kind: Kind = Kind.FACT, **kw: object) -> list:
    return [r.decision for r in engine.remember([mem(t, kind, **kw) for t in texts])]


def test_identifiers_are_the_tokens_with_digits() -> None:
    assert identifiers("Ticket 77: refund E1234 at 10:00, see v2.") == {
        "77",
        "e1234",
        "10:00",
        "v2",
    }
    assert identifiers("订单ORD-48213已发货，明早10点") == {"ord-48213", "10"}
    assert identifiers("no digits here") == frozenset()


def test_texts_that_differ_in_an_identifier_or_number_are_never_merged(
    engine: MemoryEngine,
) -> None:
    pairs = [
        (
            "Ticket 77: the customer asked for a refund",
            "Ticket 78: the customer asked for a refund",
        ),
        ("The build fails with error E1234", "The build fails with error E1235"),
        ("The standup meeting is at 10:00", "The standup meeting is at 14:00"),
    ]
    for a, b in pairs:
        assert decisions(engine, [a, b]) == [GateDecision.STORED, GateDecision.STORED], (a, b)


def test_templated_tickets_are_stored_one_each(engine: MemoryEngine) -> None:
    texts = [f"Ticket {i}: customer {i} asked for an invoice copy" for i in range(200)]
    assert decisions(engine, texts, Kind.EPISODE) == [GateDecision.STORED] * 200
    assert engine.stats(NS).namespaces[0].record_count == 200


def test_a_paraphrase_with_the_same_identifiers_still_merges(engine: MemoryEngine) -> None:
    got = decisions(engine, ["Alice's badge number is 4471", "Alice's badge number is 4471."])
    assert got == [GateDecision.STORED, GateDecision.MERGED]


def test_an_episode_merges_only_with_the_same_text_in_the_same_session(
    engine: MemoryEngine,
) -> None:
    text = "We deployed the billing service to production"
    first = decisions(engine, [text], Kind.EPISODE, session_id="s1")
    again = decisions(engine, [text], Kind.EPISODE, session_id="s1")
    other_day = decisions(engine, [text], Kind.EPISODE, session_id="s2")
    reworded = decisions(engine, [text + " again"], Kind.EPISODE, session_id="s1")
    assert (first, again, other_day, reworded) == (
        [GateDecision.STORED],
        [GateDecision.MERGED],
        [GateDecision.STORED],
        [GateDecision.STORED],
    )


def test_two_speakers_saying_the_same_words_are_two_memories(engine: MemoryEngine) -> None:
    """ "Tell me more." from each side of one conversation, or the same fact stated about two
    people, must not fold into one record."""
    for kind in (Kind.EPISODE, Kind.FACT):
        text = f"Oh really? Tell me more about the {kind.name.lower()}."
        a = decisions(engine, [text], kind, session_id="s1", speaker="Priya")
        b = decisions(engine, [text], kind, session_id="s1", speaker="Jonas")
        c = decisions(engine, [text], kind, session_id="s1", speaker="Jonas")
        assert (a, b, c) == ([GateDecision.STORED], [GateDecision.STORED], [GateDecision.MERGED])


def test_the_policy_is_configurable_per_kind(engine_factory: Callable[..., MemoryEngine]) -> None:
    s = MemorySettings()
    merge = dict(s.write_policy.merge, fact="never")
    s = msgspec.structs.replace(
        s, write_policy=msgspec.structs.replace(s.write_policy, merge=merge)
    )
    engine = engine_factory(s)
    assert decisions(engine, ["The VPN host is vpn-3", "The VPN host is vpn-3"]) == [
        GateDecision.STORED,
        GateDecision.STORED,
    ]


def test_nothing_merges_on_an_empty_text(engine: MemoryEngine) -> None:
    rng = np.random.default_rng(4)
    v = unit_vec(rng)
    got = [
        r.decision for r in engine.remember([mem("", Kind.FACT, v), mem("", Kind.FACT, v.copy())])
    ]
    assert got == [GateDecision.STORED, GateDecision.STORED]


def test_a_restated_fact_does_not_merge_into_an_obsolete_unindexed_one(
    engine: MemoryEngine,
) -> None:
    engine.indexer.stop()  # the rows stay unindexed: the hot tier's candidates are the ones tried
    old = engine.remember([mem("The office wifi password is hunter2")])[0]
    engine.remember(
        [mem("The office wifi password is now correct-horse", supersedes=(old.memory_id,))]
    )
    again = engine.remember([mem("The office wifi password is hunter2")])[0]
    assert again.decision == GateDecision.STORED and again.memory_id != old.memory_id
    res = engine.recall(RecallQuery(namespace=NS, text="office wifi password hunter2", top_k=5))
    assert again.memory_id in [h.record.memory_id for h in res.hits]


def test_imported_history_is_not_expired_on_arrival(engine: MemoryEngine, clock: FakeClock) -> None:
    r = engine.remember(
        [mem("We moved the datacenter to Frankfurt", created_at=clock.now() - 400 * DAY)]
    )[0]
    assert r.expires_at is not None and r.expires_at > clock.now() + 89 * DAY
    res = engine.recall(RecallQuery(namespace=NS, text="datacenter Frankfurt"))
    assert [h.record.memory_id for h in res.hits] == [r.memory_id]


def test_sessionless_episodes_are_never_the_same_episode(engine: MemoryEngine) -> None:
    text = "We restarted the payment service"
    assert decisions(engine, [text], Kind.EPISODE) + decisions(engine, [text], Kind.EPISODE) == [
        GateDecision.STORED,
        GateDecision.STORED,
    ]


def test_a_same_session_twin_wins_over_identical_texts_elsewhere(engine: MemoryEngine) -> None:
    """Identical texts tie at cosine 1.0: the policy must try every candidate, not the first."""
    text = "Maya: How was your week?"
    for s in ("s1", "s2", "s3"):
        decisions(engine, [text], Kind.EPISODE, session_id=s)
    engine.indexer.catch_up()
    again = [decisions(engine, [text], Kind.EPISODE, session_id=s)[0] for s in ("s3", "s2", "s1")]
    assert again == [GateDecision.MERGED] * 3
    assert engine.stats(NS).namespaces[0].record_count == 3


def test_a_partial_merge_setting_keeps_the_other_kinds_defaults(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    from server.config import load_settings

    s = load_settings(None, {"POCKETD__MEMORY__WRITE_POLICY__MERGE__EPISODE": "never"})
    engine = engine_factory(s.memory)
    assert decisions(engine, ["The VPN host is vpn-3", "The VPN host is vpn-3."]) == [
        GateDecision.STORED,
        GateDecision.MERGED,
    ]
    assert decisions(engine, ["Deployed", "Deployed"], Kind.EPISODE, session_id="s") == [
        GateDecision.STORED,
        GateDecision.STORED,
    ]
