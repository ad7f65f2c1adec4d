"""Whether an image's caption and the text read from it agree (seed 001 §5.2: "if the text
summary describes something too different from the image's OCR result, refuse the write and
warn").

The question is asked of the caption: does the image's text bear out what the caption names?
(The converse means nothing: a caption is short and the text of a screenshot long, so most of
the image's words are in no caption.) Each text becomes weighed features:
- English words, lower-cased, lightly stemmed ("declined" → "declin"), stopwords out;
- Chinese (and other CJK) character bigrams, a lone character as itself, a few function
  characters (的, 了, 吗 …) out;
- codes: tokens of at least `MIN_CODE` characters holding a digit (E1234, ORD-48213, 12.50,
  10:30, 404; the merge policy's `identifiers`), weighed `ID_WEIGHT` times a word, since an
  error code or an amount on both sides is strong evidence; thousands separators, full-width
  forms and the OCR confusions o/0, l/1, i/1 are read as one;
- a small lexicon of what screenshots say (reject, fail, refund, pay, login …) in English and
  Chinese, so that "declined" meets "rejected" and "退款" meets "refund";
- words that name the medium ("screenshot", "dialog", "截图", "显示") are not features: a
  caption that only says "a screenshot" claims nothing, so it cannot be contradicted.

The lexical score is the caption's weight found in the image's text, with a prior of
`PRIOR_WEIGHT` at `NEUTRAL` (one word of a one-word caption is weak evidence either way), and
pulled towards `NEUTRAL` when the image's text is thin (a status bar's "12:30 4G" says nothing
about the photo under it): full strength from `FULL_EVIDENCE` features of image text.

The caller's `cosine` (the text encoder's, between caption and image text) is mapped between the
encoder's floor and ceiling to [0, 1], and the score is the larger of the two: each misses
agreement the other sees (words miss a paraphrase in other words or another language; a
sentence vector of a short caption against a long noisy OCR text is low even when they agree),
and neither sees much agreement that is not there, except a vector, which cannot tell E1234
from E5678. So a conflict of codes, a code or number in the caption absent from the image's
text while the image shows one of the same shape (E5678 against E1234, 300 against 500),
multiplies the score by `CONFLICT_FACTOR`, halved for each further conflict: one conflict sinks
any score below the default threshold (0.15), whatever else the caption gets right, since a
caption that misstates a code the image shows is wrong about the image (and would be recalled
with the wrong code). A code the image's text does not hold, where it shows none of that shape,
is only unsupported (the caption may add what the image does not say): it weighs as missing.

A caption without features, or no text on either side, scores `NEUTRAL` (0.5): nothing to judge,
which passes the default threshold, and `check` passes it whatever the threshold.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from server.core.memory.write.dedup import identifiers

NEUTRAL = 0.5
PRIOR_WEIGHT = 0.5
FULL_EVIDENCE = 8.0
ID_WEIGHT = 3.0
# Shorter tokens with a digit ("3 items", "v2") are words: too common to be a code's evidence.
MIN_CODE = 3
CONFLICT_FACTOR = 0.1
# The text encoder's cosines that mean no relation and a paraphrase (the built-in encoder's
# manifest: `hybrid_search.vector_floor` and `vector_ceiling`).
COSINE_FLOOR = 0.15
COSINE_CEILING = 0.6
# Words of the caption named in a verdict's reason.
NAMED_IN_WHY = 3

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_LATIN_WORD = re.compile(rf"[^\W\d_{_CJK}]+")
_THOUSANDS = re.compile(r"(?<=\d)[,，](?=\d{3}(?!\d))")
_CONFUSABLE = str.maketrans("oil", "011")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
_SPACE = re.compile(r"\s+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOPWORDS = _words(
    """a about above after again against all am an and any are as at be been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me more
    most my no nor not now of off on once only or other our ours out over own same she should
    so some such than that the their them then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would
    you your yours please isn aren wasn weren don doesn didn won can couldn shouldn"""
)
# Words that name the medium or the act of showing, not what is shown.
_GENERIC = _words(
    """screenshot screenshots screen screens screencap screengrab image images picture pictures
    pic pics photo photos photograph snapshot capture captured shot show shows showing shown
    display displays displaying displayed say says saying read reads reading see seen text
    message popup pop window dialog dialogue box app application page view"""
)
_GENERIC_CJK = re.compile(
    "截图|截屏|屏幕|图片|照片|这张|那张|一张|这是|显示|画面|页面|弹窗|提示框|上面|里面|内容|关于"
)
_FUNCTION_CJK = re.compile("[的了吗呢吧啊呀哦嘛]")

# What screenshots say, by concept: English stems (as `_stem` leaves them) and Chinese words.
_LEXICON: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "reject": (("reject", "declin", "refus", "deni", "deny"), ("拒绝", "被拒", "驳回", "拒付")),
    "fail": (
        ("fail", "failur", "error", "err", "fault", "unsuccessful"),
        ("失败", "错误", "报错", "出错", "异常"),
    ),
    "refund": (("refund",), ("退款", "退钱")),
    "pay": (("pay", "payment", "paid", "checkout"), ("支付", "付款", "缴费")),
    "login": (("login", "logon", "signin"), ("登录", "登陆")),
    "password": (("password", "passcode", "pin"), ("密码",)),
    "network": (("network", "connect", "connection", "internet", "offline"), ("网络", "连接")),
    "timeout": (("timeout",), ("超时",)),
    "account": (("account",), ("账户", "账号", "帐户", "帐号")),
    "balance": (("balanc",), ("余额",)),
    "insufficient": (("insufficient",), ("不足",)),
    "order": (("order",), ("订单",)),
    "card": (("card",), ("银行卡", "信用卡")),
    "expire": (("expir", "expiry"), ("过期", "到期", "失效")),
    "server": (("server",), ("服务器",)),
    "cancel": (("cancel", "cancell"), ("取消",)),
    "success": (("success", "succe", "successful", "succeed"), ("成功",)),
    "invalid": (("invalid",), ("无效", "不正确")),
    "permission": (("permission", "unauthoriz", "forbidden"), ("权限", "无权")),
    "update": (("updat", "upgrad"), ("更新", "升级")),
}
_CONCEPT_OF_STEM = {s: c for c, (stems, _) in _LEXICON.items() for s in stems}
_CONCEPT_CJK = [(w, c) for c, (_, words) in _LEXICON.items() for w in words]


def _stem(word: str) -> str:
    """A light English stemmer: plural, -ing, -ed and -ly endings, then a final e, so that
    decline, declines and declined meet (a stem keeps at least three letters)."""
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    else:
        if word.endswith("es") and len(word) > 4:
            word = word[:-2]
        elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
            word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _normal(text: str) -> str:
    """Full-width forms half-width, lower case, 1,200 as 1200."""
    return _THOUSANDS.sub("", unicodedata.normalize("NFKC", text).casefold())


def _shape(code: str) -> str:
    """A code's form: letters a, digits 9 (E1234 → a9999), so 300 and 500 share one."""
    return _LETTER.sub("a", _DIGIT.sub("9", code))


@dataclass
class _Features:
    """A text's features with their weights, the surface form each came from, and its codes."""

    weights: dict[str, float] = field(default_factory=dict)
    surface: dict[str, str] = field(default_factory=dict)
    codes: set[str] = field(default_factory=set)
    compact: str = ""

    def add(self, feature: str, weight: float, surface: str) -> None:
        self.weights[feature] = max(weight, self.weights.get(feature, 0.0))
        self.surface.setdefault(feature, surface)


def _features(text: str) -> _Features:
    norm = _normal(text)
    out = _Features(compact=_SPACE.sub("", norm).translate(_CONFUSABLE))
    for ident in identifiers(norm):
        if not _DIGIT.search(ident):
            continue  # a named number or weekday is a word here
        if len(ident.lstrip("-+")) < MIN_CODE:
            out.add(ident, 1.0, ident)
            continue
        code = ident.translate(_CONFUSABLE)
        out.codes.add(code)
        out.add("#" + code, ID_WEIGHT, ident.upper() if _LETTER.search(ident) else ident)
    for m in _LATIN_WORD.finditer(norm):
        word = m.group(0)
        if len(word) < 2 or word in _STOPWORDS or word in _GENERIC:
            continue
        stem = _stem(word)
        concept = _CONCEPT_OF_STEM.get(stem) or _CONCEPT_OF_STEM.get(word)
        out.add("~" + concept if concept else stem, 1.0, word)
    cjk = _FUNCTION_CJK.sub(" ", _GENERIC_CJK.sub(" ", norm))
    for m in _CJK_RUN.finditer(cjk):
        run = m.group(0)
        for word, concept in _CONCEPT_CJK:
            if word in run:
                out.add("~" + concept, 1.0, word)
        if len(run) == 1:
            out.add(run, 1.0, run)
        for i in range(len(run) - 1):  # a bigram is named by its run: "猫在" is no word
            out.add(run[i : i + 2], 1.0, run)
    return out


@dataclass(frozen=True)
class _Comparison:
    """The caption's features against the image text's: the score and what the caption names
    that the image's text does not say."""

    score: float
    nothing: str = ""  # why there is nothing to compare, when there is not
    conflicts: tuple[tuple[str, str], ...] = ()  # (the caption's code, the image's of its shape)
    unsupported: tuple[str, ...] = ()


def _compare(
    caption: str, ocr_text: str, cosine: float | None, floor: float, ceiling: float
) -> _Comparison:
    cap, ocr = _features(caption), _features(ocr_text)
    if not cap.weights:
        return _Comparison(NEUTRAL, "the caption names nothing but the medium")
    if not ocr.weights:
        return _Comparison(NEUTRAL, "the image's text holds no words or codes")
    found = {f for f in cap.weights if f in ocr.weights or (f[0] == "#" and f[1:] in ocr.compact)}
    total = sum(cap.weights.values())
    matched = sum(cap.weights[f] for f in found)
    lexical = (matched + PRIOR_WEIGHT * NEUTRAL) / (total + PRIOR_WEIGHT)
    strength = min(1.0, sum(ocr.weights.values()) / FULL_EVIDENCE)
    score = NEUTRAL + (lexical - NEUTRAL) * strength
    if cosine is not None and ceiling > floor:
        score = max(score, min(1.0, max(0.0, (cosine - floor) / (ceiling - floor))))
    shapes: dict[str, str] = {}
    for code in sorted(ocr.codes):
        shapes.setdefault(_shape(code), ocr.surface["#" + code])
    conflicts = tuple(
        (cap.surface["#" + c], shapes[_shape(c)])
        for c in sorted(cap.codes)
        if "#" + c not in found and _shape(c) in shapes
    )
    if conflicts:
        score *= CONFLICT_FACTOR * 0.5 ** (len(conflicts) - 1)
    missing = sorted((f for f in cap.weights if f not in found), key=lambda f: -cap.weights[f])
    unsupported = tuple(dict.fromkeys(cap.surface[f] for f in missing))
    return _Comparison(min(1.0, max(0.0, score)), "", conflicts, unsupported)


def agreement(
    caption: str,
    ocr_text: str,
    cosine: float | None,
    *,
    floor: float = COSINE_FLOOR,
    ceiling: float = COSINE_CEILING,
) -> float:
    """How far the image's text bears out its caption, in [0, 1] (see the module's docstring).
    `cosine` is the text encoder's between the two, or None; `floor` and `ceiling` are that
    encoder's cosines for no relation and a paraphrase."""
    return _compare(caption, ocr_text, cosine, floor, ceiling).score


@dataclass(frozen=True)
class Verdict:
    """Whether a caption may stand beside its image's text: the score and why."""

    ok: bool
    score: float
    why: str


def check(
    caption: str,
    ocr_text: str,
    cosine: float | None,
    min_score: float,
    *,
    floor: float = COSINE_FLOOR,
    ceiling: float = COSINE_CEILING,
) -> Verdict:
    """The alignment check: ok when either side is empty or names nothing comparable (nothing to
    compare), or when the agreement is at least `min_score`. The reason names the score and the
    threshold and, on a disagreement, what the caption names that the image's text does not."""
    if not caption.strip():
        return Verdict(True, NEUTRAL, "nothing to compare: no caption")
    if not ocr_text.strip():
        return Verdict(True, NEUTRAL, "nothing to compare: no text was read in the image")
    c = _compare(caption, ocr_text, cosine, floor, ceiling)
    if c.nothing:
        return Verdict(True, c.score, f"nothing to compare: {c.nothing}")
    if c.score >= min_score:
        return Verdict(True, c.score, f"caption and image text agree ({c.score:.2f} ≥ {min_score})")
    why = f"caption and image text disagree ({c.score:.2f} < {min_score})"
    if c.conflicts:
        why += "; " + ", ".join(
            f"the caption names {a} where the image shows {b}" for a, b in c.conflicts
        )
    elif c.unsupported:
        named = ", ".join(f"'{w}'" for w in c.unsupported[:NAMED_IN_WHY])
        why += f"; the image's text does not say {named}"
    return Verdict(False, c.score, why)
