"""The keyword baselines' tokeniser: what a competent engineer would put in front of BM25.

- Latin text: tantivy's simple tokenizer (split on non-alphanumerics), lower case, the NLTK
  English stopword list (the one `bm25s` ships as `STOPWORDS_EN_PLUS`, 179 words) removed, then
  tantivy's Snowball English stemmer ("running" → "run", "cities" → "citi").
- Chinese (CJK runs): jieba's search-mode segmentation (`lcut_for_search`: a word, and its
  dictionary words inside it), with a small list of Chinese function words removed and
  punctuation dropped. Known names (a corpus's speakers) can be added to its dictionary
  (`add_words`).

Documents and queries go through the same function. Nothing here is tuned to a bench's data.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache

import jieba  # type: ignore[import-untyped]
import tantivy
from bm25s.stopwords import STOPWORDS_EN_PLUS

jieba.setLogLevel(logging.WARNING)

EN_STOPWORDS: frozenset[str] = frozenset(STOPWORDS_EN_PLUS)
# Chinese function words: particles, the copula, pronouns, measure words, conjunctions and
# question words (as the English list drops "what" and "which"). Content words stay.
ZH_STOPWORDS: frozenset[str] = frozenset(
    (
        "的",
        "了",
        "是",
        "我",
        "你",
        "他",
        "她",
        "它",
        "我们",
        "你们",
        "他们",
        "她们",
        "吗",
        "呢",
        "吧",
        "啊",
        "呀",
        "哦",
        "嗯",
        "啦",
        "嘛",
        "哈",
        "呗",
        "在",
        "和",
        "与",
        "及",
        "也",
        "就",
        "都",
        "这",
        "那",
        "这个",
        "那个",
        "这些",
        "那些",
        "有",
        "一个",
        "个",
        "一",
        "不",
        "没",
        "没有",
        "很",
        "还",
        "又",
        "被",
        "把",
        "给",
        "让",
        "对",
        "从",
        "到",
        "着",
        "过",
        "得",
        "地",
        "之",
        "而",
        "或",
        "或者",
        "但",
        "但是",
        "如果",
        "因为",
        "所以",
        "什么",
        "怎么",
        "哪",
        "哪个",
        "么",
        "自己",
        "这样",
        "那样",
        "还是",
        "就是",
        "而且",
        "已经",
    )
)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"\w")


@lru_cache(maxsize=1)
def _latin() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.custom_stopword(sorted(EN_STOPWORDS)))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _chinese(run: str) -> list[str]:
    return [
        w
        for w in jieba.lcut_for_search(run)
        if w.strip() and _WORD.search(w) and w not in ZH_STOPWORDS
    ]


def add_words(words: Iterable[str]) -> None:
    """Teach jieba known names (the speakers), as one does for a corpus's entities: "老陈靠什么"
    then gives 老陈 rather than 老 / 陈靠."""
    for w in words:
        if _CJK.fullmatch(w):
            jieba.add_word(w)


def tokenize(text: str) -> list[str]:
    """Index (and query) terms of `text`, in order: stemmed English words without stopwords,
    jieba words of the Chinese runs without function words."""
    out: list[str] = []
    pos = 0
    latin = _latin()
    for m in _CJK.finditer(text):
        if m.start() > pos:
            out.extend(latin.analyze(text[pos : m.start()]))
        out.extend(_chinese(m.group()))
        pos = m.end()
    if pos < len(text):
        out.extend(latin.analyze(text[pos:]))
    return out
