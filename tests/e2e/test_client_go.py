"""The Go client (clients/go) against a real server with bearer tokens on: its tests, the live
ones included (they run only with POCKETD_TARGET), and its agent-loop example.

Needs the `go` command; the modules come from the Go module proxy (pinned by clients/go/go.sum)
unless `go mod download` fetched them already. The first build of grpc takes a minute or two on
two cores, hence the long timeouts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from server.api.auth import token_sha256
from tests.conftest import ROOT
from tests.e2e.conftest import Proc, spawn

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("go") is None, reason="no go command (Go 1.26 or newer)"),
]
GO_DIR = ROOT / "clients" / "go"
TOKEN = "go-client-token-0123456789abcdef"
LIVE_TESTS = ("TestLiveRememberRecall", "TestLiveBadRequestNamesTheField", "TestLiveTask")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    tokens = [{"tenant": "acme", "sha256": token_sha256(TOKEN)}]
    procs: list[Proc] = []
    try:
        yield spawn(
            procs,
            tmp_path_factory.mktemp("go") / "data",
            env={"POCKETD__AUTH__TOKENS": json.dumps(tokens)},
        )
    finally:
        for p in procs:
            p.close()


def go(server: Proc, *args: str, token: str = TOKEN) -> subprocess.CompletedProcess[str]:
    """`go ARGS` in clients/go, with the server's target and a token in the environment."""
    env = dict(os.environ, POCKETD_TARGET=server.target, POCKETD_TOKEN=token)
    return subprocess.run(
        ["go", *args], cwd=GO_DIR, env=env, capture_output=True, text=True, timeout=900
    )


def test_go_tests_pass_live(server: Proc) -> None:
    out = go(server, "test", "-count=1", "-v", "./...")
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    for name in LIVE_TESTS:
        assert f"--- PASS: {name} " in log, f"{name} did not run and pass:\n{log}"
    assert "--- SKIP" not in log, log


def test_go_agent_loop_example(server: Proc) -> None:
    out = go(server, "run", "./examples/agent_loop", server.target)
    assert out.returncode == 0, out.stderr
    first, spent = out.stdout.strip().splitlines()
    assert first == "Your order shipped on Monday. | tier: simple | rounds: 2"
    words = spent.split()
    assert words[0] == "spent:" and int(words[1]) > 0 and words[2] == "micros", spent


def test_go_example_refuses_a_wrong_token(server: Proc) -> None:
    out = go(server, "run", "./examples/agent_loop", token="not-the-token")
    assert out.returncode != 0
    assert "Unauthenticated" in out.stderr, out.stderr
