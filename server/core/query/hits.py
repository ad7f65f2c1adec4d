"""The ranked hits of a Recall: the relevance floor, decay, a slot's values in order (newer first;
an obsolete memory below its successor, and without `include_obsolete` not at all), then each
hit's record, score breakdown, pocket and neighbouring turns."""

from __future__ import annotations

import msgspec
import numpy as np

from kernels.rank import rank_final
from server.core.media.items import sibling_id
from server.core.memory.model import TEXT_SPACE, Hit, MemoryFilter, Record, Score
from server.core.query.run import KeyArray, Reader, Run, Sources
from server.core.query.scoring import Scorer
from server.core.query.succession import Succession

# Extra candidates ranked so that a group's members, returned once, leave no place empty.
GROUP_SLACK = 16


class Hits(Reader):
    def __init__(self, src: Sources, scorer: Scorer, succession: Succession) -> None:
        super().__init__(src)
        self._scorer = scorer
        self._succession = succession

    def rank(self, run: Run, top_k: int) -> list[Hit]:
        q, vec = run.q, run.vec
        sc = self._scorer.score(run)
        keys, cos, b, vh, kh, fused = sc.keys, sc.cos, sc.b, sc.vh, sc.kh, sc.fused
        if run.hidden_obsolete:  # each passes its match to its heir, then leaves
            fused = self._succession.inherit(run, keys, fused)
            kept = ~self._cols.obsolete[keys]
            if not kept.all():
                keys, fused, cos = keys[kept], fused[kept], cos[kept]
                b, vh, kh = b[kept], vh[kept], kh[kept]
        if len(keys) == 0:
            return []
        c = self._cols
        relevant = fused >= self._scorer.floor(q)
        if not relevant.all():
            keys, fused, cos = keys[relevant], fused[relevant], cos[relevant]
            b, vh, kh = b[relevant], vh[relevant], kh[relevant]
            if len(keys) == 0:
                return []
        decay = self._scorer.decay(run, keys)
        # The slot rules adjust the decayed score; rank_final then multiplies by a decay of 1.
        adjusted = self._succession.adjust(run, keys, (fused * decay).astype(np.float32), top_k)
        # An obsolete memory was placed below its successor: it ranks by its adjusted score.
        stale = np.zeros(len(keys), np.bool_) if q.include_obsolete else c.obsolete[keys]
        # A group (an image, its OCR text, its caption) is returned once: rank a few more to
        # fill the places its other members leave.
        wanted = top_k + min(top_k, GROUP_SLACK)
        order, final = rank_final(adjusted, np.ones(len(keys), np.float32), stale, wanted)
        chosen = [int(keys[i]) for i in order]
        records = self._store.get(chosen)
        # Only the returned hits' neighbours and vectors are read (a group's other members
        # and the slack below the top k are not returned).
        chosen = self._returned(chosen, records, top_k)
        context = {k: self._context(run, k) for k in chosen}
        around = sorted({int(n) for b, a in context.values() for n in (*b, *a)} - set(records))
        records.update(self._store.get(around))
        vectors = self._store.get_vectors(chosen) if q.include_vectors else {}
        cat = c.catalog
        hits: list[Hit] = []
        groups: dict[str, list[str]] = {}  # group id → its members after the hit, best first
        for i in order.tolist():
            key = int(keys[i])
            rec = records.get(key)
            if rec is None:  # forgotten between ranking and reading
                continue
            if rec.group_id:
                if rec.group_id in groups:
                    groups[rec.group_id].append(rec.memory_id)
                    continue
                groups[rec.group_id] = []
            if len(hits) == top_k:
                continue
            hits.append(
                Hit(
                    record=rec,
                    score=Score(
                        vector=max(float(cos[i]), 0.0) if key in vec else 0.0,
                        bm25=float(b[i]),
                        fused=float(fused[i]),
                        decay=float(decay[i]),
                        final=float(final[i]),
                        vector_hit=bool(vh[i]),
                        keyword_hit=bool(kh[i]),
                        exact_hit=key in run.exact,
                        space=run.space.get(key, TEXT_SPACE) if key in vec else "",
                    ),
                    vector=vectors.get(key),
                    pocket=cat.key(int(c.pocket[key])).name,
                    context=[
                        records[int(n)]
                        for n in (*context[key][0], *context[key][1])
                        if int(n) in records
                    ],
                )
            )
        return [self._with_group(h, groups) for h in hits]

    @staticmethod
    def _returned(chosen: list[int], records: dict[int, Record], top_k: int) -> list[int]:
        """The keys that will be hits: the first of each group, up to `top_k`."""
        seen: set[str] = set()
        out: list[int] = []
        for k in chosen:
            rec = records.get(k)
            if rec is None:
                continue
            if rec.group_id:
                if rec.group_id in seen:
                    continue
                seen.add(rec.group_id)
            out.append(k)
            if len(out) == top_k:
                break
        return out

    def _with_group(self, hit: Hit, groups: dict[str, list[str]]) -> Hit:
        """A hit of a group with its other members' ids: those ranked below it, and a medium's
        own pair (the item and the memory of what it says) even when only one was a
        candidate."""
        rec = hit.record
        if not rec.group_id:
            return hit
        members = list(groups.get(rec.group_id, []))
        pair = rec.derived_from[0] if len(rec.derived_from) == 1 else ""
        if not pair and rec.blob is not None and rec.blob.held:
            pair = sibling_id(rec.memory_id, rec.modality)
        if pair and pair not in members and pair != rec.memory_id:
            key = self._store.key_of(rec.namespace, pair)
            if key is not None:
                other = self._store.get([key]).get(key)
                if other is not None and other.group_id == rec.group_id:
                    members.append(pair)
        return msgspec.structs.replace(hit, group_members=tuple(members)) if members else hit

    def _context(self, run: Run, key: int) -> tuple[KeyArray, KeyArray]:
        """A hit's neighbouring turns, left out like hits: obsolete and expired ones too unless
        the query asks for them."""
        q = run.q
        if q.context_turns <= 0:
            empty = np.empty(0, np.int64)
            return empty, empty
        before, after = self._cols.neighbours(key, q.context_turns)
        flt = MemoryFilter()

        obsolete = q.include_obsolete and not run.hidden_obsolete

        def live(keys: KeyArray) -> KeyArray:
            ok = self._cols.mask(keys, run.ns_id, flt, run.now, obsolete, q.include_expired)
            return keys[ok]

        return live(before), live(after)
