"""`python -m bench soak`: mixed traffic from several tenants, for a long time, against a real
`pocketd serve` with auth on (`make soak`: 30 minutes).

Three tenants, each with its own token, send Remember (upserts over a fixed set of ids, so the
stored state stops growing once the ids are used), Recall, Step (a task of 40 rounds, then the
next task; its memories forgotten now and then) and Reserve + Commit, with the texts and
questions of MemoryBank (`../shared/data/memorybank`, Chinese and English; a generator if it is
missing). First every id is stored once (RememberBatch) and indexed, so that the capacity is
measured on the state the soak keeps rather than on an empty store or a busy indexer; then the
capacity is measured closed-loop (`--calibrate` seconds, `--workers` concurrent calls, after a
sixth of that thrown away as warm-up), then the soak runs open-loop
at `--load` (0.8) of it: calls are started on a fixed schedule whatever the answers do, so a
server that slows down queues them (and shows it in p99) instead of being offered less. Every
`--every` seconds it records the calls, the errors by status, p50/p99 of every call (a failed
one too), the server's RSS and the indexer's backlog; the calls still in flight at the end are
waited for and make a last row; then it measures the capacity again. Goal (issue 17), checked
by `verdict` (exit 1 if missed): 30 minutes, no errors (calibrating included), RSS growth after
the warm-up (the first `--warmup` share of the run) under 5 % by the medians of the ends and by
the trend, and the schedule kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import yaml
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from bench.server_proc import ServerProcess
from bench.stats import environment, pct, rss_mb
from pocketd.requests import open_channel
from pocketd.v1 import agent_service_pb2 as apb
from pocketd.v1 import agent_service_pb2_grpc as apb_grpc
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api.auth import token_sha256

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "memorybank"
TENANTS = ("acme", "globex", "initech")
IDS_PER_NAMESPACE = 500
NAMESPACES = 4  # per tenant, each with its IDS_PER_NAMESPACE ids
PREFILL_BATCH = 100
PREFILL_TIMEOUT_S = 120.0
ROUNDS_PER_TASK = 40
SLOTS = 8  # agent loops per tenant, each running one Step at a time
TOOLS = {"search": lpb.ToolBudget(cost_per_call_micros=50)}
MIX = (("remember", 0.30), ("recall", 0.35), ("step", 0.20), ("ledger", 0.15))
CUMULATIVE = tuple(
    (name, sum(share for _, share in MIX[: i + 1])) for i, (name, _) in enumerate(MIX)
)
TIMEOUT_S = 10.0
EDGE = 3  # rows at each end of the soak whose median RSS the growth compares
GOAL_MINUTES = 30.0  # the soak; a shorter run is a smoke run, never "goal met"
GOAL_GROWTH_PCT = 5.0
REACHED_SHARE = 0.97  # the calls started must reach this share of rate × time
INDEX_POLL_S = 5.0
REPLY_TTL_S = 300
OPERATOR = "soak-operator-token-0123456789"  # an admin token: the rows' index figures


def texts() -> tuple[list[str], list[str]]:
    """Memories and questions: MemoryBank's, else generated ones."""
    try:
        from bench.memorybank import load

        bank = load(DATA)
        turns = [t.text for c in bank.corpora.values() for t in c.turns if t.text.strip()]
        probes = [p.text for c in bank.corpora.values() for p in c.probes]
        if turns and probes:
            return turns, probes
    except (OSError, ValueError, KeyError):
        pass
    rng = random.Random(0)
    words = [
        "order",
        "invoice",
        "refund",
        "boiler",
        "garden",
        "ticket",
        "deploy",
        "cluster",
        "email",
        "phone",
    ]
    made = [" ".join(rng.choices(words, k=12)) for _ in range(2000)]
    return made, [" ".join(rng.choices(words, k=5)) for _ in range(200)]


@dataclass
class Slot:
    """One of a tenant's agent loops: its task and round, one Step at a time."""

    number: int
    task: int = 0
    round: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class Tenant:
    name: str
    token: str
    channel: grpc.aio.Channel
    memory: spb_grpc.MemoryServiceStub
    ledger: lpb_grpc.LedgerServiceStub
    agent: apb_grpc.AgentServiceStub
    slots: list[Slot] = field(default_factory=lambda: [Slot(n) for n in range(SLOTS)])
    ops: int = 0


@dataclass
class Window:
    """What one reporting interval saw."""

    calls: int = 0
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    by_op: Counter[str] = field(default_factory=Counter)
    max_pending: int = 0  # the most records acknowledged and not yet indexed, sampled


class Traffic:
    def __init__(self, tenants: list[Tenant], memories: list[str], questions: list[str]) -> None:
        self.tenants = tenants
        self.memories = memories
        self.questions = questions
        self.rng = random.Random(7)
        self.window = Window()
        self.in_flight = 0

    async def open_tasks(self) -> None:
        budget = lpb.TaskBudget(total_micros=10**15, emergency_ratio=0.1, tools=TOOLS)
        for t in self.tenants:
            await t.ledger.OpenTask(  # the ledger calls' own task, never closed
                lpb.OpenTaskRequest(task_id="ledger", namespace="agent", budget=budget),
                timeout=TIMEOUT_S,
            )
            for slot in t.slots:
                await self._next_task(t, slot)

    async def _next_task(self, t: Tenant, slot: Slot) -> None:
        slot.task += 1
        slot.round = 0
        budget = lpb.TaskBudget(total_micros=10**12, emergency_ratio=0.1)
        await t.ledger.OpenTask(
            lpb.OpenTaskRequest(task_id=_task(slot), namespace="agent", budget=budget),
            timeout=TIMEOUT_S,
        )

    async def prefill(self) -> None:
        """Store every id Remember will upsert, so that the capacity is measured on the state
        the soak keeps (the stored records stop growing once the ids are used)."""
        for t in self.tenants:
            for n in range(NAMESPACES):
                for start in range(0, IDS_PER_NAMESPACE, PREFILL_BATCH):
                    items = [
                        spb.RememberRequest(
                            record=self._record(f"ns{n}", f"m{i}"),
                            hints=spb.WriteHints(remember=True),
                        )
                        for i in range(start, min(start + PREFILL_BATCH, IDS_PER_NAMESPACE))
                    ]
                    await t.memory.RememberBatch(
                        spb.RememberBatchRequest(items=items), timeout=PREFILL_TIMEOUT_S
                    )

    def _record(self, ns: str, mid: str) -> pb.MemoryRecord:
        return pb.MemoryRecord(
            namespace=ns,
            memory_id=mid,
            text=self.rng.choice(self.memories),
            kind=pb.MEMORY_KIND_FACT,
        )

    async def one(self) -> None:
        """One call of the mix, timed and counted."""
        t = self.rng.choice(self.tenants)
        r = self.rng.random()
        op = next((name for name, share in CUMULATIVE if r < share), "ledger")
        t0 = time.perf_counter()
        self.in_flight += 1
        try:
            await getattr(self, op)(t)
            self.window.ok += 1
        except grpc.aio.AioRpcError as e:
            self.window.errors[f"{op}:{e.code().name}{_subject(e)}"] += 1
        except Exception as e:  # a bug of the bench or the client: counted, never hidden
            self.window.errors[f"{op}:{type(e).__name__}"] += 1
        finally:
            # Every call's time, a failed one's too: a call that waited for its 10 s
            # deadline belongs in p99.
            self.window.latencies.append(time.perf_counter() - t0)
            self.in_flight -= 1
            self.window.calls += 1
            self.window.by_op[op] += 1

    async def remember(self, t: Tenant) -> None:
        ns = f"ns{self.rng.randrange(NAMESPACES)}"
        rec = self._record(ns, f"m{self.rng.randrange(IDS_PER_NAMESPACE)}")
        await t.memory.Remember(
            spb.RememberRequest(record=rec, hints=spb.WriteHints(remember=True)), timeout=TIMEOUT_S
        )

    async def recall(self, t: Tenant) -> None:
        req = spb.RecallRequest(
            namespace=f"ns{self.rng.randrange(NAMESPACES)}",
            query_text=self.rng.choice(self.questions),
        )
        await t.memory.Recall(req, timeout=TIMEOUT_S)

    async def step(self, t: Tenant) -> None:
        free = [s for s in t.slots if not s.lock.locked()]
        slot = self.rng.choice(free or t.slots)
        async with slot.lock:
            if slot.round >= ROUNDS_PER_TASK:
                await t.ledger.CloseTask(
                    lpb.CloseTaskRequest(task_id=_task(slot), idempotency_key="close"),
                    timeout=TIMEOUT_S,
                )
                if slot.task % 5 == 0 and slot.number == 0:  # the loops' memories: bounded
                    await t.memory.Forget(
                        spb.ForgetRequest(namespace="agent", filter=spb.MemoryFilter(), all=True),
                        timeout=TIMEOUT_S,
                    )
                await self._next_task(t, slot)
            slot.round += 1
            use = apb.ModelUsage(model="fast_small_model", input_tokens=800, output_tokens=90)
            await t.agent.Step(
                apb.StepRequest(
                    task_id=_task(slot),
                    round=slot.round,
                    goal="Help the user with their account and their orders",
                    input=self.rng.choice(self.questions),
                    previous_action_json='{"type":"tool","tool":"search","params":{"q":"x"}}',
                    observation=self.rng.choice(self.memories),
                    usage=[use],
                    idempotency_key=f"s{slot.task}-{slot.round}",
                ),
                timeout=TIMEOUT_S,
            )

    async def ledger(self, t: Tenant) -> None:
        t.ops += 1
        n = t.ops
        r = await t.ledger.Reserve(
            lpb.ReserveRequest(
                task_id="ledger",
                round=1,
                kind=lpb.SPEND_KIND_TOOL_CALL,
                tool="search",
                idempotency_key=f"r{n}",
            ),
            timeout=TIMEOUT_S,
        )
        await t.ledger.Commit(
            lpb.CommitRequest(
                task_id="ledger",
                reservation_id=r.reservation_id,
                actual_micros=40,
                idempotency_key=f"c{n}",
            ),
            timeout=TIMEOUT_S,
        )

    def take(self) -> Window:
        w, self.window = self.window, Window()
        return w


def _subject(e: grpc.aio.AioRpcError) -> str:
    """The QuotaFailure's subject of a RESOURCE_EXHAUSTED (which bound refused the call)."""
    status = rpc_status.from_call(e)  # type: ignore[arg-type]
    for d in [] if status is None else status.details:
        if d.Is(error_details_pb2.QuotaFailure.DESCRIPTOR):
            q = error_details_pb2.QuotaFailure()
            d.Unpack(q)
            return "".join(f" ({v.subject})" for v in q.violations)
    return ""


def _task(slot: Slot) -> str:
    return f"task-{slot.number}-{slot.task}"


def machine_probe() -> float:
    """Seconds a fixed piece of pure-Python work takes in the bench's process, the best of
    three: on shared cores the machine's speed changes from hour to hour, and the capacity
    with it."""
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i * i % 7
        best = min(best, time.perf_counter() - t0)
    return best


async def calibrate(traffic: Traffic, seconds: float, workers: int) -> tuple[float, Counter[str]]:
    """Successful calls per second, closed-loop with `workers` calls in flight, and the
    errors seen meanwhile (at a closed loop of a few calls none is expected)."""
    stop = time.monotonic() + seconds

    async def worker() -> None:
        while time.monotonic() < stop:
            await traffic.one()

    t0 = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(workers)))
    w = traffic.take()
    return w.ok / (time.monotonic() - t0), w.errors


async def settle_index(operator: spb_grpc.MemoryServiceStub, limit_s: float = 600.0) -> float:
    """Wait until the indexer has every acknowledged record (an admin's Stats), so that the
    capacity is not measured while the prefill is still being indexed; the seconds it took."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        r = await operator.Stats(spb.StatsRequest(), timeout=TIMEOUT_S)
        if r.index.pending == 0:
            break
        await asyncio.sleep(0.5)
    return time.monotonic() - t0


async def watch_index(traffic: Traffic, operator: spb_grpc.MemoryServiceStub) -> None:
    """Sample the indexer's backlog (an admin's Stats) into the current window, until cancelled."""
    while True:
        try:
            r = await operator.Stats(spb.StatsRequest(), timeout=TIMEOUT_S)
            traffic.window.max_pending = max(traffic.window.max_pending, r.index.pending)
        except grpc.aio.AioRpcError as e:
            print(f"[soak] Stats: {e.code().name}", file=sys.stderr, flush=True)
        await asyncio.sleep(INDEX_POLL_S)


def _print_row(r: dict[str, Any]) -> None:
    print(
        f"[soak] {r['t_s']:6.0f}s  {r['calls_per_s']:6.1f}/s  p50 {r['p50_ms']:6.1f} ms"
        f"  p99 {r['p99_ms']:7.1f} ms  errors {r['errors']}  RSS {r['rss_mb']:.0f} MiB"
        f" (anon {r.get('anon_mb', 0):.0f})  unindexed ≤{r['max_pending']}",
        file=sys.stderr,
        flush=True,
    )


async def soak(
    traffic: Traffic,
    pid: int,
    rate: float,
    seconds: float,
    every: float,
    operator: spb_grpc.MemoryServiceStub,
) -> tuple[list[dict[str, Any]], int]:
    """Start calls at `rate` per second for `seconds`; one row per `every` seconds, and a last
    one for the calls still in flight at the end (they are waited for, never dropped).
    Returns the rows and the number of calls started."""
    rows: list[dict[str, Any]] = []
    tasks: set[asyncio.Task[None]] = set()
    watcher = asyncio.ensure_future(watch_index(traffic, operator))
    t0 = time.monotonic()
    next_report = t0 + every
    n = 0
    while (now := time.monotonic()) < t0 + seconds:
        due = t0 + n / rate
        if due > now:
            await asyncio.sleep(min(due - now, next_report - now, 0.05))
        else:
            task = asyncio.ensure_future(traffic.one())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            n += 1
        if time.monotonic() >= next_report:
            rows.append(_row(traffic.take(), pid, time.monotonic() - t0, every, traffic.in_flight))
            _print_row(rows[-1])
            next_report += every
    last = next_report - every
    await asyncio.gather(*tasks)  # `one` catches every error: these only finish
    watcher.cancel()
    await asyncio.gather(watcher, return_exceptions=True)
    tail = traffic.take()
    if tail.calls:
        now = time.monotonic()
        rows.append(_row(tail, pid, now - t0, max(now - last, 1e-3), traffic.in_flight))
        rows[-1]["tail"] = True  # calls started earlier: no rate of its own, no RSS sample
        _print_row(rows[-1])
    return rows, n


def _row(w: Window, pid: int, t: float, every: float, in_flight: int) -> dict[str, Any]:
    ms = [x * 1000 for x in w.latencies]
    return {
        "t_s": round(t),
        "calls": w.calls,
        "calls_per_s": round(w.calls / every, 1),
        "seconds": round(every, 1),
        "p50_ms": round(pct(ms, 50), 1),
        "p99_ms": round(pct(ms, 99), 1),
        "errors": sum(w.errors.values()),
        "error_codes": dict(w.errors),
        "in_flight": in_flight,
        "max_pending": w.max_pending,
        **{k: round(v, 1) for k, v in rss_mb(pid).items() if k != "peak_rss_mb"},
        "by_op": dict(w.by_op),
    }


def summary(rows: list[dict[str, Any]], warmup: float) -> dict[str, Any]:
    """The goals' figures. RSS moves by tens of MiB from one sample to the next (allocator
    arenas, mapped index files), so growth compares the median of the first `EDGE` rows after
    the warm-up with that of the last `EDGE`; the least-squares trend, projected over the same
    span, is reported beside it, and the goal takes the larger of the two, so neither a lucky
    last sample nor a steady climb hidden by the medians passes."""
    sampled = [r for r in rows if not r.get("tail")]
    after = sampled[int(len(sampled) * warmup) :] or sampled[-1:]
    edge = max(1, min(EDGE, len(after) // 2))
    span_s = after[-1]["t_s"] - after[0]["t_s"]

    def growth(key: str) -> tuple[float, float, float]:
        first = pct([r[key] for r in after[:edge]], 50)
        last = pct([r[key] for r in after[-edge:]], 50)
        return round(first, 1), round(last, 1), round(100.0 * (last - first) / first, 2)

    def slope(key: str) -> float:  # MiB per 10 minutes
        if len(after) < 2:
            return 0.0
        t = np.array([r["t_s"] for r in after], dtype=np.float64)
        y = np.array([r[key] for r in after], dtype=np.float64)
        return round(float(np.polyfit(t, y, 1)[0]) * 600.0, 1)

    first, last, pct_rss = growth("rss_mb")
    trend = slope("rss_mb")
    p99 = np.array([r["p99_ms"] for r in after], dtype=np.float64)
    out = {
        "rss_after_warmup_mb": first,
        "rss_end_mb": last,
        "rss_growth_pct": pct_rss,
        "rss_trend_mb_per_10min": trend,
        "rss_trend_growth_pct": round(100.0 * trend * span_s / 600.0 / first, 2),
        "errors": sum(r["errors"] for r in rows),
        "calls": sum(r["calls"] for r in rows),
        "rows_without_latency": int(np.isnan(p99).sum()),
        "worst_p99_ms": float(np.nanmax(p99)) if not np.isnan(p99).all() else math.nan,
        "median_p99_ms": round(float(np.nanmedian(p99)), 1)
        if not np.isnan(p99).all()
        else math.nan,
    }
    if all("anon_mb" in r for r in after):
        a_first, a_last, a_pct = growth("anon_mb")
        out.update(
            anon_after_warmup_mb=a_first,
            anon_end_mb=a_last,
            anon_growth_pct=a_pct,
            anon_trend_mb_per_10min=slope("anon_mb"),
        )
    return out


def verdict(out: dict[str, Any]) -> list[str]:
    """What keeps the run from meeting the goal (issue 17); empty: met."""
    s = out["summary"]
    why = []
    if out["minutes"] < GOAL_MINUTES:
        why.append(f"a {out['minutes']:g}-minute run (the goal is {GOAL_MINUTES:g} minutes)")
    if s["errors"] or out["calibration_errors"]:
        why.append(f"{s['errors']} errors, {sum(out['calibration_errors'].values())} calibrating")
    growth = max(s["rss_growth_pct"], s["rss_trend_growth_pct"])
    if growth >= GOAL_GROWTH_PCT:
        why.append(f"RSS grew {growth:.2f} % (by the medians or the trend)")
    if s["rows_without_latency"]:
        why.append(f"{s['rows_without_latency']} rows without a call")
    if out["calls_started"] < REACHED_SHARE * out["rate_calls_per_s"] * out["minutes"] * 60.0:
        why.append(f"only {out['calls_started']} calls started: the bench fell behind its rate")
    if out["exit_code"] != 0:
        why.append(f"the server exited {out['exit_code']}")
    return why


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| t (s) | calls/s | p50 ms | p99 ms | errors | RSS MiB | anon MiB | unindexed ≤ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t, rate = ("end", "–") if r.get("tail") else (r["t_s"], r["calls_per_s"])
        out.append(
            f"| {t} | {rate} | {r['p50_ms']} | {r['p99_ms']} |"
            f" {r['errors']} | {r['rss_mb']} | {r.get('anon_mb', '')} | {r['max_pending']} |"
        )
    return "\n".join(out)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    memories, questions = texts()
    tokens = {name: f"soak-{name}-token-0123456789" for name in TENANTS}
    with tempfile.TemporaryDirectory(prefix="pocketd-soak-") as tmp:
        cfg = Path(tmp) / "pocketd.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "auth": {
                        "tokens": [
                            {"tenant": name, "sha256": token_sha256(token)}
                            for name, token in tokens.items()
                        ]
                        + [{"tenant": "ops", "sha256": token_sha256(OPERATOR), "admin": True}]
                    },
                    # The ledger's stored replies are pruned within the soak, not after a day.
                    "ledger": {"reply_ttl_seconds": REPLY_TTL_S},
                }
            )
        )
        proc = ServerProcess(Path(tmp) / "data", config=cfg)
        try:
            proc.wait_serving(timeout=300)
            tenants = [tenant(proc.target, name, token) for name, token in tokens.items()]
            ops = open_channel(proc.target, 16 << 20, OPERATOR, None, sync=False)
            operator = spb_grpc.MemoryServiceStub(ops)  # type: ignore[no-untyped-call]
            traffic = Traffic(tenants, memories, questions)
            await traffic.open_tasks()
            print("[soak] storing every id once", file=sys.stderr, flush=True)
            await traffic.prefill()
            settled_s = await settle_index(operator)
            print(f"[soak] indexed in {settled_s:.0f} s", file=sys.stderr, flush=True)
            probe_start = machine_probe()
            print(f"[soak] calibrating for {args.calibrate:.0f} s", file=sys.stderr, flush=True)
            # A short run first, thrown away: the first calls of each kind pay for caches and
            # compiled code that the soak then no longer pays for.
            _, calibration_errors = await calibrate(traffic, args.calibrate / 6, args.workers)
            capacity, errors = await calibrate(traffic, args.calibrate, args.workers)
            calibration_errors += errors
            rate = capacity * args.load
            print(
                f"[soak] capacity {capacity:.1f} calls/s; soaking at {rate:.1f}/s for"
                f" {args.minutes:g} min",
                file=sys.stderr,
                flush=True,
            )
            rows, started = await soak(
                traffic, proc.pid, rate, args.minutes * 60.0, args.every, operator
            )
            # The capacity again, on the state the soak left: a server that got slower shows
            # here, and so does a machine that did (the probe, timed at both ends).
            print("[soak] measuring the capacity again", file=sys.stderr, flush=True)
            probe_end = machine_probe()
            capacity_end, errors = await calibrate(traffic, args.calibrate / 2, args.workers)
            calibration_errors += errors
            peak = rss_mb(proc.pid)["peak_rss_mb"]
            for t in tenants:
                await t.channel.close()
            await ops.close()
        finally:
            code = proc.stop()
            warnings = [line.rstrip() for line in proc.log if " WARNING " in line]
            if args.server_log:
                args.server_log.parent.mkdir(parents=True, exist_ok=True)
                args.server_log.write_text("".join(proc.log))
        return {
            "capacity_calls_per_s": round(capacity, 1),
            "capacity_end_calls_per_s": round(capacity_end, 1),
            "probe_ms": [round(probe_start * 1000, 1), round(probe_end * 1000, 1)],
            "rate_calls_per_s": round(rate, 1),
            "calls_started": started,
            "calibration_errors": dict(calibration_errors),
            "index_settled_s": round(settled_s, 1),
            "peak_rss_mb": round(peak, 1),
            "load": args.load,
            "minutes": args.minutes,
            "workers": args.workers,
            "exit_code": code,
            "server_warnings": len(warnings),
            "server_warning_sample": warnings[:5] + warnings[-5:],
            "summary": summary(rows, args.warmup),
            "rows": rows,
            "environment": environment(),
        }


def tenant(target: str, name: str, token: str) -> Tenant:
    """A tenant's channel with its token, and the three stubs on it."""
    channel = open_channel(target, 16 << 20, token, None, sync=False)
    return Tenant(
        name,
        token,
        channel,
        spb_grpc.MemoryServiceStub(channel),  # type: ignore[no-untyped-call]
        lpb_grpc.LedgerServiceStub(channel),  # type: ignore[no-untyped-call]
        apb_grpc.AgentServiceStub(channel),  # type: ignore[no-untyped-call]
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--calibrate", type=float, default=60.0, help="seconds of closed-loop load")
    ap.add_argument("--workers", type=int, default=8, help="calls in flight while calibrating")
    ap.add_argument("--load", type=float, default=0.8, help="share of the capacity to soak at")
    ap.add_argument("--every", type=float, default=60.0, help="seconds per reported row")
    ap.add_argument("--warmup", type=float, default=0.2, help="share of the rows that warm up")
    ap.add_argument("--json", type=Path, help="write the result here")
    ap.add_argument("--server-log", type=Path, help="write the server's whole log here")
    args = ap.parse_args(argv)
    out = asyncio.run(run(args))
    out["verdict"] = verdict(out)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
    s = out["summary"]
    print(table(out["rows"]))
    print(
        f"\ncapacity {out['capacity_calls_per_s']}/s, soaked at {out['rate_calls_per_s']}/s,"
        f" capacity after {out['capacity_end_calls_per_s']}/s (probe {out['probe_ms'][0]} →"
        f" {out['probe_ms'][1]} ms); RSS {s['rss_after_warmup_mb']} → {s['rss_end_mb']} MiB"
        f" after warm-up ({s['rss_growth_pct']:+.2f} %, trend {s['rss_trend_mb_per_10min']:+}"
        f" MiB/10 min = {s['rss_trend_growth_pct']:+.2f} %; anon"
        f" {s.get('anon_growth_pct', 0.0):+.2f} %), peak {out['peak_rss_mb']} MiB;"
        f" {s['calls']} calls, {s['errors']} errors (calibrating:"
        f" {sum(out['calibration_errors'].values())}); p99 median {s['median_p99_ms']} ms,"
        f" worst {s['worst_p99_ms']} ms"
    )
    why = out["verdict"]
    print("goal met" if not why else "goal not met: " + "; ".join(why))
    return 0 if not why else 1
