"""A real redis-server for the tests of the hot tier's Redis backend: on a free loopback port,
without persistence, stopped (or killed, and started again on the same port) by the test.

CI installs `redis-server` (`.ci/run`); without it these tests fail and say how to install it,
unless POCKETD_SKIP_REDIS=1 (then they are skipped).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

INSTALL = (
    "redis-server is not installed: run `apt-get install redis-server`"
    " (or set POCKETD_SKIP_REDIS=1 to skip the Redis tests)"
)
# Generous: a loaded 2-core machine can take seconds to start a process.
START_SECONDS = 60.0


def redis_binary() -> str:
    """The redis-server command; fails the test (or skips it with POCKETD_SKIP_REDIS=1)."""
    found = shutil.which("redis-server")
    if found is None:
        if os.environ.get("POCKETD_SKIP_REDIS") == "1":
            pytest.skip("redis-server is not installed and POCKETD_SKIP_REDIS=1")
        pytest.fail(INSTALL)
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process in `workdir`, on one port for its whole life (so that a
    client's URL stays valid across `kill` and `start`)."""

    def __init__(self, workdir: Path) -> None:
        self.binary = redis_binary()
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (empty: nothing is saved) and wait until it answers PING."""
        assert self.proc is None, "already running"
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 - the process holds it
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        client = redis.Redis(port=self.port, socket_connect_timeout=1.0, socket_timeout=1.0)
        deadline = time.monotonic() + START_SECONDS
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    pass
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log_text = (self.workdir / "redis.log").read_text(errors="replace")
                    self.stop()
                    pytest.fail(f"redis-server on port {self.port} did not start:\n{log_text}")
                time.sleep(0.02)
        finally:
            client.close()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL: no goodbye to its clients)."""
        assert self.proc is not None, "not running"
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
