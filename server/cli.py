"""The entry point: `pocketd serve --listen HOST:PORT --data-dir DIR [--config FILE]`, and the
router's commands: `pocketd router log --data-dir DIR [--last N] [--json]`,
`pocketd router train --data-dir DIR [--config FILE] [--tenant T] [--namespace NS]` and
`pocketd router rollback --data-dir DIR [--tenant T] [--namespace NS]`,
`pocketd models train-difficulty [--data-dir DIR] [--data FILE]`,
`pocketd models train-said [--data-dir DIR] [--data FILE] [--memorybank DIR] [--out FILE]`,
`pocketd models export-clip --arch ARCH --checkpoint FILE --out DIR [--int8] [--venv DIR]`, and
`pocketd token new --tenant T [--namespace GLOB]... [--admin]`.

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

from server.core.tenancy import DEFAULT, TENANT_RE, TENANT_RULE, Tenant


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
    r = sub.add_parser("router", help="store routing: the decision log and the learned model")
    rsub = r.add_subparsers(dest="router_command", required=True)
    lg = rsub.add_parser("log", help="print the decision log, oldest first")
    lg.add_argument("--data-dir", default="./data", help="the server's data directory")
    lg.add_argument("--last", type=int, default=0, help="only the last N records")
    lg.add_argument("--json", action="store_true", help="one JSON object per line")
    tr = rsub.add_parser(
        "train",
        help="train the learned policy on the log's explored decisions, report it and install it",
    )
    tr.add_argument(
        "--data-dir", help="the server's data directory (default: the configuration's, ./data)"
    )
    tr.add_argument("--config", type=Path, help="the server's YAML configuration file")
    tr.add_argument("--namespace", help="train this namespace's own model (default: the tenant's)")
    tr.add_argument(
        "--tenant", default=DEFAULT, help=f"whose decisions and model (default: {DEFAULT})"
    )
    tr.add_argument("--holdout", type=float, default=0.2, help="the held-out share (default 0.2)")
    tr.add_argument("--epochs", type=int, default=80, help="at most this many (default 80)")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--dry-run", action="store_true", help="train and report; install nothing")
    rb = rsub.add_parser("rollback", help="make the previous model current again")
    rb.add_argument("--data-dir", default="./data", help="the server's data directory")
    rb.add_argument("--namespace", help="roll back this namespace's model (default: the tenant's)")
    rb.add_argument("--tenant", default=DEFAULT, help=f"whose model (default: {DEFAULT})")
    re_ = sub.add_parser(
        "reembed",
        help="re-encode a data directory's memories with the configured encoder (server stopped)",
    )
    re_.add_argument("--data-dir", help="the data directory (default: the configuration's)")
    re_.add_argument("--config", type=Path, help="the YAML configuration the server will run with")
    m = sub.add_parser("models", help="the agent's local models")
    msub = m.add_subparsers(dest="models_command", required=True)
    td = msub.add_parser(
        "train-difficulty", help="train the difficulty classifier, report it and install it"
    )
    td.add_argument("--data-dir", help="the server's data directory (default: the configuration's)")
    td.add_argument("--config", type=Path, help="the server's YAML configuration file")
    td.add_argument("--data", type=Path, help="labelled prompts, JSON lines (default: shipped)")
    td.add_argument("--holdout", type=float, default=0.25, help="held-out share of templates")
    td.add_argument("--epochs", type=int, default=120)
    ts = msub.add_parser(
        "train-said",
        help="fit the head that reads a user's input as a preference, fact or correction",
    )
    ts.add_argument("--data-dir", help="the server's data directory (default: the configuration's)")
    ts.add_argument("--config", type=Path, help="the server's YAML configuration file")
    ts.add_argument("--data", type=Path, help="labelled wordings, JSON (default: shipped)")
    ts.add_argument(
        "--memorybank", type=Path, help="MemoryBank's folder (default: ../shared/data/memorybank)"
    )
    ts.add_argument("--out", type=Path, help="where to (default: <data_dir>/agent/said.npz)")
    ts.add_argument("--folds", type=int, default=5, help="folds for the floors (default 5)")
    ec = msub.add_parser(
        "export-clip",
        help="export an open_clip checkpoint to ONNX as an image space (clip.model_dir)",
    )
    ec.add_argument("--arch", required=True, help="open_clip's model name, e.g. ViT-B-32")
    ec.add_argument("--checkpoint", type=Path, required=True, help=".bin, .pt or .safetensors")
    ec.add_argument("--out", type=Path, required=True, help="the model directory to write")
    ec.add_argument("--tag", default="", help="the pretrained tag of the weights, e.g. openai")
    ec.add_argument("--int8", action="store_true", help="quantise both towers (dynamic int8)")
    ec.add_argument(
        "--venv", type=Path, default=Path(".venv-clip"), help="the export venv (torch; made once)"
    )
    tk = sub.add_parser("token", help="bearer tokens for auth.tokens")
    tksub = tk.add_subparsers(dest="token_command", required=True)
    tn = tksub.add_parser("new", help="make a token; print it once, and its auth.tokens entry")
    tn.add_argument("--tenant", required=True, help="the tenant it acts for")
    tn.add_argument(
        "--namespace",
        action="append",
        default=[],
        help="a namespace glob it may use (repeat it; default: all of the tenant's)",
    )
    tn.add_argument("--admin", action="store_true", help="may see the server's own figures")
    return p


def _new_token(tenant: str, globs: list[str], admin: bool) -> int:
    """A random token (printed once, on stdout's first line) and its entry, stored hashed."""
    import hashlib
    import json
    import secrets

    if not TENANT_RE.fullmatch(tenant):
        print(f"pocketd: --tenant {TENANT_RULE}", file=sys.stderr)
        return 2
    token = "pkd_" + secrets.token_urlsafe(32)
    print(token)
    print("# auth.tokens entry (the token itself is not stored; keep it secret):")
    print(f"- tenant: {tenant}")
    print(f"  sha256: {hashlib.sha256(token.encode()).hexdigest()}")
    print(f"  namespaces: {json.dumps(globs or ['*'])}")
    if admin:
        print("  admin: true")
    return 0


def _settings(config: Path | None, overrides: dict[str, Any]) -> Any:
    """The settings, or a ConfigError's message on stderr and None."""
    from server.config import ConfigError, load_settings

    try:
        return load_settings(config, os.environ, overrides, Path.cwd())
    except ConfigError as exc:
        print(f"pocketd: {exc}", file=sys.stderr)
        return None


def _router(ns: argparse.Namespace) -> int:
    if ns.router_command == "log":
        return _router_log(Path(ns.data_dir), ns.last, ns.json)
    from server import router_admin

    if not TENANT_RE.fullmatch(ns.tenant):
        print(f"pocketd: --tenant {TENANT_RULE}", file=sys.stderr)
        return 2
    target = Tenant(ns.tenant).scope(ns.namespace or "")  # a kept name: see server.core.tenancy
    if ns.router_command == "rollback":
        return router_admin.rollback_main(Path(ns.data_dir), target)
    if not 0.0 < ns.holdout < 1.0 or ns.epochs < 1:
        print("pocketd: --holdout must be in (0, 1) and --epochs at least 1", file=sys.stderr)
        return 2
    settings = _settings(ns.config, {"server": {"data_dir": ns.data_dir} if ns.data_dir else {}})
    if settings is None:
        return 2
    return router_admin.train_main(settings, target, ns.holdout, ns.epochs, ns.seed, ns.dry_run)


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
        if rec.asked and rec.asked != rec.policy:
            why += f" (asked {rec.asked})"
        if rec.model:
            why += f" model={rec.model}"
        if rec.shadow is not None:
            sh = rec.shadow
            why += f" shadow: recall@k={sh.recall_at_k:.2f} full_cost={sh.cost_units:.0f}"
        print(
            f"{when} {rec.namespace} {rec.policy}{why} rules={','.join(rec.rules) or '-'}"
            f" cost={rec.cost_units:.0f}/{rec.full_cost_units:.0f} hits={rec.hits} {steps}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    if ns.command == "router":
        return _router(ns)
    if ns.command == "token":
        return _new_token(ns.tenant, ns.namespace, ns.admin)
    if ns.command == "reembed":
        settings = _settings(
            ns.config, {"server": {"data_dir": ns.data_dir} if ns.data_dir else {}}
        )
        if settings is None:
            return 2
        from server.reembed_admin import reembed_main

        return reembed_main(settings)
    if ns.command == "models" and ns.models_command == "export-clip":
        from server.models_admin import export_clip_main

        return export_clip_main(ns.arch, ns.checkpoint, ns.out, ns.int8, ns.venv, ns.tag)
    if ns.command == "models":
        settings = _settings(
            ns.config, {"server": {"data_dir": ns.data_dir} if ns.data_dir else {}}
        )
        if settings is None:
            return 2
        if ns.models_command == "train-said":
            from server.said_admin import train_said_main

            return train_said_main(settings, ns.data, ns.memorybank, ns.out, ns.folds)
        from server.models_admin import train_difficulty_main

        return train_difficulty_main(settings, ns.data, ns.holdout, ns.epochs)
    from server.logs import configure

    configure(ns.log_level, ns.log_format)
    overrides: dict[str, Any] = {"server": {}}
    if ns.listen:
        overrides["server"]["listen"] = ns.listen
    if ns.data_dir:
        overrides["server"]["data_dir"] = ns.data_dir
    settings = _settings(ns.config, overrides)  # imports the config here: --help stays fast
    if settings is None:
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
