"""Generate the Python stubs from proto/ into a directory (default clients/python).

Used by `make gen` (write in place) and `make gen-check` (generate to a temporary directory and
compare), so both run the exact same protoc invocation.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
OUT = ROOT / "clients" / "python"


def generate(out: Path) -> list[Path]:
    """Run protoc over every proto under proto/ and return the generated files."""
    protos = sorted(PROTO_ROOT.rglob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *[str(p) for p in protos],
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    files = sorted(p for p in out.rglob("*_pb2*.py*"))
    for pkg in {p.parent for p in files}:
        init = pkg / "__init__.py"
        if not init.exists():
            init.write_text('"""Generated protobuf stubs: do not edit (make gen)."""\n')
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if committed stubs are stale")
    ns = parser.parse_args()
    if not ns.check:
        for p in generate(OUT):
            print(f"wrote {p.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        stale = []
        for p in fresh:
            committed = OUT / p.relative_to(tmp)
            if not committed.exists() or not filecmp.cmp(p, committed, shallow=False):
                stale.append(str(committed.relative_to(ROOT)))
        if stale:
            print("stale generated stubs (run `make gen`):", *stale, sep="\n  ", file=sys.stderr)
            return 1
    print("generated stubs are fresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
