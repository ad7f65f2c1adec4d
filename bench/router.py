"""`python -m bench router`: does store routing keep the answers, at what cost, against the labels.

The workload is `bench.routing_world` (see its docstring): users with the four stores of the
store-routing paper (the current session, profile facts, summaries of past conversations, raw
past transcripts), hard distractors (the same topic in several stores), and questions in English
and Chinese, each with its gold minimal store set and the memories that answer it, written blind
to the router's rules and examples. Templates are split into a tune half and a report half:
whole templates are held out. Every figure below is on the report half unless it says otherwise.

It runs in one process over one engine with the server's encoder (the query vectors are the
server's encodings of the question text), loaded as an agent would: the current session as a
session's turns (hot), the profile as facts and preferences, summaries as kind summary, the
transcripts as past sessions' turns. Per question and policy:
- the plan the router chooses (as Explain would show it), mapped to stores by the pockets'
  kind and tier; **coverage**: the gold stores are all in it; **store cost**: the paper's cost
  of the stores it holds (session 1, profile 1, summary 3, transcript 5);
- the Recall it runs: **recall@5** of the answer memories (their share in the top 5), and
  **answered@5** (one answer of every gold store in the top 5); pocketd's own cost in cost units
  and the wall time of the Recall, the routing decision included (the query's vector is encoded
  once, before any policy runs, and each policy reads it from the cache).

Rows: `full` (every store), the policies `heuristic`, `learned`, `hybrid` (learned and hybrid
use a model trained on the tune half's explored Recalls, as a server would learn it), `oracle`
(exactly the gold stores' pockets) and `regex` (a few template regular expressions, a trivial
router: every store one names, transcripts too for a pointer to the past). Coverage is also given
for the questions that need a store (small talk needs none, so every row covers it). Then the
curve: the heuristic's coverage and store cost against `router.skip_below`.
Goal (issue 16): hybrid's recall ≥ 0.98 of the oracle's at ≤ 1.3× its store cost, above regex.
`--json PATH` writes everything; `--quick` runs a small world; `--big N` adds a namespace of
about N transcript memories (approximate search).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import msgspec
import numpy as np

from bench.encoder import bench_encoder
from bench.routing_world import STORE_COST, Question, World, build
from bench.stats import environment, summary_ms
from server.adapters.model_store import ModelStore, ModelWatcher
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.onnx_policy import OnnxPocketModel
from server.app import build_engine
from server.config import load_settings
from server.core.engine import MemoryEngine
from server.core.memory.model import Kind, NewMemory, PlanStep, RecallQuery, RecallResult, Record
from server.core.query.plan import full_plan
from server.core.routing.inputs import LAYOUT, input_width
from server.core.routing.intents import store_of
from server.core.routing.mlp import TrainSettings
from server.core.routing.router import Decision, Router
from server.core.settings import Settings
from server.router_admin import train_model

POLICIES = ("full", "heuristic", "learned", "hybrid")
ROWS = (*POLICIES, "oracle", "regex")
# The router's store names are the paper's but "history" for past transcripts.
PAPER = {"session": "session", "profile": "profile", "summary": "summary", "history": "transcript"}
KINDS = {"episode": Kind.EPISODE, "fact": Kind.FACT, "preference": Kind.PREFERENCE,
         "summary": Kind.SUMMARY}  # fmt: skip
CURVE = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
TOP_K = 5
# The trivial router: a few regular expressions a developer would write for the templates.
REGEX = (
    ("session", re.compile(r"\b(just|a (moment|minute) ago|this (conversation|chat))\b|刚才|刚刚")),
    (
        "profile",
        re.compile(r"\b(what is my|what's my|my name|do i (like|prefer)|user's)\b|我叫|用户的"),
    ),
    (
        "summary",
        re.compile(
            r"\b(overall|summar\w*|in general|talked about|discuss\w*)\b|总结|聊了些什么|聊过"
        ),
    ),
)


def log(msg: str) -> None:
    print(f"[router] {msg}", file=sys.stderr, flush=True)


@dataclass
class Tally:
    covered: list[bool] = field(default_factory=list)
    needing: list[bool] = field(default_factory=list)  # covered, of the questions needing a store
    store_cost: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    answered: list[bool] = field(default_factory=list)
    units: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    decide_s: list[float] = field(default_factory=list)
    by_type: dict[str, list[bool]] = field(default_factory=dict)  # type → covered

    def summary(self) -> dict[str, object]:
        wall = summary_ms(self.wall_s) if self.wall_s else {"p50_ms": 0.0, "p99_ms": 0.0}
        decide = summary_ms(self.decide_s) if self.decide_s else {"p50_ms": 0.0, "p99_ms": 0.0}
        return {
            "questions": len(self.covered),
            "coverage": _mean(self.covered),
            "coverage_needing": _mean(self.needing),
            "store_cost": _mean(self.store_cost),
            "recall_at_5": _mean(self.recall),
            "answered_at_5": _mean(self.answered),
            "cost_units": _mean(self.units),
            "recall_p50_us": wall["p50_ms"] * 1000,
            "recall_p99_us": wall["p99_ms"] * 1000,
            "decision_p50_us": decide["p50_ms"] * 1000,
            "decision_p99_us": decide["p99_ms"] * 1000,
            "coverage_by_type": {k: _mean(v) for k, v in sorted(self.by_type.items())},
        }


def _mean(xs: Sequence[float] | Sequence[bool]) -> float:
    return float(np.mean(xs)) if len(xs) else 0.0


def settings_for(data: Path, **router: object) -> Settings:
    return load_settings(
        overrides={"server": {"data_dir": str(data)}, "router": router},
    )


def encoder() -> OnnxTextEncoder:
    """The benches' encoder (`bench_encoder`), as the engine's builder takes it."""
    enc = bench_encoder()
    assert isinstance(enc, OnnxTextEncoder)
    return enc


def load(eng: MemoryEngine, world: World, offset: float) -> None:
    """Every namespace's memories, event times shifted by `offset` (so that the world's `now` is
    the engine clock's), in batches."""
    items = [
        NewMemory(
            record=Record(
                memory_id=m.id,
                namespace=ns,
                kind=KINDS[m.kind],
                text=m.text,
                session_id=m.session_id,
                turn=m.turn,
                speaker=m.speaker,
                importance=3,
            ),
            vector=None,
            explicit_importance=3,
            client_memory_id=True,
            created_at=m.created_at + offset,
        )
        for ns, mems in world.memories.items()
        for m in sorted(mems, key=lambda m: m.created_at)
    ]
    t0 = time.perf_counter()
    for start in range(0, len(items), 256):
        eng.remember(items[start : start + 256])
        if (start // 256) % 40 == 0:
            log(f"loaded {start + 256 if start + 256 < len(items) else len(items)}/{len(items)}")
    eng.indexer.catch_up()
    log(f"loaded {len(items)} memories in {time.perf_counter() - t0:.1f} s")


def plan_stores(d: Decision) -> set[str]:
    stores = d.context.measures.stores
    index = {p.name: i for i, p in enumerate(d.context.pockets)}
    return {PAPER.get(stores[index[s.pocket]], "other") for s in d.steps if s.pocket in index}


def store_set_cost(stores: set[str]) -> float:
    return sum(STORE_COST.get(s, 0.0) for s in stores)


PAST = re.compile(
    r"\b(ago|before|back then|last (time|week|month)|previous\w*|earlier)\b|以前|之前|那阵子|当时"
)


def regex_stores(text: str) -> set[str]:
    """The trivial router: every store a regex names, transcripts too when the text points to
    the past, and transcripts alone when nothing matched."""
    low = text.lower()
    hit = {store for store, rx in REGEX if rx.search(low)}
    if PAST.search(low):
        hit.add("transcript")
    return hit or {"transcript"}


def score(
    t: Tally, q: Question, stores: set[str], res: RecallResult, answers: dict[str, str]
) -> None:
    covered = set(q.stores) <= stores
    t.covered.append(covered)
    if q.stores:
        t.needing.append(covered)
    t.by_type.setdefault(q.type, []).append(covered)
    t.store_cost.append(store_set_cost(stores))
    top = {h.record.memory_id for h in res.hits[:TOP_K]}
    if q.answers:
        t.recall.append(sum(a in top for a in q.answers) / len(q.answers))
        t.answered.append(
            all(any(a in top for a in q.answers if answers[a] == s) for s in q.stores)
        )
    t.units.append(res.cost_units)


def train(world: World, tmp: Path, enc: OnnxTextEncoder, offset: float) -> Path:
    """Explore the tune half's questions under the heuristic, train on the log, return the
    installed models' directory."""
    data = tmp / "train"
    s = settings_for(data, policy="heuristic", explore_share=1.0)
    eng = build_engine(s, enc)
    eng.load()
    router = eng.planner
    assert isinstance(router, Router)
    try:
        load(eng, world, offset)
        tune = [q for q in world.questions if q.half == "tune"]
        now = world.now + offset
        for i, q in enumerate(tune):
            eng.recall(RecallQuery(q.namespace, text=q.text, top_k=TOP_K, as_of=now))
            router.drain()
            if (i + 1) % 200 == 0:
                log(f"explored {i + 1}/{len(tune)}")
    finally:
        eng.close()
    train_model(s, None, 0.2, TrainSettings(), True, log)
    return data / "router" / "models"


def run(world: World, train_model_too: bool) -> dict[str, object]:
    enc = encoder()
    offset = time.time() - world.now
    with tempfile.TemporaryDirectory(prefix="pocketd-router-") as tmpdir:
        tmp = Path(tmpdir)
        models_dir = train(world, tmp, enc, offset) if train_model_too else None
        s = settings_for(tmp / "report", policy="heuristic")
        eng = build_engine(s, enc)
        eng.load()
        wired = eng.planner
        assert isinstance(wired, Router)
        models = (
            ModelWatcher(
                ModelStore(models_dir),
                partial(OnnxPocketModel, layout=LAYOUT, inputs=input_width(s.router.prefix_dim)),
                3600.0,
            )
            if models_dir is not None
            else None
        )
        try:
            load(eng, world, offset)
            return measure(eng, s, world, offset, models)
        finally:
            if models is not None:
                models.close()
            eng.planner = wired
            eng.close()


def routers(eng: MemoryEngine, s: Settings, models: ModelWatcher | None) -> dict[str, Router]:
    out = {}
    for p in POLICIES:
        r = Router(
            msgspec.structs.replace(s.router, policy=p),
            eng._s,
            eng._keywords.analyze,
            eng.routable,
            eng._keywords.pocket_terms,
            models=models,
            encode=eng.encode,
        )
        r.intents.warm()
        out[p] = r
    return out


def measure(
    eng: MemoryEngine, s: Settings, world: World, offset: float, models: ModelWatcher | None
) -> dict[str, object]:
    rs = routers(eng, s, models)
    wired = eng.planner
    answers = {m.id: m.store for mems in world.memories.values() for m in mems}
    now = world.now + offset
    halves = {h: [q for q in world.questions if q.half == h] for h in ("tune", "report")}
    encode_s: list[float] = []
    for q in world.questions:  # each question's vector, once, into the engine's cache
        t0 = time.perf_counter()
        eng.routing_vector(RecallQuery(q.namespace, text=q.text))
        encode_s.append(time.perf_counter() - t0)
    out: dict[str, object] = {"environment": environment(), "halves": {}}
    for half, questions in halves.items():
        tallies = {row: Tally() for row in ROWS}
        curve = {x: Tally() for x in CURVE}
        for i, q in enumerate(questions):
            query = RecallQuery(q.namespace, text=q.text, top_k=TOP_K, as_of=now)
            vector = eng.routing_vector(query)
            for p, router in rs.items():
                if p in ("learned", "hybrid") and models is None:
                    continue
                t0 = time.perf_counter()
                d = router.decide(query, vector, now)
                tallies[p].decide_s.append(time.perf_counter() - t0)
                eng.planner = router
                t0 = time.perf_counter()
                res = eng.recall(msgspec.structs.replace(query))
                tallies[p].wall_s.append(time.perf_counter() - t0)
                score(tallies[p], q, plan_stores(d), res, answers)
                if p == "heuristic":
                    for x in CURVE:
                        dx = router.choose(
                            dataclasses.replace(d.context, skip_below=x), q.namespace, p
                        )
                        curve[x].covered.append(set(q.stores) <= plan_stores(dx))
                        curve[x].store_cost.append(store_set_cost(plan_stores(dx)))
                        curve[x].units.append(dx.cost_units)
            eng.planner = None
            for row, stores in (("oracle", set(q.stores)), ("regex", regex_stores(q.text))):
                steps = pockets_of(eng, q.namespace, stores)
                t0 = time.perf_counter()
                res = eng.recall(msgspec.structs.replace(query, plan=steps, early_stop=bool(steps)))
                tallies[row].wall_s.append(time.perf_counter() - t0)
                score(tallies[row], q, stores, res, answers)
            if (i + 1) % 100 == 0:
                log(f"{half}: {i + 1}/{len(questions)} questions")
        out["halves"][half] = {  # type: ignore[index]
            "rows": {row: t.summary() for row, t in tallies.items() if t.covered},
            "curve": [
                {
                    "skip_below": x,
                    "coverage": _mean(t.covered),
                    "store_cost": _mean(t.store_cost),
                    "cost_units": _mean(t.units),
                }
                for x, t in curve.items()
            ],
        }
    eng.planner = wired
    for r in rs.values():
        r.close()
    out["encode"] = summary_ms(encode_s)
    out["world"] = {
        "namespaces": len(world.memories),
        "memories": sum(len(m) for m in world.memories.values()),
        "largest_namespace": max(len(m) for m in world.memories.values()),
        "questions": {h: len(qs) for h, qs in halves.items()},
    }
    return out


def pockets_of(eng: MemoryEngine, ns: str, stores: set[str]) -> list[PlanStep]:
    """THE plan's steps over the pockets of `stores` (the oracle's and the regex row's plans)."""
    pockets = [
        p for p in eng.routable(ns, RecallQuery(ns).filter)
        if PAPER.get(store_of(p.kind, p.tier), "other") in stores
    ]  # fmt: skip
    return full_plan(pockets, eng._s.hybrid_search.candidates_per_channel, TOP_K)


def report(r: dict[str, object]) -> str:
    lines = []
    w = r["world"]
    lines.append(f"world: {w}")  # type: ignore[str-bytes-safe]
    for half, h in r["halves"].items():  # type: ignore[attr-defined]
        lines.append(f"\n{half} half")
        lines.append(
            f"{'row':<10} {'coverage':>8} {'(needing)':>9} {'stores':>7} {'recall@5':>8}"
            f" {'answered':>8}"
            f" {'units':>9} {'recall p50/p99 µs':>18} {'decide p50/p99 µs':>18}"
        )
        for row, x in h["rows"].items():
            lines.append(
                f"{row:<10} {x['coverage']:>8.3f} {x['coverage_needing']:>9.3f}"
                f" {x['store_cost']:>7.2f} {x['recall_at_5']:>8.3f}"
                f" {x['answered_at_5']:>8.3f} {x['cost_units']:>9.0f}"
                f" {x['recall_p50_us']:>8.0f} / {x['recall_p99_us']:<8.0f}"
                f" {x['decision_p50_us']:>8.0f} / {x['decision_p99_us']:<8.0f}"
            )
        lines.append("coverage by type:")
        for row, x in h["rows"].items():
            lines.append(
                f"  {row:<10} "
                + "  ".join(f"{k} {v:.2f}" for k, v in x["coverage_by_type"].items())
            )
        lines.append(
            "heuristic against skip_below: (skip_below, coverage, store cost, estimated units:"
            " the plan's vector steps, not the keyword channel the rows' units include)"
        )
        lines.append(
            "  "
            + "  ".join(
                f"({c['skip_below']:.2f} {c['coverage']:.3f} {c['store_cost']:.2f}"
                f" {c['cost_units']:.0f})"
                for c in h["curve"]
            )
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench router", description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--questions", type=int, default=40, help="questions per user")
    ap.add_argument("--big", type=int, default=0, help="add a namespace of about N transcripts")
    ap.add_argument("--no-train", action="store_true", help="skip learned and hybrid")
    ap.add_argument("--quick", action="store_true", help="a small world (about two minutes)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ns = ap.parse_args(argv)
    if ns.quick:
        ns.users, ns.questions = 6, 30
    t0 = time.perf_counter()
    world = build(seed=ns.seed, users=ns.users, questions_per_user=ns.questions, big=ns.big)
    log(f"world built in {time.perf_counter() - t0:.1f} s")
    r = run(world, not ns.no_train)
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=2, ensure_ascii=False) + "\n")
    return 0
