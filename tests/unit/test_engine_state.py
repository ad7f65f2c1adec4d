"""The engine as a state machine, against a plain-Python model of its records.

Hypothesis drives random sequences of remember (merging identical texts), upsert (kind changes
included), supersede, forget by id and by filter, recall, a checkpoint of the metadata columns
and restart (clean, or a crash that loses the unsaved vector snapshot and whatever the columns'
checkpoint has not seen), and after every step checks:
- Get agrees with the model (text, kind, obsolete) and forgotten records are NOT_FOUND;
- Recall (by vector, or by vector and words) never returns a forgotten record, nor an obsolete
  one unless asked for, and a write is found at once, before the indexer has it;
- once indexed, every live record is in exactly one place (its pocket's vector index, or the hot
  tier for a hot one), which is the pocket it is listed in, no record is in two pockets, and the
  pocket sizes sum to the live count;
- the metadata columns (restored from their checkpoint and the changes since, after a restart)
  hold what a scan of the store would: each live row's fields, pocket and session neighbours,
  and the pocket sizes.

Episodes are turns of one session: they arrive in tier hot, merge only as the same words, and
`move_tiers` (time passes) moves them to warm, which changes their pocket.

`POCKETD_STATE_EXAMPLES` sets the number of sequences of 20 steps (15 in `make test`; the `slow`
variant runs 300).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from server.core.deadline import no_deadline
from server.core.errors import NotFoundError
from server.core.memory.model import (
    GateDecision,
    Kind,
    MemoryFilter,
    NewMemory,
    RecallQuery,
    Record,
    Tier,
)
from server.core.memory.pockets import PocketCatalog, PocketScheme
from server.core.memory.state.columns import ARRAYS, Columns
from server.core.settings import MemorySettings
from tests.conftest import DIM, FakeClock, open_engine

# The smallest keyword heap tantivy takes: each sequence opens several engines.
SETTINGS = msgspec.structs.replace(
    MemorySettings(),
    index=msgspec.structs.replace(MemorySettings().index, keyword_heap_bytes=15_000_000),
)

NS = "sm"
TEXTS = [f"Note {w} about the {t}" for w in ("alpha", "beta", "gamma") for t in ("vpn", "wiki")]
KINDS = [Kind.FACT, Kind.PREFERENCE, Kind.EPISODE, Kind.SKILL]


def vector_of(text: str) -> np.ndarray:
    """One fixed unit vector per text: identical texts are identical vectors, others unrelated."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@dataclass
class Model:
    text: str
    kind: Kind
    obsolete: bool = False


class EngineMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="pocketd-sm-"))
        self.clock = FakeClock()
        self.engine = open_engine(self.dir, None, self.clock, SETTINGS)
        self.model: dict[str, Model] = {}
        self.forgotten: set[str] = set()
        self.client_ids = 0

    def teardown(self) -> None:
        self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _write(self, text: str, kind: Kind, memory_id: str = "", supersedes: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
        # Episodes are turns of one session: they arrive hot, and merge only as the same words.
        session = "s" if kind == Kind.EPISODE else ""
        item = NewMemory(
            record=Record(
                memory_id=memory_id, namespace=NS, kind=kind, text=text, session_id=session
            ),
            vector=vector_of(text),
            explicit_importance=3,
            supersedes=supersedes,
            client_memory_id=bool(memory_id),
        )
        return self.engine.remember([item])[0]

    def _current_twins(self, text: str, kind: Kind) -> set[str]:
        """The records a new (text, kind) merges into: current records of the same kind and words
        (facts, preferences and skills by similarity; episodes, all in one session, by their
        identical text)."""
        return {
            mid
            for mid, m in self.model.items()
            if m.text == text and m.kind == kind and not m.obsolete
        }

    @rule(target=ids, text=st.sampled_from(TEXTS), kind=st.sampled_from(KINDS))
    def remember(self, text: str, kind: Kind) -> str:
        twins = self._current_twins(text, kind)
        r = self._write(text, kind)
        if twins:  # the same words and kind: merged
            assert r.decision == GateDecision.MERGED and r.memory_id in twins, (r, twins)
        else:
            assert r.decision == GateDecision.STORED and r.memory_id not in self.model
        self.model[r.memory_id] = Model(text, kind)
        # Readable at once, before the indexer has it, by both channels.
        q = RecallQuery(namespace=NS, text=text, vector=vector_of(text), top_k=10, min_score=0.0)
        assert r.memory_id in [h.record.memory_id for h in self.engine.recall(q).hits]
        return r.memory_id

    @rule(target=ids, text=st.sampled_from(TEXTS), kind=st.sampled_from(KINDS))
    def upsert_new(self, text: str, kind: Kind) -> str:
        self.client_ids += 1
        mid = f"c{self.client_ids}"
        r = self._write(text, kind, memory_id=mid)
        assert r.decision == GateDecision.STORED and r.memory_id == mid
        self.model[mid] = Model(text, kind)
        return mid

    @rule(mid=ids, text=st.sampled_from(TEXTS), kind=st.sampled_from(KINDS))
    def upsert_existing(self, mid: str, text: str, kind: Kind) -> None:
        if mid in self.forgotten or not mid.startswith("c"):
            return
        r = self._write(text, kind, memory_id=mid)
        assert r.memory_id == mid
        old = self.model[mid]
        self.model[mid] = Model(text, kind, obsolete=old.obsolete)

    @rule(target=ids, old=ids, text=st.sampled_from(TEXTS), kind=st.sampled_from(KINDS))
    def supersede(self, old: str, text: str, kind: Kind) -> str:
        if old in self.forgotten:
            return old
        twins = self._current_twins(text, kind) - {old}
        r = self._write(text, kind, supersedes=(old,))
        if twins:
            assert r.memory_id in twins
        if r.memory_id != old:
            self.model[old].obsolete = True
        self.model[r.memory_id] = Model(
            text, kind, self.model.get(r.memory_id, Model("", kind)).obsolete
        )
        return r.memory_id

    @rule(mid=consumes(ids))
    def forget(self, mid: str) -> None:
        if mid in self.forgotten:
            return
        assert self.engine.forget(NS, mid, None) == 1
        del self.model[mid]
        self.forgotten.add(mid)

    @rule(kind=st.sampled_from(KINDS))
    def forget_kind(self, kind: Kind) -> None:
        gone = {mid for mid, m in self.model.items() if m.kind == kind}
        assert self.engine.forget(NS, None, MemoryFilter(kinds=(kind,))) == len(gone)
        for mid in gone:
            del self.model[mid]
        self.forgotten |= gone

    @rule(text=st.sampled_from(TEXTS), include_obsolete=st.booleans(), words=st.booleans())
    def recall(self, text: str, include_obsolete: bool, words: bool) -> None:
        q = RecallQuery(
            namespace=NS,
            text=text if words else "",
            vector=vector_of(text),
            top_k=10,
            include_obsolete=include_obsolete,
            min_score=0.0,
        )
        got = [h.record.memory_id for h in self.engine.recall(q).hits]
        assert not set(got) & self.forgotten, got
        for mid in got:
            assert mid in self.model, mid
            assert include_obsolete or not self.model[mid].obsolete, mid
        # The exact match of a current record is found (the index is tiny: HNSW is exact here).
        want = {mid for mid, m in self.model.items() if m.text == text and not m.obsolete}
        if want:
            assert set(got) & want, (text, got, want)

    @rule(hours=st.integers(0, 2))
    def time_passes(self, hours: int) -> None:
        self.clock.t += hours * 3600.0
        self.engine._writer.move_tiers(no_deadline())

    @rule()
    def checkpoint(self) -> None:
        self.engine._checkpoint.save()  # what maintenance does now and then

    @rule(crash=st.booleans())
    def restart(self, crash: bool) -> None:
        eng = self.engine
        if crash:  # the process dies: the vector snapshot and the uncounted accesses are lost
            eng.maintenance._stop.set()
            if eng.maintenance._thread is not None:
                eng.maintenance._thread.join()
            eng.indexer._stop.set()
            eng.indexer._wake.set()
            if eng.indexer._thread is not None:
                eng.indexer._thread.join()
            eng._keywords.close()
            eng._store.close()
        else:
            eng.close()
        self.engine = open_engine(self.dir, None, self.clock, SETTINGS)

    @invariant()
    def get_agrees_with_the_model(self) -> None:
        for mid, m in self.model.items():
            rec, _ = self.engine.get(NS, mid, False)
            assert (rec.text, rec.kind, rec.obsolete) == (m.text, m.kind, m.obsolete), mid
        for mid in list(self.forgotten)[:5]:
            with pytest.raises(NotFoundError):
                self.engine.get(NS, mid, False)

    @invariant()
    def the_columns_hold_what_a_scan_would(self) -> None:
        eng = self.engine
        fresh = Columns(PocketCatalog(PocketScheme(SETTINGS.pockets)))
        for rec in eng._store.scan_live():
            fresh.put(rec)
        cols = eng.columns
        live = np.nonzero(fresh.ns >= 0)[0]
        assert np.array_equal(np.nonzero(cols.ns >= 0)[0], live)
        names = {v: k for k, v in fresh.namespaces().items()}
        mine = {v: k for k, v in cols.namespaces().items()}
        for k in live.tolist():
            assert mine[int(cols.ns[k])] == names[int(fresh.ns[k])]
            for name in ARRAYS:
                # Access counts are a cache of the store's (Touch has no revision to replay):
                # after a crash they may lag by the accesses since the last snapshot.
                if name not in ("ns", "pocket", "session", "accesses", "last_access"):
                    got, want = getattr(cols, name)[k], getattr(fresh, name)[k]
                    assert got == want or (np.isnan(got) and np.isnan(want)), (k, name)
            assert (
                cols.catalog.key(int(cols.pocket[k])).name
                == fresh.catalog.key(int(fresh.pocket[k])).name
            )
            assert cols.tags.get(k) == fresh.tags.get(k)
            got, want = cols.neighbours(k, 2), fresh.neighbours(k, 2)
            assert [a.tolist() for a in got] == [a.tolist() for a in want], k
        sizes = {cols.catalog.key(p).name: cols.pocket_size(p) for p in range(len(cols.catalog))}
        scanned = {
            fresh.catalog.key(p).name: fresh.pocket_size(p) for p in range(len(fresh.catalog))
        }
        assert {n: c for n, c in sizes.items() if c} == {n: c for n, c in scanned.items() if c}

    @invariant()
    def each_record_is_in_exactly_one_pocket(self) -> None:
        eng = self.engine
        eng.indexer.catch_up()
        stats = eng.stats(NS).namespaces
        pockets = {p.name: p.size for p in stats[0].pockets} if stats else {}
        assert sum(pockets.values()) == len(self.model), pockets
        parts = eng._vectors.partitions(NS)
        listed: dict[str, int] = {}
        for mid in self.model:
            key = eng._store.key_of(NS, mid)
            assert key is not None
            probe = np.array([key], dtype=np.int64)
            places = [name for name, part in parts.items() if part.get(probe).any()]
            rec, _ = eng.get(NS, mid, False)
            pocket = eng.columns.catalog.scheme.key_of(rec)
            if pocket.tier == Tier.HOT:  # the hot tier holds it, no vector index does
                assert eng.hot.contains(key) and places == [], (mid, places)
            else:
                assert places == [pocket.name], (mid, places, pocket.name)
            listed[pocket.name] = listed.get(pocket.name, 0) + 1
        assert listed == {name: n for name, n in pockets.items() if n}, (listed, pockets)

    @invariant()
    def an_indexed_turn_carries_its_current_neighbours(self) -> None:
        """A warm turn's indexed vector is its own vector mixed with its session neighbours' as
        they are now: a turn written, forgotten or moved since re-indexed its neighbours."""
        eng = self.engine
        eng.indexer.catch_up()
        ctx = SETTINGS.context
        for mid, m in self.model.items():
            if m.kind != Kind.EPISODE:
                continue
            key = eng._store.key_of(NS, mid)
            assert key is not None
            rec, _ = eng.get(NS, mid, False)
            pocket = eng.columns.catalog.scheme.key_of(rec)
            if pocket.tier == Tier.HOT:
                continue
            part = eng._vectors.partitions(NS)[pocket.name]
            got = part.get(np.array([key], dtype=np.int64))[0]
            before, after = eng.columns.neighbours(key, ctx.turns)
            stored = eng._store.get_vectors([key, *before.tolist(), *after.tolist()])
            want = np.asarray(stored[key], dtype=np.float64)
            for dist, k in [
                *zip(range(-len(before), 0), before.tolist(), strict=True),
                *enumerate(after.tolist(), 1),
            ]:
                want = want + ctx.weight(dist, ctx.vector_weight) * np.asarray(
                    stored[k], np.float64
                )
            want /= np.linalg.norm(want)
            assert float(got @ want) > 0.999, (mid, float(got @ want))


def run(examples: int) -> None:
    machine = EngineMachine
    machine.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    machine.TestCase().runTest()


def test_the_engine_agrees_with_its_model() -> None:
    run(int(os.environ.get("POCKETD_STATE_EXAMPLES", "15")))


@pytest.mark.slow
def test_the_engine_agrees_with_its_model_long() -> None:
    run(int(os.environ.get("POCKETD_STATE_EXAMPLES", "300")))
