"""A seeded memory world for the store-routing bench: four stores per user, and questions whose
gold is the minimal set of stores that answers them (as in "Did You Check the Right Pocket?
Cost-Sensitive Store Routing for Memory-Augmented Agents").

The world. Each user is one namespace, writing English or Chinese (users alternate: even indices
English, odd Chinese); every memory of a user is in the user's language. A user has about 16-22
everyday topics out of `TOPICS` (42: trips, renovations, a job search, the dog's vet visits, a
wedding, piano lessons, a car repair, ...). A topic has three or four kinds of detail (`Slot`: the
hotel, the flight time, the contractor's quote), each told in one user turn with a value drawn at
random (names, places, prices, times, dates). The stores:
- `transcript`: 20-40 past sessions over the last six months, 10-30 turns each, alternating user
  and assistant, on 1-3 topics each: a turn that opens the topic, one turn per detail, the
  assistant's replies, and small talk. A kind of detail of a topic is told in one past session
  only, so every past detail has one answer turn.
- `summary`: one summary per past session (2-4 sentences, the gist: which topics, which kinds of
  detail, never a value), dated at the session's end, with no session id.
- `session`: the current conversation, 8-16 turns between 5 and 120 minutes before `NOW` (for
  some users all of it is older than 30 minutes), on 2-3 topics, most of which the past sessions
  also discussed. Per topic it holds a kind of detail no past session has (`session_only`), and
  often one that a past session holds with another value (`shared`).
- `profile`: 12-20 facts and preferences in the third person (`ATTRS`: the sister's name, the
  seat preference, the usual coffee, ...), dated over the past months; 2-4 attributes changed
  over time, with an older and a newer memory, and only the newer one is the answer.
So one topic lives in several stores with different details: the current session names the Kyoto
restaurant, a past transcript the Kyoto hotel, a summary says the Kyoto trip was planned, the
profile says the user prefers small family-run inns. Some details are linked to an attribute
(a hotel to the preferred kind of accommodation, a flight to the seat preference), and the
user's profile holds the attributes linked to the current session.

The questions (`bench/data/routing_questions.json`: whole templates, each of the `tune` or the
`report` half, balanced per language and type). Types: `session`, `profile`, `summary`,
`transcript`, the two-store `summary+transcript`, `profile+session`, `session+transcript`,
`profile+summary`, and `none` (small talk, no store). A user's questions cycle through the types,
so the types are about equally frequent; about 10 % are asked in the other language than the
user's memories. A template's `pick` says what it is drawn from (see the file's "about"), so a
question's gold stores are where its answers lie, and its answers are memory ids: the detail
turn (session or transcript), the profile memory (the newest of a changed attribute), and every
summary of the topic. A wording that does not say which conversation it means ("remind me of the
hotel for the Kyoto trip", "how are my plans for the Kyoto trip shaping up") only draws a detail
or topic that the other conversation stores do not hold, so every question has one right set.
`load_templates` reads and checks the template file; `check(world)` lists what is wrong with a
world (ids, text lengths, answers outside the gold stores).

What favours a router: many questions carry cues ("a few minutes ago", "over the past months",
"in March", "the user's"), the session is recent and small, profile questions name an attribute,
summary questions ask for a gist and never a value. What makes it hard: cue-free paraphrases
("remind me of the hotel for the Kyoto trip" asked of the session, "tell me the hotel for the
Kyoto trip" of a transcript, in the same words); words that mislead a keyword rule ("earlier",
"before", "my", "之前", "我的" in profile, summary, transcript and none questions); the same topic
in every store with other details, and the same kind of detail in the session and a transcript
(with "back then" deciding); changed preferences; explicit time references that must be matched
against event times; cross-lingual questions; held-out templates; and `big`, a namespace whose
transcripts hold about `big` memories (filler sessions on the topics its core world does not
use, so its questions stay unambiguous).

`build(seed)` is deterministic for a seed; all questions are asked at `NOW`.
"""

from __future__ import annotations

import calendar
import json
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

STORES = ("session", "profile", "summary", "transcript")
STORE_COST = {"session": 1.0, "profile": 1.0, "summary": 3.0, "transcript": 5.0}
TYPES = (
    "session",
    "profile",
    "summary",
    "transcript",
    "summary+transcript",
    "profile+session",
    "session+transcript",
    "profile+summary",
    "none",
)
HALVES = ("tune", "report")
LANGS = ("en", "zh")
NOW = float(calendar.timegm((2026, 11, 20, 12, 0, 0)))  # 2026-11-20T12:00:00Z
DAY = 86_400.0
MINUTE = 60.0
CROSS_LINGUAL = 0.1  # the share of questions asked in the other language
TEMPLATES = Path(__file__).parent / "data" / "routing_questions.json"

T = TypeVar("T")

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@dataclass(frozen=True)
class Memory:
    id: str  # unique within the namespace
    store: str  # "session" | "profile" | "summary" | "transcript"
    kind: str  # "episode" | "fact" | "preference" | "summary"
    text: str
    created_at: float  # event time, seconds since the epoch (UTC)
    session_id: str  # "" when none
    turn: int  # position in its session, -1 when none
    speaker: str  # "user" / "assistant" / ""
    lang: str  # "en" | "zh"


@dataclass(frozen=True)
class Question:
    namespace: str
    text: str
    lang: str
    type: str  # one of TYPES
    template: str  # template id
    half: str  # "tune" | "report"
    stores: tuple[str, ...]  # the gold minimal store set, sorted
    answers: tuple[str, ...]  # memory ids holding the answer


@dataclass
class World:
    now: float  # the time every question is asked at
    memories: dict[str, list[Memory]]  # namespace -> its memories
    questions: list[Question]


# ---------------------------------------------------------------------------------------------
# Content. Pairs are (English, Chinese); lists are "|"-separated. A value list that starts with
# "@" is drawn by a generator: @time, @eve (an evening time), @date, @wday, @num:lo:hi,
# @money:lo:hi (dollars in English, about seven times as many yuan in Chinese).

Bi = tuple[str, str]
BiList = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Slot:
    """A kind of detail of a topic: `noun` bare ("hotel"), `thing` with its context ("hotel for
    the Kyoto trip"), the values and the user's sentences that tell one ({v})."""

    key: str
    noun: Bi
    thing: Bi
    values: BiList
    says: BiList
    links: tuple[str, ...]  # profile attributes a value of it should fit


@dataclass(frozen=True)
class Topic:
    key: str
    name: Bi  # in questions and in the user's words
    about: Bi  # in the assistant's words and in summaries
    gist: Bi  # one summary sentence, without details
    slots: tuple[Slot, ...]


@dataclass(frozen=True)
class Attr:
    """A profile attribute: the note that states it ({v}), and the note of a changed value
    ("" where it does not change)."""

    key: str
    kind: str  # "fact" | "preference"
    noun: Bi
    values: BiList
    says: Bi
    changed: Bi


def _bi(en: str, zh: str) -> BiList:
    return tuple(en.split("|")), tuple(zh.split("|"))


def _s(
    key: str,
    noun: Bi,
    thing: Bi,
    values: Bi,
    says: Bi,
    links: str = "",
) -> Slot:
    return Slot(key, noun, thing, _bi(*values), _bi(*says), tuple(links.split()) if links else ())


def _t(key: str, name: Bi, about: Bi, gist: Bi, *slots: Slot) -> Topic:
    return Topic(key, name, about, gist, slots)


_EN_NAMES = "Maria Lopez|Tom Becker|Priya Shah|Daniel Kim|Sofia Rossi|Ben Carter|Hannah Weiss"
_ZH_NAMES = "王磊|陈静|刘洋|张敏|李娜|赵强|孙悦|周凯"

TOPICS: tuple[Topic, ...] = (
    _t(
        "kyoto",
        ("the Kyoto trip", "京都之行"),
        ("the Kyoto trip", "京都之行"),
        (
            "The user is planning the Kyoto trip and what to book.",
            "用户在筹划京都之行，考虑要订些什么。",
        ),
        _s(
            "hotel",
            ("hotel", "酒店"),
            ("hotel for the Kyoto trip", "京都之行住的酒店"),
            (
                "the Hiiragiya ryokan|the Hotel Granvia|a small inn near Gion|the Ace Hotel on "
                "Karasuma|the Kyoto Tower Hotel",
                "柊家旅馆|格兰比亚酒店|祇园附近的一家小旅馆|乌丸的王牌酒店|京都塔酒店",
            ),
            (
                "For the Kyoto trip I booked {v} for all four nights.|We'll stay at {v} while "
                "we're in Kyoto, it looked lovely.",
                "京都那几晚我订的是{v}。|去京都我们就住{v}，看着挺不错的。",
            ),
            "lodging",
        ),
        _s(
            "restaurant",
            ("restaurant", "餐厅"),
            ("restaurant in Kyoto", "京都要去的餐厅"),
            (
                "Okutan tofu near Nanzen-ji|Gion Karyo|Kichi Kichi omurice|Ganko Sushi on Sanjo",
                "南禅寺旁边的奥丹汤豆腐|祇园花梨|吉吉蛋包饭|三条的雁香寿司",
            ),
            (
                "In Kyoto I'd really like one dinner at {v}.|Let's reserve {v} for our first "
                "evening in Kyoto.",
                "在京都我想去{v}吃一顿晚饭。|京都第一天晚上就订{v}吧。",
            ),
            "cuisine",
        ),
        _s(
            "flight",
            ("flight time", "航班时间"),
            ("departure time of the flight to Kyoto", "去京都的航班起飞时间"),
            ("@time", "@time"),
            (
                "Our flight to Osaka for the Kyoto trip leaves at {v}, I've already checked in.",
                "去京都要先飞大阪，航班{v}起飞，我已经值机了。",
            ),
            "wake",
        ),
        _s(
            "temple",
            ("temple", "寺庙"),
            ("temple I most want to see in Kyoto", "京都最想去的寺庙"),
            (
                "Kinkaku-ji|Fushimi Inari|Kiyomizu-dera|Ginkaku-ji|Tofuku-ji",
                "金阁寺|伏见稻荷大社|清水寺|银阁寺|东福寺",
            ),
            (
                "The one temple I really don't want to miss in Kyoto is {v}.",
                "京都我最想去的地方是{v}，一定不能错过。",
            ),
        ),
    ),
    _t(
        "lisbon",
        ("the Lisbon trip", "里斯本之行"),
        ("the Lisbon trip", "里斯本之行"),
        ("The user went over plans for the Lisbon trip.", "用户聊了里斯本之行的各项安排。"),
        _s(
            "apartment",
            ("apartment", "公寓"),
            ("apartment we rented in Lisbon", "里斯本租的公寓"),
            (
                "a flat in Alfama|an apartment near Rossio|a loft in Bairro Alto|a studio in "
                "Príncipe Real",
                "阿尔法玛区的一套公寓|罗西奥广场附近的公寓|上城区的一间阁楼|王子区的一间小开间",
            ),
            (
                "In Lisbon we rented {v}, right in the middle of everything.",
                "里斯本我们租了{v}，位置很方便。",
            ),
            "lodging",
        ),
        _s(
            "daytrip",
            ("day trip", "一日游"),
            ("day trip from Lisbon", "从里斯本出发的一日游"),
            ("Sintra|Cascais|Óbidos|Évora", "辛特拉|卡斯凯什|奥比多斯|埃武拉"),
            (
                "For the day trip from Lisbon we picked {v}, by train if possible.",
                "从里斯本出发的一日游我们选了{v}，尽量坐火车去。",
            ),
        ),
        _s(
            "restaurant",
            ("restaurant", "餐厅"),
            ("seafood place in Lisbon", "里斯本的海鲜馆"),
            (
                "Cervejaria Ramiro|Marisqueira Azul|Sea Me in Chiado|O Pescador",
                "拉米罗海鲜馆|蓝色海鲜屋|希亚多的Sea Me|渔夫餐厅",
            ),
            (
                "Everyone says {v} is the best seafood in Lisbon, so let's book it.",
                "大家都说{v}是里斯本最好吃的海鲜，我们订一下。",
            ),
            "cuisine",
        ),
        _s(
            "flight",
            ("flight time", "航班时间"),
            ("time of the flight to Lisbon", "飞里斯本的航班时间"),
            ("@time", "@time"),
            (
                "The flight to Lisbon is at {v}, with a short stop in Frankfurt.",
                "飞里斯本的航班是{v}，中间在法兰克福转一下。",
            ),
            "wake",
        ),
        _s(
            "airline",
            ("airline", "航空公司"),
            ("airline we're flying to Lisbon with", "飞里斯本坐的航空公司"),
            ("TAP|KLM|Lufthansa|easyJet", "葡萄牙航空|汉莎航空|荷兰皇家航空|阿联酋航空"),
            (
                "We're flying {v} to Lisbon, it was the cheapest option.",
                "去里斯本我们坐{v}，是最便宜的。",
            ),
            "airline",
        ),
    ),
    _t(
        "iceland",
        ("the Iceland road trip", "冰岛自驾游"),
        ("the Iceland road trip", "冰岛自驾游"),
        (
            "The user is preparing the Iceland road trip and its logistics.",
            "用户在准备冰岛自驾游的行程。",
        ),
        _s(
            "car",
            ("rental car", "租车"),
            ("rental car for Iceland", "冰岛自驾租的车"),
            (
                "a Dacia Duster|a Toyota Land Cruiser|a small Suzuki Jimny|a camper van",
                "一辆达契亚Duster|一辆丰田陆地巡洋舰|一辆铃木吉姆尼|一辆露营车",
            ),
            (
                "For Iceland we reserved {v}, four-wheel drive for the gravel roads.",
                "冰岛那边我们订了{v}，四驱的，方便走碎石路。",
            ),
        ),
        _s(
            "stop",
            ("stop", "景点"),
            ("stop I most look forward to in Iceland", "冰岛最期待的一站"),
            (
                "the Jökulsárlón glacier lagoon|Kirkjufell mountain|the black beach at Vík|the "
                "Mývatn hot springs",
                "杰古沙龙冰河湖|草帽山|维克黑沙滩|米湖温泉",
            ),
            (
                "The stop I'm most excited about in Iceland is {v}.",
                "冰岛这趟我最期待的是{v}。",
            ),
        ),
        _s(
            "guesthouse",
            ("guesthouse", "民宿"),
            ("guesthouse near the glaciers", "冰川附近的民宿"),
            (
                "Hali Country Hotel|a farm stay at Hof|the Skyrhúsið guesthouse|a cabin at "
                "Hrífunes",
                "哈利乡村酒店|霍夫的一家农场民宿|一家叫Skyr之家的民宿|赫里夫内斯的小木屋",
            ),
            (
                "Near the glaciers we'll sleep at {v}, it only had one room left.",
                "冰川那边我们住{v}，只剩最后一间房了。",
            ),
            "lodging",
        ),
        _s(
            "days",
            ("number of days", "天数"),
            ("number of days for the Iceland road trip", "冰岛自驾的天数"),
            ("@num:7:14", "@num:7:14"),
            (
                "We settled on {v} days for the Iceland loop, not a day less.",
                "冰岛环岛我们定了{v}天，不能再少了。",
            ),
        ),
    ),
    _t(
        "kitchen",
        ("the kitchen renovation", "厨房装修"),
        ("the kitchen renovation", "厨房装修"),
        (
            "The user discussed how the kitchen renovation is being organised.",
            "用户聊了厨房装修怎么安排。",
        ),
        _s(
            "contractor",
            ("contractor", "施工队"),
            ("contractor for the kitchen", "厨房装修的施工队"),
            (
                "Mark Fischer's company|BuildRight|the Novak brothers|a firm called Oak & Stone",
                "老周的装修队|家美装饰|一家叫匠心的公司|刘师傅的团队",
            ),
            (
                "We're going with {v} for the kitchen, they seemed the most careful.",
                "厨房我们决定找{v}来做，看着最靠谱。",
            ),
        ),
        _s(
            "quote",
            ("quote", "报价"),
            ("contractor's quote for the kitchen", "厨房装修的报价"),
            ("@money:9000:30000", "@money:9000:30000"),
            (
                "The quote for the kitchen came in at {v}, a bit more than I hoped.",
                "厨房装修的报价出来了，{v}，比我想的贵一点。",
            ),
        ),
        _s(
            "counter",
            ("countertop", "台面"),
            ("countertop material for the kitchen", "厨房台面的材料"),
            (
                "quartz|oak butcher block|white marble|black granite",
                "石英石|橡木|白色大理石|黑色花岗岩",
            ),
            (
                "For the kitchen countertop I finally picked {v}.",
                "厨房台面我最后选了{v}。",
            ),
        ),
        _s(
            "start",
            ("start date", "开工日期"),
            ("start date of the kitchen work", "厨房开工的日期"),
            ("@date", "@date"),
            (
                "They can start tearing out the old kitchen on {v}.",
                "他们{v}就可以开始拆旧厨房了。",
            ),
        ),
    ),
    _t(
        "painting",
        ("repainting the living room", "客厅刷墙"),
        ("repainting the living room", "客厅刷墙"),
        (
            "The user talked about repainting the living room and colours.",
            "用户聊了客厅刷墙和选颜色。",
        ),
        _s(
            "colour",
            ("paint colour", "颜色"),
            ("paint colour for the living room", "客厅墙面的颜色"),
            (
                "a pale sage green|warm off-white|a dusty blue|light terracotta",
                "浅灰绿色|暖白色|雾霾蓝|浅陶土色",
            ),
            (
                "I've decided the living room walls will be {v}.",
                "客厅的墙我决定刷成{v}。",
            ),
        ),
        _s(
            "painter",
            ("painter", "油漆师傅"),
            ("painter doing the living room", "给客厅刷墙的师傅"),
            (
                "a painter called Luis|the Hartley decorators|my neighbour's painter, Sam|a "
                "small firm called Brushworks",
                "小区推荐的王师傅|姓李的油漆工|邻居介绍的陈师傅|一家叫彩虹的装饰队",
            ),
            (
                "The painter for the living room will be {v}, they had good reviews.",
                "客厅刷墙找的是{v}，口碑不错。",
            ),
        ),
        _s(
            "days",
            ("time needed", "工期"),
            ("time the living room painting will take", "客厅刷墙要的天数"),
            ("@num:2:6", "@num:2:6"),
            (
                "The painter said the living room will take about {v} days to finish.",
                "师傅说客厅刷完大概要{v}天。",
            ),
        ),
    ),
    _t(
        "jobsearch",
        ("the job search", "找工作"),
        ("the job search", "找工作"),
        ("The user shared how the job search is going.", "用户说了找工作的进展。"),
        _s(
            "company",
            ("company", "公司"),
            ("company I'm most hopeful about", "最看好的面试公司"),
            (
                "Northwind Analytics|a fintech startup called Lumio|Helix Robotics|the city's "
                "transport authority",
                "一家叫云帆的数据公司|做金融科技的初创公司极光|海克斯机器人|市交通局",
            ),
            (
                "The interview I'm most hopeful about is with {v}.",
                "我最看好的那个面试是{v}的。",
            ),
        ),
        _s(
            "interview",
            ("interview date", "面试时间"),
            ("date of the final interview", "终面的日期"),
            ("@date", "@date"),
            (
                "My final round interview is on {v}, three people on the panel.",
                "终面定在{v}，有三个面试官。",
            ),
        ),
        _s(
            "offer",
            ("salary offer", "薪资"),
            ("salary they offered me", "对方开的薪资"),
            ("@money:60000:120000", "@money:60000:120000"),
            (
                "They offered {v} a year, plus a small signing bonus.",
                "对方给的年薪是{v}，还有一点签约奖金。",
            ),
        ),
        _s(
            "recruiter",
            ("recruiter", "招聘专员"),
            ("recruiter handling my application", "对接我的招聘专员"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "The recruiter handling my application is {v}, very responsive.",
                "负责我的招聘专员叫{v}，回复很快。",
            ),
        ),
    ),
    _t(
        "vet",
        ("the dog's vet visits", "带狗看兽医"),
        ("the dog's vet visits", "带狗看兽医"),
        (
            "The user talked about the dog's health and vet visits.",
            "用户聊了狗狗的健康和看兽医的事。",
        ),
        _s(
            "clinic",
            ("vet clinic", "宠物医院"),
            ("vet clinic we take the dog to", "带狗去的宠物医院"),
            (
                "Riverside Animal Clinic|Paws & Claws|the Elm Street vet|Greenfield Veterinary",
                "滨江宠物医院|爱宠动物医院|长青路的兽医站|绿野宠物诊所",
            ),
            (
                "We take the dog to {v} now, the vets there are gentle.",
                "现在带狗狗都去{v}，那里的医生很温柔。",
            ),
        ),
        _s(
            "weight",
            ("weight", "体重"),
            ("dog's weight at the check-up", "狗狗体检时的体重"),
            ("@num:8:32", "@num:8:32"),
            (
                "At the check-up the dog weighed {v} kilos, the vet wants a bit less.",
                "体检的时候狗狗{v}公斤，医生说要稍微减一点。",
            ),
        ),
        _s(
            "bill",
            ("vet bill", "费用"),
            ("bill from the vet", "看兽医的费用"),
            ("@money:80:400", "@money:80:400"),
            (
                "The vet bill came to {v}, mostly for the vaccines.",
                "这次看兽医花了{v}，主要是打疫苗。",
            ),
        ),
        _s(
            "next",
            ("next appointment", "复诊时间"),
            ("dog's next vet appointment", "狗狗下次复诊的时间"),
            ("@date", "@date"),
            (
                "The dog's next appointment at the vet is on {v}.",
                "狗狗下次去宠物医院复诊是{v}。",
            ),
        ),
    ),
    _t(
        "wedding",
        ("my cousin's wedding", "表妹的婚礼"),
        ("the cousin's wedding", "表妹的婚礼"),
        (
            "The user talked about preparing for the cousin's wedding.",
            "用户聊了参加表妹婚礼要准备的事。",
        ),
        _s(
            "venue",
            ("venue", "场地"),
            ("venue of my cousin's wedding", "表妹婚礼的场地"),
            (
                "a vineyard outside town|the old botanical garden|a lakeside hotel|a converted "
                "barn",
                "城外的一个酒庄|老植物园|湖边的一家酒店|一个老谷仓改的场地",
            ),
            (
                "My cousin's wedding will be at {v}, which sounds beautiful.",
                "表妹的婚礼办在{v}，听着就很美。",
            ),
        ),
        _s(
            "gift",
            ("gift", "礼物"),
            ("gift for my cousin's wedding", "表妹结婚的礼物"),
            (
                "a set of copper pans|a framed print|a spa weekend voucher|a good coffee machine",
                "一套铜锅|一幅装裱好的画|一张温泉周末券|一台咖啡机",
            ),
            (
                "For my cousin's wedding gift we went with {v}.",
                "表妹结婚的礼物我们选了{v}。",
            ),
        ),
        _s(
            "dress",
            ("dress code", "着装要求"),
            ("dress code for my cousin's wedding", "表妹婚礼的着装要求"),
            ("black tie|smart casual|garden party pastels|all white", "正装|商务休闲|浅色系|全白"),
            (
                "The invitation to my cousin's wedding says the dress code is {v}.",
                "表妹婚礼的请柬上写着着装要{v}。",
            ),
        ),
        _s(
            "date",
            ("date", "日期"),
            ("date of my cousin's wedding", "表妹婚礼的日期"),
            ("@date", "@date"),
            (
                "My cousin's wedding is on {v}, so I've asked for the day before off.",
                "表妹的婚礼在{v}，我已经请好假了。",
            ),
        ),
    ),
    _t(
        "piano",
        ("learning the piano", "学钢琴"),
        ("learning the piano", "学钢琴"),
        ("The user talked about piano lessons and practice.", "用户聊了学钢琴和练琴的情况。"),
        _s(
            "teacher",
            ("teacher", "老师"),
            ("piano teacher", "钢琴老师"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "My piano teacher is {v}, patient but strict about scales.",
                "我的钢琴老师是{v}，很有耐心，但对音阶要求很严。",
            ),
        ),
        _s(
            "piece",
            ("piece", "曲子"),
            ("piece I'm practising on the piano", "正在练的钢琴曲"),
            (
                "Satie's first Gymnopédie|a Chopin nocturne|Für Elise|a simple Bach minuet",
                "萨蒂的第一号吉诺佩蒂|肖邦的一首夜曲|《致爱丽丝》|巴赫的一首小步舞曲",
            ),
            (
                "On the piano I'm working on {v} at the moment.",
                "最近钢琴在练{v}，进步挺慢的。",
            ),
        ),
        _s(
            "lesson",
            ("lesson day", "上课时间"),
            ("day of my piano lesson", "钢琴课的上课时间"),
            ("@wday", "@wday"),
            (
                "My piano lesson moved to {v} evenings, which suits me better.",
                "钢琴课改到每{v}晚上了，这样更方便。",
            ),
        ),
        _s(
            "practice",
            ("practice time", "练琴时长"),
            ("length of my daily piano practice", "每天练琴的时长"),
            ("@num:20:60", "@num:20:60"),
            (
                "I try to practise the piano for {v} minutes every day.",
                "我尽量每天练琴{v}分钟。",
            ),
        ),
    ),
    _t(
        "car",
        ("the car repair", "修车"),
        ("the car repair", "修车"),
        ("The user discussed getting the car repaired at a garage.", "用户聊了车送去修理的事。"),
        _s(
            "garage",
            ("garage", "修理厂"),
            ("garage fixing the car", "修车的修理厂"),
            (
                "Hansen Auto|the garage on Mill Road|QuickFix Motors|a small place run by Mr. Osei",
                "顺达汽修|磨坊路那家修理厂|快修车行|老黄开的小修理铺",
            ),
            (
                "The car is at {v}, they had the earliest slot.",
                "车现在在{v}，他们最早能排上。",
            ),
        ),
        _s(
            "problem",
            ("problem", "毛病"),
            ("problem with the car", "车的毛病"),
            (
                "worn brake pads|a leaking radiator|a dead alternator|a cracked exhaust pipe",
                "刹车片磨损了|水箱漏水|发电机坏了|排气管裂了",
            ),
            (
                "The mechanic said the problem with the car was {v}.",
                "修理厂的师傅检查了一下，说是{v}。",
            ),
        ),
        _s(
            "cost",
            ("repair cost", "修理费"),
            ("cost of the car repair", "修车的费用"),
            ("@money:200:1500", "@money:200:1500"),
            (
                "The car repair will cost {v}, parts included.",
                "修车连零件一共要{v}。",
            ),
        ),
        _s(
            "pickup",
            ("pickup day", "取车时间"),
            ("day I can pick up the car", "取车的时间"),
            ("@wday", "@wday"),
            (
                "I can pick up the car from the garage on {v} afternoon.",
                "{v}下午就可以去修理厂取车了。",
            ),
        ),
    ),
    _t(
        "dentist",
        ("the dentist appointment", "看牙"),
        ("the dentist appointment", "看牙"),
        (
            "The user talked about a dental check-up and follow-up treatment.",
            "用户聊了看牙和后续治疗。",
        ),
        _s(
            "dentist",
            ("dentist", "牙医"),
            ("name of my dentist", "牙医的名字"),
            (
                "Dr. Patel|Dr. Nguyen|Dr. Okafor|Dr. Berg|Dr. Moreau",
                "王医生|陈医生|刘医生|黄医生|许医生",
            ),
            (
                "My new dentist is {v}, at the practice near the station.",
                "我新找的牙医是{v}，诊所在车站附近。",
            ),
        ),
        _s(
            "time",
            ("appointment time", "预约时间"),
            ("time of the dentist appointment", "看牙的预约时间"),
            ("@time", "@time"),
            (
                "The dentist appointment is at {v}, I need to leave work early.",
                "看牙约在{v}，我得跟公司请一会儿假。",
            ),
            "meeting",
        ),
        _s(
            "treatment",
            ("treatment", "治疗"),
            ("treatment the dentist suggested", "牙医建议的治疗"),
            (
                "a filling on a back tooth|a deep cleaning|a crown|whitening",
                "补后面那颗牙|深度洗牙|装牙冠|做牙齿美白",
            ),
            (
                "The dentist suggested {v} at the next visit.",
                "牙医建议我下次去{v}。",
            ),
        ),
        _s(
            "cost",
            ("cost", "费用"),
            ("cost of the dental work", "看牙的费用"),
            ("@money:60:900", "@money:60:900"),
            (
                "The dental work will come to {v} in total, sadly.",
                "这次看牙一共要花{v}。",
            ),
        ),
    ),
    _t(
        "bookclub",
        ("the book club", "读书会"),
        ("the book club", "读书会"),
        ("The user talked about the book club and its meetings.", "用户聊了读书会和聚会安排。"),
        _s(
            "book",
            ("book", "书"),
            ("book the book club is reading", "读书会在读的书"),
            (
                "Klara and the Sun|Middlemarch|The Remains of the Day|Pachinko",
                "《克拉拉与太阳》|《米德尔马契》|《长日将尽》|《弹子球游戏》",
            ),
            (
                "This month the book club is reading {v}, I'm halfway through.",
                "读书会这个月读的是{v}，我读了一半。",
            ),
        ),
        _s(
            "host",
            ("host", "主持人"),
            ("host of the next book club", "下次读书会的主持人"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "The next book club meeting is hosted by {v}.",
                "下次读书会由{v}来主持。",
            ),
        ),
        _s(
            "place",
            ("meeting place", "地点"),
            ("place where the book club meets", "读书会的地点"),
            (
                "the café on the corner of Park Lane|the library's upstairs room|a wine bar "
                "called Folio|a member's garden",
                "公园路转角的咖啡馆|图书馆楼上的活动室|一家叫书页的小酒馆|一个会员家的院子",
            ),
            (
                "The book club meets at {v} this time.",
                "这次读书会在{v}办。",
            ),
        ),
    ),
    _t(
        "moving",
        ("moving house", "搬家"),
        ("moving house", "搬家"),
        ("The user talked about organising the move to a new flat.", "用户聊了搬新家的各种安排。"),
        _s(
            "movers",
            ("moving company", "搬家公司"),
            ("moving company for the move", "搬家请的公司"),
            (
                "Two Men and a Van|SwiftMove|Atlas Removals|a local firm called Carry On",
                "蚂蚁搬家|速运搬家|大众搬家公司|一家叫好运的小搬家队",
            ),
            (
                "We booked {v} to do the heavy lifting for the move.",
                "搬家我们订了{v}来搬大件。",
            ),
        ),
        _s(
            "date",
            ("moving day", "搬家日期"),
            ("date of the move", "搬家的日子"),
            ("@date", "@date"),
            (
                "Moving day is {v}, and the keys come two days before.",
                "搬家定在{v}，提前两天拿钥匙。",
            ),
        ),
        _s(
            "street",
            ("street", "街道"),
            ("street of the new flat", "新家所在的街道"),
            (
                "Linden Avenue|Harbour Street|Maple Close|Station Road",
                "梧桐路|滨海街|枫林巷|车站路",
            ),
            (
                "The new flat is on {v}, close to a good bakery.",
                "新家在{v}，楼下有家不错的面包店。",
            ),
        ),
        _s(
            "boxes",
            ("number of boxes", "箱子数"),
            ("number of boxes I've packed for the move", "搬家已经打包的箱子数"),
            ("@num:12:60", "@num:12:60"),
            (
                "So far I've packed {v} boxes, and the kitchen isn't even started.",
                "到现在我已经打包了{v}个箱子，厨房还没开始收。",
            ),
        ),
    ),
    _t(
        "marathon",
        ("the marathon training", "马拉松训练"),
        ("the marathon training", "马拉松训练"),
        (
            "The user talked about marathon training and how runs are going.",
            "用户聊了马拉松训练的进展。",
        ),
        _s(
            "race",
            ("race", "比赛"),
            ("marathon I signed up for", "报名的马拉松"),
            (
                "the Berlin Marathon|the Valencia Marathon|the Rotterdam Marathon|the Chicago "
                "Marathon",
                "北京马拉松|上海马拉松|厦门马拉松|杭州马拉松",
            ),
            (
                "I've signed up for {v}, no backing out now.",
                "我报了{v}，现在不能反悔了。",
            ),
        ),
        _s(
            "target",
            ("target time", "目标成绩"),
            ("target time for my marathon", "马拉松的目标成绩"),
            (
                "three hours fifty|four hours flat|three and a half hours|four hours fifteen",
                "三小时五十分|四小时整|三个半小时|四小时十五分",
            ),
            (
                "My target for the marathon is {v}, if the weather plays along.",
                "马拉松我的目标是{v}完赛。",
            ),
        ),
        _s(
            "long",
            ("longest run", "最长距离"),
            ("distance of my longest training run", "训练中最长一次的距离"),
            ("@num:18:34", "@num:18:34"),
            (
                "My longest marathon training run so far was {v} kilometres.",
                "目前马拉松训练跑得最长的一次是{v}公里。",
            ),
        ),
        _s(
            "shoes",
            ("running shoe model", "跑鞋"),
            ("running shoe model I bought for the marathon", "为马拉松买的跑鞋"),
            (
                "a pair of Asics Novablast|Nike Pegasus|Hoka Cliftons|Saucony Endorphins",
                "一双亚瑟士|一双耐克飞马|一双Hoka|一双索康尼",
            ),
            (
                "For the marathon I bought {v}, they feel great on long runs.",
                "为了比赛我买了{v}，跑长距离很舒服。",
            ),
        ),
    ),
    _t(
        "party",
        ("my son's birthday party", "儿子的生日会"),
        ("the son's birthday party", "儿子的生日会"),
        ("The user planned a birthday party for the son.", "用户在筹备儿子的生日会。"),
        _s(
            "venue",
            ("venue", "地点"),
            ("venue for my son's party", "儿子生日会的地点"),
            (
                "the trampoline park|our back garden|the science museum's party room|a bowling "
                "alley",
                "蹦床公园|我们家的小院|科技馆的活动室|一家保龄球馆",
            ),
            (
                "We're holding my son's birthday party at {v} this year.",
                "儿子的生日会今年在{v}办。",
            ),
        ),
        _s(
            "cake",
            ("cake", "蛋糕"),
            ("cake for my son's party", "生日会的蛋糕"),
            (
                "a chocolate dinosaur cake|a lemon sponge|a strawberry cream cake|a rainbow layer "
                "cake",
                "巧克力恐龙蛋糕|柠檬海绵蛋糕|草莓奶油蛋糕|彩虹千层蛋糕",
            ),
            (
                "I ordered {v} for my son's party, he chose it himself.",
                "儿子生日会的蛋糕订了{v}，是他自己挑的。",
            ),
        ),
        _s(
            "guests",
            ("number of guests", "人数"),
            ("number of kids coming to my son's party", "来参加生日会的小朋友人数"),
            ("@num:6:20", "@num:6:20"),
            (
                "So far {v} kids have said yes to my son's party.",
                "目前有{v}个小朋友说会来儿子的生日会。",
            ),
        ),
        _s(
            "theme",
            ("theme", "主题"),
            ("theme of my son's party", "生日会的主题"),
            ("dinosaurs|outer space|pirates|superheroes", "恐龙|太空|海盗|超级英雄"),
            (
                "My son wants the party theme to be {v}, so the decorations are sorted.",
                "儿子想要{v}主题的生日会，装饰就按这个买。",
            ),
        ),
    ),
    _t(
        "garden",
        ("the balcony garden", "阳台种菜"),
        ("the balcony garden", "阳台种菜"),
        (
            "The user talked about the balcony garden and what grows there.",
            "用户聊了阳台种菜的情况。",
        ),
        _s(
            "plant",
            ("crop", "作物"),
            ("crop I planted on the balcony", "阳台上种的东西"),
            (
                "cherry tomatoes|basil and mint|chillies|strawberries in hanging pots",
                "小番茄|罗勒和薄荷|小辣椒|吊盆草莓",
            ),
            (
                "This spring I planted {v} on the balcony.",
                "今年春天我在阳台上种了{v}。",
            ),
        ),
        _s(
            "shop",
            ("garden shop", "园艺店"),
            ("shop where I buy seeds for the balcony", "买种子的店"),
            (
                "Green Thumb nursery|the market stall on Saturdays|Bloom & Root|the big garden "
                "centre by the ring road",
                "绿手指园艺|周六集市上的一个摊位|花田小铺|环路边的大花卉市场",
            ),
            (
                "I get my seeds and soil for the balcony from {v}, they give good advice.",
                "阳台用的种子和土我都在{v}买，老板很懂。",
            ),
        ),
        _s(
            "water",
            ("watering schedule", "浇水频率"),
            ("watering schedule for the balcony plants", "阳台植物浇水的频率"),
            (
                "every morning|every other day|every three days|every evening in summer",
                "每天早上|每隔一天|每三天|夏天每天傍晚",
            ),
            (
                "I water the balcony plants {v}, more when it's hot.",
                "阳台上的植物我{v}浇一次水。",
            ),
        ),
    ),
    _t(
        "laptop",
        ("buying a new laptop", "买新电脑"),
        ("buying a new laptop", "买新电脑"),
        (
            "The user compared laptops and decided which to buy.",
            "用户比较了几款笔记本，决定买哪台。",
        ),
        _s(
            "model",
            ("laptop model", "型号"),
            ("laptop I decided on", "决定买的笔记本"),
            (
                "a 14-inch MacBook Pro|a ThinkPad X1 Carbon|a Dell XPS 13|a Framework laptop",
                "一台14寸MacBook Pro|一台ThinkPad X1 Carbon|一台戴尔XPS 13|一台华为MateBook",
            ),
            (
                "After all the comparing I'm getting {v} as my new laptop.",
                "比来比去，我最后决定买{v}。",
            ),
        ),
        _s(
            "price",
            ("price", "价格"),
            ("price of the new laptop", "新电脑的价格"),
            ("@money:900:2600", "@money:900:2600"),
            (
                "The new laptop costs {v} with the discount.",
                "那台电脑打完折是{v}。",
            ),
        ),
        _s(
            "store",
            ("store", "购买渠道"),
            ("place I'm buying the laptop from", "买电脑的地方"),
            (
                "the electronics shop downtown|the brand's online store|a refurbished seller|the "
                "airport duty free",
                "市中心的电器城|品牌官网|一家翻新机店|京东自营",
            ),
            (
                "I'll order the new laptop from {v}, delivery is quick.",
                "电脑我打算在{v}下单，发货快。",
            ),
        ),
    ),
    _t(
        "photo",
        ("the photography course", "摄影课"),
        ("the photography course", "摄影课"),
        (
            "The user talked about the photography course and practising.",
            "用户聊了摄影课和练习拍照。",
        ),
        _s(
            "teacher",
            ("instructor", "老师"),
            ("instructor of the photography course", "摄影课的老师"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "The photography course is taught by {v}, who shoots for magazines.",
                "摄影课的老师是{v}，给杂志拍过照片。",
            ),
        ),
        _s(
            "camera",
            ("camera", "相机"),
            ("camera I use for the photography course", "上摄影课用的相机"),
            (
                "a secondhand Fujifilm X-T3|a Sony a6400|an old Canon 5D|a Nikon Z50",
                "一台二手富士X-T3|一台索尼a6400|一台老佳能5D|一台尼康Z50",
            ),
            (
                "For the photography course I'm using {v}, and I love it.",
                "上摄影课我用的是{v}。",
            ),
        ),
        _s(
            "day",
            ("class day", "上课时间"),
            ("day of the photography class", "摄影课的上课时间"),
            ("@wday", "@wday"),
            (
                "The photography class meets every {v} evening at the community centre.",
                "摄影课每{v}晚上在社区中心上。",
            ),
        ),
        _s(
            "assignment",
            ("assignment", "作业"),
            ("this week's photo assignment", "这周的摄影作业"),
            (
                "street portraits|night shots of the bridge|a series on shadows|food close-ups",
                "街头人像|夜拍大桥|一组关于影子的照片|美食特写",
            ),
            (
                "This week's photo assignment is {v}, which scares me a little.",
                "这周的摄影作业是{v}，有点没把握。",
            ),
        ),
    ),
    _t(
        "yoga",
        ("the yoga classes", "瑜伽课"),
        ("the yoga classes", "瑜伽课"),
        ("The user talked about going to yoga classes.", "用户聊了上瑜伽课的感受。"),
        _s(
            "studio",
            ("studio", "瑜伽馆"),
            ("yoga studio I go to", "去的瑜伽馆"),
            (
                "Lotus Loft|the studio above the bakery|Breathe Yoga|the gym's small hall",
                "莲花瑜伽馆|面包店楼上的瑜伽馆|呼吸瑜伽|健身房的小教室",
            ),
            (
                "I've been going to yoga at {v}, it's only ten minutes away.",
                "我最近在{v}上瑜伽课，走路十分钟。",
            ),
        ),
        _s(
            "time",
            ("class time", "上课时间"),
            ("time of my yoga class", "瑜伽课的时间"),
            ("@time", "@time"),
            (
                "My usual yoga class starts at {v}, and I'm rarely late.",
                "我常上的瑜伽课{v}开始。",
            ),
            "wake",
        ),
        _s(
            "teacher",
            ("teacher", "老师"),
            ("yoga teacher I like best", "最喜欢的瑜伽老师"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "My favourite yoga teacher there is {v}, such a calm voice.",
                "那里我最喜欢的瑜伽老师是{v}，声音特别温柔。",
            ),
        ),
    ),
    _t(
        "anniversary",
        ("the anniversary dinner", "纪念日晚餐"),
        ("the anniversary dinner", "纪念日晚餐"),
        ("The user planned the anniversary dinner and a gift.", "用户在准备纪念日晚餐和礼物。"),
        _s(
            "restaurant",
            ("restaurant", "餐厅"),
            ("restaurant for the anniversary dinner", "纪念日晚餐的餐厅"),
            (
                "a French bistro called Le Petit Zinc|the rooftop place at the Grand|an Italian "
                "trattoria on Elm Street|a tasting-menu spot called Sorrel",
                "一家叫小锌吧的法餐厅|君悦顶楼的餐厅|榆树街的一家意大利小馆|一家叫酢浆草的私房菜",
            ),
            (
                "For the anniversary dinner I booked a table at {v}.",
                "纪念日晚餐我在{v}订了位子。",
            ),
            "cuisine diet",
        ),
        _s(
            "time",
            ("reservation time", "订位时间"),
            ("time of the anniversary dinner reservation", "纪念日晚餐订的时间"),
            ("@eve", "@eve"),
            (
                "The anniversary dinner reservation is for {v}, don't let me forget.",
                "纪念日晚餐订的是{v}，别让我忘了。",
            ),
        ),
        _s(
            "gift",
            ("gift", "礼物"),
            ("anniversary gift", "纪念日礼物"),
            (
                "a silver bracelet|a weekend in the mountains|a watch|tickets to the opera",
                "一条银手链|一次山里的周末旅行|一块手表|两张歌剧票",
            ),
            (
                "As an anniversary gift I got {v}, still a secret.",
                "纪念日礼物我准备了{v}，还保密呢。",
            ),
        ),
    ),
    _t(
        "sofa",
        ("buying a sofa", "买沙发"),
        ("buying a sofa", "买沙发"),
        ("The user shopped around for a new sofa.", "用户在挑选新沙发。"),
        _s(
            "shop",
            ("shop", "店"),
            ("shop we're buying the sofa from", "买沙发的店"),
            (
                "IKEA|a local furniture maker|the Habitat store|a vintage shop on Canal Street",
                "宜家|一家本地家具作坊|红星美凯龙|运河街的一家古董店",
            ),
            (
                "We're getting the new sofa from {v} after all.",
                "沙发最后还是在{v}买。",
            ),
        ),
        _s(
            "colour",
            ("colour", "颜色"),
            ("colour of the new sofa", "新沙发的颜色"),
            (
                "dark green velvet|light grey linen|mustard yellow|cognac leather",
                "墨绿色丝绒|浅灰色亚麻|芥末黄|焦糖色真皮",
            ),
            (
                "The sofa we chose is {v}, bold but I love it.",
                "我们选的沙发是{v}的，有点大胆但我很喜欢。",
            ),
        ),
        _s(
            "delivery",
            ("delivery date", "送货日期"),
            ("delivery date of the sofa", "沙发的送货日期"),
            ("@date", "@date"),
            (
                "The sofa will be delivered on {v}, between eight and noon.",
                "沙发{v}送货，上午八点到中午之间。",
            ),
        ),
        _s(
            "price",
            ("price", "价格"),
            ("price of the sofa", "沙发的价格"),
            ("@money:500:2500", "@money:500:2500"),
            (
                "The sofa was {v}, which included delivery.",
                "那张沙发{v}，包送货。",
            ),
        ),
    ),
    _t(
        "hike",
        ("the mountain hike", "爬山徒步"),
        ("the mountain hike", "爬山徒步"),
        (
            "The user talked about the mountain hike and preparations.",
            "用户聊了爬山徒步的计划和准备。",
        ),
        _s(
            "hut",
            ("mountain hut", "住处"),
            ("hut where we sleep on the hike", "徒步那晚住的地方"),
            (
                "Rifugio Lagazuoi|Rifugio Locatelli|a hut near Tre Cime|Rifugio Averau",
                "光明顶的山庄|白云宾馆|北海宾馆|排云楼宾馆",
            ),
            (
                "On the hike we'll spend the night at {v}, booked months ago.",
                "徒步那晚我们住在{v}，好几个月前就订了。",
            ),
            "lodging",
        ),
        _s(
            "trail",
            ("trail", "路线"),
            ("trail we picked for the hike", "徒步选的路线"),
            (
                "the Alta Via 1|the loop around Tre Cime|the Seceda ridge path|the Lago di "
                "Sorapis trail",
                "西海大峡谷路线|从云谷寺上山的路线|前山的台阶路|后山索道加徒步",
            ),
            (
                "For the hike we picked {v}, about six hours of walking.",
                "徒步我们选了{v}，要走六个小时左右。",
            ),
        ),
        _s(
            "gear",
            ("gear", "装备"),
            ("gear I still need for the hike", "徒步还要买的装备"),
            ("new hiking poles|a rain jacket|proper boots|a headlamp", "登山杖|冲锋衣|登山鞋|头灯"),
            (
                "Before the mountain hike I still need to buy {v}.",
                "徒步之前我还得买{v}，不然不放心。",
            ),
        ),
    ),
    _t(
        "offsite",
        ("the team offsite", "公司团建"),
        ("the team offsite", "公司团建"),
        ("The user talked about organising the team offsite.", "用户聊了组织公司团建的事。"),
        _s(
            "place",
            ("location", "地点"),
            ("location of the team offsite", "团建的地点"),
            (
                "a lodge by the lake|a farm outside the city|a coworking space in the old "
                "harbour|a ski resort",
                "湖边的度假村|城郊的农家乐|老港口的一家联合办公空间|一个滑雪场",
            ),
            (
                "The team offsite is going to be at {v}, everyone seems happy.",
                "公司团建定在{v}，大家都挺满意。",
            ),
        ),
        _s(
            "activity",
            ("activity", "活动"),
            ("main activity at the team offsite", "团建的主要活动"),
            (
                "a cooking class|kayaking|an escape room|a treasure hunt",
                "一起上烹饪课|划皮划艇|玩密室逃脱|寻宝游戏",
            ),
            (
                "The main activity at the team offsite will be {v}.",
                "团建的主要活动是{v}，我负责联系。",
            ),
        ),
        _s(
            "budget",
            ("budget", "预算"),
            ("budget per person for the offsite", "团建每人的预算"),
            ("@money:80:400", "@money:80:400"),
            (
                "The budget for the team offsite is {v} per person.",
                "团建的预算是每人{v}。",
            ),
        ),
        _s(
            "date",
            ("date", "日期"),
            ("date of the team offsite", "团建的日期"),
            ("@date", "@date"),
            (
                "We've fixed the team offsite for {v}, everyone has blocked the day.",
                "团建定在{v}，大家都空出时间了。",
            ),
        ),
    ),
    _t(
        "conference",
        ("the conference talk", "会议演讲"),
        ("the conference talk", "会议演讲"),
        ("The user talked about preparing the conference talk.", "用户聊了准备会议演讲的事。"),
        _s(
            "conf",
            ("conference", "会议"),
            ("conference where I'm giving my talk", "要去演讲的会议"),
            (
                "PyCon in Pittsburgh|a data summit in Berlin|the regional UX conference|DevDays "
                "in Lyon",
                "深圳的一个技术大会|北京的数据峰会|上海的设计大会|杭州的开发者大会",
            ),
            (
                "My talk got accepted at {v}, I'm thrilled and terrified.",
                "我的演讲被{v}录用了，又激动又紧张。",
            ),
        ),
        _s(
            "slot",
            ("talk slot", "演讲时间"),
            ("time slot of my conference talk", "演讲的时间段"),
            ("@time", "@time"),
            (
                "My conference talk is scheduled for {v} on the second day.",
                "我的演讲排在会议第二天{v}。",
            ),
            "meeting",
        ),
        _s(
            "length",
            ("length", "时长"),
            ("length of my conference talk", "演讲的时长"),
            ("@num:15:45", "@num:15:45"),
            (
                "The conference talk has to fit into {v} minutes including questions.",
                "演讲加提问一共只有{v}分钟。",
            ),
        ),
    ),
    _t(
        "japanese",
        ("learning Japanese", "学日语"),
        ("learning Japanese", "学日语"),
        ("The user talked about learning Japanese and an exam.", "用户聊了学日语和备考。"),
        _s(
            "school",
            ("school", "学校"),
            ("school where I study Japanese", "学日语的学校"),
            (
                "the Sakura language school|the Japan Foundation|an online tutor|the "
                "university's evening course",
                "樱花日语学校|日本文化中心|网上的一对一老师那里|大学的夜校",
            ),
            (
                "I'm taking Japanese classes at {v}, twice a week.",
                "我现在在{v}学日语，一周两次。",
            ),
        ),
        _s(
            "exam",
            ("exam", "考试"),
            ("Japanese exam I registered for", "报名的日语考试"),
            (
                "the JLPT N4|the JLPT N3|the JLPT N2|the J-Test",
                "日语能力考N4|日语能力考N3|日语能力考N2|J-Test考试",
            ),
            (
                "I've registered for {v} in Japanese, so it's serious now.",
                "我报名了{v}，这下得认真学日语了。",
            ),
        ),
        _s(
            "teacher",
            ("teacher", "老师"),
            ("name of my Japanese teacher", "日语老师的名字"),
            (
                "Yuki Tanaka|Kenji Mori|Aiko Sato|Hiro Nakamura",
                "田中老师|森老师|佐藤老师|中村老师",
            ),
            (
                "My Japanese teacher is {v}, who makes us speak from day one.",
                "我的日语老师是{v}，第一天就让我们开口说。",
            ),
        ),
    ),
    _t(
        "school",
        ("my daughter's school enrolment", "女儿上小学"),
        ("the daughter's school enrolment", "女儿上小学"),
        ("The user talked about choosing a school for the daughter.", "用户聊了给女儿选小学的事。"),
        _s(
            "school",
            ("school", "学校"),
            ("school we chose for my daughter", "给女儿选的学校"),
            (
                "Oakwood Primary|the bilingual school on Hill Street|St. Anne's|the Montessori "
                "school by the park",
                "实验小学|外国语小学|师大附小|公园旁边的蒙氏学校",
            ),
            (
                "We've decided on {v} for my daughter, she's excited.",
                "女儿的学校我们定了{v}，她很期待。",
            ),
        ),
        _s(
            "openday",
            ("open day", "开放日"),
            ("date of the school open day", "学校开放日的日期"),
            ("@date", "@date"),
            (
                "The open day at my daughter's new school is on {v}.",
                "女儿学校的开放日是{v}。",
            ),
        ),
        _s(
            "teacher",
            ("class teacher", "班主任"),
            ("class teacher my daughter will have", "女儿的班主任"),
            ("Mrs. Holloway|Mr. Grant|Ms. Ortiz|Mrs. Chen", "王老师|李老师|陈老师|赵老师"),
            (
                "My daughter's class teacher will be {v}, who seems lovely.",
                "女儿的班主任是{v}，看着很亲切。",
            ),
        ),
    ),
    _t(
        "concert",
        ("the concert", "演唱会"),
        ("the concert", "演唱会"),
        ("The user talked about going to a concert with friends.", "用户聊了去看演唱会的事。"),
        _s(
            "band",
            ("band", "歌手"),
            ("band we're going to see", "要去看的歌手"),
            (
                "Arctic Monkeys|Coldplay|a jazz trio from Oslo|The National",
                "五月天|陈奕迅|草东没有派对|周杰伦",
            ),
            (
                "We finally got tickets to see {v} live at the concert.",
                "终于抢到{v}的演唱会门票了。",
            ),
        ),
        _s(
            "venue",
            ("venue", "场馆"),
            ("concert venue", "演唱会的场馆"),
            (
                "the O2 Arena|the old opera house|an open-air stage in the park|the Roundhouse",
                "鸟巢|梅赛德斯奔驰文化中心|体育中心的露天舞台|工人体育馆",
            ),
            (
                "The concert is at {v}, we should get there early.",
                "演唱会在{v}，我们得早点到。",
            ),
        ),
        _s(
            "seats",
            ("seat section", "座位"),
            ("seat section for the concert", "演唱会的座位"),
            (
                "row 12 near the stage|the standing area|block C upstairs|the second balcony",
                "内场第12排|站票区|二层C区|三楼看台",
            ),
            (
                "Our concert tickets are for {v}, not bad at all.",
                "演唱会的座位在{v}，还不错。",
            ),
        ),
        _s(
            "date",
            ("date", "日期"),
            ("date of the concert", "演唱会的日期"),
            ("@date", "@date"),
            (
                "The concert is on {v}, a weeknight unfortunately.",
                "演唱会是{v}，可惜是工作日。",
            ),
        ),
    ),
    _t(
        "bike",
        ("buying a bike", "买自行车"),
        ("buying a bike", "买自行车"),
        ("The user talked about buying a bike for commuting.", "用户聊了买自行车通勤的事。"),
        _s(
            "model",
            ("bike", "车型"),
            ("bike I picked", "挑中的自行车"),
            (
                "a Trek FX 3|a secondhand Brompton|a Cannondale gravel bike|an e-bike from VanMoof",
                "一辆捷安特|一辆二手布朗普顿|一辆美利达公路车|一辆小牛电动自行车",
            ),
            (
                "The bike I picked is {v}, great for the commute.",
                "我挑的自行车是{v}，通勤正合适。",
            ),
        ),
        _s(
            "price",
            ("price", "价格"),
            ("price of the bike", "自行车的价格"),
            ("@money:400:2000", "@money:400:2000"),
            (
                "The bike cost {v} with a lock and lights.",
                "那辆车加上锁和车灯一共{v}。",
            ),
        ),
        _s(
            "shop",
            ("bike shop", "车行"),
            ("bike shop I'm buying from", "买自行车的车行"),
            (
                "Cycle Hub|the repair shop by the canal|Spokes & Co|a big sports store",
                "骑行驿站|河边的那家修车铺|飞轮车行|迪卡侬",
            ),
            (
                "I'm buying the bike from {v}, they do free servicing for a year.",
                "自行车在{v}买，一年内免费保养。",
            ),
        ),
    ),
    _t(
        "grandparents",
        ("the visit to my grandparents", "回老家看爷爷奶奶"),
        ("the visit to the grandparents", "回老家看爷爷奶奶"),
        ("The user talked about visiting the grandparents.", "用户聊了回老家看爷爷奶奶。"),
        _s(
            "train",
            ("train time", "车次时间"),
            ("time of the train to my grandparents", "回老家的火车时间"),
            ("@time", "@time"),
            (
                "The train to my grandparents' town leaves at {v} on Saturday.",
                "回老家的高铁是周六{v}发车。",
            ),
            "wake",
        ),
        _s(
            "gift",
            ("present", "礼物"),
            ("present for my grandparents", "给爷爷奶奶带的礼物"),
            (
                "a big photo album|a tablet for video calls|a warm wool blanket|a box of good tea",
                "一本大相册|一台方便视频的平板|一条羊毛毯|一盒好茶叶",
            ),
            (
                "For my grandparents I'm bringing {v} this time.",
                "这次给爷爷奶奶带了{v}。",
            ),
        ),
        _s(
            "stay",
            ("length of stay", "天数"),
            ("number of days I'm staying with my grandparents", "在老家待的天数"),
            ("@num:3:10", "@num:3:10"),
            (
                "I'll stay with my grandparents for {v} days this time.",
                "这次在老家陪爷爷奶奶待{v}天。",
            ),
        ),
    ),
    _t(
        "internet",
        ("switching internet provider", "换宽带"),
        ("switching internet provider", "换宽带"),
        ("The user talked about switching internet provider.", "用户聊了换宽带的事。"),
        _s(
            "provider",
            ("provider", "运营商"),
            ("new internet provider", "新的宽带运营商"),
            (
                "FiberNet|a local co-op called Linkup|Vodafone|Starlite Broadband",
                "中国电信|中国联通|中国移动|长城宽带",
            ),
            (
                "We're switching the home internet to {v} next month.",
                "家里的宽带下个月换成{v}。",
            ),
        ),
        _s(
            "speed",
            ("speed", "网速"),
            ("internet speed I signed up for", "新宽带的网速"),
            ("500 megabits|a full gigabit|300 megabits|200 megabits", "500兆|千兆|300兆|200兆"),
            (
                "The new internet plan gives us {v}, way faster than now.",
                "新宽带套餐是{v}的，比现在快多了。",
            ),
        ),
        _s(
            "install",
            ("installation date", "安装日期"),
            ("date of the internet installation", "宽带安装的日期"),
            ("@date", "@date"),
            (
                "The technician comes to install the new internet line on {v}.",
                "师傅{v}上门装宽带。",
            ),
        ),
    ),
    _t(
        "sourdough",
        ("baking sourdough", "学做面包"),
        ("baking sourdough", "学做面包"),
        ("The user talked about learning to bake sourdough bread.", "用户聊了学做面包的心得。"),
        _s(
            "flour",
            ("flour", "面粉"),
            ("flour I use for the sourdough", "做面包用的面粉"),
            (
                "a stone-ground rye|organic bread flour from the mill|Italian type 00|wholewheat "
                "spelt",
                "石磨黑麦粉|有机高筋粉|意大利00号面粉|全麦斯佩尔特粉",
            ),
            (
                "For the sourdough I've switched to {v}, much better crumb.",
                "做面包我现在换成了{v}。",
            ),
        ),
        _s(
            "temp",
            ("oven temperature", "烤箱温度"),
            ("oven temperature for my bread", "烤面包的温度"),
            ("@num:220:250", "@num:220:250"),
            (
                "I bake the sourdough at {v} degrees for the first twenty minutes.",
                "面包前二十分钟用{v}度烤。",
            ),
        ),
        _s(
            "starter",
            ("starter's name", "酵种的名字"),
            ("name of my sourdough starter", "我给酵种起的名字"),
            ("Bubbles|Clint Yeastwood|Doughtzilla|Gerald", "泡泡|小胖|老面|发发"),
            (
                "My sourdough starter is called {v}, and it's thriving.",
                "我的酵种起名叫{v}，长得很好。",
            ),
        ),
    ),
    _t(
        "dinnerparty",
        ("the dinner party", "家里请客"),
        ("the dinner party", "家里请客"),
        ("The user talked about hosting a dinner party at home.", "用户聊了在家请客吃饭的安排。"),
        _s(
            "dish",
            ("main dish", "主菜"),
            ("main dish for the dinner party", "请客的主菜"),
            (
                "a slow-roasted lamb shoulder|a big mushroom risotto|paella|a Thai green curry",
                "红烧肉|清蒸鲈鱼|可乐鸡翅|酸菜鱼",
            ),
            (
                "For the dinner party I'm making {v} as the main course.",
                "请客的主菜我打算做{v}。",
            ),
            "diet",
        ),
        _s(
            "guests",
            ("number of guests", "人数"),
            ("number of guests at the dinner party", "请客的人数"),
            ("@num:4:12", "@num:4:12"),
            (
                "We've invited {v} people to the dinner party on Saturday.",
                "这次请了{v}个朋友来家里吃饭。",
            ),
        ),
        _s(
            "dessert",
            ("dessert", "甜点"),
            ("dessert for the dinner party", "请客的甜点"),
            (
                "a lemon tart|tiramisu|chocolate mousse|a pavlova",
                "杨枝甘露|双皮奶|提拉米苏|芒果班戟",
            ),
            (
                "For dessert at the dinner party I'll make {v}.",
                "请客的甜点我准备了{v}。",
            ),
        ),
    ),
    _t(
        "volunteering",
        ("the volunteering", "做志愿者"),
        ("the volunteering", "做志愿者"),
        ("The user talked about volunteering and the weekly shifts.", "用户聊了做志愿者和排班。"),
        _s(
            "org",
            ("organisation", "机构"),
            ("place where I volunteer", "做志愿者的机构"),
            (
                "the food bank on King Street|an animal shelter|the hospital's reading programme|"
                "a river clean-up group",
                "国王街的食物银行|流浪动物救助站|医院的陪读项目|河道清洁小组",
            ),
            (
                "I've started volunteering at {v} on weekends.",
                "我开始周末去{v}做志愿者了。",
            ),
        ),
        _s(
            "coord",
            ("coordinator", "负责人"),
            ("volunteer coordinator", "志愿者负责人"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "The volunteer coordinator there is {v}, very organised.",
                "那边的志愿者负责人是{v}，安排得很有条理。",
            ),
        ),
        _s(
            "shift",
            ("shift", "班次"),
            ("time of my volunteer shift", "志愿者的班次"),
            (
                "Saturday mornings|Sunday afternoons|every other Friday evening|Wednesday "
                "lunchtimes",
                "周六上午|周日下午|隔周周五晚上|周三中午",
            ),
            (
                "My volunteer shift is {v}, three hours each.",
                "我的志愿者班是{v}，每次三小时。",
            ),
        ),
    ),
    _t(
        "lease",
        ("renewing the lease", "续租"),
        ("renewing the lease", "续租"),
        ("The user talked about renewing the lease with the landlord.", "用户聊了和房东续租的事。"),
        _s(
            "rent",
            ("rent", "房租"),
            ("new rent after the renewal", "续租后的房租"),
            ("@money:900:2400", "@money:900:2400"),
            (
                "The landlord wants {v} a month from the renewal on.",
                "房东说续租以后每月{v}。",
            ),
        ),
        _s(
            "landlord",
            ("landlord", "房东"),
            ("landlord's name", "房东的称呼"),
            ("Mr. Hughes|Mrs. Varga|a woman called Petra|Mr. Ahmed", "王阿姨|李先生|陈姐|刘叔"),
            (
                "The landlord for the flat is {v}, who is usually reasonable.",
                "房东是{v}，一般挺好说话的。",
            ),
        ),
        _s(
            "deadline",
            ("deadline", "截止日期"),
            ("deadline to sign the new lease", "签续租合同的截止日期"),
            ("@date", "@date"),
            (
                "I have to sign the new lease by {v} at the latest.",
                "续租合同得在{v}之前签。",
            ),
        ),
    ),
    _t(
        "phone",
        ("getting a new phone", "换手机"),
        ("getting a new phone", "换手机"),
        ("The user talked about upgrading to a new phone.", "用户聊了换新手机的事。"),
        _s(
            "model",
            ("phone model", "机型"),
            ("new phone I'm getting", "要换的新手机"),
            (
                "a Pixel 9|an iPhone 16|a Samsung Galaxy S24|a Fairphone 5",
                "一台华为Mate 60|一台小米14|一台iPhone 16|一台OPPO Find X7",
            ),
            (
                "I'm upgrading to {v} when the contract ends.",
                "合约到期我就换{v}。",
            ),
        ),
        _s(
            "carrier",
            ("carrier", "运营商"),
            ("mobile carrier I'm moving to", "手机号要转的运营商"),
            ("Three|EE|a cheap prepaid carrier|T-Mobile", "中国移动|中国联通|中国电信|中国广电"),
            (
                "I'm moving my phone plan to {v} for the data.",
                "手机号我打算转到{v}，流量多一点。",
            ),
        ),
        _s(
            "colour",
            ("colour", "颜色"),
            ("colour of the new phone", "新手机的颜色"),
            ("midnight black|sage green|plain white|deep blue", "黑色|青山绿|白色|深海蓝"),
            (
                "I'm getting the new phone in {v}, no case needed.",
                "新手机我要{v}的那款。",
            ),
        ),
    ),
    _t(
        "football",
        ("the weekend football games", "周末踢球"),
        ("the weekend football games", "周末踢球"),
        ("The user talked about the weekend football games.", "用户聊了周末踢球的事。"),
        _s(
            "team",
            ("team name", "队名"),
            ("name of my football team", "我们球队的名字"),
            (
                "the Red Foxes|Dynamo Tuesday|Old Boys United|the Lucky Sevens",
                "红狐队|周二发电机|老男孩联队|幸运七人",
            ),
            (
                "Our weekend football team is called {v}, don't ask why.",
                "我们球队叫{v}，别问为什么。",
            ),
        ),
        _s(
            "field",
            ("pitch", "场地"),
            ("pitch where we play football", "踢球的场地"),
            (
                "the astroturf behind the school|Victoria Park|the sports centre on Mill Lane|"
                "the university pitches",
                "学校后面的人工草场|维多利亚公园|磨坊巷的体育中心|大学的球场",
            ),
            (
                "We play our weekend football matches at {v}.",
                "我们周末一般在{v}踢球。",
            ),
        ),
        _s(
            "score",
            ("score", "比分"),
            ("score of our last football match", "上一场球赛的比分"),
            (
                "three to one for us|two all|four nil to them|one nil for us",
                "3比1赢了|2比2打平|0比4输了|1比0赢了",
            ),
            (
                "Our last football match ended {v}, what a game.",
                "上一场球赛我们{v}，踢得挺激烈。",
            ),
        ),
    ),
    _t(
        "camping",
        ("the camping weekend", "露营"),
        ("the camping weekend", "露营"),
        ("The user talked about planning a camping weekend.", "用户聊了周末去露营的计划。"),
        _s(
            "site",
            ("campsite", "营地"),
            ("campsite for the camping weekend", "露营的营地"),
            (
                "Pine Hollow|a site by Loch Lomond|the forest camp at Kielder|Blue Lake campground",
                "松林营地|湖边的一个营地|山里的森林营地|蓝湖露营地",
            ),
            (
                "We booked a pitch at {v} for the camping weekend.",
                "露营我们订了{v}的位置。",
            ),
        ),
        _s(
            "tent",
            ("tent", "帐篷"),
            ("tent I bought for camping", "露营买的帐篷"),
            (
                "a four-person tunnel tent|an inflatable tent|a small backpacking tent|a bell tent",
                "一顶四人隧道帐篷|一顶充气帐篷|一顶轻量的徒步帐篷|一顶钟形帐篷",
            ),
            (
                "For camping I bought {v}, easy to set up.",
                "露营我买了{v}，搭起来很方便。",
            ),
        ),
        _s(
            "food",
            ("camp dinner", "露营晚饭"),
            ("dinner we'll cook at the campsite", "露营打算做的晚饭"),
            (
                "sausages and corn|a big pot of chilli|foil-wrapped fish|camp pizza",
                "烤肠和玉米|一大锅火锅|锡纸烤鱼|烧烤串",
            ),
            (
                "At the campsite we'll cook {v} on the first night.",
                "露营第一晚我们打算做{v}。",
            ),
            "diet",
        ),
    ),
    _t(
        "glasses",
        ("getting new glasses", "配眼镜"),
        ("getting new glasses", "配眼镜"),
        ("The user talked about an eye test and new glasses.", "用户聊了验光配新眼镜。"),
        _s(
            "optician",
            ("optician", "眼镜店"),
            ("optician where I had the eye test", "验光的眼镜店"),
            (
                "Specsavers|a small optician on Bridge Street|Vision Express|the shop inside the "
                "mall",
                "宝岛眼镜|桥街的一家小眼镜店|精益眼镜|商场里的那家眼镜店",
            ),
            (
                "I had the eye test at {v}, they were quick.",
                "我在{v}验的光，挺快的。",
            ),
        ),
        _s(
            "frame",
            ("frame", "镜框"),
            ("frame I picked for my new glasses", "新眼镜选的镜框"),
            (
                "round tortoiseshell frames|thin gold wire frames|black square frames|clear "
                "acetate frames",
                "玳瑁色圆框|细金属框|黑色方框|透明框",
            ),
            (
                "For the new glasses I went for {v} this time.",
                "新眼镜这次我选了{v}。",
            ),
        ),
        _s(
            "price",
            ("price", "价格"),
            ("price of my new glasses", "新眼镜的价格"),
            ("@money:150:600", "@money:150:600"),
            (
                "The new glasses came to {v} with the thinner lenses.",
                "新眼镜配上薄一点的镜片一共{v}。",
            ),
        ),
    ),
    _t(
        "swimming",
        ("my son's swimming lessons", "儿子学游泳"),
        ("the son's swimming lessons", "儿子学游泳"),
        ("The user talked about the son's swimming lessons.", "用户聊了儿子学游泳的进展。"),
        _s(
            "pool",
            ("pool", "游泳馆"),
            ("pool for my son's lessons", "儿子上课的游泳馆"),
            (
                "the leisure centre pool|Aqua Kids|the lido in the park|the hotel pool downtown",
                "体育中心的游泳馆|海豚少儿游泳|公园里的露天泳池|市中心酒店的泳池",
            ),
            (
                "My son's swimming lessons take place at {v} every week.",
                "儿子的游泳课在{v}上。",
            ),
        ),
        _s(
            "coach",
            ("coach", "教练"),
            ("coach for my son's swimming lessons", "儿子的游泳教练"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "My son's swimming coach is {v}, and he adores the lessons.",
                "儿子的游泳教练是{v}，他很喜欢上课。",
            ),
        ),
        _s(
            "time",
            ("lesson time", "上课时间"),
            ("time of my son's swimming lesson", "儿子游泳课的时间"),
            ("@time", "@time"),
            (
                "My son's swimming lesson starts at {v} on Saturdays.",
                "儿子的游泳课周六{v}开始。",
            ),
        ),
    ),
    _t(
        "podcast",
        ("the podcast project", "做播客"),
        ("the podcast project", "做播客"),
        ("The user talked about making a podcast with a friend.", "用户聊了做播客的事。"),
        _s(
            "guest",
            ("guest", "嘉宾"),
            ("guest on the next podcast episode", "下一期播客的嘉宾"),
            (_EN_NAMES, _ZH_NAMES),
            (
                "The guest for the next podcast episode is {v}.",
                "下一期播客请的嘉宾是{v}。",
            ),
        ),
        _s(
            "mic",
            ("microphone", "麦克风"),
            ("microphone I bought for the podcast", "做播客买的麦克风"),
            (
                "a Shure MV7|a Rode PodMic|a Blue Yeti|a Zoom recorder",
                "一支舒尔MV7|一支罗德PodMic|一支Blue Yeti|一台Zoom录音机",
            ),
            (
                "For the podcast I bought {v}, the sound is much better.",
                "做播客我买了{v}，音质好多了。",
            ),
        ),
        _s(
            "day",
            ("recording day", "录制时间"),
            ("day we record the podcast", "录播客的时间"),
            ("@wday", "@wday"),
            (
                "We record the podcast every {v} after work.",
                "我们每{v}下班后录播客。",
            ),
        ),
        _s(
            "name",
            ("show name", "节目名"),
            ("name of the podcast", "播客的名字"),
            (
                "Small Hours|Second Coffee|The Long Way Round|Loose Threads",
                "深夜食堂|第二杯咖啡|绕远路|松散的线",
            ),
            (
                "We're calling the podcast {v}, after a lot of arguing.",
                "播客最后定名叫{v}，吵了好久。",
            ),
        ),
    ),
    _t(
        "visit",
        ("my friend's visit", "朋友来访"),
        ("the friend's visit", "朋友来访"),
        ("The user talked about a friend coming to stay.", "用户聊了朋友来家里玩的安排。"),
        _s(
            "arrive",
            ("arrival time", "到达时间"),
            ("arrival time of my friend's train", "朋友的车到站时间"),
            ("@time", "@time"),
            (
                "My friend's train gets in at {v}, I'll pick them up.",
                "朋友的车{v}到站，我去接。",
            ),
        ),
        _s(
            "plan",
            ("plan", "安排"),
            ("plan for my friend's visit", "朋友来玩的安排"),
            (
                "a boat tour on the river|the modern art museum|a day at the beach|a food market "
                "crawl",
                "坐船游江|去美术馆|去海边玩一天|逛夜市",
            ),
            (
                "While my friend is here we're planning {v}.",
                "朋友来了我们打算{v}，应该挺好玩。",
            ),
        ),
        _s(
            "length",
            ("length of stay", "住几晚"),
            ("number of nights my friend is staying", "朋友住的晚数"),
            ("@num:2:7", "@num:2:7"),
            (
                "My friend is staying with us for {v} nights this time.",
                "朋友这次在我们家住{v}个晚上。",
            ),
        ),
    ),
    _t(
        "pottery",
        ("the pottery class", "陶艺课"),
        ("the pottery class", "陶艺课"),
        (
            "The user talked about the pottery class and current pieces.",
            "用户聊了陶艺课和在做的作品。",
        ),
        _s(
            "piece",
            ("project", "作品"),
            ("piece I'm making in pottery class", "陶艺课上在做的作品"),
            (
                "a set of mugs|a big fruit bowl|a teapot|small plant pots",
                "一套马克杯|一个大果盘|一把茶壶|几个小花盆",
            ),
            (
                "In pottery class I'm making {v} at the moment.",
                "陶艺课上我正在做{v}。",
            ),
        ),
        _s(
            "studio",
            ("studio", "工作室"),
            ("pottery studio", "陶艺工作室"),
            (
                "Clay Corner|the arts centre by the river|Mudlarks|a studio called Kiln & Co",
                "泥巴工坊|河边的艺术中心|土与火工作室|窑里陶艺",
            ),
            (
                "The pottery class is at {v}, near my office.",
                "陶艺课在{v}上，离公司不远。",
            ),
        ),
        _s(
            "glaze",
            ("glaze", "釉色"),
            ("glaze colour I chose for my pottery", "陶艺作品选的釉色"),
            (
                "celadon green|a speckled oatmeal|deep cobalt blue|matte white",
                "青瓷绿|燕麦色|钴蓝|哑光白",
            ),
            (
                "For the glaze on my pottery I picked {v}.",
                "我的陶艺作品选了{v}的釉。",
            ),
        ),
    ),
)


def _a(
    key: str,
    kind: str,
    noun: Bi,
    values: Bi,
    says: Bi,
    changed: Bi = ("", ""),
) -> Attr:
    return Attr(key, kind, noun, _bi(*values), says, changed)


ATTRS: tuple[Attr, ...] = (
    _a(
        "sister",
        "fact",
        ("sister's name", "妹妹的名字"),
        ("Anna|Clara|Julia|Nora|Elena|Maya", "小雨|婷婷|安娜|晓晓|佳佳|萌萌"),
        (
            "The user's younger sister is called {v} and lives two hours away.",
            "用户的妹妹叫{v}，住在两个小时车程外的城市。",
        ),
    ),
    _a(
        "partner",
        "fact",
        ("partner's name", "爱人的名字"),
        ("Tom|David|Sara|Lucas|Emily|Omar", "志明|丽丽|浩然|雅婷|建国|思思"),
        (
            "The user's partner is called {v}; they have been together for years.",
            "用户的爱人叫{v}，两人在一起很多年了。",
        ),
    ),
    _a(
        "seat",
        "preference",
        ("seat preference", "座位偏好"),
        ("window|aisle", "靠窗|靠过道"),
        (
            "The user prefers {v} seats on flights and long train rides.",
            "用户坐飞机和火车喜欢选{v}的座位。",
        ),
        (
            "These days the user asks for {v} seats when flying or taking the train.",
            "用户现在坐飞机坐火车改成喜欢{v}的座位了。",
        ),
    ),
    _a(
        "lodging",
        "preference",
        ("preferred kind of accommodation", "住宿偏好"),
        (
            "small family-run inns|big chain hotels|rented apartments|quiet guesthouses",
            "小的家庭旅馆|连锁大酒店|短租公寓|安静的民宿",
        ),
        (
            "When travelling, the user likes to stay in {v}.",
            "用户出门旅行喜欢住{v}。",
        ),
        (
            "Lately the user would rather stay in {v} when travelling.",
            "用户现在出门旅行更想住{v}了。",
        ),
    ),
    _a(
        "coffee",
        "preference",
        ("usual coffee order", "咖啡口味"),
        (
            "oat milk lattes|black americanos|flat whites|cappuccinos with cinnamon",
            "燕麦拿铁|不加糖的美式|澳白|加肉桂的卡布奇诺",
        ),
        (
            "The user usually drinks {v} in the morning.",
            "用户早上一般喝{v}，别的不太喝。",
        ),
        (
            "The user has switched to {v} for the morning coffee.",
            "用户最近早上改喝{v}了。",
        ),
    ),
    _a(
        "diet",
        "preference",
        ("diet", "饮食习惯"),
        (
            "vegetarian|pescatarian|trying to eat less meat|happy to eat almost anything",
            "吃素|只吃鱼不吃肉|在尽量少吃肉|基本什么都吃",
        ),
        (
            "When it comes to food, the user is {v}.",
            "用户平时{v}，安排吃饭时要注意。",
        ),
        (
            "The user has recently become {v}, which changes meal plans.",
            "用户最近开始{v}了，安排饭菜要跟着改。",
        ),
    ),
    _a(
        "cuisine",
        "preference",
        ("favourite cuisine", "菜系偏好"),
        (
            "Sichuan food|Italian food|Japanese food|Mexican food|Lebanese food",
            "川菜|粤菜|日料|意大利菜|东北菜",
        ),
        (
            "The user's favourite food to eat out is {v}.",
            "用户出去吃饭最喜欢吃{v}。",
        ),
        (
            "These days the user's favourite food to eat out is {v}.",
            "用户现在出去吃饭最爱{v}了。",
        ),
    ),
    _a(
        "home_city",
        "fact",
        ("home city", "居住城市"),
        ("Rotterdam|Leeds|Denver|Melbourne|Toronto|Hamburg", "杭州|成都|南京|深圳|武汉|西安"),
        (
            "The user lives in {v}, in a flat near the centre.",
            "用户住在{v}，家在市中心附近。",
        ),
        (
            "The user has moved and now lives in {v}.",
            "用户搬家了，现在住在{v}。",
        ),
    ),
    _a(
        "job",
        "fact",
        ("job", "工作"),
        (
            "a nurse|a data analyst|a secondary school teacher|an architect|a product designer",
            "护士|数据分析师|中学老师|建筑师|产品设计师",
        ),
        (
            "The user works as {v} and usually finishes around six.",
            "用户是一名{v}，一般六点左右下班。",
        ),
        (
            "The user changed careers and now works as {v}.",
            "用户换了工作，现在是一名{v}。",
        ),
    ),
    _a(
        "pet",
        "fact",
        ("dog's name", "狗狗的名字"),
        ("Biscuit|Pepper|Milo|Luna|Rufus|Maple", "豆豆|旺财|可乐|球球|毛毛|糖糖"),
        (
            "The user's dog is called {v}, a very friendly mixed breed.",
            "用户家的狗叫{v}，是一只很亲人的串串。",
        ),
    ),
    _a(
        "car",
        "fact",
        ("car model", "车型"),
        (
            "an old Volvo estate|a red Mini|a Toyota hybrid|a secondhand Golf",
            "一辆老款沃尔沃|一辆红色Mini|一辆丰田混动|一辆二手高尔夫",
        ),
        (
            "The user drives {v}, mostly for weekend trips.",
            "用户开的是{v}，主要周末出去玩用。",
        ),
        (
            "The user sold the old car and now drives {v}.",
            "用户把旧车卖了，现在开{v}。",
        ),
    ),
    _a(
        "wake",
        "fact",
        ("usual wake-up time", "起床时间"),
        ("6:00|6:30|7:15|5:45", "6点|6点半|7点一刻|5点45"),
        (
            "The user usually gets up at {v} on weekdays.",
            "用户工作日一般{v}起床，很少赖床。",
        ),
        (
            "These days the user gets up at {v} on weekdays.",
            "用户现在工作日改成{v}起床了。",
        ),
    ),
    _a(
        "sport",
        "preference",
        ("favourite sport", "运动爱好"),
        ("running|swimming|cycling|climbing", "跑步|游泳|骑车|攀岩"),
        (
            "The user loves {v} and tries to go three times a week.",
            "用户喜欢{v}，每周尽量去三次。",
        ),
    ),
    _a(
        "music",
        "preference",
        ("favourite music", "音乐口味"),
        (
            "old jazz records|indie rock|classical piano music|nineties hip hop",
            "老爵士唱片|独立摇滚|古典钢琴曲|九十年代的粤语歌",
        ),
        (
            "The user likes listening to {v} while working.",
            "用户工作的时候喜欢听{v}。",
        ),
        (
            "Lately the user mostly listens to {v} while working.",
            "用户最近工作时主要听{v}了。",
        ),
    ),
    _a(
        "contact",
        "preference",
        ("preferred way of getting reminders", "提醒方式偏好"),
        ("email|text message|a calendar invite", "邮件|短信|微信|日历"),
        (
            "The user prefers reminders by {v} rather than phone calls.",
            "用户希望用{v}提醒，不要打电话。",
        ),
        (
            "The user now wants reminders by {v} instead, no calls.",
            "用户现在更希望用{v}来提醒。",
        ),
    ),
    _a(
        "reading",
        "preference",
        ("favourite kind of book", "阅读口味"),
        (
            "crime novels|history books|science fiction|travel memoirs",
            "推理小说|历史书|科幻小说|游记",
        ),
        (
            "The user mostly reads {v} before going to sleep.",
            "用户睡前主要看{v}。",
        ),
    ),
    _a(
        "birthday",
        "fact",
        ("birthday month", "生日月份"),
        ("January|March|May|July|September|November", "一月|三月|五月|七月|九月|十一月"),
        (
            "The user's birthday is in {v}, and they like a quiet dinner.",
            "用户的生日在{v}，喜欢安安静静吃顿饭。",
        ),
    ),
    _a(
        "airline",
        "preference",
        ("preferred airline", "航空公司偏好"),
        ("KLM|Lufthansa|Emirates|Delta|Air France", "国航|东航|南航|海航|春秋航空"),
        (
            "The user prefers flying with {v} when there is a choice.",
            "用户坐飞机能选的话喜欢坐{v}。",
        ),
        (
            "These days the user prefers to fly with {v} when possible.",
            "用户现在坐飞机更愿意选{v}了。",
        ),
    ),
    _a(
        "evening",
        "preference",
        ("usual evening drink", "晚间饮品习惯"),
        (
            "chamomile tea|hot chocolate|a glass of red wine|green tea",
            "菊花茶|热可可|一杯红酒|绿茶",
        ),
        (
            "In the evenings the user usually has {v} to relax.",
            "用户晚上一般喝点{v}放松一下。",
        ),
    ),
    _a(
        "meeting",
        "preference",
        ("preferred meeting time", "开会时间偏好"),
        ("morning|early afternoon|late afternoon", "上午|下午早些时候|傍晚"),
        (
            "The user prefers to schedule meetings in the {v} when possible.",
            "用户开会喜欢尽量安排在{v}。",
        ),
        (
            "The user now prefers meetings in the {v}, if there is a choice.",
            "用户现在更喜欢把会安排在{v}。",
        ),
    ),
    _a(
        "hometown",
        "fact",
        ("hometown", "老家"),
        (
            "a small town near Porto|a village in Yorkshire|Cork|a suburb of Chicago",
            "湖南的一个小县城|东北的一个小镇|福建泉州|山东烟台",
        ),
        (
            "The user grew up in {v} and still visits every summer.",
            "用户在{v}长大，每年夏天还会回去。",
        ),
    ),
    _a(
        "team",
        "fact",
        ("favourite team", "主队"),
        ("Liverpool|Ajax|the Chicago Cubs|Celtic", "广州队|北京国安|上海申花|山东泰山"),
        (
            "The user supports {v} and watches every match.",
            "用户是{v}的球迷，每场比赛都看。",
        ),
    ),
    _a(
        "bedroom",
        "preference",
        ("preferred bedroom temperature", "卧室温度偏好"),
        ("17|18|19|20", "17|18|19|20"),
        (
            "The user likes the bedroom kept cool, around {v} degrees.",
            "用户喜欢卧室凉一点，大概{v}度。",
        ),
    ),
)
ATTR = {a.key: a for a in ATTRS}

_SMALL_TALK: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (
        (
            "It has been raining all morning here, honestly.",
            "Sorry to hear that, hopefully it clears up by the afternoon.",
        ),
        (
            "I finally slept well last night, first time in ages.",
            "That's great news, a good night's sleep changes everything.",
        ),
        (
            "Work has been pretty hectic this week, to be honest.",
            "That sounds tiring, I hope the weekend gives you a break.",
        ),
        (
            "I just made myself a big pot of tea.",
            "Nice, that sounds like a cosy way to spend a moment.",
        ),
        (
            "The neighbours are having a party again tonight, it seems.",
            "Ha, maybe earplugs are in order then, just in case.",
        ),
        (
            "I watched a really good documentary about octopuses yesterday.",
            "Octopuses are fascinating, they are surprisingly clever animals.",
        ),
        (
            "Traffic was awful on the way home this evening.",
            "That's frustrating, I hope the rest of your evening is calmer.",
        ),
        (
            "I'm trying to drink more water this month, wish me luck.",
            "Good luck, a bottle on the desk makes it much easier.",
        ),
        (
            "The sunset from my window was beautiful tonight, really orange.",
            "That sounds lovely, it's nice to stop and notice those moments.",
        ),
        (
            "I think I need a proper holiday soon, honestly.",
            "That's fair, you have been juggling a lot lately.",
        ),
        (
            "My coffee machine made a strange noise this morning.",
            "Uh oh, maybe it needs descaling, that often helps.",
        ),
        (
            "I bumped into an old friend at the supermarket today.",
            "What a nice surprise, it's always fun to catch up.",
        ),
        (
            "It's so quiet in the office today, everyone is away.",
            "Enjoy the calm, quiet days can be very productive.",
        ),
        (
            "I'm in a good mood today for no particular reason.",
            "Love that, enjoy it and let it carry you through the day.",
        ),
        (
            "The heating in my building is broken again, typical.",
            "Oh no, I hope they fix it quickly, stay warm meanwhile.",
        ),
        (
            "I tried a new bakery this morning and it was great.",
            "Nice find, a good bakery nearby is a real treasure.",
        ),
        (
            "Anyway, let me grab a glass of water quickly.",
            "Sure, take your time, I'll be right here.",
        ),
        (
            "Thanks, you have been really helpful today as always.",
            "You're welcome, happy to help whenever you need me.",
        ),
        (
            "I'm a bit tired, so let's keep this short today.",
            "No problem, we can keep it brief and to the point.",
        ),
        (
            "My plants on the windowsill are finally flowering again.",
            "How lovely, a bit of colour inside always cheers things up.",
        ),
    ),
    "zh": (
        ("今天早上一直在下雨，出门都不想出。", "那就在家待着吧，希望下午能放晴。"),
        ("昨晚终于睡了个好觉，好久没这么舒服了。", "太好了，睡好了一整天精神都不一样。"),
        ("这周工作特别忙，感觉有点顶不住。", "辛苦了，希望周末能好好休息一下。"),
        ("刚给自己泡了一大壶茶，准备慢慢喝。", "不错，边喝茶边聊正合适。"),
        ("楼上邻居好像又在装修，吵得要命。", "那确实烦人，实在不行就戴个耳塞吧。"),
        ("昨天看了一部讲章鱼的纪录片，特别有意思。", "章鱼真的很聪明，这类纪录片挺值得看的。"),
        ("下班路上堵了一个多小时，累死了。", "太折腾了，晚上早点休息吧。"),
        ("这个月我想多喝点水，给自己定了个目标。", "好主意，桌上放个水杯会容易坚持很多。"),
        ("今天傍晚窗外的晚霞特别好看。", "听着就很美，偶尔停下来看看挺好的。"),
        ("感觉我该好好休个假了，真的。", "确实，你最近事情太多了。"),
        ("早上咖啡机发出奇怪的声音，不知道是不是坏了。", "可能需要除垢了，清理一下通常就好。"),
        ("今天在超市碰到了一个好久不见的老朋友。", "真巧，能碰上老朋友聊聊挺开心的。"),
        ("今天办公室特别安静，大家都请假了。", "那正好可以专心做点事情。"),
        ("今天心情莫名其妙地特别好。", "真好，就让这份好心情陪你一整天吧。"),
        ("我们楼的暖气又坏了，真是服了。", "希望物业赶紧修好，先多穿点吧。"),
        ("早上试了一家新开的面包店，味道很好。", "不错，家附近有家好面包店很难得。"),
        ("我先去倒杯水，马上回来。", "好的，不着急，我在这儿等你。"),
        ("谢谢你，今天帮了我不少忙。", "不客气，有需要随时找我就行。"),
        ("今天有点累，我们简单聊几句就好。", "没问题，那我们长话短说。"),
        ("窗台上的花终于又开了，挺开心的。", "真好，家里有点颜色心情也会好很多。"),
    ),
}

_OPENERS: dict[str, tuple[str, ...]] = {
    "en": (
        "Can we go over {topic} for a minute, if you have time?",
        "I've been thinking about {topic} again this week.",
        "Quick update on {topic}, if you have a moment.",
        "Let's talk about {topic} for a bit, there's news.",
        "Something came up about {topic} that I wanted to share.",
    ),
    "zh": (
        "有空的话，我们聊聊{topic}的事吧。",
        "这周我又在琢磨{topic}的事了。",
        "跟你说一下{topic}的最新进展。",
        "关于{topic}，有点新情况想跟你说。",
        "说到{topic}，我这边有点新消息。",
    ),
}

_REPLIES: dict[str, tuple[str, ...]] = {
    "en": (
        "Of course, happy to help with {topic}. What's new?",
        "Sure, let's sort out {topic}. Where do things stand?",
        "Go ahead, I'd love to hear how {topic} is going.",
        "Absolutely, tell me what's happening with {topic}.",
    ),
    "zh": (
        "好啊，{topic}现在进展到哪一步了？",
        "没问题，我们来理一理{topic}的事。",
        "你说吧，我很想知道{topic}怎么样了。",
        "当然可以，{topic}有什么新情况？",
    ),
}

_ACKS: dict[str, tuple[str, ...]] = {
    "en": (
        "Got it, I've made a note of that for you.",
        "Sounds good, that should work out nicely in the end.",
        "Noted. Let me know if anything changes later.",
        "That sounds like a sensible choice to me.",
        "Great, one less thing to worry about then.",
        "Okay, I'll keep that in mind from now on.",
    ),
    "zh": (
        "好的，我记下来了，有变化再告诉我。",
        "听起来不错，这样安排挺合理的。",
        "明白了，这件事就先这么定。",
        "好嘞，又搞定一件事，真不错。",
        "收到，我会把这个记在心上的。",
        "挺好的选择，我觉得没问题。",
    ),
}

_SUMMARY_OPEN: dict[str, tuple[str, ...]] = {
    "en": (
        "A relaxed chat with a bit of small talk.",
        "A short catch-up conversation.",
        "A practical planning conversation.",
    ),
    "zh": ("一次轻松的闲聊。", "一次简短的交流。", "一次偏实务的规划对话。"),
}
_SUMMARY_CLOSE: dict[str, tuple[str, ...]] = {
    "en": (
        "Nothing was fully settled yet.",
        "The user seemed in good spirits.",
        "The assistant offered to follow up later.",
    ),
    "zh": ("事情还没有完全定下来。", "用户心情不错。", "助手答应之后再跟进。"),
}
_SUMMARY_SLOTS: dict[str, tuple[str, ...]] = {
    "en": (
        "They went over the {nouns} for {about}.",
        "Much of the chat was about the {nouns} for {about}.",
        "On {about}, the {nouns} came up.",
    ),
    "zh": (
        "聊了{about}的{nouns}。",
        "关于{about}，主要说了{nouns}。",
        "谈到{about}时提到了{nouns}。",
    ),
}

_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "zh": ("周一", "周二", "周三", "周四", "周五", "周六", "周日"),
}
_EN_NUM = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_ZH_NUM = ("零", "一", "两", "三", "四", "五", "六", "七", "八", "九", "十")


# ---------------------------------------------------------------------------------------------
# Values.


def _clock(lang: str, rng: random.Random, lo: int, hi: int) -> str:
    h, m = rng.randint(lo, hi), rng.choice((0, 10, 15, 20, 30, 40, 45, 50))
    if lang == "en":
        return f"{(h - 1) % 12 + 1}:{m:02d} {'am' if h < 12 else 'pm'}"
    part = (
        "早上"
        if h < 9
        else "上午"
        if h < 12
        else "中午"
        if h < 14
        else "下午"
        if h < 18
        else "晚上"
    )
    h12 = h if h <= 12 else h - 12
    return f"{part}{h12}点" + ("" if m == 0 else "半" if m == 30 else f"{m}分")


def _money(lang: str, rng: random.Random, lo: int, hi: int) -> str:
    step = 10 ** max(0, len(str(hi)) - 2)
    n = max(step, round(rng.randint(lo, hi) / step) * step)
    if lang == "en":
        return f"{n:,} dollars"
    y = round(n * 7 / (step * 5)) * step * 5
    return f"{y / 10_000:g}万元" if y >= 10_000 else f"{y}元"


def _date(lang: str, rng: random.Random) -> str:
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    return f"{_MONTHS[month - 1]} {day}" if lang == "en" else f"{month}月{day}日"


def _value(spec: tuple[str, ...], lang: str, rng: random.Random) -> str:
    """One value of a slot: a choice from its list, or the output of its generator."""
    if not spec[0].startswith("@"):
        return rng.choice(spec)
    kind, *args = spec[0][1:].split(":")
    if kind == "time":
        return _clock(lang, rng, 6, 21)
    if kind == "eve":
        return _clock(lang, rng, 18, 21)
    if kind == "date":
        return _date(lang, rng)
    if kind == "wday":
        return rng.choice(_WEEKDAYS[lang])
    lo, hi = int(args[0]), int(args[1])
    return _money(lang, rng, lo, hi) if kind == "money" else str(rng.randint(lo, hi))


def _when(t: float, lang: str, rng: random.Random) -> str:
    """A time reference to `t`, as said at NOW: by month ("in March", "上个月") or relative ("two
    weeks ago", "大概三个月前"); one of those that are true, drawn at random."""
    then, now = time.gmtime(t), time.gmtime(NOW)
    back = (now.tm_year - then.tm_year) * 12 + now.tm_mon - then.tm_mon
    en, zh = [], []
    if back == 0:
        en.append("earlier this month")
        zh.append("这个月早些时候")
    elif back == 1:
        en.append("last month")
        zh.append("上个月")
    if 1 <= back <= 10:
        en.append(f"in {_MONTHS[then.tm_mon - 1]}")
        zh.append(f"{then.tm_mon}月份")
    days = (NOW - t) / DAY
    if days < 9:
        en.append("a few days ago")
        zh.append("前几天")
    elif days < 46:
        w = max(1, round(days / 7))
        en.append("last week" if w == 1 else f"{_EN_NUM[w]} weeks ago")
        zh.append("上周" if w == 1 else f"{_ZH_NUM[w]}周前")
    elif days < 320:
        m = round(days / 30.4)
        en.append(f"about {_EN_NUM[m]} months ago")
        zh.append(f"大概{_ZH_NUM[m]}个月前")
    return rng.choice(en if lang == "en" else zh)


# ---------------------------------------------------------------------------------------------
# The world of one user.


@dataclass(frozen=True)
class _Detail:
    topic: Topic
    slot: Slot
    mem: str  # the id of the turn that tells it
    time: float
    past: bool  # in a transcript (True) or in the current session


@dataclass
class _User:
    ns: str
    lang: str
    memories: list[Memory] = field(default_factory=list)
    session: list[_Detail] = field(default_factory=list)  # details of the current session
    past: list[_Detail] = field(default_factory=list)  # details of the past sessions
    summaries: dict[str, list[str]] = field(default_factory=dict)  # topic key -> summary ids
    current: set[str] = field(default_factory=set)  # topic keys of the current session
    profile: dict[str, str] = field(default_factory=dict)  # attr key -> its newest memory id
    topics: set[str] = field(default_factory=set)  # every topic key of the user

    @property
    def li(self) -> int:
        return LANGS.index(self.lang)


_Plan = list[tuple[Topic, list[Slot]]]  # a session's topics and the kinds of detail it tells
_Pair = tuple[str, str, tuple[Topic, Slot] | None]  # a user turn, the reply, the detail told


def _topic_pairs(
    topic: Topic, told: list[tuple[Slot, str]], lang: str, rng: random.Random, opener: bool = True
) -> list[_Pair]:
    """A topic's exchanges: an opening one (`opener`), then one per detail told."""
    li = LANGS.index(lang)
    pairs: list[_Pair] = []
    if opener:
        user = rng.choice(_OPENERS[lang]).format(topic=topic.name[li])
        pairs.append((user, rng.choice(_REPLIES[lang]).format(topic=topic.about[li]), None))
    for slot, v in told:
        say = rng.choice(slot.says[li]).format(v=v)
        pairs.append((say, rng.choice(_ACKS[lang]), (topic, slot)))
    return pairs


def _arrange(blocks: list[list[_Pair]], n_pairs: int, lang: str, rng: random.Random) -> list[_Pair]:
    """The topic blocks in order, with small-talk pairs around them up to `n_pairs` pairs."""
    extra = max(0, n_pairs - sum(len(b) for b in blocks))
    pool = _SMALL_TALK[lang]
    talk = (
        rng.sample(pool, extra) if extra <= len(pool) else [rng.choice(pool) for _ in range(extra)]
    )
    slots = sorted(rng.randint(0, len(blocks)) for _ in talk)
    out: list[_Pair] = []
    for i, block in enumerate(blocks):
        out.extend((u, a, None) for (u, a), s in zip(talk, slots, strict=True) if s == i)
        out.extend(block)
    out.extend((u, a, None) for (u, a), s in zip(talk, slots, strict=True) if s == len(blocks))
    return out


def _emit(
    u: _User,
    pairs: list[_Pair],
    store: str,
    sid: str,
    prefix: str,
    times: Sequence[float],
) -> list[_Detail]:
    """The turns of one session as memories; returns the details they tell."""
    told: list[_Detail] = []
    for j, (user, assistant, detail) in enumerate(pairs):
        for k, (speaker, text) in enumerate((("user", user), ("assistant", assistant))):
            turn = 2 * j + k
            mid = f"{prefix}{turn}"
            u.memories.append(
                Memory(mid, store, "episode", text, times[turn], sid, turn, speaker, u.lang)
            )
            if detail is not None and k == 0:
                told.append(_Detail(detail[0], detail[1], mid, times[turn], store == "transcript"))
    return told


def _summary(plan: _Plan, lang: str, rng: random.Random) -> str:
    """2-4 sentences of gist: which topics, which kinds of detail, never a value."""
    li = LANGS.index(lang)
    for attempt in range(8):
        parts = []
        for topic, slots in plan:
            if slots and rng.random() < 0.5 and attempt < 6:
                nouns = [s.noun[li] for s in slots[: 2 if len(plan) < 3 else 1]]
                joined = (" and the " if lang == "en" else "和").join(nouns)
                form = rng.choice(_SUMMARY_SLOTS[lang])
                parts.append(form.format(nouns=joined, about=topic.about[li]))
            else:
                parts.append(topic.gist[li])
        if len(plan) < 3 and rng.random() < 0.6:
            parts.insert(0, rng.choice(_SUMMARY_OPEN[lang]))
        if len(parts) < 2 or (len(parts) < 4 and rng.random() < 0.3):
            parts.append(rng.choice(_SUMMARY_CLOSE[lang]))
        text = (" " if lang == "en" else "").join(parts)
        if _length_ok(text, lang):
            return text
    return text


def _times(start: float, n: int, rng: random.Random, lo: float, hi: float) -> list[float]:
    out, t = [], start
    for _ in range(n):
        out.append(t)
        t += rng.uniform(lo, hi)
    return out


def _draw_other(spec: tuple[str, ...], lang: str, rng: random.Random, avoid: str) -> str:
    v = _value(spec, lang, rng)
    for _ in range(8):
        if v != avoid:
            break
        v = _value(spec, lang, rng)
    return v


def _past_session(
    u: _User,
    k: int,
    plan: _Plan,
    start: float,
    values: dict[tuple[str, str], str],
    rng: random.Random,
    track: bool = True,
) -> None:
    """Past session k: its turns (`transcript`) and its summary; `track`: record its details
    and summary for questions."""
    li = u.li
    blocks = []
    for topic, slots in plan:
        told = []
        for s in slots:
            v = _value(s.values[li], u.lang, rng)
            values[(topic.key, s.key)] = v
            told.append((s, v))
        blocks.append(_topic_pairs(topic, told, u.lang, rng))
    pairs = _arrange(blocks, rng.randint(5, 15), u.lang, rng)
    times = _times(start, 2 * len(pairs), rng, 30.0, 150.0)
    details = _emit(u, pairs, "transcript", f"{u.ns}-s{k}", f"t{k}-", times)
    mid = f"m{k}"
    text = _summary(plan, u.lang, rng)
    u.memories.append(
        Memory(mid, "summary", "summary", text, times[-1] + MINUTE, "", -1, "", u.lang)
    )
    if track:
        u.past.extend(details)
        for topic, _ in plan:
            u.summaries.setdefault(topic.key, []).append(mid)


def _linked(topic: Topic) -> bool:
    return any(s.links for s in topic.slots)


def _choose_topics(rng: random.Random) -> tuple[list[Topic], list[Topic], Topic | None]:
    """The user's past topics, the current session's recurring topics (2, the first with a
    linked kind of detail), and maybe one fresh topic of the current session only."""
    linked = [t for t in TOPICS if _linked(t)]
    first = rng.sample(linked, 3)
    rest = [t for t in TOPICS if t not in first]
    mine = first + rng.sample(rest, rng.randint(13, 19))
    current = [first[0], rng.choice(mine[1:])]
    fresh = rng.choice([t for t in TOPICS if t not in mine]) if rng.random() < 0.35 else None
    if fresh is None and rng.random() < 0.5:
        current.append(rng.choice([t for t in mine if t not in current]))
    return mine, current, fresh


def _reserve(
    current: list[Topic], fresh: Topic | None, rng: random.Random
) -> dict[str, list[Slot]]:
    """The kinds of detail only the current session tells, per topic."""
    out: dict[str, list[Slot]] = {}
    for i, topic in enumerate(current):
        slots = list(topic.slots)
        first = rng.choice([s for s in slots if s.links] if i == 0 else slots)
        more = [s for s in slots if s is not first]
        two = len(slots) >= 4 and rng.random() < 0.35
        out[topic.key] = [first] + (rng.sample(more, 1) if two else [])
    if fresh is not None:
        out[fresh.key] = rng.sample(list(fresh.slots), rng.randint(1, 2))
    return out


def _past_plans(
    mine: list[Topic], reserved: dict[str, list[Slot]], rng: random.Random
) -> list[_Plan]:
    """20-40 past sessions, 1-3 topics each, every topic at least once; a kind of detail of a
    topic is told in one session only, and never one reserved for the current session."""
    n = rng.randint(20, 40)
    sizes = [rng.choices((1, 2, 3), (3, 5, 2))[0] for _ in range(n)]
    topics: list[list[Topic]] = [[] for _ in range(n)]
    order = rng.sample(mine, len(mine))
    for i, topic in enumerate(order):
        topics[i % n].append(topic)
    for i in range(n):
        others = [t for t in mine if t not in topics[i]]
        topics[i] += rng.sample(others, max(0, sizes[i] - len(topics[i])))
    used: dict[str, set[str]] = {}
    plans: list[_Plan] = []
    for session in topics:
        plan: _Plan = []
        for topic in session:
            taken = used.setdefault(topic.key, {s.key for s in reserved.get(topic.key, [])})
            free = [s for s in topic.slots if s.key not in taken]
            slots = rng.sample(free, min(len(free), rng.choice((1, 1, 2))))
            taken.update(s.key for s in slots)
            plan.append((topic, slots))
        plans.append(plan)
    return plans


def _current_plan(
    current: list[Topic],
    fresh: Topic | None,
    reserved: dict[str, list[Slot]],
    past: dict[tuple[str, str], str],
    rng: random.Random,
) -> _Plan:
    """The current session: per topic its reserved kinds, and often one a past session told."""
    plan: _Plan = []
    for i, topic in enumerate(current):
        told = [s for s in topic.slots if (topic.key, s.key) in past]
        room = len(reserved[topic.key]) == 1 and (i == 0 or rng.random() < 0.7)
        shared = rng.sample(told, 1) if told and room else []
        plan.append((topic, reserved[topic.key] + shared))
    if fresh is not None:
        plan.insert(rng.randint(0, len(plan)), (fresh, reserved[fresh.key]))
    return plan


def _current_session(
    u: _User, k: int, plan: _Plan, past: dict[tuple[str, str], str], rng: random.Random
) -> None:
    """The current session: 8-16 turns (at most 3 topics of at most 2 details each, only the
    first opened), between 5 and 120 minutes before NOW."""
    li = u.li
    blocks = []
    for i, (topic, slots) in enumerate(plan):
        told = [
            (s, _draw_other(s.values[li], u.lang, rng, past.get((topic.key, s.key), "")))
            for s in slots
        ]
        blocks.append(_topic_pairs(topic, told, u.lang, rng, opener=i == 0))
    pairs = _arrange(blocks, max(rng.randint(4, 8), sum(len(b) for b in blocks)), u.lang, rng)
    start = NOW - rng.uniform(25.0, 120.0) * MINUTE
    end = NOW - rng.uniform(5.0, min(60.0, (NOW - start) / MINUTE - 15.0)) * MINUTE
    n = 2 * len(pairs)
    times = [start + (end - start) * i / (n - 1) for i in range(n)]
    u.session.extend(_emit(u, pairs, "session", f"{u.ns}-s{k}", "s", times))
    u.current.update(t.key for t, _ in plan)


def _profile(u: _User, need: set[str], rng: random.Random) -> None:
    """10-16 attributes, 2-4 of them changed (an older and a newer note; the newer answers)."""
    li = u.li
    rest = [a.key for a in ATTRS if a.key not in need]
    keys = sorted(need) + rng.sample(rest, max(0, rng.randint(10, 16) - len(need)))
    changeable = [k for k in keys if ATTR[k].changed[li]]
    changed = set(rng.sample(changeable, min(len(changeable), rng.randint(2, 4))))
    for i, key in enumerate(keys):
        a = ATTR[key]
        v = _value(a.values[li], u.lang, rng)
        mid = f"p{i}"
        if key in changed:
            old = NOW - rng.uniform(200.0, 400.0) * DAY
            text = a.says[li].format(v=v)
            u.memories.append(Memory(f"{mid}a", "profile", a.kind, text, old, "", -1, "", u.lang))
            v = _draw_other(a.values[li], u.lang, rng, v)
            t, text = NOW - rng.uniform(5.0, 150.0) * DAY, a.changed[li].format(v=v)
        else:
            t, text = NOW - rng.uniform(20.0, 330.0) * DAY, a.says[li].format(v=v)
        u.memories.append(Memory(mid, "profile", a.kind, text, t, "", -1, "", u.lang))
        u.profile[key] = mid


def _needed_attrs(plan: _Plan, mine: list[Topic], rng: random.Random) -> set[str]:
    """Attributes linked to the details of the current session, and to some past topics."""
    need: set[str] = {link for _, slots in plan for s in slots for link in s.links}
    for topic in mine:
        links = sorted({link for s in topic.slots for link in s.links})
        if links and rng.random() < 0.5:
            need.add(rng.choice(links))
    return need


def _user(ns: str, lang: str, rng: random.Random) -> _User:
    u = _User(ns, lang)
    mine, current, fresh = _choose_topics(rng)
    u.topics = {t.key for t in mine} | ({fresh.key} if fresh else set())
    reserved = _reserve(current, fresh, rng)
    plans = _past_plans(mine, reserved, rng)
    starts = sorted(NOW - rng.uniform(1.0, 183.0) * DAY for _ in plans)
    values: dict[tuple[str, str], str] = {}
    for k, (plan, start) in enumerate(zip(plans, starts, strict=True)):
        _past_session(u, k, plan, start, values, rng)
    now_plan = _current_plan(current, fresh, reserved, values, rng)
    _current_session(u, len(plans), now_plan, values, rng)
    _profile(u, _needed_attrs(now_plan, mine, rng), rng)
    return u


def _filler(u: _User, total: int, rng: random.Random) -> None:
    """Past sessions on the topics the user's core world does not use, until the transcripts
    hold about `total` memories; their details and summaries are never asked about."""
    pool = [t for t in TOPICS if t.key not in u.topics]
    count = sum(1 for m in u.memories if m.store == "transcript")
    k = 1 + max(int(m.session_id.rsplit("-s", 1)[1]) for m in u.memories if m.session_id)
    values: dict[tuple[str, str], str] = {}
    while count < total:
        topics = rng.sample(pool, rng.choices((1, 2, 3), (3, 5, 2))[0])
        plan: _Plan = [(t, rng.sample(list(t.slots), rng.randint(1, 2))) for t in topics]
        before = len(u.memories)
        _past_session(u, k, plan, NOW - rng.uniform(1.0, 730.0) * DAY, values, rng, track=False)
        count += len(u.memories) - before - 1
        k += 1


# ---------------------------------------------------------------------------------------------
# Templates and questions.


@dataclass(frozen=True)
class Template:
    id: str
    lang: str
    type: str
    half: str
    stores: tuple[str, ...]
    texts: tuple[str, ...]
    detail: str  # "" or a detail kind (see the template file's "about")
    detail2: str
    topic: str  # "" | "past" | "past_only"
    attr: str  # "" | "any" | "link" | "list"
    attrs: tuple[str, ...]


_DETAILS = ("session_only", "session_any", "past_only", "past_any", "shared")


def _gold(qtype: str) -> tuple[str, ...]:
    return () if qtype == "none" else tuple(sorted(qtype.split("+")))


def _fields(t: Template) -> set[str]:
    """The placeholders a template's picks can fill."""
    out: set[str] = set()
    if t.detail:
        out |= {"thing", "noun", "topic", "about"}
        if t.detail in ("past_only", "past_any", "shared"):
            out.add("when")
    elif t.topic:
        out |= {"topic", "about"}
    if t.detail2:
        out.add("thing2")
    if t.attr:
        out.add("attr")
    return out


def _template(raw: dict[str, object]) -> Template:
    pick = raw.get("pick", {})
    assert isinstance(pick, dict)
    texts = raw["texts"]
    stores = raw["stores"]
    assert isinstance(texts, list) and isinstance(stores, list)
    t = Template(
        id=str(raw["id"]),
        lang=str(raw["lang"]),
        type=str(raw["type"]),
        half=str(raw["half"]),
        stores=tuple(sorted(str(s) for s in stores)),
        texts=tuple(str(x) for x in texts),
        detail=str(pick.get("detail", "")),
        detail2=str(pick.get("detail2", "")),
        topic=str(pick.get("topic", "")),
        attr=str(pick.get("attr", "")),
        attrs=tuple(str(a) for a in pick.get("attrs", [])),
    )
    _validate(t)
    return t


def _validate(t: Template) -> None:
    problems = []
    if t.lang not in LANGS or t.type not in TYPES or t.half not in HALVES:
        problems.append("lang, type or half")
    if t.stores != _gold(t.type):
        problems.append(f"stores {t.stores} for type {t.type}")
    if t.detail not in ("", *_DETAILS) or t.detail2 not in ("", "past_only", "past_any"):
        problems.append("detail")
    if t.attr not in ("", "any", "link", "list") or t.topic not in ("", "past", "past_only"):
        problems.append("attr or topic")
    if t.attr == "list" and (not t.attrs or not all(a in ATTR for a in t.attrs)):
        problems.append("attrs")
    if not t.texts:
        problems.append("no texts")
    extra = {p for x in t.texts for p in _PLACEHOLDER.findall(x)} - _fields(t)
    if extra:
        problems.append(f"placeholders {sorted(extra)} not filled by its pick")
    if problems:
        raise ValueError(f"template {t.id}: {'; '.join(problems)}")


def load_templates(path: Path | None = None) -> list[Template]:
    """The question templates of `path` (default: `TEMPLATES`), checked."""
    data = json.loads((path or TEMPLATES).read_text(encoding="utf-8"))
    if data.get("format") != 1:
        raise ValueError(f"{path}: unknown format {data.get('format')!r}")
    out = [_template(raw) for raw in data["templates"]]
    ids = [t.id for t in out]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate template ids")
    return out


def _detail_candidates(
    kind: str, u: _User, past_only_topic: bool
) -> list[tuple[_Detail, _Detail | None]]:
    past_keys = {(d.topic.key, d.slot.key): d for d in u.past}
    now_keys = {(d.topic.key, d.slot.key) for d in u.session}
    out: list[tuple[_Detail, _Detail | None]]
    if kind == "session_only":
        out = [(d, None) for d in u.session if (d.topic.key, d.slot.key) not in past_keys]
    elif kind == "session_any":
        out = [(d, None) for d in u.session]
    elif kind == "past_only":
        out = [(d, None) for d in u.past if (d.topic.key, d.slot.key) not in now_keys]
    elif kind == "past_any":
        out = [(d, None) for d in u.past]
    else:  # shared
        out = [
            (d, past_keys[k]) for d in u.session if (k := (d.topic.key, d.slot.key)) in past_keys
        ]
    if past_only_topic:
        out = [c for c in out if c[0].topic.key not in u.current]
    return out


def _linked_attrs(u: _User, slots: Sequence[Slot]) -> list[str]:
    return sorted({a for s in slots for a in s.links if a in u.profile})


def _pick_attr(t: Template, u: _User, slots: Sequence[Slot], rng: random.Random) -> str | None:
    if t.attr == "any":
        keys = sorted(u.profile)
    elif t.attr == "link":
        keys = _linked_attrs(u, slots)
    else:
        keys = [a for a in t.attrs if a in u.profile]
    return rng.choice(keys) if keys else None


_BY_KEY = {t.key: t for t in TOPICS}


def _pick_topic(t: Template, u: _User, rng: random.Random) -> Topic | None:
    keys = sorted(k for k in u.summaries if t.topic != "past_only" or k not in u.current)
    if t.attr == "link":
        keys = [k for k in keys if _linked_attrs(u, _BY_KEY[k].slots)]
    return _BY_KEY[rng.choice(keys)] if keys else None


def _render(text: str, fill: dict[str, str], lang: str) -> str:
    """The text with its placeholders filled; in English capitalised, in Chinese with "我的妹妹的
    名字" read as "我妹妹的名字"."""
    out = text.format_map(fill)
    if lang == "en":
        return out[0].upper() + out[1:]
    attr = fill.get("attr", "")
    return out.replace("的" + attr, attr) if "的" in attr else out


def _instantiate(t: Template, u: _User, rng: random.Random) -> Question | None:
    """One question of template `t` about user `u`, or None where `u` has nothing it asks."""
    li = LANGS.index(t.lang)
    fill: dict[str, str] = {}
    answers: list[str] = []
    topic: Topic | None = None
    slots: Sequence[Slot] = ()
    if t.detail:
        found = _detail_candidates(t.detail, u, t.topic == "past_only")
        if t.attr == "link":
            found = [c for c in found if _linked_attrs(u, (c[0].slot,))]
        if not found:
            return None
        d, also = rng.choice(found)
        topic, slots = d.topic, (d.slot,)
        fill |= {"thing": d.slot.thing[li], "noun": d.slot.noun[li]}
        answers += [d.mem] + ([also.mem] if also else [])
        dated = also or (d if d.past else None)
        if dated is not None:
            fill["when"] = _when(dated.time, t.lang, rng)
    elif t.topic:
        topic = _pick_topic(t, u, rng)
        if topic is None:
            return None
        slots = topic.slots
    if topic is not None:
        fill |= {"topic": topic.name[li], "about": topic.about[li]}
    if t.detail2:
        others = [c for c, _ in _detail_candidates(t.detail2, u, False) if c.topic is not topic]
        if not others:
            return None
        d2 = rng.choice(others)
        fill["thing2"] = d2.slot.thing[li]
        answers.append(d2.mem)
    if t.attr:
        key = _pick_attr(t, u, slots, rng)
        if key is None:
            return None
        fill["attr"] = ATTR[key].noun[li]
        answers.append(u.profile[key])
    if "summary" in t.stores and topic is not None:
        answers += u.summaries[topic.key]
    text = _render(rng.choice(t.texts), fill, t.lang)
    return Question(u.ns, text, t.lang, t.type, t.id, t.half, t.stores, tuple(sorted(set(answers))))


def _questions(
    u: _User, by: dict[tuple[str, str], list[Template]], n: int, offset: int, rng: random.Random
) -> list[Question]:
    """`n` questions cycling through the types; about CROSS_LINGUAL of them in the other
    language; no text twice for one user."""
    other = LANGS[1 - u.li]
    out: list[Question] = []
    seen: set[str] = set()
    for i in range(n):
        qtype = TYPES[(i + offset) % len(TYPES)]
        lang = other if rng.random() < CROSS_LINGUAL else u.lang
        for _ in range(30):
            q = _instantiate(rng.choice(by[(lang, qtype)]), u, rng)
            if q is not None and q.text not in seen:
                seen.add(q.text)
                out.append(q)
                break
    return out


# ---------------------------------------------------------------------------------------------
# The world.


def build(
    seed: int = 0,
    users: int = 16,
    questions_per_user: int = 40,
    big: int = 0,
    templates: Path | None = None,
) -> World:
    """The world of `users` namespaces ("u00", ...: even English, odd Chinese) and, with `big`,
    one more ("big", English for an even seed, Chinese for an odd one) whose transcripts hold
    about `big` memories; `questions_per_user` questions in each."""
    by: dict[tuple[str, str], list[Template]] = {}
    for t in load_templates(templates):
        by.setdefault((t.lang, t.type), []).append(t)
    missing = [(lang, q) for lang in LANGS for q in TYPES if (lang, q) not in by]
    if missing:
        raise ValueError(f"no templates for {missing}")
    made: list[_User] = []
    for i in range(users):
        made.append(_user(f"u{i:02d}", LANGS[i % 2], random.Random(f"{seed}:u{i:02d}")))
    if big > 0:
        rng = random.Random(f"{seed}:big")
        u = _user("big", LANGS[seed % 2], rng)
        _filler(u, big, rng)
        made.append(u)
    memories: dict[str, list[Memory]] = {}
    questions: list[Question] = []
    for i, u in enumerate(made):
        memories[u.ns] = sorted(u.memories, key=lambda m: (m.created_at, m.id))
        rng = random.Random(f"{seed}:{u.ns}:questions")
        questions += _questions(u, by, questions_per_user, i, rng)
    return World(NOW, memories, questions)


# ---------------------------------------------------------------------------------------------
# Checks.


def _length_ok(text: str, lang: str) -> bool:
    if lang == "en":
        return 8 <= len(text.split()) <= 40
    return 10 <= len(text) <= 60


def check(world: World) -> list[str]:
    """What is wrong with a world: ids not unique, texts out of length or language, answers
    missing or in other stores than the gold set."""
    problems: list[str] = []
    for ns, mems in world.memories.items():
        store = {m.id: m.store for m in mems}
        if len(store) != len(mems):
            problems.append(f"{ns}: duplicate memory ids")
        for m in mems:
            if not _length_ok(m.text, m.lang) or bool(_CJK.search(m.text)) != (m.lang == "zh"):
                problems.append(f"{ns}/{m.id} ({m.lang}, {m.store}): {m.text!r}")
        for q in (q for q in world.questions if q.namespace == ns):
            got = {store.get(a, "?") for a in q.answers}
            if got != set(q.stores):
                problems.append(f"{ns} {q.template}: answers in {sorted(got)}, gold {q.stores}")
    return problems


def store_cost(stores: Iterable[str]) -> float:
    """What searching `stores` costs (`STORE_COST`): the one price list of every row."""
    return sum(STORE_COST[s] for s in stores)


def coverage_and_cost(
    questions: Sequence[Question], chosen: Sequence[set[str]]
) -> tuple[float, float]:
    """The share of `questions` whose gold stores are all in their chosen store set, and the mean
    store cost (`store_cost`) of the sets."""
    if not questions:
        return 0.0, 0.0
    covered = sum(set(q.stores) <= c for q, c in zip(questions, chosen, strict=True))
    cost = sum(store_cost(c) for c in chosen)
    return covered / len(questions), cost / len(questions)


def cheapest_reaching(options: Sequence[tuple[float, float, T]], target: float) -> T:
    """Of (coverage, store cost, choice) options, the cheapest choice whose coverage reaches
    `target`; when none does, the one that covers most (the cheapest of those)."""
    reaching = [o for o in options if o[0] >= target]
    if reaching:
        return min(reaching, key=lambda o: (o[1], -o[0]))[2]
    return min(options, key=lambda o: (-o[0], o[1]))[2]


Printer = Callable[[str], None]


def _report(world: World, out: Printer = print) -> None:
    from collections import Counter

    mems = [m for ms in world.memories.values() for m in ms]
    out(f"memories by store: {dict(Counter(m.store for m in mems))}")
    qs = world.questions
    out(f"questions: {len(qs)}; by type: {dict(Counter(q.type for q in qs))}")
    out(f"by lang: {dict(Counter(q.lang for q in qs))}")
    out(f"by half: {dict(Counter(q.half for q in qs))}")


if __name__ == "__main__":
    w = build(seed=0)
    _report(w)
    for p in check(w)[:40]:
        print("PROBLEM", p)
