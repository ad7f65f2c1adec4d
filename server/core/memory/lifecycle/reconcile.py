"""Reconciliation against authoritative facts (seed 000 §4.3), and undoing a supersession.

An authoritative fact (an official document's statement, say) is weighed against the current
memories that a Recall of it finds: one on the same topic (the same `topic` label, or no label and
vectors that lie close) that states another value of the same thing (`SupersedePolicy.contradicts`)
is contradicted. Applying stores each fact and marks what it contradicts obsolete, superseded by
it with reason "reconcile", in one write; a dry run only returns the decisions. Every decision is
logged, and `unsupersede` undoes any supersession.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from server.core.clock import Clock
from server.core.deadline import Deadline
from server.core.errors import Location, NotFoundError
from server.core.memory.changes import Cause, Op, Put
from server.core.memory.model import NewMemory, Record
from server.core.memory.ports import RecordStore
from server.core.memory.write.supersede import SupersedePolicy
from server.core.memory.write.writer import Writer

log = logging.getLogger(__name__)
# The importance an authoritative fact is stored with when the caller gives none.
AUTHORITATIVE_IMPORTANCE = 5


@dataclass(frozen=True)
class Decision:
    """What reconciliation decided about one current memory."""

    memory_id: str
    text: str
    fact_index: int
    supersede: bool
    reason: str


@dataclass(frozen=True)
class ReconcileResult:
    fact_ids: list[str]
    decisions: list[Decision]
    applied: bool


class Reconciler:
    def __init__(
        self, policy: SupersedePolicy, store: RecordStore, writer: Writer, clock: Clock
    ) -> None:
        self._policy = policy
        self._store = store
        self._writer = writer
        self._clock = clock

    def decide(
        self, facts: Sequence[NewMemory], candidates: Sequence[Sequence[tuple[Record, float]]]
    ) -> list[Decision]:
        """Per fact, its decision about each candidate (a current memory and its cosine to the
        fact). A memory contradicted by two facts is decided once, by the first."""
        out: list[Decision] = []
        seen: set[str] = set()
        for i, (fact, cands) in enumerate(zip(facts, candidates, strict=True)):
            for rec, cosine in cands:
                if rec.memory_id in seen or rec.obsolete:
                    continue
                v = self._policy.contradicts(fact.record, rec, cosine)
                if v.supersede:
                    seen.add(rec.memory_id)
                why = f"{v.code}: {v.detail}" if v.code else v.detail
                out.append(Decision(rec.memory_id, rec.text, i, v.supersede, why))
        for d in out:
            log.info(
                "reconcile: fact %d %s %s (%s)",
                d.fact_index,
                "supersedes" if d.supersede else "keeps",
                d.memory_id,
                d.reason,
            )
        return out

    def apply(
        self, facts: Sequence[NewMemory], decisions: Sequence[Decision], deadline: Deadline
    ) -> list[str]:
        """Store the facts, each superseding what it contradicts (reason "reconcile"), in one
        write; return their ids."""
        items = [
            msgspec.structs.replace(
                fact,
                supersedes=tuple(
                    d.memory_id for d in decisions if d.supersede and d.fact_index == i
                ),
                supersede_reason="reconcile",
                # What it supersedes is what the decisions (a dry run's too) say, nothing more.
                auto_supersede=False,
                # An authoritative fact is kept: the gate must not drop what marks others.
                explicit_importance=fact.explicit_importance or AUTHORITATIVE_IMPORTANCE,
            )
            for i, fact in enumerate(facts)
        ]
        return [r.memory_id for r in self._writer.write(items, deadline)]

    def unsupersede(
        self, namespace: str, memory_ids: Sequence[str], deadline: Deadline
    ) -> list[str]:
        """Make the named memories current again; return the ids that were obsolete. An unknown
        id is NOT_FOUND naming `memory_ids[i]`, before anything changes."""
        keys: list[int] = []
        for i, mid in enumerate(memory_ids):
            key = self._store.key_of(namespace, mid)
            if key is None:
                raise NotFoundError("memory", mid, where=Location("memory_ids", index=i))
            keys.append(key)
        restored: list[str] = []

        def build() -> list[Op]:
            now = self._clock.now()
            ops: list[Op] = []
            for rec in self._store.get(sorted(set(keys))).values():
                if rec.obsolete:
                    log.info(
                        "unsupersede: %s (was %s by %s)",
                        rec.memory_id,
                        rec.supersede_reason or "superseded",
                        rec.superseded_by,
                    )
                    restored.append(rec.memory_id)
                    current = msgspec.structs.replace(
                        rec, obsolete=False, superseded_by="", supersede_reason="", updated_at=now
                    )
                    ops.append(Put(current, None, Cause.UNSUPERSEDE))
            return ops

        self._writer.change(build, deadline, "the unsupersede")
        order = {mid: i for i, mid in enumerate(memory_ids)}
        return sorted(restored, key=lambda m: order.get(m, 0))
