"""Topic compression (server/core/memory/lifecycle/compress.py): more than five current warm
memories on one topic (a `topic` label, or a cluster of close vectors) become one summary, linked
both ways with its originals, which move to cold; five stay as they are; a second run compresses
nothing twice; Recall finds the summary, and the originals only with include_cold."""

from __future__ import annotations

from collections.abc import Callable

from server.core.engine import MemoryEngine
from server.core.memory.model import Kind, Record, Tier
from tests.conftest import FakeClock
from tests.unit.memory.lifecycle.lifecycle_kit import (
    DAY,
    lifecycle_settings,
    maintain,
    recalled,
    records,
)
from tests.unit.test_engine import NS, mem

BILLING = [
    "Invoices are sent on the first business day of each month",
    "The billing contact at the customer is Dana Whitfield",
    "Payments are accepted by bank transfer only",
    "Late fees start thirty days after the invoice date",
    "The customer's purchase order must be quoted on every invoice",
    "Refund requests go through the finance mailbox",
]
TRAVEL = [
    "Train tickets are booked through the travel desk",
    "Hotel nights in Berlin are capped by the travel policy",
    "Flights longer than six hours may be booked in premium economy",
    "Taxi receipts must be scanned within a week",
    "Rental cars need the manager's approval",
]
BUILDS = [
    f"Nightly build {n} of the payments service passed the regression suite"
    for n in range(101, 107)
]
TICKETS = [f"Ticket OPS-{n} about the staging database disk was closed" for n in range(11, 16)]


def write(
    engine: MemoryEngine, texts: list[str], topic: str = "", namespace: str = NS
) -> list[str]:
    """Store `texts` as facts at one moment (said together, so none supersedes another)."""
    got = engine.remember([mem(t, topic=topic, namespace=namespace) for t in texts])
    assert all(r.decision.name == "STORED" for r in got), [r.reason for r in got]
    return [r.memory_id for r in got]


def summaries(engine: MemoryEngine) -> list[Record]:
    return [r for r in records(engine).values() if r.kind == Kind.SUMMARY]


def assert_compressed(engine: MemoryEngine, originals: list[str], topic: str) -> Record:
    """The originals cold, each naming one warm summary of the topic that names them all."""
    recs = records(engine)
    into = {recs[m].compressed_into for m in originals}
    assert len(into) == 1 and "" not in into, into
    summary = recs[into.pop()]
    assert summary.kind == Kind.SUMMARY and summary.tier == Tier.WARM
    assert summary.topic == topic and summary.text.strip()
    assert sorted(summary.derived_from) == sorted(originals)
    assert {recs[m].tier for m in originals} == {Tier.COLD}
    # Extractive: the summary says what the originals said, in their words.
    assert any(recs[m].text in summary.text for m in originals)
    return summary


def assert_untouched(engine: MemoryEngine, ids: list[str]) -> None:
    recs = records(engine)
    assert {(recs[m].tier, recs[m].compressed_into) for m in ids} == {(Tier.WARM, "")}


def test_six_memories_on_a_topic_become_one_summary_and_five_do_not(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    engine = engine_factory(lifecycle_settings())
    billing = write(engine, BILLING, "billing")
    travel = write(engine, TRAVEL, "travel")
    engine.indexer.catch_up()
    report = maintain(engine)
    assert (report.topics_compressed, report.compressed_records) == (1, 6)
    summary = assert_compressed(engine, billing, "billing")
    assert_untouched(engine, travel)
    assert [s.memory_id for s in summaries(engine)] == [summary.memory_id]

    # Get follows the links both ways.
    first = engine.get(summary.namespace, billing[0], False)[0]
    assert engine.get(first.namespace, first.compressed_into, False)[0].derived_from
    # Idempotent: the originals left the warm tier, the summary is not a member of its topic.
    again = maintain(engine)
    assert (again.topics_compressed, again.compressed_records, again.moved_to_cold) == (0, 0, 0)
    assert [s.memory_id for s in summaries(engine)] == [summary.memory_id]
    assert_compressed(engine, billing, "billing")

    # Recall: the summary stands for the topic; the originals come back with include_cold.
    question = "When are invoices sent?"
    assert summary.memory_id in recalled(engine, question)
    assert not set(billing) & set(recalled(engine, question))
    assert billing[0] in recalled(engine, question, include_cold=True)


def test_the_sixth_memory_of_a_topic_tips_it_over(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory(lifecycle_settings())
    five = write(engine, BILLING[:5], "billing")
    clock.advance(3 * DAY)
    assert maintain(engine).topics_compressed == 0
    assert_untouched(engine, five)
    clock.advance(3 * DAY)
    six = five + write(engine, BILLING[5:], "billing")
    assert maintain(engine).compressed_records == 6
    first = assert_compressed(engine, six, "billing")

    # The topic grows again: the new memories become a second summary; the first summary is
    # not compressed into it.
    clock.advance(3 * DAY)
    later = write(engine, [f"{t} (restated for the 2028 contract)" for t in BILLING], "billing")
    report = maintain(engine)
    assert (report.topics_compressed, report.compressed_records) == (1, 6)
    second = assert_compressed(engine, later, "billing")
    assert records(engine)[first.memory_id].tier == Tier.WARM
    assert {s.memory_id for s in summaries(engine)} == {first.memory_id, second.memory_id}


def test_a_cluster_of_close_vectors_without_a_topic_is_compressed(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """No labels: six near-identical facts lie above `cluster_cosine` of the first (the built-in
    encoder puts these at 0.87 to 0.93), five others form a cluster too small to compress."""
    engine = engine_factory(lifecycle_settings())
    builds = write(engine, BUILDS)
    tickets = write(engine, TICKETS)
    engine.indexer.catch_up()
    report = maintain(engine)
    assert (report.topics_compressed, report.compressed_records) == (1, 6)
    assert_compressed(engine, builds, "")
    assert_untouched(engine, tickets)
    assert maintain(engine).topics_compressed == 0


def test_compression_off_compresses_nothing(engine_factory: Callable[..., MemoryEngine]) -> None:
    engine = engine_factory(lifecycle_settings(compression={"enabled": False}))
    billing = write(engine, BILLING, "billing")
    builds = write(engine, BUILDS)
    assert maintain(engine).topics_compressed == 0
    assert_untouched(engine, billing + builds)
    assert summaries(engine) == []
