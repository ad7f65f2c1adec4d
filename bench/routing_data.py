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
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from server.core.memory.model import Kind, NewMemory, Record

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


def _near(rng: np.random.Generator, centre: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    v = centre + rng.standard_normal(DIM) * (0.9 / math.sqrt(DIM))
    out: npt.NDArray[np.float32] = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def generate(
    users: int, weeks: int, per_week: int, seed: int, now: float | None = None
) -> Workload:
    rng = np.random.default_rng(seed)
    now = time.time() if now is None else now
    centres = [rng.standard_normal(DIM) for _ in TOPICS]
    centres = [c / np.linalg.norm(c) for c in centres]
    mems: list[NewMemory] = []
    queries: list[Query] = []

    def add(
        ns: str, mid: str, kind: Kind, topic: int, text: str, at: float, session: str = ""
    ) -> str:
        rec = Record(memory_id=mid, namespace=ns, kind=kind, text=text, session_id=session)
        mems.append(
            NewMemory(rec, _near(rng, centres[topic]), 3, client_memory_id=True, created_at=at)
        )
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
        # The queries.
        attr, t, mid = profile[int(rng.integers(len(profile)))]
        queries.append(Query(ns, "profile", f"What is my {attr}?", _near(rng, centres[t]), [mid]))
        t, mid = episodes[0][int(rng.integers(per_week))]  # last week: week 0
        queries.append(
            Query(
                ns,
                "temporal",
                f"What did we discuss about the {TOPICS[t][0]} last week?",
                _near(rng, centres[t]),
                [mid],
            )
        )
        t, mid = skills[int(rng.integers(len(skills)))]
        queries.append(
            Query(ns, "skill", f"How do I fix the {TOPICS[t][0]}?", _near(rng, centres[t]), [mid])
        )
        t, mid = hot[int(rng.integers(len(hot)))]
        queries.append(
            Query(
                ns,
                "just_said",
                f"As I said earlier, the {TOPICS[t][0]} {TOPICS[t][1]}",
                _near(rng, centres[t]),
                [mid],
            )
        )
        attr, t, pmid = profile[1]
        et, emid = episodes[0][0]
        queries.append(
            Query(
                ns,
                "multi",
                f"Is my {attr} like what we discussed about the {TOPICS[et][0]} last week?",
                _near(rng, (centres[t] + centres[et]) / 2),
                [pmid, emid],
            )
        )
        queries.append(
            Query(
                ns,
                "none",
                "Hello there, nice weather today",
                rng.standard_normal(DIM).astype(np.float32),
                [],
            )
        )
    return Workload(mems, queries)
