"""The Go stubs of `tools/gen_stubs.py`: protoc-gen-go and protoc-gen-go-grpc, pinned, run by
grpcio-tools' protoc into clients/go/pocketd/v1 (package pocketdv1, the protos' go_package).

The generators live in the project-local `.tools/bin` (ignored by git through its own
`.tools/.gitignore`), installed with the Go module proxy by

    python tools/gen_go.py --install

which needs only the `go` command. Their output is the same from run to run: the headers name
the pinned generator versions and protoc's, which grpcio-tools pins.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gen_stubs

NAME = "go"
OUT = Path("clients", "go")
MODULE = "github.com/pocketd/pocketd/clients/go"
TOOLS = gen_stubs.ROOT / ".tools"
BIN = TOOLS / "bin"
# The generator binary, its package, and the version its `--version` prints.
PLUGINS = {
    "protoc-gen-go": ("google.golang.org/protobuf/cmd/protoc-gen-go", "v1.36.12"),
    "protoc-gen-go-grpc": ("google.golang.org/grpc/cmd/protoc-gen-go-grpc", "v1.5.1"),
}
INSTALL = "python tools/gen_go.py --install"


def _installed_version(binary: Path) -> str:
    """The version `binary --version` prints ("" when it cannot be run), with a leading v."""
    try:
        out = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return ""
    version = out[-1] if out else ""
    return version if version.startswith("v") else f"v{version}"


def available() -> str:
    """Empty when both pinned generators are in .tools/bin, else what is missing and the fix."""
    for name, (_, version) in PLUGINS.items():
        found = _installed_version(BIN / name)
        if found != version:
            what = f"{found} instead of {version}" if found else f"{version} is not installed"
            return f"{name} {what} in .tools/bin: run `{INSTALL}` (needs go)"
    return ""


def install() -> None:
    """`go install` each pinned generator into .tools/bin."""
    go = shutil.which("go")
    if go is None:
        raise SystemExit("go is not on PATH: install Go 1.26 or newer first")
    BIN.mkdir(parents=True, exist_ok=True)
    (TOOLS / ".gitignore").write_text("# Installed by tools/gen_go.py --install.\n*\n")
    env = dict(os.environ, GOBIN=str(BIN))
    for package, version in PLUGINS.values():
        subprocess.run([go, "install", f"{package}@{version}"], env=env, check=True)


def generate(out: Path) -> list[Path]:
    """Write the Go stubs under `out` (the module's root) and return them."""
    out.mkdir(parents=True, exist_ok=True)
    gen_stubs.run_protoc(
        *[f"--plugin={name}={BIN / name}" for name in PLUGINS],
        f"--go_out={out}",
        f"--go_opt=module={MODULE}",
        f"--go-grpc_out={out}",
        f"--go-grpc_opt=module={MODULE}",
    )
    return sorted((out / "pocketd" / "v1").glob("*.pb.go"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--install", action="store_true", help="install the pinned generators")
    ns = parser.parse_args()
    if ns.install:
        install()
    why = available()
    print(why or "go: the pinned generators are installed", file=sys.stderr if why else sys.stdout)
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
