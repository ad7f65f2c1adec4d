"""Build the `Settings` object: defaults < YAML file < environment < flags.

A pure function of its inputs: the environment mapping is passed in by the entry point, never
read here. Any unknown key or bad value raises `ConfigError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from server.core.settings import Settings

ENV_PREFIX = "POCKETD__"


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


def load_settings(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Layer the sources and validate the result."""
    merged: dict[str, Any] = {}
    if config_file is not None:
        merged = _merge(merged, _read_yaml(config_file))
    if env:
        merged = _merge(merged, _env_layer(env))
    if overrides:
        merged = _merge(merged, overrides)
    try:
        settings = msgspec.convert(merged, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc
    check(settings)
    return settings


def check(s: Settings) -> None:
    """Semantic checks msgspec's types cannot express."""
    m = s.memory
    hs = m.hybrid_search
    problems: list[str] = []

    def need(ok: bool, key: str, why: str) -> None:
        if not ok:
            problems.append(f"{key}: {why}")

    need(1 <= m.embedding_dim <= 8192, "memory.embedding_dim", "must be in 1..8192")
    for key, value in (
        ("vector_weight", hs.vector_weight),
        ("keyword_weight", hs.keyword_weight),
        ("image_vector_weight", hs.image_vector_weight),
        ("image_keyword_weight", hs.image_keyword_weight),
    ):
        need(0.0 <= value <= 1.0, f"memory.hybrid_search.{key}", "must be in [0, 1]")
    need(hs.both_boost >= 1.0, "memory.hybrid_search.both_boost", "must be >= 1")
    need(
        1 <= hs.top_k <= s.limits.max_top_k,
        "memory.hybrid_search.top_k",
        "must be in 1..limits.max_top_k",
    )
    need(
        hs.candidates_per_channel >= 50,
        "memory.hybrid_search.candidates_per_channel",
        "must be >= 50",
    )
    need(hs.overfetch >= 1.0, "memory.hybrid_search.overfetch", "must be >= 1")
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
    wp = m.write_policy
    need(1 <= wp.min_importance <= 5, "memory.write_policy.min_importance", "must be in 1..5")
    need(wp.expire_after_days > 0, "memory.write_policy.expire_after_days", "must be > 0")
    need(0.0 < wp.dedup_cosine <= 1.0, "memory.write_policy.dedup_cosine", "must be in (0, 1]")
    need(
        1 <= wp.client_importance_min <= wp.client_importance_max <= 5,
        "memory.write_policy.client_importance_min",
        "bounds must satisfy 1 <= min <= max <= 5",
    )
    need(m.hot.ttl_seconds > 0, "memory.hot.ttl_seconds", "must be > 0")
    need(
        m.index.vector_dtype in {"f32", "f16", "i8"},
        "memory.index.vector_dtype",
        "must be f32, f16 or i8",
    )
    need(s.encoder.text in {"minilm", "none"}, "encoder.text", "must be 'minilm' or 'none'")
    need(s.server.max_message_bytes >= 1024, "server.max_message_bytes", "must be >= 1024")
    need(s.server.worker_threads >= 1, "server.worker_threads", "must be >= 1")
    if problems:
        raise ConfigError("invalid configuration: " + "; ".join(problems))
