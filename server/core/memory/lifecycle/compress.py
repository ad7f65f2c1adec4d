"""Topic compression (seed 000 §2.4): more than `compress_after_count` current warm memories on one
topic become one summary record; the originals move to cold, each with `compressed_into` naming
the summary, whose `derived_from` names them (Get follows either link).

A topic is a memory's `topic` label, or, for facts and preferences without one, a cluster of
memories whose vectors lie within `compression.cluster_cosine` of its first member. The summary and
the moves are one change: a crash leaves a topic either compressed or not. The originals leave the
warm tier, so running maintenance again compresses nothing twice; a summary is never compressed
into another with the memories that came after it unless the topic grows past the threshold again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import msgspec
import numpy as np

from server.core.clock import Clock
from server.core.deadline import Deadline
from server.core.memory.changes import Cause, Op, Put
from server.core.memory.model import Kind, Record, SourceType, Tier, Vector, units
from server.core.memory.ports import MetadataColumns, RecordStore
from server.core.memory.summarise import Passage, Summariser
from server.core.memory.write.writer import Writer, new_memory_id
from server.core.settings import CompressionSettings

Encode = Callable[[Sequence[str]], Vector]
READ_CHUNK = 4096
# The newest unlabelled facts and preferences a run clusters into topics.
CLUSTER_ROWS = 4096
_CLUSTERED = (int(Kind.FACT), int(Kind.PREFERENCE))


class Compressor:
    def __init__(
        self,
        settings: CompressionSettings,
        summariser: Summariser | None,
        columns: MetadataColumns,
        store: RecordStore,
        writer: Writer,
        clock: Clock,
        encode: Encode | None,
    ) -> None:
        self._s = settings
        self._summariser = summariser
        self._cols = columns
        self._store = store
        self._writer = writer
        self._clock = clock
        self._encode = encode

    def run(self, ns_id: int, deadline: Deadline) -> tuple[int, int]:
        """Compress the namespace's topics past the threshold; return (topics, originals)."""
        if not self._s.enabled or self._encode is None or self._summariser is None:
            return 0, 0
        topics = compressed = 0
        for group in self.groups(ns_id, deadline):
            deadline.check("the topic compression")
            got = self._compress(group, deadline)
            if got:
                topics += 1
                compressed += got
        return topics, compressed

    def groups(self, ns_id: int, deadline: Deadline) -> list[list[Record]]:
        """The namespace's topics with more than `compress_after_count` current warm memories."""
        c = self._cols
        n = len(c.ns)
        keys = np.nonzero((c.ns[:n] == ns_id) & (c.tier[:n] == int(Tier.WARM)) & ~c.obsolete[:n])[0]
        keys = keys[c.kind[keys] != int(Kind.SUMMARY)].tolist()
        by_topic: dict[str, list[Record]] = defaultdict(list)
        loose: list[Record] = []
        for start in range(0, len(keys), READ_CHUNK):
            deadline.check("reading the topics")
            for rec in self._store.get(keys[start : start + READ_CHUNK]).values():
                if rec.topic:
                    by_topic[rec.topic].append(rec)
                elif int(rec.kind) in _CLUSTERED and rec.text.strip():
                    loose.append(rec)
        limit = self._s.compress_after_count
        out = [g for g in by_topic.values() if len(g) > limit]
        out.extend(g for g in self._clusters(loose, deadline) if len(g) > limit)
        return out

    def _clusters(self, records: list[Record], deadline: Deadline) -> list[list[Record]]:
        """Greedy clusters, oldest first: a memory joins the first cluster whose first member's
        vector lies within `cluster_cosine` of its own (same kind and speaker). The newest
        `CLUSTER_ROWS` unlabelled memories are clustered (a run's cost stays bounded: each
        memory is compared with the leaders so far, one matrix-vector product)."""
        if len(records) <= self._s.compress_after_count:
            return []
        records.sort(key=lambda r: (r.created_at, r.key))
        records = records[-CLUSTER_ROWS:]
        got = self._store.get_vectors([r.key for r in records])
        records = [r for r in records if r.key in got]
        if not records:
            return []
        mat = units(np.stack([got[r.key] for r in records]))
        leads = np.empty_like(mat)  # the leaders' vectors, in order, without a copy per row
        leaders: list[int] = []
        members: dict[int, list[Record]] = {}
        for i, rec in enumerate(records):
            if i % 256 == 0:
                deadline.check("clustering the topics")
            home = None
            if leaders:
                sims = leads[: len(leaders)] @ mat[i]
                for j in np.nonzero(sims >= self._s.cluster_cosine)[0].tolist():
                    lead = records[leaders[j]]
                    if lead.kind == rec.kind and lead.speaker == rec.speaker:
                        home = leaders[j]
                        break
            if home is None:
                leads[len(leaders)] = mat[i]
                leaders.append(i)
                members[i] = [rec]
            else:
                members[home].append(rec)
        return list(members.values())

    def _compress(self, group: list[Record], deadline: Deadline) -> int:
        assert self._encode is not None and self._summariser is not None
        group.sort(key=lambda r: (r.created_at, r.key))
        cands = self._summariser.summarise(
            [Passage(r.key, r.text, r.speaker, r.created_at) for r in group],
            self._s.summary_sentences,
            "topic",
        )
        if not cands:
            return 0
        text = cands[0].text
        vector = self._encode([text])[0]
        keys = [r.key for r in group]

        def build() -> list[Op]:
            now = self._clock.now()
            live = [
                r
                for r in self._store.get(keys).values()
                if r.tier == Tier.WARM and not r.obsolete and not r.compressed_into
            ]
            if len(live) <= self._s.compress_after_count:
                return []  # changed meanwhile: the next run looks again
            summary = _summary(live, text, now)
            moved = [
                Put(
                    msgspec.structs.replace(
                        r, tier=Tier.COLD, compressed_into=summary.memory_id, updated_at=now
                    ),
                    None,
                    Cause.COMPRESS,
                )
                for r in live
            ]
            return [Put(summary, vector, Cause.COMPRESS), *moved]

        applied = self._writer.change(build, deadline, "the topic compression")
        return max(len(applied) - 1, 0)


def _summary(group: list[Record], text: str, now: float) -> Record:
    """The summary record of a topic: the latest event time, the largest importance and expiry,
    the common speaker, linked to every original."""
    expiries = [r.expires_at for r in group]
    speakers = {r.speaker for r in group}
    latest = max(r.created_at for r in group)
    return Record(
        memory_id=new_memory_id(now),
        namespace=group[0].namespace,
        kind=Kind.SUMMARY,
        text=text,
        topic=group[0].topic,
        importance=max(r.importance for r in group),
        created_at=latest,
        updated_at=now,
        refreshed_at=max(r.refreshed_at or r.created_at for r in group),
        stored_at=now,
        expires_at=None if None in expiries else max(e for e in expiries if e is not None),
        tier=Tier.WARM,
        source_type=SourceType.AGENT_INFERENCE,
        speaker=speakers.pop() if len(speakers) == 1 else "",
        derived_from=tuple(r.memory_id for r in group),
    )
