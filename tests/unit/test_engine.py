"""The memory engine over the real adapters: write gate, hot tier, recall ordering, restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import msgspec
import numpy as np
import pytest

from server.adapters.onnx_encoder import OnnxTextEncoder
from server.core.deadline import Deadline
from server.core.engine import MemoryEngine
from server.core.errors import DeadlineExceededError, FailedPreconditionError, NotFoundError
from server.core.memory.model import (
    GateDecision,
    Kind,
    MemoryFilter,
    Modality,
    NewMemory,
    RecallQuery,
    Record,
    Tier,
    WriteHints,
)
from server.core.memory.ports import KeywordQuery, KeywordResult
from server.core.settings import MemorySettings
from tests.conftest import DAY, FakeClock, near, unit_vec

NS = "tenant-a:alice"


def mem(
    text: str = "", kind: Kind = Kind.FACT, vector: np.ndarray | None = None, **kw: object
) -> NewMemory:
    hints = kw.pop("hints", WriteHints())
    supersedes = kw.pop("supersedes", ())
    importance = kw.pop("importance", None)
    created_at = kw.pop("created_at", None)
    rec = Record(
        memory_id=str(kw.pop("memory_id", "")),
        namespace=str(kw.pop("namespace", NS)),
        kind=kind,
        text=text,
        **kw,
    )  # type: ignore[arg-type]
    return NewMemory(
        record=rec,
        vector=vector,
        explicit_importance=importance,  # type: ignore[arg-type]
        hints=hints,
        supersedes=supersedes,
        client_memory_id=bool(rec.memory_id),
        created_at=created_at,
    )  # type: ignore[arg-type]


def ids(engine: MemoryEngine, **q: object) -> list[str]:
    res = engine.recall(RecallQuery(namespace=str(q.pop("namespace", NS)), **q))  # type: ignore[arg-type]
    return [h.record.memory_id for h in res.hits]


def test_a_write_is_readable_at_once_then_indexed(engine: MemoryEngine) -> None:
    r = engine.remember([mem("Alice's laptop is a ThinkPad X1 Carbon")])[0]
    assert r.decision == GateDecision.STORED and r.tier == Tier.WARM  # a fact is warm at once
    # Before the indexer runs, the hot tier serves both channels.
    assert ids(engine, text="ThinkPad") == [r.memory_id]
    engine.indexer.catch_up()
    assert engine.stats(NS).pending_index == 0
    assert ids(engine, text="ThinkPad") == [r.memory_id]


def test_small_talk_is_rejected_and_not_stored(engine: MemoryEngine) -> None:
    r = engine.remember([mem("hello, thanks!", kind=Kind.EPISODE)])[0]
    assert r.decision == GateDecision.REJECTED and r.memory_id == ""
    assert "min_importance" in r.reason
    assert engine.stats(NS).namespaces == ()


def test_expiry_defaults_to_ninety_days(engine: MemoryEngine, clock: FakeClock) -> None:
    r = engine.remember([mem("The VPN endpoint is vpn.example.com")])[0]
    assert r.expires_at == pytest.approx(clock.now() + 90 * DAY)


def test_near_duplicates_merge_in_the_same_namespace_and_kind(engine: MemoryEngine) -> None:
    rng = np.random.default_rng(1)
    v = unit_vec(rng)
    first = engine.remember([mem("Alice prefers dark mode", Kind.PREFERENCE, v, tags=("ui",))])[0]
    engine.indexer.catch_up()  # the duplicate is found in the warm index too
    dup = engine.remember(
        [mem("Alice likes dark mode", Kind.PREFERENCE, near(v, rng, 0.005), tags=("theme",))]
    )[0]
    assert dup.decision == GateDecision.MERGED and dup.memory_id == first.memory_id
    other_kind = engine.remember([mem("Alice likes dark mode", Kind.FACT, v)])[0]
    other_ns = engine.remember([mem("Alice likes dark mode", Kind.PREFERENCE, v, namespace="bob")])[
        0
    ]
    assert other_kind.decision == other_ns.decision == GateDecision.STORED
    rec, _ = engine.get(NS, first.memory_id, False)
    assert rec.text == "Alice likes dark mode" and set(rec.tags) == {"ui", "theme"}
    # Within one batch, too.
    w = unit_vec(rng)
    a, b = engine.remember(
        [
            mem("Restart the agent", Kind.SKILL, w),
            mem("Restart the agent!", Kind.SKILL, near(w, rng, 0.001)),
        ]
    )
    assert (a.decision, b.decision) == (
        GateDecision.STORED,
        GateDecision.MERGED,
    ) and a.memory_id == b.memory_id


def test_dedup_threshold_is_configurable(engine_factory: Callable[..., MemoryEngine]) -> None:
    s = MemorySettings()
    s = msgspec.structs.replace(
        s, write_policy=msgspec.structs.replace(s.write_policy, dedup_cosine=0.999)
    )
    engine = engine_factory(s)
    rng = np.random.default_rng(2)
    v = unit_vec(rng)
    engine.remember([mem("a", Kind.FACT, v)])
    assert (
        engine.remember([mem("b", Kind.FACT, near(v, rng, 0.05))])[0].decision
        == GateDecision.STORED
    )


def test_screenshot_found_only_by_vector_is_not_buried_by_text_hits(engine: MemoryEngine) -> None:
    """Ordering case (a), seed 000 §4.2."""
    rng = np.random.default_rng(3)
    topic = unit_vec(rng)
    # The screenshot is close to the question (cosine ~0.97); the notes share its keywords but are
    # only loosely related (cosine ~0.4): the situation of seed 000 §4.2.
    shot = engine.remember(
        [mem("", Kind.OBSERVATION, near(topic, rng, 0.01), modality=Modality.IMAGE, importance=4)]
    )[0]
    texts = [
        engine.remember(
            [
                mem(
                    f"截图 里的 报错 note {i}: restart the sync service",
                    Kind.OBSERVATION,
                    near(topic, rng, 0.12),
                    importance=4,
                )
            ]
        )[0]
        for i in range(6)
    ]
    engine.indexer.catch_up()
    q = near(topic, rng, 0.01)
    with_cue = ids(engine, text="这张截图里的报错是什么", vector=q)
    assert with_cue[0] == shot.memory_id
    # Without the cue the equal weights let the keyword matches win: the cue is what saves it.
    plain = ids(engine, text="报错 restart sync service", vector=q, top_k=7)
    assert plain.index(shot.memory_id) > 0
    assert {t.memory_id for t in texts} <= set(plain)
    res = engine.recall(RecallQuery(namespace=NS, text="this screenshot", vector=q))
    assert (res.vector_weight, res.keyword_weight) == (0.75, 0.25)
    assert (
        engine.recall(RecallQuery(namespace=NS, vector=q, image_query=True)).vector_weight == 0.75
    )


def test_an_old_fact_ranks_below_a_contradicting_new_one(
    engine: MemoryEngine, clock: FakeClock
) -> None:
    """Ordering case (b), seed 000 §4.3."""
    old = engine.remember(
        [mem("Version 2 of the app does not support Android", created_at=clock.now() - 40 * DAY)]
    )[0]
    new = engine.remember([mem("Version 2 of the app now supports Android phones")])[0]
    # No client said so: the negation that flipped on the same thing is what supersedes.
    assert [(s.memory_id, s.superseded_by, s.reason) for s in new.superseded] == [
        (old.memory_id, new.memory_id, "value:negation")
    ]
    rec, _ = engine.get(NS, old.memory_id, False)
    assert rec.obsolete and rec.superseded_by == new.memory_id
    assert rec.supersede_reason == "value:negation"
    engine.indexer.catch_up()
    q = "Does version 2 of the app support Android"
    assert old.memory_id not in ids(engine, text=q, top_k=10)
    res = engine.recall(RecallQuery(namespace=NS, text=q, include_obsolete=True))
    order = [h.record.memory_id for h in res.hits]
    assert order.index(new.memory_id) < order.index(old.memory_id)
    old_hit = next(h for h in res.hits if h.record.memory_id == old.memory_id)
    assert old_hit.score.decay == pytest.approx(0.4)
    # Episodes do not decay.
    ep = engine.remember(
        [
            mem(
                "We shipped version 2 to the Android beta group",
                Kind.EPISODE,
                created_at=clock.now() - 40 * DAY,
            )
        ]
    )[0]
    hit = next(
        h
        for h in engine.recall(RecallQuery(namespace=NS, text="Android beta")).hits
        if h.record.memory_id == ep.memory_id
    )
    assert hit.score.decay == 1.0


def test_an_obsolete_record_never_comes_back(engine: MemoryEngine) -> None:
    """Ordering case (c)."""
    old = engine.remember([mem("The office wifi password is hunter2")])[0]
    new = engine.remember(
        [mem("The office wifi password is correct-horse", supersedes=(old.memory_id,))]
    )[0]
    for _ in range(2):  # before and after indexing
        got = ids(engine, text="office wifi password hunter2", top_k=10)
        assert old.memory_id not in got and new.memory_id in got
        engine.indexer.catch_up()
    rec, _ = engine.get(NS, old.memory_id, False)
    assert rec.obsolete and rec.superseded_by == new.memory_id
    # Asked for, it comes back, but below the current one even where it matches better.
    got = ids(engine, text="hunter2", top_k=10, include_obsolete=True, min_score=0.0)
    assert got.index(new.memory_id) < got.index(old.memory_id)
    with pytest.raises(NotFoundError):
        engine.remember([mem("x", supersedes=("no-such-id",))])


def test_exact_code_query_finds_its_record(engine: MemoryEngine) -> None:
    """Ordering case (d)."""
    target = engine.remember(
        [mem("Build failed: Error E1234 disk quota exceeded", Kind.OBSERVATION)]
    )[0]
    for i in range(20):
        engine.remember(
            [mem(f"Build {i} failed with error E{1200 + i} in module {i}", Kind.OBSERVATION)]
        )
    engine.indexer.catch_up()
    assert ids(engine, text="E1234")[0] == target.memory_id


def test_chinese_and_english_keywords_match(engine: MemoryEngine) -> None:
    zh = engine.remember([mem("用户只用安卓手机, 不用苹果", Kind.PREFERENCE)])[0]
    en = engine.remember([mem("The invoices were paid by wire transfer", Kind.FACT)])[0]
    engine.indexer.catch_up()
    assert ids(engine, text="安卓")[0] == zh.memory_id
    assert ids(engine, text="paying invoice")[0] == en.memory_id  # stemming


def test_expired_records_are_hidden_unless_asked(engine: MemoryEngine, clock: FakeClock) -> None:
    r = engine.remember([mem("Temporary access code 7781", expires_at=clock.now() + 60)])[0]
    assert ids(engine, text="access code 7781") == [r.memory_id]
    clock.advance(120)
    assert ids(engine, text="access code 7781") == []
    assert ids(engine, text="access code 7781", include_expired=True) == [r.memory_id]


def test_metadata_filters_apply_before_ranking(engine: MemoryEngine, clock: FakeClock) -> None:
    rng = np.random.default_rng(5)
    topic = unit_vec(rng)
    a = engine.remember(
        [mem("alpha", Kind.FACT, near(topic, rng, 0.3), session_id="s1", tags=("x",), importance=5)]
    )[0]
    b = engine.remember(
        [mem("beta", Kind.EPISODE, near(topic, rng, 0.3), session_id="s2", importance=3)]
    )[0]
    engine.indexer.catch_up()
    q = near(topic, rng, 0.1)

    def only(**f: object) -> list[str]:
        return ids(engine, vector=q, filter=MemoryFilter(**f), min_score=0.0)  # type: ignore[arg-type]

    assert only(session_id="s1") == [a.memory_id]
    assert only(kinds=(Kind.EPISODE,)) == [b.memory_id]
    assert only(tags=("x",)) == [a.memory_id]
    assert only(min_importance=4) == [a.memory_id]
    assert only(modalities=(Modality.IMAGE,)) == []
    assert only(created_after=clock.now() + 1) == []
    assert set(only(created_before=clock.now() + 1)) == {a.memory_id, b.memory_id}


def test_namespaces_never_cross(engine: MemoryEngine) -> None:
    engine.remember([mem("Carol's badge number is 4411", namespace="carol")])
    assert ids(engine, text="badge number 4411") == []
    assert len(ids(engine, namespace="carol", text="badge number 4411")) == 1


def test_forget_by_id_and_by_filter(engine: MemoryEngine) -> None:
    a = engine.remember([mem("Delete me: temporary token 99", session_id="s9")])[0]
    engine.remember([mem("Also temporary token 98", session_id="s9")])
    keep = engine.remember([mem("Keep me: permanent token 97", session_id="s1")])[0]
    assert engine.forget(NS, a.memory_id, None) == 1
    with pytest.raises(NotFoundError):
        engine.get(NS, a.memory_id, False)
    with pytest.raises(NotFoundError):
        engine.forget(NS, a.memory_id, None)
    assert engine.forget(NS, None, MemoryFilter(session_id="s9")) == 1
    engine.indexer.catch_up()
    assert ids(engine, text="token", top_k=10) == [keep.memory_id]


def test_client_memory_id_makes_remember_an_idempotent_upsert(engine: MemoryEngine) -> None:
    first = engine.remember([mem("Favourite editor: vim", memory_id="pref-editor")])[0]
    again = engine.remember([mem("Favourite editor: helix", memory_id="pref-editor")])[0]
    assert first.memory_id == again.memory_id == "pref-editor"
    assert engine.get(NS, "pref-editor", False)[0].text == "Favourite editor: helix"
    assert engine.stats(NS).namespaces[0].record_count == 1


def test_without_an_encoder_text_only_writes_fail_precisely(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    engine = engine_factory(use_encoder=False)
    with pytest.raises(FailedPreconditionError, match="encoder"):
        engine.remember([mem("no vector here")])
    rng = np.random.default_rng(0)
    assert (
        engine.remember([mem("with vector", vector=unit_vec(rng))])[0].decision
        == GateDecision.STORED
    )
    # A text-only Recall is encoded while its keyword channel runs: the failure still surfaces,
    # in a namespace that holds nothing too.
    for ns in (NS, "nobody-here"):
        with pytest.raises(FailedPreconditionError, match="encoder"):
            engine.recall(RecallQuery(namespace=ns, text="with vector"))


def test_restart_catches_the_indexes_up_from_the_store(
    engine_factory: Callable[..., MemoryEngine], clock: FakeClock
) -> None:
    engine = engine_factory()
    zebras = [
        "Zebras live in Kenya",
        "The zebra enclosure opens at 9",
        "Zebra stripes confuse flies",
        "Our mascot is a zebra named Zed",
        "Zebra crossings need white paint",
    ]
    lions = [
        "Lions sleep twenty hours a day",
        "The lion feed order is due Monday",
        "A lion cub was born in March",
        "Lion tickets cost 12 euros",
        "Leo the lion has a cold",
    ]
    done = engine.remember([mem(t) for t in zebras])
    engine.indexer.catch_up()
    engine.indexer.stop()  # snapshots the indexes here, then stops following the store
    pending = engine.remember([mem(t) for t in lions])
    # Go down with the indexes behind the store (as after a crash between snapshots).
    engine._keywords.close()
    engine._store.close()
    reopened = engine_factory()
    assert reopened.stats(NS).namespaces[0].record_count == 10
    got = set(ids(reopened, text="lion", top_k=10)) | set(ids(reopened, text="zebra", top_k=10))
    assert got == {r.memory_id for r in done + pending}
    reopened.indexer.catch_up()
    assert reopened.stats("").pending_index == 0


def test_writes_are_refused_not_hung_when_the_indexer_cannot_keep_up(
    engine_factory: Callable[..., MemoryEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    import server.core.memory.write.writer as writer_mod
    from server.core.errors import UnavailableError

    s = MemorySettings()
    s = msgspec.structs.replace(s, hot=msgspec.structs.replace(s.hot, max_pending_index=1))
    engine = engine_factory(s)
    engine.indexer.stop()  # an indexer that makes no progress
    monkeypatch.setattr(writer_mod, "BACKPRESSURE_TIMEOUT_S", 0.2)
    engine.remember([mem("The first fact fits"), mem("So does the second one, about llamas")])
    with pytest.raises(UnavailableError, match="waiting for the indexer"):
        engine.remember([mem("A third fact has to wait for the indexer")])


def test_a_question_about_time_is_not_decayed(engine: MemoryEngine, clock: FakeClock) -> None:
    """An old fact is what a temporal question asks for: "when did" and "上周" turn decay off."""
    old = engine.remember(
        [mem("The team moved the office to Lisbon", created_at=clock.now() - 40 * DAY)]
    )[0]
    engine.indexer.catch_up()
    for text, decayed in (
        ("where is the office", True),
        ("when did the team move the office", False),
        ("上周 office Lisbon", False),
        ("the office near Chicago this afternoon", True),  # words, not substrings
    ):
        hit = engine.recall(RecallQuery(namespace=NS, text=text, min_score=0.0)).hits[0]
        assert hit.record.memory_id == old.memory_id
        assert (hit.score.decay < 1.0) == decayed, text


def test_a_repeated_query_text_is_encoded_once(
    engine_factory: Callable[..., MemoryEngine], encoder: OnnxTextEncoder
) -> None:
    calls: list[int] = []

    class Counting:
        dim = encoder.dim

        def encode(self, texts: Sequence[str]) -> np.ndarray:
            calls.append(len(texts))
            return encoder.encode(texts)

    eng = engine_factory()
    eng._encoding._encoder = Counting()
    eng.remember([mem("The VPN password rotates monthly")])
    calls.clear()
    first = ids(eng, text="VPN password")
    again = ids(eng, text="VPN password")
    assert first == again and calls == [1]
    ids(eng, text="something else")
    assert calls == [1, 1]


def test_a_text_only_query_is_encoded_while_its_keyword_channel_runs(
    engine_factory: Callable[..., MemoryEngine],
    encoder: OnnxTextEncoder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The encoder is slow here; the keyword search must not wait for it."""
    started, searched = threading.Event(), threading.Event()

    class Slow:
        dim = encoder.dim

        def encode(self, texts: Sequence[str]) -> np.ndarray:
            started.set()
            assert searched.wait(60), "the keyword channel waited for the encoder"
            return encoder.encode(texts)

    eng = engine_factory()
    eng.remember([mem("The VPN password rotates monthly")])
    eng.indexer.catch_up()
    eng._encoding._encoder = Slow()
    search = eng._keywords.search

    def observed(q: KeywordQuery) -> KeywordResult:
        res = search(q)
        searched.set()
        return res

    monkeypatch.setattr(eng._keywords, "search", observed)
    res = eng.recall(RecallQuery(namespace=NS, text="VPN password"))
    assert started.is_set() and searched.is_set()
    assert [h.record.text for h in res.hits] == ["The VPN password rotates monthly"]
    assert res.hits[0].score.vector_hit and res.hits[0].score.keyword_hit


def test_waiting_for_the_query_vector_keeps_to_the_deadline(
    engine_factory: Callable[..., MemoryEngine], encoder: OnnxTextEncoder
) -> None:
    release = threading.Event()

    class Stuck:
        dim = encoder.dim

        def encode(self, texts: Sequence[str]) -> np.ndarray:
            release.wait(60)
            return encoder.encode(texts)

    eng = engine_factory()
    eng.remember([mem("The VPN password rotates monthly")])
    eng._encoding._encoder = Stuck()
    t0 = time.monotonic()
    try:
        with pytest.raises(DeadlineExceededError):
            eng.recall(RecallQuery(namespace=NS, text="VPN password"), Deadline(0.3))
        assert time.monotonic() - t0 < 30  # not the encoder's 60 s
    finally:
        release.set()
