"""Who a turn is from, as a chat's roles: the person asking (the user) or the agent answering.

A question in the asker's own voice ("What did I buy for my sister?", "我上次买了什么") is about
what the asker said; one about what the agent said ("the name you suggested", "你推荐的") is
about the agent's turns. Ranking raises the turns of the role a question is about
(`hybrid_search.role_boost`). A turn's role comes from its `speaker`, matched whole and
case-blind against the role names chat APIs use; any other speaker (a person's name) has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

from server.core.memory.timecues import cue_pattern


class Role(IntEnum):
    NONE = 0
    ASKER = 1
    AGENT = 2


ASKER_NAMES = frozenset({"user", "human", "me", "用户", "我"})
AGENT_NAMES = frozenset({"assistant", "ai", "agent", "bot", "model", "助手", "助理"})


def role_of(speaker: str) -> Role:
    """The role a turn's `speaker` names (`Role.NONE` for a name or nothing)."""
    name = speaker.strip().lower()
    if name in ASKER_NAMES:
        return Role.ASKER
    if name in AGENT_NAMES:
        return Role.AGENT
    return Role.NONE


class RoleCues:
    """Whose turns a question is about: the agent's when it asks what the agent said (an
    `agent` cue: "you suggested", "你推荐"), else the asker's when it speaks of itself (an
    `asker` cue: "I", "my", "我"), else nobody's in particular."""

    def __init__(self, agent: Sequence[str], asker: Sequence[str]) -> None:
        self._agent = cue_pattern(agent)
        self._asker = cue_pattern(asker)

    def of(self, question: str) -> Role:
        low = question.lower()
        if self._agent.search(low):
            return Role.AGENT
        if self._asker.search(low):
            return Role.ASKER
        return Role.NONE
