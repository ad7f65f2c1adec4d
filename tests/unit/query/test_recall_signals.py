"""The signals issue 31 added to ranking, each through the engine's real scoring: the script a
memory is written in against the question's (a Chinese question finds its English answer
first), the chat role a question is about (the asker's own turns for "what did I buy"), and a
keyword match the vector does not back."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np
import pytest

from server.core.engine import MemoryEngine
from server.core.memory.model import Kind, RecallQuery
from server.core.memory.roles import Role, RoleCues, role_of
from server.core.memory.script import Script, across, script_of
from server.core.settings import MemorySettings
from tests.conftest import unit_vec
from tests.unit.test_engine import NS, mem


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("My favourite football team is Arsenal.", Script.LATIN),
        ("他支持哪支球队？", Script.HAN),
        ("我用 Python 写后端服务，偶尔也用 Go 写一些工具", Script.HAN),
        ("Error E1234: 磁盘配额已满", Script.HAN),
        ("deploy the new service today 今天部署新的服务", Script.MIXED),
        ("12:30 #42", Script.NONE),
        ("", Script.NONE),
    ],
)
def test_a_text_is_mostly_in_one_script_or_mixed(text: str, script: Script) -> None:
    assert script_of(text) == script


def test_only_a_latin_and_a_han_text_are_across() -> None:
    assert across(Script.HAN, Script.LATIN) and across(Script.LATIN, Script.HAN)
    assert not across(Script.HAN, Script.HAN)
    assert not across(Script.HAN, Script.MIXED) and not across(Script.NONE, Script.LATIN)


@pytest.mark.parametrize(
    ("speaker", "role"),
    [
        ("user", Role.ASKER),
        (" User ", Role.ASKER),
        ("用户", Role.ASKER),
        ("assistant", Role.AGENT),
        ("AI", Role.AGENT),
        ("Caroline", Role.NONE),
        ("", Role.NONE),
    ],
)
def test_a_speaker_names_a_chat_role_or_none(speaker: str, role: Role) -> None:
    assert role_of(speaker) == role


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("What did I buy for my sister's birthday?", Role.ASKER),
        ("我上周买了什么？", Role.ASKER),
        ("Can you remind me of the deli you recommended near the Vatican?", Role.AGENT),
        ("which traditional game did you say was performed by dancers?", Role.AGENT),
        ("你推荐的那家餐厅叫什么？", Role.AGENT),
        ("What did Caroline research?", Role.NONE),
    ],
)
def test_a_question_is_about_the_askers_turns_the_agents_or_neither(
    question: str, role: Role
) -> None:
    s = MemorySettings().retrieval
    assert RoleCues(s.agent_cues, s.asker_cues).of(question) == role


def _off(**kw: float) -> MemorySettings:
    s = MemorySettings()
    return msgspec.structs.replace(s, hybrid_search=msgspec.structs.replace(s.hybrid_search, **kw))


def _ranked(eng: MemoryEngine, q: RecallQuery) -> list[str]:
    return [h.record.text for h in eng.recall(msgspec.structs.replace(q)).hits]


def test_the_askers_own_turn_outranks_the_agents_echo_of_it(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """The agent's summary repeats the user's words and lies as near the question; a question
    in the asker's voice is about what the asker said: the user's turn is raised by exactly the
    share `role_boost`, the agent's is not."""
    rng = np.random.default_rng(41)
    q = unit_vec(rng)
    turns = [
        ("assistant", "Sister's birthday gift: a yellow dress and earrings, noted."),
        ("user", "For my sister's birthday gift I got a yellow dress and earrings."),
    ]
    ask = RecallQuery(namespace=NS, text="what birthday gift did I get my sister", vector=q)

    def fused(eng: MemoryEngine) -> dict[str, float]:
        out = {h.record.speaker: h.score.fused for h in eng.recall(ask).hits}
        eng.close()
        return out

    eng = engine_factory()
    eng.remember([mem(t, Kind.EPISODE, q, speaker=s) for s, t in turns])
    eng.indexer.catch_up()
    on = fused(eng)
    off = fused(engine_factory(_off(role_boost=0.0)))  # the same data directory, served again
    boost = MemorySettings().hybrid_search.role_boost
    assert on["user"] == pytest.approx(off["user"] * (1 + boost), abs=1e-5)
    assert on["assistant"] == pytest.approx(off["assistant"], abs=1e-5)
    assert on["user"] > on["assistant"]


def test_a_chinese_question_finds_its_english_answer_above_a_one_word_match(
    engine_factory: Callable[..., MemoryEngine],
) -> None:
    """The English answer is the nearer vector but shares no keyword with the Chinese question;
    a Chinese memory about something else shares one word ("球队") and lies far. Without the
    cross-script share and the keyword gate the shared word wins; with them the answer does."""
    rng = np.random.default_rng(42)
    q = unit_vec(rng)
    noise = unit_vec(rng)
    near = q * 0.45 + noise * 0.893  # cosine about 0.45 with the question
    far = q * 0.30 + unit_vec(rng) * 0.95
    memories = [
        mem("My favourite football team is Arsenal, I never miss a match.", Kind.FACT, near),
        mem("我高中的时候是校篮球队的队长。", Kind.FACT, far),
    ]
    ask = RecallQuery(namespace=NS, text="他支持哪支球队？", vector=q)

    eng = engine_factory()
    eng.remember(memories)
    eng.indexer.catch_up()
    assert _ranked(eng, ask)[0].startswith("My favourite")
    eng.close()
    off = engine_factory(_off(across_scripts_share=0.0, keyword_gate=0.0))
    assert _ranked(off, ask)[0].startswith("我高中")
