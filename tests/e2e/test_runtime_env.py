"""The container's runtime stage, tested without a Docker engine (docs/container.md).

requirements/runtime.txt follows pyproject's dependencies; the Dockerfile, .dockerignore and
compose.yaml say what the docs and tools/runtime_env.py assume; and a venv built from the pinned
list alone, the way the Dockerfile's builder makes /opt/venv (`tools/runtime_env.py build`: no
pip of its own, `pip install --no-deps`, the app installed editable beside its models), imports
onnxruntime and no torch, refuses to listen beyond loopback without tokens, and serves the smoke
calls (Remember, Recall, Stats, a ledger OpenTask, /metrics, grpc_health_probe) from `pocketd
serve` run as the image runs it: a config file with tokens, the data directory as its working
directory, the POCKETD__SERVER__* variables.

The first run builds the venv (about 0.6 GB; pip's cache makes the next build quick) and
grpc_health_probe (with `go`, else that test is skipped); later runs reuse build/runtime-env.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from packaging.requirements import Requirement

from pocketd import Client
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import ledger_service_pb2_grpc as lpb_grpc
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc
from tests.conftest import ROOT, load_tool

pytestmark = pytest.mark.e2e

TOOL = ROOT / "tools" / "runtime_env.py"
TOKEN = "runtime-env-token-0123456789abcdef"
LISTEN_RE = re.compile(r"listening on [^ ]+:(\d+)")
METRICS_RE = re.compile(r"metrics on http://[^ ]+:(\d+)/metrics")
# Never in the runtime venv: the export-only model stack, the stub generator, the build backend,
# pip itself and the dev tools.
ABSENT = (
    "torch",
    "transformers",
    "grpc_tools",
    "setuptools",
    "pip",
    "pytest",
    "hypothesis",
    "mypy",
)


rt = load_tool("runtime_env")


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would leak the checkout or .venv into the child."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("POCKETD__")}
    return {**env, **extra}


# --- the files, statically -------------------------------------------------------------------


def test_runtime_requirements_follow_pyproject() -> None:
    pins = rt.read_pins()
    for spec in rt.project_requirements():
        req = Requirement(spec)
        name = rt.canonical(req.name)
        if name in rt.BUILD_ONLY:
            assert name not in pins, f"{name} is build-only, yet pinned in {rt.REQUIREMENTS}"
            continue
        assert name in pins, (
            f"{name} (pyproject) is not in {rt.REQUIREMENTS}: run `make runtime-lock`"
        )
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} in {rt.REQUIREMENTS} does not satisfy pyproject's {spec!r}:"
            " run `make runtime-lock`"
        )
    banned = {"torch", "transformers", "grpcio-tools", "setuptools", "pip", "pytest", "mypy"}
    assert not banned & pins.keys()


def test_build_only_requirements_are_never_imported_at_run_time() -> None:
    """grpcio-tools is left out of the image: nothing the image ships imports grpc_tools."""
    shipped = [ROOT / "server", ROOT / "kernels", ROOT / "clients" / "python" / "pocketd"]
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for base in shipped
        for path in sorted(base.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"\s*(import grpc_tools|from grpc_tools)", line)
    ]
    assert not offenders, offenders


def stages(text: str) -> dict[str, str]:
    """The Dockerfile's stages by name, each its lines up to the next FROM."""
    out: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=FROM )", text):
        if m := re.match(r"FROM (\S+) AS (\S+)", chunk):
            out[m.group(2)] = chunk
    return out


def test_the_dockerfile_builds_what_the_tool_builds() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    st = stages(text)
    assert list(st) == ["probe", "builder", "runtime"]
    assert f"ARG GRPC_HEALTH_PROBE_VERSION={rt.PROBE_VERSION}" in st["probe"]
    assert rt.PROBE_MODULE in st["probe"]
    builder, runtime = st["builder"], st["runtime"]
    assert "FROM python:3.11-slim-bookworm AS builder" in builder
    assert "FROM python:3.11-slim-bookworm AS runtime" in runtime
    assert "COPY requirements/runtime.txt /src/runtime.txt" in builder
    assert "python -m venv --without-pip /opt/venv" in builder
    assert "install --no-deps -r /src/runtime.txt" in builder
    assert "fetch_models.py --out /app/models" in builder
    for rel in rt.APP_FILES:
        assert re.search(rf"(?m)^COPY .*\b{re.escape(rel)}\b.* /app/", builder), rel
    assert "install --no-deps -e /app" in builder
    # The runtime stage: no pip install, no compiler, no torch; a user; the volume; the checks.
    code = "\n".join(line for line in runtime.splitlines() if not line.lstrip().startswith("#"))
    for banned in ("pip install", "apt-get", "torch", "gcc"):
        assert banned not in code, banned
    assert "ARG UID=10001" in runtime and "USER ${UID}:${UID}" in runtime
    assert 'VOLUME ["/data"]' in runtime
    for env in (
        "POCKETD__SERVER__LISTEN=0.0.0.0:50051",
        "POCKETD__SERVER__DATA_DIR=/data",
        "POCKETD__SERVER__METRICS_LISTEN=0.0.0.0:9464",
    ):
        assert env in runtime, env
    assert "EXPOSE 50051 9464" in runtime
    assert 'CMD ["grpc_health_probe", "-addr=127.0.0.1:50051",' in runtime
    assert 'ENTRYPOINT ["pocketd"]' in runtime and 'CMD ["serve"]' in runtime


def test_the_build_context_holds_what_the_dockerfile_copies() -> None:
    patterns = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "*" in patterns, "an allowlist: everything else stays out of the context"
    allowed = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    needed = {*rt.APP_FILES, "requirements/runtime.txt", "tools/fetch_models.py"}
    assert needed <= allowed, needed - allowed


def test_compose_runs_pocketd_with_tokens_a_volume_and_redis() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    pocketd, redis = compose["services"]["pocketd"], compose["services"]["redis"]
    assert pocketd["build"] == "."
    assert "pocketd-data:/data" in pocketd["volumes"]
    assert "50051:50051" in pocketd["ports"] and "127.0.0.1:9464:9464" in pocketd["ports"]
    target = pocketd["configs"][0]["target"]
    assert pocketd["command"] == ["serve", "--config", target]
    config = yaml.safe_load(compose["configs"]["pocketd-config"]["content"])
    assert config["auth"]["tokens"][0]["sha256"] == "${POCKETD_TOKEN_SHA256:-}"
    assert redis["image"] == "redis:7" and "ports" not in redis


# --- the runtime venv ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime_env() -> Any:
    """build/runtime-env, built (or brought up to date) by the tool, as `make runtime-env` does."""
    subprocess.run([sys.executable, str(TOOL), "build"], check=True, timeout=1800)
    return rt.paths()


def run_python(env: Any, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(env.python), "-c", code],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_runtime_env_has_onnxruntime_and_no_torch(runtime_env: Any, tmp_path: Path) -> None:
    ok = run_python(
        runtime_env,
        "import onnxruntime, onnxruntime_extensions, numba, usearch, tantivy, tokenizers, jieba\n"
        "import server.app, pocketd\n"
        "print(onnxruntime.get_available_providers(), server.app.__file__, pocketd.__file__)",
        tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert "CPUExecutionProvider" in ok.stdout
    # The app as the image holds it (the staged copy), not the checkout.
    assert ok.stdout.count(str(runtime_env.app)) == 2, ok.stdout
    for module in ABSENT:
        out = run_python(runtime_env, f"import {module}", tmp_path)
        assert out.returncode != 0, f"{module} is importable in the runtime venv"
        assert f"No module named '{module}'" in out.stderr, out.stderr


def test_beyond_loopback_without_tokens_it_refuses_to_start(
    runtime_env: Any, tmp_path: Path
) -> None:
    """The image's listen address with no config: exit 2, one line naming the setting."""
    out = subprocess.run(
        [str(runtime_env.pocketd), "serve"],
        cwd=tmp_path,
        env=clean_env(
            POCKETD__SERVER__LISTEN="0.0.0.0:50051", POCKETD__SERVER__DATA_DIR=str(tmp_path)
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr
    assert "server.allow_unauthenticated" in out.stderr and "Traceback" not in out.stderr


class RuntimeServer:
    """`pocketd serve` from the runtime venv, configured as the image runs it."""

    def __init__(self, env: Any, data: Path) -> None:
        data.mkdir(parents=True)
        config = data / "pocketd.yaml"
        token_sha = hashlib.sha256(TOKEN.encode()).hexdigest()
        tokens = [{"tenant": "acme", "sha256": token_sha, "namespaces": ["*"]}]
        config.write_text(yaml.safe_dump({"auth": {"tokens": tokens}}), encoding="utf-8")
        self.p = subprocess.Popen(
            [str(env.pocketd), "serve", "--config", str(config)],
            cwd=data,
            env=clean_env(
                # The image's variables, on loopback and free ports here.
                POCKETD__SERVER__LISTEN="127.0.0.1:0",
                POCKETD__SERVER__DATA_DIR=str(data),
                POCKETD__SERVER__METRICS_LISTEN="127.0.0.1:0",
                # Compiled kernels kept between runs (the image keeps them in /data).
                NUMBA_CACHE_DIR=str(rt.OUT / "numba-cache"),
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        self.port = self.metrics_port = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.p.stderr is not None
        for line in self.p.stderr:
            self.log.append(line)
            if (m := LISTEN_RE.search(line)) and not self.port:
                self.port = int(m.group(1))
            if (m := METRICS_RE.search(line)) and not self.metrics_port:
                self.metrics_port = int(m.group(1))

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait_serving(self, timeout: float = 600.0) -> None:
        deadline = time.monotonic() + timeout
        serving = health_pb2.HealthCheckResponse.SERVING
        while time.monotonic() < deadline and self.p.poll() is None:
            if self.port:
                with grpc.insecure_channel(self.target) as ch:
                    try:
                        req = health_pb2.HealthCheckRequest()
                        if health_pb2_grpc.HealthStub(ch).Check(req, timeout=2).status == serving:
                            return
                    except grpc.RpcError:
                        pass
            time.sleep(0.2)
        raise AssertionError("never SERVING:\n" + "".join(self.log))

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(60)
        self._reader.join(5)
        if self.p.stderr is not None:
            self.p.stderr.close()


@pytest.fixture(scope="module")
def server(runtime_env: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeServer]:
    s = RuntimeServer(runtime_env, tmp_path_factory.mktemp("runtime") / "data")
    try:
        s.wait_serving()
        yield s
    finally:
        s.close()


def test_grpc_health_probe_says_serving(server: RuntimeServer) -> None:
    """The image's HEALTHCHECK command, built as its probe stage builds it."""
    if shutil.which("go") is None and not rt.probe_path().is_file():
        pytest.skip("grpc_health_probe is built from its Go module: no `go` on PATH")
    subprocess.run([sys.executable, str(TOOL), "probe"], check=True, timeout=1200)
    out = subprocess.run(
        [str(rt.probe_path()), f"-addr={server.target}", "-connect-timeout=3s", "-rpc-timeout=3s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SERVING" in out.stdout + out.stderr


def test_the_runtime_env_serves_the_smoke_calls(server: RuntimeServer) -> None:
    with Client(server.target, timeout=60, token=TOKEN) as pocket:
        r = pocket.remember("ops", "The invoice for order 8812 is overdue", kind="fact")
        assert r.stored, r
        hits = pocket.recall("ops", "order 8812").hits
        assert hits and hits[0].memory.text == "The invoice for order 8812 is overdue"
        stats = {n.namespace: n for n in pocket.stats("ops").namespaces}
        assert stats["ops"].record_count == 1
    auth = [("authorization", f"Bearer {TOKEN}")]
    with grpc.insecure_channel(server.target) as ch:
        budget = lpb.TaskBudget(total_micros=1000, emergency_ratio=0.1)
        lpb_grpc.LedgerServiceStub(ch).OpenTask(
            lpb.OpenTaskRequest(task_id="t1", namespace="ops", budget=budget),
            metadata=auth,
            timeout=60,
        )
        with pytest.raises(grpc.RpcError) as anon:
            spb_grpc.MemoryServiceStub(ch).Recall(
                spb.RecallRequest(namespace="ops", query_text="invoice"), timeout=60
            )
        assert anon.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert server.metrics_port, "".join(server.log)
    url = f"http://127.0.0.1:{server.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=60) as resp:
        text = resp.read().decode()
    assert 'method="LedgerService/OpenTask"' in text and "pocketd_calls_total" in text


def test_it_stops_cleanly_on_sigterm(server: RuntimeServer) -> None:
    """`docker stop` sends SIGTERM to the entrypoint: drain, exit 0."""
    server.p.send_signal(signal.SIGTERM)
    assert server.p.wait(120) == 0, "".join(server.log)
    assert not any("Traceback" in line for line in server.log), "".join(server.log)


def test_the_size_report_adds_up(runtime_env: Any, tmp_path: Path) -> None:
    out = tmp_path / "size.json"
    subprocess.run([sys.executable, str(TOOL), "size", "--json", str(out)], check=True, timeout=600)
    r = json.loads(out.read_text())
    assert r["total_bytes"] == r["base"]["on_disk_bytes"] + sum(x["bytes"] for x in r["layers"])
    assert r["of_which_models_bytes"] > 70_000_000  # the encoder's 72 MB graph
    venv = next(x for x in r["layers"] if x["name"] == "venv")
    assert 100_000_000 < venv["bytes"] < 2_000_000_000
