"""Memory commit by key events (seed 001 §2.3, §5.1): a round's observation (what a tool
returned) is committed through the write gate only when it is worth remembering, never every
round. (What the user says is kept every round, and read by `said`: no word list here decides
what a user's words are.)

A round is a key event when one of these holds (each with its weight):
- `medium`: it brings a new medium (an image, a file, audio) — 0.9;
- `stage`: it completes a stage (a ticket created, a plan confirmed, an order placed) — 0.75;
- `fixed`: it succeeds right after a round that failed (an error that was then fixed) — 0.9.
The round is committed when its strongest event reaches `commit_threshold` (0.7, seed 001
§4.1). Each committed memory carries a short extractive summary beside the full text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WEIGHTS = {"medium": 0.9, "stage": 0.75, "fixed": 0.9}
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
