"""A media memory's passages: its read text cut into short overlapping windows, each encoded
into the text encoder's space and indexed in the passages space (`PASSAGES`), several a record.

A screenshot's OCR text runs to ten lines or more (a title, a sender, an amount, a reference);
one vector of the whole is the mean of all of them, and a question about one line ("who brought
the pizza?") finds it below short texts that share its topic. A window of three lines keeps one
line's meaning with its neighbours' context; a Recall scores a memory by its best passage (and
its whole text, whichever is better). On the tune half of the media set, vector-only recall@5 of
the screenshots' questions against 300 distractors went from 0.60 to 0.80 (English) and from 0.88
to 1.00 (Chinese) with them; a mean of the windows' vectors did not help (0.68, 0.90).

Units: the text's lines (OCR lines, a table's rows), or a one-line text's sentences (a
transcript). A text of one or two units has no passages: the whole is already one.
"""

from __future__ import annotations

import re

from server.core.memory.model import Modality, Record

# A window: this many units, centred on each unit in turn.
WINDOW = 3
# At most this many passages a memory (a long table's windows are taken at a stride).
MAX_PASSAGES = 24
MEDIA = frozenset({Modality.IMAGE, Modality.AUDIO, Modality.TABLE})
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")


def units(text: str) -> list[str]:
    """The text's lines, or its sentences when it is one line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1:
        return lines
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def windows(text: str) -> list[str]:
    """The text's passages: a window of `WINDOW` units centred on each unit (on at most
    `MAX_PASSAGES` units spread evenly from the first to the last); none for a text of fewer
    than `WINDOW` units."""
    parts = units(text)
    n = len(parts)
    if n < WINDOW:
        return []
    m = min(n, MAX_PASSAGES)
    centres = sorted({round(i * (n - 1) / (m - 1)) for i in range(m)})
    half = WINDOW // 2
    return ["\n".join(parts[max(0, k - half) : k + half + 1]) for k in centres]


def passages_of(rec: Record) -> list[str]:
    """The passages of a memory of an image, a recording or a table; none for a text memory."""
    if rec.modality not in MEDIA:
        return []
    return windows(rec.text)
