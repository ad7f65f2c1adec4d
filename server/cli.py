"""The entry point: `pocketd serve --listen HOST:PORT --data-dir DIR [--config FILE]`, and
`pocketd router log --data-dir DIR [--last N] [--json]`.

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
    r = sub.add_parser("router", help="store routing: read the decision log")
    rsub = r.add_subparsers(dest="router_command", required=True)
    lg = rsub.add_parser("log", help="print the decision log, oldest first")
    lg.add_argument("--data-dir", default="./data", help="the server's data directory")
    lg.add_argument("--last", type=int, default=0, help="only the last N records")
    lg.add_argument("--json", action="store_true", help="one JSON object per line")
    return p


def _router_log(data_dir: Path, last: int, as_json: bool) -> int:
    import collections
    import datetime as dt

    import msgspec

    from server.adapters.decision_log import read_log

    root = data_dir / "router"
    if not root.is_dir():
        print(f"pocketd: no decision log in {root}", file=sys.stderr)
        return 2
    records = collections.deque(read_log(root), maxlen=last or None)
    for rec in records:
        if as_json:
            print(msgspec.json.encode(rec).decode())
            continue
        when = dt.datetime.fromtimestamp(rec.at, dt.UTC).isoformat(timespec="seconds")
        steps = " ".join(f"{s.pocket}:{s.depth}:{s.method or '-'}" for s in rec.steps)
        why = f" widened ({rec.widened})" if rec.widened else ""
        print(
            f"{when} {rec.namespace} {rec.policy}{why} rules={','.join(rec.rules) or '-'}"
            f" cost={rec.cost_units:.0f}/{rec.full_cost_units:.0f} hits={rec.hits} {steps}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    if ns.command == "router":
        return _router_log(Path(ns.data_dir), ns.last, ns.json)
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
