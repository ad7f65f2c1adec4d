"""A maintenance run across kill -9: a process opens an engine on a data directory holding many
topics of six memories and runs maintenance; it is killed with SIGKILL while the run compresses
them. In the record store's file, every topic is then either wholly compressed (one summary, its
six originals cold and linked to it) or untouched; the next start-up finishes the run from its
journal, and every topic is compressed exactly once.

Run as a module (`python -m tests.e2e.test_maintenance_crash DATA NOW`), this file is that
process."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.sqlite_store import SqliteRecordStore
from server.core.deadline import no_deadline
from server.core.memory.model import Kind, NewMemory, Record, Tier
from tests.conftest import MODEL_DIR, ROOT, FakeClock, open_engine, wait_for
from tests.unit.memory.lifecycle.lifecycle_kit import lifecycle_settings
from tests.unit.test_engine import NS, mem

pytestmark = pytest.mark.e2e

TOPICS = 60
PER_TOPIC = 6
NOW = 1_800_000_000.0
# What each topic's six memories say (distinct ticket numbers: six facts, not one restated).
SAYS = [
    "Ticket {code}-{n} of the {name} project was reviewed by the platform team",
    "The {name} project's invoice {code}-{n} was paid by bank transfer",
    "Build {code}-{n} of the {name} project passed its regression suite",
    "The {name} project's design review {code}-{n} approved the new schema",
    "Incident {code}-{n} in the {name} project was closed after a rollback",
    "The {name} project's release {code}-{n} shipped to the beta group",
]
NAMES = ["apollo", "borealis", "cygnus", "draco", "eridanus", "fornax", "gemini", "hydra"]


def memories(topic: int) -> list[NewMemory]:
    name, code = f"{NAMES[topic % len(NAMES)]}-{topic}", f"T{topic:03d}"
    return [
        mem(text.format(name=name, code=code, n=100 * topic + j), topic=f"project-{topic}")
        for j, text in enumerate(SAYS)
    ]


def stock(data: Path, encoder: OnnxTextEncoder) -> None:
    """TOPICS topics of six memories each, said at one moment (so none supersedes another)."""
    engine = open_engine(data, encoder, FakeClock(NOW), lifecycle_settings())
    try:
        for t in range(TOPICS):
            got = engine.remember(memories(t))
            assert [r.decision.name for r in got] == ["STORED"] * PER_TOPIC
    finally:
        engine.close()


def summaries_on_disk(data: Path) -> int:
    db = sqlite3.connect(data / "records.sqlite3", timeout=30)
    try:
        row = db.execute(
            "SELECT COUNT(*) FROM records WHERE kind=? AND deleted=0", (int(Kind.SUMMARY),)
        ).fetchone()
    finally:
        db.close()
    return int(row[0])


def topics_on_disk(data: Path) -> dict[str, tuple[list[Record], list[Record]]]:
    """Each topic's (originals, summaries), read from the record store's file (which recovers
    the committed transactions from its WAL, as the next start-up will)."""
    store = SqliteRecordStore(data / "records.sqlite3")
    try:
        out: dict[str, tuple[list[Record], list[Record]]] = defaultdict(lambda: ([], []))
        for r in store.scan_live():
            out[r.topic][1 if r.kind == Kind.SUMMARY else 0].append(r)
    finally:
        store.close()
    return dict(out)


def compressed(originals: list[Record], summaries: list[Record]) -> bool:
    """Whether the topic is wholly compressed; an assertion error if it is half-way."""
    assert len(originals) == PER_TOPIC
    if not summaries and {(r.tier, r.compressed_into) for r in originals} == {(Tier.WARM, "")}:
        return False
    assert len(summaries) == 1, [s.memory_id for s in summaries]
    summary = summaries[0]
    assert summary.tier == Tier.WARM
    assert sorted(summary.derived_from) == sorted(r.memory_id for r in originals)
    assert {(r.tier, r.compressed_into) for r in originals} == {(Tier.COLD, summary.memory_id)}
    return True


def killed_mid_run(data: Path) -> int:
    """Run maintenance over `data` in a process killed once a few topics are compressed (the
    run under way, most of it ahead); return how many topics the file holds compressed."""
    log = data.parent / f"{data.name}.log"  # a file, not a pipe: nothing the child writes blocks it
    with open(log, "wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.test_maintenance_crash", str(data), str(NOW)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    journal = data / "maintenance.journal"
    try:
        wait_for(
            lambda: child.poll() is not None or (journal.exists() and summaries_on_disk(data) >= 3),
            timeout=300,
        )
        child.send_signal(signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(60)
    if child.returncode == 0:  # the whole run ended before the kill: try again
        return TOPICS
    assert child.returncode == -signal.SIGKILL, log.read_text(errors="replace")  # no failure
    assert journal.exists(), "killed outside a run"
    topics = topics_on_disk(data)
    assert len(topics) == TOPICS
    return sum(compressed(*topics[f"project-{t}"]) for t in range(TOPICS))


def test_kill_9_during_maintenance_leaves_each_topic_whole_and_start_up_finishes_the_run(
    tmp_path: Path, encoder: OnnxTextEncoder
) -> None:
    for attempt in range(3):
        data = tmp_path / f"data{attempt}"
        stock(data, encoder)
        done = killed_mid_run(data)
        if done < TOPICS:
            break  # the kill caught the run half-way: what this test is for
    assert 0 < done < TOPICS, "every kill came after the run's end: nothing tested"

    # The next start-up finishes the run it finds in the journal.
    engine = open_engine(data, encoder, FakeClock(NOW), lifecycle_settings())
    try:
        assert not (data / "maintenance.journal").exists()
        report = engine.maintain(NS, no_deadline())
        assert report.resumed == 1 and report.topics_compressed == 0
    finally:
        engine.close()
    topics = topics_on_disk(data)
    assert all(compressed(*topics[f"project-{t}"]) for t in range(TOPICS))


def main(data: Path, now: float) -> None:
    """The process the test kills: open the engine and run maintenance over every namespace."""
    encoder = OnnxTextEncoder(MODEL_DIR, threads=1, batch_size=32, max_tokens=256)
    engine = open_engine(data, encoder, FakeClock(now), lifecycle_settings())
    engine.maintain("", no_deadline())
    engine.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), float(sys.argv[2]))
