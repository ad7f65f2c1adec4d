"""The trivial row of `bench said`, built from pocketd's own rules: the preference rule the agent
loop used before issue 32 (`server/core/agent/keyevents.py` at 4eb871f, unchanged), which calls an
input a preference when its wording matches and anything else other. Kept here as a baseline
only: no server code reads it."""

from __future__ import annotations

import re

_CHANNEL = r"(?:contact|reach|call|email|e-mail|text|message|ring|ping|notify|write to)"
_PREFERENCE = re.compile(
    r"(?<!way )(?<!how )(?<!what )"
    r"\b(?:i (?:prefer|only use|always use|never use)"
    r"|i(?:'d| would) (?:rather|prefer)"
    r"|please (?:only )?(?:use|always|never)"
    r"|" + _CHANNEL + r" me (?:only )?(?:by|via|on|over|at|through)\b"
    r"(?!\s+(?:my|the|how|whatever|usual|your)\b)"
    r"|best way to (?:contact|reach) me"
    r"|(?:from (?:now|today) on|starting (?:now|today)|going forward|in future|in the future),?"
    r" (?:\S+ )?(?:please|only|always|never|don't|use|send|contact|reach|call|email|text)\b"
    r"|(?:update|change|set|switch) my (?:contact )?preference"
    r"|my preferred (?:channel|way|method|language|contact) (?:is|would be)"
    r"|my preference|don't (?:call|email|send|text))\b"
    r"|我(?:更喜欢|只用|习惯用|习惯通过)|我喜欢(?:用|通过)"
    r"|(?:联系|通知|找)我(?:请|就|都)?(?:用|通过|打)|请(?:只用|不要|用.{0,12}联系我)"
    r"|(?:以后|今后)(?:请|都|只)|偏好(?:是|为|用|通过)",
    re.I,
)


def rule_says_preference(text: str) -> bool:
    return _PREFERENCE.search(text) is not None
