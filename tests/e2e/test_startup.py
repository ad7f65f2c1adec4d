"""Start-up as an operator meets it: bad settings, a busy port, a missing or mismatched model, a
server started from another directory, `make run` overrides and the JSON log."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.server_proc import ServerProcess, serve_command
from pocketd import Client
from tests.conftest import MODEL_DIR, ROOT

pytestmark = pytest.mark.e2e


def serve(
    tmp: Path, *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*serve_command(tmp / "data"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, **(env or {})),
    )


def one_line_exit_2(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pocketd: "), out.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"POCKETD__MEMORY__INDEX__BATCH_SIZE": "0"}, "memory.index.batch_size"),
        ({"POCKETD__ENCODER__BATCH_SIZE": "0"}, "encoder.batch_size"),
        ({"POCKETD__LIMITS__MAX_BATCH_ITEMS": "0"}, "limits.max_batch_items"),
        ({"POCKETD__MEMORY__WRITE_POLICY__BASE_IMPORTANCE": "9"}, "base_importance"),
        ({"POCKETD__MEMORY__HOT__TTL_SECONDS": "-1"}, "memory.hot.ttl_seconds"),
    ],
)
def test_out_of_range_settings_exit_2_naming_the_key(
    tmp_path: Path, env: dict[str, str], key: str
) -> None:
    one_line_exit_2(serve(tmp_path, env=env), key)


def test_a_port_out_of_range_exits_2(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "server", "serve", "--listen", "127.0.0.1:99999"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    one_line_exit_2(out, "server.listen", "99999")


def test_a_busy_port_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        out = subprocess.run(
            [*serve_command(tmp_path / "d", listen=f"127.0.0.1:{port}")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    one_line_exit_2(out, f"127.0.0.1:{port}", "in use")


def test_a_busy_metrics_port_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        out = subprocess.run(
            serve_command(tmp_path / "d"),
            cwd=ROOT,
            env={**os.environ, "POCKETD__SERVER__METRICS_LISTEN": f"127.0.0.1:{port}"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    one_line_exit_2(out, "cannot serve metrics on", f"127.0.0.1:{port}")


def test_a_missing_model_exits_2_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-model"
    out = serve(tmp_path, env={"POCKETD__ENCODER__MODEL_DIR": str(missing)})
    one_line_exit_2(out, str(missing / "model.onnx"), "encoder.model_dir")


def test_a_dimension_the_encoder_cannot_make_exits_2(tmp_path: Path) -> None:
    out = serve(tmp_path, env={"POCKETD__MEMORY__EMBEDDING_DIM": "384"})
    one_line_exit_2(out, "memory.embedding_dim is 384", "512")


def test_started_from_another_directory_it_finds_the_built_in_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POCKETD__")}
    p = subprocess.Popen(
        [sys.executable, "-m", "server", "serve", "--listen", "127.0.0.1:0", "--data-dir", "d"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stderr is not None
        for line in p.stderr:
            assert "make models" not in line, line
            if "SERVING on" in line:
                break
        else:
            pytest.fail("the server exited before SERVING")
    finally:
        p.terminate()
        p.wait(60)
        if p.stderr is not None:
            p.stderr.close()
    assert (tmp_path / "d" / "records.sqlite3").exists()
    assert MODEL_DIR == ROOT / "models" / "use-m3"


def test_make_run_passes_only_the_overrides_it_is_given() -> None:
    def dry(*args: str) -> str:
        return subprocess.run(
            ["make", "-n", "-o", "setup", "run", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    assert "--listen" not in dry()  # so POCKETD__SERVER__LISTEN=… make run is honoured
    assert "--listen 0.0.0.0:6000" in dry("LISTEN=0.0.0.0:6000")
    assert "--data-dir /tmp/pd" in dry("DATA_DIR=/tmp/pd")


def test_json_log_has_one_object_per_call(tmp_path: Path) -> None:
    p = ServerProcess(
        tmp_path / "data",
        env={"POCKETD__ENCODER__MODEL_DIR": str(MODEL_DIR)},
        extra_args=["--log-format", "json"],
    )
    try:
        p.wait_serving()
        with Client(p.target) as c:
            c.remember("logs", "The deploy window is Friday 14:00", kind="fact")
            c.stats("logs")
    finally:
        assert p.stop() == 0
    records = [json.loads(line) for line in p.log]
    calls = [r for r in records if r["logger"] == "pocketd.calls"]
    assert [(r["method"], r["status"], r["namespace"]) for r in calls] == [
        ("Remember", "OK", "logs"),
        ("Stats", "OK", "logs"),
    ]
    assert all(isinstance(r["ms"], float) and r["items"] >= 0 for r in calls)
    assert not any("Friday" in json.dumps(r) for r in records)


def test_a_port_with_connections_in_time_wait_is_not_refused(tmp_path: Path) -> None:
    """After a restart the old server's connections linger in TIME_WAIT on its port; gRPC can
    bind it, so the listen check must not call it busy."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        accepted.close()  # the server side closes first: its end goes to TIME_WAIT
        client.recv(1)
        client.close()
    p = ServerProcess(
        tmp_path / "data",
        env={"POCKETD__ENCODER__MODEL_DIR": str(MODEL_DIR)},
        extra_args=["--listen", f"127.0.0.1:{port}"],
    )
    try:
        p.wait_serving()
        assert p.port == port
    finally:
        assert p.stop() == 0
