"""Generate the client stubs from proto/: Python (always), and Go and TypeScript where their
generators are installed (`tools/gen_go.py`, `tools/gen_ts.py`, each with pinned versions).

Used by `make gen` (write in place) and `make gen-check` (generate to a temporary directory and
compare with what is committed), so both run the exact same generator invocation. Each language
is a module of this folder with `NAME`, `OUT` (the committed directory, relative to the root),
`available() -> str` ("" when its pinned generators are installed, else why not) and
`generate(out: Path) -> list[Path]` (the files written under `out`, mirroring `OUT`).

`--lang` picks languages (default: all). A language whose generators are missing fails the run
unless `--skip-missing` is given, which `make check` does not give.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
OUT = ROOT / "clients" / "python"
LANGS = ("python", "go", "ts")
# Files of a generated directory that no generator writes.
KEPT = frozenset({"__init__.py", ".gitignore"})


def protos() -> list[Path]:
    return sorted(PROTO_ROOT.rglob("*.proto"))


def run_protoc(*args: str) -> None:
    """grpcio-tools' protoc (pinned with grpcio) over every proto, with the well-known types on
    the include path; other languages' plugins are given with `--plugin`."""
    include = Path(protoc.__file__).parent / "_proto"
    argv = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", *args, *[str(p) for p in protos()]]
    if protoc.main(argv) != 0:
        raise SystemExit(f"protoc failed: {' '.join(args)}")


class Python:
    NAME = "python"
    OUT = OUT.relative_to(ROOT)

    @staticmethod
    def available() -> str:
        return ""

    @staticmethod
    def generate(out: Path) -> list[Path]:
        out.mkdir(parents=True, exist_ok=True)
        run_protoc(f"--python_out={out}", f"--pyi_out={out}", f"--grpc_python_out={out}")
        files = sorted(p for p in out.rglob("*_pb2*.py*"))
        for pkg in {p.parent for p in files}:
            init = pkg / "__init__.py"
            if not init.exists():
                init.write_text('"""Generated protobuf stubs: do not edit (make gen)."""\n')
        return files


def language(name: str) -> ModuleType | type[Python]:
    if name == "python":
        return Python
    return importlib.import_module(f"gen_{name}")


def stale(lang: ModuleType | type[Python]) -> list[str]:
    """The committed files that differ from freshly generated ones (or are missing), and those
    left over in the generated directories (a proto since removed)."""
    committed = ROOT / lang.OUT
    with tempfile.TemporaryDirectory() as tmp:
        fresh_root = Path(tmp) / lang.OUT
        fresh = lang.generate(fresh_root)
        out = []
        for p in fresh:
            mine = committed / p.relative_to(fresh_root)
            if not mine.exists() or not filecmp.cmp(p, mine, shallow=False):
                out.append(str(mine.relative_to(ROOT)))
        made = {committed / p.relative_to(fresh_root) for p in fresh}
        for folder in {m.parent for m in made}:
            for mine in folder.iterdir():
                if mine.is_file() and mine not in made and mine.name not in KEPT:
                    out.append(f"{mine.relative_to(ROOT)} (no longer generated)")
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if committed stubs are stale")
    parser.add_argument("--lang", action="append", choices=LANGS, help="default: all")
    parser.add_argument(
        "--skip-missing", action="store_true", help="skip a language without its generators"
    )
    ns = parser.parse_args()
    failed = False
    for name in ns.lang or LANGS:
        lang = language(name)
        why = lang.available()
        if why:
            print(f"{name}: {why}", file=sys.stderr)
            failed = failed or not ns.skip_missing
            continue
        if not ns.check:
            for p in lang.generate(ROOT / lang.OUT):
                print(f"wrote {p.relative_to(ROOT)}")
            continue
        if bad := stale(lang):
            print(f"{name}: stale stubs (run `make gen`):", *bad, sep="\n  ", file=sys.stderr)
            failed = True
        else:
            print(f"{name}: generated stubs are fresh")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
