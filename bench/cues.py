"""`python -m bench cues [--data PATH]`: do pocketd's word lists read questions written blind?

The set (`bench/data/role_time_blind.json`, sha256 8e407374…, written on 2026-12-07 by a helper
session given only a task description, after issue 31's lists were frozen): 80 questions about
what the user said or what the assistant said, and 30 with a relative time, each with the days
back it means and a tolerance, half English, half Chinese.

Rows: the role `RoleCues` reads from the server's default `retrieval.agent_cues` and
`asker_cues` (a "user" question should read ASKER, an "assistant" one AGENT; NONE raises nobody,
the other role raises the wrong turns), and whether the time window `timecues.window` reads holds
the meant day ("holds"), only meets the tolerated span ("overlaps"), misses it ("wrong") or is not
read ("none"), against a fixed Wednesday. No retrieval runs: this checks the rules' reading only;
what favours nobody (the writer saw no list).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections import Counter
from pathlib import Path

from server.core.memory.roles import Role, RoleCues
from server.core.memory.timecues import window
from server.core.settings import MemorySettings

DATA = Path(__file__).resolve().parent / "data" / "role_time_blind.json"
REFERENCE = dt.datetime(2026, 12, 2, 15, tzinfo=dt.UTC)  # a Wednesday
WANTED = {"user": Role.ASKER, "assistant": Role.AGENT}


def time_reading(text: str, days_back: int, tolerance: int) -> str:
    """How the window read from `text` meets the day `days_back` before the reference."""
    got = window(text, REFERENCE.timestamp())
    if got is None:
        return "none"
    meant = (REFERENCE - dt.timedelta(days=days_back)).replace(hour=12).timestamp()
    if got[0] <= meant < got[1]:
        return "holds"
    lo = (REFERENCE - dt.timedelta(days=days_back + tolerance)).timestamp()
    hi = (REFERENCE - dt.timedelta(days=days_back - tolerance)).timestamp()
    return "overlaps" if got[1] > lo and got[0] < hi else "wrong"


def run(path: Path) -> tuple[Counter[tuple[str, str, str]], list[str]]:
    s = MemorySettings().retrieval
    roles = RoleCues(s.agent_cues, s.asker_cues)
    counts: Counter[tuple[str, str, str]] = Counter()
    misses: list[str] = []
    for q in json.loads(path.read_text()):
        kind, lang, text = q["kind"], q["lang"], q["text"]
        if kind in WANTED:
            got = roles.of(text).name
            ok = got == WANTED[kind].name
        else:
            got = time_reading(text, q["days_back"], q["tolerance_days"])
            ok = got == "holds"
        counts[(kind, lang, got)] += 1
        if not ok:
            misses.append(f"{kind} {lang} read {got}: {text}")
    return counts, misses


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench cues", description=__doc__)
    p.add_argument("--data", type=Path, default=DATA)
    ns = p.parse_args(argv)
    counts, misses = run(ns.data)
    for kind in ("user", "assistant", "time"):
        for lang in ("en", "zh"):
            row = {r: n for (k, g, r), n in counts.items() if k == kind and g == lang}
            cells = ", ".join(f"{r} {n}" for r, n in sorted(row.items()))
            print(f"{kind:<10} {lang}  {sum(row.values()):>3}  {cells}")
    print("\nmisread:")
    print("\n".join(misses))
    return 0
