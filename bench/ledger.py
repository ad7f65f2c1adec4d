"""`python -m bench ledger`: the budget ledger under concurrent load, against a real server.

A `pocketd serve` process (its `max_concurrent_calls` raised so that every call is admitted)
gets `--calls` Reserve calls (10,000 by default, 10× the test) from `--clients` gRPC channels
(16), each keeping `--in-flight` calls (64) outstanding, so about 1,000 are in flight at any
time, all against one task whose budget fits only part of them. (With all 10,000 issued at
once, grpc's server cancels a share of them before they reach pocketd, on this machine from
about 1,500 in flight; the ledger never sees those.) It then checks the final
balance: the granted holds add up to what Status says is held, which is within the budget, and
every call that fitted was granted. It reports the throughput, the p50/p99 latency of a Reserve,
and then of a sequential Reserve + Commit pair (the agent loop's own pattern, one durable
transaction each).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import grpc

from bench.server_proc import ServerProcess
from bench.stats import environment, summary_ms
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc

AMOUNT = 97
M = lpb.SPEND_KIND_MODEL_INPUT_TOKENS


def log(msg: str) -> None:
    print(f"[ledger] {msg}", file=sys.stderr, flush=True)


async def storm(
    target: str, calls: int, clients: int, fits: int, in_flight: int
) -> dict[str, object]:
    channels = [grpc.aio.insecure_channel(target) for _ in range(clients)]
    stubs = [lpb_grpc.LedgerServiceStub(ch) for ch in channels]  # type: ignore[no-untyped-call]
    await stubs[0].OpenTask(
        lpb.OpenTaskRequest(
            task_id="storm",
            namespace="bench",
            budget=lpb.TaskBudget(total_micros=fits * AMOUNT, emergency_ratio=0.0),
        )
    )
    latencies: list[float] = []
    gates = [asyncio.Semaphore(in_flight) for _ in range(clients)]

    async def one(i: int) -> int:
        async with gates[i % clients]:
            return await call(i)

    async def call(i: int) -> int:
        req = lpb.ReserveRequest(
            task_id="storm", round=1, kind=M, estimate_micros=AMOUNT, idempotency_key=f"k{i}"
        )
        t0 = time.perf_counter()
        try:
            r = await stubs[i % clients].Reserve(req, timeout=600)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            return 0
        finally:
            latencies.append(time.perf_counter() - t0)
        amount: int = r.amount_micros
        return amount

    t0 = time.perf_counter()
    granted = await asyncio.gather(*(one(i) for i in range(calls)))
    wall = time.perf_counter() - t0
    st = await stubs[0].Status(lpb.TaskStatusRequest(task_id="storm"))
    for ch in channels:
        await ch.close()
    ok = sum(granted) == st.held_micros <= fits * AMOUNT and sum(1 for g in granted if g) == fits
    return {
        "calls": calls,
        "clients": clients,
        "granted": sum(1 for g in granted if g),
        "held_micros": st.held_micros,
        "budget_micros": fits * AMOUNT,
        "balance_ok": ok,
        "calls_per_s": calls / wall,
        "reserve": summary_ms(latencies),
    }


def pairs(target: str, n: int) -> dict[str, float]:
    """Sequential Reserve + Commit pairs on one channel."""
    with grpc.insecure_channel(target) as ch:
        s = lpb_grpc.LedgerServiceStub(ch)  # type: ignore[no-untyped-call]
        s.OpenTask(
            lpb.OpenTaskRequest(
                task_id="loop", namespace="bench", budget=lpb.TaskBudget(total_micros=10**15)
            )
        )
        times = []
        for i in range(n):
            t0 = time.perf_counter()
            r = s.Reserve(
                lpb.ReserveRequest(
                    task_id="loop", round=1, kind=M, estimate_micros=AMOUNT, idempotency_key=f"r{i}"
                )
            )
            s.Commit(
                lpb.CommitRequest(
                    task_id="loop",
                    reservation_id=r.reservation_id,
                    actual_micros=AMOUNT,
                    idempotency_key=f"c{i}",
                )
            )
            times.append(time.perf_counter() - t0)
    return summary_ms(times)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench ledger", description=__doc__)
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--in-flight", type=int, default=64, help="outstanding calls per client")
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ns = ap.parse_args(argv)
    fits = ns.calls * 6 // 10  # 60 % of the calls fit the budget
    with tempfile.TemporaryDirectory(prefix="pocketd-ledger-") as tmp:
        env = {
            "POCKETD__SERVER__MAX_CONCURRENT_CALLS": str(ns.calls * 2),
            "POCKETD__ENCODER__TEXT": "none",
        }
        p = ServerProcess(Path(tmp) / "data", env=env)
        try:
            p.wait_serving(timeout=300)
            log(f"{ns.calls} concurrent Reserve calls from {ns.clients} clients")
            out = asyncio.run(storm(p.target, ns.calls, ns.clients, fits, ns.in_flight))
            log(f"{ns.pairs} sequential Reserve + Commit pairs")
            out["pair"] = pairs(p.target, ns.pairs)
        finally:
            p.close()
    out["environment"] = environment()
    r, pr = out["reserve"], out["pair"]
    print(
        f"{out['calls']} concurrent Reserve calls from {out['clients']} clients: "
        f"{out['granted']} granted, held {out['held_micros']} of {out['budget_micros']} micros, "
        f"balance {'ok' if out['balance_ok'] else 'WRONG'}; {out['calls_per_s']:.0f} calls/s, "
        f"p50 {r['p50_ms']:.1f} / p99 {r['p99_ms']:.1f} ms under the storm"  # type: ignore[index]
    )
    print(
        f"sequential Reserve + Commit: p50 {pr['p50_ms']:.2f} / p99 {pr['p99_ms']:.2f} ms per pair"  # type: ignore[index]
    )
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if out["balance_ok"] else 1
