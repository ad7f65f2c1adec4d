"""The need detector on the built-in encoder: standing preferences in words the rules do not
read count, requests and references to a preference do not."""

from __future__ import annotations

import pytest

from server.adapters.onnx_encoder import OnnxTextEncoder
from server.core.agent.keyevents import events
from server.core.agent.needs import NeedDetector


@pytest.fixture(scope="module")
def detector(encoder: OnnxTextEncoder) -> NeedDetector:
    return NeedDetector.build(encoder.encode)


def need(detector: NeedDetector, encoder: OnnxTextEncoder, text: str) -> bool:
    return detector.stated(encoder.encode([text])[0])


def test_standing_preferences_count_and_the_rest_does_not(
    detector: NeedDetector, encoder: OnnxTextEncoder
) -> None:
    for text in ("Email suits me much better than phone calls.", "Only text messages for me."):
        assert not any(e.kind == "preference" for e in events(text, False, False))  # rules miss it
        assert need(detector, encoder, text), text
    for text in (
        "Please contact me the way I prefer.",
        "Can you check the logs again?",
        "The printer shows error E42.",
        "My order number is ORD-5521.",
        "I need this fixed before Friday.",
        "I want a refund for the duplicate charge.",
    ):
        assert not need(detector, encoder, text), text
