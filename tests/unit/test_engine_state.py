"""The engine as a state machine, against a plain-Python model of its records
(`engine_state_model.py`).

Hypothesis drives random sequences of remember (merging identical texts; a fact or preference
that states a new value of its family, later, supersedes the older one without ids), bursts of
writes, upsert (kind changes included), client supersede, unsupersede, reconcile (applied or a
dry run), forget by id and by filter, recall, get, EndSession, maintenance (the fake clock moved
by days or months first, so idle sessions end, memories expire, topics compress and memories of
low retention move to cold), a maintenance run killed between two changes and finished at
start-up, a checkpoint of the metadata columns and restart (clean, which ends an idle session,
or a crash that loses the unsaved vector snapshot and whatever the columns' checkpoint has not
seen), and after every step checks:
- the store holds what the model holds, field by field (what Get returns, read without counting
  an access): nothing is deleted but by Forget or by expiry past `expires_at` (in any tier;
  never for age alone: `retention.cold_max_age_days` is unset), and nothing the model lost is
  left; Get of a deleted one is NOT_FOUND;
- every obsolete record's `superseded_by` chain ends at a current record, or at one that was
  deleted since (Forget or expiry of the newer value does not make the older one true again, so
  it stays obsolete and names what replaced it); the chain has no cycle;
- a compressed original is cold, and its summary, unless deleted since, names it in
  `derived_from`; every original a topic summary names is compressed into it, or deleted;
- Recall (by vector, or by vector and words) never returns a deleted or expired record, an
  obsolete one unless asked for, a cold one unless asked for, and a write is found at once,
  before the indexer has it;
- once indexed, every live record is in exactly one place: the hot tier for a hot one (and no
  vector index), else its pocket's vector index and no other (a cold record a cold pocket's,
  in the archive), which is the pocket it is listed in; no record is in two pockets, and the
  pocket sizes sum to the live count;
- the metadata columns (restored from their checkpoint and the changes since, after a restart)
  hold what a scan of the store would: each live row's fields, pocket and session neighbours,
  and the pocket sizes.
A step checks its own outcome too: a write's reply (merged or stored, tier, expiry, what it
superseded and why), a reconciliation's decisions, EndSession's summaries (drawn from the
session's turns) and moves, and a maintenance run's report (sessions ended, turns moved to warm,
expired, topics and originals compressed, moved to cold, a run resumed at start-up): the model
says what each must be, and a second run at the same time compresses nothing twice. A run
killed between two changes is finished at start-up to the state of one whole run; a session end
is one change (its summaries and its moves), so a killed one is wholly undone, and since a
start-up counts the in-process session memory as active again, that session ends later.

Episodes are turns of one session: they arrive in tier hot, merge only as the same words, and
leave the hot tier when the session ends (EndSession, or idle past the TTL at maintenance or
shutdown). The background ticks are slowed to an hour (`access_flush_seconds`) and the
lifecycle's schedule is off, so every change happens in a step.

`POCKETD_STATE_EXAMPLES` sets the number of sequences of 25 steps (40 in `make test`, about ten
seconds, in which a run usually reaches a compression and a killed maintenance run; the `slow`
variant runs 300). A topic compresses past three memories here (five by default), so that
sequences this short get there.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path
from typing import cast
from unittest.mock import patch

import msgspec
import numpy as np
import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
)

from server.adapters.cold_segments import ColdVectorIndex
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.core.deadline import no_deadline
from server.core.engine import MemoryEngine
from server.core.errors import NotFoundError
from server.core.memory.changes import Applied, Op
from server.core.memory.model import (
    GateDecision,
    Kind,
    MemoryFilter,
    NewMemory,
    RecallQuery,
    Record,
    SourceType,
    Tier,
    WriteResult,
)
from server.core.memory.pockets import PocketCatalog, PocketScheme
from server.core.memory.state.columns import ARRAYS, Columns
from server.core.memory.write.writer import DEDUP_CANDIDATES, Writer
from server.core.settings import MemorySettings
from tests.conftest import DAY, FakeClock, open_engine, run_state_machine
from tests.unit.engine_state_model import (
    FAMILIES,
    KINDS,
    NOTES,
    NS,
    SESSION,
    TEXTS,
    TOPIC,
    VALUES,
    Model,
    Run,
    StandInEncoder,
    Write,
    vector_of,
)

_BASE = MemorySettings()
_LIFE = _BASE.lifecycle
SETTINGS = msgspec.structs.replace(
    _BASE,
    # No tick between steps: the accesses are flushed, idle sessions ended and tiers moved
    # only where a step says so (and at shutdown).
    access_flush_seconds=3600.0,
    # The smallest keyword heap tantivy takes: each sequence opens several engines.
    index=msgspec.structs.replace(_BASE.index, keyword_heap_bytes=15_000_000),
    # Importance 1 and 2 are kept, so that retention has memories to move to cold.
    write_policy=msgspec.structs.replace(_BASE.write_policy, min_importance=1),
    lifecycle=msgspec.structs.replace(
        _LIFE,
        # An access keeps a memory fresh by its time, not by how many there were.
        retention=msgspec.structs.replace(_LIFE.retention, access_saturation=1e6),
        # A topic of four compresses: a sequence of 25 steps gets there often.
        compression=msgspec.structs.replace(_LIFE.compression, compress_after_count=3),
        maintenance=msgspec.structs.replace(_LIFE.maintenance, enabled=False),
    ),
)
IMPORTANCE = st.sampled_from([1, 2, 3, 5])
# Some writes share a topic label: compressed once more than three of them are warm.
TOPICS = st.sampled_from(["", "", TOPIC])
# Bursts of writes at one time: notes, one family's values (a cluster, all current when said at
# once), or anything.
POOLS = [NOTES, FAMILIES["wifi"][1], TEXTS]
BURSTS = st.sampled_from(POOLS).flatmap(
    lambda pool: st.lists(st.sampled_from(pool), min_size=2, max_size=8)
)
DAYS = st.sampled_from([0.0, 1.0, 16.0, 30.0, 50.0, 100.0])


class KilledError(Exception):
    """The process dies here: kill -9 between two changes."""


class EngineMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="pocketd-sm-"))
        self.clock = FakeClock()
        self.engine = self._open()
        self.model = Model(SETTINGS)
        self.client_ids = 0
        # A run a crash interrupted was finished at start-up: the next run reports it.
        self.resumed = False

    def _open(self) -> MemoryEngine:
        # A stand-in encoder: open_engine hands it on as the TextEncoder port it is.
        encoder = cast(OnnxTextEncoder, StandInEncoder())
        return open_engine(self.dir, encoder, self.clock, SETTINGS)

    def teardown(self) -> None:
        self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _now(self) -> float:
        return self.clock.now()

    def _live(self) -> dict[str, Record]:
        """The namespace's live records as stored (read without counting an access)."""
        return {r.memory_id: r for r in self.engine._store.scan_live() if r.namespace == NS}

    def _write(self, w: Write) -> WriteResult:
        item = NewMemory(
            record=Record(
                memory_id=w.memory_id,
                namespace=NS,
                kind=w.kind,
                text=w.text,
                topic=w.topic,
                session_id=SESSION if w.kind == Kind.EPISODE else "",
            ),
            vector=vector_of(w.text),
            explicit_importance=w.importance,
            supersedes=w.supersedes,
            client_memory_id=bool(w.memory_id),
        )
        r = self.engine.remember([item])[0]
        marks = self.model.write(w, self._now(), r.memory_id, r.decision)
        self.model.check(r, marks)
        if r.superseded:
            event("a write superseded")
        return r

    def _found_at_once(self, r: WriteResult, text: str) -> None:
        """A write is readable at once, before the indexer has it, by both channels (a read
        that counts no access: it is the test's, not a client's)."""
        q = RecallQuery(
            namespace=NS,
            text=text,
            vector=vector_of(text),
            top_k=10,
            min_score=0.0,
            include_cold=r.tier == Tier.COLD,
        )
        hits = self.engine.recall(q, shadow=True).hits
        assert r.memory_id in [h.record.memory_id for h in hits]

    # -- writes -----------------------------------------------------------------------------

    @rule(
        target=ids,
        text=st.sampled_from(TEXTS),
        kind=st.sampled_from(KINDS),
        imp=IMPORTANCE,
        topic=TOPICS,
    )
    def remember(self, text: str, kind: Kind, imp: int, topic: str) -> object:
        if self.model.crowded(text, kind, DEDUP_CANDIDATES):
            return multiple()
        r = self._write(Write(text, kind, imp, topic))
        self._found_at_once(r, text)
        return r.memory_id

    @rule(
        target=ids,
        texts=BURSTS,
        kind=st.sampled_from(KINDS),
        imp=IMPORTANCE,
        topic=st.sampled_from(["", TOPIC]),
        spread=st.booleans(),
    )
    def burst(self, texts: list[str], kind: Kind, imp: int, topic: str, spread: bool) -> object:
        """Writes one after the other, at one time (all hold) or a minute apart (each later
        value of a family supersedes the one before)."""
        out = []
        for text in texts:
            if spread:
                self.clock.advance(60.0)
            if not self.model.crowded(text, kind, DEDUP_CANDIDATES):
                out.append(self._write(Write(text, kind, imp, topic)).memory_id)
        return multiple(*out)

    @rule(target=ids, text=st.sampled_from(TEXTS), kind=st.sampled_from(KINDS), imp=IMPORTANCE)
    def upsert_new(self, text: str, kind: Kind, imp: int) -> str:
        self.client_ids += 1
        mid = f"c{self.client_ids}"
        self._write(Write(text, kind, imp, memory_id=mid))
        return mid

    @rule(mid=ids, text=st.sampled_from(TEXTS), kind=st.sampled_from(KINDS), imp=IMPORTANCE)
    def upsert_existing(self, mid: str, text: str, kind: Kind, imp: int) -> None:
        if mid in self.model.gone or not mid.startswith("c"):
            return
        self._write(Write(text, kind, imp, memory_id=mid))

    @rule(
        target=ids,
        old=ids,
        text=st.sampled_from(TEXTS),
        kind=st.sampled_from(KINDS),
        imp=IMPORTANCE,
    )
    def supersede(self, old: str, text: str, kind: Kind, imp: int) -> object:
        if old in self.model.gone or self.model.crowded(text, kind, DEDUP_CANDIDATES):
            return multiple()
        return self._write(Write(text, kind, imp, supersedes=(old,))).memory_id

    @rule(mid=ids)
    def unsupersede(self, mid: str) -> None:
        if mid in self.model.gone:
            with pytest.raises(NotFoundError):
                self.engine.unsupersede(NS, [mid], no_deadline())
            return
        hot = self.model.mem[mid].tier == Tier.HOT
        got = self.engine.unsupersede(NS, [mid], no_deadline())
        was = self.model.unsupersede(mid)
        assert got == ([mid] if was else []), (got, was)
        self.model.touched(self._now(), sure=hot and was)

    @rule(target=ids, text=st.sampled_from(VALUES), dry_run=st.booleans())
    def reconcile(self, text: str, dry_run: bool) -> object:
        """An authoritative fact: the current facts and preferences of its family that hold
        another value are contradicted (marked obsolete with reason "reconcile")."""
        if self.model.crowded(text, Kind.FACT, DEDUP_CANDIDATES):
            return multiple()
        now = self._now()
        want = self.model.reconciled(text, now)
        fact = NewMemory(
            record=Record(
                memory_id="",
                namespace=NS,
                kind=Kind.FACT,
                text=text,
                source_type=SourceType.OFFICIAL_DOCUMENT,
            ),
            vector=vector_of(text),
            explicit_importance=3,
        )
        res = self.engine.reconcile(NS, [fact], dry_run, no_deadline())
        assert {d.memory_id for d in res.decisions if d.supersede} == want, (res, want)
        if dry_run:
            assert not res.applied and res.fact_ids == []
            return multiple()
        assert res.applied and len(res.fact_ids) == 1, res
        (mid,) = res.fact_ids
        decision = GateDecision.MERGED if mid in self.model.mem else GateDecision.STORED
        w = Write(text, Kind.FACT, 3, supersedes=tuple(sorted(want)), reason="reconcile")
        self.model.write(w, now, mid, decision)
        if want:
            event("reconcile superseded")
        return mid

    # -- deletes ----------------------------------------------------------------------------

    @rule(mid=consumes(ids))
    def forget(self, mid: str) -> None:
        if mid in self.model.gone:
            return
        assert self.engine.forget(NS, mid, None) == 1
        self.model.forgotten([mid])
        self.model.touched(self._now())

    @rule(kind=st.sampled_from(KINDS))
    def forget_kind(self, kind: Kind) -> None:
        gone = [mid for mid, m in self.model.mem.items() if m.kind == kind]
        assert self.engine.forget(NS, None, MemoryFilter(kinds=(kind,))) == len(gone)
        self.model.forgotten(gone)
        self.model.touched(self._now())

    # -- reads ------------------------------------------------------------------------------

    @rule(
        text=st.sampled_from(TEXTS),
        include_obsolete=st.booleans(),
        words=st.booleans(),
        include_cold=st.booleans(),
    )
    def recall(self, text: str, include_obsolete: bool, words: bool, include_cold: bool) -> None:
        now = self._now()
        q = RecallQuery(
            namespace=NS,
            text=text if words else "",
            vector=vector_of(text),
            top_k=10,
            include_obsolete=include_obsolete,
            include_cold=include_cold,
            min_score=0.0,
        )
        got = [h.record.memory_id for h in self.engine.recall(q).hits]
        model = self.model.mem
        for mid in got:
            assert mid in model, (mid, "deleted, yet recalled")
            m = model[mid]
            assert include_obsolete or not m.obsolete, mid
            assert include_cold or m.tier != Tier.COLD, mid
            assert m.expires > now, mid
        # The exact match of a current record is found (the index is tiny: HNSW is exact here).
        want = {
            mid
            for mid, m in model.items()
            if m.text == text
            and not m.obsolete
            and m.expires > now
            and (include_cold or m.tier != Tier.COLD)
        }
        if want:
            assert set(got) & want, (text, got, want)
        self.model.read(got, now)

    @rule(mid=ids)
    def get(self, mid: str) -> None:
        """Get works in every tier (a cold record too) and counts an access."""
        if mid in self.model.gone:
            with pytest.raises(NotFoundError):
                self.engine.get(NS, mid, False)
            return
        rec, _ = self.engine.get(NS, mid, False)
        self.model.mem[mid].agrees(rec)
        self.model.read([mid], self._now())

    # -- time and the lifecycle ---------------------------------------------------------------

    @rule(hours=st.integers(0, 2))
    def time_passes(self, hours: int) -> None:
        """The frequent tick's tier move: the session is the namespace's current one, so its
        turns stay hot however old (only its end moves them)."""
        self.clock.advance(hours * 3600.0)
        assert self.engine._writer.move_tiers(no_deadline()) == 0

    @rule(target=ids)
    def end_session(self) -> object:
        model = self.model
        if not any(m.session == SESSION for m in model.mem.values()):
            with pytest.raises(NotFoundError):
                self.engine.end_session(NS, SESSION, no_deadline())
            return multiple()
        turns = model.turns()
        res = self.engine.end_session(NS, SESSION, no_deadline())
        new = model.session_summaries(self._live(), turns)
        written = {r.memory_id for r in res.summaries if r.decision != GateDecision.REJECTED}
        assert set(new) <= written, (new, res.summaries)
        assert all(model.mem[mid].summary == "session" for mid in written), res.summaries
        assert res.moved == model.end_session(), res
        return multiple(*new)

    def _report(self, got: object, run: Run) -> None:
        want = dataclasses.asdict(run)
        have = {f: getattr(got, f) for f in want}
        assert have == want, (have, want)

    @rule(target=ids, days=DAYS)
    def maintain(self, days: float) -> object:
        """A maintenance run, `days` after the last step (the accesses counted so far flushed
        first, as the frequent tick does)."""
        self.clock.advance(days * DAY)
        self.engine.access.flush()
        now = self._now()
        must_end, may_end = self.model.idle_bounds(now)
        turns = self.model.turns()
        report = self.engine.maintain(NS, no_deadline())
        ended = report.sessions_ended == 1
        assert (
            report.sessions_ended in (0, 1) and (ended or not must_end) and (may_end or not ended)
        )
        run, new = self.model.maintained(self._live(), ended, turns, now, crashed=False)
        self._report(report, run)
        assert report.resumed == int(self.resumed)
        self.resumed = False
        for what in ("expired", "topics_compressed", "moved_to_cold", "sessions_ended"):
            if getattr(run, what):
                event(f"maintenance: {what}")
        return multiple(*new)

    @rule(target=ids, days=DAYS, after=st.integers(0, 5))
    def maintenance_killed(self, days: float, after: int) -> object:
        """A maintenance run killed after `after` changes: the journal names it, and the next
        start-up finishes it. Each step is whole changes and idempotent, so the end state is
        that of one run (with the session's end as far as the killed run took it: a start-up
        counts its session as active again)."""
        self.clock.advance(days * DAY)
        self.engine.access.flush()
        now = self._now()
        turns, hot = self.model.turns(), self.model.hot_turns()
        writer = self.engine._writer
        commits = 0

        def dying(ops: list[Op]) -> list[Applied]:
            nonlocal commits
            if commits == after:
                raise KilledError
            commits += 1
            return Writer._commit(writer, ops)

        with patch.object(writer, "_commit", side_effect=dying):
            try:
                report = self.engine.maintain(NS, no_deadline())
            except KilledError:
                report = None
        if report is not None:  # it needed fewer changes: a whole run
            ended = report.sessions_ended == 1
            run, new = self.model.maintained(self._live(), ended, turns, now, crashed=False)
            self._report(report, run)
            self.resumed = False
            return multiple(*new)
        event("maintenance killed and resumed")
        self._restart(crash=True)
        live = self._live()
        moved = {live[mid].tier != Tier.HOT for mid in hot if mid in live}
        assert len(moved) <= 1, "a session's turns move to warm in one change"
        _, new = self.model.maintained(live, moved == {True}, turns, now, crashed=True)
        self.model.restarted(now)
        self.resumed = True
        return multiple(*new)

    @rule()
    def checkpoint(self) -> None:
        self.engine._checkpoint.save()  # what maintenance does now and then

    def _restart(self, crash: bool) -> None:
        eng = self.engine
        if crash:  # the process dies: the vector snapshot and the uncounted accesses are lost
            eng.maintenance._stop.set()
            if eng.maintenance._thread is not None:
                eng.maintenance._thread.join()
            eng.indexer._stop.set()
            eng.indexer._wake.set()
            if eng.indexer._thread is not None:
                eng.indexer._thread.join()
            eng._encoding.close()
            eng._keywords.close()
            eng._store.close()
        else:
            eng.close()
        self.engine = self._open()

    @rule(target=ids, crash=st.booleans())
    def restart(self, crash: bool) -> object:
        """A crash, or a clean stop: its last tick ends the session if it is idle."""
        now = self._now()
        new: list[str] = []
        if crash:
            self._restart(crash=True)
        else:
            must_end, may_end = self.model.idle_bounds(now)
            before = now - SETTINGS.hot.ttl_seconds
            idle = (NS, SESSION) in self.engine.lifecycle.sessions.idle(before)
            assert (idle or not must_end) and (may_end or not idle), (idle, must_end, may_end)
            turns = self.model.turns()
            self._restart(crash=False)
            new = self.model.session_summaries(self._live(), turns)
            if idle:
                self.model.end_session()
            else:
                assert not new, new
        self.model.restarted(now)
        self.resumed = False
        return multiple(*new)

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def the_store_holds_the_model(self) -> None:
        live = self._live()
        model = self.model.mem
        assert not set(model) - set(live), ("deleted, but policy keeps", set(model) - set(live))
        assert not set(live) - set(model), (
            "kept, but deleted or never made",
            set(live) - set(model),
        )
        for mid, m in model.items():
            m.agrees(live[mid])
        for mid in sorted(self.model.gone)[:5]:
            with pytest.raises(NotFoundError):
                self.engine.get(NS, mid, False)

    @invariant()
    def an_obsolete_record_leads_to_a_current_one(self) -> None:
        live = self._live()
        for mid, rec in live.items():
            if not rec.obsolete:
                continue
            seen = {mid}
            at = rec.superseded_by
            while at in live and live[at].obsolete:
                assert at not in seen, ("a cycle of supersessions", seen)
                seen.add(at)
                at = live[at].superseded_by
            assert at in live or at in self.model.gone, (mid, at)

    @invariant()
    def compressed_originals_are_cold_and_linked(self) -> None:
        live = self._live()
        gone = self.model.gone
        for mid, rec in live.items():
            if rec.compressed_into:
                assert rec.tier == Tier.COLD, rec
                into = live.get(rec.compressed_into)
                assert rec.compressed_into in gone or (
                    into is not None and into.kind == Kind.SUMMARY and mid in into.derived_from
                ), rec
            m = self.model.mem.get(mid)
            if m is not None and m.summary == "topic":
                for orig in rec.derived_from:
                    assert orig in gone or live[orig].compressed_into == mid, (mid, orig)

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
        for ns, i in fresh.namespaces().items():  # the obsolete counts a Recall reads
            assert cols.obsolete_count(cols.ns_id(ns)) == fresh.obsolete_count(i), ns
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
    def each_record_is_in_exactly_one_tier_and_pocket(self) -> None:
        eng = self.engine
        eng.indexer.catch_up()
        stats = eng.stats(NS).namespaces
        pockets = {p.name: p.size for p in stats[0].pockets} if stats else {}
        assert sum(pockets.values()) == len(self.model.mem), pockets
        parts = eng._vectors.partitions(NS)
        live = self._live()
        listed: dict[str, int] = {}
        for mid, rec in live.items():
            key = rec.key
            probe = np.array([key], dtype=np.int64)
            places = [name for name, part in parts.items() if part.get(probe).any()]
            pocket = eng.columns.catalog.scheme.key_of(rec)
            assert eng.columns.tier[key] == int(rec.tier), mid
            if pocket.tier == Tier.HOT:  # the hot tier holds it, no vector index does
                assert eng.hot.contains(key) and places == [], (mid, places)
            else:
                assert not eng.hot.contains(key), (mid, rec.tier, "still in the hot tier")
                assert places == [pocket.name], (mid, places, pocket.name)
                cold = isinstance(parts[pocket.name], ColdVectorIndex)
                assert cold == (pocket.tier == Tier.COLD), (mid, pocket.name)
            listed[pocket.name] = listed.get(pocket.name, 0) + 1
        assert listed == {name: n for name, n in pockets.items() if n}, (listed, pockets)

    @invariant()
    def an_indexed_turn_carries_its_current_neighbours(self) -> None:
        """A warm or cold turn's indexed vector is its own vector mixed with its session
        neighbours' as they are now: a turn written, forgotten or moved since re-indexed its
        neighbours (the cold archive keeps half-precision vectors: a looser bound there)."""
        eng = self.engine
        eng.indexer.catch_up()
        ctx = SETTINGS.context
        for rec in self._live().values():
            if rec.kind != Kind.EPISODE or rec.tier == Tier.HOT:
                continue
            key = rec.key
            pocket = eng.columns.catalog.scheme.key_of(rec)
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
            bound = 0.995 if rec.tier == Tier.COLD else 0.999
            assert float(got @ want) > bound, (rec.memory_id, rec.tier, float(got @ want))


def test_the_engine_agrees_with_its_model() -> None:
    run_state_machine(EngineMachine, 40, 25)


@pytest.mark.slow
def test_the_engine_agrees_with_its_model_long() -> None:
    run_state_machine(EngineMachine, 300, 25)
