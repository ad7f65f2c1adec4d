"""A stated standing preference by meaning, beside the key-event rules' wording (`keyevents`).

The rules read phrasings ("I prefer …", "reach me by …"); a user says it in many others ("SMS
works better for me", "going forward, only use email"). So a round's input also counts as a
preference when its vector is nearer the prototypes of standing preferences (`PREFERENCES`)
than those of requests, needs of the task at hand and references to a preference (`OTHERS`:
"contact me the way I prefer", "I need this fixed before Friday"), by `margin`, and near enough
(`floor`). The vector is the one the Step's Recall already encoded
for the input (the engine's query cache), so the check costs two small matrix products.

The thresholds are the encoder's (its manifest's `need_floor` and `need_margin`), set on the
wordings the rules were extended on; `bench agent --wording-file` measures both on wordings
written by someone who never read them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

PREFERENCES = (
    "I prefer to be contacted by email.",
    "Please only call me on my mobile phone.",
    "Send me text messages, not emails.",
    "I'd rather not receive phone calls.",
    "Always write to me in English, please.",
    "My preferred language is Spanish.",
    "I don't want any marketing emails.",
    "Reach me on WhatsApp.",
    "Always send my invoices as PDF files.",
    "I am vegetarian, so no meat please.",
    "Use my work address for deliveries from now on.",
    "我更喜欢用邮件联系。",
    "请只给我发短信。",
    "以后请用微信联系我。",
)
OTHERS = (
    "Contact me the way I prefer.",
    "Use my preferred channel.",
    "Let me know the usual way.",
    "Summarise what was done.",
    "Can you open a ticket for this?",
    "It still does not work.",
    "Here is a screenshot of the error.",
    "My order number is 12345.",
    "Please send the report to the finance team.",
    "What is the status of my order?",
    "按我喜欢的方式联系我。",
    "我的订单号是12345。",
    "I need this fixed before Friday.",
    "I want a refund for the second charge.",
    "I need a replacement sent out today.",
    "We need the report by tomorrow morning.",
    "I'd like to cancel this order.",
    "I need last month's invoice as a PDF.",
    "我需要周五之前修好。",
    "我想要退掉第二笔扣款。",
)


@dataclass(frozen=True)
class NeedDetector:
    preferences: npt.NDArray[np.float32]  # unit rows
    others: npt.NDArray[np.float32]
    floor: float = 0.35
    margin: float = 0.03

    @classmethod
    def build(
        cls, encode: Callable[[list[str]], npt.NDArray[np.float32]], **thresholds: float
    ) -> NeedDetector:
        return cls(encode(list(PREFERENCES)), encode(list(OTHERS)), **thresholds)

    def stated(self, vector: Sequence[float] | npt.NDArray[np.float32]) -> bool:
        v = np.asarray(vector, dtype=np.float32)
        near = float((self.preferences @ v).max())
        return near >= self.floor and near - float((self.others @ v).max()) >= self.margin
