"""The TypeScript client (clients/ts) against a real server with auth: its test suite with the
live tests on (not skipped), and its agent-loop example, which prints what the Python one does.

Needs Node.js 20+ and `npm ci --prefix clients/ts`; without them these tests fail, naming the
command (they never skip silently).
"""

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
from tests.e2e.conftest import Proc

pytestmark = pytest.mark.e2e
PACKAGE = ROOT / "clients" / "ts"
SETUP = "npm ci --prefix clients/ts"
TOKEN = "acme-ts-token-0123456789abcdef"
LIVE_TESTS = (
    "live: remember then recall round trip",
    "live: a bad request names the field",
    "live: reconcile, unsupersede, end a session and maintain",
    "live: a screenshot remembered, then found by its code",
    "live: a task opened, reserved, committed, stepped and closed",
)
# A loaded two-core machine compiles the package and its generated stubs slowly.
NPM_TIMEOUT = 600


def npm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    npm_bin = shutil.which("npm")
    if npm_bin is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed (Node.js 20+), then `" + SETUP + "`")
    for need in ("typescript", "@grpc/grpc-js", "@bufbuild/protobuf"):
        if not (PACKAGE / "node_modules" / need / "package.json").exists():
            pytest.fail(f"clients/ts/node_modules lacks {need}: run `{SETUP}`")
    return subprocess.run(
        [npm_bin, *args],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT,
    )


def client_env(target: str, token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POCKETD_")}
    env.update(POCKETD_TARGET=target, npm_config_update_notifier="false")
    if token is not None:
        env["POCKETD_TOKEN"] = token
    return env


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """A server that answers only calls with TOKEN (tenant acme)."""
    tokens = [{"tenant": "acme", "sha256": token_sha256(TOKEN)}]
    p = Proc(
        tmp_path_factory.mktemp("ts") / "data",
        env={"POCKETD__AUTH__TOKENS": json.dumps(tokens)},
    )
    try:
        p.wait_serving(timeout=300)
        yield p
    finally:
        p.close()


def test_the_ts_suite_passes_with_its_live_tests(server: Proc) -> None:
    out = npm("test", env=client_env(server.target, TOKEN))
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    for name in LIVE_TESTS:
        assert name in log, f"{name!r} did not run:\n{log}"
    assert "SKIPPED" not in log and "# SKIP" not in log, log
    # node:test's closing counts (TAP "# pass 9", spec "ℹ pass 9"): every test ran and passed.
    counts = {k: int(v) for k, v in re.findall(r"^\S*\s*(pass|fail|skipped) (\d+)$", log, re.M)}
    assert counts.get("fail") == 0 and counts.get("skipped") == 0, log
    assert counts.get("pass", 0) >= 20, log


def test_the_ts_agent_loop_example(server: Proc) -> None:
    out = npm("run", "--silent", "example", "--", server.target, env=client_env("", TOKEN))
    assert out.returncode == 0, out.stdout + out.stderr
    first, spent = out.stdout.strip().splitlines()[-2:]
    assert first == "Your order shipped on Monday. | tier: simple | rounds: 2"
    assert re.fullmatch(r"spent: \d+ micros", spent) and int(spent.split()[1]) > 0, spent


def test_the_readme_installs_the_ts_client_before_its_example() -> None:
    """On a fresh clone `npm run example` alone fails (`tsc: not found`): every command line of
    the README that runs the example installs the pinned dependencies first."""
    readme = (ROOT / "README.md").read_text()
    runs = [line for line in readme.splitlines() if "npm run example --prefix clients/ts" in line]
    assert runs, "the README no longer shows how to run the TypeScript example"
    for line in runs:
        assert line.index(SETUP + " && ") < line.index("npm run example"), line


def test_the_ts_example_fails_without_the_token(server: Proc) -> None:
    out = npm("run", "--silent", "example", env=client_env(server.target, None))
    assert out.returncode != 0, out.stdout
    assert "UNAUTHENTICATED" in out.stderr, out.stderr


def test_the_package_pins_exact_versions() -> None:
    """The committed lock file pins what `npm ci` installs, the generator included."""
    package = json.loads((PACKAGE / "package.json").read_text())
    lock = json.loads((PACKAGE / "package-lock.json").read_text())
    for deps in (package["dependencies"], package["devDependencies"]):
        for name, version in deps.items():
            assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} {version} is not exact"
            assert lock["packages"][f"node_modules/{name}"]["version"] == version, name


def test_the_readmes_typescript_snippet_type_checks(tmp_path: Path) -> None:
    """The README's ten lines of TypeScript compile against the client as it is (tsc, strict),
    with the names it leaves to the reader (`budget`, `SEARCH`, `model`, `search`) declared."""
    tsc = PACKAGE / "node_modules" / ".bin" / "tsc"
    if shutil.which("node") is None or not tsc.exists():
        pytest.fail("node and clients/ts/node_modules are needed: `" + SETUP + "`")
    m = re.search(r"```ts\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert m, "README lost its TypeScript snippet"
    index = (PACKAGE / "src" / "index.js").as_posix()
    assert '"@pocketd/client"' in m.group(1)
    client = f'import("{index}")'
    (tmp_path / "readme.mts").write_text(
        f'declare const budget: Parameters<{client}.PocketdClient["task"]>[1];\n'
        f'declare const SEARCH: NonNullable<{client}.StepFields["tools"]>[number];\n'
        "declare function model(context: unknown): [string, number, number];\n"
        "declare function search(params: unknown): string;\n"
        + m.group(1).replace('"@pocketd/client"', f'"{index}"')
    )
    config = {
        "extends": (PACKAGE / "tsconfig.json").as_posix(),
        "compilerOptions": {
            "noEmit": True,
            "rootDir": "/",
            "typeRoots": [(PACKAGE / "node_modules" / "@types").as_posix()],
        },
        "include": [(tmp_path / "readme.mts").as_posix()],
    }
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    out = subprocess.run(
        [str(tsc), "-p", str(tmp_path / "tsconfig.json")],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
