"""The keyword index's term cache (server/adapters/term_cache.py): an entry is valid for a view
only when its document has not changed since before both the view and the read (a miss costs a
read, a stale hit a wrong score), and at most `capacity` documents are held."""

from __future__ import annotations

from server.adapters.term_cache import LONG, Counts, DocTerms, TermCache, parse, size, to_bag

OLD = DocTerms(("apple",), (), ())
NEW = DocTerms(("banana",), ((-1, ("pear", "plum")),), ("alice",))


def test_parse_reads_the_stored_fields() -> None:
    got = parse(b"banana", b"-1 pear plum\n2 fig", b"alice d0504")
    assert got == DocTerms(("banana",), ((-1, ("pear", "plum")), (2, ("fig",))), ("alice", "d0504"))
    assert parse(b"", b"", b"") == DocTerms((), (), ())


def test_an_entry_serves_any_view_while_its_document_is_unchanged() -> None:
    cache = TermCache(8)
    cache.put(1, 3, OLD)
    assert cache.get(1, 3) == OLD
    assert cache.get(1, 1) == OLD  # an older view: the document was the same then
    assert cache.get(1, 9) == OLD
    assert cache.get(2, 3) is None


def test_a_change_hides_older_entries_from_newer_views_and_newer_ones_from_older_views() -> None:
    cache = TermCache(8)
    cache.put(1, 2, OLD)
    cache.changed([1], 4)  # the commit whose view is 4 changed it
    # Only the last change is known, so no view before it can trust the entry: an old reader
    # reads its own view's document again (a miss), and the new view must read the new one.
    assert cache.get(1, 2) is None
    assert cache.get(1, 4) is None
    cache.put(1, 4, NEW)
    assert cache.get(1, 4) == NEW
    assert cache.get(1, 5) == NEW
    assert cache.get(1, 3) is None  # view 3 held the old document: not the new terms


def test_an_old_reader_putting_what_it_read_after_a_change_serves_no_newer_view() -> None:
    cache = TermCache(8)
    cache.changed([7], 5)
    cache.put(7, 4, OLD)  # a reader of view 4 read the document before the change
    assert cache.get(7, 5) is None
    assert cache.get(7, 6) is None


def test_keys_beyond_the_marks_grow_them() -> None:
    cache = TermCache(8)
    cache.changed([3], 1)
    cache.changed([100_000], 2)
    cache.put(100_000, 1, OLD)
    assert cache.get(100_000, 2) is None
    assert cache.get(3, 1) is None  # nothing held for it
    cache.put(3, 1, OLD)
    assert cache.get(3, 1) == OLD


def test_the_oldest_written_go_first_at_capacity() -> None:
    cache = TermCache(2)
    cache.put(1, 1, OLD)
    cache.put(2, 1, OLD)
    cache.put(1, 1, NEW)  # written again: now the newest
    cache.put(3, 1, OLD)
    assert len(cache) == 2
    assert cache.get(2, 1) is None
    assert cache.get(1, 1) == NEW
    assert TermCache(0).get(1, 1) is None


def test_a_long_text_is_held_as_counts_that_count_as_its_words_do() -> None:
    words = tuple(f"w{i % 7}" for i in range(LONG + 5))
    held = to_bag(words)
    assert isinstance(held, Counts) and size(held) == len(words)
    for t in ("w0", "w3", "absent"):
        assert (held.count(t) or 0) == words.count(t)
    assert set(held) == set(words)  # an identifier check reads its terms
    short = words[:LONG]
    assert to_bag(short) is short and size(short) == LONG
    got = parse(" ".join(words).encode(), b"", b"")
    assert isinstance(got.own, Counts) and got.own == held
