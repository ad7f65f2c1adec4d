"""A synthetic multi-pocket workload for `bench router`, with the pockets each query needs.

Each user (a namespace) has profile facts, preferences, skills, weekly summaries, episodes over
the last `weeks` weeks (one ISO-week pocket each) and a hot session of the last minutes. Every
memory is about one topic: its vector is the topic's centre plus noise, and its text names the
topic's words, so a query about a topic has a cosine of 0.6–0.8 with it.

Queries, each with the memory that answers it and so the pockets needed:
- `profile` ("what is my …"): one fact or preference;
- `temporal` ("what did we discuss about … last week"): an episode of last week;
- `skill` ("how do I …"): a skill;
- `just_said` ("as I said earlier …"): a turn of the hot session;
- `multi`: a preference and an episode of last week;
- `none`: small talk, which needs no pocket.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from server.core.memory.model import Kind, NewMemory, Record

T = TypeVar("T")
DIM = 384
WEEK = 7 * 86_400.0
TOPICS = (
    ("invoice", "billing"), ("printer", "toner"), ("vpn", "tunnel"), ("deploy", "release"),
    ("laptop", "battery"), ("garden", "tomatoes"), ("piano", "lessons"), ("marathon", "training"),
    ("kitchen", "oven"), ("passport", "renewal"), ("bicycle", "tyres"), ("camera", "lens"),
)  # fmt: skip
ATTRS = ("shoe size", "blood type", "home town", "employer", "car", "favourite colour")
TYPES = ("profile", "temporal", "skill", "just_said", "multi", "none")


@dataclass
class Query:
    namespace: str
    type: str
    text: str
    vector: npt.NDArray[np.float32]
    answers: list[str] = field(default_factory=list)  # memory ids of the evidence


@dataclass
class Workload:
    memories: list[NewMemory]
    queries: list[Query]


def _near(
    rng: np.random.Generator, centre: npt.NDArray[np.floating], spread: float = 0.9
) -> npt.NDArray[np.float32]:
    """A unit vector at cosine about 1 / sqrt(1 + spread²) from `centre`."""
    v = centre + rng.standard_normal(DIM) * (spread / math.sqrt(DIM))
    out: npt.NDArray[np.float32] = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def generate(
    users: int, weeks: int, per_week: int, seed: int, now: float | None = None, rounds: int = 1
) -> Workload:
    """`rounds`: how many queries of each type per user."""
    rng = np.random.default_rng(seed)
    now = time.time() if now is None else now
    centres = [rng.standard_normal(DIM) for _ in TOPICS]
    centres = [c / np.linalg.norm(c) for c in centres]
    mems: list[NewMemory] = []
    queries: list[Query] = []
    vectors: dict[str, npt.NDArray[np.float32]] = {}

    def about(*mids: str) -> npt.NDArray[np.float32]:
        """A query vector near its answers' own (cosine ≈ 0.86 with a single answer; ≈ 0.47
        with another memory of the same topic)."""
        return _near(rng, np.mean([vectors[m] for m in mids], axis=0), 0.6)

    def add(
        ns: str, mid: str, kind: Kind, topic: int, text: str, at: float, session: str = ""
    ) -> str:
        rec = Record(memory_id=mid, namespace=ns, kind=kind, text=text, session_id=session)
        vectors[mid] = _near(rng, centres[topic])
        mems.append(NewMemory(rec, vectors[mid], 3, client_memory_id=True, created_at=at))
        return mid

    for u in range(users):
        ns = f"user-{u}"
        profile = []
        for i, attr in enumerate(ATTRS):
            t = int(rng.integers(len(TOPICS)))
            kind = Kind.PREFERENCE if i % 2 else Kind.FACT
            mid = add(
                ns,
                f"{ns}-p{i}",
                kind,
                t,
                f"My {attr} is {TOPICS[t][0]} {1000 + i}",
                now - 90 * 86_400,
            )
            profile.append((attr, t, mid))
        skills = []
        for i in range(12):
            t = i % len(TOPICS)
            mid = add(
                ns,
                f"{ns}-s{i}",
                Kind.SKILL,
                t,
                f"To fix the {TOPICS[t][0]}, check the {TOPICS[t][1]} first (step {i})",
                now - 60 * 86_400,
            )
            skills.append((t, mid))
        for w in range(weeks):
            add(
                ns,
                f"{ns}-w{w}",
                Kind.SUMMARY,
                w % len(TOPICS),
                f"Summary of week {w}: {TOPICS[w % len(TOPICS)][0]} and more",
                now - (w + 1) * WEEK,
            )
        episodes: dict[int, list[tuple[int, str]]] = {}
        for w in range(weeks):
            for i in range(per_week):
                t = int(rng.integers(len(TOPICS)))
                at = now - (w + 1) * WEEK + i * 600.0
                mid = add(
                    ns,
                    f"{ns}-e{w}-{i}",
                    Kind.EPISODE,
                    t,
                    f"We discussed the {TOPICS[t][0]} and its {TOPICS[t][1]}, item {w}-{i}",
                    at,
                    f"s{w}",
                )
                episodes.setdefault(w, []).append((t, mid))
        hot = []
        for i in range(10):
            t = int(rng.integers(len(TOPICS)))
            mid = add(
                ns,
                f"{ns}-h{i}",
                Kind.EPISODE,
                t,
                f"Right now I am asking about the {TOPICS[t][0]} {TOPICS[t][1]} {i}",
                now - 300 + i,
                "current",
            )
            hot.append((t, mid))
        for _ in range(rounds):
            queries.extend(_queries(rng, ns, profile, skills, episodes, hot, per_week, about))
    return Workload(mems, queries)


def _queries(
    rng: np.random.Generator,
    ns: str,
    profile: list[tuple[str, int, str]],
    skills: list[tuple[int, str]],
    episodes: dict[int, list[tuple[int, str]]],
    hot: list[tuple[int, str]],
    per_week: int,
    about: Callable[..., npt.NDArray[np.float32]],
) -> list[Query]:
    """One query of each type for user `ns`."""

    def pick(items: list[T]) -> T:
        return items[int(rng.integers(len(items)))]

    out = []
    attr, t, mid = pick(profile)
    out.append(Query(ns, "profile", f"What is my {attr}?", about(mid), [mid]))
    t, mid = pick(episodes[0])  # last week: week 0
    text = f"What did we discuss about the {TOPICS[t][0]} last week?"
    out.append(Query(ns, "temporal", text, about(mid), [mid]))
    t, mid = pick(skills)
    out.append(Query(ns, "skill", f"How do I fix the {TOPICS[t][0]}?", about(mid), [mid]))
    t, mid = pick(hot)
    text = f"As I said earlier, the {TOPICS[t][0]} {TOPICS[t][1]}"
    out.append(Query(ns, "just_said", text, about(mid), [mid]))
    attr, _, pmid = pick(profile)
    et, emid = pick(episodes[0])
    text = f"Is my {attr} like what we discussed about the {TOPICS[et][0]} last week?"
    out.append(Query(ns, "multi", text, about(pmid, emid), [pmid, emid]))
    noise = rng.standard_normal(DIM)
    text = "Hello there, nice weather today"
    out.append(Query(ns, "none", text, (noise / np.linalg.norm(noise)).astype(np.float32), []))
    return out
