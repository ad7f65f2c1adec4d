"""Build the `Settings` object: defaults < YAML file < environment < flags.

A pure function of its inputs: the environment mapping and the working directory are passed in
by the entry point, never read here. Any unknown key or bad value raises `ConfigError` naming the
key: every numeric key has a range (see `server.core.settings`), checked here.

Relative paths (`server.data_dir`, `encoder.model_dir`, `agent.tokenizer_file`, the TLS files,
`media.speech.model_dir`, `media.speech.multilingual_model_dir`, `media.clip.model_dir`): in a
config file they are relative to that file's directory; from the environment or a flag, to the
working directory. An unset `encoder.model_dir` is the built-in encoder's location
(`models/<encoder.text>` in the checkout, where `make models` writes it), an unset
`agent.tokenizer_file` the built-in tokenizer's (`models/tokenizer/tokenizer.json`), an unset
`media.speech.model_dir` the built-in speech model's (`models/whisper-tiny-en`); the default
`server.data_dir` is `./data` in the working directory."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from server.core.agent.tiers import TIERS
from server.core.memory.pockets import TIME_BUCKETS
from server.core.memory.write.dedup import MODES as MERGE_MODES
from server.core.settings import Settings
from server.core.tenancy import TENANT_RE, TENANT_RULE

ENV_PREFIX = "POCKETD__"
# Where `make models` writes the built-in models: models/<name> in the checkout.
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
# The built-in text encoders (`encoder.text`), each in MODELS_DIR / its name.
TEXT_ENCODERS = ("use-m3", "minilm")
BUILTIN_TOKENIZER = MODELS_DIR / "tokenizer" / "tokenizer.json"
_LISTEN_RE = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")
_MSGSPEC_PATH_RE = re.compile(r"^(.*) - at `\$\.?([^`]*)`$")


_SHA256_RE = re.compile(r"[0-9a-f]{64}")


class ConfigError(Exception):
    """The configuration is invalid; the message names the key."""


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """`POCKETD__MEMORY__HYBRID_SEARCH__TOP_K=8` → {"memory": {"hybrid_search": {"top_k": 8}}}.

    Values are parsed as YAML scalars or flow collections, so numbers, booleans and lists work.
    """
    layer: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if not all(path):
            raise ConfigError(f"{name}: empty section in environment variable name")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"{name}: cannot parse value {raw!r}: {exc}") from exc
        node = layer
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{name}: {part} is both a value and a section")
        node[path[-1]] = value
    return layer


def _copy(layer: Mapping[str, Any]) -> dict[str, Any]:
    """A copy deep enough that resolving paths never changes the caller's mapping."""
    return {k: _copy(v) if isinstance(v, Mapping) else v for k, v in layer.items()}


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: the top level must be a mapping")
    return data


PATH_KEYS = (
    ("server", "data_dir"),
    ("encoder", "model_dir"),
    ("agent", "tokenizer_file"),
    ("tls", "cert_file"),
    ("tls", "key_file"),
    ("tls", "client_ca_file"),
    ("media", "speech", "model_dir"),
    ("media", "speech", "multilingual_model_dir"),
    ("media", "clip", "model_dir"),
)


def _resolve_paths(layer: dict[str, Any], base: Path | None) -> None:
    """Make the relative paths of one source absolute against `base` (None: leave them)."""
    if base is None:
        return
    for *sections, key in PATH_KEYS:
        node: Any = layer
        for section in sections:
            node = node.get(section) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(key), str) and node[key]:
            node[key] = str(base / Path(node[key]).expanduser())


def speech_model_dir(s: Settings) -> Path:
    """The English speech model: the configured one, or the built-in location."""
    given = s.media.speech.model_dir
    return Path(given) if given else MODELS_DIR / "whisper-tiny-en"


def _describe(exc: msgspec.ValidationError) -> str:
    """msgspec's "Expected `int` >= 1 - at `$.memory.index.batch_size`" → "memory.index...: …"."""
    m = _MSGSPEC_PATH_RE.match(str(exc))
    if m is None:
        return str(exc)
    what, path = m.groups()
    return f"{path or '(top level)'}: {what[:1].lower()}{what[1:]}"


def load_settings(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Layer the sources and validate the result. `cwd` anchors the relative paths of the
    environment and the flags (None: they stay relative to the process's working directory)."""
    merged: dict[str, Any] = {}
    if config_file is not None:
        layer = _read_yaml(config_file)
        _resolve_paths(layer, (cwd / config_file if cwd else config_file).parent)
        merged = _merge(merged, layer)
    for later in (_env_layer(env or {}), _copy(overrides or {})):
        _resolve_paths(later, cwd)
        merged = _merge(merged, later)
    try:
        settings = msgspec.convert(merged, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_describe(exc)}") from exc
    check(settings)
    return settings


def model_dir(s: Settings) -> Path:
    """The encoder's model directory: the configured one, or the built-in location."""
    return Path(s.encoder.model_dir) if s.encoder.model_dir else MODELS_DIR / s.encoder.text


def tokenizer_file(s: Settings) -> Path:
    """The tokenizer the agent loop counts tokens with: the configured one, or the built-in."""
    return Path(s.agent.tokenizer_file) if s.agent.tokenizer_file else BUILTIN_TOKENIZER


def check(s: Settings) -> None:
    """Checks across keys, which the per-key ranges of `Settings` cannot express."""
    m = s.memory
    hs = m.hybrid_search
    problems: list[str] = []

    def need(ok: bool, key: str, why: str) -> None:
        if not ok:
            problems.append(f"{key}: {why}")

    need(
        hs.top_k <= s.limits.max_top_k,
        "memory.hybrid_search.top_k",
        "must be in 1..limits.max_top_k",
    )
    for name, limit in (
        ("image", s.media.image.max_bytes),
        ("audio", s.media.audio.max_bytes),
        ("table", s.media.table.max_bytes),
    ):
        need(
            limit < s.server.max_message_bytes,
            f"media.{name}.max_bytes",
            f"must be below server.max_message_bytes ({s.server.max_message_bytes}): a medium"
            " that large could never arrive; raise both",
        )
    if s.media.speech.default_language == "auto":
        need(
            bool(s.media.speech.multilingual_model_dir),
            "media.speech.default_language",
            '"auto" needs media.speech.multilingual_model_dir (make models-speech-zh)',
        )
    d = m.retrieval
    need(
        len(d.after_days) == len(d.factors),
        "memory.retrieval.factors",
        "needs one factor per after_days entry",
    )
    need(
        list(d.after_days) == sorted(d.after_days),
        "memory.retrieval.after_days",
        "must be ascending",
    )
    need(all(0.0 < f <= 1.0 for f in d.factors), "memory.retrieval.factors", "must be in (0, 1]")
    need(
        list(d.factors) == sorted(d.factors, reverse=True),
        "memory.retrieval.factors",
        "must not increase with age",
    )
    known_kinds = {"preference", "fact", "summary", "episode", "skill", "observation"}
    need(
        set(d.kinds) <= known_kinds,
        "memory.retrieval.kinds",
        f"must be among {sorted(known_kinds)}",
    )
    for key, kinds in (
        ("memory.hot.kinds", m.hot.kinds),
        ("memory.pockets.bucketed_kinds", m.pockets.bucketed_kinds),
    ):
        need(set(kinds) <= known_kinds, key, f"must be among {sorted(known_kinds)}")
    need(
        m.pockets.time_bucket in TIME_BUCKETS,
        "memory.pockets.time_bucket",
        f"must be among {list(TIME_BUCKETS)}",
    )
    wp = m.write_policy
    need(
        set(wp.merge) <= known_kinds,
        "memory.write_policy.merge",
        f"keys must be among {sorted(known_kinds)}",
    )
    need(
        set(wp.merge.values()) <= set(MERGE_MODES),
        "memory.write_policy.merge",
        f"values must be among {list(MERGE_MODES)}",
    )
    need(
        wp.client_importance_min <= wp.client_importance_max,
        "memory.write_policy.client_importance_min",
        "must be <= memory.write_policy.client_importance_max",
    )
    need(
        m.hot.serving_max_pending <= m.hot.max_pending_index,
        "memory.hot.serving_max_pending",
        "must be <= memory.hot.max_pending_index",
    )
    need(
        m.index.vector_dtype in {"f32", "f16"},
        "memory.index.vector_dtype",
        "must be f32 or f16 (with the inner product, i8 would give raw integer dot products, not"
        " cosines)",
    )
    need(
        s.encoder.text in {*TEXT_ENCODERS, "none"},
        "encoder.text",
        f"must be one of {[*TEXT_ENCODERS, 'none']}",
    )
    hs = m.hybrid_search
    if hs.vector_floor is not None and hs.vector_ceiling is not None:
        need(
            hs.vector_floor < hs.vector_ceiling,
            "memory.hybrid_search.vector_floor",
            "must be below memory.hybrid_search.vector_ceiling",
        )
    listen = _LISTEN_RE.fullmatch(s.server.listen)
    need(
        listen is not None and int(listen.group(1)) <= 65_535,
        "server.listen",
        f"{s.server.listen!r} must be HOST:PORT with a port in 0..65535 (0 picks a free one)",
    )
    if s.server.metrics_listen:
        metrics = _LISTEN_RE.fullmatch(s.server.metrics_listen)
        need(
            metrics is not None and int(metrics.group(1)) <= 65_535,
            "server.metrics_listen",
            f"{s.server.metrics_listen!r} must be HOST:PORT with a port in 0..65535, or empty",
        )
    need(bool(s.server.data_dir), "server.data_dir", "must not be empty")
    _check_access(s, need)
    missing = [t for t in TIERS if t not in s.agent.routes]
    need(
        not missing,
        "agent.routes",
        f"names every tier ({', '.join(TIERS)}); missing: {', '.join(missing)}",
    )
    extra = sorted(set(s.agent.routes) - set(TIERS))
    need(not extra, "agent.routes", f"{', '.join(extra)}: not a tier ({', '.join(TIERS)})")
    if problems:
        raise ConfigError("invalid configuration: " + "; ".join(problems))


def is_loopback(listen: str) -> bool:
    """Whether `HOST:PORT` listens only on this machine."""
    host = listen.rpartition(":")[0].strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_access(s: Settings, need: Callable[[bool, str, str], None]) -> None:
    """Tokens, TLS files, and no unauthenticated port beyond loopback unless asked for."""
    seen: set[str] = set()
    for i, t in enumerate(s.auth.tokens):
        key = f"auth.tokens[{i}]"
        need(TENANT_RE.fullmatch(t.tenant) is not None, f"{key}.tenant", TENANT_RULE)
        need(
            _SHA256_RE.fullmatch(t.sha256) is not None,
            f"{key}.sha256",
            "must be the token's SHA-256 in 64 lowercase hex digits (pocketd token new)",
        )
        need(t.sha256 not in seen, f"{key}.sha256", "is listed twice")
        seen.add(t.sha256)
        need(bool(t.namespaces), f"{key}.namespaces", "must grant at least one glob")
        need(all(t.namespaces), f"{key}.namespaces", "must not hold an empty glob")
    need(
        bool(s.auth.tokens) or s.server.allow_unauthenticated or is_loopback(s.server.listen),
        "server.allow_unauthenticated",
        f"{s.server.listen!r} is not loopback and auth.tokens is empty: set auth.tokens, or set"
        " server.allow_unauthenticated: true to let anyone who reaches the port in",
    )
    tls = s.tls
    need(
        bool(tls.cert_file) == bool(tls.key_file),
        "tls.key_file",
        "tls.cert_file and tls.key_file are set together",
    )
    need(
        not tls.client_ca_file or bool(tls.cert_file),
        "tls.client_ca_file",
        "needs tls.cert_file and tls.key_file (mTLS is TLS with client certificates)",
    )
    for key, path in (
        ("tls.cert_file", tls.cert_file),
        ("tls.key_file", tls.key_file),
        ("tls.client_ca_file", tls.client_ca_file),
    ):
        need(not path or Path(path).is_file(), key, f"{path!r} is not a readable file")
