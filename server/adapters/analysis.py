"""Text analysis for the keyword channel, the same for documents and queries, in English and
Chinese.

- Latin text: split on non-alphanumerics, lower-cased, tokens over 40 bytes dropped, English
  stopwords removed (NLTK's list, the one a competent BM25 baseline uses), then English
  (Snowball) stemming. An exact token such as `E1234` or `RTX4090` stays one term (`e1234`).
  An ordinal loses its suffix ("4th" → "4").
- Chinese (and other CJK) text: segmented into words by jieba's search mode (a long word also
  gives its dictionary sub-words: "博物馆" → "博物", "博物馆"), Chinese function words and
  punctuation dropped. A word jieba does not know still comes out, as characters or as a
  new word from its HMM.
- A date with a month and a day ("May 4th", "4 May", "5月4日", "5月4号") also becomes one term,
  `d0504`, in both languages, the same term that `date_terms` gives a memory for its event date:
  a question that names a day finds that day's turns.
"""

from __future__ import annotations

import logging
import re
import threading

import jieba
from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

from server.core.clock import utc

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_ORDINAL = re.compile(r"\b(\d{1,4})(?:st|nd|rd|th)\b", re.IGNORECASE)
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH = (
    {m: i + 1 for i, m in enumerate(_MONTHS)}
    | {m[:3]: i + 1 for i, m in enumerate(_MONTHS)}
    | {"sept": 9}
)
_MONTH_RE = "|".join(sorted(_MONTH, key=len, reverse=True))
_DATE_MD = re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.IGNORECASE)
_DATE_DM = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b", re.IGNORECASE)
_DATE_ZH = re.compile(r"(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")


# NLTK's English stopwords (179 words), the standard list.
def _words(text: str) -> list[str]:
    return text.split()


ENGLISH_STOPWORDS = _words(
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself "
    "yourselves he him his himself she she's her hers herself it it's its itself they them their "
    "theirs themselves what which who whom this that that'll these those am is are was were be "
    "been being have has had having do does did doing a an the and but if or because as until "
    "while of at by for with about against between into through during before after above below "
    "to from up down in out on off over under again further then once here there when where why "
    "how all any both each few more most other some such no nor not only own same so than too "
    "very s t can will just don don't should should've now d ll m o re ve y ain aren aren't "
    "couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma "
    "mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren "
    "weren't won won't wouldn wouldn't"
)
# Chinese function words: particles, pronouns, copulas and the commonest adverbs.
CHINESE_STOPWORDS = frozenset(
    _words(
        "的 了 着 过 是 在 和 与 及 或 也 都 就 还 又 而 并 但 却 把 被 给 对 向 从 到 为 以 于 之 "
        "我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 这 那 这个 那个 这些 那些 这里 那里 "
        "吗 呢 吧 啊 呀 哦 嗯 啦 嘛 么 哈 "
        "有 没 没有 不 很 太 非常 一 一个 一些 个 些 会 能 要 想 可以 什么 怎么 如何 哪 哪些 "
        "曾经 当时 记得 还记得 请问 一下 月 日 号"
    )
)
_PUNCT = re.compile(r"^[\W_]+$")

log = logging.getLogger(__name__)
_jieba_ready = threading.Lock()


def date_term(month: int, day: int) -> str:
    return f"d{month:02d}{day:02d}"


def date_terms(epoch_seconds: float) -> list[str]:
    """The terms a memory's event date adds: its month and day (UTC), as a question names it."""
    d = utc(epoch_seconds)
    return [date_term(d.month, d.day)]


def _named_dates(text: str) -> list[str]:
    out = []
    for m in _DATE_MD.finditer(text):
        day = int(m.group(2))
        if 1 <= day <= 31:
            out.append(date_term(_MONTH[m.group(1).lower().rstrip(".")], day))
    for m in _DATE_DM.finditer(text):
        day = int(m.group(1))
        if 1 <= day <= 31:
            out.append(date_term(_MONTH[m.group(2).lower()], day))
    for m in _DATE_ZH.finditer(text):
        month, day = int(m.group(1)), int(m.group(2))
        if 1 <= month <= 12 and 1 <= day <= 31:
            out.append(date_term(month, day))
    return out


def warm_up() -> None:
    """Load jieba's dictionary now (about 0.6 s), not in the first call that needs it."""
    with _jieba_ready:
        if not jieba.dt.initialized:
            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()


class Analyzer:
    """`analyze(text)` → its terms (see the module docstring)."""

    def __init__(self) -> None:
        self._latin = (
            TextAnalyzerBuilder(Tokenizer.simple())
            .filter(Filter.remove_long(40))
            .filter(Filter.lowercase())
            .filter(Filter.custom_stopword(ENGLISH_STOPWORDS))
            .filter(Filter.stemmer("english"))
            .build()
        )
        warm_up()

    def __call__(self, text: str) -> list[str]:
        if not text:
            return []
        latin = _ORDINAL.sub(r"\1", _CJK.sub(" ", text))
        terms: list[str] = self._latin.analyze(latin)
        for run in _CJK.findall(text):
            terms.extend(
                w for w in jieba.cut_for_search(run) if w not in CHINESE_STOPWORDS
                and not _PUNCT.match(w)
            )  # fmt: skip
        return terms + _named_dates(text)
