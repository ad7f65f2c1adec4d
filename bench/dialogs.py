"""A synthetic, multi-session, two-speaker dialog set with labelled evidence, English and Chinese.

Each conversation is one namespace: two speakers who meet for `sessions` sessions over about a
year. Besides small talk, the turns carry:
- persona facts, some of which change over time (a job; an instrument; a home city, then a move;
  a pet, then another, then a third);
- dated events ("last Saturday I ran the half marathon in Lisbon"), dated by their session, and
  mentioned again without a date;
- exact identifiers (order numbers, error codes, flight numbers), with near-miss siblings;
- events that both speakers tell in the same words, so that a question about one speaker has a
  look-alike turn of the other.

Every fact is told in one of several phrasings ("I moved from Osaka to Lisbon last month", "We
finally relocated to Lisbon, leaving Osaka behind", "After years in Osaka, I'm now settled in
Lisbon"), and events have more than one wording ("ran the half marathon", "did the 21 km road
race"), so a question's words are often not the evidence's words.

Questions have one of five types, and each names its evidence turns:
- `single_hop`: one fact, one turn ("What line of work is Maya in?");
- `multi_hop`: facts from two or three sessions ("Which cities has Maya lived in?");
- `temporal`: when an event happened ("What day was Maya's half marathon?");
- `exact_id`: a question carrying an identifier ("What was order ORD-48213 for?");
- `adversarial`: about the other speaker, where a look-alike turn of the first speaker is the
  trap: both told of the same event in the same words, and only the speaker tells which turn is
  the evidence.

Held-out templates: each type has at least four question templates (`TEMPLATES`), grouped by the
fact they ask about, and each template has at least two paraphrases in each language. The
templates of a fact are split by index parity: even → the `tune` half, odd → the `report` half.
`generate(seed, half=...)` asks every fact once in that half's templates only, in a corpus of its
own: its namespaces and identifiers are the half's, and its speakers and fact values (jobs,
cities, pets, instruments, events, items) come from the half's own share of each pool
(`for_half`: alternate entries), so no evidence sentence and no fact value of one half is in the
other; the halves share only the phrasings the facts are told in and the small talk. `bench
quality` tunes on seed 1's tune half and reports on seed 2's report half. `generate(seed)`
without a half draws from the whole pools and asks every fact in both halves over one corpus
(the halves then share every fact and evidence turn: for development only).

`generate` is deterministic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

DAY = 86_400.0
START = 1_735_689_600.0  # 2025-01-01T00:00:00Z
TYPES = ("single_hop", "multi_hop", "temporal", "exact_id", "adversarial")
HALVES = ("tune", "report")


@dataclass(frozen=True)
class Turn:
    turn_id: str
    namespace: str
    session_id: str
    speaker: str
    text: str  # the words, without the speaker
    time: float  # the event time
    index: int  # the position in its session, from 0


@dataclass(frozen=True)
class Question:
    namespace: str
    kind: str  # one of TYPES
    text: str
    evidence: tuple[str, ...]  # turn ids
    template: str = ""  # a `Template.id`
    half: str = ""  # one of HALVES


@dataclass
class DialogSet:
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass(frozen=True)
class Template:
    """One question form; `en` and `zh` are its paraphrases. Placeholders: {name}, {code},
    {past} (an event in the past tense), {base} (the bare verb phrase), {noun}."""

    id: str  # "<type>/<fact>/<index>"
    kind: str
    fact: str
    index: int
    en: tuple[str, ...]
    zh: tuple[str, ...]

    @property
    def half(self) -> str:
        return HALVES[self.index % 2]

    def forms(self, lang: str) -> tuple[str, ...]:
        return self.en if lang == "en" else self.zh


_T = tuple[tuple[str, ...], tuple[str, ...]]  # (English paraphrases, Chinese paraphrases)
_FORMS: dict[str, dict[str, tuple[_T, ...]]] = {
    "single_hop": {
        "job": (
            (
                ("What does {name} do for a living?", "What is {name}'s job?"),
                ("{name}是做什么工作的？", "{name}的工作是什么？"),
            ),
            (
                ("What line of work is {name} in?", "How does {name} earn a living?"),
                ("{name}从事哪一行？", "{name}靠什么谋生？"),
            ),
        ),
        "city_now": (
            (
                ("Which city does {name} live in now?", "Where does {name} live these days?"),
                ("{name}现在住在哪个城市？", "{name}目前住在哪里？"),
            ),
            (
                ("Which city did {name} move to?", "Where did {name} relocate?"),
                ("{name}搬去了哪个城市？", "{name}的新家在哪座城市？"),
            ),
        ),
        "instrument": (
            (
                ("Which instrument is {name} learning?", "What instrument does {name} practise?"),
                ("{name}在学什么乐器？", "{name}练的是哪种乐器？"),
            ),
            (
                ("What does {name} play, music-wise?", "Is {name} learning to play something?"),
                ("{name}平时演奏什么？", "{name}在音乐上有什么爱好？"),
            ),
        ),
    },
    "multi_hop": {
        "cities": (
            (
                (
                    "Which cities has {name} lived in?",
                    "Name all the cities {name} has called home.",
                ),
                ("{name}住过哪些城市？", "{name}在哪些城市生活过？"),
            ),
            (
                ("Where has {name} lived over the past year?", "List the places {name} has lived."),
                ("{name}这一年来都住在哪里？", "列出{name}住过的地方。"),
            ),
        ),
        "pets": (
            (
                ("Which pets has {name} adopted?", "What pets has {name} had?"),
                ("{name}领养过哪些宠物？", "{name}养过什么宠物？"),
            ),
            (
                ("What animals live with {name}?", "Which animals has {name} taken in over time?"),
                ("{name}家里有哪些动物？", "{name}先后收养过哪些小动物？"),
            ),
        ),
    },
    "temporal": {
        "event": (
            (
                ("When did {name} say they {past}?", "When was it that {name} {past}?"),
                ("{name}是什么时候{past}的？", "{name}哪天{past}？"),
            ),
            (
                ("What day was {name}'s {noun}?", "On which date was {name}'s {noun}?"),
                ("{name}的{noun}是哪一天？", "{name}说的那次{noun}是什么时候？"),
            ),
            (
                ("When did {name} {base}?", "At what point did {name} {base}?"),
                ("{name}哪一天{base}？", "{name}是哪个周末{base}的？"),
            ),
            (
                ("How long ago did {name} {base}?", "{name} mentioned a {noun}. When was that?"),
                ("{name}{past}，是多久以前的事？", "{name}提到过{noun}，那是什么时候？"),
            ),
        ),
    },
    "exact_id": {
        "order": (
            (
                ("What did {name} order with {code}?", "Which item was order {code}?"),
                ("{name}的订单{code}买的是什么？", "订单{code}是什么东西？"),
            ),
            (
                ("What is in {name}'s package {code}?", "{code}: what was {name} waiting for?"),
                ("{name}的包裹{code}里是什么？", "{code}：{name}在等什么？"),
            ),
        ),
        "error": (
            (
                ("Which app error did {name} get, {code}?", "When does {name} see error {code}?"),
                ("{name}登录时遇到的错误{code}是什么情况？", "{name}什么时候会看到错误{code}？"),
            ),
            (
                (
                    "What was {name} doing when {code} showed up?",
                    "What triggers {code} for {name}?",
                ),
                ("{code}出现的时候{name}在做什么？", "{name}遇到{code}是因为什么？"),
            ),
        ),
        "flight": (
            (
                ("Where does flight {code} that {name} booked go?", "Where does flight {code} go?"),
                ("{name}订的航班{code}飞往哪里？", "航班{code}的目的地是哪里？"),
            ),
            (
                ("Which city is {name} flying to on {code}?", "{code} takes {name} where?"),
                ("{name}坐{code}要飞去哪个城市？", "{code}会把{name}带到哪儿？"),
            ),
        ),
    },
    "adversarial": {
        "event": (
            (
                ("When did {name} {base}?", "When did {name} say they {past}?"),
                ("{name}是什么时候{past}的？", "{name}哪天{base}？"),
            ),
            (
                ("What day was {name}'s {noun}?", "Which weekend was {name}'s {noun}?"),
                ("{name}的{noun}是哪一天？", "{name}的{noun}是哪个周末？"),
            ),
            (
                ("Where did {name} {base}?", "In which city did {name} {base}?"),
                ("{name}在哪个城市{base}？", "{name}是在哪里{past}的？"),
            ),
            (
                ("Tell me about the time {name} {past}.", "What did {name} say about the {noun}?"),
                ("说说{name}{past}的那次经历。", "{name}对{noun}说了些什么？"),
            ),
        ),
    },
}
TEMPLATES: tuple[Template, ...] = tuple(
    Template(f"{kind}/{fact}/{i}", kind, fact, i, en, zh)
    for kind, facts in _FORMS.items()
    for fact, forms in facts.items()
    for i, (en, zh) in enumerate(forms)
)


def templates(kind: str, fact: str, half: str) -> tuple[Template, ...]:
    return tuple(t for t in TEMPLATES if t.kind == kind and t.fact == fact and t.half == half)


@dataclass(frozen=True)
class Event:
    past: tuple[str, ...]  # wordings in the past tense, without a subject
    base: str
    noun: str


@dataclass(frozen=True)
class Lang:
    code: str  # "en" or "zh": which paraphrases of a template
    names: tuple[str, ...]
    jobs: tuple[str, ...]
    cities: tuple[str, ...]
    pets: tuple[str, ...]
    instruments: tuple[str, ...]
    events: tuple[Event, ...]
    items: tuple[str, ...]
    small_talk: tuple[str, ...]
    job_said: tuple[str, ...]
    city_said: tuple[str, ...]
    moved_said: tuple[str, ...]
    pet_said: tuple[str, ...]
    instrument_said: tuple[str, ...]
    event_said: tuple[str, ...]
    event_mentions: tuple[str, ...]
    order_said: tuple[str, ...]
    error_said: tuple[str, ...]
    flight_said: tuple[str, ...]


EN = Lang(
    code="en",
    names=("Maya", "Jonas", "Priya", "Tom", "Lena", "Omar", "Sofia", "Ken", "Ines", "Raj"),
    jobs=(
        "nurse",
        "carpenter",
        "data analyst",
        "pilot",
        "pastry chef",
        "teacher",
        "architect",
        "electrician",
        "journalist",
        "lawyer",
        "photographer",
        "pharmacist",
        "veterinarian",
        "librarian",
    ),
    cities=(
        "Lisbon",
        "Denver",
        "Osaka",
        "Toronto",
        "Krakow",
        "Nairobi",
        "Glasgow",
        "Hobart",
        "Porto",
        "Austin",
        "Kyoto",
        "Montreal",
        "Gdansk",
        "Accra",
        "Dundee",
        "Perth",
    ),
    pets=(
        "a beagle",
        "a grey cat",
        "two budgies",
        "a tortoise",
        "a rescue greyhound",
        "a dachshund",
        "a black kitten",
        "two goldfish",
        "a hamster",
        "an old sheepdog",
    ),
    instruments=(
        "the cello",
        "the ukulele",
        "the piano",
        "the drums",
        "the violin",
        "the sax",
        "the flute",
        "the banjo",
        "the trumpet",
        "the harp",
        "the accordion",
        "the clarinet",
    ),
    events=(
        Event(
            ("ran the half marathon", "did the 21 km road race"), "run the half marathon", "race"
        ),
        Event(
            ("went to the jazz festival", "saw the big jazz festival"),
            "go to the jazz festival",
            "jazz festival",
        ),
        Event(
            ("took the pottery class", "made bowls at a ceramics workshop"),
            "take the pottery class",
            "pottery class",
        ),
        Event(
            ("visited the science museum", "spent the day at the science museum"),
            "visit the science museum",
            "museum visit",
        ),
        Event(
            ("hiked the coastal trail", "walked the cliff path along the coast"),
            "hike the coastal trail",
            "coastal hike",
        ),
        Event(
            ("played in the chess tournament", "competed at a chess open"),
            "play in the chess tournament",
            "chess tournament",
        ),
        Event(
            ("took the baking class", "baked bread all afternoon at the cooking school"),
            "take the baking class",
            "baking class",
        ),
        Event(
            ("swam across the lake", "did the open-water swim over the lake"),
            "swim across the lake",
            "lake swim",
        ),
        Event(
            ("went bouldering at the climbing gym", "climbed the indoor wall"),
            "go bouldering at the climbing gym",
            "climbing session",
        ),
        Event(
            ("sang in the choir concert", "performed on stage with my choir"),
            "sing in the choir concert",
            "choir concert",
        ),
        Event(
            ("cycled the river loop", "rode 80 km along the river on my bike"),
            "cycle the river loop",
            "bike ride",
        ),
        Event(
            ("went to the night food market", "tasted every stall at the street food market"),
            "go to the night food market",
            "food market trip",
        ),
    ),
    items=(
        "a standing desk",
        "hiking boots",
        "a coffee grinder",
        "a bike helmet",
        "a tent",
        "a rice cooker",
        "a rain jacket",
        "a desk lamp",
        "a yoga mat",
        "a backpack",
    ),
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
    job_said=(
        "I work as a {job} now, it keeps me busy.",
        "These days I'm a {job} at a small firm.",
        "Started a new position as a {job} in March.",
        "My job? I'm a {job}, six years now.",
    ),
    city_said=(
        "I live in {city}, close to the old harbour.",
        "Our flat in {city} is tiny but cosy.",
        "{city} has been home for years now.",
    ),
    moved_said=(
        "Big news: I moved from {old} to {city} last month.",
        "We finally relocated to {city}, leaving {old} behind.",
        "After years in {old}, I'm now settled in {city}.",
    ),
    pet_said=(
        "We adopted {pet}, the whole flat is chaos.",
        "Meet the newest family member: {pet}!",
        "I brought home {pet} from the shelter.",
    ),
    instrument_said=(
        "I've been learning {instrument}, my neighbours hate it.",
        "Every evening I practise {instrument} for an hour.",
        "Signed up for lessons on {instrument}, finally.",
    ),
    event_said=(
        "Last Saturday I {past} in {city}.",
        "On Sunday I {past} over in {city}, what a day.",
        "This weekend I {past} in {city}, I'm still buzzing.",
    ),
    event_mentions=(
        "I keep thinking about the day I {past}.",
        "Did I ever tell you how I {past}? Long story.",
        "Someone asked me again about the time I {past}.",
    ),
    order_said=(
        "My order {code} for {item} still has not arrived.",
        "Tracking for {code} says {item} is stuck in customs.",
        "Still no sign of {item}, order {code}.",
    ),
    error_said=(
        "The app keeps failing with error {code} when I log in.",
        "Got {code} again while signing in, so annoying.",
        "Login is broken, it just says {code}.",
    ),
    flight_said=(
        "I booked flight {code} to {city} for the trip.",
        "{code} leaves for {city} at 7am, I'm dreading it.",
        "Got seats on {code}, heading to {city}.",
    ),
)

ZH = Lang(
    code="zh",
    names=("小王", "小李", "阿美", "老陈", "小周", "丽丽", "大刘", "小赵", "晓雪", "阿强"),
    jobs=(
        "护士",
        "木匠",
        "数据分析师",
        "飞行员",
        "甜点师",
        "老师",
        "建筑师",
        "电工",
        "记者",
        "律师",
        "摄影师",
        "药剂师",
        "兽医",
        "图书管理员",
    ),
    cities=(
        "成都",
        "大连",
        "厦门",
        "西安",
        "青岛",
        "昆明",
        "苏州",
        "哈尔滨",
        "杭州",
        "武汉",
        "南京",
        "长沙",
        "桂林",
        "拉萨",
        "重庆",
        "天津",
    ),
    pets=(
        "一只小猎犬",
        "一只灰猫",
        "两只鹦鹉",
        "一只乌龟",
        "一只灵缇犬",
        "一只腊肠犬",
        "一只小黑猫",
        "两条金鱼",
        "一只仓鼠",
        "一只老牧羊犬",
    ),
    instruments=(
        "大提琴",
        "尤克里里",
        "钢琴",
        "架子鼓",
        "小提琴",
        "萨克斯",
        "长笛",
        "班卓琴",
        "小号",
        "竖琴",
        "手风琴",
        "单簧管",
    ),
    events=(
        Event(("跑了半程马拉松", "跑完了二十一公里的比赛"), "跑半程马拉松", "半程马拉松"),
        Event(("去了爵士音乐节", "听了一场大型爵士音乐节"), "去爵士音乐节", "爵士音乐节"),
        Event(("上了陶艺课", "去陶瓷工作坊做了几个碗"), "上陶艺课", "陶艺课"),
        Event(("参观了科技馆", "去科学博物馆待了一整天"), "参观科技馆", "科技馆之行"),
        Event(("走了海边步道", "沿着海岸的悬崖小路走了一圈"), "走海边步道", "海边徒步"),
        Event(("参加了象棋比赛", "去下了一场国际象棋公开赛"), "参加象棋比赛", "象棋比赛"),
        Event(("上了烘焙课", "去烹饪学校烤了一下午面包"), "上烘焙课", "烘焙课"),
        Event(("游泳横渡了湖", "参加了横渡湖泊的公开水域游泳"), "游泳横渡湖泊", "横渡湖泊"),
        Event(("去攀岩馆攀了岩", "去攀岩馆练了一下午抱石"), "去攀岩馆攀岩", "攀岩"),
        Event(("参加了合唱音乐会", "跟合唱团一起登台唱了歌"), "参加合唱音乐会", "合唱音乐会"),
        Event(("骑车绕了沿河环线", "沿着河骑了八十公里自行车"), "骑车绕沿河环线", "骑行"),
        Event(("逛了美食夜市", "去夜市把小吃尝了个遍"), "逛美食夜市", "美食夜市之行"),
    ),
    items=(
        "一张升降桌",
        "一双登山鞋",
        "一台磨豆机",
        "一个自行车头盔",
        "一顶帐篷",
        "一个电饭煲",
        "一件雨衣",
        "一盏台灯",
        "一张瑜伽垫",
        "一个双肩包",
    ),
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
    job_said=(
        "我现在是一名{job}，每天都很忙。",
        "最近在一家小公司当{job}。",
        "三月份开始做{job}了，新岗位。",
        "我的工作？{job}，干了六年了。",
    ),
    city_said=(
        "我住在{city}，离老码头很近。",
        "我们在{city}的公寓很小，但很温馨。",
        "{city}是我住了好多年的家。",
    ),
    moved_said=(
        "告诉你个大消息：我上个月从{old}搬到了{city}。",
        "我们终于离开{old}，迁到了{city}。",
        "在{old}待了这么多年，现在我在{city}安顿下来了。",
    ),
    pet_said=(
        "我们领养了{pet}，家里乱成一团。",
        "介绍一下家里的新成员：{pet}！",
        "我从救助站带回了{pet}。",
    ),
    instrument_said=(
        "我最近在学{instrument}，邻居都快疯了。",
        "我每天晚上练一小时{instrument}。",
        "终于报了{instrument}课。",
    ),
    event_said=(
        "上周六我在{city}{past}。",
        "周日我在{city}{past}，真是难忘的一天。",
        "这个周末我在{city}{past}，到现在还很兴奋。",
    ),
    event_mentions=(
        "我一直在回想那次{past}的事。",
        "我跟你讲过我{past}的经历吗？说来话长。",
        "又有人问我{past}的事了。",
    ),
    order_said=(
        "我的订单{code}买的是{item}，到现在还没到。",
        "{code}的物流显示{item}卡在海关了。",
        "{item}还是没动静，订单号{code}。",
    ),
    error_said=(
        "登录的时候应用一直报错{code}。",
        "又是{code}，一登录就这样，烦死了。",
        "登录坏了，只显示{code}。",
    ),
    flight_said=(
        "我订了去{city}的航班{code}。",
        "{code}早上七点飞{city}，想想就累。",
        "抢到了{code}的座位，要去{city}了。",
    ),
)

# The pools a half draws from its own share of: the speakers and every fact value.
POOLS = ("names", "jobs", "cities", "pets", "instruments", "events", "items")


def for_half(lang: Lang, half: str | None) -> Lang:
    """`lang` with each of its `POOLS` cut to `half`'s share: the entries at even positions for
    the tune half, at odd positions for the report half (the whole pool for `None`). So a
    conversation of one half names no speaker, job, city, pet, instrument, event or item of the
    other, and no fact turn of one half has the words of one of the other; the phrasings a fact
    is told in and the small talk are shared."""
    if half is None:
        return lang
    start = HALVES.index(half)
    return replace(lang, **{pool: getattr(lang, pool)[start::2] for pool in POOLS})


_Slot = tuple[str, str, str]  # (speaker, words, plan id)


class _Conversation:
    """Builds one namespace's sessions and questions."""

    def __init__(
        self,
        rng: random.Random,
        lang: Lang,
        ns: str,
        sessions: int,
        halves: tuple[str, ...] = HALVES,
    ) -> None:
        self.rng, self.lang, self.ns, self.halves = rng, lang, ns, halves
        self.a, self.b = rng.sample(lang.names, 2)
        self.sessions = sessions
        self.plan: list[list[_Slot]] = [[] for _ in range(sessions)]
        self.out = DialogSet()
        self.codes: set[str] = set()
        self.events_left = list(lang.events)  # each event is told of by one pair of turns

    def _code(self, prefix: str, digits: int) -> str:
        """A fresh code of `digits` digits. A conversation asked in one half only draws from
        that half's share of the range (tune: leading digits 1-4, report: 5-9), so no
        identifier is in both halves; its near-miss sibling (+1) stays in the same share."""
        lo, hi = 10 ** (digits - 1), 10**digits
        if self.halves == ("tune",):
            hi = 5 * lo - 1
        elif self.halves == ("report",):
            lo, hi = 5 * lo, hi - 1
        while True:
            code = f"{prefix}{self.rng.randrange(lo, hi)}"
            if code not in self.codes:
                self.codes.add(code)
                return code

    def say(self, session: int, speaker: str, text: str) -> _Slot:
        """Plan a turn; its id is fixed when the session is laid out."""
        slot = (speaker, text, f"{self.ns}-p{session}-{len(self.plan[session])}")
        self.plan[session].append(slot)
        return slot

    def tell(self, session: int, speaker: str, phrasings: tuple[str, ...], **kw: str) -> _Slot:
        """Plan a turn in one of the fact's phrasings."""
        return self.say(session, speaker, self.rng.choice(phrasings).format(**kw))

    def ask(self, kind: str, fact: str, slots: tuple[_Slot, ...], **kw: str) -> None:
        """Ask about `slots` once per half asked: a template of that half, one of its
        paraphrases."""
        for half in self.halves:
            t = self.rng.choice(templates(kind, fact, half))
            text = self.rng.choice(t.forms(self.lang.code)).format(**kw)
            evidence = tuple(s[2] for s in slots)
            self.out.questions.append(Question(self.ns, kind, text, evidence, t.id, half))

    def persona(self, me: str) -> None:
        lang, rng, n = self.lang, self.rng, self.sessions
        j = self.tell(rng.randrange(n), me, lang.job_said, job=rng.choice(lang.jobs))
        self.ask("single_hop", "job", (j,), name=me)
        inst = rng.choice(lang.instruments)
        i = self.tell(rng.randrange(n), me, lang.instrument_said, instrument=inst)
        self.ask("single_hop", "instrument", (i,), name=me)
        old, new = rng.sample(lang.cities, 2)
        c1 = self.tell(rng.randrange(n // 2), me, lang.city_said, city=old)
        c2 = self.tell(rng.randrange(n // 2, n), me, lang.moved_said, old=old, city=new)
        self.ask("single_hop", "city_now", (c2,), name=me)
        self.ask("multi_hop", "cities", (c1, c2), name=me)
        pets = rng.sample(lang.pets, 3)
        sessions = sorted(rng.sample(range(n), 3))
        p = tuple(
            self.tell(s, me, lang.pet_said, pet=pet) for s, pet in zip(sessions, pets, strict=True)
        )
        self.ask("multi_hop", "pets", p, name=me)

    def events(self, me: str, other: str) -> None:
        """`me` tells of an event; `other`, in another session, tells of the same one in the
        same words. Both mention it again in other sessions, without a date. The question about
        `me` is temporal (the dated turn is the evidence, the undated mentions are not); the one
        about `other` is the adversarial twin: only the speaker tells evidence from trap."""
        lang, rng, n = self.lang, self.rng, self.sessions
        event = self.events_left.pop(rng.randrange(len(self.events_left)))
        words = rng.choice(lang.event_said).format(
            past=rng.choice(event.past), city=rng.choice(lang.cities)
        )
        mine, theirs = rng.sample(range(n), 2)
        e = self.say(mine, me, words)
        t = self.say(theirs, other, words)
        for speaker in (me, other):
            for template in rng.sample(lang.event_mentions, 2):
                self.say(rng.randrange(n), speaker, template.format(past=rng.choice(event.past)))
        for kind, name, slot in (("temporal", me, e), ("adversarial", other, t)):
            past = rng.choice(event.past)
            self.ask(kind, "event", (slot,), name=name, past=past, base=event.base, noun=event.noun)

    def identifiers(self, me: str) -> None:
        lang, rng, n = self.lang, self.rng, self.sessions
        base = self._code("ORD-", 5)
        sibling = f"ORD-{int(base[4:]) + 1}"  # a near miss: one digit apart
        self.codes.add(sibling)
        item, other_item = rng.sample(lang.items, 2)
        o = self.tell(rng.randrange(n), me, lang.order_said, code=base, item=item)
        self.tell(rng.randrange(n), me, lang.order_said, code=sibling, item=other_item)
        self.ask("exact_id", "order", (o,), name=me, code=base)
        err = self._code("E", 4)
        e = self.tell(rng.randrange(n), me, lang.error_said, code=err)
        self.tell(rng.randrange(n), me, lang.error_said, code=f"E{int(err[1:]) + 1}")
        self.ask("exact_id", "error", (e,), name=me, code=err)
        fl = self._code(rng.choice(("LH", "BA", "CA", "NH")), 4)
        f = self.tell(rng.randrange(n), me, lang.flight_said, code=fl, city=rng.choice(lang.cities))
        self.ask("exact_id", "flight", (f,), name=me, code=fl)

    def lay_out(self, first_day: float) -> None:
        """Mix the planned turns with small talk (from both speakers, in equal shares), shuffle
        each session's turns, and date them a minute apart."""
        ids: dict[str, str] = {}
        day = first_day
        for s, planned in enumerate(self.plan):
            sid = f"{self.ns}-s{s:02d}"
            turns: list[_Slot] = list(planned)
            for i in range(self.rng.randrange(8, 14)):
                speaker = self.a if i % 2 == 0 else self.b
                turns.append((speaker, self.rng.choice(self.lang.small_talk), ""))
            self.rng.shuffle(turns)
            for pos, (speaker, words, plan_id) in enumerate(turns):
                tid = f"{sid}-t{pos:02d}"
                if plan_id:
                    ids[plan_id] = tid
                self.out.turns.append(
                    Turn(tid, self.ns, sid, speaker, words, day + 60.0 * pos, pos)
                )
            day += self.rng.randrange(7, 35) * DAY
        self.out.questions = [
            Question(
                q.namespace, q.kind, q.text, tuple(ids[e] for e in q.evidence), q.template, q.half
            )
            for q in self.out.questions
        ]


def generate(
    seed: int, conversations: int = 24, sessions: int = 10, half: str | None = None
) -> DialogSet:
    """`conversations` namespaces, half English and half Chinese, of `sessions` sessions each.
    Every fact is asked once per half; with `half` ("tune" or "report") only in that half's
    templates, in namespaces named for it (`dlg<seed><half's initial>-<n>`), with identifiers
    from that half's own range and speakers and fact values from that half's share of the pools
    (`for_half`): a corpus of its own, to report on other facts than one tunes on (`bench
    quality`: tune at seed 1, report at seed 2)."""
    if half is not None and half not in HALVES:
        raise ValueError(f"half: one of {HALVES}, not {half!r}")
    halves = HALVES if half is None else (half,)
    rng = random.Random(seed)
    out = DialogSet()
    for c in range(conversations):
        lang = for_half(EN if c % 2 == 0 else ZH, half)
        ns = f"dlg{seed}-{c:02d}" if half is None else f"dlg{seed}{half[0]}-{c:02d}"
        conv = _Conversation(rng, lang, ns, sessions, halves)
        for me, other in ((conv.a, conv.b), (conv.b, conv.a)):
            conv.persona(me)
            conv.events(me, other)
            conv.identifiers(me)
        conv.lay_out(START + rng.randrange(0, 60) * DAY)
        out.turns.extend(conv.out.turns)
        out.questions.extend(conv.out.questions)
    return out
