"""Warm keyword index: tantivy BM25 over memory text, for English and Chinese alike.

Analysis is `server.adapters.analysis` (the same for documents and queries): English words
stemmed without stopwords, Chinese segmented into words by jieba, dates named as one term.

A document has three bags of analysed terms:
- `txt`: its own text (exact identifiers are matched here, and the router's term statistics
  counted here);
- `mix`: its own text and its session neighbours' (up to `ContextSettings.turns` each side),
  the field candidates are found in and document frequencies counted in. A candidate's term
  counts and length are its own plus each neighbour's at the query's weight for its distance
  (BM25F: the neighbours' words saturate with the turn's own, under one idf and one length
  normalisation), from the terms stored per distance;
- `meta`: its speaker's name and its event date (`analysis.date_terms`), weighted
  `speaker_weight`, with no length normalisation.

Each document also carries its namespace, pocket and filter fields (kind, modality, session,
tags, importance, event time, expiry, obsolete). Restrictions are clauses of the tantivy query
wrapped in zero-score queries, or exclusions (obsolete and expired documents, by their own few
postings), so they filter inside the index without changing BM25, and a selective filter still
gets its full count of candidates.

Scores are BM25 (k1 and b from the query) under the namespace's own statistics, computed here:
tantivy's own scores use index-wide statistics, and even those per segment, so they move with
other tenants' memories and with merges. Tantivy finds the candidates (each query term boosted
by idf(namespace) / idf(index), so the first stage ranks nearly as the second will), then each
candidate is rescored from its stored terms: the namespace's document count and each term's
document frequency in it (count queries), and its average lengths (aggregations, cached per
searcher). The mixed document's average length is the own text's average plus each
neighbour's weight times that average (a neighbour is a turn like any other). One tenant's
memories therefore never shift another's scores, and a score does not depend on how the index
happens to be segmented. `score(q, keys)` rescores given memories the same way, so a memory
the keyword channel did not list still gets its own BM25.

The rescoring reads each document's terms from a `TermCache` (the documents written or read
lately, parsed, valid per view); only the others are read out of tantivy (a search's hits by
address, `score`'s by one query of their keys and the query's terms, so that only those holding
a term are read). A search reads its hits' keys from the `key` fast field, not from the stored
documents.

`commit(rev)` makes changes durable and searchable, then records `rev` in `rev.json`. An index of
another schema (`schema.json`) is deleted on open and rebuilt from the record store.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tantivy
from tantivy import Document, FieldType, Index, Occur, Query, SchemaBuilder

from server.adapters.analysis import Analyzer, date_terms
from server.adapters.term_cache import DocTerms, TermCache, interned, parse, size, to_bag
from server.core.memory.ports import KeywordDoc, KeywordQuery, KeywordResult

log = logging.getLogger(__name__)
SCHEMA_VERSION = 4
# Document counts kept (a few hundred KB at most; a commit copies those it carries over).
STATS_CACHE = 16_384
# Queries whose prepared statistics a view keeps (between a Recall's search and its score).
PREPARED_CACHE = 64
# Documents whose parsed terms are held for the rescoring (see `term_cache`: about 1.6 KB each).
TERM_CACHE = 65_536
# The bags of terms a document has, pre-analysed (see the module docstring). `txt` and `meta`
# are stored for the exact rescoring, with their lengths as fast fields; `mix` is searched and
# counted, and rescored from `ctx_terms` (each neighbour's terms, by distance) and `txt`.
BAGS = ("txt", "mix", "meta")


def _schema() -> tantivy.Schema:
    sb = SchemaBuilder()
    sb.add_integer_field("key", stored=True, indexed=True, fast=True)
    sb.add_text_field("ns", stored=False, tokenizer_name="raw")
    sb.add_text_field("pocket", stored=False, tokenizer_name="raw", fast=True)
    for bag in BAGS:
        sb.add_text_field(bag, stored=False, tokenizer_name="whitespace", index_option="freq")
    for bag in ("txt", "meta"):
        sb.add_bytes_field(f"{bag}_terms", stored=True, indexed=False, fast=False)
        sb.add_integer_field(f"{bag}_len", indexed=False, fast=True)
    # Each neighbour's terms on a line of its own: "<signed distance> <terms>".
    sb.add_bytes_field("ctx_terms", stored=True, indexed=False, fast=False)
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
    generation: int = 0  # the commits since the process opened the index
    lengths: dict[tuple[str, str], float] = field(default_factory=dict)
    counts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # (namespace, term) → pocket → documents of the pocket whose text holds the term.
    by_pocket: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    # (bag, term) → documents of the whole index holding it (this searcher's, so not carried).
    anywhere: dict[tuple[str, str], int] = field(default_factory=dict)
    # A query's prepared statistics, for `score` after `search` (the same view, so the same
    # statistics); a few recent queries.
    prepared: dict[tuple[object, ...], _Prepared] = field(default_factory=dict)

    def doc_freq(self, bag: str, term: str) -> int:
        """The index-wide document count of `term` in `bag`, remembered (the binding's call is
        O(1) but costs tens of microseconds)."""
        key = (bag, term)
        n = self.anywhere.get(key)
        if n is None:
            if len(self.anywhere) >= STATS_CACHE:
                self.anywhere.clear()
            n = self.anywhere[key] = int(self.searcher.doc_freq(bag, term))
        return n

    def carried(self, searcher: tantivy.Searcher, touched: set[str]) -> _View:
        """The view of a new searcher, keeping the statistics of the namespaces the commit did
        not change (a bulk import into one tenant leaves the others' caches warm). Readers
        swap to it in one assignment: they see the old view or the new one."""
        # dict() copies in one step under the GIL: searches add entries meanwhile.
        lengths, counts, by_pocket = dict(self.lengths), dict(self.counts), dict(self.by_pocket)
        return _View(
            searcher,
            self.generation + 1,
            {k: v for k, v in lengths.items() if k[0] not in touched},
            {k: v for k, v in counts.items() if k[0] not in touched},
            {k: v for k, v in by_pocket.items() if k[0] not in touched},
        )


@dataclass(frozen=True)
class _Prepared:
    terms: list[str]
    idf: dict[str, dict[str, float]]  # bag → term → idf in the namespace
    should: list[tuple[Occur, Query]]
    postings: int
    reference: dict[str, float]
    meta_weight: float
    context: dict[int, float]  # signed distance → weight
    avg_mix: float


def _idf(docs: int, df: int) -> float:
    """BM25's idf, as tantivy computes it."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


class TantivyKeywordIndex:
    """`KeywordIndex` over one tantivy directory."""

    def __init__(self, root: Path, heap_bytes: int, term_cache: int = TERM_CACHE) -> None:
        _check_schema(root)
        self._root = root
        self._schema = _schema()
        self._analyzer = Analyzer()
        self._index = Index(self._schema, path=str(root), reuse=True)
        self._writer = self._index.writer(heap_size=heap_bytes, num_threads=1)
        self._lock = threading.Lock()
        self._touched: set[str] = set()  # namespaces changed since the last commit
        # Documents changed since the last commit: their terms, or None when removed.
        self._pending: dict[int, DocTerms | None] = {}
        self._terms = TermCache(term_cache)
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
        return self._analyzer(text)

    def upsert(self, docs: Sequence[KeywordDoc]) -> None:
        # A turn's text is its own document's and each of its neighbours' context: analyse it
        # once per batch (jieba and the stemmer are most of the indexer's keyword work), as the
        # terms the cache holds and as the string tantivy indexes.
        analysed: dict[str, tuple[tuple[str, ...], str]] = {}

        def terms_of(text: str) -> tuple[tuple[str, ...], str]:
            got = analysed.get(text)
            if got is None:
                words = interned(self.analyze(text))
                got = analysed[text] = (words, " ".join(words))
            return got

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
                own_words, own = terms_of(rec.text)
                meta_words = interned([*self.analyze(rec.speaker), *date_terms(rec.created_at)])
                meta = " ".join(meta_words)
                analysed_context = [(dist, terms_of(text)) for dist, text in d.context]
                context = [(dist, to_bag(words)) for dist, (words, _) in analysed_context if words]
                lines = [(dist, t) for dist, (_, t) in analysed_context if t]
                doc.add_text("txt", own)
                doc.add_text("mix", " ".join([own, *(t for _, t in lines)]))
                doc.add_text("meta", meta)
                for bag, terms in (("txt", own), ("meta", meta)):
                    doc.add_bytes(f"{bag}_terms", terms.encode())
                    doc.add_integer(f"{bag}_len", terms.count(" ") + 1 if terms else 0)
                doc.add_bytes("ctx_terms", "\n".join(f"{d_} {t}" for d_, t in lines).encode())
                for tag in rec.tags:
                    doc.add_text("tags", tag)
                self._writer.add_document(doc)
                self._pending[rec.key] = DocTerms(
                    to_bag(own_words), tuple(context), to_bag(meta_words)
                )

    def remove(self, namespace: str, keys: Sequence[int]) -> None:
        with self._lock:
            self._touched.add(namespace)
            for key in keys:
                self._writer.delete_documents_by_term("key", key)
                self._pending[key] = None

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
            pending, self._pending = self._pending, {}
            generation = self._view.generation + 1  # the next view's, whenever it comes
            self._terms.changed(pending, generation)  # before a reader can see that view
            try:
                self._index.reload()
                self._view = self._view.carried(self._index.searcher(), touched)
            except BaseException:
                self._touched |= touched  # the next commit drops their statistics instead
                raise
            for key, terms in pending.items():
                if terms is not None:
                    self._terms.put(key, generation, terms)

    def committed_rev(self) -> int:
        return self._rev

    def _zero(self, query: Query) -> Query:
        return Query.const_score_query(query, 0.0)

    def _term(self, field: str, value: str | int) -> Query:
        return Query.term_query(self._schema, field, value)

    def _restriction(self, q: KeywordQuery) -> list[tuple[Occur, Query]]:
        """The namespace, pocket and filter clauses, each scoring 0 (or excluding)."""
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
        # What is left out is the rare case: excluding obsolete and expired documents reads
        # their postings, not those of every live one (a filter on `obsolete = 0` or on
        # `expires > now` would walk the whole namespace).
        must_not = []
        if not q.include_obsolete:
            must_not.append(self._term("obsolete", 1))
        if not q.include_expired:
            must_not.append(
                Query.range_query(self._schema, "expires", FieldType.Float, None, q.now, True, True)
            )
        return [(Occur.Must, self._zero(m)) for m in must] + [(Occur.MustNot, m) for m in must_not]

    def _prepare(self, q: KeywordQuery, view: _View) -> _Prepared | None:
        """The query's terms with their namespace idf per scored bag, the first stage's
        clauses, the postings read and the reference (each term once, where it weighs most);
        remembered in the view for the query's `score` after its `search`."""
        key = (
            q.namespace, q.text, q.pockets, q.speaker_weight, q.context_weights, q.unseen_weight
        )  # fmt: skip
        got = view.prepared.get(key)
        if got is None:
            got = self._prepare_new(q, view)
            if len(view.prepared) >= PREPARED_CACHE:
                view.prepared.clear()
            if got is not None:
                view.prepared[key] = got
        return got

    def _prepare_new(self, q: KeywordQuery, view: _View) -> _Prepared | None:
        terms = list(dict.fromkeys(self.analyze(q.text)))
        if not terms:
            return None
        searcher, stats = view.searcher, view.counts
        ns_q = self._term("ns", q.namespace)
        ns_docs = self._cached(stats, (q.namespace, "", ""), searcher, ns_q)
        total = searcher.num_docs
        weights = {"mix": 1.0, "meta": q.speaker_weight}
        # The first stage ranks as the rescoring will: a term in the turn's own text at full
        # weight, one only in a neighbour's at the heaviest neighbour's weight.
        nearest = max((w for _, w in q.context_weights), default=0.0)
        idf: dict[str, dict[str, float]] = {bag: {} for bag in weights}
        should: list[tuple[Occur, Query]] = []
        postings = 0
        for t in terms:
            for bag, weight in weights.items():
                if weight <= 0:
                    continue
                anywhere = view.doc_freq(bag, t)  # O(1); the count below is not
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
                postings += df if q.pockets is None else self._within(view, q, bag, t)
                idf[bag][t] = _idf(ns_docs, df)
                # doc_freq counts deleted documents until a merge: keep the boost positive.
                boost = weight * idf[bag][t] / max(_idf(total, anywhere), 1e-3)
                if bag != "mix":
                    should.append((Occur.Should, Query.boost_query(term_q, boost)))
                    continue
                in_text = self._term("txt", t)
                should.append((Occur.Should, Query.boost_query(in_text, boost)))
                if nearest > 0:
                    should.append((Occur.Should, Query.boost_query(term_q, boost * nearest)))
        best = {t: max(w * idf[bag].get(t, 0.0) for bag, w in weights.items()) for t in terms}
        # A query term no memory of the namespace holds is as rare as a term can be: it counts
        # in the reference, so a memory that shares one incidental word of a paraphrase ("keep",
        # "做") matches a small share of the query, not all of what the namespace could match.
        unseen = q.unseen_weight * _idf(ns_docs, 0)
        best = {t: w if w > 0 else unseen for t, w in best.items()}
        best = {t: w for t, w in best.items() if w > 0}
        ctx = dict(q.context_weights)
        own = self._average_length(view, q.namespace, "txt", ns_q)
        return _Prepared(
            terms=terms,
            idf=idf,
            should=should,
            postings=postings,
            reference=best,
            meta_weight=weights["meta"],
            context=ctx,
            # A neighbour is a turn like any other: the mixed document's expected length.
            avg_mix=own * (1.0 + sum(ctx.values())),
        )

    def _rescore(self, doc: DocTerms, p: _Prepared, q: KeywordQuery) -> float:
        """BM25F over the turn and its weighted neighbours, plus the meta field (b = 0). The
        loops run over the query's few terms; counting one in a document is a C-level scan."""
        k1, b = q.k1, q.b
        score = 0.0
        mix = p.idf["mix"]
        if mix:
            lines = [(w, words) for d, words in doc.context if (w := p.context.get(d, 0.0)) > 0]
            length = size(doc.own) + sum(w * size(words) for w, words in lines)
            norm = k1 * (1.0 - b + b * length / max(p.avg_mix, 1.0))
            own = doc.own
            for t, idf in mix.items():
                n = (own.count(t) or 0) + sum(w * (words.count(t) or 0) for w, words in lines)
                if n > 0:
                    score += idf * n * (k1 + 1.0) / (n + norm)
        meta = p.idf["meta"]
        if meta:
            part = 0.0
            for t, idf in meta.items():
                if n := doc.meta.count(t) or 0:
                    part += idf * n * (k1 + 1.0) / (n + k1)
            score += p.meta_weight * part
        return score

    def _doc_terms(self, view: _View, key: int, addr: tantivy.DocAddress) -> DocTerms:
        """A hit's terms: held, else read from its stored document (and then held)."""
        got = self._terms.get(key, view.generation)
        if got is None:
            doc = view.searcher.doc(addr)
            got = parse(
                bytes(doc["txt_terms"][0]), bytes(doc["ctx_terms"][0]), bytes(doc["meta_terms"][0])
            )
            self._terms.put(key, view.generation, got)
        return got

    def search(self, q: KeywordQuery) -> KeywordResult:
        if q.count <= 0:
            return KeywordResult([], {}, 0)
        view = self._view
        p = self._prepare(q, view)
        if p is None:
            return KeywordResult([], {}, 0)
        if not p.should:
            return KeywordResult([], p.reference, p.postings)
        searcher = view.searcher
        restrict = self._restriction(q)
        query = Query.boolean_query([*restrict, (Occur.Must, Query.boolean_query(p.should))])
        # A candidate holds every identifier of the query when its own text has each (one
        # absent from the namespace's texts is held by none).
        ident = set(q.identifiers)
        ns_q = self._term("ns", q.namespace)
        txt_df = {
            t: self._cached(
                view.counts,
                (q.namespace, "txt", t),
                searcher,
                Query.boolean_query([(Occur.Must, ns_q), (Occur.Must, self._term("txt", t))]),
            )
            for t in ident
            if view.doc_freq("txt", t)
        }
        ident_ok = bool(ident) and all(txt_df.get(t, 0) > 0 for t in ident)
        hits, exact = [], set()
        addrs = [addr for _, addr in searcher.search(query, q.count).hits]
        for key, addr in zip(_keys(searcher, addrs), addrs, strict=True):
            terms = self._doc_terms(view, key, addr)
            if ident_ok and ident.issubset(terms.own):
                exact.add(key)
            hits.append((key, self._rescore(terms, p, q)))
        hits.sort(key=lambda h: (-h[1], h[0]))
        # Every holder holds each identifier, so there are at most the rarest one's document
        # count of them. If the candidates have fewer, others may rank below them (a long
        # holder, or one the vector channel finds): find them all with the identifiers alone.
        if ident_ok:
            holders = min(txt_df[t] for t in ident)
            if len(exact) < holders:
                must = [(Occur.Must, self._zero(self._term("txt", t))) for t in ident]
                found = searcher.search(Query.boolean_query([*restrict, *must]), q.count).hits
                exact |= set(_keys(searcher, [addr for _, addr in found]))
        return KeywordResult(hits, p.reference, p.postings, frozenset(exact))

    def score(self, q: KeywordQuery, keys: Sequence[int]) -> dict[int, float]:
        """The BM25 of the given memories of the namespace, as `search` would score them (left
        out when it holds no query term): a memory's keyword score whichever channel found it.
        Their terms come from the cache; of the others, those holding a query term are looked
        up by key in one query."""
        if not keys:
            return {}
        view = self._view
        p = self._prepare(q, view)
        if p is None or not p.should:
            return {}
        found: dict[int, DocTerms] = {}
        missing: list[int] = []
        for k in keys:
            got = self._terms.get(k, view.generation)
            if got is None:
                missing.append(k)
            else:
                found[k] = got
        if missing:
            # Only those holding a query term: the others score 0 and need not be read.
            searcher = view.searcher
            query = Query.boolean_query(
                [
                    (Occur.Must, self._zero(self._term("ns", q.namespace))),
                    (Occur.Must, self._zero(Query.term_set_query(self._schema, "key", missing))),
                    (Occur.Must, Query.boolean_query(p.should)),
                ]
            )
            addrs = [addr for _, addr in searcher.search(query, len(missing)).hits]
            for key, addr in zip(_keys(searcher, addrs), addrs, strict=True):
                found[key] = self._doc_terms(view, key, addr)
        out: dict[int, float] = {}
        for key, terms in found.items():
            if (score := self._rescore(terms, p, q)) > 0.0:
                out[key] = score
        return out

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
            if view.doc_freq(bag, term):  # O(1); the aggregation is not
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


def _keys(searcher: tantivy.Searcher, addrs: list[tantivy.DocAddress]) -> list[int]:
    """The memory keys of hits, from the `key` fast field (no stored document is read)."""
    return [int(k) for k in searcher.fast_field_values("key", addrs)]  # type: ignore[arg-type]


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
