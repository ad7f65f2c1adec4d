"""The container's runtime stage without a Docker engine: its requirements, its venv, its size.

    python tools/runtime_env.py lock [--check]   # write (or check) requirements/runtime.txt
    python tools/runtime_env.py build            # the runtime venv and app, in build/runtime-env
    python tools/runtime_env.py probe            # grpc_health_probe from its Go module (needs go)
    python tools/runtime_env.py size [--compressed] [--json FILE]   # the image's expected size

- `lock`: pyproject's [project.dependencies] and everything they need, at the versions installed
  in the running interpreter's environment (.venv), pinned exactly. Left out: BUILD_ONLY (what
  only a build step imports) and whatever only they need.
- `build`: what the Dockerfile's builder stage makes, the same way: a venv with no pip of its own
  (`python -m venv --without-pip`), `pip install --no-deps -r requirements/runtime.txt` into it,
  `pip check`; the app's files (those the Dockerfile copies, with the built-in models of
  models/) staged in build/runtime-env/app, installed editable, their bytecode compiled. The venv
  is rebuilt only when requirements/runtime.txt or the interpreter changes; pip's cache makes a
  rebuild quick. Run it with an interpreter whose pip has `--python` (pip >= 22.3: .venv's).
- `probe`: `go install` of grpc_health_probe at the version the Dockerfile builds, static
  (CGO_ENABLED=0), into build/runtime-env/bin.
- `size`: the runtime image's size, layer by layer: the base image's published on-disk size (a
  constant: BASE_IMAGE, with its source) plus the measured contents of each layer the runtime
  stage adds (file sizes, each hard-linked file once, a symlink as its target's length: how
  `docker images` counts). `--compressed` also gzips each layer's tar to estimate the pull size.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements" / "runtime.txt"
OUT = ROOT / "build" / "runtime-env"
# Installed by the Dockerfile's builder only through pyproject's list, never imported at run time.
BUILD_ONLY = {
    "grpcio-tools": "only `make gen` uses it, to write clients/python/pocketd/v1; the stubs check"
    " grpcio's version at import, not grpcio-tools'",
}
# What the runtime stage copies into /app, as in the checkout (the Dockerfile's COPY lines).
APP_FILES = ("pyproject.toml", "README.md", "server", "kernels", "clients/python/pocketd")
# What tools/fetch_models.py writes (the Dockerfile runs it into /app/models).
MODEL_DIRS = ("use-m3", "tokenizer", "whisper-tiny-en")
PROBE_MODULE = "github.com/grpc-ecosystem/grpc-health-probe"
PROBE_VERSION = "v0.4.63"  # the Dockerfile's GRPC_HEALTH_PROBE_VERSION
# The base image of the runtime stage, as docker-library/repo-info records it (linux/amd64):
# repos/python/local/3.11-slim-bookworm.md at commit 8780d7a7c8629e9d0f14c541d0660f6077cfb30a
# ("Virtual Size: ~ 130.01 Mb (total size of all layers on-disk)", image built 2026-09-01, in
# docker's decimal units: repo-info's debian:bookworm-slim, repos/debian/local/bookworm-slim.md,
# reads 74.83 Mb, which `docker images` shows as 74.8MB), and
# repos/python/remote/3.11-slim-bookworm.md at commit 33a22f41ac7bf613bc03380b0317536a9a7fb5e8
# (the amd64 image's compressed layers: 47,790,358 bytes). Another build or patch release of the
# tag differs by a few MB.
BASE_IMAGE = "python:3.11-slim-bookworm (python 3.11.16, linux/amd64)"
BASE_ON_DISK_BYTES = 130_010_000
BASE_COMPRESSED_BYTES = 47_790_358
BASE_SOURCE = (
    "github.com/docker-library/repo-info repos/python/{local,remote}/3.11-slim-bookworm.md"
    " (commits 8780d7a7, 33a22f41)"
)
# The runtime stage's first layer: groupadd/useradd rewrite /etc/{passwd,group,shadow,gshadow}
# and their backups (-), about 1 kB each in the slim image, and make /data. Estimated, not
# measured: no Debian root file system here.
USER_LAYER_BYTES = 10_000
USER_LAYER_COMPRESSED_BYTES = 2_000


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


# --- lock ------------------------------------------------------------------------------------


def project_requirements() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    deps: list[str] = data["project"]["dependencies"]
    return deps


def lock_text() -> str:
    """requirements/runtime.txt as `lock` writes it, from the running environment's metadata."""
    from importlib import metadata

    from packaging.requirements import Requirement

    roots = [Requirement(r) for r in project_requirements()]
    via: dict[str, set[str]] = {}
    versions: dict[str, str] = {}
    queue = [(canonical(r.name), "pyproject.toml") for r in roots]
    while queue:
        name, parent = queue.pop()
        if name in BUILD_ONLY:
            continue
        via.setdefault(name, set()).add(parent)
        if name in versions:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as exc:
            raise SystemExit(
                f"{name} is not installed here: run `lock` with .venv's python"
            ) from exc
        versions[name] = dist.version
        for spec in dist.requires or []:
            req = Requirement(spec)
            # Markers are evaluated for this machine: Linux, CPython 3.11, x86_64, as the image.
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            queue.append((canonical(req.name), name))
    left_out = "; ".join(f"{k}: {v}" for k, v in sorted(BUILD_ONLY.items()))
    lines = [
        "# The container's runtime requirements: pyproject's [project.dependencies] and everything",
        "# they need, pinned to the versions of .venv, installed with `pip install --no-deps` (the",
        "# Dockerfile's builder stage; tools/runtime_env.py build). Written by",
        "# `python tools/runtime_env.py lock`; tests/e2e/test_runtime_env.py keeps it in step with",
        "# pyproject.toml. No torch, no dev tools.",
        *textwrap.wrap(f"Left out: {left_out}.", 96, initial_indent="# ", subsequent_indent="# "),
    ]
    for name in sorted(versions):
        parents = ", ".join(sorted(via[name]))
        lines.append(f"{name}=={versions[name]}  # via {parents}")
    return "\n".join(lines) + "\n"


def read_pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """`name==version` lines (comments and blank lines skipped); anything else raises."""
    pins: dict[str, str] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not name.strip() or not version.strip() or any(c in line for c in "<>;!~,["):
            raise ValueError(f"{path}:{n}: {raw!r} is not an exact `name==version` pin")
        key = canonical(name.strip())
        if key in pins:
            raise ValueError(f"{path}:{n}: {key} is pinned twice")
        pins[key] = version.strip()
    return pins


# --- build -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuntimeEnv:
    root: Path
    venv: Path
    app: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def pocketd(self) -> Path:
        return self.venv / "bin" / "pocketd"


def paths(out: Path = OUT) -> RuntimeEnv:
    return RuntimeEnv(out, out / "venv", out / "app")


def _log(msg: str) -> None:
    print(f"[runtime-env] {msg}", file=sys.stderr, flush=True)


def _pip(env: RuntimeEnv, *args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--python", str(env.python), *args]
    _log(" ".join(["pip", *args]))
    subprocess.run(cmd, check=True)


def _stamp() -> str:
    h = hashlib.sha256(REQUIREMENTS.read_bytes())
    h.update(f"{sys.version}|{sys.base_prefix}|without-pip".encode())
    return h.hexdigest()


def _sync_tree(src: Path, dst: Path) -> None:
    """Copy `src` to `dst` without bytecode, keeping mtimes; files already there are replaced."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        s, d = src.stat(), dst.stat()
        if (s.st_size, int(s.st_mtime)) == (d.st_size, int(d.st_mtime)):
            return
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def stage_app(env: RuntimeEnv) -> None:
    """The files the Dockerfile copies into /app, and the models it fetches there."""
    env.app.mkdir(parents=True, exist_ok=True)
    for rel in APP_FILES:
        src, dst = ROOT / rel, env.app / rel
        if src.is_dir():
            _sync_tree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    for name in MODEL_DIRS:
        src_dir = ROOT / "models" / name
        if not src_dir.is_dir():
            raise SystemExit(f"{src_dir} is missing: run `make models` first")
        for f in sorted(p for p in src_dir.iterdir() if p.is_file() and not p.name.startswith(".")):
            _link_or_copy(f, env.app / "models" / name / f.name)


def _editable_points_at(env: RuntimeEnv) -> bool:
    for finder in env.venv.glob("lib/python*/site-packages/__editable___pocketd_*_finder.py"):
        if str(env.app / "server") in finder.read_text(encoding="utf-8"):
            return True
    return False


def build(out: Path = OUT) -> RuntimeEnv:
    """Build (or bring up to date) the runtime venv and app; return their paths."""
    env = paths(out)
    stamp_file = env.venv / ".runtime-env-stamp"
    stamp = _stamp()
    if not stamp_file.is_file() or stamp_file.read_text() != stamp:
        if env.venv.exists():
            shutil.rmtree(env.venv)
        _log(f"python -m venv --without-pip {env.venv}")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env.venv)], check=True)
        _pip(env, "install", "--quiet", "--no-deps", "-r", str(REQUIREMENTS))
        _pip(env, "check")
        stamp_file.write_text(stamp)
    stage_app(env)
    if not _editable_points_at(env):
        _pip(env, "install", "--quiet", "--no-deps", "-e", str(env.app))
    subprocess.run(
        [str(env.python), "-m", "compileall", "-q", *(str(env.app / d) for d in APP_FILES[2:])],
        check=True,
    )
    return env


# --- probe -----------------------------------------------------------------------------------


def probe_path(out: Path = OUT) -> Path:
    return out / "bin" / "grpc-health-probe"


def build_probe(out: Path = OUT) -> Path:
    """grpc_health_probe, built as the Dockerfile's probe stage builds it."""
    target = probe_path(out)
    if target.is_file():
        return target
    go = shutil.which("go")
    if go is None:
        raise SystemExit("go is not on PATH: grpc_health_probe is built from its Go module")
    target.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOBIN": str(target.parent)}
    cmd = [go, "install", "-trimpath", "-ldflags=-s -w", f"{PROBE_MODULE}@{PROBE_VERSION}"]
    _log(" ".join(cmd[1:]))
    subprocess.run(cmd, check=True, env=env)
    return target


# --- size ------------------------------------------------------------------------------------


def _walk(path: Path) -> Iterator[Path]:
    if path.is_symlink() or path.is_file():
        yield path
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if Path(dirpath, d).is_symlink()]:
            yield Path(dirpath, name)


def tree_bytes(path: Path) -> tuple[int, int]:
    """(bytes, files) of a tree as a layer holds it: regular files' sizes, each inode once, and
    symlinks as their targets' lengths."""
    seen: set[tuple[int, int]] = set()
    total = files = 0
    for p in _walk(path):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            total += len(os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
        else:
            continue
        files += 1
    return total, files


class _Count(io.RawIOBase):
    def __init__(self) -> None:
        self.n = 0

    def writable(self) -> bool:
        return True

    def write(self, b: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self.n += len(b)
        return len(b)


def gzip_bytes(items: list[tuple[Path, str]]) -> int:
    """The size of a gzipped tar (level 6, as docker pushes) of `items` (path, name in layer)."""
    sink = _Count()
    with (
        gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=6, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path, arcname in items:
            tar.add(path, arcname=arcname)
    return sink.n


@dataclass(frozen=True)
class Layer:
    name: str
    dockerfile: str
    bytes: int
    files: int
    how: str
    compressed_bytes: int | None = None


def measure(out: Path = OUT, compressed: bool = False) -> dict[str, object]:
    env = paths(out)
    if not env.python.exists():
        raise SystemExit(f"{env.venv} is missing: run `python tools/runtime_env.py build` first")
    probe = probe_path(out)
    layers = [
        Layer(
            "user",
            "RUN groupadd/useradd; mkdir /data",
            USER_LAYER_BYTES,
            0,
            "estimated",
            USER_LAYER_COMPRESSED_BYTES if compressed else None,
        ),
    ]
    contents: list[tuple[str, str, list[tuple[Path, str]]]] = [
        ("venv", "COPY --from=builder /opt/venv", [(env.venv, "opt/venv")]),
        ("app", "COPY --from=builder /app (models included)", [(env.app, "app")]),
    ]
    if probe.is_file():
        contents.insert(0, ("probe", "COPY --from=probe grpc_health_probe", [(probe, "bin")]))
    else:
        _log(f"{probe} not built (`probe`): its layer is left out of the sum")
    for name, line, items in contents:
        b = f = 0
        for path, _ in items:
            pb, pf = tree_bytes(path)
            b, f = b + pb, f + pf
        gz = gzip_bytes(items) if compressed else None
        layers.append(Layer(name, line, b, f, "measured", gz))
    models = sum(tree_bytes(env.app / "models" / d)[0] for d in MODEL_DIRS)
    added = sum(layer.bytes for layer in layers)
    result: dict[str, object] = {
        "base": {
            "image": BASE_IMAGE,
            "on_disk_bytes": BASE_ON_DISK_BYTES,
            "compressed_bytes": BASE_COMPRESSED_BYTES,
            "source": BASE_SOURCE,
        },
        "layers": [asdict(layer) for layer in layers],
        "of_which_models_bytes": models,
        "added_bytes": added,
        "total_bytes": BASE_ON_DISK_BYTES + added,
        "probe_built": probe.is_file(),
    }
    if compressed:
        gz_added = sum(layer.compressed_bytes or 0 for layer in layers)
        result["compressed_added_bytes"] = gz_added
        result["compressed_total_bytes"] = BASE_COMPRESSED_BYTES + gz_added
    return result


def _mb(n: object) -> str:
    assert isinstance(n, int)
    return f"{n / 1e6:8.1f} MB"


def report(r: dict[str, object]) -> str:
    base = r["base"]
    assert isinstance(base, dict)
    rows = [f"{'base ' + base['image']:<62} {_mb(base['on_disk_bytes'])}  (published)"]
    layers = r["layers"]
    assert isinstance(layers, list)
    for layer in layers:
        gz = layer["compressed_bytes"]
        extra = f"  gzip {_mb(gz).strip()}" if gz is not None else ""
        label = f"{layer['name']}: {layer['dockerfile']}"
        rows.append(f"{label:<62} {_mb(layer['bytes'])}  ({layer['how']}){extra}")
    rows.append(f"{'  of which the built-in models':<62} {_mb(r['of_which_models_bytes'])}")
    rows.append(f"{'image (on disk, as `docker images` shows it)':<62} {_mb(r['total_bytes'])}")
    if "compressed_total_bytes" in r:
        rows.append(
            f"{'image (compressed, what a pull transfers)':<62} {_mb(r['compressed_total_bytes'])}"
        )
    return "\n".join(rows)


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lk = sub.add_parser("lock", help="write requirements/runtime.txt from pyproject and .venv")
    lk.add_argument("--check", action="store_true", help="fail if the file differs; write nothing")
    for name in ("build", "probe", "size"):
        p = sub.add_parser(name)
        p.add_argument("--out", type=Path, default=OUT)
    sz = sub.choices["size"]
    sz.add_argument("--compressed", action="store_true", help="also gzip each layer (slower)")
    sz.add_argument("--json", type=Path, help="write the figures here as JSON")
    ns = ap.parse_args(argv)
    if ns.cmd == "lock":
        text = lock_text()
        if ns.check:
            current = REQUIREMENTS.read_text(encoding="utf-8") if REQUIREMENTS.exists() else ""
            if current != text:
                print(f"{REQUIREMENTS} is stale: run `python tools/runtime_env.py lock`")
                return 1
            return 0
        REQUIREMENTS.parent.mkdir(parents=True, exist_ok=True)
        REQUIREMENTS.write_text(text, encoding="utf-8")
        print(f"wrote {REQUIREMENTS.relative_to(ROOT)} ({len(read_pins())} pins)")
        return 0
    if ns.cmd == "build":
        env = build(ns.out)
        print(env.pocketd)
        return 0
    if ns.cmd == "probe":
        print(build_probe(ns.out))
        return 0
    r = measure(ns.out, ns.compressed)
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
