"""The plain-Python model that the engine's state machine (`test_engine_state.py`) checks against.

It holds each live memory as the engine should store it and says what every change should do:
a write (merged into its twin, or stored and superseding what it states a new value of), a client
supersession, reconciliation, unsupersede, a session's end, and a maintenance run (expiry,
topic compression, retention's moves to cold). Two things it cannot know exactly, and bounds
instead of guessing: a session's last activity (which writes touch its hot turns) and a record's
last access (which reads were folded in before a crash lost them); where the bounds leave the
outcome open, the machine reads it from the engine and the model checks it against them. A
session's summaries are read back too (which sentences the summariser keeps is its business),
and checked: summaries, warm, drawn from the session's current turns only.

The texts are built so that each decision is clear-cut: `vector_of` gives every note a vector
unrelated to the others, and the texts of one family (one thing whose value changes: a number,
a negation) vectors that lie close (cosine ≈ 0.89, between `supersede.cosine` and `dedup_cosine`,
above `compression.cluster_cosine`), so a family is one cluster and one slot.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from server.core.memory.model import GateDecision, Kind, Record, Tier, WriteResult
from server.core.settings import MemorySettings
from tests.conftest import DAY, DIM

NS = "sm"
SESSION = "s"
# Notes: nothing in them is a value that could change.
NOTES = [f"Note {w} about the {t}" for w in ("alpha", "beta", "gamma") for t in ("vpn", "wiki")]
# Families: the values one thing takes, with the reason code a newer value supersedes with.
FAMILIES = {
    "wifi": (
        "value:number",
        [f"the office wifi channel is {n}" for n in (1, 6, 11, 36, 40, 44, 48)],
    ),
    "android": ("value:negation", ["the app does not support android", "the app supports android"]),
}
FAMILY_OF = {text: name for name, (_, texts) in FAMILIES.items() for text in texts}
VALUES = list(FAMILY_OF)
TEXTS = NOTES + VALUES
KINDS = [Kind.FACT, Kind.PREFERENCE, Kind.EPISODE, Kind.SKILL]
VALUE_KINDS = (Kind.FACT, Kind.PREFERENCE)  # what supersession without ids weighs
TOPIC = "net"


def _unit(seed_text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v)
    return out


def vector_of(text: str) -> np.ndarray:
    """One fixed unit vector per text: a family's texts near its centre, any other text
    unrelated to every other (in 512 dimensions two random directions are ~orthogonal)."""
    family = FAMILY_OF.get(text)
    if family is None:
        return _unit(text)
    v = _unit(f"family {family}") + 0.35 * _unit(text)
    out: np.ndarray = (v / np.linalg.norm(v)).astype(np.float32)
    return out


class StandInEncoder:
    """The text encoder port over `vector_of`: session and topic summaries get their vectors
    the way the test's writes do, and the lifecycle's summariser has an encoder to run on."""

    dim = DIM

    def encode(self, texts: Iterable[str]) -> np.ndarray:
        return np.stack([vector_of(t) for t in texts])


def slot(text: str) -> str:
    """What a text is said about: its family, or (a note) the text itself."""
    return FAMILY_OF.get(text, text)


@dataclass
class Mem:
    """One live memory as the engine should hold it."""

    text: str
    kind: Kind
    importance: int
    created: float
    stored: float
    expires: float
    topic: str = ""
    session: str = ""
    tier: Tier = Tier.WARM
    obsolete: bool = False
    superseded_by: str = ""
    reason: str = ""
    compressed_into: str = ""
    derived_from: frozenset[str] = frozenset()
    summary: str = ""  # "session" or "topic" for a summary
    # The latest time a read may have counted an access, and how many may have been counted.
    seen: float = 0.0
    hits: int = 0

    @staticmethod
    def of(rec: Record, summary: str) -> Mem:
        """A memory the engine made (a summary), as the model takes it on."""
        assert rec.expires_at is not None
        return Mem(
            text=rec.text,
            kind=rec.kind,
            importance=rec.importance,
            created=rec.created_at,
            stored=rec.stored_at,
            expires=rec.expires_at,
            topic=rec.topic,
            session=rec.session_id,
            tier=rec.tier,
            derived_from=frozenset(rec.derived_from),
            summary=summary,
            seen=rec.stored_at,
        )

    def agrees(self, rec: Record) -> None:
        """Get's record says what the model holds."""
        got = (
            rec.text,
            rec.kind,
            rec.importance,
            rec.created_at,
            rec.stored_at,
            rec.expires_at,
            rec.topic,
            rec.session_id,
            rec.tier,
            rec.obsolete,
            rec.superseded_by,
            rec.supersede_reason,
            rec.compressed_into,
            frozenset(rec.derived_from),
        )
        want = (
            self.text,
            self.kind,
            self.importance,
            self.created,
            self.stored,
            self.expires,
            self.topic,
            self.session,
            self.tier,
            self.obsolete,
            self.superseded_by,
            self.reason,
            self.compressed_into,
            self.derived_from,
        )
        assert got == want, (rec.memory_id, got, want)


@dataclass(frozen=True)
class Write:
    """One memory written by the machine (an upsert when it names its id)."""

    text: str
    kind: Kind
    importance: int
    topic: str = ""
    memory_id: str = ""
    supersedes: tuple[str, ...] = ()
    reason: str = "client"


@dataclass(frozen=True)
class Run:
    """What a maintenance run should report (`MaintainReport`), given what the model read back."""

    sessions_ended: int
    moved_to_warm: int
    expired: int
    topics_compressed: int
    compressed_records: int
    moved_to_cold: int


@dataclass
class Model:
    s: MemorySettings
    mem: dict[str, Mem] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)  # forgotten or expired
    # The session's last activity lies in [sure, maybe] while it has hot turns: `sure` is the
    # last time a hot turn was surely written, `maybe` the last time one may have been (a
    # Forget rewrites its neighbours, an upsert that moves a turn its old ones).
    sure: float = -np.inf
    maybe: float = -np.inf

    # -- what a write does ------------------------------------------------------------------

    def twins(self, text: str, kind: Kind) -> set[str]:
        """The records a new (text, kind) merges into: a current episode of the session with the
        same words (any tier), or a current warm record of the same kind and words (the probe
        reads the warm index: a cold twin is not found)."""
        return {
            mid
            for mid, m in self.mem.items()
            if m.text == text
            and m.kind == kind
            and not m.obsolete
            and (m.session == SESSION if kind == Kind.EPISODE else m.tier == Tier.WARM)
        }

    def value_targets(self, text: str, kind: Kind, now: float) -> dict[str, str]:
        """The current warm records of the same kind that a new `text` states a new value of
        (its family's other values, said earlier), with the reason code."""
        family = FAMILY_OF.get(text)
        if family is None or kind not in VALUE_KINDS:
            return {}
        code = FAMILIES[family][0]
        return {
            mid: code
            for mid, m in self.mem.items()
            if m.kind == kind
            and FAMILY_OF.get(m.text) == family
            and m.text != text
            and not m.obsolete
            and m.tier == Tier.WARM
            and m.created < now
        }

    def crowded(self, text: str, kind: Kind, cap: int) -> bool:
        """Whether more than `cap` warm records of `kind` lie as close to `text` as its family
        (obsolete ones too): the write's probe reads only the nearest `cap` of the warm index,
        which may then miss a current one. The machine does not write then."""
        if kind == Kind.EPISODE:  # merged by a lookup of the session's texts, not a probe
            return False
        near = [
            m
            for m in self.mem.values()
            if m.kind == kind and m.tier == Tier.WARM and slot(m.text) == slot(text)
        ]
        return len(near) > cap

    def write(self, w: Write, now: float, mid: str, decision: GateDecision) -> dict[str, str]:
        """Check a write that the engine answered with `mid` and `decision` against the model,
        apply it, and return the supersessions it should have made (id -> reason code)."""
        expires = now + self.s.write_policy.expire_after_days * DAY
        session = SESSION if w.kind == Kind.EPISODE else ""
        arrival = Tier.HOT if w.kind == Kind.EPISODE else Tier.WARM  # an episode of now: hot
        marks = {t: w.reason for t in w.supersedes}
        if w.memory_id:  # an upsert rewrites the content; the server-set state stays
            assert decision == GateDecision.STORED and mid == w.memory_id, (mid, decision)
            prev = self.mem.get(mid)
            m = Mem(w.text, w.kind, w.importance, now, now, expires, w.topic, session, arrival)
            m.seen = now
            if prev is not None:
                m.stored, m.seen, m.hits = prev.stored, prev.seen, prev.hits
                m.obsolete, m.superseded_by = prev.obsolete, prev.superseded_by
                m.reason, m.compressed_into = prev.reason, prev.compressed_into
                m.derived_from = prev.derived_from
                m.tier = Tier.COLD if prev.tier == Tier.COLD else arrival
            self.mem[mid] = m
        else:
            twins = self.twins(w.text, w.kind) - set(w.supersedes)
            if twins:  # the same words and kind: merged, which states no new value
                assert decision == GateDecision.MERGED and mid in twins, (mid, decision, twins)
                m = self.mem[mid]
                m.importance = max(m.importance, w.importance)
                m.expires = max(m.expires, expires)
            else:
                assert decision == GateDecision.STORED, (mid, decision)
                assert mid not in self.mem and mid not in self.gone, mid
                for t, code in self.value_targets(w.text, w.kind, now).items():
                    marks.setdefault(t, code)
                m = Mem(w.text, w.kind, w.importance, now, now, expires, w.topic, session, arrival)
                m.seen = now
                self.mem[mid] = m
        hot = m.tier == Tier.HOT
        for t, why in marks.items():
            hot |= self.mem[t].tier == Tier.HOT
            self.supersede(t, mid, why)
        self.touched(now, sure=hot)
        return marks

    def check(self, r: WriteResult, marks: dict[str, str]) -> None:
        """A write's reply: the record it names as the model holds it, and what it superseded."""
        m = self.mem[r.memory_id]
        assert (r.tier, r.importance, r.expires_at) == (m.tier, m.importance, m.expires), r
        said = {(s.memory_id, s.superseded_by, s.reason) for s in r.superseded}
        assert said == {(t, r.memory_id, why) for t, why in marks.items()}, (said, marks)

    def supersede(self, mid: str, by: str, reason: str) -> None:
        m = self.mem[mid]
        m.obsolete, m.superseded_by, m.reason = True, by, reason

    def unsupersede(self, mid: str) -> bool:
        """Make `mid` current again; whether it was obsolete."""
        m = self.mem[mid]
        was = m.obsolete
        m.obsolete, m.superseded_by, m.reason = False, "", ""
        return was

    def reconciled(self, text: str, now: float) -> set[str]:
        """What an authoritative fact contradicts: the current facts and preferences a Recall
        finds (warm, unexpired) that hold another value of its family."""
        family = FAMILY_OF.get(text)
        return {
            mid
            for mid, m in self.mem.items()
            if family is not None
            and m.kind in VALUE_KINDS
            and FAMILY_OF.get(m.text) == family
            and m.text != text
            and not m.obsolete
            and m.tier == Tier.WARM
            and m.expires > now
        }

    def forgotten(self, mids: Iterable[str]) -> None:
        for mid in mids:
            del self.mem[mid]
            self.gone.add(mid)

    def read(self, mids: Iterable[str], now: float) -> None:
        """Reads that count an access (Recall's hits, Get): they keep a memory fresh."""
        for mid in mids:
            m = self.mem[mid]
            m.seen, m.hits = now, m.hits + 1

    # -- the session's activity ---------------------------------------------------------------

    def hot_turns(self) -> set[str]:
        return {mid for mid, m in self.mem.items() if m.tier == Tier.HOT}

    def touched(self, now: float, sure: bool = False) -> None:
        """A change at `now` that may have written a hot turn (`sure`: did)."""
        self.maybe = now
        if sure:
            self.sure = now

    def restarted(self, now: float) -> None:
        """At start-up the session memory is loaded from the store: active as of now."""
        self.sure = self.maybe = now

    def idle_bounds(self, now: float) -> tuple[bool, bool]:
        """(must end, may end): whether the session is surely, or possibly, idle past the TTL
        at `now` (a session without hot turns is none)."""
        if not self.hot_turns():
            return False, False
        before = now - self.s.hot.ttl_seconds
        return self.maybe < before, self.sure < before

    # -- a session's end ----------------------------------------------------------------------

    def turns(self) -> set[str]:
        """The session's turns a summary may be drawn from: current, not summaries."""
        return {
            mid
            for mid, m in self.mem.items()
            if m.session == SESSION and m.kind != Kind.SUMMARY and not m.obsolete
        }

    def session_summaries(self, live: dict[str, Record], turns: set[str]) -> list[str]:
        """Take on the session summaries the engine wrote (each drawn from `turns`, the turns
        that were current when it ended), and the ones it merged a summary into (their expiry
        and importance only rise); return the new ids."""
        new = []
        for mid, rec in live.items():
            if rec.kind != Kind.SUMMARY or rec.session_id != SESSION:
                continue
            old = self.mem.get(mid)
            if old is None:
                assert mid not in self.gone and rec.tier == Tier.WARM, rec
                assert set(rec.derived_from) <= turns, (mid, rec.derived_from, turns)
                assert not rec.obsolete and not rec.compressed_into, rec
                self.mem[mid] = Mem.of(rec, "session")
                new.append(mid)
            else:
                assert rec.expires_at is not None and rec.expires_at >= old.expires, rec
                assert rec.importance >= old.importance, rec
                old.expires, old.importance = rec.expires_at, rec.importance
        return new

    def end_session(self) -> int:
        """The session's hot turns move to warm; return how many."""
        hot = self.hot_turns()
        for mid in hot:
            self.mem[mid].tier = Tier.WARM
        return len(hot)

    # -- a maintenance run ------------------------------------------------------------------

    def due_expiry(self, now: float) -> list[str]:
        """Past `expires_at`, whatever the tier (cold records are not deleted for their age:
        `retention.cold_max_age_days` is unset)."""
        assert self.s.lifecycle.retention.cold_max_age_days is None
        return [mid for mid, m in self.mem.items() if m.expires <= now]

    def topics(self) -> list[frozenset[str]]:
        """The groups a run compresses: more than `compress_after_count` current warm memories
        (summaries aside) with one topic label, or, without one, facts or preferences of one
        kind in one family (their vectors' cluster: a note's copies share a vector)."""
        groups: dict[tuple[str, str, Kind | None], set[str]] = {}
        for mid, m in self.mem.items():
            if m.tier != Tier.WARM or m.obsolete or m.kind == Kind.SUMMARY:
                continue
            if m.topic:
                groups.setdefault(("topic", m.topic, None), set()).add(mid)
            elif m.kind in VALUE_KINDS:
                groups.setdefault(("cluster", slot(m.text), m.kind), set()).add(mid)
        limit = self.s.lifecycle.compression.compress_after_count
        return [frozenset(g) for g in groups.values() if len(g) > limit]

    def compressed(self, group: frozenset[str], summary_id: str, rec: Record, now: float) -> None:
        """Check the topic summary the engine wrote for `group` and move its originals to cold."""
        members = [self.mem[mid] for mid in group]
        assert rec.kind == Kind.SUMMARY and rec.tier == Tier.WARM and not rec.session_id, rec
        assert rec.stored_at == now and rec.topic == members[0].topic, rec
        assert rec.created_at == max(m.created for m in members), rec
        assert rec.importance == max(m.importance for m in members), rec
        assert rec.expires_at == max(m.expires for m in members), rec
        self.mem[summary_id] = Mem.of(rec, "topic")
        for m in members:
            m.tier, m.compressed_into = Tier.COLD, summary_id

    def retention_bounds(self, m: Mem, now: float) -> tuple[bool, bool]:
        """(must go cold, may go cold) for a warm memory: its retention with the freshest and
        the stalest last access it may have (any read since it was stored, or none). An
        obsolete memory never goes cold: a question about the past asks for it."""
        r = self.s.lifecycle.retention
        if m.stored > now - r.min_age_days * DAY or m.obsolete:  # an obsolete one stays warm
            return False, False
        imp = min(max((m.importance - 1) / 4, 0.0), 1.0)
        total = r.w_importance + r.w_freshness

        def fresh(since: float) -> float:
            return float(0.5 ** (max(now - since, 0.0) / DAY / r.half_life_days))

        accessed = m.hits / (m.hits + r.access_saturation)
        best = 1.0 - (1.0 - fresh(max(m.seen, m.stored))) * (1.0 - accessed)
        high = (r.w_importance * imp + r.w_freshness * best) / total
        low = (r.w_importance * imp + r.w_freshness * fresh(m.stored)) / total
        margin = 1e-4  # the kernel returns float32
        return high < r.threshold - margin, low < r.threshold + margin

    def maintained(
        self, live: dict[str, Record], ended: bool, turns: set[str], now: float, crashed: bool
    ) -> tuple[Run, list[str]]:
        """Apply a maintenance run at `now` whose session step `ended` the session (or not), as
        read back in `live` (the engine's records after it): session summaries, then expiry,
        then compression, then retention's moves. Returns what the run should report and the
        ids of the summaries it made. `crashed`: the run was killed and finished at start-up,
        so its session step may have written the summaries and not moved the turns."""
        new = self.session_summaries(live, turns)
        assert ended or crashed or not new, new
        moved = self.end_session() if ended else 0
        expired = self.due_expiry(now)
        if any(self.mem[mid].session == SESSION for mid in expired) and self.hot_turns():
            self.touched(now)  # their neighbours are rewritten
        self.forgotten(expired)
        groups = self.topics()
        summaries = {
            mid: rec for mid, rec in live.items() if mid not in self.mem and mid not in self.gone
        }
        assert len(summaries) == len(groups), (sorted(summaries), groups)
        for mid, rec in summaries.items():
            group = frozenset(rec.derived_from)
            assert group in groups, (mid, rec.derived_from, groups)
            self.compressed(group, mid, rec, now)
            new.append(mid)
        to_cold = 0
        for mid, m in self.mem.items():
            if m.tier != Tier.WARM:
                continue
            must, may = self.retention_bounds(m, now)
            assert mid in live, (mid, m, "deleted, but policy keeps it")
            tier = live[mid].tier
            assert tier in (Tier.WARM, Tier.COLD), (mid, tier)
            if tier == Tier.COLD:
                assert may, (mid, m, "moved to cold, but its retention keeps it warm")
                m.tier = Tier.COLD
                to_cold += 1
            else:
                assert not must, (mid, m, "its retention fell below the threshold, still warm")
        run = Run(
            sessions_ended=int(ended),
            moved_to_warm=moved,
            expired=len(expired),
            topics_compressed=len(groups),
            compressed_records=sum(len(g) for g in groups),
            moved_to_cold=to_cold,
        )
        return run, new
