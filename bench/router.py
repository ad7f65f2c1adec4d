"""`python -m bench router`: what store routing saves against the full scan, and what it loses.

On the synthetic workload of `bench.routing_data` (several users, each with profile facts,
preferences, skills, weekly summaries, episodes over months and a hot session), every query runs
once per policy, in one process over one engine (the per-request policy is not in the wire
contract yet):
- `full`: every pocket the filter allows (the engine's default plan): the reference;
- `heuristic`: the rules of seed 003 §3.1, §4.2, under `router.max_cost_share` of the full plan.
(`learned` and `hybrid` are not built yet.)

Per policy it reports, over all queries:
- recall@5 against full: the share of full's top 5 that the policy's top 5 holds;
- cost share: the policy's cost units (vector steps and keyword channel) over full's;
- coverage: the share of queries whose needed pockets were all searched; exact match: searched
  exactly the needed ones; waste: the share of searched pockets that were not needed (queries
  that need none count every searched pocket as waste);
- decision p50/p99 (the router's `decide`, in process) and Recall p50/p99 (in process).
`--json PATH` writes one object per policy; `--quick` runs a small workload.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np

from bench.routing_data import TYPES, Query, Workload, generate
from bench.stats import environment, summary_ms
from server.app import build_engine
from server.config import load_settings
from server.core.memory.engine import MemoryEngine
from server.core.memory.model import RecallQuery, RecallResult, unit
from server.core.routing.router import Router
from server.core.settings import MemorySettings, RouterSettings

REPORT_SEED = 2
POLICIES = ("full", "heuristic")


def log(msg: str) -> None:
    print(f"[router] {msg}", file=sys.stderr, flush=True)


@dataclass
class Tally:
    recall: list[float] = field(default_factory=list)
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


def run(users: int, weeks: int, per_week: int, seed: int) -> dict[str, object]:
    data: Workload = generate(users, weeks, per_week, seed)
    log(f"{len(data.memories)} memories, {len(data.queries)} queries")
    with tempfile.TemporaryDirectory(prefix="pocketd-router-") as tmp:
        settings = load_settings(
            overrides={"server": {"data_dir": tmp}, "encoder": {"text": "none"}}
        )
        eng = build_engine(settings, None)
        wired = eng.planner  # the server's own router, with its decision log: closed below
        eng.load()
        try:
            for start in range(0, len(data.memories), 256):
                eng.remember(data.memories[start : start + 256])
            eng.indexer.catch_up()
            return measure(eng, settings.router, settings.memory, data)
        finally:
            eng.planner = wired
            eng.close()


def measure(
    eng: MemoryEngine, rs: RouterSettings, ms: MemorySettings, data: Workload
) -> dict[str, object]:
    routers = {
        p: Router(
            msgspec.structs.replace(rs, policy=p),
            ms,
            eng._keywords.analyze,
            eng.routable,
            eng._keywords.pocket_terms,
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
            router.decide(query, unit(q.vector), time.time())  # as the engine calls it
            tallies[p].decide_s.append(time.perf_counter() - t0)
            eng.planner = router
            t0 = time.perf_counter()
            results[p] = eng.recall(query)
            tallies[p].recall_s.append(time.perf_counter() - t0)
            eng.planner = None
        full = [h.record.key for h in results["full"].hits]
        for p, res in results.items():
            t = tallies[p]
            got = {h.record.key for h in res.hits}
            share = len(got & set(full)) / len(full) if full else 1.0
            t.recall.append(share)
            t.by_type.setdefault(q.type, []).append(share)
            t.cost += res.cost_units
            t.full_cost += results["full"].cost_units
            searched = {s.pocket for s in res.plan if s.method != "skipped"}
            t.covered.append(need <= searched)
            t.exact.append(need == searched)
            t.waste.append(len(searched - need) / len(searched) if searched else 0.0)
    out: dict[str, object] = {"environment": environment(), "policies": []}
    for p, t in tallies.items():
        out["policies"].append(  # type: ignore[attr-defined]
            {
                "policy": p,
                "recall_at_5": float(np.mean(t.recall)),
                "cost_share": t.cost / t.full_cost if t.full_cost else 1.0,
                "coverage": float(np.mean(t.covered)),
                "exact_match": float(np.mean(t.exact)),
                "waste": float(np.mean(t.waste)),
                "decision_p50_ms": summary_ms(t.decide_s)["p50_ms"],
                "decision_p99_ms": summary_ms(t.decide_s)["p99_ms"],
                "recall_p50_ms": summary_ms(t.recall_s)["p50_ms"],
                "recall_p99_ms": summary_ms(t.recall_s)["p99_ms"],
                "recall_at_5_by_type": {k: float(np.mean(v)) for k, v in t.by_type.items()},
            }
        )
    return out


def report(r: dict[str, object]) -> str:
    rows = [
        f"{'policy':<10} {'recall@5':>9} {'cost':>7} {'coverage':>9} {'exact':>7} {'waste':>7}"
        f" {'decide p50/p99 ms':>18} {'recall p50/p99 ms':>18}"
    ]
    for p in r["policies"]:  # type: ignore[attr-defined]
        rows.append(
            f"{p['policy']:<10} {p['recall_at_5']:>9.3f} {p['cost_share']:>7.3f}"
            f" {p['coverage']:>9.3f} {p['exact_match']:>7.3f} {p['waste']:>7.3f}"
            f" {p['decision_p50_ms']:>8.3f} / {p['decision_p99_ms']:<7.3f}"
            f" {p['recall_p50_ms']:>8.2f} / {p['recall_p99_ms']:<7.2f}"
        )
    rows.append("recall@5 against full, by query type:")
    for p in r["policies"]:  # type: ignore[attr-defined]
        by = p["recall_at_5_by_type"]
        rows.append(f"  {p['policy']:<10} " + "  ".join(f"{t} {by.get(t, 1.0):.3f}" for t in TYPES))
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
