"""The one scoring formula (`kernels.fusion.fused_scores`) with the settings' constants: what
ranking scores each candidate with, and what the early stop bounds an unsearched pocket with."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kernels.decay import step_decay
from kernels.fusion import fused_scores
from server.core.memory.model import Kind, RecallQuery, Vector
from server.core.memory.script import other
from server.core.query.run import KeyArray, Reader, Run, Sources
from server.core.settings import DecaySettings, HybridSearchSettings

_DAY = 86_400.0
F32 = npt.NDArray[np.float32]
Flags = npt.NDArray[np.bool_]


def params(s: HybridSearchSettings, w_vec: float, w_kw: float) -> npt.NDArray[np.float64]:
    return np.array(
        [
            s.floor,
            w_vec,
            w_kw,
            s.both_boost,
            s.exact_boost,
            s.time_cue_boost,
            s.temporal_answer_boost,
            s.ceiling,
            s.across_scripts_share,
            s.role_boost,
            s.keyword_gate,
            s.keyword_unbacked_share,
        ],
        dtype=np.float64,
    )


def fused(
    s: HybridSearchSettings,
    weights: tuple[float, float],
    cos: F32,
    kw: F32,
    exact: Flags,
    in_window: Flags,
    says_when: Flags,
    across: Flags,
    same_role: Flags,
) -> F32:
    """Each candidate's fused score from its cosine, its keyword score on [0, 1] and its
    boosts' flags (`across`: written in the other script than the query), and its session's
    score, and whether it is from the role the question is about."""
    out: F32 = fused_scores(
        np.ascontiguousarray(cos, np.float32),
        np.ascontiguousarray(kw, np.float32),
        np.ascontiguousarray(exact, np.bool_),
        np.ascontiguousarray(in_window, np.bool_),
        np.ascontiguousarray(says_when, np.bool_),
        np.ascontiguousarray(across, np.bool_),
        np.ascontiguousarray(same_role, np.bool_),
        params(s, *weights),
    )
    return out


@dataclass(frozen=True)
class Scores:
    keys: KeyArray
    found: npt.NDArray[np.bool_]  # by the vector channel
    cos: npt.NDArray[np.float32]
    b: npt.NDArray[np.float32]
    vh: npt.NDArray[np.bool_]
    kh: npt.NDArray[np.bool_]
    fused: npt.NDArray[np.float32]


def keyword_scale(run: Run, raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """BM25 on the keyword channel's [0, 1] scale: over the query's reference, clipped."""
    if run.reference <= 0:
        return np.zeros(len(raw), np.float32)
    out: npt.NDArray[np.float32] = np.clip(raw / run.reference, 0.0, 1.0).astype(np.float32)
    return out


def _arrays(channel: dict[int, float]) -> tuple[KeyArray, npt.NDArray[np.float32]]:
    """A channel's keys and scores as arrays, in the dict's order."""
    n = len(channel)
    return np.fromiter(channel.keys(), np.int64, n), np.fromiter(channel.values(), np.float32, n)


class Scorer(Reader):
    """Every candidate's two channels, computed one way, and its fused and final scores."""

    def __init__(self, src: Sources, decay: DecaySettings) -> None:
        super().__init__(src)
        self._src = src
        # Kind → whether it decays (a table over the kinds' values: a lookup per candidate).
        self._decays = np.zeros(max(int(k) for k in Kind) + 1, np.bool_)
        self._decays[[int(Kind[k.upper()]) for k in decay.kinds]] = True
        self._thresholds = np.array([x * _DAY for x in decay.after_days], dtype=np.float64)
        self._factors = np.array(decay.factors, dtype=np.float32)

    def floor(self, q: RecallQuery) -> float:
        return self._s.min_score if q.min_score is None else q.min_score

    def complete(self, run: Run, query: Vector | None) -> None:
        """Give every candidate both channels' scores, whichever channel found it, each
        computed one way: its cosine from its stored vector (the hot tier's row, else its
        pocket's index) in float32, whatever search found it, and its BM25 from the keyword
        index. A memory's score then depends on the query, the namespace and the memory,
        never on the plan, the search method or how deep its pocket was searched."""
        q = run.q
        if query is not None:
            qv = np.asarray(query, np.float32)
            keys = sorted(run.vec.keys() | run.kw.keys())
            stored = self.stored_vectors(q.namespace, keys)
            run.vectors.update(stored)
            cosines: dict[int, float] = {}
            if stored:
                mat = np.stack(list(stored.values())).astype(np.float32)
                cosines.update(zip(stored, (mat @ qv).tolist(), strict=True))
            run.vec = cosines
            run.space.clear()  # text cosines now; `complete_spaces` labels what a space raises
        # The keyword channel listed every memory that holds a query term unless its list was
        # full: only then can a vector candidate have an unlisted BM25.
        if run.kq is not None and run.kw_full:
            missing = [k for k in run.vec if k not in run.kw]
            if missing:
                got = self._keywords.score(run.kq, missing)
                if got:
                    keys = list(got)
                    norm = keyword_scale(run, np.array([got[k] for k in keys], np.float64))
                    run.kw.update(zip(keys, norm.tolist(), strict=True))

    def stored_vectors(self, namespace: str, keys: list[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The vectors the channels rank `keys` by: the hot tier's row, else its pocket's
        index's (a key with neither is left out)."""
        out = dict(self._hot.vectors(namespace, keys))
        by_pocket: dict[int, list[int]] = {}
        of = self._cols.pocket
        for k in keys:
            if k not in out and k < len(of) and of[k] >= 0:
                by_pocket.setdefault(int(of[k]), []).append(k)
        cat = self._cols.catalog
        for pid, mine in by_pocket.items():
            part = self._vectors.partition(namespace, cat.key(pid).name, False)
            if part is None:
                continue
            mat = part.get(np.array(mine, dtype=np.int64))
            present = np.any(mat != 0, axis=1).tolist()
            out.update((k, row) for k, ok, row in zip(mine, present, mat, strict=True) if ok)
        return out

    def space_scale(self, space: str) -> tuple[float, float]:
        """A space's (floor, ceiling): its own, or the text space's."""
        got = self._src.space_scales.get(space)
        return got if got is not None else (self._s.floor, self._s.ceiling)

    def on_text_scale(self, space: str, cos: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """A space's cosines mapped onto the text space's scale (its floor onto the text
        floor, its ceiling onto the text ceiling), so that one formula ranks every space."""
        lo, hi = self.space_scale(space)
        tlo, thi = self._s.floor, self._s.ceiling
        out = tlo + (cos.astype(np.float64) - lo) / max(hi - lo, 1e-6) * (thi - tlo)
        return np.clip(out, -1.0, 1.0).astype(np.float32)

    def complete_spaces(self, run: Run) -> None:
        """Every candidate's cosine in each space the query was encoded into, from its stored
        vectors there (whatever search found it; the best of its passages), mapped onto the text
        scale: its vector score is the best of its spaces'."""
        spaces = self._src.spaces
        q = run.q
        if spaces is None or not q.space_vectors:
            return
        keys = sorted(run.vec.keys() | run.kw.keys())
        for space, qv in q.space_vectors.items():
            held = spaces.get(q.namespace, space, keys)
            if not held:
                continue
            ks = list(held)
            if any(held[k].shape[1] != len(qv) for k in ks):
                continue
            # A key's best row (one, or its passages').
            sims = [float((held[k] @ np.asarray(qv, np.float32)).max()) for k in ks]
            mapped = self.on_text_scale(space, np.asarray(sims, np.float32)).tolist()
            for k, c in zip(ks, mapped, strict=True):
                if k not in run.vec or c > run.vec[k]:
                    run.vec[k] = c
                    run.space[k] = space

    def keep_best_vectors(self, run: Run, count: int) -> None:
        """Keep the vector channel's best `count` candidates across the plan's pockets (as
        the keyword channel keeps its best), by what ranking will order them by: the fused
        score from their search similarity and what the keyword channel listed, decayed,
        current before obsolete unless obsolete ones are asked for (ties: the lower key).
        Cosine alone would cut a fresh memory of one pocket for many decayed ones of another, or
        a time cue's boosted week. Every
        exact-identifier holder stays. Each pocket's step returned its own best, so the union
        holds the channel's best; the rest would only be completed and ranked for nothing
        (a plan of 44 small pockets, each scanned at the whole depth, completed 2,800)."""
        if len(run.vec) <= count:
            return
        sc = self.score(run)
        keys = sc.keys[sc.found]
        final = sc.fused[sc.found] * self.decay(run, keys)
        # Obsolete memories asked for (or hidden, to pass their match on) rank by their own
        # score, as ranking orders them.
        obsolete = self._cols.obsolete[keys] & (not run.q.include_obsolete)
        best = keys[np.lexsort((keys, -final, obsolete))[:count]].tolist()
        best.extend(k for k in run.exact if k in run.vec)
        run.vec = {k: run.vec[k] for k in best}

    def score(self, run: Run) -> Scores:
        """Every candidate's channels and fused score, by the one formula (`scoring`)."""
        vk, vv = _arrays(run.vec)
        kk, kv = _arrays(run.kw)
        keys: KeyArray = np.union1d(vk, kk)  # sorted, each once
        at = np.searchsorted(keys, vk)
        found = np.zeros(len(keys), np.bool_)
        found[at] = True
        cos = np.full(len(keys), -1.0, np.float32)  # none: below any floor
        cos[at] = vv
        b = np.zeros(len(keys), np.float32)
        b[np.searchsorted(keys, kk)] = kv
        c = self._cols
        exact = np.isin(keys, list(run.exact)) if run.exact else np.zeros(len(keys), np.bool_)
        if (span := run.window) is not None:
            inside = (c.created[keys] >= span[0]) & (c.created[keys] < span[1])
        else:
            inside = np.zeros(len(keys), np.bool_)
        # A "when" question wants a memory that says when: its answer type.
        when = c.says_when[keys] if run.asks_when else np.zeros(len(keys), np.bool_)
        # A memory in the other script than the query: the keyword channel cannot match it.
        far = other(run.script)
        across = c.script[keys] == int(far) if far is not None else np.zeros(len(keys), np.bool_)
        # A turn from the role the question is about (the asker's, the agent's).
        same_role = c.role[keys] == int(run.role) if run.role else np.zeros(len(keys), np.bool_)
        score = fused(self._s, run.weights, cos, b, exact, inside, when, across, same_role)
        vh = cos > self._s.floor  # a vector hit clears the floor
        kh = b > 0
        return Scores(keys, found, cos, b, vh, kh, score)

    def decay(self, run: Run, keys: KeyArray) -> npt.NDArray[np.float32]:
        c = self._cols
        decays = self._decays[c.kind[keys]] & (not run.temporal)
        age = np.maximum(run.ref - c.refreshed[keys], 0.0)
        out: npt.NDArray[np.float32] = step_decay(age, decays, self._thresholds, self._factors)
        return out
