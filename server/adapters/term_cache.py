"""The keyword index's documents' analysed terms, held in memory for the exact rescoring.

A Recall rescores every keyword candidate, and the completion every vector candidate, from the
terms each document stores (see `tantivy_index`). Reading a stored document out of tantivy and
parsing it costs far more than the rescoring itself, and the completion would need a second
search to find them: this cache keeps them, parsed, for the documents written or read lately.

An entry is what one view (one commit of the index) showed, so it is valid for a reader's view
only when the document has not changed since before both: each commit numbers its view (its
generation) and marks the keys it changed with that number before readers can see it. Only a
key's last change is known, so an entry serves the views from its last change on; a reader of
an older view (still in flight across a commit) reads its own document instead, and never takes
a newer document's terms, nor a new reader an old one's.
At most `capacity` documents are kept; the oldest written go first. Terms are interned, so a
word held by many documents (and a turn's words held again as its neighbours' context) is one
string: an entry costs its tuples, about 1.6 KB for a turn of 20 terms with two neighbours on
each side (a text longer than `LONG` words is held as its terms' counts instead).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

# A text of more words than this is held as its terms' counts: the rescoring counts each query
# term in each bag, and a scan of a long tuple per term (a tool's log of thousands of words) cost
# more than the search; a short one is a tuple, smaller and as fast to scan.
LONG = 48


class Counts(dict[str, int]):
    """A long text's bag: term → count, with its length. `count(t)` is `dict.get` (None for a
    term it lacks), so `bag.count(t) or 0` counts in either kind of bag."""

    __slots__ = ("n",)
    count = dict.get  # type: ignore[assignment]

    def __init__(self, words: tuple[str, ...]) -> None:
        super().__init__()
        for w in words:
            self[w] = self.get(w, 0) + 1
        self.n = len(words)


Bag = tuple[str, ...] | Counts


def to_bag(words: tuple[str, ...]) -> Bag:
    """`words` as a document's bag: a tuple, or its counts when long."""
    return Counts(words) if len(words) > LONG else words


def size(b: Bag) -> int:
    """How many words a bag holds."""
    return b.n if type(b) is Counts else len(b)


class DocTerms(NamedTuple):
    """One document's analysed terms: its own text's, each neighbour's by signed distance, and
    its speaker's and date's (the `meta` bag)."""

    own: Bag
    context: tuple[tuple[int, Bag], ...]
    meta: Bag


def parse(own: bytes, context: bytes, meta: bytes) -> DocTerms:
    """A document's terms from its stored fields ("<distance> <terms>" per neighbour line)."""
    lines = []
    for line in context.decode().split("\n"):
        if line:
            dist, _, text = line.partition(" ")
            lines.append((int(dist), to_bag(_words(text))))
    return DocTerms(to_bag(_words(own.decode())), tuple(lines), to_bag(_words(meta.decode())))


def interned(words: Iterable[str]) -> tuple[str, ...]:
    """Analysed terms as the cache holds them: one string object per distinct term."""
    return tuple(sys.intern(w) for w in words if w)


def _words(text: str) -> tuple[str, ...]:
    return interned(text.split(" "))


class TermCache:
    """Documents' terms by memory key, each tagged with the generation of the view it was read
    from (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[int, tuple[int, DocTerms]] = OrderedDict()
        # key → the generation of the commit that last changed its document (0: none since
        # the process started, so any entry is valid).
        self._changed: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: int, generation: int) -> DocTerms | None:
        """`key`'s terms as a reader of view `generation` sees them, if held."""
        got = self._entries.get(key)
        if got is None:
            return None
        changed = self._changed  # one read: a commit may replace the array meanwhile
        last = int(changed[key]) if key < len(changed) else 0
        return got[1] if last <= min(got[0], generation) else None

    def put(self, key: int, generation: int, terms: DocTerms) -> None:
        """Hold `terms`, read from view `generation` (or written by its commit)."""
        if self._capacity <= 0:
            return
        with self._lock:
            self._entries[key] = (generation, terms)
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def changed(self, keys: Iterable[int], generation: int) -> None:
        """Mark `keys` changed by the commit whose view will be `generation`; call before any
        reader can see that view."""
        ks = np.fromiter(keys, dtype=np.int64)
        if len(ks) == 0:
            return
        with self._lock:
            changed = self._changed
            top = int(ks.max()) + 1
            if top > len(changed):
                grown = np.zeros(max(top, 2 * len(changed), 1024), np.int64)
                grown[: len(changed)] = changed
                grown[ks] = generation
                self._changed = grown  # marked before it is seen
            else:
                changed[ks] = generation
