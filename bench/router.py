"""`python -m bench router`: what store routing saves against the full scan, and what it loses.

On the synthetic workload of `bench.routing_data` (several users, each with profile facts,
preferences, skills, weekly summaries, episodes over months and a hot session):
1. Training, on the generator's training seed: the server's own router runs every query under
   the heuristic with `explore_share` 1, so each decision is logged with its shadow run of the
   full plan; then `pocketd router train`'s code trains the MLP on that log, reports its
   held-out split, exports it to ONNX and installs it.
2. The report, on another seed (other users, other vectors, other queries): every query runs
   once per policy, in one process over one engine, and the learned and hybrid policies score
   pockets with the installed ONNX model through onnxruntime:
   - `full`: every pocket the filter allows (the engine's default plan): the reference;
   - `heuristic`: the rules of seed 003 §3.1, §4.2;
   - `learned`: the model's probabilities; `hybrid`: strong rules first, then the model;
   each under `router.max_cost_share` of the full plan.

Per policy it reports, over all queries:
- recall@5: the share of the labelled answers in the policy's top 5, over the share full finds
  (the paper's measure: what routing keeps of what the full scan answers);
- overlap@5: the share of full's top 5 that the policy's top 5 holds (also the memories that
  answer nothing, which full ranks only for want of better ones);
- cost share: the policy's cost units (vector steps and keyword channel) over full's;
- coverage: the share of queries whose needed pockets were all searched; exact match: searched
  exactly the needed ones; waste: the share of searched pockets that were not needed (queries
  that need none count every searched pocket as waste);
- decision p50/p99 (the router's `decide`, in process, just before each Recall), the same for
  decisions alone (a second pass, back to back, with no Recall between them to evict the caches
  or wake the engine's threads), and Recall p50/p99 (in process).
`--json PATH` writes one object per policy; `--quick` runs a small workload.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import msgspec
import numpy as np

from bench.routing_data import TYPES, Query, Workload, generate
from bench.stats import environment, summary_ms
from server.adapters.model_store import ModelStore, ModelWatcher
from server.adapters.onnx_policy import OnnxPocketModel
from server.app import build_engine
from server.config import load_settings
from server.core.engine import MemoryEngine
from server.core.memory.model import RecallQuery, RecallResult, unit
from server.core.routing.inputs import LAYOUT, input_width
from server.core.routing.mlp import TrainSettings
from server.core.routing.policies import POLICIES
from server.core.routing.router import Router
from server.core.routing.training import Metrics
from server.core.settings import MemorySettings, RouterSettings, Settings
from server.router_admin import table, train_model

TRAIN_SEED = 1
REPORT_SEED = 2
TRAIN_ROUNDS = 4  # queries of each type per user, for training


def log(msg: str) -> None:
    print(f"[router] {msg}", file=sys.stderr, flush=True)


@dataclass
class Tally:
    recall: list[float] = field(default_factory=list)  # evidence recall@5
    overlap: list[float] = field(default_factory=list)
    cost: float = 0.0
    full_cost: float = 0.0
    covered: list[bool] = field(default_factory=list)
    exact: list[bool] = field(default_factory=list)
    waste: list[float] = field(default_factory=list)
    decide_s: list[float] = field(default_factory=list)
    recall_s: list[float] = field(default_factory=list)
    by_type: dict[str, list[float]] = field(default_factory=dict)


def needed(eng: MemoryEngine, q: Query) -> set[str]:
    out = set()
    for mid in q.answers:
        rec, _ = eng.get(q.namespace, mid, False)
        out.add(eng.columns.catalog.scheme.key_of(rec).name)
    return out


def _settings(tmp: str, **router: object) -> Settings:
    return load_settings(
        overrides={
            "server": {"data_dir": tmp},
            "encoder": {"text": "none"},
            "router": router,
        }
    )


def _load(eng: MemoryEngine, data: Workload) -> None:
    for start in range(0, len(data.memories), 256):
        eng.remember(data.memories[start : start + 256])
    eng.indexer.catch_up()


def train(users: int, weeks: int, per_week: int, models: Path) -> list[Metrics]:
    """Explore the training seed's queries, train on the log, install in `models`."""
    data = generate(users, weeks, per_week, TRAIN_SEED, rounds=TRAIN_ROUNDS)
    log(f"training seed {TRAIN_SEED}: {len(data.memories)} memories, {len(data.queries)} queries")
    with tempfile.TemporaryDirectory(prefix="pocketd-router-train-") as tmp:
        settings = _settings(tmp, policy="heuristic", explore_share=1.0)
        eng = build_engine(settings, None)
        router = eng.planner
        assert isinstance(router, Router)
        eng.load()
        try:
            _load(eng, data)
            for i, q in enumerate(data.queries):
                eng.recall(RecallQuery(q.namespace, text=q.text, vector=q.vector, top_k=5))
                router.drain()  # every decision explored: none is skipped for a busy shadow
                if (i + 1) % 200 == 0:
                    log(f"explored {i + 1}/{len(data.queries)}")
        finally:
            eng.close()  # the decision log is flushed
        _, metrics = train_model(settings, None, 0.2, TrainSettings(), True, log)
        shutil.copytree(Path(tmp) / "router" / "models", models)
    log("held out of the training seed:\n" + table(metrics))
    return metrics


def run(users: int, weeks: int, per_week: int, seed: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="pocketd-router-") as tmp:
        models_dir = Path(tmp) / "models"
        held_out = train(users, weeks, per_week, models_dir)
        data: Workload = generate(users, weeks, per_week, seed)
        log(f"report seed {seed}: {len(data.memories)} memories, {len(data.queries)} queries")
        settings = _settings(str(Path(tmp) / "data"))
        eng = build_engine(settings, None)
        wired = eng.planner  # the server's own router, with its decision log: closed below
        eng.load()
        rs = settings.router
        models = ModelWatcher(
            ModelStore(models_dir),
            partial(OnnxPocketModel, layout=LAYOUT, inputs=input_width(rs.prefix_dim)),
            3600.0,
        )
        try:
            _load(eng, data)
            out = measure(eng, rs, settings.memory, data, models)
            out["training_held_out"] = [vars(m) for m in held_out]
            return out
        finally:
            models.close()
            eng.planner = wired
            eng.close()


def measure(
    eng: MemoryEngine,
    rs: RouterSettings,
    ms: MemorySettings,
    data: Workload,
    models: ModelWatcher,
) -> dict[str, object]:
    routers = {
        p: Router(
            msgspec.structs.replace(rs, policy=p),
            ms,
            eng._keywords.analyze,
            eng.routable,
            eng._keywords.pocket_terms,
            models=models,
        )
        for p in POLICIES
    }
    tallies = {p: Tally() for p in POLICIES}
    for q in data.queries[:12]:  # warm-up: compile the kernels, fill the caches
        for router in routers.values():
            eng.planner = router
            eng.recall(RecallQuery(q.namespace, text=q.text, vector=q.vector, top_k=5))
        eng.planner = None
    for q in data.queries:
        need = needed(eng, q)
        results: dict[str, RecallResult] = {}
        for p, router in routers.items():
            query = RecallQuery(q.namespace, text=q.text, vector=q.vector, top_k=5)
            t0 = time.perf_counter()
            d = router.decide(query, unit(q.vector), time.time())  # as the engine calls it
            tallies[p].decide_s.append(time.perf_counter() - t0)
            if p in ("learned", "hybrid"):
                assert d.model or d.widened, f"{p} ran without the installed model: {d}"
            eng.planner = router
            t0 = time.perf_counter()
            results[p] = eng.recall(query)
            tallies[p].recall_s.append(time.perf_counter() - t0)
            eng.planner = None
        full = [h.record.key for h in results["full"].hits]
        found_full = _found(results["full"], q) if q.answers else 0.0
        for p, res in results.items():
            t = tallies[p]
            got = {h.record.key for h in res.hits}
            t.overlap.append(len(got & set(full)) / len(full) if full else 1.0)
            if q.answers:
                share = _found(res, q) / found_full if found_full else 1.0
                t.recall.append(share)
                t.by_type.setdefault(q.type, []).append(share)
            t.cost += res.cost_units
            t.full_cost += results["full"].cost_units
            searched = {s.pocket for s in res.plan if s.method != "skipped"}
            t.covered.append(need <= searched)
            t.exact.append(need == searched)
            t.waste.append(len(searched - need) / len(searched) if searched else 0.0)
    warm: dict[str, list[float]] = {p: [] for p in POLICIES}
    for p, router in routers.items():  # decisions alone, back to back: no Recall between them
        for q in data.queries:
            query = RecallQuery(q.namespace, text=q.text, vector=q.vector, top_k=5)
            t0 = time.perf_counter()
            router.decide(query, unit(q.vector), time.time())
            warm[p].append(time.perf_counter() - t0)
    for router in routers.values():
        router.close()  # the shared model watcher too (closing it twice is harmless)
    out: dict[str, object] = {"environment": environment(), "policies": []}
    for p, t in tallies.items():
        out["policies"].append(  # type: ignore[attr-defined]
            {
                "policy": p,
                "recall_at_5": float(np.mean(t.recall)),
                "overlap_at_5": float(np.mean(t.overlap)),
                "cost_share": t.cost / t.full_cost if t.full_cost else 1.0,
                "coverage": float(np.mean(t.covered)),
                "exact_match": float(np.mean(t.exact)),
                "waste": float(np.mean(t.waste)),
                "decision_p50_ms": summary_ms(t.decide_s)["p50_ms"],
                "decision_p99_ms": summary_ms(t.decide_s)["p99_ms"],
                "decision_alone_p50_ms": summary_ms(warm[p])["p50_ms"],
                "decision_alone_p99_ms": summary_ms(warm[p])["p99_ms"],
                "recall_p50_ms": summary_ms(t.recall_s)["p50_ms"],
                "recall_p99_ms": summary_ms(t.recall_s)["p99_ms"],
                "recall_at_5_by_type": {k: float(np.mean(v)) for k, v in t.by_type.items()},
            }
        )
    return out


def _found(res: RecallResult, q: Query) -> float:
    """The share of `q`'s answers in `res`'s top 5."""
    ids = {h.record.memory_id for h in res.hits[:5]}
    return sum(1 for a in q.answers if a in ids) / len(q.answers)


def report(r: dict[str, object]) -> str:
    rows = [
        f"{'policy':<10} {'recall@5':>9} {'overlap':>8} {'cost':>7} {'coverage':>9} {'exact':>7}"
        f" {'waste':>7}"
        f" {'decide p50/p99 ms':>18} {'alone p50/p99':>15} {'recall p50/p99 ms':>18}"
    ]
    for p in r["policies"]:  # type: ignore[attr-defined]
        rows.append(
            f"{p['policy']:<10} {p['recall_at_5']:>9.3f} {p['overlap_at_5']:>8.3f}"
            f" {p['cost_share']:>7.3f}"
            f" {p['coverage']:>9.3f} {p['exact_match']:>7.3f} {p['waste']:>7.3f}"
            f" {p['decision_p50_ms']:>8.3f} / {p['decision_p99_ms']:<7.3f}"
            f" {p['decision_alone_p50_ms']:>6.3f} / {p['decision_alone_p99_ms']:<6.3f}"
            f" {p['recall_p50_ms']:>8.2f} / {p['recall_p99_ms']:<7.2f}"
        )
    rows.append("recall@5 against full, by query type:")
    for p in r["policies"]:  # type: ignore[attr-defined]
        by = p["recall_at_5_by_type"]
        rows.append(
            f"  {p['policy']:<10} " + "  ".join(f"{t} {by[t]:.3f}" for t in TYPES if t in by)
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench router", description=__doc__)
    ap.add_argument("--seed", type=int, default=REPORT_SEED)
    ap.add_argument("--users", type=int, default=40)
    ap.add_argument("--weeks", type=int, default=16)
    ap.add_argument("--per-week", type=int, default=40)
    ap.add_argument("--quick", action="store_true", help="a small workload (well under 2 minutes)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ns = ap.parse_args(argv)
    if ns.quick:
        ns.users, ns.weeks, ns.per_week = 6, 6, 15
    r = run(ns.users, ns.weeks, ns.per_week, ns.seed)
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r["policies"], indent=2) + "\n")
    return 0
