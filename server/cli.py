"""The entry point: `pocketd serve --listen HOST:PORT --data-dir DIR [--config FILE]`.

The only place that reads the environment (POCKETD__SECTION__KEY overrides, NUMBA_CACHE_DIR) and
the working directory. Exit codes: 0 after a clean shutdown; 2, with one line on stderr, for a bad
command line or configuration and for anything else the operator must fix before start-up (a
busy port, a locked data directory, a missing or mismatched model); 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pocketd", description="pocketd: a memory sidecar for LLM agents"
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the gRPC server")
    s.add_argument(
        "--listen", help="HOST:PORT to listen on (default 127.0.0.1:50051; port 0 picks one)"
    )
    s.add_argument("--data-dir", help="directory for the record store and indexes (default ./data)")
    s.add_argument("--config", type=Path, help="YAML configuration file")
    s.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    s.add_argument(
        "--log-format",
        default="text",
        choices=["text", "json"],
        help="one line per record, as text or as JSON objects (default text)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    from server.logs import configure

    configure(ns.log_level, ns.log_format)
    overrides: dict[str, Any] = {"server": {}}
    if ns.listen:
        overrides["server"]["listen"] = ns.listen
    if ns.data_dir:
        overrides["server"]["data_dir"] = ns.data_dir
    # Imported here so `pocketd --help` stays fast.
    from server.config import ConfigError, load_settings

    try:
        settings = load_settings(ns.config, os.environ, overrides, Path.cwd())
    except ConfigError as exc:
        print(f"pocketd: {exc}", file=sys.stderr)
        return 2
    # numba caches compiled kernels next to the data, unless the operator chose a directory.
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(settings.server.data_dir) / ".numba_cache"))
    from server.app import StartupError, serve

    try:
        asyncio.run(serve(settings))
    except StartupError as exc:
        print(f"pocketd: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
