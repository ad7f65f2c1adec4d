"""The order of a slot's values: a newer value first, an obsolete one never above its successor.

Two rules over a Recall's final scores, before the top k is cut:

- **Newer first.** When the writer was unsure (`server.core.memory.write.supersede`), two current
  facts or preferences can state two values of one thing, and a summary (a session's, a topic's)
  restates an older one. Among the best candidates, two of the same kind (or a summary and a fact or
  preference) whose vectors lie close (cosine ≥ `lifecycle.supersede.slot_cosine`) and that are not
  plainly both true (`supersede.both_hold`: the newer adds to the older, or they are about two
  holders) are one slot. When the newer is relevant enough (at least `older_factor` of the older's
  score), it takes the older's place and the older ranks just below it: a question worded like the
  old value ("what's my manager's name?" against "my manager is Priya") still finds the new one ("I
  report to Tom") where it found the old. An older memory yields once, to the newer memory of its
  slot closest to it. A question about the past ("before", "以前": `retrieval.past_cues`) is left as
  it is.
- **Below its successor.** With `include_obsolete`, an obsolete memory ranks by its own relevance
  (so a question about the past finds it), but never above the current memory that superseded it
  (its chain's head) when that memory is a candidate too.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from server.core.memory.model import Kind
from server.core.memory.write.supersede import hold_both, traits
from server.core.query.run import KeyArray, Reader, Run, Sources
from server.core.settings import SupersedeSettings

F32 = npt.NDArray[np.float32]
# The best candidates weighed for "newer first" (a pairwise look: keep it small).
SLOT_CANDIDATES = 24
# Just below: the factor that puts a score under the one it yields to.
BELOW = np.float32(1.0 - 1e-4)
# The kinds that state values. A summary (a session's or a topic's) restates facts and
# preferences, so it shares a slot with either; a fact and a preference stay apart.
_VALUED = np.array([int(Kind.FACT), int(Kind.PREFERENCE), int(Kind.SUMMARY)], dtype=np.int8)
_SUMMARY = int(Kind.SUMMARY)
# How far a chain of successors is followed (each link a superseded memory).
MAX_CHAIN = 16


class Succession(Reader):
    def __init__(self, src: Sources, settings: SupersedeSettings) -> None:
        super().__init__(src)
        self._sup = settings

    def adjust(self, run: Run, keys: KeyArray, final: F32, top_k: int = SLOT_CANDIDATES) -> F32:
        """`final` with both rules applied (a copy; `keys` in the same order)."""
        out = final.copy()
        if len(keys) < 2:
            return out
        if self._sup.enabled and not run.asks_past:
            self._newer_first(run, keys, out, top_k)
        if run.q.include_obsolete:
            self._below_successors(run, keys, out)
        return out

    def _newer_first(self, run: Run, keys: KeyArray, out: F32, top_k: int) -> None:
        c = self._cols
        valued = np.isin(c.kind[keys], _VALUED) & ~c.obsolete[keys]
        idx = np.nonzero(valued)[0]
        if len(idx) < 2:
            return
        idx = idx[np.argsort(-out[idx], kind="stable")[:SLOT_CANDIDATES]]
        wanted = keys[idx].tolist()
        got = {k: run.vectors[k] for k in wanted if k in run.vectors}
        if len(got) < len(wanted):  # a keyword-only Recall: no vector was read
            got.update(self._store.get_vectors([k for k in wanted if k not in got]))
        idx = np.array([i for i in idx.tolist() if int(keys[i]) in got], dtype=np.int64)
        if len(idx) < 2:
            return
        mat = np.stack([got[int(keys[i])] for i in idx]).astype(np.float32)
        mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
        # Only the best `top_k` can show: one further down that yields leaves its newer
        # neighbour as far down.
        olders = np.argsort(-out[idx], kind="stable")[:top_k]
        sims = mat[olders] @ mat.T
        kinds, born = c.kind[keys[idx]], c.created[keys[idx]]
        score = out[idx]
        top = olders[:, None]
        kin = (
            (kinds[top] == kinds[None, :]) | (kinds[None, :] == _SUMMARY) | (kinds[top] == _SUMMARY)
        )
        fit = (sims >= self._sup.slot_cosine) & (born[None, :] > born[top]) & kin
        fit &= (score[None, :] < score[top]) & (
            score[None, :] >= score[top] * self._sup.older_factor
        )
        if not fit.any():
            return
        # The texts of the memories that may yield or take a place, read at once.
        near = sorted(
            set(olders[fit.any(axis=1)].tolist()) | set(np.nonzero(fit.any(axis=0))[0].tolist())
        )
        records = self._store.get([int(keys[idx[n]]) for n in near])
        read = {
            n: traits(r.text if (r := records.get(int(keys[idx[n]]))) is not None else "")
            for n in near
        }
        # Each older memory, best first, yields its place once: to the newer memory of its slot
        # that lies closest to it, when that one is relevant enough. Once, so that a run of newer
        # neighbours cannot push it down the list one by one.
        for row, b in enumerate(olders.tolist()):
            i = int(idx[b])
            if out[i] != score[b]:  # it took a place already (or yielded): once
                continue
            mates = [a for a in np.nonzero(fit[row])[0].tolist() if not hold_both(read[a], read[b])]
            mates = [a for a in mates if out[int(idx[a])] == score[a]]
            if mates:
                j = int(idx[max(mates, key=lambda m: float(sims[row, m]))])
                out[j], out[i] = out[i], out[i] * BELOW

    def bring_heirs(self, run: Run) -> None:
        """For a run that hides obsolete memories: each obsolete candidate's heir (the current
        memory at the end of its chain of successors) becomes a candidate too, when the query's
        filter and plan allow it (its channels are completed with the rest)."""
        if not run.hidden_obsolete:
            return
        found = np.array(sorted(run.vec.keys() | run.kw.keys()), dtype=np.int64)
        if len(found) == 0:
            return
        stale = found[self._cols.obsolete[found]]
        if len(stale) == 0:
            return
        records = self._store.get(stale.tolist())
        for key in stale.tolist():
            rec = records.get(key)
            head = self._head(run.q.namespace, rec.superseded_by if rec is not None else "")
            if head is not None:
                run.heirs[key] = head
        heads = np.array(sorted(set(run.heirs.values())), dtype=np.int64)
        allowed = heads[run.mask(self._cols, heads)] if len(heads) else heads
        ok = set(allowed.tolist())
        run.heirs = {k: h for k, h in run.heirs.items() if h in ok}
        for h in ok:
            if h not in run.vec and h not in run.kw:
                run.vec[h] = -1.0  # a placeholder: `complete` computes its cosine

    def inherit(self, run: Run, keys: KeyArray, fused: F32) -> F32:
        """`fused` where each heir holds at least the best match of the memories it replaced."""
        if not run.heirs:
            return fused
        out = fused.copy()
        at = {int(k): i for i, k in enumerate(keys.tolist())}
        for old, head in run.heirs.items():
            i, j = at.get(old), at.get(head)
            if i is not None and j is not None and out[i] > out[j]:
                out[j] = out[i]
        return out

    def _below_successors(self, run: Run, keys: KeyArray, out: F32) -> None:
        obsolete = np.nonzero(self._cols.obsolete[keys])[0]
        if len(obsolete) == 0:
            return
        at = {int(k): i for i, k in enumerate(keys.tolist())}
        records = self._store.get([int(keys[i]) for i in obsolete])
        for i in obsolete.tolist():
            rec = records.get(int(keys[i]))
            head = self._head(run.q.namespace, rec.superseded_by if rec is not None else "")
            if head is not None and head in at and out[i] > out[at[head]] * BELOW:
                out[i] = out[at[head]] * BELOW

    def _head(self, namespace: str, successor: str) -> int | None:
        """The key of the current memory at the end of a chain of successors, if any."""
        for _ in range(MAX_CHAIN):
            if not successor:
                return None
            key = self._store.key_of(namespace, successor)
            if key is None:
                return None
            rec = self._store.get([key]).get(key)
            if rec is None:
                return None
            if not rec.obsolete:
                return key
            successor = rec.superseded_by
        return None
