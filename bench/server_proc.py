"""Spawn `pocketd serve` as a real process, learn its port from the log, wait for SERVING.

Shared by the benchmarks and the end-to-end tests.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
LISTEN_RE = re.compile(r"listening on [^ ]+:(\d+)")


def serve_command(data: Path, listen: str = "127.0.0.1:0", config: Path | None = None) -> list[str]:
    """The command line of `pocketd serve`, run with this interpreter."""
    cmd = [sys.executable, "-m", "server", "serve", "--listen", listen, "--data-dir", str(data)]
    return cmd if config is None else [*cmd, "--config", str(config)]


class ServerProcess:
    """One `python -m server serve` child; its stderr log is collected in `log`."""

    def __init__(
        self,
        data: Path,
        env: dict[str, str] | None = None,
        config: Path | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        self.p = subprocess.Popen(
            [*serve_command(data, config=config), *(extra_args or [])],
            cwd=ROOT,
            env=dict(os.environ, **(env or {})),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started = time.monotonic()
        self.log: list[str] = []
        self.port: int | None = None
        self._seen = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.p.stderr is not None
        for line in self.p.stderr:
            self.log.append(line)
            m = LISTEN_RE.search(line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self._seen.set()
        self._seen.set()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.p.pid

    def wait_serving(self, timeout: float = 60.0) -> float:
        """Block until health says SERVING; return seconds since the process was started."""
        deadline = self.started + timeout
        if not self._seen.wait(timeout) or not self.port:
            raise RuntimeError("server did not start:\n" + "".join(self.log))
        serving = health_pb2.HealthCheckResponse.SERVING
        with grpc.insecure_channel(self.target) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            while time.monotonic() < deadline:
                try:
                    if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == serving:
                        return time.monotonic() - self.started
                except grpc.RpcError:
                    pass
                if self.p.poll() is not None:
                    break
                time.sleep(0.02)
        raise RuntimeError("server never reported SERVING:\n" + "".join(self.log))

    def wait_log(self, text: str, timeout: float) -> bool:
        """Whether a log line holding `text` came within `timeout` s (polled: the log is read by
        its own thread)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in list(self.log)):
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Send `sig`, wait for the exit, return the exit code."""
        self.p.send_signal(sig)
        code = self.p.wait(timeout)
        self.close()
        return code

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self._reader.join(5)
        if self.p.stderr is not None:
            self.p.stderr.close()
