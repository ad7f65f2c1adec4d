"""Supersession without ids: when a new fact or preference states a new value of the same thing.

Clients rarely send `supersedes`: a user says "the team moved its chat over to Slack" a month after
"our team talks on Microsoft Teams" and nothing links the two. The writer weighs each new fact or
preference against its near neighbours of the same namespace and kind (the same probe that finds
near-duplicates), and this policy decides, locally and in both languages:

- **The same thing**: the vectors lie close (cosine ≥ `supersede.cosine`), or the two share most of
  the older memory's subject terms (`subject_overlap`), both are said by the same speaker, and
  two `topic` labels, when both have one, are the same (a client's labels that differ say two
  things, as reconciliation reads them).
- **Not both true** (`both_hold`): neither text says it adds to the other ("also", "another", "a
  second", "too"; "也", "还有", "另一", "第二"), and both are about the same holder: "my sister's
  address" never replaces "my address" ("my son" / "my daughter", "my son Leo" / "my son Noah",
  "我妹妹" / "我", "我妈" / "我爸").
- **A new value**: a number, date or time that differs (the identifiers of the merge policy), a
  negation that flips ("does not support Android" → "supports Android", "不支持" → "支持"), a
  named entity that differs (a capitalised name, a Latin word in Chinese text), or, the weakest, a
  changed object: each text has content terms the other lacks, unless one states a liking and
  neither a favourite ("I like snow", then "I like autumn": both hold).

The verdict carries a reason code (`value:number`, `value:date`, `value:negation`, `value:entity`,
`value:object`) that the reply and Get report. When unsure it does not mark: the ranking still
puts the newer of two current memories of one slot first (`server.core.query.succession`).

The word lists and `cosine` were checked on the tune half of `python -m bench update` (its figures
are in the commit that set them); nothing here was read off its report half.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from server.core.memo import TextMemo
from server.core.memory.model import Kind, Record
from server.core.memory.write.dedup import identifiers
from server.core.settings import SupersedeSettings

KINDS = frozenset({Kind.FACT, Kind.PREFERENCE})
MEMO_TEXTS = 1024
# Texts whose traits (`both_hold`) are remembered: a Recall's candidates and a write's neighbours.
TRAIT_TEXTS = 8192

# Words that say the new statement adds to the old one rather than replacing it.
_ADDS_EN = re.compile(
    r"\b(?:also|another|too|as well|second|both|in addition|additionally|besides|plus|"
    r"other one|one more|extra|new (?:second|additional)|additional)\b",
    re.IGNORECASE,
)
# Not "都" (all, always: "快递都寄到驿站") nor "又" (again: "又换了"): both restate a value.
_ADDS_ZH = re.compile(r"也|还有|另一|另外|第二|以及|再加|多了|同时")
# Who the statement is about, when it is not the speaker: a relation or a possessive.
_HOLDERS_EN = frozenset(
    [
        "wife",
        "husband",
        "partner",
        "spouse",
        "girlfriend",
        "boyfriend",
        "fiance",
        "fiancee",
        "son",
        "daughter",
        "kid",
        "child",
        "children",
        "baby",
        "mother",
        "mom",
        "mum",
        "father",
        "dad",
        "parent",
        "sister",
        "brother",
        "sibling",
        "grandma",
        "grandpa",
        "grandmother",
        "grandfather",
        "aunt",
        "uncle",
        "cousin",
        "niece",
        "nephew",
        "friend",
        "roommate",
        "neighbor",
        "neighbour",
        "colleague",
        "coworker",
        "boss",
        "manager",
        "teammate",
        "landlord",
        "dog",
        "cat",
        "pet",
    ]
)
# A relation and the name that follows it ("my son Leo" and "my son Noah" are two holders).
_HOLDER_EN = re.compile(r"\b(?i:(" + "|".join(_HOLDERS_EN) + r")s?)\b")
# The name after a relation to a person ("my son Leo", "my sister Grace"), not after a pet's
# ("the cat Purina" names its food).
_NAMED = re.compile(r"\s+([A-Z][a-z]+)")
_PETS = frozenset({"dog", "cat", "pet"})
# A relation's qualifier: "my older son" and "my younger son" are two holders.
_QUALIFIED = re.compile(
    r"\b(older|oldest|elder|eldest|younger|youngest|little|big|first|second|third|middle)\s+$",
    re.IGNORECASE,
)
# A named person's possession: "Alice's address", "Bob’s car".
_POSSESSOR = re.compile(r"\b([A-Z][a-z]+)['’]s\b")
# A number that names a thing: "order 48213", "ticket #77", "room 1204", "订单48213", "工单号77".
_NUMBERED = re.compile(
    r"(?i:\b(?:order|ticket|case|invoice|room|flight|account|issue|pr|no\.?)\s*#?\s*|#\s*)(\d+)"
    r"|(?:订单|工单|单号|编号|房间|航班|账号)号?\s*(\d+)"
)
_DIGIT = re.compile(r"\d")
# "It's", "That's": not a possession.
_CONTRACTED = frozenset(
    [
        "it",
        "that",
        "what",
        "here",
        "there",
        "he",
        "she",
        "let",
        "who",
        "where",
        "how",
        "when",
        "why",
        "everyone",
        "everything",
        "nobody",
        "today",
        "tomorrow",
        "yesterday",
    ]
)
# 大儿子, 小女儿, 二姐, 老大: the qualifier is part of the holder.
_QUALIFIED_ZH = re.compile(r"([大小二三老])(儿子|女儿|孩子|姐|哥|弟|妹)")
# A named person's possession in Chinese: a surname and a one- or two-character given name before
# 的 ("张伟的地址", "李娜的电话"); not 家里的, 公司的.
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵"
)
_POSSESSOR_ZH = re.compile(rf"(?:^|[，。；：,;:\s])([{_SURNAMES}][\u4e00-\u9fff]{{1,2}}?)的")
_PRONOUNS_ZH = frozenset({"大家", "自己"})  # and any beginning with a pronoun (我家, 他们)
# Longer words first where one holds another ("爸妈" before "爸", "妈妈" before "妈"); not the
# dog of "搜狗" (an input method), nor "宠物" (a pet hospital is no holder).
_HOLDER_ZH = re.compile(
    r"妻子|老婆|太太|丈夫|老公|先生|男朋友|女朋友|对象|儿子|女儿|孩子|宝宝|爸妈|妈妈|母亲|爸爸|"
    r"父亲|父母|姐姐|妹妹|哥哥|弟弟|奶奶|爷爷|外婆|外公|姥姥|姥爷|阿姨|叔叔|舅舅|姑姑|表哥|表姐|"
    r"表妹|表弟|堂哥|堂姐|侄子|侄女|朋友|室友|邻居|同事|老板|领导|经理|房东|妈|爸|(?<!搜)狗|猫"
)
# One holder, several words.
_SAME_HOLDER_ZH = {
    "老婆": "妻子",
    "太太": "妻子",
    "老公": "丈夫",
    "妈妈": "妈",
    "母亲": "妈",
    "爸爸": "爸",
    "父亲": "爸",
    "爸妈": "父母",
}
_NEGATION_EN = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|"
    r"(?:do|does|did|is|are|was|were|has|have|had|can|could|will|would|should|wo|ca)n['’]?t|"
    r"no longer|stopped|quit|gave up)\b",
    re.IGNORECASE,
)
_NEGATION_ZH = re.compile(r"不|没|未|无|别|非|停止|戒了|放弃")
# A liking adds: "I like snow" and later "I like autumn" both hold, unless one of them names a
# favourite, an only or a usual choice (one value).
_LIKES = re.compile(
    r"\b(?:(?:dis)?likes?|loves?|enjoys?|hates?)\b|喜欢|爱|享受|讨厌", re.IGNORECASE
)
_ONE_VALUE = re.compile(
    r"\b(?:favou?rite|best|only|go-to|usual|usually|always)\b|最|只|首选|一般|(?<!非)常",
    re.IGNORECASE,
)
# A name: a capitalised word that does not begin a sentence, or a Latin word in Chinese text.
_CAPITAL = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w&+-]*(?:\s+[A-Z][\w&+-]*)*")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9&+.-]*")
_CJK = re.compile(r"[\u3400-\u9fff]")
_NOT_NAMES = frozenset({"i", "i'm", "i've", "i'd", "i'll"})


@dataclass(frozen=True)
class Verdict:
    """Whether the newer memory supersedes the older, the reason code, and the words for logs."""

    supersede: bool
    code: str
    detail: str


def _holders(text: str) -> frozenset[str]:
    """Whom the text is about besides the speaker: relations (with a name that follows one)."""
    en: list[str] = []
    for m in _HOLDER_EN.finditer(text):
        rel = m.group(1).lower()
        name = None if rel in _PETS else _NAMED.match(text, m.end())
        en.append(f"{rel}:{name.group(1).lower()}" if name else rel)
    zh = [_SAME_HOLDER_ZH.get(h, h) for h in _HOLDER_ZH.findall(text)]
    return frozenset(en + zh)


def _owners(text: str) -> frozenset[str]:
    """Whose, more narrowly: a named person's possession ("Alice's address", "张伟的地址") and a
    qualified relation ("my older son", "我大儿子"). Two texts differ in owner only when both
    name one (a name is as often a place: "Rosa's house", "Trader Joe's")."""
    out: list[str] = []
    for m in _HOLDER_EN.finditer(text):
        q = _QUALIFIED.search(text, 0, m.start())
        if q is not None:
            out.append(f"{q.group(1).lower()} {m.group(1).lower()}")
    out.extend(
        f"{w}'s" for m in _POSSESSOR.finditer(text) if (w := m.group(1).lower()) not in _CONTRACTED
    )
    out.extend(a + b for a, b in _QUALIFIED_ZH.findall(text))
    out.extend(
        f"{n}的"
        for n in _POSSESSOR_ZH.findall(text)
        if n not in _PRONOUNS_ZH and n[0] not in "我你他她咱"
    )
    return frozenset(out)


def _negated(text: str) -> bool:
    return bool(_NEGATION_EN.search(text) or _NEGATION_ZH.search(text))


def _adds(text: str) -> bool:
    return bool(_ADDS_EN.search(text) or _ADDS_ZH.search(text))


def _adds_a_liking(new: str, old: str) -> bool:
    """Both hold: one of the two states a liking and neither names one value of it."""
    liked = bool(_LIKES.search(new) or _LIKES.search(old))
    return liked and not (_ONE_VALUE.search(new) or _ONE_VALUE.search(old))


@dataclass(frozen=True)
class Traits:
    """What `both_hold` reads of one text, read once (a Recall weighs a candidate against
    several; a write against its neighbours)."""

    adds: bool
    holders: frozenset[str]
    owners: frozenset[str]
    codes: frozenset[str]


def _read(text: str) -> Traits:
    return Traits(_adds(text), _holders(text), _owners(text), _codes(text))


traits: TextMemo[Traits] = TextMemo(_read, TRAIT_TEXTS)


def _other_holder(a: str, b: str) -> bool:
    """Whether two texts are about two holders: other relations, or two named owners."""
    return _two_holders(traits(a), traits(b))


def _two_holders(a: Traits, b: Traits) -> bool:
    return a.holders != b.holders or bool(a.owners and b.owners and a.owners != b.owners)


def both_hold(newer: str, older: str) -> str:
    """Why two statements can both hold, "" when they may be two values of one thing: the newer
    says it adds to the older ("also", "另一"), the two are about different holders ("my sister"
    and "my brother", "my son Leo" and "my son Noah", "Alice's" and "Bob's"), or they name two
    things by their codes (E1234, E1240). The writer's verdict and the ranking's slots
    (`server.core.query.succession`, through `hold_both` on traits read once) share it."""
    return hold_both(traits(newer), traits(older))


def hold_both(n: Traits, o: Traits) -> str:
    """`both_hold` on the two texts' traits."""
    if n.adds:
        return "the newer one adds to the older"
    if _two_holders(n, o):
        return "about someone else"
    if n.codes and o.codes and n.codes != o.codes:
        return "two things with codes of their own"
    return ""


def _codes(text: str) -> frozenset[str]:
    """The codes a text names things by: identifiers that begin with a letter and hold a digit
    (E1234, ORD-48213, RTX4090). Two codes are two things (a ticket, an order), not two values of
    one; a quantity with its unit (6pm, 76kg, 3rd) begins with its digit."""
    codes = {
        t for t in identifiers(text) if t[:1].isascii() and t[:1].isalpha() and _DIGIT.search(t)
    }
    codes.update(f"#{a or b}" for a, b in _NUMBERED.findall(text))
    return frozenset(codes)


def _entities(text: str) -> frozenset[str]:
    """Capitalised names (not the first word of a sentence, not "I"); in Chinese text, its Latin
    words (product and company names)."""
    found = _LATIN.findall(text) if _CJK.search(text) else _CAPITAL.findall(text.strip())
    return frozenset(f.lower() for f in found if f.lower() not in _NOT_NAMES)


class SupersedePolicy:
    """Decides whether a newer memory states a new value of what an older one said."""

    def __init__(self, settings: SupersedeSettings, terms: Callable[[str], list[str]]) -> None:
        self._s = settings
        self._terms: TextMemo[frozenset[str]] = TextMemo(lambda t: frozenset(terms(t)), MEMO_TEXTS)
        self._ids: TextMemo[frozenset[str]] = TextMemo(identifiers, MEMO_TEXTS)

    @property
    def enabled(self) -> bool:
        return self._s.enabled

    def eligible(self, rec: Record) -> bool:
        """Only facts and preferences with a text state values that can change."""
        return self._s.enabled and rec.kind in KINDS and bool(rec.text.strip())

    def verdict(self, new: Record, old: Record, cosine: float) -> Verdict:
        """Whether `new` (the later statement) supersedes `old`."""
        if new.kind != old.kind or new.namespace != old.namespace or old.obsolete:
            return Verdict(False, "", "not comparable")
        if new.speaker != old.speaker:
            return Verdict(False, "", "another speaker")
        if new.topic and old.topic and new.topic != old.topic:
            return Verdict(False, "", f"another topic ({old.topic})")
        if new.created_at <= old.created_at:  # said at once, both hold (a list of facts)
            return Verdict(False, "", "not later than the memory it would replace")
        if cosine < self._s.cosine:
            return Verdict(False, "", f"another subject (cosine {cosine:.2f})")
        why = both_hold(new.text, old.text)
        if why:
            return Verdict(False, "", why)
        return self._changed(new.text, old.text, cosine)

    def contradicts(self, fact: Record, old: Record, cosine: float) -> Verdict:
        """Whether an authoritative fact contradicts a current memory (reconciliation): on the
        same topic (the same label, or no label on the memory and close vectors) and about the
        same holder, a new value. Who said it and when do not matter: the fact wins."""
        if not fact.text.strip() or not old.text.strip() or old.obsolete:
            return Verdict(False, "", "not comparable")
        if fact.topic and old.topic and fact.topic != old.topic:
            return Verdict(False, "", f"another topic ({old.topic})")
        if not (fact.topic and old.topic == fact.topic) and cosine < self._s.cosine:
            return Verdict(False, "", f"another subject (cosine {cosine:.2f})")
        if _other_holder(fact.text, old.text):
            return Verdict(False, "", "about someone else")
        return self._changed(fact.text, old.text, cosine)

    def _changed(self, new: str, old: str, cosine: float) -> Verdict:
        """The new value, strongest evidence first. A changed number needs the rest of the words
        to agree (the subject terms, `subject_overlap`); a changed name or object, vectors that
        lie closer (`cosine` + `name_margin`, + `object_margin`)."""
        s = self._s
        ids_old, ids_new = self._ids(old), self._ids(new)
        a, b = self._terms(old) - ids_old, self._terms(new) - ids_new
        shared = len(a & b) / len(a | b) if a | b else 0.0
        if ids_old != ids_new and ids_old and ids_new and shared >= s.subject_overlap:
            dated = any(not any(c.isdigit() for c in t) for t in ids_old ^ ids_new)
            code = "value:date" if dated else "value:number"
            return Verdict(True, code, f"{sorted(ids_old)} → {sorted(ids_new)}")
        if _negated(new) != _negated(old) and shared >= s.subject_overlap:
            return Verdict(True, "value:negation", f"a negation flipped (terms {shared:.2f})")
        ent_old, ent_new = _entities(old) - ids_old, _entities(new) - ids_new
        if ent_new - ent_old and ent_old - ent_new and cosine >= s.cosine + s.name_margin:
            return Verdict(True, "value:entity", f"{sorted(ent_old)} → {sorted(ent_new)}")
        if (
            a & b
            and a - b
            and b - a
            and cosine >= s.cosine + s.object_margin
            and not _adds_a_liking(new, old)
        ):
            return Verdict(True, "value:object", f"cosine {cosine:.2f}, changed terms")
        return Verdict(False, "", f"no new value (cosine {cosine:.2f}, terms {shared:.2f})")
