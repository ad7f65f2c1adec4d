"""The keyword index (server/adapters/tantivy_index.py): analysis for English and Chinese, exact
identifiers, filters and pockets inside the index query, BM25 under the namespace's own
statistics, the speaker bag, the committed revision and the schema check on open."""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.adapters.tantivy_index import SCHEMA_VERSION, TantivyKeywordIndex
from server.core.memory.model import Kind, MemoryFilter, Modality, Record
from server.core.memory.ports import KeywordDoc, KeywordQuery, KeywordResult
from tests.conftest import DAY

NS = "tenant-a"
NOW = 1_800_000_000.0
HEAP = 15_000_000
POCKET = "fact/warm/text"


def doc(
    key: int,
    text: str,
    ns: str = NS,
    pocket: str = POCKET,
    context: tuple[tuple[int, str], ...] = (),
    **kw: object,
) -> KeywordDoc:
    kind = kw.pop("kind", Kind.FACT)
    created = kw.pop("created_at", NOW - DAY)
    rec = Record(
        memory_id=f"m{key}",
        namespace=ns,
        kind=kind,
        text=text,
        key=key,
        created_at=created,
        **kw,
    )
    return KeywordDoc(rec, pocket, context)


def query(
    text: str, ns: str = NS, flt: MemoryFilter | None = None, count: int = 50, **kw: object
) -> KeywordQuery:
    return KeywordQuery(ns, text, count, flt or MemoryFilter(), NOW, **kw)


def keys(res: KeywordResult) -> set[int]:
    return {k for k, _ in res.hits}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "keywords"


@pytest.fixture
def index(root: Path) -> Iterator[TantivyKeywordIndex]:
    idx = TantivyKeywordIndex(root, HEAP)
    yield idx
    idx.close()


def load(index: TantivyKeywordIndex, docs: list[KeywordDoc], rev: int = 1) -> None:
    index.upsert(docs)
    index.commit(rev)


def test_analysis_stems_latin_drops_stopwords_and_segments_chinese_words(
    index: TantivyKeywordIndex,
) -> None:
    assert index.analyze("Running E1234 RTX4090") == ["run", "e1234", "rtx4090"]
    assert index.analyze("What did I tell you about my shoes?") == ["tell", "shoe"]
    cjk = index.analyze("我的安卓手机")
    assert "安卓" in cjk and "手机" in cjk  # words, not bigrams across them
    assert "卓手" not in cjk and "我" not in cjk and "的" not in cjk  # function words go
    assert index.analyze("猫") == ["猫"]
    assert index.analyze("x" * 41 + " ok") == ["ok"]  # tokens over 40 bytes are dropped


def test_a_date_named_in_either_language_is_one_term(index: TantivyKeywordIndex) -> None:
    for text in ("on May 4th", "4 May", "the 4th of May", "5月4日", "5月4号"):
        assert "d0504" in index.analyze(text), text
    assert not any(t.startswith("d0") for t in index.analyze("in May I may go"))


def test_a_question_naming_a_day_finds_that_days_memory(index: TantivyKeywordIndex) -> None:
    day = 1_683_115_200.0  # 2023-05-03 12:00 UTC
    load(
        index,
        [
            doc(1, "we went to the museum", created_at=day),
            doc(2, "we went to the museum", created_at=day + 86_400),
        ],
    )
    for q in ("museum on May 4th", "我5月4日去了museum"):
        hits = index.search(query(q, speaker_weight=1.0)).hits
        assert [k for k, _ in hits] == [2, 1], q


def test_a_chinese_query_finds_its_bigram_anywhere_in_a_text(index: TantivyKeywordIndex) -> None:
    load(
        index,
        [doc(1, "我的安卓手机坏了"), doc(2, "苹果手机很好用"), doc(3, "安卓系统更新")],
    )
    res = index.search(query("安卓"))
    assert keys(res) == {1, 3}
    assert set(res.idf) == {"安卓"}
    assert res.postings == 2


def test_an_identifier_matches_exactly(index: TantivyKeywordIndex) -> None:
    load(
        index,
        [
            doc(1, "build failed with error E1234"),
            doc(2, "build failed with error E12345"),
            doc(3, "errors E1234 and E9999 together"),
            doc(4, "unrelated text"),
        ],
    )
    res = index.search(query("error E1234", identifiers=("e1234",)))
    assert res.exact == frozenset({1, 3})
    assert 2 in keys(res) and 4 not in keys(res)  # 2 matches "error" only
    both = index.search(query("E1234 E9999", identifiers=("e1234", "e9999")))
    assert both.exact == frozenset({3})
    # The exact set obeys the restriction too.
    too_early = index.search(
        query("E1234", identifiers=("e1234",), flt=MemoryFilter(created_before=NOW - 2 * DAY))
    )
    assert too_early.exact == frozenset()
    assert index.search(query("error E1234")).exact == frozenset()  # no identifiers asked


def test_bm25_uses_the_namespace_statistics(index: TantivyKeywordIndex) -> None:
    load(index, [doc(1, "apple banana"), doc(2, "cherry")])
    res = index.search(query("apple"))
    # N = 2, df = 1: idf = ln(1 + 1.5 / 1.5); length 2 against an average of 1.5.
    idf = math.log(2.0)
    norm = 0.5 * (1 - 0.75 + 0.75 * 2 / 1.5)  # k1 0.5, b 0.75 (the query's defaults)
    assert res.idf == {"appl": pytest.approx(idf)}
    assert res.postings == 1
    ((key, score),) = res.hits
    assert key == 1
    assert score == pytest.approx(idf * 1.5 / (1 + norm), rel=1e-6)


def test_scores_do_not_change_when_another_namespace_grows(index: TantivyKeywordIndex) -> None:
    load(index, [doc(1, "apple banana"), doc(2, "apple"), doc(3, "cherry pie")], rev=1)
    before = index.search(query("apple pie"))
    other = [doc(100 + i, "apple " * (i % 3 + 1) + "pie crust", ns="tenant-b") for i in range(40)]
    load(index, other, rev=2)
    after = index.search(query("apple pie"))
    assert after.hits == before.hits
    assert after.idf == before.idf
    assert after.postings == before.postings
    assert keys(after) == {1, 2, 3}
    assert keys(index.search(query("apple pie", ns="tenant-b"))) == {100 + i for i in range(40)}


def test_a_namespace_never_sees_another_namespaces_documents(index: TantivyKeywordIndex) -> None:
    load(index, [doc(1, "shared words"), doc(2, "shared words", ns="tenant-b")])
    assert keys(index.search(query("shared"))) == {1}
    assert keys(index.search(query("shared", ns="tenant-b"))) == {2}
    assert index.search(query("shared", ns="nobody")).hits == []


@pytest.fixture
def filtered(index: TantivyKeywordIndex) -> TantivyKeywordIndex:
    load(
        index,
        [
            doc(1, "apple one", kind=Kind.FACT, session_id="s1", importance=2, tags=("red",)),
            doc(2, "apple two", kind=Kind.PREFERENCE, session_id="s2", importance=4),
            doc(3, "apple three", created_at=NOW - 10 * DAY, tags=("green", "blue")),
            doc(4, "apple four", created_at=NOW - 5 * DAY, importance=5),
            doc(5, "apple five", obsolete=True),
            doc(6, "apple six", expires_at=NOW - 1.0),
            doc(7, "apple seven", expires_at=NOW),  # expires exactly now: expired
            doc(8, "apple eight", expires_at=NOW + DAY, modality=Modality.IMAGE),
        ],
    )
    return index


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (MemoryFilter(), {1, 2, 3, 4, 8}),
        (MemoryFilter(kinds=(Kind.PREFERENCE,)), {2}),
        (MemoryFilter(kinds=(Kind.PREFERENCE, Kind.FACT)), {1, 2, 3, 4, 8}),
        (MemoryFilter(modalities=(Modality.IMAGE,)), {8}),
        (MemoryFilter(session_id="s1"), {1}),
        (MemoryFilter(session_id="none"), set()),
        (MemoryFilter(tags=("red",)), {1}),
        (MemoryFilter(tags=("red", "blue")), {1, 3}),
        (MemoryFilter(min_importance=4), {2, 4}),
        # created_after is inclusive, created_before exclusive.
        (MemoryFilter(created_after=NOW - 5 * DAY), {1, 2, 4, 8}),
        (MemoryFilter(created_before=NOW - 5 * DAY), {3}),
        (MemoryFilter(created_after=NOW - 10 * DAY, created_before=NOW - 2 * DAY), {3, 4}),
    ],
)
def test_filters_restrict_inside_the_query(
    filtered: TantivyKeywordIndex, flt: MemoryFilter, expected: set[int]
) -> None:
    assert keys(filtered.search(query("apple", flt=flt))) == expected


def test_obsolete_and_expired_are_left_out_unless_asked_for(
    filtered: TantivyKeywordIndex,
) -> None:
    base = {1, 2, 3, 4, 8}
    assert keys(filtered.search(query("apple", include_obsolete=True))) == base | {5}
    assert keys(filtered.search(query("apple", include_expired=True))) == base | {6, 7}
    both = filtered.search(query("apple", include_obsolete=True, include_expired=True))
    assert keys(both) == set(range(1, 9))


def test_a_filter_does_not_change_the_scores(filtered: TantivyKeywordIndex) -> None:
    everything = dict(filtered.search(query("apple two")).hits)
    narrowed = dict(filtered.search(query("apple two", flt=MemoryFilter(min_importance=4))).hits)
    assert narrowed.keys() == {2, 4}
    for key, score in narrowed.items():
        assert score == pytest.approx(everything[key], rel=1e-9)


def test_a_selective_filter_still_gets_its_count(index: TantivyKeywordIndex) -> None:
    docs = [doc(i, "apple apple apple") for i in range(1, 41)]
    docs += [doc(100 + i, "apple pear", session_id="rare") for i in range(3)]
    load(index, docs)
    res = index.search(query("apple", count=3, flt=MemoryFilter(session_id="rare")))
    assert keys(res) == {100, 101, 102}


def test_pockets_restrict_to_the_named_pockets(index: TantivyKeywordIndex) -> None:
    load(
        index,
        [
            doc(1, "apple", pocket="p1"),
            doc(2, "apple", pocket="p2"),
            doc(3, "apple", pocket="p3"),
        ],
    )
    assert keys(index.search(query("apple"))) == {1, 2, 3}
    assert keys(index.search(query("apple", pockets=("p1",)))) == {1}
    assert keys(index.search(query("apple", pockets=("p1", "p3")))) == {1, 3}
    assert keys(index.search(query("apple", pockets=("elsewhere",)))) == set()


def test_a_query_naming_the_speaker_ranks_their_document_first(
    index: TantivyKeywordIndex,
) -> None:
    text = "went hiking in the mountains at the weekend"
    # Alice's document has the larger key, so a tie would put Bob first.
    load(index, [doc(1, text, speaker="Bob"), doc(2, text, speaker="Alice")])
    plain = index.search(query("where did Alice go hiking"))
    assert [k for k, _ in plain.hits] == [1, 2]
    assert plain.hits[0][1] == pytest.approx(plain.hits[1][1])
    weighted = index.search(query("where did Alice go hiking", speaker_weight=1.0))
    assert [k for k, _ in weighted.hits] == [2, 1]
    assert weighted.hits[0][1] > weighted.hits[1][1]
    assert weighted.hits[1][1] == pytest.approx(plain.hits[1][1])
    # A speaker named only in the query still finds their memories through the speaker bag.
    only_name = index.search(query("Alice", speaker_weight=1.0))
    assert [k for k, _ in only_name.hits] == [2]


def test_neighbours_terms_count_in_the_turn_at_their_weight(index: TantivyKeywordIndex) -> None:
    """BM25F: a neighbour's words add to the turn's own term counts at its distance's weight;
    a weight of 0 leaves the turn alone, and the earlier neighbour weighs as it is told."""
    load(
        index,
        [
            doc(1, "yes the blue one", context=((-1, "which kayak did you rent"),)),
            doc(2, "yes the blue one", context=((1, "which kayak did you rent"),)),
            doc(3, "i rented a kayak yesterday"),
        ],
    )
    none = index.search(query("kayak"))
    assert keys(none) == {3}  # no weight: a neighbour's words are not the turn's
    before = dict(index.search(query("kayak", context_weights=((-1, 0.5), (1, 0.25)))).hits)
    assert before[3] > before[1] > before[2] > 0
    # `score` gives the same numbers for memories the channel did not list.
    kq = query("kayak", context_weights=((-1, 0.5), (1, 0.25)))
    assert index.score(kq, [1, 2]) == pytest.approx({1: before[1], 2: before[2]})
    assert index.score(kq, [99]) == {}


def test_a_turn_holding_the_word_outranks_many_whose_neighbours_hold_it_in_the_first_stage(
    index: TantivyKeywordIndex,
) -> None:
    """More candidates than the count: the first stage must rank as the rescoring does, or the
    turn that says the word itself is cut before it is rescored."""
    ctx = ((-1, 0.2),)
    load(
        index,
        [doc(i, "yes sure", context=((-1, "kayak"),)) for i in range(1, 71)]
        + [doc(100, "I rented a kayak on the lake and it was fun and long and tiring too")],
    )
    hits = index.search(query("kayak", count=64, context_weights=ctx)).hits
    assert hits[0][0] == 100
    exact = index.score(query("kayak", context_weights=ctx), [100])[100]
    assert hits[0][1] == pytest.approx(exact)


def test_upsert_replaces_and_remove_deletes(index: TantivyKeywordIndex) -> None:
    load(index, [doc(1, "apple"), doc(2, "apple")], rev=1)
    index.upsert([doc(1, "banana")])
    index.remove(NS, [2])
    index.commit(2)
    assert index.search(query("apple")).hits == []
    assert keys(index.search(query("banana"))) == {1}


def test_changes_are_searchable_only_after_commit(index: TantivyKeywordIndex) -> None:
    load(index, [doc(1, "apple")], rev=1)
    index.upsert([doc(2, "apple")])
    assert keys(index.search(query("apple"))) == {1}
    index.commit(2)
    assert keys(index.search(query("apple"))) == {1, 2}


def test_the_committed_revision_survives_a_reopen(root: Path) -> None:
    idx = TantivyKeywordIndex(root, HEAP)
    assert idx.committed_rev() == 0
    load(idx, [doc(1, "apple pie")], rev=7)
    assert idx.committed_rev() == 7
    idx.upsert([doc(2, "apple tart")])  # never committed
    idx.close()

    again = TantivyKeywordIndex(root, HEAP)
    try:
        assert again.committed_rev() == 7
        assert keys(again.search(query("apple"))) == {1}
    finally:
        again.close()


def test_an_index_of_an_older_schema_is_wiped_on_open(root: Path) -> None:
    idx = TantivyKeywordIndex(root, HEAP)
    load(idx, [doc(1, "apple")], rev=5)
    idx.close()
    (root / "schema.json").write_text(json.dumps({"version": 1}))

    fresh = TantivyKeywordIndex(root, HEAP)
    try:
        assert fresh.committed_rev() == 0
        assert fresh.search(query("apple")).hits == []
        assert json.loads((root / "schema.json").read_text()) == {"version": SCHEMA_VERSION}
        load(fresh, [doc(2, "apple")], rev=1)
        assert keys(fresh.search(query("apple"))) == {2}
    finally:
        fresh.close()


def test_pocket_terms_counts_documents_per_pocket(index: TantivyKeywordIndex) -> None:
    load(
        index,
        [
            doc(1, "apple banana", pocket="p1"),
            doc(2, "apple apple", pocket="p1"),
            doc(3, "apple cherry", pocket="p2"),
            doc(4, "banana", pocket="p3"),
            doc(5, "apple banana cherry", ns="tenant-b", pocket="p1"),
        ],
    )
    apple, banana, cherry = index.analyze("apple banana cherry")
    got = index.pocket_terms(NS, [apple, banana, cherry, "absent"])
    assert got == {
        "p1": {apple: 2, banana: 1},
        "p2": {apple: 1, cherry: 1},
        "p3": {banana: 1},
    }
    assert index.pocket_terms("nobody", [apple]) == {}
    # Cached: a commit into another namespace keeps the counts, one into this one renews them.
    load(index, [doc(20, "apple", ns="tenant-b", pocket="p2")], rev=2)
    assert index.pocket_terms(NS, [apple])["p2"] == {apple: 1}
    load(index, [doc(6, "apple", pocket="p2")], rev=3)
    assert index.pocket_terms(NS, [apple])["p2"] == {apple: 2}
    index.remove(NS, [3, 6])
    index.commit(4)
    assert "p2" not in index.pocket_terms(NS, [apple])


def test_an_empty_query_finds_nothing(index: TantivyKeywordIndex) -> None:
    load(index, [doc(1, "apple")])
    assert index.search(query("")).hits == []
    assert index.search(query("?!")).hits == []
    assert index.search(query("apple", count=0)).hits == []
    missing = index.search(query("zebra"))
    assert missing.hits == [] and missing.postings == 0


def test_a_query_term_no_memory_holds_counts_in_the_keyword_scale(
    index: TantivyKeywordIndex,
) -> None:
    """The reference (Σ idf) counts an unseen term at `unseen_weight` of the rarest idf, so a
    memory that shares one word of a longer paraphrase matches a share of it."""
    load(index, [doc(1, "apple banana"), doc(2, "cherry")])
    rarest = math.log(1.0 + 2.5 / 0.5)  # N = 2, df = 0
    full = index.search(query("apple zebra", unseen_weight=1.0))
    assert full.idf == {"appl": pytest.approx(math.log(2.0)), "zebra": pytest.approx(rarest)}
    half = index.search(query("apple zebra", unseen_weight=0.5))
    assert half.idf["zebra"] == pytest.approx(0.5 * rarest)
    assert "zebra" not in index.search(query("apple zebra", unseen_weight=0.0)).idf


def test_statistics_survive_a_commit_only_for_the_namespaces_it_left_alone(
    index: TantivyKeywordIndex,
) -> None:
    """Counts are cached per searcher; a commit keeps another tenant's, and must drop those
    of a namespace it changed (by an upsert or a removal)."""
    load(index, [doc(1, "apple pie"), doc(2, "pear tart"), doc(3, "plum jam")], rev=1)
    (apple,) = index.analyze("apple")
    first = index.search(query("apple")).idf[apple]
    load(index, [doc(10, "apple apple", ns="tenant-b")], rev=2)
    assert index.search(query("apple")).idf[apple] == pytest.approx(first)
    load(index, [doc(4, "apple cake")], rev=3)
    more = index.search(query("apple")).idf[apple]
    assert more < first  # two of four documents hold it now
    index.remove(NS, [4])
    index.commit(4)
    assert index.search(query("apple")).idf[apple] == pytest.approx(first)


def test_commits_while_searches_cache_new_statistics(index: TantivyKeywordIndex) -> None:
    """A commit copies the cached statistics that it keeps while searches add new ones (it
    used to iterate the live dict: "dictionary changed size during iteration")."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, as a loaded server does
    load(index, [doc(i, f"word{i} common") for i in range(5000)], rev=1)
    for i in range(0, 4000, 2):  # a large cache for the commits to carry over
        index.search(query(f"word{i}"))
    stop = threading.Event()
    errors: list[BaseException] = []

    def search(offset: int) -> None:
        n = offset
        while not stop.is_set():
            try:
                index.search(query(f"word{n % 5000} common"))
            except BaseException as exc:
                errors.append(exc)
            n += 2

    threads = [threading.Thread(target=search, args=(k,)) for k in (1, 3)]
    for t in threads:
        t.start()
    try:
        for rev in range(2, 200):
            load(index, [doc(10_000 + rev, f"word{rev} other", ns="tenant-b")], rev=rev)
    finally:
        stop.set()
        for t in threads:
            t.join()
        sys.setswitchinterval(before)
    assert not errors
    assert index.committed_rev() == 199


def test_rescoring_follows_each_commit_through_the_term_cache(root: Path) -> None:
    """Terms held for the rescoring never outlive their document: a changed text scores by its
    new terms, a removed one not at all, in `search` and in `score` alike, and a reopened index
    (an empty cache) scores as the warm one did."""
    idx = TantivyKeywordIndex(root, HEAP)
    load(idx, [doc(1, "apple pie"), doc(2, "apple"), doc(3, "pear")], rev=1)
    q = query("apple pie")
    first = dict(idx.search(q).hits)
    assert idx.score(q, [1, 2, 3]) == first  # the pear holds no query term
    idx.upsert([doc(1, "pear tart")])
    idx.remove(NS, [2])
    assert idx.score(q, [1, 2]) == first  # not committed yet: the old view's terms
    idx.commit(2)
    assert idx.search(q).hits == []
    assert idx.score(q, [1, 2, 3]) == {}
    tart = query("tart")
    assert set(idx.score(tart, [1, 3])) == {1}
    warm = (dict(idx.search(tart).hits), idx.score(tart, [1, 3]))
    idx.close()
    cold = TantivyKeywordIndex(root, HEAP)
    assert (dict(cold.search(tart).hits), cold.score(tart, [1, 3])) == warm
    cold.close()


def test_a_cache_too_small_for_the_candidates_scores_them_alike(root: Path) -> None:
    docs = [doc(i, f"apple word{i % 7}", context=((-1, f"pie word{i % 3}"),)) for i in range(40)]
    big = TantivyKeywordIndex(root / "big", HEAP)
    small = TantivyKeywordIndex(root / "small", HEAP, term_cache=3)
    for idx in (big, small):
        load(idx, docs)
    q = query("apple pie word2", context_weights=((-1, 0.5),))
    assert small.search(q).hits == big.search(q).hits
    assert small.score(q, list(range(40))) == big.score(q, list(range(40)))
    big.close()
    small.close()


def test_a_long_text_held_as_counts_scores_as_its_words_do(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text beyond `term_cache.LONG` words is held as counts: the same BM25F as its tuple."""
    import server.adapters.term_cache as tc

    words = " ".join(f"word{i % 9} apple" if i % 5 else "pie" for i in range(120))
    docs = [doc(i, f"{words} extra{i}", context=((-1, f"{words} more{i % 2}"),)) for i in range(6)]
    counted = TantivyKeywordIndex(root / "counts", HEAP)
    load(counted, docs)
    monkeypatch.setattr(tc, "LONG", 10_000)  # every bag a tuple
    tupled = TantivyKeywordIndex(root / "tuples", HEAP)
    load(tupled, docs)
    q = query("apple pie word3 extra2 more1", context_weights=((-1, 0.5),))
    assert counted.score(q, list(range(6))) == pytest.approx(tupled.score(q, list(range(6))))
    assert [k for k, _ in counted.search(q).hits] == [k for k, _ in tupled.search(q).hits]
    counted.close()
    tupled.close()
