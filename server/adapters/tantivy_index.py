"""Warm keyword index: tantivy BM25 over memory text, for English and Chinese alike.

Analysis (the same for documents and queries):
- Latin text goes to field `en`: split on non-alphanumerics, lower-cased, tokens over 40 bytes
  dropped, then English (Snowball) stemming. An exact token such as `E1234` or `RTX4090` stays one
  term (`e1234`), so it matches exactly.
- CJK text (Han, kana, hangul) goes to field `cjk` as overlapping character bigrams, with a
  unigram only for an isolated character (as Lucene's CJKBigramFilter does): no dictionary is
  needed and "安卓" or "付款" match wherever they occur.

The namespace is a raw term wrapped in a zero-score query, so it filters without changing BM25.
`commit(rev)` makes changes durable and searchable, then records `rev` in `rev.json`.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import tantivy
from tantivy import (
    Document,
    Filter,
    Index,
    Occur,
    Query,
    SchemaBuilder,
    TextAnalyzerBuilder,
    Tokenizer,
)

from server.core.memory.model import Record

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_EN_TOKENIZER = "pocketd_en"


def cjk_terms(text: str) -> list[str]:
    """Bigrams of every CJK run; a run of one character gives that character."""
    out: list[str] = []
    for run in _CJK.findall(text):
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def _schema() -> tantivy.Schema:
    sb = SchemaBuilder()
    sb.add_integer_field("key", stored=True, indexed=True, fast=True)
    sb.add_text_field("ns", stored=False, tokenizer_name="raw")
    sb.add_text_field("en", stored=False, tokenizer_name=_EN_TOKENIZER, index_option="freq")
    sb.add_text_field("cjk", stored=False, tokenizer_name="whitespace", index_option="freq")
    return sb.build()


class TantivyKeywordIndex:
    """`KeywordIndex` over one tantivy directory."""

    def __init__(self, root: Path, heap_bytes: int) -> None:
        root.mkdir(parents=True, exist_ok=True)
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
        self._index.register_tokenizer(_EN_TOKENIZER, self._analyzer)
        self._writer = self._index.writer(heap_size=heap_bytes, num_threads=1)
        self._lock = threading.Lock()
        self._rev = self._read_rev()
        self._index.reload()
        self._searcher = self._index.searcher()

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

    def upsert(self, records: Sequence[Record]) -> None:
        with self._lock:
            for rec in records:
                self._writer.delete_documents_by_term("key", rec.key)
                self._writer.add_document(
                    Document(
                        key=rec.key,
                        ns=rec.namespace,
                        en=_CJK.sub(" ", rec.text),
                        cjk=" ".join(cjk_terms(rec.text)),
                    )
                )

    def remove(self, keys: Sequence[int]) -> None:
        with self._lock:
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
        self._index.reload()
        self._searcher = self._index.searcher()

    def committed_rev(self) -> int:
        return self._rev

    def search(self, namespace: str, text: str, count: int) -> list[tuple[int, float]]:
        en = self._analyzer.analyze(_CJK.sub(" ", text))
        cjk = cjk_terms(text)
        should = [
            (Occur.Should, Query.term_query(self._schema, "en", t)) for t in dict.fromkeys(en)
        ] + [(Occur.Should, Query.term_query(self._schema, "cjk", t)) for t in dict.fromkeys(cjk)]
        if not should or count <= 0:
            return []
        query = Query.boolean_query(
            [
                (
                    Occur.Must,
                    Query.const_score_query(Query.term_query(self._schema, "ns", namespace), 0.0),
                ),
                (Occur.Must, Query.boolean_query(should)),
            ]
        )
        searcher = self._searcher
        hits = searcher.search(query, count).hits
        return [(int(searcher.doc(addr)["key"][0]), float(score)) for score, addr in hits]

    def close(self) -> None:
        with self._lock:
            self._writer.wait_merging_threads()
