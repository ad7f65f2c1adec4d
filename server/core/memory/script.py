"""Which writing system a text is mostly in: what the keyword channel can match across.

A Chinese question and an English memory share no keyword (the keyword channel scores zero
between them), so ranking must know when a candidate is in the other script than the query:
there the vector channel alone carries the match (`kernels.fusion`). Counted in words: a Latin
word is a run of letters, and two Han characters count as one word (a Chinese word is one to
three characters). A text with neither, or with both within a factor of `DOMINANT`, is `MIXED`.
"""

from __future__ import annotations

import re
from enum import IntEnum


class Script(IntEnum):
    NONE = 0  # no letters at all
    LATIN = 1
    HAN = 2
    MIXED = 3


DOMINANT = 2.0  # one script's words must outnumber the other's this many times
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def script_of(text: str) -> Script:
    """The script most of `text`'s words are written in (see the module docstring)."""
    latin = len(_LATIN_WORD.findall(text))
    han = len(_HAN.findall(text)) / 2.0
    if latin == 0 and han == 0:
        return Script.NONE
    if han >= DOMINANT * latin:
        return Script.HAN
    if latin >= DOMINANT * han:
        return Script.LATIN
    return Script.MIXED


_OTHER = {Script.LATIN: Script.HAN, Script.HAN: Script.LATIN}


def other(query: Script) -> Script | None:
    """The script across from a query mostly in one script (None for a mixed or empty one)."""
    return _OTHER.get(query)


def across(query: Script, memory: Script) -> bool:
    """Whether a memory in `memory`'s script is in the other script than the query: each is
    mostly Latin or mostly Han, and not the same one."""
    return other(query) is not None and memory == other(query)
