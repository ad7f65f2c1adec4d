"""Warm keyword index: tantivy BM25 over memory text, for English and Chinese alike.

Analysis (`analyze`, the same for documents and queries):
- Latin text is split on non-alphanumerics, lower-cased, tokens over 40 bytes dropped, then
  English (Snowball) stemming. An exact token such as `E1234` or `RTX4090` stays one term
  (`e1234`), so it matches exactly.
- CJK text (Han, kana, hangul) becomes overlapping character bigrams, with a unigram only for an
  isolated character (as Lucene's CJKBigramFilter does): no dictionary is needed and "安卓" or
  "付款" match wherever they occur.

A document has three bags of analysed terms: `txt` (its text), `spk` (its speaker's name) and
`ctx` (the text of its neighbouring turns in the session, the standard contextual expansion). A
query term matches in each bag, weighted 1, `speaker_weight` and `context_weight`.

Each document also carries its namespace, pocket and filter fields (kind, modality, session,
tags, importance, event time, expiry, obsolete). Restrictions are clauses of the tantivy query
wrapped in zero-score queries, so they filter inside the index without changing BM25, and a
selective filter still gets its full count of candidates.

Scores are BM25 (k1 1.2, b 0.75) under the namespace's own statistics, computed here: tantivy's
own scores use index-wide statistics, and even those per segment, so they move with other tenants'
memories and with merges. Tantivy finds the candidates (each query term boosted by
idf(namespace) / idf(index), so the first stage ranks nearly as the second will), then each
candidate is rescored from its stored terms: the namespace's document count and each term's
document frequency in it (count queries), and its average length (an aggregation, cached per
searcher). One tenant's memories therefore never shift another's scores, and a score does not
depend on how the index happens to be segmented.

`commit(rev)` makes changes durable and searchable, then records `rev` in `rev.json`. An index of
another schema (`schema.json`) is deleted on open and rebuilt from the record store.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tantivy
from tantivy import (
    Document,
    FieldType,
    Filter,
    Index,
    Occur,
    Query,
    SchemaBuilder,
    TextAnalyzerBuilder,
    Tokenizer,
)

from server.core.memory.ports import KeywordDoc, KeywordQuery, KeywordResult

log = logging.getLogger(__name__)
SCHEMA_VERSION = 3
K1, B = 1.2, 0.75
# Document counts kept (a few hundred KB at most; a commit copies those it carries over).
STATS_CACHE = 16_384
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def cjk_terms(text: str) -> list[str]:
    """Bigrams of every CJK run; a run of one character gives that character."""
    out: list[str] = []
    for run in _CJK.findall(text):
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


# The three bags of terms a document has, pre-analysed (`analyze`): its own text, its speaker's
# name, and the context of its neighbouring turns. Each is indexed for search and stored for the
# exact rescoring, with its length as a fast field.
BAGS = ("txt", "spk", "ctx")


def _schema() -> tantivy.Schema:
    sb = SchemaBuilder()
    sb.add_integer_field("key", stored=True, indexed=True, fast=True)
    sb.add_text_field("ns", stored=False, tokenizer_name="raw")
    sb.add_text_field("pocket", stored=False, tokenizer_name="raw", fast=True)
    for bag in BAGS:
        sb.add_text_field(bag, stored=False, tokenizer_name="whitespace", index_option="freq")
        sb.add_bytes_field(f"{bag}_terms", stored=True, indexed=False, fast=False)
        sb.add_integer_field(f"{bag}_len", indexed=False, fast=True)
    sb.add_text_field("session", stored=False, tokenizer_name="raw")
    sb.add_text_field("tags", stored=False, tokenizer_name="raw")
    for name in ("kind", "modality", "importance", "obsolete"):
        sb.add_integer_field(name, indexed=True, fast=True)
    for name in ("created", "expires"):
        sb.add_float_field(name, indexed=True, fast=True)
    return sb.build()


@dataclass
class _View:
    """A searcher with the statistics counted on it: (namespace, bag) → average length and
    (namespace, bag, term) → document count. A commit replaces the whole view."""

    searcher: tantivy.Searcher
    lengths: dict[tuple[str, str], float] = field(default_factory=dict)
    counts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # (namespace, term) → pocket → documents of the pocket whose text holds the term.
    by_pocket: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)

    def carried(self, searcher: tantivy.Searcher, touched: set[str]) -> _View:
        """The view of a new searcher, keeping the statistics of the namespaces the commit did
        not change (a bulk import into one tenant leaves the others' caches warm). Readers
        swap to it in one assignment: they see the old view or the new one."""
        # dict() copies in one step under the GIL: searches add entries meanwhile.
        lengths, counts, by_pocket = dict(self.lengths), dict(self.counts), dict(self.by_pocket)
        return _View(
            searcher,
            {k: v for k, v in lengths.items() if k[0] not in touched},
            {k: v for k, v in counts.items() if k[0] not in touched},
            {k: v for k, v in by_pocket.items() if k[0] not in touched},
        )


def _idf(docs: int, df: int) -> float:
    """BM25's idf, as tantivy computes it."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


class TantivyKeywordIndex:
    """`KeywordIndex` over one tantivy directory."""

    def __init__(self, root: Path, heap_bytes: int) -> None:
        _check_schema(root)
        self._root = root
        self._schema = _schema()
        self._analyzer = (
            TextAnalyzerBuilder(Tokenizer.simple())
            .filter(Filter.remove_long(40))
            .filter(Filter.lowercase())
            .filter(Filter.stemmer("english"))
            .build()
        )
        self._index = Index(self._schema, path=str(root), reuse=True)
        self._writer = self._index.writer(heap_size=heap_bytes, num_threads=1)
        self._lock = threading.Lock()
        self._touched: set[str] = set()  # namespaces changed since the last commit
        self._rev = self._read_rev()
        self._index.reload()
        self._view = _View(self._index.searcher())

    def _rev_file(self) -> Path:
        return self._root / "rev.json"

    def _read_rev(self) -> int:
        try:
            return int(json.loads(self._rev_file().read_text())["rev"])
        except FileNotFoundError:
            return 0

    def analyze(self, text: str) -> list[str]:
        terms: list[str] = self._analyzer.analyze(_CJK.sub(" ", text))
        return terms + cjk_terms(text)

    def upsert(self, docs: Sequence[KeywordDoc]) -> None:
        with self._lock:
            for d in docs:
                rec = d.record
                self._touched.add(rec.namespace)
                self._writer.delete_documents_by_term("key", rec.key)
                doc = Document(
                    key=rec.key,
                    ns=rec.namespace,
                    pocket=d.pocket,
                    session=rec.session_id,
                    kind=int(rec.kind),
                    modality=int(rec.modality),
                    importance=rec.importance,
                    obsolete=int(rec.obsolete),
                    created=float(rec.created_at),
                    expires=math.inf if rec.expires_at is None else float(rec.expires_at),
                )
                for bag, text in zip(BAGS, (rec.text, rec.speaker, d.context), strict=True):
                    terms = " ".join(self.analyze(text))
                    doc.add_text(bag, terms)
                    doc.add_bytes(f"{bag}_terms", terms.encode())
                    doc.add_integer(f"{bag}_len", terms.count(" ") + 1 if terms else 0)
                for tag in rec.tags:
                    doc.add_text("tags", tag)
                self._writer.add_document(doc)

    def remove(self, namespace: str, keys: Sequence[int]) -> None:
        with self._lock:
            self._touched.add(namespace)
            for key in keys:
                self._writer.delete_documents_by_term("key", key)

    def commit(self, rev: int) -> None:
        with self._lock:
            self._writer.commit()
            tmp = self._rev_file().with_suffix(".tmp")
            with open(tmp, "w") as fh:
                json.dump({"rev": rev}, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self._rev_file())
            self._rev = rev
            touched, self._touched = self._touched, set()
            try:
                self._index.reload()
                self._view = self._view.carried(self._index.searcher(), touched)
            except BaseException:
                self._touched |= touched  # the next commit drops their statistics instead
                raise

    def committed_rev(self) -> int:
        return self._rev

    def _zero(self, query: Query) -> Query:
        return Query.const_score_query(query, 0.0)

    def _term(self, field: str, value: str | int) -> Query:
        return Query.term_query(self._schema, field, value)

    def _restriction(self, q: KeywordQuery) -> list[tuple[Occur, Query]]:
        """The namespace, pocket and filter clauses, each scoring 0."""
        f = q.filter
        must = [self._term("ns", q.namespace)]
        if q.pockets is not None:
            must.append(Query.term_set_query(self._schema, "pocket", list(q.pockets)))
        if f.kinds:
            must.append(Query.term_set_query(self._schema, "kind", [int(k) for k in f.kinds]))
        if f.modalities:
            must.append(
                Query.term_set_query(self._schema, "modality", [int(m) for m in f.modalities])
            )
        if f.session_id:
            must.append(self._term("session", f.session_id))
        if f.tags:
            must.append(Query.term_set_query(self._schema, "tags", list(f.tags)))
        if f.min_importance:
            must.append(
                Query.range_query(
                    self._schema, "importance", FieldType.Integer, f.min_importance, None
                )
            )
        if f.created_after is not None or f.created_before is not None:
            must.append(
                Query.range_query(
                    self._schema,
                    "created",
                    FieldType.Float,
                    f.created_after,
                    f.created_before,
                    True,
                    f.created_before is None,
                )
            )
        if not q.include_obsolete:
            must.append(self._term("obsolete", 0))
        if not q.include_expired:
            must.append(
                Query.range_query(self._schema, "expires", FieldType.Float, q.now, None, False)
            )
        return [(Occur.Must, self._zero(m)) for m in must]

    def search(self, q: KeywordQuery) -> KeywordResult:
        terms = list(dict.fromkeys(self.analyze(q.text)))
        if not terms or q.count <= 0:
            return KeywordResult([], {}, 0)
        view = self._view
        searcher, stats = view.searcher, view.counts
        ns_q = self._term("ns", q.namespace)
        ns_docs = self._cached(stats, (q.namespace, "", ""), searcher, ns_q)
        total = searcher.num_docs
        weights = {"txt": 1.0, "spk": q.speaker_weight, "ctx": q.context_weight}
        # idf of each term in each bag, in the namespace; the first stage's boosts undo the
        # index-wide idf that tantivy applies.
        idf: dict[str, dict[str, float]] = {bag: {} for bag in BAGS}
        should: list[tuple[Occur, Query]] = []
        txt_df: dict[str, int] = {}  # each term's document count in the namespace's texts
        postings = 0
        for t in terms:
            for bag in BAGS:
                if weights[bag] <= 0:
                    continue
                anywhere = searcher.doc_freq(bag, t)  # O(1); the count below is not
                if anywhere == 0:
                    continue
                term_q = self._term(bag, t)
                df = self._cached(
                    stats,
                    (q.namespace, bag, t),
                    searcher,
                    Query.boolean_query([(Occur.Must, ns_q), (Occur.Must, term_q)]),
                )
                if df == 0:
                    continue
                if bag == "txt":
                    txt_df[t] = df
                postings += df if q.pockets is None else self._within(view, q, bag, t)
                idf[bag][t] = _idf(ns_docs, df)
                # doc_freq counts deleted documents until a merge: keep the boost positive.
                boost = weights[bag] * idf[bag][t] / max(_idf(total, anywhere), 1e-3)
                should.append((Occur.Should, Query.boost_query(term_q, boost)))
        # The reference: each term counted once, in the bag where it weighs most.
        best = {t: max(weights[bag] * idf[bag].get(t, 0.0) for bag in BAGS) for t in terms}
        best = {t: w for t, w in best.items() if w > 0}
        if not should:
            return KeywordResult([], best, postings)
        restrict = self._restriction(q)
        query = Query.boolean_query([*restrict, (Occur.Must, Query.boolean_query(should))])
        avg = {bag: self._average_length(view, q.namespace, bag, ns_q) for bag in ("txt", "ctx")}
        # A candidate holds every identifier of the query when its own text has each (one
        # absent from the namespace is held by none).
        ident = set(q.identifiers)
        ident_ok = bool(ident) and ident <= txt_df.keys()
        hits, exact = [], set()
        for _, addr in searcher.search(query, q.count).hits:
            doc = searcher.doc(addr)
            key = int(doc["key"][0])
            score = 0.0
            for bag in BAGS:
                weights_b = idf[bag]
                if not weights_b:
                    continue
                words = bytes(doc[f"{bag}_terms"][0]).decode().split(" ")
                if bag == "txt" and ident_ok and ident.issubset(words):
                    exact.add(key)
                # No length normalisation for a speaker's name (b = 0).
                norm = K1 * (1.0 - B + B * len(words) / avg[bag]) if bag in avg else K1
                # A long tool output has thousands of words, a query a few terms: keep the
                # query's words first (a comprehension, in C), then count those.
                tf = Counter([w for w in words if w in weights_b])
                # (in the order the words first occur, as the loop this replaced summed them)
                part = sum(weights_b[t] * n * (K1 + 1.0) / (n + norm) for t, n in tf.items())
                score += weights[bag] * part
            hits.append((key, score))
        hits.sort(key=lambda h: (-h[1], h[0]))
        # Every holder holds each identifier, so there are at most the rarest one's document
        # count of them. If the candidates have fewer, others may rank below them (a long
        # holder, or one the vector channel finds): find them all with the identifiers alone.
        if ident_ok:
            holders = min(txt_df[t] for t in ident)
            if len(exact) < holders:
                must = [(Occur.Must, self._zero(self._term("txt", t))) for t in ident]
                found = searcher.search(Query.boolean_query([*restrict, *must]), q.count).hits
                exact |= {int(searcher.doc(addr)["key"][0]) for _, addr in found}
        return KeywordResult(hits, best, postings, frozenset(exact))

    @staticmethod
    def _cached(
        stats: dict[tuple[str, str, str], int],
        key: tuple[str, str, str],
        searcher: tantivy.Searcher,
        query: Query,
    ) -> int:
        """A document count of the searcher, remembered until a commit changes its namespace
        (at most `STATS_CACHE` counts; a full cache starts again)."""
        n = stats.get(key)
        if n is None:
            n = _count(searcher, query)
            if len(stats) >= STATS_CACHE:  # full (commits carry it over): start again
                stats.clear()
            stats[key] = n
        return n

    @staticmethod
    def _average_length(view: _View, namespace: str, bag: str, ns_q: Query) -> float:
        avg = view.lengths.get((namespace, bag))
        if avg is None:
            if len(view.lengths) >= STATS_CACHE:
                view.lengths.clear()
            agg = view.searcher.aggregate(ns_q, {"a": {"avg": {"field": f"{bag}_len"}}})
            avg = view.lengths[(namespace, bag)] = float(agg["a"]["value"] or 1.0)
        return max(avg, 1.0)

    def _within(self, view: _View, q: KeywordQuery, bag: str, term: str) -> int:
        """The postings of `term` in `bag` that a search restricted to `q.pockets` reads: the
        term's documents in those pockets (cached, like the counts the router asks for)."""
        assert q.pockets is not None
        counts = self._by_pocket(view, q.namespace, term, bag)
        return sum(counts.get(p, 0) for p in q.pockets)

    def pocket_terms(self, namespace: str, terms: Sequence[str]) -> dict[str, dict[str, int]]:
        """Per pocket, the documents holding each term: one aggregation per term, cached with
        the document counts (a router asks on every query)."""
        out: dict[str, dict[str, int]] = {}
        view = self._view
        for t in dict.fromkeys(terms):
            for pocket, n in self._by_pocket(view, namespace, t).items():
                out.setdefault(pocket, {})[t] = n
        return out

    def _by_pocket(
        self, view: _View, namespace: str, term: str, bag: str = "txt"
    ) -> dict[str, int]:
        """Per pocket, the namespace's documents holding `term` in `bag`."""
        key = (namespace, term if bag == "txt" else f"{bag}:{term}")
        counts = view.by_pocket.get(key)
        if counts is None:
            counts = {}
            if view.searcher.doc_freq(bag, term):  # O(1); the aggregation is not
                query = Query.boolean_query(
                    [(Occur.Must, self._term("ns", namespace)), (Occur.Must, self._term(bag, term))]
                )
                agg = view.searcher.aggregate(
                    query, {"p": {"terms": {"field": "pocket", "size": 10_000}}}
                )
                counts = {str(b["key"]): int(b["doc_count"]) for b in agg["p"]["buckets"]}
            if len(view.by_pocket) >= STATS_CACHE:
                view.by_pocket.clear()
            view.by_pocket[key] = counts
        return counts

    def close(self) -> None:
        with self._lock:
            self._writer.wait_merging_threads()


def _count(searcher: tantivy.Searcher, query: Query) -> int:
    """How many documents match (tantivy's stubs do not declare `count`)."""
    n: int = searcher.search(query, 1, count=True).count  # type: ignore[attr-defined]
    return n


def _check_schema(root: Path) -> None:
    """Delete an index of another schema (it is rebuilt from the record store)."""
    marker = root / "schema.json"
    if root.exists() and any(root.iterdir()):
        try:
            version = json.loads(marker.read_text())["version"]
        except (FileNotFoundError, ValueError, KeyError):
            version = 1
        if version != SCHEMA_VERSION:
            log.warning(
                "the keyword index in %s has schema %s; rebuilding it from the record store",
                root,
                version,
            )
            shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    if not marker.exists():
        marker.write_text(json.dumps({"version": SCHEMA_VERSION}))
