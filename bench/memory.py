"""`python -m bench memory --size N`: the memory service against a brute-force baseline.

Measures, on one synthetic clustered dataset (client vectors of the server's dimension, 512-d
by default, plus text):
- acknowledged ingest per second (RememberBatch of 256) and the index catch-up rate;
- Recall latency p50/p99, server-side (took_micros) and end-to-end over gRPC;
- recall@5 of plain and kind-filtered vector Recall against the exact scan with the same filter;
- the server's RSS; the time to SERVING after a clean restart, and after a kill -9 during a burst
  of writes: the rows re-indexed, the time to SERVING and the latency of the first write;
- acknowledged ingest when the server encodes the texts (batches of 64, no client vectors);
- plain vector, kind-filtered vector and text-only Recall, with the cost units each query spent
  (one unit: one exact 384-d f16 dot product) against a full scan's;
- Recall latency while a bulk import runs into another namespace (the mixed case);
- the built-in encoder's throughput;
- the baseline (numpy brute force + bm25s, in-process) on the same data and queries, and
  in-process chromadb (`bench.chroma_baseline`) for plain and kind-filtered vector queries, if
  `make bench-env` has made `.venv-bench`: one collection with the kind as metadata (`where`),
  and one collection per kind; each at chromadb's default search breadth and at the breadth that
  matches pocketd's recall@5, with its own recall@5 against the same exact scan.

The records are of four kinds in turn (fact, preference, episode, skill), so a kind filter
keeps a quarter of them.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.baseline import BruteForceHybrid
from bench.data import Dataset, make
from bench.encoder import bench_encoder
from bench.exact_scan import recall_at_k, split_queries
from bench.server_proc import ROOT, ServerProcess
from bench.stats import environment, rss_mb, summary_ms
from pocketd import Client, MemoryInput, RecallResult
from server.core.settings import MemorySettings

NS = "bench"
CRASH_NS = "bench-crash"
TEXT_NS = "bench-text"
MIXED_NS = "bench-mixed"
MIXED_MAX = 50_000
KINDS = ("fact", "preference", "episode", "skill")
BENCH_PY = ROOT / ".venv-bench" / "bin" / "python"
IdArray = npt.NDArray[np.int64]
TAIL_RE = re.compile(r"loaded \d+ records \([^)]*\), (\d+) awaiting the indexer")


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def record_kind(i: int) -> str:
    """The kind of record i: the four kinds in turn."""
    return KINDS[i % 4]


def query_kind(data: Dataset, i: int) -> str:
    """The kind a kind-filtered query i asks for: that of the record it was made from."""
    return record_kind(int(data.query_targets[i]))


def item(ns: str, data: Dataset, i: int) -> MemoryInput:
    return MemoryInput(
        ns, data.texts[i], kind=record_kind(i), importance=3, vector=data.vectors[i].tolist()
    )


def ingest(c: Client, data: Dataset, batch: int) -> dict[str, float]:
    n = len(data.texts)
    t0 = time.perf_counter()
    stored = 0
    for start in range(0, n, batch):
        items = [item(NS, data, i) for i in range(start, min(start + batch, n))]
        stored += sum(r.stored for r in c.remember_batch(items))
        if (start // batch) % 40 == 0:
            done = start + len(items)
            log(f"ingest {done}/{n} ({done / (time.perf_counter() - t0):.0f}/s)")
    acked = time.perf_counter() - t0
    while (pending := c.stats().pending_index) > 0:
        time.sleep(0.05)
    caught_up = time.perf_counter() - t0
    return {
        "records": n,
        "stored": stored,
        "ack_seconds": acked,
        "ack_per_second": n / acked,
        "indexed_seconds": caught_up,
        "index_catch_up_per_second": n / caught_up,
        "pending_at_ack": float(pending),
    }


def recall_latency(c: Client, data: Dataset, k: int) -> dict[str, object]:
    e2e: list[float] = []
    server: list[float] = []
    hybrid_hits = 0
    for _ in range(50):  # warm-up
        c.recall(NS, data.query_texts[0], vector=data.queries[0].tolist(), top_k=k)
    for i, q in enumerate(data.queries):
        qv = q.tolist()
        t0 = time.perf_counter()
        res = c.recall(NS, data.query_texts[i], vector=qv, top_k=k)
        e2e.append(time.perf_counter() - t0)
        server.append(res.took_micros / 1e6)
        hybrid_hits += any(
            h.memory.text.endswith(f"E{data.query_targets[i]:05d}") for h in res.hits
        )
    return {
        "end_to_end": summary_ms(e2e),
        "server_side": summary_ms(server),
        "hybrid_target_in_top_k": hybrid_hits / len(data.queries),
    }


def vector_latency(c: Client, data: Dataset, k: int) -> dict[str, object]:
    """Plain and kind-filtered vector Recall, and text-only Recall (the server encodes the
    query), with the cost units each spent."""
    out: dict[str, object] = {}
    cases: dict[str, Callable[[int], RecallResult]] = {
        "plain": lambda i: c.recall(NS, vector=data.queries[i].tolist(), top_k=k),
        "kind_filtered": lambda i: c.recall(
            NS,
            vector=data.queries[i].tolist(),
            top_k=k,
            kinds=[query_kind(data, i)],
        ),
        "text_only": lambda i: c.recall(NS, data.query_texts[i], top_k=k),
    }
    for name, call in cases.items():
        for i in range(20):
            call(i)
        e2e: list[float] = []
        server: list[float] = []
        cost: list[float] = []
        for i in range(len(data.queries)):
            t0 = time.perf_counter()
            res = call(i)
            e2e.append(time.perf_counter() - t0)
            server.append(res.took_micros / 1e6)
            cost.append(res.cost_units)
        out[name] = {
            "end_to_end": summary_ms(e2e),
            "server_side": summary_ms(server),
            "cost_units_mean": float(np.mean(cost)),
            "full_scan_cost_units": float(len(data.texts)),
        }
    return out


def mixed(c: Client, target: str, data: Dataset, batch: int, k: int) -> dict[str, object]:
    """Recall latency on the loaded namespace while another client bulk-imports the same
    records (at most 50,000) into a fresh namespace, as fast as it can."""
    n = min(len(data.texts), MIXED_MAX)
    done = threading.Event()
    imported: list[float] = []

    def importer() -> None:
        with Client(target, timeout=120) as w:
            t0 = time.perf_counter()
            for start in range(0, n, batch):
                if done.is_set():
                    break
                w.remember_batch(
                    [item(MIXED_NS, data, i) for i in range(start, min(start + batch, n))]
                )
                imported.append(float(min(start + batch, n)))
            imported.append(time.perf_counter() - t0)

    t = threading.Thread(target=importer, daemon=True)
    t.start()
    time.sleep(1.0)  # let the import reach its pace
    e2e: list[float] = []
    server: list[float] = []
    i = 0
    while t.is_alive() and i < 20 * len(data.queries):
        q = i % len(data.queries)
        t0 = time.perf_counter()
        res = c.recall(NS, data.query_texts[q], vector=data.queries[q].tolist(), top_k=k)
        e2e.append(time.perf_counter() - t0)
        server.append(res.took_micros / 1e6)
        i += 1
    done.set()
    t.join()
    return {
        "recalls": len(e2e),
        "end_to_end": summary_ms(e2e),
        "server_side": summary_ms(server),
        "imported": imported[-2] if len(imported) > 1 else 0.0,
        "import_seconds": imported[-1] if imported else 0.0,
    }


def exact_ids(base: BruteForceHybrid, data: Dataset, k: int) -> dict[str, IdArray]:
    """The exact cosine top k of every query, over every record ("plain") and over the records
    of the query's kind ("kind"): what pocketd and chromadb are both held to."""
    kinds = np.array([record_kind(i) for i in range(len(data.texts))])
    plain = [base.vector_topk(q, k) for q in data.queries]
    kind = [
        base.vector_topk(q, k, kinds == query_kind(data, i)) for i, q in enumerate(data.queries)
    ]
    return {"plain": np.stack(plain), "kind": np.stack(kind)}


def pocketd_found(c: Client, data: Dataset, k: int, filtered: bool) -> list[list[int]]:
    """The records pocketd's vector channel returns for each query (kind-filtered or not)."""
    found: list[list[int]] = []
    for i, q in enumerate(data.queries):
        kinds = [query_kind(data, i)] if filtered else []
        res = c.recall(NS, vector=q.tolist(), top_k=k, min_score=0.0, kinds=kinds)
        found.append([int(h.memory.text.rsplit(" ", 1)[1][1:]) for h in res.hits])
    return found


def vector_recall(
    c: Client, data: Dataset, exact: dict[str, IdArray], k: int
) -> dict[str, dict[str, float]]:
    """pocketd's recall@k against the exact scan, plain and kind-filtered: over every query, and
    over the tune and report queries apart (chromadb's breadth is matched on the former)."""
    tune, report = split_queries(len(data.queries))
    out: dict[str, dict[str, float]] = {}
    for name, filtered in (("plain", False), ("kind", True)):
        found = pocketd_found(c, data, k, filtered)
        out[name] = {
            part: recall_at_k([found[i] for i in idx], [exact[name][i] for i in idx])
            for part, idx in (("all", range(len(found))), ("tune", tune), ("report", report))
        }
    return out


def write_chroma_inputs(
    d: Path, data: Dataset, exact: dict[str, IdArray], targets: dict[str, float]
) -> None:
    """What `bench.chroma_baseline` reads: the records' vectors and kinds as pocketd stores them,
    the queries and the kind each asks for, the exact top k, and pocketd's recall to match."""
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "vectors.npy", data.vectors)
    np.save(d / "kinds.npy", np.array([record_kind(i) for i in range(len(data.texts))]))
    np.save(d / "queries.npy", data.queries)
    np.save(
        d / "query_kinds.npy", np.array([query_kind(data, i) for i in range(len(data.queries))])
    )
    for name, ids in exact.items():
        np.save(d / f"exact_{name}.npy", ids)
    (d / "targets.json").write_text(json.dumps(targets))


def run_chroma(d: Path, k: int, *extra: str) -> None:
    """`bench.chroma_baseline` in `.venv-bench`, on the inputs in `d`."""
    subprocess.run(
        [str(BENCH_PY), "-m", "bench.chroma_baseline", str(d), str(k), *extra],
        check=True,
        cwd=ROOT,
    )


def chroma(
    work: Path, data: Dataset, exact: dict[str, IdArray], targets: dict[str, float], k: int
) -> dict[str, object] | None:
    """In-process chromadb on the same vectors, in `.venv-bench` (None if it is missing)."""
    if not BENCH_PY.exists():
        log("chromadb baseline skipped: `make bench-env` creates .venv-bench with chromadb")
        return None
    d = work / "chroma"
    write_chroma_inputs(d, data, exact, targets)
    run_chroma(d, k)
    out: dict[str, object] = json.loads((d / "chroma.json").read_text())
    return out


def baseline_latency(base: BruteForceHybrid, data: Dataset, k: int) -> dict[str, object]:
    for i in range(20):
        base.search(data.queries[i], data.query_texts[i], k)
    times: list[float] = []
    hits = 0
    for i, q in enumerate(data.queries):
        t0 = time.perf_counter()
        got = base.search(q, data.query_texts[i], k)
        times.append(time.perf_counter() - t0)
        hits += int(data.query_targets[i]) in got
    return {
        "in_process": summary_ms(times),
        "hybrid_target_in_top_k": hits / len(data.queries),
        "build_seconds": base.build_seconds,
    }


def encoder_throughput(texts: list[str]) -> dict[str, float]:
    enc = bench_encoder()
    enc.encode(texts[:64])
    t0 = time.perf_counter()
    enc.encode(texts)
    return {"texts": len(texts), "texts_per_second": len(texts) / (time.perf_counter() - t0)}


def text_ingest(
    work: Path, env: dict[str, str], data: Dataset, n: int, batch: int
) -> dict[str, float]:
    """Remember `n` texts with no vectors, in batches of `batch`, so the server encodes them:
    acknowledged records per second, on a fresh server and data directory."""
    srv = ServerProcess(work / "text-data", env=env)
    srv.wait_serving()
    with Client(srv.target, timeout=120) as c:
        t0 = time.perf_counter()
        stored = 0
        for start in range(0, n, batch):
            items = [
                MemoryInput(TEXT_NS, data.texts[i], kind="episode", importance=3, session_id="t")
                for i in range(start, min(start + batch, n))
            ]
            stored += sum(r.stored for r in c.remember_batch(items))
        seconds = time.perf_counter() - t0
    srv.stop()
    return {
        "records": float(n),
        "stored": float(stored),
        "seconds": seconds,
        "per_second": n / seconds,
        "batch": float(batch),
    }


def crash_restart(
    work: Path, env: dict[str, str], data: Dataset, burst: int, batch: int
) -> dict[str, float]:
    """Write `burst` records as fast as possible, kill -9 at once, restart: how much is
    re-indexed, how long until SERVING, and how long the first write then takes."""
    srv = ServerProcess(work / "data", env=env)
    srv.wait_serving()
    with Client(srv.target, timeout=120) as c:
        for start in range(0, burst, batch):
            idx = range(start, min(start + batch, burst))
            c.remember_batch([item(CRASH_NS, data, i) for i in idx])
        pending = c.stats().index.pending
    srv.stop(signal.SIGKILL)
    srv2 = ServerProcess(work / "data", env=env)
    serving = srv2.wait_serving(timeout=600)
    tail = next((int(m.group(1)) for line in srv2.log if (m := TAIL_RE.search(line))), -1)
    with Client(srv2.target, timeout=5) as c:  # the client's default deadline
        t0 = time.perf_counter()
        c.remember(
            CRASH_NS, "first write after the crash", kind="fact", vector=data.vectors[0].tolist()
        )
        first_write = time.perf_counter() - t0
        pending_at_serving = c.stats().index.pending
    srv2.stop()
    return {
        "burst": float(burst),
        "pending_at_kill": float(pending),
        "rows_reindexed": float(tail),
        "serving_seconds": serving,
        "pending_at_serving": float(pending_at_serving),
        "first_write_ms": first_write * 1000.0,
    }


def run(
    size: int, queries: int, batch: int, k: int, out: Path, keep: bool, with_chroma: bool = True
) -> dict[str, object]:
    log(f"generating {size} clustered records")
    data = make(size, dim=MemorySettings().embedding_dim, queries=queries)
    result: dict[str, object] = {
        "size": size,
        "queries": len(data.queries),
        "batch": batch,
        "top_k": k,
        "environment": environment(),
    }
    work = Path(tempfile.mkdtemp(prefix="pocketd-bench-"))
    env: dict[str, str] = {}  # the server's defaults: its built-in encoder and dimension
    try:
        srv = ServerProcess(work / "data", env=env)
        result["cold_start_serving_seconds"] = srv.wait_serving()
        with Client(srv.target, timeout=120) as c:
            log("ingesting")
            result["ingest"] = ingest(c, data, batch)
            log(f"ingest: {result['ingest']}")
            log("recall latency")
            result["recall"] = recall_latency(c, data, k)
            log(f"recall: {result['recall']}")
            result["vector"] = vector_latency(c, data, k)
            log(f"plain, kind-filtered and text-only recall: {result['vector']}")
            log("recall during a bulk import")
            result["mixed"] = mixed(c, srv.target, data, batch, k)
            log(f"mixed: {result['mixed']}")
            log("baseline")
            base = BruteForceHybrid(data)
            result["baseline"] = baseline_latency(base, data, k)
            log("recall@k against the exact scan")
            exact = exact_ids(base, data, k)
            recall = vector_recall(c, data, exact, k)
            result["vector_recall"] = recall
            result["vector_recall_at_k"] = recall["plain"]["all"]
            result["server_memory"] = rss_mb(srv.pid)
        result["sigterm_exit_code"] = srv.stop()
        srv2 = ServerProcess(work / "data", env=env)
        result["restart_serving_seconds"] = srv2.wait_serving()
        with Client(srv2.target, timeout=60) as c:
            result["records_after_restart"] = c.stats(NS).namespaces[0].record_count
        srv2.stop()
        log("kill -9 during a burst of writes")
        result["crash"] = crash_restart(work, env, data, min(20_000, size // 5), batch)
        log(f"crash: {result['crash']}")
        log("text-encoded ingest")
        result["text_ingest"] = text_ingest(work, env, data, min(5_000, size), 64)
        log(f"text ingest: {result['text_ingest']}")
        result["encoder"] = encoder_throughput(data.texts[:2048])
        if with_chroma:
            log("chromadb baseline")
            targets = {name: r["tune"] for name, r in recall.items()}
            result["chroma"] = chroma(work, data, exact, targets, k)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"memory-{size}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {path}")
    return result


def report(r: dict[str, object]) -> str:
    ing = r["ingest"]
    rec = r["recall"]
    base = r["baseline"]
    assert isinstance(ing, dict) and isinstance(rec, dict) and isinstance(base, dict)
    e2e, srv, bl = rec["end_to_end"], rec["server_side"], base["in_process"]
    enc = r["encoder"]
    mem = r["server_memory"]
    crash, txt = r["crash"], r["text_ingest"]
    assert isinstance(enc, dict) and isinstance(mem, dict) and isinstance(crash, dict)
    assert isinstance(txt, dict)
    k = r["top_k"]
    lines = [
        f"memories: {r['size']}, queries: {r['queries']}, batch: {r['batch']}, top_k: {k}",
        f"ingest acknowledged:      {ing['ack_per_second']:8.0f} records/s"
        f" ({ing['ack_seconds']:.1f} s)",
        f"index catch-up:           {ing['index_catch_up_per_second']:8.0f} records/s"
        f" (all indexed after {ing['indexed_seconds']:.1f} s)",
        f"Recall end-to-end (gRPC): p50 {e2e['p50_ms']:6.2f} ms  p99 {e2e['p99_ms']:6.2f} ms",
        f"Recall server-side:       p50 {srv['p50_ms']:6.2f} ms  p99 {srv['p99_ms']:6.2f} ms",
        f"baseline brute+bm25s:     p50 {bl['p50_ms']:6.2f} ms  p99 {bl['p99_ms']:6.2f} ms"
        " (in-process, no RPC)",
        f"p50 ratio pocketd e2e / baseline: {e2e['p50_ms'] / bl['p50_ms']:.2f}",
        f"hybrid top-{k} holds the source record: pocketd {rec['hybrid_target_in_top_k']:.3f},"
        f" baseline {base['hybrid_target_in_top_k']:.3f}",
        f"vector channel recall@{k} vs exact scan: {r['vector_recall_at_k']:.4f}",
        f"server RSS: {mem['rss_mb']:.0f} MiB (peak {mem['peak_rss_mb']:.0f} MiB)",
        f"SERVING after restart with {r['records_after_restart']} memories:"
        f" {r['restart_serving_seconds']:.2f} s (cold first start"
        f" {r['cold_start_serving_seconds']:.2f} s)",
        f"kill -9 right after a burst of {crash['burst']:.0f} writes"
        f" ({crash['pending_at_kill']:.0f} unindexed): {crash['rows_reindexed']:.0f} rows"
        f" re-indexed, SERVING after {crash['serving_seconds']:.2f} s with"
        f" {crash['pending_at_serving']:.0f} unindexed,"
        f" first write {crash['first_write_ms']:.1f} ms",
        f"text-encoded ingest (the server encodes, batches of {txt['batch']:.0f}):"
        f" {txt['per_second']:.0f} records/s ({txt['records']:.0f} in {txt['seconds']:.1f} s)",
        f"built-in encoder: {enc['texts_per_second']:.0f} texts/s (batch 32, 2 threads)",
    ]
    vec, mix = r["vector"], r["mixed"]
    assert isinstance(vec, dict) and isinstance(mix, dict)
    for name in ("plain", "kind_filtered", "text_only"):
        v = vec[name]
        lines.append(
            f"{name:14s} Recall e2e p50 {v['end_to_end']['p50_ms']:6.2f} ms"
            f" p99 {v['end_to_end']['p99_ms']:6.2f} ms, server p50"
            f" {v['server_side']['p50_ms']:5.2f} ms, cost {v['cost_units_mean']:8.0f} units"
            f" (full scan {v['full_scan_cost_units']:.0f})"
        )
    lines.append(
        f"Recall during a bulk import ({mix['recalls']} recalls, {mix['imported']:.0f} records"
        f" in {mix['import_seconds']:.1f} s): e2e p50 {mix['end_to_end']['p50_ms']:.2f} ms"
        f" p99 {mix['end_to_end']['p99_ms']:.2f} ms, server p99"
        f" {mix['server_side']['p99_ms']:.2f} ms"
    )
    return "\n".join(lines + chroma_lines(r))


def chroma_lines(r: dict[str, object]) -> list[str]:
    """pocketd's recall@k beside chromadb's rows, each at the default and the matched breadth."""
    k, vec, ch, rec = r["top_k"], r["vector"], r.get("chroma"), r.get("vector_recall")
    if not isinstance(rec, dict):
        return []
    assert isinstance(vec, dict)
    lines = [
        f"vector recall@{k} vs the exact scan with the same filter, pocketd (all queries):"
        f" plain {rec['plain']['all']:.4f}, kind-filtered {rec['kind']['all']:.4f}"
    ]
    if not isinstance(ch, dict):
        return lines
    lines += [
        f"chromadb {ch['version']}, in process (no RPC), both layouts built in"
        f" {ch['build_seconds']:.1f} s; breadth (ef_search, default {ch['default_ef']}) matched"
        f" on {ch['tune_queries']} tune queries, every figure below on the other"
        f" {ch['report_queries']}:",
        f"{'':54s} {'ef':>5s} {'recall@' + str(k):>9s} {'p50 ms':>7s} {'p99 ms':>7s}"
        "  pocketd e2e p50 / chromadb p50",
    ]
    pocketd = {"plain": vec["plain"], "kind": vec["kind_filtered"]}
    for row in ch["rows"].values():
        p50 = pocketd[row["filter"]]["end_to_end"]["p50_ms"]
        for setting in ("default", "matched"):
            x = row[setting]
            note = "" if setting == "default" or x["reached"] else "  (not reached)"
            lines.append(
                f"{row['label'] if setting == 'default' else '':45s} {setting:8s} {x['ef']:5.0f}"
                f" {x['recall_at_k']:9.4f} {x['p50_ms']:7.2f} {x['p99_ms']:7.2f}"
                f"  {p50 / x['p50_ms']:6.2f}{note}"
            )
    for name, label in (("plain", "plain"), ("kind", "kind_filtered")):
        e2e, srv = pocketd[name]["end_to_end"], pocketd[name]["server_side"]
        lines.append(
            f"{'pocketd ' + label + ' (gRPC, end to end)':54s} {'':>5s}"
            f" {rec[name]['report']:9.4f} {e2e['p50_ms']:7.2f} {e2e['p99_ms']:7.2f}"
            f"  server p50 {srv['p50_ms']:.2f} ms (latency over every query)"
        )
    lines.append(
        "chromadb runs in process with no RPC, after pocketd's server has stopped; pocketd's"
        " figures are end to end over gRPC (its server-side p50 beside them)"
    )
    return lines


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench memory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    p.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    p.add_argument("--no-chroma", action="store_true", help="skip the chromadb baseline")
    ns = p.parse_args(argv)
    r = run(ns.size, ns.queries, ns.batch, ns.top_k, ns.out, ns.keep, not ns.no_chroma)
    print(report(r))
    return 0
