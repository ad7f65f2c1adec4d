"""Memory commit by key events (seed 001 §2.3, §5.1): a round's observation is committed
through the write gate only when it is worth remembering, never every round.

A round is a key event when one of these holds (each with its weight):
- `preference`: it states a standing preference ("I prefer …", "always …", "from now on …",
  "reach me by …", "我更喜欢", "以后请") — 0.8; stored as the user's profile (kind preference);
- `request`: it states a need of this task, not a standing one ("I need this fixed before
  Friday", "I want a refund for the second charge", "我需要") — 0.6: below the threshold, so
  it is not remembered on its own (the session's rounds hold it), and never as a preference;
- `medium`: it brings a new medium (an image, a file, audio) — 0.9;
- `stage`: it completes a stage (a ticket created, a plan confirmed, an order placed) — 0.75;
- `fixed`: it succeeds right after a round that failed (an error that was then fixed) — 0.9.
The round is committed when its strongest event reaches `commit_threshold` (0.7, seed 001
§4.1). Each committed memory carries a short extractive summary beside the full text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WEIGHTS = {"preference": 0.8, "request": 0.6, "medium": 0.9, "stage": 0.75, "fixed": 0.9}
# A statement of a standing preference ("I prefer email", "reach me by SMS only", "from now on
# ..."), not a reference to one ("the way I prefer", "my preferred channel", "reach me through
# my usual channel"), nor a need of the task at hand ("I need it fixed by Friday").
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
# A need of the task: only when no standing preference is stated.
_REQUEST = re.compile(
    r"\b(?:i (?:want|need|must have)|i(?:'d| would) like|we need)\b|我(?:想要|需要|希望|要求)",
    re.I,
)
_STAGE = re.compile(
    r"\b(?:ticket (?:created|opened|#?\d+ created)|order (?:placed|confirmed)|(?:plan|change|"
    r"booking|refund) (?:confirmed|approved|completed)|completed|resolved|done)\b"
    r"|已创建|已确认|已完成|已解决|已提交",
    re.I,
)
_ERROR = re.compile(
    r"\b(?:error|failed|failure|exception|timeout|denied|not found)\b|错误|失败|异常|超时", re.I
)


@dataclass(frozen=True)
class Event:
    kind: str
    weight: float


def events(observation: str, new_medium: bool, previous_failed: bool) -> list[Event]:
    out = []
    if _PREFERENCE.search(observation):
        out.append(Event("preference", WEIGHTS["preference"]))
    elif _REQUEST.search(observation):
        out.append(Event("request", WEIGHTS["request"]))
    if new_medium:
        out.append(Event("medium", WEIGHTS["medium"]))
    if _STAGE.search(observation):
        out.append(Event("stage", WEIGHTS["stage"]))
    if previous_failed and not failed(observation):
        out.append(Event("fixed", WEIGHTS["fixed"]))
    return out


def failed(observation: str) -> bool:
    return _ERROR.search(observation) is not None


def should_commit(found: list[Event], threshold: float) -> bool:
    return max((e.weight for e in found), default=0.0) >= threshold
