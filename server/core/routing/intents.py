"""What a query asks for, read from its vector: which store of a user's memory answers it.

A user's memory holds four stores an agent's questions are about (seed 003; the store-routing
paper's current session, profile, summaries and transcripts), and pockets map onto them by kind
and tier (`store_of`): the current session (hot episodes and observations), the profile (facts
and preferences), summaries, and the history (past episodes and observations); skills (how to do
something) are a fifth; unspecified memories have no intent of their own. Whether a question
asks for the current conversation, a standing fact, the gist of past conversations or an exact
detail said in one is a matter of its form more than of its words, and a paraphrase keeps its
form: so the router
compares the query's vector with example questions of each intent (`EXAMPLES`, English and
Chinese, or `router.intent_examples`), encoded once by the server's encoder.

An intent's similarity is the mean of the query's `TOP` best cosines with its examples. Intents
are scored relative to the best one (`probabilities`): the best gets `sigmoid(MARGIN / SCALE)`,
one `MARGIN` below it 0.5, so a question that asks two things (the gist and a detail) keeps
both; `none` (small talk) competes like the others, so a greeting needs no store. A query
unlike every example (best similarity below `FLOOR`) tells nothing: every store gets `UNSURE`,
small talk 0.

The store model (`heuristic.STORE_MODEL`) reads a sharper signal as well, the examples'
`readout`: a ridge regression (`RIDGE`) from a vector to its intent (+1 for an intent's own
examples, -1 for the others'), fitted on the examples' vectors when they are encoded, and
centred across the intents (so its scale does not depend on how many intents have examples;
fewer than two read nothing). Where a paraphrase shares its topic's words with every intent's
nearest example, so that the cosines tie, the readout still weighs the directions that tell the
intents' forms apart. `STORE_MODEL` was fitted on the built-in examples' readouts. Skills,
Explain's intent probabilities and the learned model's intent column still read the cosines
(`probabilities`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from server.core.memory.model import Kind, Tier

INTENTS = ("session", "profile", "summary", "history", "skill", "none")
STORES = INTENTS[:5]  # the intents a pocket can serve
TOP = 3
MARGIN = 0.04
SCALE = 0.02
FLOOR = 0.25
UNSURE = 0.5
RIDGE = 0.3  # the readout's L2 penalty (chosen on bench router's tune half, by whole template)

EXAMPLES: dict[str, tuple[str, ...]] = {
    "session": (
        "What did I just say?",
        "What did I mention a moment ago?",
        "Can you repeat what I told you a few minutes ago?",
        "In this conversation, what did we decide?",
        "Remind me what we settled on just now.",
        "What was the name I gave you earlier in this chat?",
        "What did I say at the start of our conversation today?",
        "Which option did I pick a minute ago?",
        "What did you just suggest?",
        "What was the last thing I asked you?",
        "You told me something a moment ago, what was it?",
        "So far in this chat, what have we agreed on?",
        "我刚才说了什么？",
        "刚刚我提到的那个是什么？",
        "我们这次聊天里定下来的是哪个？",
        "你刚才建议的是什么？",
        "重复一下我几分钟前告诉你的话",
        "咱们现在说到哪了？",
        "我刚说的那个名字是什么来着？",
        "今天这次对话开头我说了什么？",
        "刚才我们选的是哪一个？",
        "我上一句问的是什么？",
    ),
    "profile": (
        "What is my name?",
        "What's my favorite food?",
        "Where do I live?",
        "What do I do for a living?",
        "How old am I?",
        "What kind of music do I like?",
        "Do I prefer tea or coffee?",
        "What is the user's preferred seat?",
        "Where does the user work?",
        "What are the user's hobbies?",
        "What is my sister's name?",
        "Which language does the user prefer?",
        "我叫什么名字？",
        "我最喜欢吃什么？",
        "我住在哪里？",
        "我是做什么工作的？",
        "我喜欢什么样的音乐？",
        "用户的职业是什么？",
        "用户喜欢喝茶还是咖啡？",
        "用户住在哪个城市？",
        "我妹妹叫什么？",
        "我有什么爱好？",
    ),
    "summary": (
        "What have we talked about over the past few months?",
        "Give me an overview of our past conversations about this.",
        "What topics did we discuss in previous sessions?",
        "Summarize what we discussed about my project before.",
        "In general, what did we cover about that in earlier chats?",
        "How has this topic come up across our conversations?",
        "What's the gist of our previous discussions on it?",
        "Recap our earlier conversations for me.",
        "What were the main themes of our past chats?",
        "Overall, how did things go with that, from what we've discussed?",
        "我们之前都聊过些什么？",
        "总结一下我们过去关于这个的对话",
        "以前的聊天里我们主要讨论了哪些话题？",
        "大概回顾一下我们之前聊的内容",
        "这几个月我们聊这件事都说了什么？",
        "我们过去的谈话有哪些主要内容？",
        "整体来说，之前我们讨论这事的结论是什么？",
        "给我概括一下以前的对话",
    ),
    "history": (
        "What exactly did I say about it last month?",
        "What was the exact time I mentioned back then?",
        "A while ago I told you the name of a place, what was it?",
        "What number did I give you in our conversation a few weeks ago?",
        "Quote what I said about that in an earlier session.",
        "On that day, what did I tell you?",
        "What was the specific detail I mentioned in a past conversation?",
        "Which one did I end up choosing that time?",
        "What did I say word for word about it before?",
        "What price did I mention in one of our old chats?",
        "上个月我具体说了什么？",
        "那阵子我提到的那个地方叫什么？",
        "之前有一次我告诉你的那个号码是多少？",
        "我们以前聊的时候我选的是哪一个？",
        "那天我原话是怎么说的？",
        "几个星期前我说的那个时间是几点？",
        "以前对话里我提过的价格是多少？",
        "当时我跟你说的那个人叫什么名字？",
    ),
    "skill": (
        "How do I do this?",
        "What are the steps to set it up?",
        "Walk me through the procedure again.",
        "What's the right way to fix that?",
        "Show me how to configure it.",
        "Which command do I run for that?",
        "怎么操作？",
        "具体步骤是什么？",
        "这个要怎么设置？",
        "教我一下怎么修",
    ),
    "none": (
        "Thanks, that's all for now.",
        "Hello!",
        "Good morning.",
        "Okay, sounds good.",
        "Nice weather today.",
        "Tell me a joke.",
        "Goodbye!",
        "Thank you so much.",
        "谢谢，就这样吧",
        "你好",
        "早上好",
        "好的，没问题",
        "今天天气不错",
        "讲个笑话吧",
        "再见",
        "太感谢了",
    ),
}

Encode = Callable[[list[str]], npt.NDArray[np.float32]]
# All examples' vectors in one matrix, each intent's rows in it, and the readout's weights
# ((dim + 1) × intents; None for fewer than two intents).
Encoded = tuple[npt.NDArray[np.float32], list[tuple[str, slice]], npt.NDArray[np.float64] | None]


def store_of(kind: Kind, tier: Tier) -> str:
    """The store a pocket of `kind` and `tier` serves ("" for none)."""
    if kind in (Kind.FACT, Kind.PREFERENCE):
        return "profile"
    if kind == Kind.SUMMARY:
        return "summary"
    if kind in (Kind.EPISODE, Kind.OBSERVATION):
        return "session" if tier == Tier.HOT else "history"
    return "skill" if kind == Kind.SKILL else ""


class IntentModel:
    """The example questions of each intent, encoded on first use with their readout fitted
    (thread-safe)."""

    def __init__(
        self, encode: Encode | None, examples: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        """`encode`: unit vectors of texts (None: no intent is ever read); `examples`: intent →
        example questions, replacing `EXAMPLES` (an intent left out has none)."""
        given = examples if examples else EXAMPLES
        unknown = sorted(set(given) - set(INTENTS))
        if unknown:
            raise ValueError(f"unknown intents {unknown}; expected some of {INTENTS}")
        self._encode = encode
        self._examples = {k: tuple(v) for k, v in given.items() if v}
        self._lock = threading.Lock()
        self._vectors: Encoded | None = None  # published in one step

    @property
    def enabled(self) -> bool:
        return self._encode is not None and bool(self._examples)

    def warm(self) -> None:
        """Encode the examples now (the first decision would otherwise)."""
        self._matrices()

    def _matrices(self) -> Encoded | None:
        if self._vectors is None:
            with self._lock:
                if self._vectors is None and self._encode is not None:
                    texts = [t for v in self._examples.values() for t in v]
                    spans, at = [], 0
                    for k, v in self._examples.items():
                        spans.append((k, slice(at, at + len(v))))
                        at += len(v)
                    mat = np.asarray(self._encode(texts), np.float32)
                    self._vectors = (mat, spans, _fit_readout(mat, spans))
        return self._vectors

    def similarities(self, vector: npt.NDArray[np.float32] | None) -> dict[str, float]:
        """Each intent's similarity to `vector` ({} without a vector or an encoder)."""
        got = self._matrices() if vector is not None and self.enabled else None
        if got is None or vector is None:
            return {}
        mat, spans, _ = got
        if mat.shape[1] != len(vector):
            return {}  # another space than the query's (a client's own vectors)
        sims = (mat @ vector).tolist()
        out = {}
        for intent, span in spans:
            best = sorted(sims[span], reverse=True)[:TOP]
            out[intent] = sum(best) / len(best)
        return out

    def readout(self, vector: npt.NDArray[np.float32] | None) -> dict[str, float]:
        """Each intent's readout of `vector` (see the module docstring; {} as `similarities`)."""
        got = self._matrices() if vector is not None and self.enabled else None
        if got is None or vector is None:
            return {}
        mat, spans, weights = got
        if weights is None or mat.shape[1] != len(vector):
            return {}
        scores = vector.astype(np.float64) @ weights[:-1] + weights[-1]
        return {intent: float(x) for (intent, _), x in zip(spans, scores, strict=True)}


def _fit_readout(
    mat: npt.NDArray[np.float32], spans: Sequence[tuple[str, slice]]
) -> npt.NDArray[np.float64] | None:
    """The ridge regression of the module docstring: weights of (vector, 1) per intent, centred
    across the intents so that every readout is (None for fewer than two intents, whose
    readout would say nothing)."""
    if len(spans) < 2:
        return None
    x = np.hstack([mat.astype(np.float64), np.ones((len(mat), 1))])
    y = -np.ones((len(mat), len(spans)))
    for j, (_, span) in enumerate(spans):
        y[span, j] = 1.0
    penalty = RIDGE * np.eye(x.shape[1])
    penalty[-1, -1] = 0.0  # the bias is not penalised
    w = np.asarray(np.linalg.solve(x.T @ x + penalty, x.T @ y), np.float64)
    return np.asarray(w - w.mean(axis=1, keepdims=True), np.float64)


def probabilities(similarity: Mapping[str, float]) -> dict[str, float]:
    """Each intent's probability of being asked for, from the similarities (see the module
    docstring); {} for no similarities. Unlike every example, every store gets `UNSURE` and small
    talk 0 (so an unsure router still widens its plan)."""
    if not similarity:
        return {}
    best = max(similarity.values())
    if best < FLOOR:  # unlike every example: unsure of every store, and not small talk either
        return {k: 0.0 if k == "none" else UNSURE for k in similarity}
    return {k: _sigmoid((s - best + MARGIN) / SCALE) for k, s in similarity.items()}


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))
