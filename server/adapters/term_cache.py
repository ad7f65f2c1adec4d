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
each side.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt


class DocTerms(NamedTuple):
    """One document's analysed terms: its own text's, each neighbour's by signed distance, and
    its speaker's and date's (the `meta` bag)."""

    own: tuple[str, ...]
    context: tuple[tuple[int, tuple[str, ...]], ...]
    meta: tuple[str, ...]


def parse(own: bytes, context: bytes, meta: bytes) -> DocTerms:
    """A document's terms from its stored fields ("<distance> <terms>" per neighbour line)."""
    lines = []
    for line in context.decode().split("\n"):
        if line:
            dist, _, text = line.partition(" ")
            lines.append((int(dist), _words(text)))
    return DocTerms(_words(own.decode()), tuple(lines), _words(meta.decode()))


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
