"""A synthetic, multi-session, two-speaker dialog set with labelled evidence, English and Chinese.

Each conversation is one namespace: two speakers who meet for `sessions` sessions over about a
year. Besides small talk, the turns carry:
- persona facts, some of which change over time (a job; a home city, then a move; a pet, then
  another, then a third);
- dated events ("last Saturday I ran the Lisbon half marathon"), dated by their session;
- exact identifiers (order numbers, error codes, flight numbers), with near-miss siblings;
- events that both speakers tell in the same words, so that a question about one speaker has a
  look-alike turn of the other.

Questions have one of five types, and each names its evidence turns:
- `single_hop`: one fact, one turn ("What does Maya do for a living?");
- `multi_hop`: facts from two or three sessions ("Which cities has Maya lived in?");
- `temporal`: when an event happened ("When did Maya run the Lisbon half marathon?");
- `exact_id`: a question carrying an identifier ("What was order ORD-48213 for?");
- `adversarial`: about the other speaker, where a look-alike turn of the first speaker is the
  trap: both told of the same event in the same words, and only the speaker's name in the
  question tells which turn is the evidence.

`generate(seed)` is deterministic. Keep one seed for development and report another (`bench
quality` uses 1 and 2), so that nothing is tuned to one draw of the generator.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

DAY = 86_400.0
START = 1_735_689_600.0  # 2025-01-01T00:00:00Z
TYPES = ("single_hop", "multi_hop", "temporal", "exact_id", "adversarial")


@dataclass(frozen=True)
class Turn:
    turn_id: str
    namespace: str
    session_id: str
    speaker: str
    text: str  # "Speaker: words", as a transcript reads
    time: float


@dataclass(frozen=True)
class Question:
    namespace: str
    kind: str  # one of TYPES
    text: str
    evidence: tuple[str, ...]  # turn ids


@dataclass
class DialogSet:
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass(frozen=True)
class Lang:
    names: tuple[str, ...]
    jobs: tuple[str, ...]
    cities: tuple[str, ...]
    pets: tuple[str, ...]
    events: tuple[str, ...]
    items: tuple[str, ...]
    small_talk: tuple[str, ...]
    job_said: str
    city_said: str
    moved_said: str
    pet_said: str
    event_said: str
    event_mentions: tuple[str, ...]
    order_said: str
    error_said: str
    flight_said: str
    q_job: str
    q_city_now: str
    q_cities: str
    q_pets: str
    q_event_when: str
    q_order: str
    q_error: str
    q_flight: str


EN = Lang(
    names=("Maya", "Jonas", "Priya", "Tom", "Lena", "Omar", "Sofia", "Ken", "Ines", "Raj"),
    jobs=("nurse", "carpenter", "data analyst", "pilot", "pastry chef", "teacher", "architect"),
    cities=("Lisbon", "Denver", "Osaka", "Toronto", "Krakow", "Nairobi", "Glasgow", "Hobart"),
    pets=("a beagle", "a grey cat", "two budgies", "a tortoise", "a rescue greyhound"),
    events=(
        "ran the half marathon",
        "went to the jazz festival",
        "took the pottery class",
        "visited the science museum",
        "hiked the coastal trail",
        "played in the chess tournament",
    ),
    items=("a standing desk", "hiking boots", "a coffee grinder", "a bike helmet", "a tent"),
    small_talk=(
        "How was your week?",
        "Ha, that sounds fun.",
        "Oh really? Tell me more.",
        "I have been so busy lately.",
        "Nice to catch up again!",
        "The weather has been strange.",
        "Same here, honestly.",
        "Did you sleep well?",
    ),
    job_said="I work as a {job} now, it keeps me busy.",
    city_said="I live in {city}, close to the old harbour.",
    moved_said="Big news: I moved from {old} to {city} last month.",
    pet_said="We adopted {pet}, the whole flat is chaos.",
    event_said="Last Saturday I {event} in {city}.",
    event_mentions=(
        "I keep thinking about the day I {event}.",
        "Did I ever tell you how I {event}? Long story.",
        "Someone asked me again about how I {event}.",
    ),
    order_said="My order {code} for {item} still has not arrived.",
    error_said="The app keeps failing with error {code} when I log in.",
    flight_said="I booked flight {code} to {city} for the trip.",
    q_job="What does {name} do for a living?",
    q_city_now="Which city does {name} live in now?",
    q_cities="Which cities has {name} lived in?",
    q_pets="Which pets has {name} adopted?",
    q_event_when="When did {name} say they {event}?",
    q_order="What did {name} order with {code}?",
    q_error="Which app error did {name} get, {code}?",
    q_flight="Where does flight {code} that {name} booked go?",
)

ZH = Lang(
    names=("小王", "小李", "阿美", "老陈", "小周", "丽丽", "大刘", "小赵", "晓雪", "阿强"),
    jobs=("护士", "木匠", "数据分析师", "飞行员", "甜点师", "老师", "建筑师"),
    cities=("成都", "大连", "厦门", "西安", "青岛", "昆明", "苏州", "哈尔滨"),
    pets=("一只小猎犬", "一只灰猫", "两只鹦鹉", "一只乌龟", "一只灵缇犬"),
    events=(
        "跑了半程马拉松",
        "去了爵士音乐节",
        "上了陶艺课",
        "参观了科技馆",
        "走了海边步道",
        "参加了象棋比赛",
    ),
    items=("一张升降桌", "一双登山鞋", "一台磨豆机", "一个自行车头盔", "一顶帐篷"),
    small_talk=(
        "这周过得怎么样？",
        "哈哈，听起来很好玩。",
        "真的吗？快说说。",
        "最近真是太忙了。",
        "好久不见，真高兴！",
        "最近天气好奇怪。",
        "我也是，说实话。",
        "昨晚睡得好吗？",
    ),
    job_said="我现在是一名{job}，每天都很忙。",
    city_said="我住在{city}，离老码头很近。",
    moved_said="告诉你个大消息：我上个月从{old}搬到了{city}。",
    pet_said="我们领养了{pet}，家里乱成一团。",
    event_said="上周六我在{city}{event}。",
    event_mentions=(
        "我一直在回想那次{event}的事。",
        "我跟你讲过我{event}的经历吗？说来话长。",
        "又有人问我{event}的事了。",
    ),
    order_said="我的订单{code}买的是{item}，到现在还没到。",
    error_said="登录的时候应用一直报错{code}。",
    flight_said="我订了去{city}的航班{code}。",
    q_job="{name}是做什么工作的？",
    q_city_now="{name}现在住在哪个城市？",
    q_cities="{name}住过哪些城市？",
    q_pets="{name}领养过哪些宠物？",
    q_event_when="{name}是什么时候{event}的？",
    q_order="{name}的订单{code}买的是什么？",
    q_error="{name}登录时遇到的错误{code}是什么情况？",
    q_flight="{name}订的航班{code}飞往哪里？",
)


class _Conversation:
    """Builds one namespace's sessions and questions."""

    def __init__(self, rng: random.Random, lang: Lang, ns: str, sessions: int) -> None:
        self.rng, self.lang, self.ns = rng, lang, ns
        self.a, self.b = rng.sample(lang.names, 2)
        self.sessions = sessions
        self.plan: list[list[tuple[str, str, str]]] = [[] for _ in range(sessions)]
        self.out = DialogSet()
        self.codes: set[str] = set()
        self.events_left = list(lang.events)  # each event is told of by one pair of turns

    def _code(self, prefix: str, digits: int) -> str:
        while True:
            code = f"{prefix}{self.rng.randrange(10 ** (digits - 1), 10**digits)}"
            if code not in self.codes:
                self.codes.add(code)
                return code

    def say(self, session: int, speaker: str, text: str) -> tuple[str, str, str]:
        """Plan a turn; its id is fixed when the session is laid out."""
        slot = (speaker, text, f"{self.ns}-p{session}-{len(self.plan[session])}")
        self.plan[session].append(slot)
        return slot

    def ask(self, kind: str, text: str, *slots: tuple[str, str, str]) -> None:
        self.out.questions.append(Question(self.ns, kind, text, tuple(s[2] for s in slots)))

    def persona(self, me: str) -> None:
        lang, rng, n = self.lang, self.rng, self.sessions
        j = self.say(rng.randrange(n), me, lang.job_said.format(job=rng.choice(lang.jobs)))
        self.ask("single_hop", lang.q_job.format(name=me), j)
        old, new = rng.sample(lang.cities, 2)
        c1 = self.say(rng.randrange(n // 2), me, lang.city_said.format(city=old))
        c2 = self.say(rng.randrange(n // 2, n), me, lang.moved_said.format(old=old, city=new))
        self.ask("single_hop", lang.q_city_now.format(name=me), c2)
        self.ask("multi_hop", lang.q_cities.format(name=me), c1, c2)
        pets = rng.sample(lang.pets, 3)
        sessions = sorted(rng.sample(range(n), 3))
        p = [
            self.say(s, me, lang.pet_said.format(pet=pet))
            for s, pet in zip(sessions, pets, strict=True)
        ]
        self.ask("multi_hop", lang.q_pets.format(name=me), *p)

    def events(self, me: str, other: str) -> None:
        """`me` tells of an event; `other`, in another session, tells of the same one in the
        same words. Both mention it again in other sessions, without a date. The question about
        `me` is temporal (the dated turn is the evidence, the undated mentions are not); the one
        about `other` is the adversarial twin: only the speaker tells evidence from trap."""
        lang, rng, n = self.lang, self.rng, self.sessions
        event = self.events_left.pop(rng.randrange(len(self.events_left)))
        city = rng.choice(lang.cities)
        mine, theirs = rng.sample(range(n), 2)
        e = self.say(mine, me, lang.event_said.format(event=event, city=city))
        t = self.say(theirs, other, lang.event_said.format(event=event, city=city))
        for speaker in (me, other):
            for template in rng.sample(lang.event_mentions, 2):
                self.say(rng.randrange(n), speaker, template.format(event=event))
        self.ask("temporal", lang.q_event_when.format(name=me, event=event), e)
        self.ask("adversarial", lang.q_event_when.format(name=other, event=event), t)

    def identifiers(self, me: str) -> None:
        lang, rng, n = self.lang, self.rng, self.sessions
        base = self._code("ORD-", 5)
        sibling = f"ORD-{int(base[4:]) + 1}"  # a near miss: one digit apart
        self.codes.add(sibling)
        item, other_item = rng.sample(lang.items, 2)
        o = self.say(rng.randrange(n), me, lang.order_said.format(code=base, item=item))
        self.say(rng.randrange(n), me, lang.order_said.format(code=sibling, item=other_item))
        self.ask("exact_id", lang.q_order.format(name=me, code=base), o)
        err = self._code("E", 4)
        e = self.say(rng.randrange(n), me, lang.error_said.format(code=err))
        self.say(rng.randrange(n), me, lang.error_said.format(code=f"E{int(err[1:]) + 1}"))
        self.ask("exact_id", lang.q_error.format(name=me, code=err), e)
        fl = self._code(rng.choice(("LH", "BA", "CA", "NH")), 4)
        f = self.say(
            rng.randrange(n), me, lang.flight_said.format(code=fl, city=rng.choice(lang.cities))
        )
        self.ask("exact_id", lang.q_flight.format(name=me, code=fl), f)

    def lay_out(self, first_day: float) -> None:
        """Mix the planned turns with small talk (from both speakers, in equal shares), shuffle
        each session's turns, and date them a minute apart."""
        ids: dict[str, str] = {}
        day = first_day
        for s, planned in enumerate(self.plan):
            sid = f"{self.ns}-s{s:02d}"
            turns: list[tuple[str, str, str]] = list(planned)
            for i in range(self.rng.randrange(8, 14)):
                speaker = self.a if i % 2 == 0 else self.b
                turns.append((speaker, self.rng.choice(self.lang.small_talk), ""))
            self.rng.shuffle(turns)
            for pos, (speaker, words, plan_id) in enumerate(turns):
                tid = f"{sid}-t{pos:02d}"
                if plan_id:
                    ids[plan_id] = tid
                self.out.turns.append(
                    Turn(tid, self.ns, sid, speaker, f"{speaker}: {words}", day + 60.0 * pos)
                )
            day += self.rng.randrange(7, 35) * DAY
        self.out.questions = [
            Question(q.namespace, q.kind, q.text, tuple(ids[e] for e in q.evidence))
            for q in self.out.questions
        ]


def generate(seed: int, conversations: int = 24, sessions: int = 10) -> DialogSet:
    """`conversations` namespaces, half English and half Chinese, of `sessions` sessions each."""
    rng = random.Random(seed)
    out = DialogSet()
    for c in range(conversations):
        lang = EN if c % 2 == 0 else ZH
        conv = _Conversation(rng, lang, f"dlg{seed}-{c:02d}", sessions)
        for me, other in ((conv.a, conv.b), (conv.b, conv.a)):
            conv.persona(me)
            conv.events(me, other)
            conv.identifiers(me)
        conv.lay_out(START + rng.randrange(0, 60) * DAY)
        out.turns.extend(conv.out.turns)
        out.questions.extend(conv.out.questions)
    return out
