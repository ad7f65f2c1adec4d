"""`python -m bench router`: does store routing keep the answers, at what cost, against the labels.

The workload is `bench.routing_world` (see its docstring): users with the four stores of the
store-routing paper (the current session, profile facts, summaries of past conversations, raw
past transcripts), hard distractors (the same topic in several stores), and questions in English
and Chinese, each with its gold minimal store set and the memories that answer it. Three
question sets over the same world, every row scored on each:
- **blind** (the headline): the templates of `bench/data/routing_questions_blind.json`, written
  from the task description alone, never seen by whoever wrote the router's cue lists, examples
  or the baselines below (those were committed before the file was read);
- **report**: the old report half of `bench/data/routing_questions.json` (whole templates held
  out of tuning, but the cue lists' authors could read their wordings: 70 % hold a cue phrase);
- **tune**: the half every fitted row was fitted on (for the gap).
Each set is also reported on its **cue-free** questions: those holding no phrase of any of the
router's cue lists (`router_cues.CueScan`).

It runs in one process over one engine with the server's encoder (the query vectors are the
server's encodings of the question text), loaded as an agent would: the current session as a
session's turns (hot), the profile as facts and preferences, summaries as kind summary, the
transcripts as past sessions' turns. Per question and row:
- the stores it searches (a policy's plan, as Explain would show it, mapped to stores by the
  pockets' kind and tier); **coverage**: the gold stores are all in it; **store cost**: the
  paper's cost of the stores it holds (`STORE_COST`: session 1, profile 1, summary 3,
  transcript 5), the same for every row;
- the Recall it runs: **recall@5** of the answer memories (their share in the top 5), and
  **answered@5** (one answer of every gold store in the top 5); pocketd's own cost in cost units
  and the wall time of the Recall, the routing decision included (the query's vector is encoded
  once, before any row runs, and each policy reads it from the cache).

Rows: `full` (every store), pocketd's policies `heuristic`, `learned`, `hybrid` (learned and
hybrid use a model trained on the tune half's explored Recalls, as a server would learn it),
`oracle` (exactly the gold stores' pockets) and the baselines (`router_baselines`), each fitted
or chosen on the tune half for the same coverage target: `cue_rule`, the trivial row (pocketd's
own cue lists as a rule: each store one of whose cue families fires, a fixed default
otherwise), `supervised` (a logistic regression per store on hashed word and character n-grams,
no pocketd code), and `regex`, the old trivial row (a few template regular expressions). The
oracle and the baselines run the plan over their stores' pockets. Coverage is also given for the
questions that need a store (small talk needs none, so every row covers it). Then each set's
curves, printed as curves: the heuristic's coverage and store cost against `router.skip_below`,
the supervised row's against its threshold. Nothing is chosen from them: the heuristic runs at
the shipped `skip_below`, and the supervised row at the regularisation and threshold that
cross-validation on the tune half chose (`router_supervised.choose`; each C's best pair is
printed with it).
Goal (issue 16): hybrid's recall ≥ 0.98 of the oracle's at ≤ 1.3× its store cost, above the
trivial row.
`--json PATH` writes everything; `--quick` runs a small world; `--big N` adds a namespace of
about N transcript memories (approximate search); `--no-blind` leaves the blind set out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt

from bench.encoder import bench_encoder
from bench.router_baselines import ROWS as BASELINE_ROWS
from bench.router_baselines import TARGET, Baselines
from bench.router_baselines import fit as fit_baselines
from bench.router_cues import CueScan
from bench.router_supervised import chosen
from bench.routing_world import Question, World, build, store_cost
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
ROWS = (*POLICIES, "oracle", *BASELINE_ROWS)
SPLITS = ("all", "cue_free")
BLIND = Path(__file__).parent / "data" / "routing_questions_blind.json"
SET_LABELS = {
    "blind": "blind report set (the same world, templates written blind; the headline)",
    "report": "old report half (templates the cue lists' authors could read)",
    "tune": "tune half (what every fitted row was fitted on)",
}
# The router's store names are the paper's but "history" for past transcripts.
PAPER = {"session": "session", "profile": "profile", "summary": "summary", "history": "transcript"}
KINDS = {"episode": Kind.EPISODE, "fact": Kind.FACT, "preference": Kind.PREFERENCE,
         "summary": Kind.SUMMARY}  # fmt: skip
CURVE = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
# The supervised row's threshold over the span of its grid (`router_supervised.THRESHOLDS`).
SUPERVISED_CURVE = (1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 0.3, 0.5)
TOP_K = 5


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
    texts: list[str] = field(default_factory=list)  # the questions, in order
    picked: list[frozenset[str]] = field(default_factory=list)  # the stores each one searched

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


def score(
    t: Tally,
    q: Question,
    stores: set[str],
    res: RecallResult,
    answers: dict[str, str],
    decide_s: float | None,
    wall_s: float,
) -> None:
    """One row's figures for one question: coverage and store cost of the stores it chose, the
    Recall's recall@5, answered@5 and cost units, and the times (`decide_s` None: no decision)."""
    covered = set(q.stores) <= stores
    t.texts.append(q.text)
    t.picked.append(frozenset(stores))
    t.covered.append(covered)
    if q.stores:
        t.needing.append(covered)
    t.by_type.setdefault(q.type, []).append(covered)
    t.store_cost.append(store_cost(stores))
    top = {h.record.memory_id for h in res.hits[:TOP_K]}
    if q.answers:
        t.recall.append(sum(a in top for a in q.answers) / len(q.answers))
        t.answered.append(
            all(any(a in top for a in q.answers if answers[a] == s) for s in q.stores)
        )
    t.units.append(res.cost_units)
    t.wall_s.append(wall_s)
    if decide_s is not None:
        t.decide_s.append(decide_s)


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


def question_sets(world: World, blind: World | None) -> dict[str, list[Question]]:
    """The question sets every row is scored on, the headline first: the blind report set (the
    same world asked with `blind`'s templates), the old report half, and the tune half."""
    if blind is not None and blind.memories != world.memories:
        raise ValueError("the blind questions must be asked of the same world")
    out = {"blind": list(blind.questions)} if blind is not None else {}
    for half in ("report", "tune"):
        out[half] = [q for q in world.questions if q.half == half]
    return out


def run(world: World, blind: World | None, train_model_too: bool) -> dict[str, object]:
    enc = encoder()
    offset = time.time() - world.now
    sets = question_sets(world, blind)
    with tempfile.TemporaryDirectory(prefix="pocketd-router-") as tmpdir:
        tmp = Path(tmpdir)
        models_dir = train(world, tmp, enc, offset) if train_model_too else None
        s = settings_for(tmp / "report", policy="heuristic")
        t0 = time.perf_counter()
        base = fit_baselines(sets["tune"], s.router)
        log(f"baselines fitted on the tune half in {time.perf_counter() - t0:.1f} s")
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
            return measure(eng, s, world, sets, offset, models, base)
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


@dataclass
class Board:
    """The tallies of one question set, or of its cue-free questions."""

    rows: dict[str, Tally] = field(default_factory=lambda: {row: Tally() for row in ROWS})
    curve: dict[float, Tally] = field(default_factory=lambda: {x: Tally() for x in CURVE})
    supervised: dict[float, Tally] = field(
        default_factory=lambda: {x: Tally() for x in SUPERVISED_CURVE}
    )

    def summary(self) -> dict[str, object]:
        return {
            "rows": {row: t.summary() for row, t in self.rows.items() if t.covered},
            "curve": [
                {
                    "skip_below": x,
                    "coverage": _mean(t.covered),
                    "store_cost": _mean(t.store_cost),
                    "cost_units": _mean(t.units),
                }
                for x, t in self.curve.items()
            ],
            "supervised_curve": [
                {"threshold": x, "coverage": _mean(t.covered), "store_cost": _mean(t.store_cost)}
                for x, t in self.supervised.items()
            ],
        }


def point(t: Tally, q: Question, stores: set[str], units: float = 0.0) -> None:
    """A curve's point: coverage and store cost of one plan, without its Recall."""
    t.covered.append(set(q.stores) <= stores)
    t.store_cost.append(store_cost(stores))
    t.units.append(units)


def run_policies(
    eng: MemoryEngine,
    rs: dict[str, Router],
    trained: bool,
    q: Question,
    query: RecallQuery,
    vector: npt.NDArray[np.float32] | None,
    now: float,
    on: list[Board],
    answers: dict[str, str],
) -> None:
    """pocketd's policies on one question: each decides, then runs the Recall as the server
    would (the engine's planner set to it); the heuristic's curve from its decision."""
    for p, router in rs.items():
        if p in ("learned", "hybrid") and not trained:
            continue
        t0 = time.perf_counter()
        d = router.decide(query, vector, now)
        decide_s = time.perf_counter() - t0
        eng.planner = router
        t0 = time.perf_counter()
        res = eng.recall(msgspec.structs.replace(query))
        wall_s = time.perf_counter() - t0
        for b in on:
            score(b.rows[p], q, plan_stores(d), res, answers, decide_s, wall_s)
        if p == "heuristic":
            for x in CURVE:
                dx = router.choose(dataclasses.replace(d.context, skip_below=x), q.namespace, p)
                for b in on:
                    point(b.curve[x], q, plan_stores(dx), dx.cost_units)


def run_fixed(
    eng: MemoryEngine,
    base: Baselines,
    q: Question,
    query: RecallQuery,
    on: list[Board],
    answers: dict[str, str],
) -> None:
    """The rows that name their stores (the oracle, the baselines) on one question: each runs
    the plan over its stores' pockets, early stop as a routed plan has it; then the supervised
    row's curve."""
    fixed: dict[str, tuple[set[str], float | None]] = {
        "oracle": (set(q.stores), None),
        **base.decide(q.text),
    }
    for row, (stores, decide_s) in fixed.items():
        steps = pockets_of(eng, q.namespace, stores)
        t0 = time.perf_counter()
        res = eng.recall(msgspec.structs.replace(query, plan=steps, early_stop=bool(steps)))
        wall_s = time.perf_counter() - t0
        for b in on:
            score(b.rows[row], q, stores, res, answers, decide_s, wall_s)
    probs = base.model.probabilities([q.text])
    for x in SUPERVISED_CURVE:
        for b in on:
            point(b.supervised[x], q, chosen(probs, x)[0])


def score_sets(
    eng: MemoryEngine,
    rs: dict[str, Router],
    trained: bool,
    world: World,
    sets: dict[str, list[Question]],
    offset: float,
    base: Baselines,
    scan: CueScan,
) -> dict[str, dict[str, Board]]:
    """Every row on every question of every set: each question's figures go to its set's
    board and, when it holds none of the router's cue phrases, to the set's cue-free board."""
    answers = {m.id: m.store for mems in world.memories.values() for m in mems}
    now = world.now + offset
    wired = eng.planner
    out: dict[str, dict[str, Board]] = {}
    try:
        for name, questions in sets.items():
            boards = out[name] = {split: Board() for split in SPLITS}
            for i, q in enumerate(questions):
                on = [boards["all"]] + ([] if scan.has_cue(q.text) else [boards["cue_free"]])
                query = RecallQuery(q.namespace, text=q.text, top_k=TOP_K, as_of=now)
                vector = eng.routing_vector(query)
                run_policies(eng, rs, trained, q, query, vector, now, on, answers)
                eng.planner = None
                run_fixed(eng, base, q, query, on, answers)
                if (i + 1) % 100 == 0:
                    log(f"{name}: {i + 1}/{len(questions)} questions")
    finally:
        eng.planner = wired
    return out


def measure(
    eng: MemoryEngine,
    s: Settings,
    world: World,
    sets: dict[str, list[Question]],
    offset: float,
    models: ModelWatcher | None,
    base: Baselines,
) -> dict[str, object]:
    """`score_sets` with every policy, summarised."""
    scan = CueScan(s.router)
    encode_s: list[float] = []
    for q in (q for qs in sets.values() for q in qs):  # each vector, once, into the engine's cache
        t0 = time.perf_counter()
        eng.routing_vector(RecallQuery(q.namespace, text=q.text))
        encode_s.append(time.perf_counter() - t0)
    rs = routers(eng, s, models)
    try:
        boards = score_sets(eng, rs, models is not None, world, sets, offset, base, scan)
    finally:
        for r in rs.values():
            r.close()
    return {
        "environment": environment(),
        "sets": {
            name: {
                "label": SET_LABELS[name],
                "questions": len(sets[name]),
                **{split: b.summary() for split, b in by.items()},
            }
            for name, by in boards.items()
        },
        "encode": summary_ms(encode_s),
        "baselines": {
            "target_coverage": TARGET,
            "cue_rule_default": sorted(base.rule.default),
            "supervised": dataclasses.asdict(base.choice),
        },
        "world": {
            "namespaces": len(world.memories),
            "memories": sum(len(m) for m in world.memories.values()),
            "largest_namespace": max(len(m) for m in world.memories.values()),
            "questions": {name: len(qs) for name, qs in sets.items()},
            "cue_free": {n: sum(not scan.has_cue(q.text) for q in qs) for n, qs in sets.items()},
        },
    }


def pockets_of(eng: MemoryEngine, ns: str, stores: set[str]) -> list[PlanStep]:
    """THE plan's steps over the pockets of `stores` (the oracle's and the regex row's plans)."""
    pockets = [
        p for p in eng.routable(ns, RecallQuery(ns).filter)
        if PAPER.get(store_of(p.kind, p.tier), "other") in stores
    ]  # fmt: skip
    return full_plan(pockets, eng._s.hybrid_search.candidates_per_channel, TOP_K)


def table(split: dict[str, object]) -> list[str]:
    lines = [
        f"{'row':<10} {'coverage':>8} {'(needing)':>9} {'stores':>7} {'recall@5':>8}"
        f" {'answered':>8} {'units':>9} {'recall p50/p99 µs':>18} {'decide p50/p99 µs':>18}"
    ]
    for row, x in split["rows"].items():  # type: ignore[attr-defined]
        lines.append(
            f"{row:<10} {x['coverage']:>8.3f} {x['coverage_needing']:>9.3f}"
            f" {x['store_cost']:>7.2f} {x['recall_at_5']:>8.3f}"
            f" {x['answered_at_5']:>8.3f} {x['cost_units']:>9.0f}"
            f" {x['recall_p50_us']:>8.0f} / {x['recall_p99_us']:<8.0f}"
            f" {x['decision_p50_us']:>8.0f} / {x['decision_p99_us']:<8.0f}"
        )
    return lines


def curves(split: dict[str, object]) -> list[str]:
    heuristic = "  ".join(
        f"({c['skip_below']:.2f} {c['coverage']:.3f} {c['store_cost']:.2f} {c['cost_units']:.0f})"
        for c in split["curve"]  # type: ignore[attr-defined]
    )
    points = [
        f"({c['threshold']:g} {c['coverage']:.3f} {c['store_cost']:.2f})"
        for c in split["supervised_curve"]  # type: ignore[attr-defined]
    ]
    return [
        "curves on this set (read as curves; no value was chosen from them):",
        "heuristic against skip_below: (skip_below, coverage, store cost, estimated units: the"
        " plan's vector steps, not the keyword channel the rows' units include)",
        f"  {heuristic}",
        "supervised (its chosen C) against its threshold: (threshold, coverage, store cost)",
        *("  " + "  ".join(points[i : i + 7]) for i in range(0, len(points), 7)),
    ]


def choice_lines(b: dict[str, object]) -> list[str]:
    """The baselines' choices, made on the tune half alone, with each C's best pair."""
    sup = dict(b["supervised"])  # type: ignore[call-overload]
    by_c = sup.pop("by_c")
    return [
        f"baselines (chosen on the tune half alone): {dict(b, supervised=sup)}",
        "supervised, each C's cheapest threshold reaching the target, held out on the tune half:"
        " (C, threshold, coverage, store cost)",
        *(
            "  " + "  ".join(f"({c:g} {t:g} {cov:.3f} {cost:.2f})" for c, t, cov, cost in row)
            for row in (by_c[i : i + 5] for i in range(0, len(by_c), 5))
        ),
    ]


def report(r: dict[str, object]) -> str:
    w, b = r["world"], r["baselines"]
    lines = [f"world: {w}", *choice_lines(b)]  # type: ignore[arg-type]
    for name, st in r["sets"].items():  # type: ignore[attr-defined]
        cue_free = w["cue_free"][name]  # type: ignore[index]
        for split, what in (
            ("all", f"all {st['questions']} questions"),
            ("cue_free", f"the {cue_free} holding none of the router's cue phrases"),
        ):
            lines.append(f"\n{st['label']}: {what}")
            lines += table(st[split])
            if split == "all":
                lines.append("coverage by type:")
                for row, x in st[split]["rows"].items():
                    lines.append(
                        f"  {row:<10} "
                        + "  ".join(f"{k} {v:.2f}" for k, v in x["coverage_by_type"].items())
                    )
            lines += curves(st[split])
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench router", description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--questions", type=int, default=40, help="questions per user")
    ap.add_argument("--big", type=int, default=0, help="add a namespace of about N transcripts")
    ap.add_argument("--blind", type=Path, default=BLIND, help="the blind report set's templates")
    ap.add_argument("--no-blind", action="store_true", help="leave the blind report set out")
    ap.add_argument("--no-train", action="store_true", help="skip learned and hybrid")
    ap.add_argument("--quick", action="store_true", help="a small world (about two minutes)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ns = ap.parse_args(argv)
    if ns.quick:
        ns.users, ns.questions = 6, 30
    t0 = time.perf_counter()
    size = {"seed": ns.seed, "users": ns.users, "questions_per_user": ns.questions, "big": ns.big}
    world = build(**size)
    blind = None if ns.no_blind else build(**size, templates=ns.blind)
    log(f"world built in {time.perf_counter() - t0:.1f} s")
    r = run(world, blind, not ns.no_train)
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=2, ensure_ascii=False) + "\n")
    return 0
