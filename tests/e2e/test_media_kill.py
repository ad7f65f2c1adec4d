"""The media queue across kill -9 (issue 30: "the processing queue surviving kill -9 with work
pending"), against real `pocketd serve` processes.

Rendered screenshots, each showing its own error code, are sent as bytes alone (no caption, no
wait): each is acknowledged PROCESSING once its blob and its job are durable. The server is
killed with SIGKILL once it has read some of them and while its queue still holds several: OCR
reads about one screenshot a second, so after the first is read, screenshots are sent until
Stats says several wait (the kill cannot come after the queue drained); the media ledger on
disk is then read to prove that jobs were left pending. One of the waiting screenshots is
forgotten before the kill.

After a restart on the same data directory, the pending jobs resume (the start-up log says how
many) and every acknowledged screenshot becomes READY: each is found by a text Recall of its
code, none is lost, none is stored twice, and the blob files on disk are exactly those of the
records. The forgotten one stays forgotten, its blob gone.
"""

from __future__ import annotations

import hashlib
import re
import signal
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from pocketd import Client
from server.adapters.media_ledger import SqliteMediaLedger
from tests.conftest import wait_for
from tests.e2e.conftest import Proc, spawn
from tests.media_fixtures import blob_files
from tests.media_samples import render_screenshot

pytestmark = pytest.mark.e2e

NS = "shots"
SESSION = "support-chat"
FIRST = 8  # screenshots sent before Stats is first read
MOST = 40  # more are sent until enough wait; never more than this
WAITING = 4  # screenshots waiting in the queue (besides the one being read) at the Forget
READ_DEADLINE = 300.0  # for the restarted server to read them all, on a loaded machine
RESUMED_RE = re.compile(r"media: (\d+) jobs resumed")


@dataclass(frozen=True)
class Shot:
    """A screenshot sent: its error code, its bytes, and the id it was acknowledged under."""

    code: str
    png: bytes
    memory_id: str = ""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.png).hexdigest()


def screenshot(i: int) -> Shot:
    """An error dialog with a code of its own (E4012, E4109, …), drawn with the i-th seed."""
    code = f"E{4012 + 97 * i}"
    lines = ["Payment failed", f"Error code: {code}", "Please contact support"]
    return Shot(code, render_screenshot(lines, width=400, seed=100 + i))


def send(c: Client, shot: Shot) -> Shot:
    """Remember a screenshot without waiting: acknowledged, PROCESSING."""
    r = c.remember_image(NS, shot.png, session_id=SESSION)
    assert r.stored and r.processing_state == "processing", r
    assert r.memory_id
    return Shot(shot.code, shot.png, r.memory_id)


def fill_queue(c: Client) -> list[Shot]:
    """Send FIRST screenshots, wait until the server has read one (so that the kill finds some
    stored and some pending), then send one at a time until the queue holds at least
    WAITING + 1 (one of them being read)."""
    sent = [send(c, screenshot(i)) for i in range(FIRST)]
    wait_for(lambda: c.stats().media.processed >= 1, READ_DEADLINE)
    while c.stats().media.pending <= WAITING:
        assert len(sent) < MOST, "the queue drained as fast as screenshots were sent"
        sent.append(send(c, screenshot(len(sent))))
    return sent


def forget_one_waiting(c: Client, sent: list[Shot]) -> Shot:
    """Forget the last screenshot sent (several wait ahead of it): it is PROCESSING when
    forgotten, and its blob leaves the disk at once."""
    last = sent[-1]
    assert c.get(NS, last.memory_id).processing_state == "processing"
    assert c.forget(NS, last.memory_id) == 1
    return last


def kill_9(p: Proc) -> None:
    p.p.send_signal(signal.SIGKILL)
    assert p.p.wait(60) == -signal.SIGKILL
    p.close()


def pending_jobs(data: Path) -> list[str]:
    """The memory_ids of the jobs the media ledger on disk holds pending (not failed)."""
    ledger = SqliteMediaLedger(data / "media.sqlite")
    try:
        return [j.memory_id for j in ledger.jobs() if not j.failed]
    finally:
        ledger.close()


def resumed_of(p: Proc) -> int:
    """How many jobs the start-up log says resumed."""
    for line in p.log:
        if m := RESUMED_RE.search(line):
            return int(m.group(1))
    raise AssertionError("no 'jobs resumed' line in the start-up log:\n" + "".join(p.log))


def all_read(c: Client) -> bool:
    """The queue is empty and the indexes have every record."""
    st = c.stats()
    return st.media.pending == 0 and st.index.pending == 0 and not st.index.catching_up


def is_gone(c: Client, memory_id: str) -> bool:
    try:
        c.get(NS, memory_id)
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.NOT_FOUND, err.details()
        return True
    return False


def listed(c: Client) -> list[str]:
    """Every memory_id List returns in the namespace, page by page (duplicates kept)."""
    out: list[str] = []
    token = ""
    while True:
        page = c.list(NS, page_size=50, page_token=token)
        out.extend(m.memory_id for m in page.memories)
        token = page.next_page_token
        if not token:
            return out


def test_kill_9_with_media_pending_loses_none_and_stores_none_twice(
    tmp_path: Path, procs: list[Proc]
) -> None:
    data = tmp_path / "data"
    p = spawn(procs, data)
    with Client(p.target, timeout=60) as c:
        sent = fill_queue(c)
        read = [s for s in sent if c.get(NS, s.memory_id).processing_state == "ready"]
        assert read, "Stats counted a screenshot read, yet none is READY"
        forgotten = forget_one_waiting(c, sent)
        kept = [s for s in sent if s.memory_id != forgotten.memory_id]
        assert forgotten.sha256 not in blob_files(data)
        waiting = c.stats().media.pending
    assert waiting >= 2, f"only {waiting} screenshots waited at the kill"
    kill_9(p)

    # The ledger on disk: work was pending at the kill, all of it acknowledged, none forgotten.
    left = pending_jobs(data)
    assert left, "the kill came after the queue drained: nothing was tested"
    assert set(left) <= {s.memory_id for s in kept}
    assert len(left) == len(set(left))
    on_disk = blob_files(data)
    assert {s.sha256 for s in kept if s.memory_id in left} <= on_disk
    assert forgotten.sha256 not in on_disk

    p = spawn(procs, data)
    assert resumed_of(p) == len(left)
    with Client(p.target, timeout=60) as c:
        wait_for(lambda: all_read(c), READ_DEADLINE)
        for s in kept:
            m = c.get(NS, s.memory_id)
            assert m.processing_state == "ready", (s.code, m.processing_state, m.processing_note)
            assert m.modality == "image" and s.code in m.text, (s.code, m.text)
            assert m.blob is not None and m.blob.sha256 == s.sha256

        # Each found by its code, once; the forgotten one by nothing.
        for s in kept:
            hits = [h.memory.memory_id for h in c.recall(NS, s.code, top_k=5).hits]
            assert hits and hits[0] == s.memory_id, (s.code, hits)
            assert len(hits) == len(set(hits))
        hits = [h.memory.memory_id for h in c.recall(NS, forgotten.code, top_k=5).hits]
        assert forgotten.memory_id not in hits
        assert is_gone(c, forgotten.memory_id)

        # No record lost or stored twice; the blobs on disk are the records' and no others.
        ids = listed(c)
        assert sorted(ids) == sorted(s.memory_id for s in kept)
        [ns] = [n for n in c.stats(NS).namespaces if n.namespace == NS]
        assert ns.record_count == len(kept)
        stats = c.stats()
        assert stats.media.failed == 0 and stats.media.blobs == len(kept)
    assert blob_files(data) == {s.sha256 for s in kept}
