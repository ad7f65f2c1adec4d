"""`python -m bench lifecycle [--days 180] [--seed 29] [--json PATH] [--memorybank PATH]
[--set KEY=VALUE]`: a simulated user per language over months of agent use
(`bench.lifecycle_world`: sessions of turns, facts and preferences stated and changing, questions
asked), run twice on the same world:

- `without`: no maintenance run;
- `with`: a maintenance run (`Maintain`: idle session ends, expiry, topic compression, retention
  moves to cold) at the end of every simulated day.

Both rows have the frequent maintenance tick (the access statistics flush, idle session ends,
hot → warm tier moves, the columns' checkpoint), run by the bench itself (not on a timer): before
each session and at each midnight, on the simulated clock. Nothing else differs: one in-process
engine per row over real stores in its own temporary directory (`server.app.assemble_engine`, the
built-in encoder, the default memory settings but for the scheduled run, which the bench makes
instead, and any `--set`, given to both rows), on a clock the bench moves. Every text and
question is encoded once, outside every timing, and given to the engine as its vector: both rows
see the same vectors, and a Recall's time is its search's.

Every 30 simulated days, and at the end, after the indexes have caught up (`bench.lifecycle_score`
defines the quality figures; both languages pooled in the table, each in the JSON):
- size: records in the hot, warm and cold tiers; vectors in the warm pockets' indexes and in the
  cold archive; obsolete records; warm summaries; records past `expires_at` still held;
- quality, asked with shadow Recalls (not counted as accesses, so that measuring does not change
  what is measured) of the top 10 with `min_score` 0: recall@5 of what holds now (a summary
  standing for it counts), the same when its words must be in the hit, stale answers (and those
  a summary gave), past questions;
- maintenance time: the runs since the last checkpoint (p50, max).
At the end: Recall p50/p99, the wall time of `engine.recall` over every question with an answer
then (both languages, `REPEATS` timed passes after an untimed one, counted as accesses), the rows
taking turns question by question so that a busy machine slows them alike.

`--json PATH` writes {"days", "seed", "settings", "environment", "world", "rows": {row:
{"checkpoints": [{"day", "sizes", "quality": {"all"|lang: {figure: value}}, "maintenance"}],
"recall", "maintenance", "decisions", "took_s"}}}.
"""

from __future__ import annotations

# onnxruntime first: importing usearch and tantivy before it can crash its import.
from server.adapters.onnx_encoder import OnnxTextEncoder  # isort: skip

import argparse
import contextlib
import json
import math
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from bench.encoder import bench_encoder
from bench.lifecycle_score import DEPTH, FIGURES, Rankings, figures, holdings, spread_ms
from bench.lifecycle_world import (
    CATEGORIES,
    DAY,
    LANGS,
    MEMORYBANK,
    Probe,
    Session,
    Sources,
    TopicOf,
    World,
    build,
    load_sources,
    probes,
)
from bench.stats import environment
from server.adapters.columns_file import ColumnsFile
from server.adapters.journal_file import JournalFile
from server.adapters.sqlite_store import SqliteRecordStore
from server.adapters.tantivy_index import TantivyKeywordIndex
from server.adapters.usearch_index import UsearchIndexSet
from server.app import LifecycleAdapters, assemble_engine, open_vectors, thresholds_of
from server.core.deadline import no_deadline
from server.core.engine import MemoryEngine
from server.core.errors import NotFoundError
from server.core.memory.model import (
    GateDecision,
    Kind,
    NewMemory,
    RecallQuery,
    Record,
    Tier,
    Vector,
    units,
)
from server.core.memory.state.sessions import MemoryHotSessions
from server.core.settings import MemorySettings, resolve_thresholds

ROWS = ("without", "with")
CHECKPOINT_DAYS = 30
REPEATS = 2  # timed passes over the fixed question set
INDEX_WAIT_S = 300.0
ENCODE_CHUNK = 256
KINDS = {"episode": Kind.EPISODE, "fact": Kind.FACT, "preference": Kind.PREFERENCE}
Vectors = dict[str, Vector]  # text → its unit vector


def log(msg: str) -> None:
    print(f"[lifecycle] {msg}", file=sys.stderr, flush=True)


def namespace(lang: str) -> str:
    return f"life-{lang}"


class SimClock:
    """The simulated time: set by the bench, never going back."""

    def __init__(self, now: float) -> None:
        self.t = now

    def now(self) -> float:
        return self.t

    def to(self, t: float) -> None:
        self.t = max(self.t, t)


def settings(overrides: Mapping[str, str] | None = None) -> MemorySettings:
    """The defaults with `overrides` (dotted keys under `memory.`, e.g.
    `write_policy.expire_after_days`: a JSON value, else a string), the scheduled maintenance
    off (the `with` row runs it each simulated day) and the frequent tick's timer as long as it
    goes (the bench ticks on the simulated clock). KeyError names an unknown key."""
    tree: dict[str, Any] = msgspec.to_builtins(MemorySettings())
    for key, raw in (overrides or {}).items():
        *path, last = key.split(".")
        node = tree
        for part in path:
            node = node[part] if isinstance(node.get(part), dict) else {}
        if last not in node:
            raise KeyError(f"memory.{key}")
        try:
            node[last] = json.loads(raw)
        except json.JSONDecodeError:
            node[last] = raw
    tree["access_flush_seconds"] = 3600.0
    tree["lifecycle"]["maintenance"]["enabled"] = False
    return msgspec.convert(tree, MemorySettings, strict=False)


@dataclass
class Opened:
    engine: MemoryEngine
    vectors: UsearchIndexSet
    clock: SimClock


def open_engine(
    data: Path, encoder: OnnxTextEncoder, clock: SimClock, memory: MemorySettings
) -> Opened:
    """An engine over real stores in `data`, as `pocketd serve` builds one but on `clock`."""
    s = resolve_thresholds(memory, thresholds_of(encoder))
    vectors = open_vectors(data, s)
    eng = assemble_engine(
        s,
        SqliteRecordStore(data / "records.sqlite3", s.index.record_cache_bytes),
        vectors,
        TantivyKeywordIndex(
            data / "keywords", s.index.keyword_heap_bytes, s.index.keyword_term_cache
        ),
        encoder,
        clock,
        ColumnsFile(data / "columns"),
        lifecycle=LifecycleAdapters(
            MemoryHotSessions(clock), None, JournalFile(data / "maintenance.journal")
        ),
    )
    eng.load()
    return Opened(eng, vectors, clock)


def encode_all(encoder: OnnxTextEncoder, texts: Sequence[str]) -> Vectors:
    uniq = list(dict.fromkeys(texts))
    out: Vectors = {}
    for start in range(0, len(uniq), ENCODE_CHUNK):
        part = uniq[start : start + ENCODE_CHUNK]
        out.update(zip(part, units(encoder.encode(part)), strict=True))
    return out


def nearest_category(encoder: OnnxTextEncoder) -> TopicOf:
    """An agent's topic tag: the nearest of `CATEGORIES` by the encoder's cosine."""
    cats = units(encoder.encode(list(CATEGORIES)))

    def topic_of(texts: Sequence[str]) -> list[str]:
        if not texts:
            return []
        sims = units(encoder.encode(list(texts))) @ cats.T
        return [CATEGORIES[i] for i in np.argmax(sims, axis=1).tolist()]

    return topic_of


@dataclass
class Row:
    """What one row measured."""

    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    recall: dict[str, float] = field(default_factory=dict)
    maintenance: dict[str, Any] = field(default_factory=dict)
    decisions: dict[str, int] = field(default_factory=dict)
    took_s: float = 0.0


class Run:
    """One row: the world written, asked and maintained day by day on one engine."""

    def __init__(self, world: World, vecs: Vectors, maintain: bool, opened: Opened) -> None:
        self.world, self.vecs, self.maintain = world, vecs, maintain
        self.eng, self.vectors, self.clock = opened.engine, opened.vectors, opened.clock
        self.owner: dict[str, str] = {}  # memory id → the item whose words it holds
        self.decisions: Counter[str] = Counter()
        self.maint_s: list[float] = []
        self.reports: Counter[str] = Counter()
        self.row = Row()

    def go(self) -> Row:
        t0 = time.perf_counter()
        by_day: dict[int, list[Session]] = {}
        for s in self.world.sessions:
            by_day.setdefault(int((s.start - self.world.start) // DAY), []).append(s)
        since = 0
        for day in range(self.world.days):
            for s in by_day.get(day, []):
                self.session(s)
            self.clock.to(self.world.day_end(day))
            self.eng.maintenance.run_once()
            if self.maintain:
                t = time.perf_counter()
                rep = self.eng.maintain("", no_deadline())
                self.maint_s.append(time.perf_counter() - t)
                self.reports.update(
                    {k: v for k, v in msgspec.structs.asdict(rep).items() if k != "took_micros"}
                )
            if (day + 1) % CHECKPOINT_DAYS == 0 or day + 1 == self.world.days:
                self.row.checkpoints.append(self.checkpoint(day + 1, self.maint_s[since:]))
                since = len(self.maint_s)
                log(f"  day {day + 1}: {_brief(self.row.checkpoints[-1])}")
        self.row.maintenance = {**spread_ms(self.maint_s), **dict(self.reports)}
        self.row.decisions = dict(self.decisions)
        self.row.took_s = time.perf_counter() - t0
        return self.row

    def session(self, s: Session) -> None:
        self.clock.to(s.start)
        self.eng.maintenance.run_once()  # the frequent tick: idle sessions end, hot moves
        ns = namespace(s.lang)
        for x in s.said:
            self.clock.to(x.at)
            rec = Record(
                memory_id="",
                namespace=ns,
                kind=KINDS[x.kind],
                session_id=s.session_id,
                text=x.text,
                topic=x.topic,
                expires_at=x.expires_at,
                speaker=x.speaker,
            )
            got = self.eng.remember([NewMemory(rec, self.vecs[x.text], created_at=x.at)])[0]
            self.decisions[got.decision.name.lower()] += 1
            if got.decision != GateDecision.REJECTED:
                self.owner[got.memory_id] = x.item
        self.clock.to(s.end + 60.0)
        for p in s.asks:
            self.eng.recall(self.query(p))
        if s.explicit_end:
            with contextlib.suppress(NotFoundError):  # every turn refused by the gate
                self.eng.end_session(ns, s.session_id, no_deadline())

    def query(self, p: Probe) -> RecallQuery:
        return RecallQuery(
            namespace=namespace(p.lang),
            text=p.text,
            vector=self.vecs[p.text],
            top_k=DEPTH,
            min_score=0.0,
            include_obsolete=p.include_obsolete,
        )

    def wait_indexed(self) -> None:
        deadline = time.monotonic() + INDEX_WAIT_S
        while (st := self.eng.index_state()).indexed_rev < st.head_rev:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the indexes did not catch up in {INDEX_WAIT_S:.0f} s")
            self.eng.indexer.wake()
            time.sleep(0.01)

    def rankings(self, ps: Sequence[Probe]) -> Rankings:
        """Each question asked as a shadow Recall (not an access): what each hit holds."""
        out = Rankings()
        for p in ps:
            hits = self.eng.recall(self.query(p), shadow=True).hits
            held = [
                holdings(
                    h.record.memory_id,
                    h.record.derived_from,
                    h.record.text,
                    self.owner,
                    self.world.texts,
                )
                for h in hits
            ]
            out.linked[p.key] = [a for a, _ in held]
            out.text[p.key] = [b for _, b in held]
            out.summary[p.key] = [h.record.kind == Kind.SUMMARY for h in hits]
        return out

    def checkpoint(self, day: int, maint_s: list[float]) -> dict[str, Any]:
        self.wait_indexed()
        now = self.clock.now()
        sizes: Counter[str] = Counter()
        quality: dict[str, dict[str, float]] = {}
        asked: list[Probe] = []
        every = Rankings()
        for lang in LANGS:
            sizes.update(self.sizes(namespace(lang), now))
            ps = probes(self.world, lang, now)
            got = self.rankings(ps)
            quality[lang] = figures(ps, got)
            asked += ps
            every.update(got)
        quality["all"] = figures(asked, every)
        return {
            "day": day,
            "sizes": dict(sizes),
            "quality": quality,
            "maintenance": spread_ms(maint_s),
        }

    def sizes(self, ns: str, now: float) -> dict[str, int]:
        """Records per tier, obsolete, warm summaries, expired still held, and the vectors in
        the namespace's warm and cold indexes."""
        c = self.eng.columns
        ns_id = c.ns_id(ns)
        if ns_id < 0:
            return {}
        n = len(c.ns)
        live = c.ns[:n] == ns_id
        tier = c.tier[:n]
        out = {
            "hot records": int(np.count_nonzero(live & (tier == int(Tier.HOT)))),
            "warm records": int(np.count_nonzero(live & (tier == int(Tier.WARM)))),
            "cold records": int(np.count_nonzero(live & (tier == int(Tier.COLD)))),
            "obsolete": int(np.count_nonzero(live & c.obsolete[:n])),
            "warm summaries": int(
                np.count_nonzero(live & (tier == int(Tier.WARM)) & (c.kind[:n] == Kind.SUMMARY))
            ),
            "expired held": int(np.count_nonzero(live & (c.expires[:n] <= now))),
            "warm vectors": 0,
            "cold vectors": 0,
        }
        for pocket, index in self.vectors.partitions(ns).items():
            tier_name = pocket.split("/")[1]
            if tier_name in ("warm", "cold"):
                out[f"{tier_name} vectors"] += len(index)
        return out


def _brief(cp: dict[str, Any]) -> str:
    s, q = cp["sizes"], cp["quality"]["all"]
    return (
        f"warm {s.get('warm records', 0)} records / {s.get('warm vectors', 0)} vectors, cold"
        f" {s.get('cold records', 0)}; recall@5 {q['recall@5']:.3f}, stale {q['stale']:.3f}"
    )


def world_of(src: Sources, days: int, seed: int, encoder: OnnxTextEncoder) -> World:
    return build(src, days, seed, nearest_category(encoder))


def texts_of(world: World) -> list[str]:
    """Every text written or asked in `world` (what is encoded once for both rows)."""
    out = [x.text for s in world.sessions for x in s.said]
    end = world.start + world.days * DAY
    for lang in LANGS:
        out += [p.text for p in probes(world, lang, end)]
    return out


def run_rows(
    world: World,
    encoder: OnnxTextEncoder,
    memory: MemorySettings | None = None,
    rows: Sequence[str] = ROWS,
) -> dict[str, Row]:
    """Each row over its own engine and data directory, then every row's Recall timed."""
    memory = memory or settings()
    t0 = time.perf_counter()
    vecs = encode_all(encoder, texts_of(world))
    log(f"{len(vecs)} texts encoded in {time.perf_counter() - t0:.1f} s")
    runs: dict[str, Run] = {}
    with contextlib.ExitStack() as stack:
        for row in rows:
            log(f"{row} maintenance:")
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="pocketd-lifecycle-"))
            opened = open_engine(Path(tmp), encoder, SimClock(world.start), memory)
            stack.callback(opened.engine.close)
            runs[row] = Run(world, vecs, row == "with", opened)
            runs[row].go()
            log(f"  {row}: {runs[row].row.took_s:.0f} s")
        names = list(runs)
        for i, ms in timed([runs[n] for n in names]).items():
            runs[names[i]].row.recall = ms
    return {row: r.row for row, r in runs.items()}


def timed(runs: Sequence[Run]) -> dict[int, dict[str, float]]:
    """Each run's Recall wall time over every question with an answer at the end, after one
    untimed pass; the runs take turns question by question (in alternating order), so that
    whatever else loads the machine slows them alike."""
    for r in runs:
        r.wait_indexed()
    end = runs[0].clock.now()
    ps = [p for lang in LANGS for p in probes(runs[0].world, lang, end)]
    samples: dict[int, list[float]] = {i: [] for i in range(len(runs))}
    for n in range(REPEATS + 1):
        for j, p in enumerate(ps):
            order = list(range(len(runs)))
            if (n + j) % 2:
                order.reverse()
            for i in order:
                q = runs[i].query(p)
                t = time.perf_counter()
                runs[i].eng.recall(q)
                if n:  # the first pass only warms
                    samples[i].append(time.perf_counter() - t)
    return {i: spread_ms(s) for i, s in samples.items()}


def describe(world: World) -> dict[str, int]:
    return {
        "sessions": len(world.sessions),
        "ended by EndSession": sum(s.explicit_end for s in world.sessions),
        "turns": world.count("episode"),
        "facts": world.count("fact"),
        "preferences": world.count("preference"),
        "with expires_at": sum(
            1 for s in world.sessions for x in s.said if x.expires_at is not None
        ),
        "asked while used": sum(len(s.asks) for s in world.sessions),
    }


COLUMNS = (  # (header, where, key, format)
    ("warm rec", "sizes", "warm records", "d"),
    ("warm vec", "sizes", "warm vectors", "d"),
    ("cold rec", "sizes", "cold records", "d"),
    ("cold vec", "sizes", "cold vectors", "d"),
    ("hot", "sizes", "hot records", "d"),
    ("obsolete", "sizes", "obsolete", "d"),
    ("summ", "sizes", "warm summaries", "d"),
    ("expired", "sizes", "expired held", "d"),
    ("r@5", "quality", "recall@5", ".3f"),
    ("r@5 text", "quality", "recall@5 text", ".3f"),
    ("stale", "quality", "stale", ".3f"),
    ("by summ", "quality", "stale via summary", ".3f"),
    ("past@5", "quality", "past@5", ".3f"),
    ("maint p50", "maintenance", "p50_ms", ".0f"),
    ("maint max", "maintenance", "max_ms", ".0f"),
)


def _cell(cp: dict[str, Any], where: str, key: str, fmt: str) -> str:
    value = cp[where]["all"][key] if where == "quality" else cp[where].get(key, 0)
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return format(value, fmt)


def table(world: World, rows: dict[str, Row], overrides: Mapping[str, str]) -> str:
    widths = [max(len(h), 5) + 2 for h, *_ in COLUMNS]
    head = f"{'day':>4} {'row':<8}" + "".join(
        f"{h:>{w}}" for (h, *_), w in zip(COLUMNS, widths, strict=True)
    )
    lines = [
        f"{world.days} days, seed {world.seed}, settings {dict(overrides) or 'default'}; both"
        f" languages pooled: {describe(world)}",
        head,
    ]
    n = max(len(r.checkpoints) for r in rows.values())
    for i in range(n):
        for name, r in rows.items():
            if i < len(r.checkpoints):
                cp = r.checkpoints[i]
                lines.append(
                    f"{cp['day']:>4} {name:<8}"
                    + "".join(
                        f"{_cell(cp, where, k, f):>{w}}"
                        for (_, where, k, f), w in zip(COLUMNS, widths, strict=True)
                    )
                )
    lines.append("")
    last = {name: r.checkpoints[-1]["quality"] for name, r in rows.items() if r.checkpoints}
    for lang in LANGS:
        lines.append(
            f"at the end, {lang}: "
            + "; ".join(
                f"{name} " + ", ".join(f"{f} {q[lang][f]:.3f}" for f in FIGURES)
                for name, q in last.items()
            )
        )
    for name, r in rows.items():
        rc, m = r.recall, r.maintenance
        counts = {k: v for k, v in m.items() if not k.endswith("_ms") and k != "n" and v}
        lines.append(
            f"{name}: Recall p50 {rc['p50_ms']:.2f} ms, p99 {rc['p99_ms']:.2f} ms over"
            f" {int(rc['n'])} Recalls; maintenance {int(m['n'])} runs, p50 {m['p50_ms']:.0f} ms,"
            f" max {m['max_ms']:.0f} ms, {counts}; writes {r.decisions}; {r.took_s:.0f} s"
        )
    return "\n".join(lines)


def _finite(value: Any) -> Any:
    """`value` with NaN (a figure with nothing to count) as None: strict JSON."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench lifecycle",
        description="months of simulated agent use, with daily maintenance and without",
    )
    ap.add_argument("--days", type=int, default=180, help="simulated days (default 180)")
    ap.add_argument("--seed", type=int, default=29, help="the world's seed (default 29)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--memorybank", type=Path, default=MEMORYBANK, help="the MemoryBank data")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a memory setting for both rows, e.g. write_policy.expire_after_days=365",
    )
    ns = ap.parse_args(argv)
    if ns.days < 1:
        ap.error("--days must be at least 1")
    pairs = [item.split("=", 1) for item in ns.set]
    if any(len(pair) != 2 or not pair[0] for pair in pairs):
        ap.error("--set takes KEY=VALUE")
    ns.settings = {k.removeprefix("memory."): v for k, v in pairs}
    try:
        ns.memory = settings(ns.settings)
    except (KeyError, msgspec.ValidationError) as exc:
        ap.error(f"--set: {exc}")
    return ns


def main(argv: Sequence[str]) -> int:
    ns = parse(argv)
    t0 = time.perf_counter()
    enc = bench_encoder()
    assert isinstance(enc, OnnxTextEncoder)
    world = world_of(load_sources(ns.memorybank), ns.days, ns.seed, enc)
    log(f"world: {describe(world)}")
    rows = run_rows(world, enc, ns.memory)
    print(table(world, rows, ns.settings))
    log(f"done in {time.perf_counter() - t0:.0f} s")
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        out = {
            "days": ns.days,
            "seed": ns.seed,
            "settings": ns.settings,
            "environment": environment(),
            "world": describe(world),
            "rows": {name: _finite(asdict(r)) for name, r in rows.items()},
        }
        ns.json.write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0
