"""One namespace of `python -m bench media` on a real server, through the Python client.
`Namespace` writes the distractors (one RememberBatch of facts), then the items one Remember
each, as an agent sends what a user shares: a screenshot or a voice note as bytes with no caption
and no text (`remember_image`, `remember_audio`), or, in the oracle's namespace, the item's true
text as an observation of its modality (no blob). It remembers which item each memory holds, the
order they were sent and how long each acknowledgement took; `read_back` reads what the server
made of each item (Get: its processing state and text, the OCR text or the transcript when there
is no caption); `rank` asks each item's question (a text-only Recall of the top 5, `min_score`
0).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import grpc

from bench.media_data import Doc, Item
from bench.media_score import DEPTH, Rankings
from pocketd import Client, MemoryInput

SEARCHABLE_TIMEOUT_S = 1800.0  # 80 screenshots at 3 s each on a loaded machine, with room


def log(msg: str) -> None:
    print(f"[media] {msg}", file=sys.stderr, flush=True)


@dataclass
class ReadBack:
    """What the server made of an item: its state ("ready", "failed", "gone": no such memory)
    and its text."""

    state: str
    text: str
    note: str = ""


@dataclass
class Namespace:
    client: Client
    name: str
    owner: dict[str, str] = field(default_factory=dict)  # memory id → item or distractor id
    order: list[str] = field(default_factory=list)  # the items, in the order they were sent
    ack_s: list[float] = field(default_factory=list)  # each item's Remember, as the client saw it
    decisions: Counter[str] = field(default_factory=Counter)

    def add_texts(self, docs: Sequence[Doc], kind: str) -> None:
        """`docs` in one RememberBatch, each a memory of `kind`."""
        items = [MemoryInput(self.name, d.text, kind=kind) for d in docs]
        for d, r in zip(docs, self.client.remember_batch(items), strict=True):
            self.decisions[f"{kind} {r.decision}"] += 1
            if r.stored:
                self.owner[r.memory_id] = d.id

    def add_truths(self, items: Sequence[Item]) -> None:
        """The oracle's writes: each item's true text as an observation of its modality (what a
        perfect reading would store: the same passages), one Remember each."""
        for it in items:
            r = self.client.remember(self.name, it.truth, kind="observation", modality=it.modality)
            self.decisions[f"truth {r.decision}"] += 1
            self.order.append(it.id)
            if r.stored:
                self.owner[r.memory_id] = it.id

    def add_media(
        self, items: Sequence[Item], data: Mapping[str, bytes], language: Callable[[Item], str]
    ) -> None:
        """Each item's bytes, one Remember each, no caption; a recording decoded as
        `language(item)` ("": the server's default)."""
        for it in items:
            t0 = time.perf_counter()
            if it.modality == "image":
                r = self.client.remember_image(self.name, data[it.id])
            else:
                r = self.client.remember_audio(self.name, data[it.id], language=language(it))
            self.ack_s.append(time.perf_counter() - t0)
            self.decisions[f"{it.modality} {r.decision} {r.processing_state}"] += 1
            self.order.append(it.id)
            self.owner[r.memory_id] = it.id

    def read_back(self) -> dict[str, ReadBack]:
        """Every item's memory as the server holds it now (its text: the OCR text or the
        transcript, as no caption was sent)."""
        out: dict[str, ReadBack] = {}
        for mid, item in self.owner.items():
            if item not in self.order:
                continue
            try:
                m = self.client.get(self.name, mid)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                out[item] = ReadBack("gone", "")
                continue
            out[item] = ReadBack(m.processing_state, m.text, m.processing_note)
        return out

    def rank(self, items: Sequence[Item]) -> Rankings:
        """Each item's question as a text-only Recall of the top 5 (`min_score` 0): the ids of
        what the hits hold (a group's hit by any of its members), "?" for a memory of none."""
        out: Rankings = {}
        for it in items:
            hits = self.client.recall(self.name, it.question, top_k=DEPTH, min_score=0.0).hits
            out[it.id] = [self.held(h.memory.memory_id, h.group_member_ids) for h in hits]
        return out

    def held(self, memory_id: str, members: Sequence[str] = ()) -> str:
        for mid in (memory_id, *members):
            if mid in self.owner:
                return self.owner[mid]
        return "?"


def wait_searchable(client: Client, timeout: float = SEARCHABLE_TIMEOUT_S) -> float:
    """Wait until the media queue is empty and the indexes have caught up (an image's vector in
    its space is searchable only then); the seconds waited. TimeoutError past `timeout`."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        s = client.stats()
        if s.media.pending == 0 and s.index.pending == 0:
            return time.perf_counter() - t0
        time.sleep(0.1)
    raise TimeoutError(f"media still pending after {timeout:.0f} s: {client.stats().media}")
