"""The extractive summariser (server/core/memory/summarise.py) on the built-in encoder: realistic
English and Chinese sessions, small talk around a few facts, keep the facts; a fact said twice is
kept once; every candidate points at its turn; a topic gives one summary record. The sentence
splitter, the filler rule and the MMR pick are checked on their own, the pick by its laws."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from server.adapters.onnx_encoder import OnnxTextEncoder
from server.core.memory.model import Vector, units
from server.core.memory.summarise import (
    Candidate,
    ExtractiveSummariser,
    Passage,
    importance_hint,
    is_filler,
    join_sentences,
    pick,
    relevance,
    split_sentences,
)

T0 = 1_800_000_000.0

# A trip being planned: four facts (turns 4, 6, 10, 12), the allergy said again in other words
# (turn 14), small talk and acknowledgements around them.
ENGLISH = (
    ("user", "Hi there!"),
    ("assistant", "Hello! How can I help you today?"),
    ("user", "How are you doing?"),
    ("assistant", "I'm doing well, thanks for asking."),
    ("user", "My flight to Tokyo is on March 3 at 9:40, JAL 44 from SFO."),
    ("assistant", "Great, a trip to Tokyo!"),
    ("user", "I'm allergic to peanuts, so the hotel breakfast must be peanut-free."),
    ("assistant", "Got it, I'll keep that in mind."),
    ("user", "lol the weather has been so weird lately."),
    ("assistant", "Haha, it really has."),
    ("user", "My budget for the hotel is 180 dollars a night."),
    ("assistant", "Okay, noted."),
    ("user", "My wife Anna is coming with me, and she is vegetarian."),
    ("assistant", "Sounds good! Anything else?"),
    ("user", "Just a reminder, I have a peanut allergy."),
    ("user", "No, that's all. Thanks!"),
    ("assistant", "You're welcome, have a great day!"),
)
ENGLISH_FACTS = {"flight": {4}, "allergy": {6, 14}, "budget": {10}, "wife": {12}}

# A business trip: four facts (turns 4, 6, 9, 11), the allergy again (turn 13).
CHINESE = (
    ("user", "你好！"),
    ("assistant", "你好，有什么可以帮你的吗？"),
    ("user", "今天天气真不错啊。"),
    ("assistant", "是的，哈哈。"),
    ("user", "我下周三要去上海出差，住在静安区的希尔顿酒店。"),
    ("assistant", "好的，需要我帮你安排什么吗？"),
    ("user", "我对海鲜过敏，订餐的时候要注意。"),
    ("assistant", "明白了。"),
    ("user", "嗯嗯"),
    ("user", "另外我的工号是A3047，报销要用。"),
    ("assistant", "收到。"),
    ("user", "会议定在下午两点，在公司的三楼会议室。"),
    ("assistant", "好的，还有别的吗？"),
    ("user", "再提醒一下，我对海鲜过敏。"),
    ("user", "没有了，谢谢！"),
    ("assistant", "不客气，再见！"),
)
CHINESE_FACTS = {"trip": {4}, "allergy": {6, 13}, "employee id": {9}, "meeting": {11}}

# One topic's warm memories (one speaker): the first and the last say the same thing.
TOPIC = (
    "Project Atlas moves the billing service to Postgres 16.",
    "The Atlas migration is owned by Priya, and the cutover is planned for May 12.",
    "Atlas needs a read replica in eu-west-1 before the cutover.",
    "The Atlas migration was delayed because the old MySQL schema has 40 unused tables.",
    "For Atlas, the team agreed to freeze billing schema changes during April.",
    "Project Atlas moves billing from MySQL to Postgres 16.",
)


def session(turns: Sequence[tuple[str, str]]) -> list[Passage]:
    """A conversation's turns as passages, a minute apart, keyed by position."""
    return [Passage(i, text, who, T0 + 60.0 * i) for i, (who, text) in enumerate(turns)]


@pytest.fixture(scope="module")
def summariser(encoder: OnnxTextEncoder) -> ExtractiveSummariser:
    return ExtractiveSummariser(encoder.encode)


def covered(got: list[Candidate], facts: dict[str, set[int]]) -> dict[str, int]:
    """How many candidates state each fact (by the turn they came from)."""
    keys = [c.derived_from[0] for c in got]
    return {name: sum(k in turns for k in keys) for name, turns in facts.items()}


@pytest.mark.parametrize(
    ("turns", "facts"), [(ENGLISH, ENGLISH_FACTS), (CHINESE, CHINESE_FACTS)], ids=["en", "zh"]
)
def test_a_session_keeps_its_facts_over_the_small_talk(
    summariser: ExtractiveSummariser,
    turns: Sequence[tuple[str, str]],
    facts: dict[str, set[int]],
) -> None:
    got = summariser.summarise(session(turns), len(facts), "session")
    assert covered(got, facts) == dict.fromkeys(facts, 1), [c.text for c in got]
    # With room for more, still no greeting, thanks or weather talk.
    more = summariser.summarise(session(turns), len(facts) + 2, "session")
    assert {c.derived_from for c in got} <= {c.derived_from for c in more}
    small_talk = {0, 1, 2, 3, len(turns) - 2, len(turns) - 1}
    assert not small_talk & {c.derived_from[0] for c in more}, [c.text for c in more]


@pytest.mark.parametrize(
    ("turns", "facts"), [(ENGLISH, ENGLISH_FACTS), (CHINESE, CHINESE_FACTS)], ids=["en", "zh"]
)
def test_a_fact_said_twice_is_kept_once(
    encoder: OnnxTextEncoder, turns: Sequence[tuple[str, str]], facts: dict[str, set[int]]
) -> None:
    # Centrality alone (no MMR, no duplicate cut) keeps both wordings, and loses another fact.
    plain = ExtractiveSummariser(encoder.encode, diversity=0.0, duplicate_cosine=1.01)
    assert covered(plain.summarise(session(turns), len(facts), "session"), facts)["allergy"] == 2
    mmr = ExtractiveSummariser(encoder.encode)
    assert covered(mmr.summarise(session(turns), len(facts), "session"), facts)["allergy"] == 1


def test_each_candidate_is_a_sentence_of_its_turn_after_its_speaker(
    summariser: ExtractiveSummariser,
) -> None:
    passages = session(ENGLISH)
    got = summariser.summarise(passages, 6, "session")
    assert got
    for c in got:
        (key,) = c.derived_from
        p = passages[key]
        assert c.text.startswith(f"{p.speaker}: ")
        assert c.text.removeprefix(f"{p.speaker}: ") in split_sentences(p.text)
    assert [c.derived_from for c in got] == sorted(c.derived_from for c in got)  # time order
    flight = next(c for c in got if c.derived_from == (4,))
    assert flight.importance_hint == 4  # a date and a time
    wife = next(c for c in got if c.derived_from == (12,))
    assert wife.importance_hint == 3


def test_one_speaker_is_not_named(summariser: ExtractiveSummariser) -> None:
    passages = [Passage(i, t, "user", T0 + i) for i, (_, t) in enumerate(ENGLISH)]
    got = summariser.summarise(passages, 4, "session")
    assert got and not any(c.text.startswith("user:") for c in got)


def test_a_topic_gives_one_summary_record(summariser: ExtractiveSummariser) -> None:
    passages = [Passage(100 + i, t, "", T0 + 86_400.0 * i) for i, t in enumerate(TOPIC)]
    got = summariser.summarise(list(reversed(passages)), 3, "topic")
    assert len(got) == 1
    (summary,) = got
    assert summary.derived_from == tuple(range(100, 106))  # every memory, in time order
    sentences = split_sentences(summary.text)
    assert len(sentences) == 3 and set(sentences) <= set(TOPIC)
    assert [TOPIC.index(s) for s in sentences] == sorted(TOPIC.index(s) for s in sentences)
    assert not {TOPIC[0], TOPIC[5]} <= set(sentences)  # the same fact twice
    assert summary.importance_hint == 4


def test_the_same_passages_give_the_same_candidates(summariser: ExtractiveSummariser) -> None:
    passages = session(CHINESE)
    first = summariser.summarise(passages, 4, "session")
    shuffled = passages[:]
    random.Random(7).shuffle(shuffled)
    assert summariser.summarise(shuffled, 4, "session") == first
    assert summariser.summarise(passages, 4, "topic") == summariser.summarise(shuffled, 4, "topic")


def same_vector(texts: Sequence[str]) -> Vector:
    """Every text the same unit vector: nothing but time and key can break the tie."""
    return np.tile(np.eye(1, 8, dtype=np.float32), (len(texts), 1))


def test_ties_go_to_the_earliest_then_the_lowest_key() -> None:
    s = ExtractiveSummariser(same_vector)
    passages = [
        Passage(9, "The invoice was sent on Friday.", "user", T0 + 5),
        Passage(7, "The contract was signed on Monday.", "user", T0),
        Passage(3, "The payment arrived on Tuesday.", "user", T0),
    ]
    got = s.summarise(passages, 3, "session")
    assert got == [Candidate("The payment arrived on Tuesday.", (3,), 4)]  # the rest: duplicates


def test_nothing_to_summarise_gives_nothing(summariser: ExtractiveSummariser) -> None:
    fillers = ["ok", "thanks!", "好的", "嗯", "Hi there!", "See you tomorrow!", "好的，谢谢你"]
    assert summariser.summarise([], 4, "session") == []
    assert summariser.summarise([], 4, "topic") == []
    assert summariser.summarise(session([("user", t) for t in fillers]), 4, "session") == []
    assert summariser.summarise(session([("user", t) for t in fillers]), 4, "topic") == []
    assert summariser.summarise(session(ENGLISH), 0, "session") == []


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "The price is $3.50 today. Dr. Chen said so! Really?? Yes.",
            ["The price is $3.50 today.", "Dr. Chen said so!", "Really??", "Yes."],
        ),
        (
            "We met in the U.S. last year. See e.g. page 4.",
            ["We met in the U.S. last year.", "See e.g. page 4."],
        ),
        ("我叫李雷。我对花生过敏！你呢？好的", ["我叫李雷。", "我对花生过敏！", "你呢？", "好的"]),
        ("版本3.5下周发布。请看example.com的说明", ["版本3.5下周发布。", "请看example.com的说明"]),
        (
            "Open https://x.io/a?b=1 now. It is No. 5 on the list.",
            ["Open https://x.io/a?b=1 now.", "It is No. 5 on the list."],
        ),
        ("I said no. Then I left.", ["I said no.", "Then I left."]),
        ('"Is it?" she asked. Fine.', ['"Is it?" she asked.', "Fine."]),
        ("她说：“好的。”然后走了。", ["她说：“好的。”", "然后走了。"]),
        ("line one\n\nline two", ["line one", "line two"]),
        ("好的!明天见", ["好的!", "明天见"]),
    ],
)
def test_sentences_in_english_and_chinese(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


_TEXT = st.text(alphabet='ab Z3.5!?。！？…\n"”）我是e.gDr', max_size=80)


@given(_TEXT)
def test_splitting_keeps_every_character(text: str) -> None:
    pieces = split_sentences(text)
    assert all(p and p == p.strip() for p in pieces)
    assert re.sub(r"\s", "", "".join(pieces)) == re.sub(r"\s", "", text)


@pytest.mark.parametrize(
    ("text", "filler"),
    [
        ("ok", True),
        ("thanks!", True),
        ("好的", True),
        ("嗯", True),
        ("See you tomorrow!", True),
        ("How are you doing?", True),
        ("好的，谢谢你", True),
        ("I'm allergic to peanuts.", False),
        ("我对花生过敏。", False),
        ("OK, my order number is 5521.", False),
        ("你好，今天我去了公园散步", False),
    ],
)
def test_fillers(text: str, filler: bool) -> None:
    assert is_filler(text) is filler


def test_joined_sentences() -> None:
    assert join_sentences(["我叫李雷。", "我住在北京。", "My id is 5.", "好的。"]) == (
        "我叫李雷。我住在北京。 My id is 5. 好的。"
    )
    assert join_sentences([]) == ""


def test_importance_hints() -> None:
    assert importance_hint("The cutover is planned for May 12.") == 4
    assert importance_hint("我下周三要去上海。") == 4
    assert importance_hint("She is vegetarian.") == 3


_ROWS = st.integers(1, 12).flatmap(
    lambda n: hnp.arrays(np.float32, (n, 4), elements=st.floats(-1, 1, width=32))
)


@given(_ROWS, st.integers(1, 6), st.floats(0.0, 1.0), st.floats(0.3, 1.01))
def test_picks_are_few_apart_and_in_order(
    rows: Vector, k: int, diversity: float, duplicate: float
) -> None:
    vectors = units(rows)
    rel = relevance(vectors, units(np.ones((1, 4), np.float32)), np.zeros(len(rows), bool))
    got = pick(vectors, rel, k, diversity, duplicate)
    assert got == sorted(set(got)) and 1 <= len(got) <= k
    assert int(np.argmax((1.0 - diversity) * rel)) in got  # the first pick: the best (first) one
    for i in got:
        for j in got:
            assert i == j or float(vectors[i] @ vectors[j]) < duplicate


@given(_ROWS, st.integers(1, 6))
def test_without_diversity_the_picks_are_the_most_relevant(rows: Vector, k: int) -> None:
    vectors = units(rows)
    rel = relevance(vectors, units(np.ones((1, 4), np.float32)), np.zeros(len(rows), bool))
    best = sorted(range(len(rows)), key=lambda i: (-rel[i], i))[:k]
    assert pick(vectors, rel, k, 0.0, 1.01) == sorted(best)


def test_relevance_is_nil_for_small_talk_and_raised_by_a_detail() -> None:
    vectors = units(np.array([[1, 0, 0], [0.6, 0.8, 0], [0.6, 0.8, 0]], np.float32))
    small_talk = units(np.array([[1, 0, 0]], np.float32))
    rel = relevance(vectors, small_talk, np.array([False, False, True]))
    assert rel[0] == 0.0
    assert rel[2] == pytest.approx(rel[1] * 1.2)
    assert 0.0 < rel[1] <= 1.0
