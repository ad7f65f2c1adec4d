"""In-process chromadb on the same vectors, for `bench memory` (run in `.venv-bench`).

chromadb is a baseline, not a dependency: `make bench-env` installs it into its own virtual
environment, and `bench.memory` runs this module there as a subprocess
(`.venv-bench/bin/python -m bench.chroma_baseline DIR K`, from the repository root), handing it
the vectors, kinds, queries, the exact top k of each query and pocketd's recall@k as files, and
reading the figures back as JSON. Only numpy, chromadb and `bench.exact_scan` are imported.

Two layouts of the same records, on disk in DIR (a PersistentClient):
- one collection holding every record, its kind as metadata: plain queries, and kind-filtered
  ones with `where={"kind": ...}`;
- one collection per kind (what a chromadb user who filters by kind would build): a
  kind-filtered query goes to its kind's collection; a plain one to all four, merged by distance.

Each of the four rows is timed at chromadb's default search breadth (`ef_search`, 100 in 1.x;
`hnsw:search_ef` in the legacy metadata) and at the breadth that matches pocketd's recall@k: the
smallest on a ladder whose recall@k on the tune queries is at or above pocketd's on those same
queries. Both settings are then reported on the other queries (`bench.exact_scan.split_queries`).
chromadb 1.x keeps a loaded index's breadth when the configuration is modified, so each change
is followed by reopening the client, which reloads the index with the new one.

Usage: python -m bench.chroma_baseline DIR K [--inventory]
  DIR holds vectors.npy, kinds.npy, queries.npy, query_kinds.npy, exact_plain.npy,
  exact_kind.npy and targets.json; the figures go to DIR/chroma.json. With --inventory, the
  collections are only built, and their contents written to DIR/inventory.npz (for the tests).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.api.client import SharedSystemClient

from bench.exact_scan import recall_at_k, split_queries

BATCH = 4096
SINGLE = "all-records"
LADDER: tuple[int, ...] = (5, 8, 12, 16, 24, 32, 48, 64, 80, 100, 128, 160, 200, 256, 320, 400)
LADDER += (512, 640, 800, 1024, 1280, 1600, 2048, 2560, 3200, 4096)
TUNE_MAX = 200  # tune queries per trial breadth
WARMUP = 20


def kind_collection(kind: str) -> str:
    return f"kind-{kind}"


@dataclass(frozen=True)
class Inputs:
    vectors: npt.NDArray[np.float32]
    kinds: npt.NDArray[np.str_]
    queries: npt.NDArray[np.float32]
    query_kinds: npt.NDArray[np.str_]
    exact: dict[str, npt.NDArray[np.int64]]  # "plain" / "kind": (queries, k) exact top-k rows
    targets: dict[str, float]  # pocketd's recall@k on the tune queries, same keys

    @staticmethod
    def load(root: Path) -> Inputs:
        targets = json.loads((root / "targets.json").read_text())
        return Inputs(
            vectors=np.load(root / "vectors.npy"),
            kinds=np.load(root / "kinds.npy", allow_pickle=False),
            queries=np.load(root / "queries.npy"),
            query_kinds=np.load(root / "query_kinds.npy", allow_pickle=False),
            exact={f: np.load(root / f"exact_{f}.npy") for f in ("plain", "kind")},
            targets={str(f): float(v) for f, v in targets.items()},
        )


class Store:
    """Both layouts in one persistent chromadb directory."""

    def __init__(self, path: Path, kinds: list[str]) -> None:
        self.path = path
        self.kinds = kinds
        self.client = chromadb.PersistentClient(str(path))

    def names(self) -> list[str]:
        return [SINGLE, *(kind_collection(k) for k in self.kinds)]

    def build(self, inputs: Inputs) -> float:
        t0 = time.perf_counter()
        cols = {n: self.client.create_collection(n, configuration={"hnsw": {"space": "cosine"}})
                for n in self.names()}  # fmt: skip
        for start in range(0, len(inputs.vectors), BATCH):
            end = min(start + BATCH, len(inputs.vectors))
            rows = np.arange(start, end)
            cols[SINGLE].add(
                ids=[str(i) for i in rows],
                embeddings=inputs.vectors[start:end],
                metadatas=[{"kind": str(inputs.kinds[i])} for i in rows],
            )
            for kind in self.kinds:
                mine = rows[inputs.kinds[start:end] == kind]
                if len(mine):
                    cols[kind_collection(kind)].add(
                        ids=[str(i) for i in mine],
                        embeddings=inputs.vectors[mine],
                        metadatas=[{"kind": kind} for _ in mine],
                    )
        return time.perf_counter() - t0

    def col(self, name: str) -> Any:
        return self.client.get_collection(name)

    def ef(self, name: str) -> int:
        return int(self.col(name).configuration["hnsw"]["ef_search"])

    def set_ef(self, names: list[str], ef: int) -> None:
        """Set the search breadth, then reopen the client so that the indexes reload with it."""
        if all(self.ef(n) == ef for n in names):
            return
        for n in names:
            self.col(n).modify(configuration={"hnsw": {"ef_search": ef}})
        del self.client
        SharedSystemClient.clear_system_cache()
        self.client = chromadb.PersistentClient(str(self.path))
        assert all(self.ef(n) == ef for n in names)


def ids_of(res: Any) -> list[int]:
    return [int(i) for i in res["ids"][0]]


@dataclass(frozen=True)
class Row:
    label: str
    filter: str  # "plain" or "kind": which exact top k and which pocketd recall it is held to
    collections: Callable[[Store], list[str]]
    search: Callable[[Store, npt.NDArray[np.float32], str, int], list[int]]


def _single(s: Store, q: npt.NDArray[np.float32], kind: str, k: int) -> list[int]:
    return ids_of(s.col(SINGLE).query(query_embeddings=[q], n_results=k, include=[]))


def _where(s: Store, q: npt.NDArray[np.float32], kind: str, k: int) -> list[int]:
    res = s.col(SINGLE).query(query_embeddings=[q], n_results=k, where={"kind": kind}, include=[])
    return ids_of(res)


def _per_kind(s: Store, q: npt.NDArray[np.float32], kind: str, k: int) -> list[int]:
    res = s.col(kind_collection(kind)).query(query_embeddings=[q], n_results=k, include=[])
    return ids_of(res)


def _fan_out(s: Store, q: npt.NDArray[np.float32], kind: str, k: int) -> list[int]:
    hits: list[tuple[float, int]] = []
    for kd in s.kinds:
        res = s.col(kind_collection(kd)).query(
            query_embeddings=[q], n_results=k, include=["distances"]
        )
        hits += zip(res["distances"][0], ids_of(res), strict=True)
    return [i for _, i in sorted(hits)[:k]]


ROWS: dict[str, Row] = {
    "single_plain": Row("one collection, plain", "plain", lambda s: [SINGLE], _single),
    "single_where_kind": Row("one collection, where kind", "kind", lambda s: [SINGLE], _where),
    "per_kind": Row(
        "collection per kind", "kind", lambda s: [kind_collection(k) for k in s.kinds], _per_kind
    ),
    "per_kind_fan_out": Row(
        "collection per kind, plain (4 queries merged)",
        "plain",
        lambda s: [kind_collection(k) for k in s.kinds],
        _fan_out,
    ),
}


def run_row(
    store: Store, row: Row, inputs: Inputs, which: list[int], k: int, timed: bool
) -> dict[str, float]:
    """Run `row` over the queries numbered in `which`: its recall@k and, if `timed`, its
    latency (after a warm-up)."""
    if timed:
        for i in which[:WARMUP]:
            row.search(store, inputs.queries[i], str(inputs.query_kinds[i]), k)
    found: list[list[int]] = []
    seconds: list[float] = []
    for i in which:
        t0 = time.perf_counter()
        found.append(row.search(store, inputs.queries[i], str(inputs.query_kinds[i]), k))
        seconds.append(time.perf_counter() - t0)
    out = {"recall_at_k": recall_at_k(found, [inputs.exact[row.filter][i] for i in which])}
    if timed:
        ms = np.array(seconds) * 1000.0
        out |= {
            "p50_ms": float(np.percentile(ms, 50)),
            "p99_ms": float(np.percentile(ms, 99)),
            "mean_ms": float(ms.mean()),
        }
    return out


def matched_ef(
    store: Store, row: Row, inputs: Inputs, tune: list[int], k: int, default_ef: int
) -> tuple[int, list[list[float]]]:
    """The smallest breadth on the ladder whose recall@k on the tune queries is at or above
    pocketd's (the largest if none is), by bisection (recall grows with the breadth) from the
    default, and the breadths tried with their recall."""
    names, target = row.collections(store), inputs.targets[row.filter]
    tried: dict[int, float] = {}

    def reaches(i: int) -> bool:
        if LADDER[i] not in tried:
            store.set_ef(names, LADDER[i])
            tried[LADDER[i]] = run_row(store, row, inputs, tune, k, timed=False)["recall_at_k"]
        return tried[LADDER[i]] >= target

    start = min(range(len(LADDER)), key=lambda i: abs(LADDER[i] - default_ef))
    if reaches(start):
        lo, hi = 0, start
    else:
        lo, hi = start + 1, len(LADDER) - 1
        reaches(hi)
    while lo < hi:
        mid = (lo + hi) // 2
        if reaches(mid):
            hi = mid
        else:
            lo = mid + 1
    return LADDER[hi], [[float(e), r] for e, r in sorted(tried.items())]


def measure(store: Store, inputs: Inputs, k: int, default_ef: int) -> dict[str, object]:
    tune, report = split_queries(len(inputs.queries))
    tune = tune[:TUNE_MAX]
    rows: dict[str, object] = {}
    for key, row in ROWS.items():
        names = row.collections(store)
        store.set_ef(names, default_ef)
        default = {"ef": float(default_ef)} | run_row(store, row, inputs, report, k, timed=True)
        ef, tried = matched_ef(store, row, inputs, tune, k, default_ef)
        store.set_ef(names, ef)
        matched = {"ef": float(ef)} | run_row(store, row, inputs, report, k, timed=True)
        target = inputs.targets[row.filter]
        reached = next(r for e, r in tried if e == ef) >= target
        rows[key] = {
            "label": row.label,
            "filter": row.filter,
            "default": default,
            "matched": matched | {"target": target, "reached": float(reached)},
            "tried": tried,
        }
        print(f"[chroma] {key}: {rows[key]}", file=sys.stderr, flush=True)
    return {"tune_queries": len(tune), "report_queries": len(report), "rows": rows}


def inventory(store: Store, root: Path) -> None:
    """Each collection's ids, embeddings and kinds, sorted by id, under `single.` for the one
    collection and `kind.<kind>.` for the others."""
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name in store.names():
        got = store.col(name).get(include=["embeddings", "metadatas"])
        ids = np.array([int(i) for i in got["ids"]], dtype=np.int64)
        order = np.argsort(ids)
        key = "single" if name == SINGLE else "kind." + name.removeprefix(kind_collection(""))
        arrays[f"{key}.ids"] = ids[order]
        arrays[f"{key}.embeddings"] = np.asarray(got["embeddings"], dtype=np.float32)[order]
        arrays[f"{key}.kinds"] = np.array([m["kind"] for m in got["metadatas"]])[order]
    np.savez(root / "inventory.npz", **arrays)  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    root, k = Path(argv[1]), int(argv[2])
    inputs = Inputs.load(root)
    store = Store(root / "chroma-db", sorted(set(inputs.kinds.tolist())))
    build = store.build(inputs)
    if "--inventory" in argv[3:]:
        inventory(store, root)
        return 0
    default_ef = store.ef(SINGLE)
    out = {
        "version": chromadb.__version__,
        "build_seconds": build,
        "default_ef": default_ef,
        "ladder": list(LADDER),
    } | measure(store, inputs, k, default_ef)
    (root / "chroma.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
