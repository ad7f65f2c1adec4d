"""TypeScript stubs for clients/ts, made by ts-proto through grpcio-tools' protoc.

ts-proto is a devDependency of clients/ts pinned to one version (package.json and
package-lock.json), so `npm ci --prefix clients/ts` installs the generator this module runs. The
output leaves the generators' versions out of its header (`annotateFilesWithVersion=false`),
and both are pinned anyway (ts-proto here, grpcio-tools in pyproject.toml), so the same checkout
generates the same bytes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gen_stubs

NAME = "ts"
OUT = Path("clients/ts/src/gen")
PACKAGE = gen_stubs.ROOT / "clients" / "ts"
PLUGIN = PACKAGE / "node_modules" / ".bin" / "protoc-gen-ts_proto"
SETUP = "npm ci --prefix clients/ts"
# ES modules (`.js` import suffixes, as tsconfig's NodeNext resolution wants), @grpc/grpc-js
# service definitions and clients, Buffers for bytes, Dates for Timestamps, numbers for 64-bit
# integers (every pocketd 64-bit value fits in 2^53).
OPTIONS = (
    "outputServices=grpc-js",
    "esModuleInterop=true",
    "env=node",
    "importSuffix=.js",
    "useDate=true",
    "forceLong=number",
    "annotateFilesWithVersion=false",
)


def _version(package_json: Path) -> str:
    return str(json.loads(package_json.read_text())["version"])


def available() -> str:
    """ "" when node and the pinned ts-proto are installed, else what to run."""
    if shutil.which("node") is None:
        return "node is not on PATH (Node.js 20 or later), then run `" + SETUP + "`"
    installed = PACKAGE / "node_modules" / "ts-proto" / "package.json"
    if not PLUGIN.exists() or not installed.exists():
        return f"ts-proto is not installed: run `{SETUP}`"
    pinned = json.loads((PACKAGE / "package.json").read_text())["devDependencies"]["ts-proto"]
    if _version(installed) != pinned:
        return f"ts-proto {_version(installed)} is installed, {pinned} is pinned: run `{SETUP}`"
    return ""


def generate(out: Path) -> list[Path]:
    """Write the stubs of every proto (and the well-known types they import) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    gen_stubs.run_protoc(
        f"--plugin=protoc-gen-ts_proto={PLUGIN}",
        f"--ts_proto_out={out}",
        f"--ts_proto_opt={','.join(OPTIONS)}",
    )
    return sorted(out.rglob("*.ts"))
