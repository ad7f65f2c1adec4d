"""The Go client (clients/go) against a real server with bearer tokens on: its tests, the live
ones included (they run only with POCKETD_TARGET), and its agent-loop example.

Needs the `go` command; the modules come from the Go module proxy (pinned by clients/go/go.sum)
unless `go mod download` fetched them already. The first build of grpc takes a minute or two on
two cores, hence the long timeouts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

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
LIVE_TESTS = (
    "TestLiveRememberRecall",
    "TestLiveBadRequestNamesTheField",
    "TestLiveTask",
    "TestLiveLifecycle",
    "TestLiveMedia",
)


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


def test_the_readmes_go_snippet_type_checks(tmp_path: Path) -> None:
    """The README's Go lines compile against the client as it is, in a `main` that declares the
    names they leave to the reader (`ctx`, `budget`, `searchTool`, `model`, `search`). The
    snippet leaves its error checks out, so the only errors allowed are Go's "declared and not
    used"; a renamed method, a field of another type or a wrong signature fails."""
    m = re.search(r"```go\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert m, "README lost its Go snippet"
    body = "\n".join("\t" + line for line in m.group(1).splitlines())
    (tmp_path / "go.mod").write_text("module readme\n\ngo 1.26.0\n")
    (tmp_path / "go.work").write_text(f"go 1.26.0\n\nuse (\n\t.\n\t{GO_DIR.as_posix()}\n)\n")
    (tmp_path / "main.go").write_text(
        "package main\n\n"
        'import (\n\t"context"\n\t"os"\n\n'
        '\tpocketd "github.com/pocketd/pocketd/clients/go"\n'
        '\tpb "github.com/pocketd/pocketd/clients/go/pocketd/v1"\n)\n\n'
        "var (\n\tctx        = context.Background()\n\tbudget     *pb.TaskBudget\n"
        "\tsearchTool string\n)\n\n"
        "func model(prompt string) (string, uint64, uint64) { return prompt, 0, 0 }\n\n"
        "func search(params string) (string, error) { return params, nil }\n\n"
        "func main() {\n" + body + "\n}\n"
    )
    env = dict(os.environ, GOWORK=str(tmp_path / "go.work"), GOFLAGS="-mod=readonly")
    out = subprocess.run(
        ["go", "build", "-gcflags=-e", "-o", os.devnull, "."],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    errors = [
        line
        for line in (out.stdout + out.stderr).splitlines()
        if line.startswith("./main.go:") and ": declared and not used: " not in line
    ]
    assert not errors, out.stdout + out.stderr
    assert out.returncode == 0 or "declared and not used" in out.stderr, out.stderr
