"""Synthetic, reproducible benchmark data: clustered unit vectors and texts with exact codes.

Uniform random vectors have no neighbourhood structure, so HNSW recall on them means nothing
(shared/STACK.md). Here each record is a cluster centre plus noise, tuned so that records of a
cluster are related (cosine ~0.6-0.8) but not near-duplicates (< 0.95, the write gate's merge
threshold). Each text names its cluster's topic words and a unique code such as `E00042`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

WORDS = [
    "invoice",
    "refund",
    "android",
    "deploy",
    "cluster",
    "quota",
    "disk",
    "network",
    "latency",
    "cache",
    "token",
    "billing",
    "policy",
    "password",
    "laptop",
    "printer",
    "vpn",
    "backup",
    "restore",
    "schema",
    "migration",
    "index",
    "shard",
    "replica",
    "timeout",
    "retry",
    "gateway",
    "certificate",
    "license",
    "contract",
    "meeting",
    "report",
    "dashboard",
    "alert",
    "metric",
    "kernel",
    "driver",
    "firmware",
    "battery",
    "screen",
    "keyboard",
    "camera",
    "upload",
    "download",
    "sync",
    "calendar",
    "email",
]


@dataclass(frozen=True)
class Dataset:
    vectors: npt.NDArray[np.float32]  # (n, dim), unit rows
    texts: list[str]
    queries: npt.NDArray[np.float32]  # (q, dim), unit rows near some records
    query_texts: list[str]
    query_targets: npt.NDArray[np.int64]  # the record each query was made from


def make(
    n: int, dim: int = 384, clusters: int | None = None, queries: int = 1000, seed: int = 0
) -> Dataset:
    rng = np.random.default_rng(seed)
    clusters = clusters or max(8, n // 100)
    centres = rng.normal(size=(clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    assign = rng.integers(0, clusters, n)
    noise = rng.normal(size=(n, dim)).astype(np.float32) * (0.9 / np.sqrt(dim))
    vectors = centres[assign] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    topic = rng.integers(0, len(WORDS), size=(clusters, 3))
    extra = rng.integers(0, len(WORDS), size=(n, 4))
    texts = [
        " ".join(WORDS[w] for w in (*topic[assign[i]], *extra[i])) + f" code E{i:05d}"
        for i in range(n)
    ]
    targets = rng.choice(n, size=min(queries, n), replace=False).astype(np.int64)
    q = vectors[targets] + rng.normal(size=(len(targets), dim)).astype(np.float32) * (
        0.3 / np.sqrt(dim)
    )
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    qtexts = [" ".join(texts[t].split()[3:5]) + f" E{t:05d}" for t in targets]
    return Dataset(vectors.astype(np.float32), texts, q.astype(np.float32), qtexts, targets)
