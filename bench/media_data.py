"""The set of `python -m bench media` (`bench/data/media_set.json`, written blind by a helper
session that saw only the task description) and the media made from it.

- `screenshots`: 160 application windows (English and Chinese, a tune and a report half of 40
  each), each with a title, its lines, a question about something it shows (a code, a name, an
  amount) and the answer. Drawn by `tests.media_samples.render_screenshot` (PIL: DejaVu Sans,
  WenQuanYi Micro Hei), the seed taken from the id, so a run draws the same PNG bytes every time.
- `voice_notes`: 70 notes (60 English, 10 Chinese, in halves), each with its words, a question
  and the answer. Spoken by espeak-ng (`tests.media_samples.speak`: "en-us", and "cmn" for
  Mandarin, which is not intelligible enough for a speech model: ../shared/STACK.md).
- `distractors`: 300 short text memories (150 per language), in every namespace of the bench.

Every question's answer occurs in its item's lines or words (`tests/unit/test_bench_media.py`).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bench.server_proc import ROOT

SET = ROOT / "bench" / "data" / "media_set.json"
LANGS = ("en", "zh")
HALVES = ("tune", "report")
VOICES = {"en": "en-us", "zh": "cmn"}

Modality = Literal["image", "audio"]


@dataclass(frozen=True)
class Item:
    """A screenshot or a voice note: what it truly shows or says (`truth`: a screenshot's title
    and lines, one a line; a note's words), and the one question about it."""

    id: str
    lang: str
    half: str
    modality: Modality
    truth: str
    question: str
    answer: str
    title: str = ""
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Doc:
    """A text memory: a distractor, or an item's truth in the oracle's namespace."""

    id: str
    lang: str
    text: str


@dataclass(frozen=True)
class MediaSet:
    screenshots: tuple[Item, ...]
    notes: tuple[Item, ...]
    distractors: tuple[Doc, ...]

    def half(self, half: str) -> MediaSet:
        """The screenshots and notes of one half; the distractors are shared by both."""
        return MediaSet(
            tuple(i for i in self.screenshots if i.half == half),
            tuple(i for i in self.notes if i.half == half),
            self.distractors,
        )

    def cut(self, per_lang: int, notes_per_lang: int, distractors_per_lang: int) -> MediaSet:
        """A smaller set (`--quick`): the first so many of each language."""

        def first(items: tuple[Item, ...], n: int) -> tuple[Item, ...]:
            return tuple(i for lang in LANGS for i in [x for x in items if x.lang == lang][:n])

        docs = tuple(
            d
            for lang in LANGS
            for d in [x for x in self.distractors if x.lang == lang][:distractors_per_lang]
        )
        return MediaSet(first(self.screenshots, per_lang), first(self.notes, notes_per_lang), docs)


def load(path: Path = SET) -> MediaSet:
    raw = json.loads(path.read_text(encoding="utf-8"))
    shots = tuple(
        Item(
            s["id"],
            s["lang"],
            s["half"],
            "image",
            "\n".join([s["title"], *s["lines"]]),
            s["question"],
            s["answer"],
            s["title"],
            tuple(s["lines"]),
        )
        for s in raw["screenshots"]
    )
    notes = tuple(
        Item(n["id"], n["lang"], n["half"], "audio", n["text"], n["question"], n["answer"])
        for n in raw["voice_notes"]
    )
    docs = tuple(Doc(f"d-{i:03d}", d["lang"], d["text"]) for i, d in enumerate(raw["distractors"]))
    return MediaSet(shots, notes, docs)


def seed_of(item_id: str) -> int:
    """A screenshot's drawing seed (colours, font size, margins): fixed by its id."""
    return zlib.crc32(item_id.encode())


def media_bytes(item: Item) -> bytes:
    """The PNG of a screenshot or the WAV of a note, made as the tests make theirs."""
    from tests.media_samples import render_screenshot, speak

    if item.modality == "image":
        return render_screenshot(list(item.lines), title=item.title, seed=seed_of(item.id))
    return speak(item.truth, voice=VOICES[item.lang])


def seconds_of(wav: bytes) -> float:
    """A recording's duration, read from its header as the server reads it."""
    from server.core.media.sniff import sniff

    return sniff(wav).seconds
