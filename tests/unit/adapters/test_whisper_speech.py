"""Speech with faster-whisper: an espeak-ng note transcribed by Whisper tiny.en, English only
without the multilingual model, silence read as nothing, and a decode that runs away cut at a
length the duration allows. The model tests need `make setup` (models/whisper-tiny-en)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.adapters.media_decode import PilDecoder
from server.adapters.whisper_speech import (
    SpeechModelMissingError,
    WhisperSpeech,
    bounded_text,
    plausible_chars,
)
from server.core.media.ports import SAMPLE_RATE, Sniffed, Speech
from server.core.memory.model import Modality
from server.core.settings import MediaSettings, SpeechSettings
from tests.conftest import ROOT
from tests.media_samples import speak

TINY_EN = ROOT / "models" / "whisper-tiny-en"
BASE = ROOT / "models" / "whisper-base"
needs_tiny = pytest.mark.skipif(
    not (TINY_EN / "model.bin").is_file(),
    reason=f"{TINY_EN} is missing: `make setup` (or `make models`) fetches Whisper tiny.en",
)
needs_base = pytest.mark.skipif(
    not (BASE / "model.bin").is_file(),
    reason=f"{BASE} is missing: `make models-speech-zh` fetches Whisper base",
)


def samples_of(text: str) -> np.ndarray:
    wav = speak(text)
    return PilDecoder(MediaSettings()).audio(wav, Sniffed("audio/wav", Modality.AUDIO))


@pytest.fixture(scope="module")
def english() -> Iterator[WhisperSpeech]:
    if not (TINY_EN / "model.bin").is_file():
        pytest.skip(f"{TINY_EN} is missing: `make setup` fetches Whisper tiny.en")
    yield WhisperSpeech(SpeechSettings(threads=1), TINY_EN, None)


@needs_tiny
def test_a_spoken_note_is_transcribed(english: WhisperSpeech) -> None:
    x = samples_of("remind me to renew the passport before March")
    speech: Speech = english
    got = speech.transcribe(x, "en")
    words = got.text.lower()
    assert "passport" in words and "march" in words, got.text
    assert got.language == "en"
    assert got.seconds == pytest.approx(len(x) / SAMPLE_RATE)


@needs_tiny
def test_english_only_without_the_multilingual_model(english: WhisperSpeech) -> None:
    assert english.languages == ("en",)
    with pytest.raises(ValueError, match="'zh' is not one of"):
        english.transcribe(np.zeros(SAMPLE_RATE, dtype=np.float32), "zh")
    with pytest.raises(ValueError, match="'auto' is not one of"):
        english.transcribe(np.zeros(SAMPLE_RATE, dtype=np.float32), "auto")


@needs_tiny
def test_silence_and_nothing_transcribe_to_nothing(english: WhisperSpeech) -> None:
    assert english.transcribe(np.zeros(5 * SAMPLE_RATE, dtype=np.float32), "en").text == ""
    empty = english.transcribe(np.zeros(0, dtype=np.float32), "en")
    assert (empty.text, empty.seconds) == ("", 0.0)


@needs_base
def test_the_multilingual_model_adds_chinese_and_detection() -> None:
    both = WhisperSpeech(SpeechSettings(threads=1), TINY_EN, BASE)
    assert both.languages == ("en", "zh", "auto")
    got = both.transcribe(samples_of("remind me to renew the passport before March"), "auto")
    assert got.language == "en" and "passport" in got.text.lower(), got.text


def test_a_missing_model_says_how_to_fetch_it(tmp_path: Path) -> None:
    with pytest.raises(SpeechModelMissingError, match="make models"):
        WhisperSpeech(SpeechSettings(), tmp_path / "whisper-tiny-en", None)


def segments(texts: list[str]) -> list[SimpleNamespace]:
    return [SimpleNamespace(text=t) for t in texts]


@given(st.lists(st.text(max_size=80), max_size=20), st.floats(0.0, 30.0))
def test_a_transcript_is_its_segments_up_to_a_plausible_length(
    texts: list[str], seconds: float
) -> None:
    joined = "".join(texts)
    got = bounded_text(segments(texts), seconds)
    limit = plausible_chars(seconds)
    assert len(got) <= limit
    assert got == (joined if len(joined) <= limit else joined[:limit]).strip()


def test_a_looping_decode_is_stopped() -> None:
    """faster-whisper yields segments as it decodes them: reading stops, so decoding stops."""
    read = itertools.count()
    loop = (SimpleNamespace(text=f" again{next(read)}") for _ in itertools.repeat(None))
    got = bounded_text(loop, 2.0)
    assert len(got) <= plausible_chars(2.0)
    assert next(read) < plausible_chars(2.0)  # segments read: a bounded number
