"""`python -m bench loadtest`: load tests of a real `pocketd serve` with ghz (`make loadtest`).

The load comes from ghz (a Go gRPC load generator, installed at a pinned version by
`tools/install_ghz.sh` into `.tools/bin/ghz`), through server reflection (no proto files), with
the configurations in `bench/ghz/`: `recall.json`, `remember.json`, `step.json`, `health.json`
(the empty Health.Check: the transport's own ceiling) and `mixed.json` (the shares of a mixed
run: ghz runs one method per process, so the mix is several ghz processes at once, each at its
share of the rate). The harness adds what is known only at run time: the address, the bearer
token (`authorization` metadata), the call data, the concurrency, the rate and the duration.
ghz asks reflection for the file of a method's name, which Python's reflection cannot answer
(it answers for a service's name): when ghz's own lookup fails, the harness hands ghz a protoset
of the files the server's reflection returns for the services (`descriptors`).

The server: one `pocketd serve` with `auth.tokens` (a tenant's token, and an admin token of the
same tenant for Stats: one tenant, so the per-tenant share of the admission bounds does not
apply and the lanes' own bound, 64 calls, does), its stderr log in a file. The data set:
`--size` memories (100,000) of MemoryBank's real turns (`../shared/data/memorybank`, Chinese and
English, 2,264 turns; `--data` names another copy; generated texts only with `--allow-generated`,
and then loudly, since their figures do not compare), repeated with variations to reach the size:
copy r of a turn has its sentences rotated by r (a one-sentence turn repeats as it is), its own
session (`c<r>`) and its event time r weeks earlier, so that copies never merge (episodes merge
only with the same text in the same session) and spread over many week pockets; the sessions are
dealt round-robin over `--namespaces` namespaces (10: 10,000 memories each). They are stored
with RememberBatch as episodes (speaker, session, turn, event time), and the indexer is waited
for (an admin's Stats, `index.pending == 0`) before the server is stopped cleanly. That data
directory is kept (`bench/out/loadtest-data-<size>-ns<namespaces>-<source>-v<SEED_VERSION>`, where
`<source>` is `memorybank-` or `generated-` and a hash of the texts and questions, so a run on
other data never reuses it) and copied for every run, so a rerun neither seeds again nor measures a
store that earlier runs wrote into. The run logs which data it uses, and its JSON says so.

Each call is warmed up (a short run, thrown away), then measured closed-loop at each
`--concurrency` (the most it answers per second), then at a fixed rate: Recall at `--recall-rate`
(2,000/s, the goal) and, when that is more than it sustained, also at 80 % of its best; Remember
and Step at 80 % of their best; Recall once more with few enough distinct queries for the
server's query-vector cache (the encoder's share). The mixed run asks for 80 % of the rate the
closed-loop figures predict for the mix. What each call sends: Recall, MemoryBank's 200 probing
questions over the seeded namespaces (every question with every namespace, 2,000 pairs in a fixed
shuffled order, more than the query-vector cache holds: each Recall encodes its query);
Remember, upserts over 1,000 fixed ids (text changing on each write), so the store does not grow
without end; Step, the rounds of 64 tasks the harness opens before each run (new tasks each run,
rounds increasing with the request number, a unique idempotency key per call, a usage report
each).

For each run: requests, RPS, p50/p99 (ghz's; a failed call's time included), the status codes
and errors, and what the calls cost: the server's CPU (user + system seconds per call and cores
busy, its main thread, the event loop, apart), ghz's (its cores busy) and the rest of the
machine's (`other cores`: a machine that is not quiet shows there). ghz runs on the same
cores as the server: it takes CPU the server would otherwise have, so these figures understate
what the server alone sustains; its share is printed so that it can be accounted for. ghz paces
a fixed rate with at most `-c` calls in flight and times each call from when it is sent, not
from when the schedule wanted it sent: a run that falls behind shows it as RPS below the rate
asked (flagged), not as latency.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import psutil
import yaml
from google.protobuf import descriptor_pb2
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from bench.server_proc import ROOT, serve_command
from bench.stats import environment, rss_mb
from pocketd.requests import open_channel
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from server.api.auth import token_sha256

DATA = ROOT.parent / "shared" / "data" / "memorybank"
CONFIGS = ROOT / "bench" / "ghz"
OUT = ROOT / "bench" / "out"
GHZ = ROOT / ".tools" / "bin" / "ghz"
GHZ_VERSION = "v0.120.0"  # tools/install_ghz.sh installs this one
SEED_VERSION = 1  # bump when the seeded data set changes: a cached one is then seeded anew
TENANT = "loadtest"
TOKEN = "loadtest-tenant-token-0123456789"
ADMIN = "loadtest-admin-token-0123456789"  # the same tenant, admin: Stats' index figures
NS_PREFIX = "lt"
SEED_BATCH = 256
SEED_IN_FLIGHT = 2  # RememberBatch calls at once while seeding (the server has 2 write threads)
UPSERT_IDS = 1000  # Remember's fixed id range
STEP_TASKS = 64  # tasks a Step run cycles over
CACHED_QUERIES = 500  # below the server's query-vector cache (1,024 per tenant)
LOAD = 0.8  # the fixed-rate runs of Remember, Step and the mix: this share of the best rate
GOAL_RPS = 2000.0
GOAL_P99_MS = 25.0
GOAL_SIZE = 100_000
REACHED = 0.97  # a fixed-rate run kept its rate if it reached this share of it (ghz's rate
# counts the wait for the calls in flight at the end, a few per cent of a short run)
TIMEOUT_S = 10.0
WEEK_S = 7 * 86_400.0
SENTENCE_RE = re.compile(r"(?<=[.!?。！？])\s*")
HEALTH = "grpc.health.v1.Health.Check"
REFLECTED = ("pocketd.v1.MemoryService", "pocketd.v1.AgentService", "grpc.health.v1.Health")
GOAL_TEXT = "Help the user remember what they told you and plan their week"
PREVIOUS_ACTION = '{"type":"tool","tool":"search","params":{"q":"earlier conversation"}}'


def log(msg: str) -> None:
    print(f"[loadtest] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The texts and the seeded data set


@dataclass(frozen=True)
class SeedTurn:
    text: str
    speaker: str
    session: str  # its session in the source (user and day)
    at: float  # its event time
    index: int  # its position in the session


@dataclass(frozen=True)
class Corpus:
    turns: list[SeedTurn]
    questions: list[str]
    source: str  # what they are, in words
    key: str  # names the seeded data set's cache: where they come from and a hash of them


def corpus(data: Path, allow_generated: bool = False) -> Corpus:
    """MemoryBank's turns (both languages) and probing questions (all 200, labelled or not) from
    `data`; generated ones only with `allow_generated` (else a missing MemoryBank is an error)."""
    try:
        from bench.memorybank import load

        bank = load(data)
        turns = [
            SeedTurn(_safe(t.text), t.speaker, t.session_id, t.time, t.index)
            for c in bank.corpora.values()
            for t in c.turns
            if t.text.strip()
        ]
        questions = _questions(data)
        if turns and questions:
            source = f"MemoryBank ({data}): {len(turns)} turns, {len(questions)} questions"
            return Corpus(turns, questions, source, _key("memorybank", turns, questions))
        problem = "it holds no turns or no questions"
    except (OSError, ValueError, KeyError) as e:
        problem = f"{type(e).__name__}: {e}"
    if not allow_generated:
        raise SystemExit(
            f"no MemoryBank at {data} ({problem}): pass --data, or --allow-generated to measure on"
            " generated texts (their figures do not compare with MemoryBank's)"
        )
    from bench.soak import texts

    made, asked = texts()
    turns = [
        SeedTurn(_safe(t), "user", f"gen-{i // 20}", 1.68e9 + i, i % 20) for i, t in enumerate(made)
    ]
    questions = [_safe(q) for q in asked]
    source = f"GENERATED ({len(turns)} texts; no MemoryBank at {data}: {problem})"
    return Corpus(turns, questions, source, _key("generated", turns, questions))


def _key(origin: str, turns: list[SeedTurn], questions: list[str]) -> str:
    h = hashlib.sha256()
    for t in turns:
        h.update(f"{t.text}\x1f{t.speaker}\x1f{t.session}\x1f{t.at}\x1f{t.index}\x1e".encode())
    for q in questions:
        h.update(f"{q}\x1e".encode())
    return f"{origin}-{h.hexdigest()[:12]}"


def _questions(root: Path) -> list[str]:
    out: list[str] = []
    for lang in ("cn", "en"):
        for line in (
            (root / lang / f"probing_questions_{lang}.jsonl").read_text("utf-8").splitlines()
        ):
            if line.strip():
                for asked in json.loads(line).values():
                    out.extend(_safe(q) for q in asked if q.strip())
    return out


def _safe(text: str) -> str:
    """ghz reads its call data as a Go template: a text may not open an action."""
    return text.replace("{{", "{ {").strip()


def rotated(text: str, r: int) -> str:
    """Copy r of a text: its sentences rotated by r (a one-sentence text stays as it is)."""
    parts = [p for p in SENTENCE_RE.split(text) if p.strip()]
    if r == 0 or len(parts) < 2:
        return text
    k = r % len(parts)
    sep = "" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else " "
    return sep.join(parts[k:] + parts[:k])


def namespace(n: int) -> str:
    return f"{NS_PREFIX}-{n:02d}"


def seed_items(turns: list[SeedTurn], size: int, namespaces: int) -> Iterator[spb.RememberRequest]:
    """The `size` memories: copies of the turns, each copy's sessions dealt over the
    namespaces round-robin, in session order."""
    sessions: dict[str, int] = {}
    for t in turns:
        sessions.setdefault(t.session, len(sessions))
    hints = spb.WriteHints(remember=True)  # the gate keeps small talk too: the size is the size
    for k in range(size):
        r, i = divmod(k, len(turns))
        t = turns[i]
        s = sessions[t.session]
        at = Timestamp()
        at.FromNanoseconds(int((t.at - r * WEEK_S) * 1e9))
        yield spb.RememberRequest(
            record=pb.MemoryRecord(
                namespace=namespace((s + r) % namespaces),
                memory_id=f"s{k}",
                session_id=f"c{r}-{t.session}"[:128].replace(" ", "_"),
                text=rotated(t.text, r),
                kind=pb.MEMORY_KIND_EPISODE,
                speaker=t.speaker[:64],
                occurred_at=at,
                turn=t.index,
            ),
            hints=hints,
        )


def seed(server: Server, turns: list[SeedTurn], size: int, namespaces: int) -> dict[str, Any]:
    """Store the data set (RememberBatch, per namespace, `SEED_IN_FLIGHT` at once) and wait for
    the indexer."""
    ch = open_channel(server.target, 64 << 20, TOKEN, None, sync=True)
    stub = spb_grpc.MemoryServiceStub(ch)  # type: ignore[no-untyped-call]
    t0 = time.monotonic()
    decisions: Counter[str] = Counter()
    pending: dict[str, list[spb.RememberRequest]] = {}

    def send(items: list[spb.RememberRequest]) -> list[int]:
        reply = stub.RememberBatch(spb.RememberBatchRequest(items=items), timeout=600)
        return [r.decision for r in reply.results]

    def count(results: list[int]) -> None:
        before = sum(decisions.values())
        for d in results:
            decisions[spb.GateDecision.Name(d)] += 1  # type: ignore[arg-type]
        after = before + len(results)
        if after // 10_000 > before // 10_000:
            log(f"seeded {after}/{size} ({after / (time.monotonic() - t0):.0f}/s)")

    with ThreadPoolExecutor(SEED_IN_FLIGHT) as pool:
        futures = []
        for item in seed_items(turns, size, namespaces):
            batch = pending.setdefault(item.record.namespace, [])
            batch.append(item)
            if len(batch) >= SEED_BATCH:
                futures.append(pool.submit(send, pending.pop(item.record.namespace)))
            while len(futures) > SEED_IN_FLIGHT * 2:
                count(futures.pop(0).result())
        futures.extend(pool.submit(send, b) for b in pending.values())
        for f in futures:
            count(f.result())
    stored_s = time.monotonic() - t0
    settled_s = settle_index(server)
    stats = admin_stats(server)
    ch.close()
    return {
        "size": size,
        "namespaces": namespaces,
        "records": sum(n.record_count for n in stats.namespaces),
        "decisions": dict(decisions),
        "store_s": round(stored_s, 1),
        "acknowledged_per_s": round(size / stored_s, 1) if stored_s else None,
        "index_wait_s": round(settled_s, 1),
    }


# ---------------------------------------------------------------------------------------------
# The server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """`pocketd serve` on a fixed port, its log in a file (a pipe read by this process would
    take the cores the run measures)."""

    def __init__(self, data: Path, config: Path, log_file: Path, log_level: str) -> None:
        self.port = free_port()
        self.log_file = log_file
        self._log = log_file.open("w")
        self.p = subprocess.Popen(
            [
                *serve_command(data, listen=f"127.0.0.1:{self.port}", config=config),
                "--log-level",
                log_level,
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        self.started = time.monotonic()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.p.pid

    def wait_serving(self, timeout: float) -> float:
        serving = health_pb2.HealthCheckResponse.SERVING
        with grpc.insecure_channel(self.target) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            while time.monotonic() - self.started < timeout:
                if self.p.poll() is not None:
                    break
                try:
                    if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == serving:
                        return time.monotonic() - self.started
                except grpc.RpcError:
                    pass
                time.sleep(0.1)
        raise RuntimeError(f"the server never reported SERVING:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        if not self._log.closed:
            self._log.flush()
        with self.log_file.open(errors="replace") as fh:
            return "".join(list(fh)[-lines:])

    def warnings(self) -> list[str]:
        with self.log_file.open(errors="replace") as fh:
            return [line.rstrip() for line in fh if " WARNING " in line or " ERROR " in line]

    def stop(self, timeout: float = 120.0) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self._log.close()
        return self.p.returncode


def write_config(path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "auth": {
                    "tokens": [
                        {"tenant": TENANT, "sha256": token_sha256(TOKEN)},
                        {"tenant": TENANT, "sha256": token_sha256(ADMIN), "admin": True},
                    ]
                }
            }
        )
    )
    return path


def admin_stats(server: Server) -> spb.StatsResponse:
    ch = open_channel(server.target, 64 << 20, ADMIN, None, sync=True)
    try:
        stub = spb_grpc.MemoryServiceStub(ch)  # type: ignore[no-untyped-call]
        reply: spb.StatsResponse = stub.Stats(spb.StatsRequest(), timeout=TIMEOUT_S)
        return reply
    finally:
        ch.close()


def settle_index(server: Server, limit_s: float = 1800.0) -> float:
    """Wait until the indexer has every acknowledged record (an admin's Stats); the seconds."""
    t0 = time.monotonic()
    last = -1.0
    while time.monotonic() - t0 < limit_s:
        pending = admin_stats(server).index.pending
        if pending == 0:
            break
        if time.monotonic() - last > 30:
            log(f"waiting for the indexer: {pending} records pending")
            last = time.monotonic()
        time.sleep(0.5)
    return time.monotonic() - t0


def data_set(args: argparse.Namespace, texts: Corpus, config: Path) -> tuple[Path, dict[str, Any]]:
    """The seeded data directory, from the cache (keyed on the texts) or seeded now; and its
    manifest."""
    cached = OUT / f"loadtest-data-{args.size}-ns{args.namespaces}-{texts.key}-v{SEED_VERSION}"
    manifest = cached / "loadtest-seed.json"
    if manifest.exists() and not args.reseed:
        log(f"reusing the seeded data set {cached.relative_to(ROOT)}")
        seeded: dict[str, Any] = json.loads(manifest.read_text())
        return cached, seeded
    shutil.rmtree(cached, ignore_errors=True)
    cached.mkdir(parents=True)
    log(f"seeding {args.size} memories into {cached.relative_to(ROOT)} (once; cached)")
    server = Server(cached / "data", config, cached / "seed-server.log", "WARNING")
    try:
        server.wait_serving(timeout=600)
        seeded = seed(server, texts.turns, args.size, args.namespaces)
    finally:
        code = server.stop()
    if code != 0:
        raise RuntimeError(f"the seeding server exited {code}:\n{server.tail()}")
    seeded.update(
        commit=commit(),
        seeded_at=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        texts=texts.source,
        texts_key=texts.key,
    )
    manifest.write_text(json.dumps(seeded, indent=1))
    log(f"seeded: {seeded}")
    return cached, seeded


# ---------------------------------------------------------------------------------------------
# ghz


def ghz_version(ghz: Path) -> dict[str, str]:
    """What `ghz --version` says, and the module version Go recorded in the binary."""
    out = {"pinned": GHZ_VERSION}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        said = subprocess.run([str(ghz), "--version"], capture_output=True, text=True, timeout=30)
        out["ghz --version"] = (said.stdout + said.stderr).strip()  # kingpin prints to stderr
    go = shutil.which("go")
    if go:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            info = subprocess.run(
                [go, "version", "-m", str(ghz)], capture_output=True, text=True, timeout=30
            ).stdout
            m = re.search(r"^\s*mod\s+github.com/bojand/ghz\s+(\S+)", info, re.M)
            if m:
                out["module"] = m.group(1)
            g = re.search(r":\s*(go\S+)", info)
            if g:
                out["built with"] = g.group(1)
    return out


def descriptors(ghz: Path, target: str, work: Path) -> tuple[Path | None, str]:
    """How ghz learns the methods: its own reflection lookup if the server answers it, else a
    protoset of the descriptors the server's reflection returns by service name (still no
    proto files). Python's reflection (protobuf's upb descriptor pool) resolves a service's
    name but not a method's (`pocketd.v1.MemoryService.Recall`), which is what ghz asks for."""
    probe = subprocess.run(
        [str(ghz), "--insecure", "--call", HEALTH, "-d", "{}", "-n", "1", target],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode == 0:
        return None, "ghz's own server reflection"
    said = (probe.stdout + probe.stderr).strip().splitlines()
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    with grpc.insecure_channel(target) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        for service in REFLECTED:
            request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=service)
            for reply in stub.ServerReflectionInfo(iter([request]), timeout=TIMEOUT_S):
                if reply.HasField("error_response"):
                    raise RuntimeError(f"reflection: {service}: {reply.error_response}")
                for raw in reply.file_descriptor_response.file_descriptor_proto:
                    fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
                    files[fd.name] = fd
    ordered: list[descriptor_pb2.FileDescriptorProto] = []

    def add(name: str) -> None:
        if name in files and files[name] not in ordered:
            for dep in files[name].dependency:
                add(dep)
            ordered.append(files[name])

    for name in sorted(files):
        add(name)
    path = work / "pocketd.protoset"
    path.write_bytes(descriptor_pb2.FileDescriptorSet(file=ordered).SerializeToString())
    return path, (
        f"a protoset of the {len(ordered)} files the server's reflection returns for"
        f" {', '.join(REFLECTED)} (ghz's own reflection lookup fails:"
        f" {said[-1] if said else probe.returncode!r})"
    )


@dataclass
class Call:
    """One ghz configuration and the call data the harness made for it."""

    name: str
    config: Path
    data: Path  # the call data (JSON), written by the harness


@dataclass
class Spec:
    """One ghz process of a run."""

    call: Call
    concurrency: int
    rate: float = 0.0  # 0: closed-loop (as fast as `concurrency` calls in flight allow)
    protoset: Path | None = None  # None: ghz asks the server's reflection itself


def ghz_command(ghz: Path, spec: Spec, target: str, duration: str, out: Path) -> list[str]:
    cmd = [
        str(ghz),
        "--config",
        str(spec.call.config),
        "--data-file",
        str(spec.call.data),
        "--metadata",
        json.dumps({"authorization": f"Bearer {TOKEN}"}),
        "--concurrency",
        str(spec.concurrency),
        "--duration",
        duration,
        "--duration-stop",
        "wait",  # the calls in flight at the end are waited for, not cut and counted as errors
        "--count-errors",  # a failed call's time is in the percentiles too
        "--format",
        "json",
        "--output",
        str(out),
    ]
    if spec.rate:
        cmd += ["--rps", str(max(1, round(spec.rate)))]
    if spec.protoset:
        cmd += ["--protoset", str(spec.protoset)]
    return [*cmd, target]


def parse_report(raw: dict[str, Any]) -> dict[str, Any]:
    """The figures of a ghz JSON report (durations are nanoseconds)."""
    lat = {int(d["percentage"]): d["latency"] / 1e6 for d in raw.get("latencyDistribution") or []}
    codes: dict[str, int] = dict(raw.get("statusCodeDistribution") or {})
    errors: dict[str, int] = dict(raw.get("errorDistribution") or {})
    count = int(raw.get("count", 0))
    return {
        "count": count,
        "ok": int(codes.get("OK", 0)),
        "rps": round(float(raw.get("rps", 0.0)), 1),
        "ok_rps": round(int(codes.get("OK", 0)) / (float(raw.get("total", 0)) / 1e9 or 1.0), 1),
        "p50_ms": round(lat.get(50, math.nan), 2),
        "p90_ms": round(lat.get(90, math.nan), 2),
        "p99_ms": round(lat.get(99, math.nan), 2),
        "average_ms": round(float(raw.get("average", 0)) / 1e6, 2),
        "slowest_ms": round(float(raw.get("slowest", 0)) / 1e6, 2),
        "total_s": round(float(raw.get("total", 0)) / 1e9, 2),
        "errors": count - int(codes.get("OK", 0)),
        "status_codes": codes,
        "error_messages": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:5]),
    }


class CpuMeter:
    """The server's CPU seconds (all threads, its main thread apart: the event loop) and ghz's
    (this process's reaped children) between `start` and `stop`."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.pid = pid

    def sample(self) -> dict[str, float]:
        t = self.proc.cpu_times()
        threads = {th.id: th.user_time + th.system_time for th in self.proc.threads()}
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = psutil.cpu_times()
        return {
            "machine": cpu.user + cpu.nice + cpu.system + cpu.irq + cpu.softirq,
            "server": t.user + t.system,
            "main": threads.get(self.pid, 0.0),
            "ghz": kids.ru_utime + kids.ru_stime,
            "wall": time.monotonic(),
            **{f"tid{k}": v for k, v in threads.items()},
        }

    def delta(self, a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
        wall = b["wall"] - a["wall"]
        threads = {
            f"{_thread_name(self.pid, int(key[3:]))}/{key[3:]}": v - a.get(key, 0.0)
            for key, v in b.items()
            if key.startswith("tid") and int(key[3:]) != self.pid
        }
        busiest = sorted(threads.items(), key=lambda kv: -kv[1])[:4]
        server = b["server"] - a["server"]
        ghz = b["ghz"] - a["ghz"]
        return {
            "wall_s": round(wall, 2),
            "server_cpu_s": round(b["server"] - a["server"], 2),
            "server_cores": round((b["server"] - a["server"]) / wall, 2),
            "main_thread_cores": round((b["main"] - a["main"]) / wall, 2),
            "ghz_cores": round(ghz / wall, 2),
            # What else ran on the machine meanwhile (this process, other users' work).
            "other_cores": round(max(0.0, b["machine"] - a["machine"] - server - ghz) / wall, 2),
            "threads": sum(1 for key in b if key.startswith("tid")),
            # The server's busiest threads other than the main one, as name/tid: a single one
            # near 1.0 is a serial bottleneck (one worker, or the GIL held by one thread).
            "busiest_threads": {k: round(v / wall, 2) for k, v in busiest if v / wall >= 0.01},
        }


def _thread_name(pid: int, tid: int) -> str:
    try:
        return Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
    except OSError:
        return "gone"


def run_ghz(
    ghz: Path,
    specs: list[Spec],
    target: str,
    duration: str,
    work: Path,
    label: str,
    meter: CpuMeter,
) -> dict[str, Any]:
    """Run the specs' ghz processes at once; each one's figures, their sum, and the CPU."""
    procs = []
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
    before = meter.sample()
    for n, spec in enumerate(specs):
        out = work / f"{slug}-{n}-{spec.call.name}.json"
        cmd = ghz_command(ghz, spec, target, duration, out)
        err = (work / f"{slug}-{n}-{spec.call.name}.stderr").open("w")
        procs.append((spec, out, err, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)))
    parts = []
    for spec, out, err, p in procs:
        code = p.wait()
        err.close()
        stderr = Path(err.name).read_text(errors="replace").strip()
        if code != 0 or not out.exists():
            raise RuntimeError(f"ghz exited {code} ({spec.call.name}): {stderr[-2000:]}")
        figures = parse_report(json.loads(out.read_text()))
        figures.update(
            call=spec.call.name,
            concurrency=spec.concurrency,
            rate_asked=round(spec.rate, 1) if spec.rate else None,
        )
        if spec.rate:
            figures["kept_rate"] = figures["rps"] >= REACHED * spec.rate
        parts.append(figures)
        out.unlink()  # its per-call details are large; the figures are kept
    cpu = meter.delta(before, meter.sample())
    calls = sum(p["count"] for p in parts)
    row: dict[str, Any] = {"label": label, "parts": parts, "cpu": cpu}
    row["rps"] = round(sum(p["rps"] for p in parts), 1)
    row["errors"] = sum(p["errors"] for p in parts)
    row["server_cpu_ms_per_call"] = round(1000 * cpu["server_cpu_s"] / calls, 3) if calls else None
    return row


# ---------------------------------------------------------------------------------------------
# The call data


def write_data(
    work: Path, questions: list[str], turns: list[SeedTurn], namespaces: int
) -> dict[str, Path]:
    """The call data files, one JSON array of messages per call (ghz sends them in turn)."""
    texts = [t.text for t in turns]
    recall = [
        {"namespace": namespace(n), "query_text": q} for q in questions for n in range(namespaces)
    ]
    random.Random(0).shuffle(recall)  # every question with every namespace, in a mixed order
    remember = [
        {
            "record": {
                "namespace": namespace(j % namespaces),
                "memory_id": f"up-{j % UPSERT_IDS}",
                "text": texts[j % len(texts)],
                "kind": "MEMORY_KIND_FACT",
            },
            "hints": {"remember": True},
        }
        for j in range(max(len(texts), UPSERT_IDS))
    ]
    out = {
        "recall": work / "recall-data.json",
        "recall-cached": work / "recall-cached-data.json",
        "remember": work / "remember-data.json",
    }
    out["recall"].write_text(json.dumps(recall, ensure_ascii=False))
    # Few enough distinct queries for the server's query-vector cache: Recall without encoding.
    out["recall-cached"].write_text(json.dumps(recall[:CACHED_QUERIES], ensure_ascii=False))
    out["remember"].write_text(json.dumps(remember, ensure_ascii=False))
    out["health"] = work / "health-data.json"
    out["health"].write_text("{}")
    return out


def step_data(work: Path, run: str, questions: list[str], turns: list[SeedTurn]) -> Path:
    """A Step run's call data: its `STEP_TASKS` tasks in turn; the round (1 followed by the
    request number: unique, and increasing with it) and the idempotency key (a UUID) are ghz
    templates, so each call is a new round of its task."""
    msgs = [
        {
            "task_id": f"{run}-t{j}",
            "round": "@ROUND@",
            "goal": GOAL_TEXT,
            "input": questions[j % len(questions)],
            "previous_action_json": PREVIOUS_ACTION,
            "observation": turns[(j * 37) % len(turns)].text,
            "usage": [{"model": "fast_small_model", "input_tokens": 800, "output_tokens": 90}],
            "idempotency_key": "{{.UUID}}",
        }
        for j in range(STEP_TASKS)
    ]
    path = work / f"step-data-{run}.json"
    # A quoted number is valid proto3 JSON for an integer field, and keeps the file valid JSON
    # (ghz then templates only the message it sends, not the whole array).
    path.write_text(
        json.dumps(msgs, ensure_ascii=False).replace('"@ROUND@"', '"1{{.RequestNumber}}"')
    )
    return path


def open_tasks(server: Server, run: str, namespaces: int) -> None:
    """The Step run's tasks, each charged to one of the seeded namespaces."""
    ch = open_channel(server.target, 16 << 20, TOKEN, None, sync=True)
    stub = lpb_grpc.LedgerServiceStub(ch)  # type: ignore[no-untyped-call]
    budget = lpb.TaskBudget(total_micros=10**15, emergency_ratio=0.1)
    for j in range(STEP_TASKS):
        stub.OpenTask(
            lpb.OpenTaskRequest(
                task_id=f"{run}-t{j}", namespace=namespace(j % namespaces), budget=budget
            ),
            timeout=TIMEOUT_S,
        )
    ch.close()


# ---------------------------------------------------------------------------------------------
# The runs


def mixed_shares() -> list[tuple[str, float]]:
    spec = json.loads((CONFIGS / "mixed.json").read_text())
    shares = [(str(p["call"]), float(p["share"])) for p in spec["calls"]]
    total = sum(s for _, s in shares)
    return [(c, s / total) for c, s in shares]


def run(args: argparse.Namespace) -> dict[str, Any]:
    ghz = Path(args.ghz)
    if not ghz.exists():
        raise SystemExit(f"no ghz at {ghz}: run tools/install_ghz.sh (make loadtest does)")
    where = machine()  # its load average before this run's own load
    texts = corpus(args.data, args.allow_generated)
    log(f"data: {texts.source}")
    turns, questions, source = texts.turns, texts.questions, texts.source
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="loadtest-", dir=OUT))
    config = write_config(work / "pocketd.yaml")
    cached, seeded = data_set(args, texts, config)
    data = work / "data"
    t0 = time.monotonic()
    shutil.copytree(cached / "data", data)
    log(f"copied the data set in {time.monotonic() - t0:.0f} s; starting the server")
    files = write_data(work, questions, turns, args.namespaces)
    server = Server(data, config, work / "server.log", args.server_log_level)
    rows: list[dict[str, Any]] = []
    try:
        ready_s = server.wait_serving(timeout=900)
        settled_s = settle_index(server)
        stats = admin_stats(server)
        records = sum(n.record_count for n in stats.namespaces)
        log(f"SERVING after {ready_s:.0f} s, {records} memories, indexer idle; loading")
        protoset, how = descriptors(ghz, server.target, work)
        log(f"methods from {how}")
        meter = CpuMeter(server.pid)
        calls = {
            name: Call(name, CONFIGS / f"{name}.json", files[name])
            for name in ("health", "recall", "remember")
        }
        steps = 0

        def step_call() -> Call:
            nonlocal steps
            steps += 1
            name = f"s{steps}"
            open_tasks(server, name, args.namespaces)
            return Call("step", CONFIGS / "step.json", step_data(work, name, questions, turns))

        def go(label: str, specs: list[Spec], duration: str | None = None) -> dict[str, Any]:
            for spec in specs:
                spec.protoset = protoset
            row = run_ghz(ghz, specs, server.target, duration or args.duration, work, label, meter)
            _print_row(row)
            return row

        log("warming up (thrown away)")
        for name in ("health", "recall", "remember"):
            go(f"warmup-{name}", [Spec(calls[name], 16)], args.warmup)
        go("warmup-step", [Spec(step_call(), 16)], args.warmup)
        best: dict[str, float] = {}
        for name in ("health", "recall", "remember", "step"):
            for c in args.concurrency:
                call = step_call() if name == "step" else calls[name]
                row = go(f"{name} c={c}", [Spec(call, c)])
                row.update(op=name, mode="closed")
                rows.append(row)
                best[name] = max(best.get(name, 0.0), row["rps"])
            if name == "health":
                continue
            rates = [args.recall_rate] if name == "recall" else []
            if name != "recall" or best[name] < args.recall_rate:
                rates.append(LOAD * best[name])
            for rate in rates:
                call = step_call() if name == "step" else calls[name]
                row = go(f"{name} @{rate:.0f}/s", [Spec(call, args.rate_concurrency, rate)])
                row.update(op=name, mode="rate")
                rows.append(row)
            if name == "recall":  # the same, without the encoder: every query vector cached
                top = max(args.concurrency)
                cached_call = Call("recall", CONFIGS / "recall.json", files["recall-cached"])
                row = go(f"recall, cached vectors, c={top}", [Spec(cached_call, top)])
                row.update(op="recall-cached", mode="closed")
                rows.append(row)
            settle_index(server)  # the writes' indexing is not left to the next runs
        shares = mixed_shares()
        predicted = 1.0 / sum(share / max(best[op], 1e-9) for op, share in shares)
        mixed_rate = args.mixed_rate or LOAD * predicted
        specs = [
            Spec(
                step_call() if op == "step" else calls[op],
                max(4, round(args.rate_concurrency * share)),
                mixed_rate * share,
            )
            for op, share in shares
        ]
        row = go(f"mixed @{mixed_rate:.0f}/s", specs)
        row.update(op="mixed", mode="rate", predicted_capacity=round(predicted, 1))
        rows.append(row)
        final = admin_stats(server)
        rss = rss_mb(server.pid)
    finally:
        code = server.stop()
        warnings = server.warnings()
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {
        "ghz": ghz_version(ghz),
        "commit": commit(),
        "machine": where,
        "environment": environment(),
        "descriptors": how,
        "texts": source,
        "questions": len(questions),
        "data_set": {**seeded, "cache": str(cached.relative_to(ROOT))},
        "records_at_start": records,
        "records_at_end": sum(n.record_count for n in final.namespaces),
        "serving_after_s": round(ready_s, 1),
        "index_settled_s": round(settled_s, 1),
        "duration": args.duration,
        "concurrency": args.concurrency,
        "rate_concurrency": args.rate_concurrency,
        "server_log_level": args.server_log_level,
        "server_rss_mb": {k: round(v, 1) for k, v in rss.items()},
        "server_exit_code": code,
        "server_warnings": len(warnings),
        "server_warning_sample": warnings[:5],
        "best_rps": {k: round(v, 1) for k, v in best.items()},
        "mixed_shares": dict(shares),
        "runs": rows,
    }
    out["limits"] = limits(out)
    out["verdict"] = verdict(out, args)
    return out


def _print_row(row: dict[str, Any]) -> None:
    c = row["cpu"]
    parts = "; ".join(
        f"{p['call']} {p['rps']}/s p50 {p['p50_ms']} p99 {p['p99_ms']} ms, {p['errors']} errors"
        for p in row["parts"]
    )
    log(
        f"{row['label']}: {parts}; server {c['server_cores']} cores (main thread"
        f" {c['main_thread_cores']}), ghz {c['ghz_cores']} cores"
    )


def commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{' (with uncommitted changes)' if dirty else ''}"


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu": _cpu_model(),
        "kernel": platform.release(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# ---------------------------------------------------------------------------------------------
# What limits it, the goal, the report


def _best_row(rows: list[dict[str, Any]], op: str) -> dict[str, Any] | None:
    closed = [r for r in rows if r.get("op") == op and r.get("mode") == "closed"]
    return max(closed, key=lambda r: r["rps"]) if closed else None


def limits(out: dict[str, Any]) -> list[str]:
    """What the closed-loop runs say limits Recall, in words (the figures are in `runs`)."""
    rows = out["runs"]
    cores = out["machine"]["affinity"]
    health, recall = _best_row(rows, "health"), _best_row(rows, "recall")
    lines = []
    if health and recall:
        h, r = health["cpu"], recall["cpu"]
        lines.append(
            f"transport ceiling: the empty Health.Check reached {health['rps']}/s"
            f" ({health['server_cpu_ms_per_call']} ms of server CPU a call, the server's main"
            f" thread {h['main_thread_cores']} of a core busy); Recall reached {recall['rps']}/s"
            f" ({_share(recall['rps'], health['rps'])} of it) at"
            f" {recall['server_cpu_ms_per_call']} ms of server CPU a call"
        )
        cached = _best_row(rows, "recall-cached")
        if cached:
            lines.append(
                f"the encoder: Recall with every query vector cached reached {cached['rps']}/s at"
                f" {cached['server_cpu_ms_per_call']} ms of server CPU a call, against"
                f" {recall['server_cpu_ms_per_call']} ms when each query is encoded"
            )
        used = r["server_cores"] + r["ghz_cores"]
        lines.append(
            f"at Recall's best ({recall['label']}): the server kept {r['server_cores']} cores"
            f" busy (its main thread, the event loop, {r['main_thread_cores']}; busiest other"
            f" threads {r['busiest_threads']}), ghz {r['ghz_cores']}: {used:.2f} of {cores}"
            f" cores"
        )
        if used >= 0.9 * cores:
            lines.append(
                "the cores are saturated: Recall is CPU-bound on this machine (server and ghz"
                " together); a faster Recall needs less CPU per call or more cores"
            )
        elif r["main_thread_cores"] >= 0.9:
            lines.append(
                "the event loop's thread is saturated while cores are left: the loop (gRPC"
                " transport, interceptors, handing work to the pools) limits it, not the work"
            )
        else:
            lines.append(
                "neither the cores nor the event loop are saturated: the pools' threads (the GIL,"
                " locks) or the concurrency bound it; see the busiest threads"
            )
    others = max((r["cpu"]["other_cores"] for r in rows), default=0.0)
    if others >= 0.2:
        lines.append(
            f"the machine was not quiet: other processes took up to {others} cores during a run"
            " (the `other cores` column): rerun on a quiet machine before reading these figures"
        )
    return lines


def _share(a: float, b: float) -> str:
    return f"{100.0 * a / b:.0f} %" if b else "n/a"


def verdict(out: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """What keeps the run from meeting the goal (≥ 2,000 Recall/s at p99 < 25 ms, on a run
    of the goal's size); empty: met."""
    why = []
    if args.size < GOAL_SIZE:
        why.append(f"a smoke run: {args.size} memories (the goal's data set is {GOAL_SIZE})")
    if args.recall_rate < GOAL_RPS:
        why.append(f"Recall asked at {args.recall_rate:g}/s, below the goal's {GOAL_RPS:g}/s")
    at_goal = [
        r
        for r in out["runs"]
        if r.get("op") == "recall"
        and r.get("mode") == "rate"
        and r["parts"][0]["rate_asked"] == round(args.recall_rate, 1)
    ]
    if not at_goal:
        why.append("no Recall run at the goal's rate")
    for r in at_goal:
        p = r["parts"][0]
        if not p.get("kept_rate"):
            why.append(f"Recall reached {p['rps']}/s of the {p['rate_asked']}/s asked")
        if not p["p99_ms"] < GOAL_P99_MS:
            why.append(f"Recall p99 {p['p99_ms']} ms (goal < {GOAL_P99_MS:g} ms)")
        if p["errors"]:
            why.append(f"{p['errors']} Recall errors {p['status_codes']}")
    return why


def table(out: dict[str, Any]) -> str:
    head = (
        "| run | call | c | asked/s | RPS | p50 ms | p99 ms | errors | server CPU ms/call"
        " | server cores | main thread | ghz cores | other cores |\n" + "|---" * 13 + "|"
    )
    lines = [head]
    for r in out["runs"]:
        c = r["cpu"]
        cpu = r["server_cpu_ms_per_call"]
        for n, p in enumerate(r["parts"]):
            first = n == 0
            asked = "" if p["rate_asked"] is None else f"{p['rate_asked']:g}"
            if p["rate_asked"] is not None and not p.get("kept_rate"):
                asked += " (not kept)"
            errs = str(p["errors"])
            if p["errors"]:
                errs += " " + ", ".join(
                    f"{k} {v}" for k, v in p["status_codes"].items() if k != "OK"
                )
            lines.append(
                f"| {r['label'] if first else ''} | {p['call']} | {p['concurrency']} | {asked}"
                f" | {p['rps']} | {p['p50_ms']} | {p['p99_ms']} | {errs}"
                f" | {cpu if first else ''} | {c['server_cores'] if first else ''}"
                f" | {c['main_thread_cores'] if first else ''}"
                f" | {c['ghz_cores'] if first else ''} | {c['other_cores'] if first else ''} |"
            )
        if len(r["parts"]) > 1:
            lines.append(
                f"| | **sum** | | {sum((p['rate_asked'] or 0) for p in r['parts']):g} | {r['rps']}"
                f" | | | {r['errors']} | | | | | |"
            )
    return "\n".join(lines)


def header(out: dict[str, Any]) -> str:
    m, g, d = out["machine"], out["ghz"], out["data_set"]
    v = out["environment"]["versions"]
    return "\n".join(
        [
            f"**ghz** {g.get('module', '?')} (pinned {g['pinned']}; `ghz --version`:"
            f" {g.get('ghz --version', '?')!r}); the methods from {out['descriptors']}."
            f" **Server** commit {out['commit']}, Python {out['environment']['python']},"
            f" grpcio {v.get('grpcio')}, log level {out['server_log_level']}.",
            f"**Machine**: {m['nproc']} cores ({m['affinity']} usable), {m['memory_gib']} GiB,"
            f" {m['cpu']}; load average before {m['load_before']}. ghz runs on the same cores as"
            " the server: the CPU it takes is the server's loss, so these figures understate"
            " what the server alone sustains (ghz's share is the last column).",
            f"**Data**: {out['records_at_start']} memories in {d['namespaces']} namespaces"
            f" ({out['texts']}, repeated with variations), seeded once into `{d['cache']}`;"
            f" {out['questions']} probing questions as Recall queries; each run"
            f" {out['duration']}, closed-loop at c = {out['concurrency']}, fixed rates at"
            f" c = {out['rate_concurrency']}.",
        ]
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench loadtest", description=(__doc__ or "").split("\n")[0]
    )
    ap.add_argument("--size", type=int, default=GOAL_SIZE, help="memories in the data set")
    ap.add_argument("--namespaces", type=int, default=10, help="namespaces they are dealt over")
    ap.add_argument("--duration", default="30s", help="each measured run (ghz's -z)")
    ap.add_argument("--warmup", default="5s", help="each call's warm-up run, thrown away")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 32], help="closed-loop runs")
    ap.add_argument(
        "--rate-concurrency",
        type=int,
        default=48,
        help="calls in flight at most in the fixed-rate runs (below the lanes' bound of 64)",
    )
    ap.add_argument("--recall-rate", type=float, default=GOAL_RPS, help="Recall's fixed rate")
    ap.add_argument("--mixed-rate", type=float, default=0.0, help="0: 80 %% of the predicted")
    ap.add_argument("--server-log-level", default="INFO", choices=["INFO", "WARNING"])
    ap.add_argument("--reseed", action="store_true", help="seed the data set again")
    ap.add_argument("--data", type=Path, default=DATA, help="MemoryBank's directory")
    ap.add_argument(
        "--allow-generated",
        action="store_true",
        help="measure on generated texts when MemoryBank is missing (figures do not compare)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    ap.add_argument("--ghz", default=str(GHZ))
    ap.add_argument("--json", type=Path, help="write the result here")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False))
    print(header(out))
    print()
    print(table(out))
    print()
    for line in out["limits"]:
        print(f"- {line}")
    why = out["verdict"]
    print(
        "\ngoal (≥ 2,000 Recall/s at p99 < 25 ms) "
        + ("met" if not why else "not met: " + "; ".join(why))
    )
    return 0
