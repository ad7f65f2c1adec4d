"""Configuration layering and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.config import ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_follow_the_design_documents() -> None:
    s = load_settings()
    hs = s.memory.hybrid_search
    assert (hs.vector_weight, hs.keyword_weight, hs.top_k) == (0.5, 0.5, 5)
    assert (hs.image_vector_weight, hs.image_keyword_weight) == (0.75, 0.25)
    assert hs.candidates_per_channel >= 50
    assert s.memory.write_policy.min_importance == 3
    assert s.memory.write_policy.expire_after_days == 90
    assert s.memory.write_policy.dedup_cosine == 0.95
    assert s.memory.retrieval.after_days == (7.0, 30.0) and s.memory.retrieval.factors == (0.6, 0.4)
    assert s.memory.hot.ttl_seconds == 1800
    assert s.server.listen == "127.0.0.1:50051"


def test_file_then_env_then_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "memory:\n  hybrid_search:\n    top_k: 7\n    vector_weight: 0.6\n"
        "server:\n  listen: 0.0.0.0:1\n"
    )
    env = {"POCKETD__MEMORY__HYBRID_SEARCH__TOP_K": "9", "UNRELATED": "x"}
    s = load_settings(cfg, env, {"server": {"listen": "127.0.0.1:2"}})
    assert s.memory.hybrid_search.top_k == 9
    assert s.memory.hybrid_search.vector_weight == 0.6
    assert s.server.listen == "127.0.0.1:2"


def test_the_example_config_loads() -> None:
    s = load_settings(ROOT / "config" / "pocketd.example.yaml")
    assert s.memory.embedding_dim == 1536
    assert s.memory.hybrid_search.vector_weight == 0.75


@pytest.mark.parametrize(
    ("text", "env", "needle"),
    [
        ("memory:\n  hybrid_serch: {}\n", {}, "hybrid_serch"),
        ("memory:\n  hybrid_search:\n    top_k: many\n", {}, "top_k"),
        ("", {"POCKETD__MEMORY__EMBEDDING_DIM": "0"}, "memory.embedding_dim"),
        ("", {"POCKETD__MEMORY__RETRIEVAL__FACTORS": "[0.4, 0.6]"}, "memory.retrieval.factors"),
        (
            "",
            {"POCKETD__MEMORY__HYBRID_SEARCH__CANDIDATES_PER_CHANNEL": "10"},
            "candidates_per_channel",
        ),
        ("- a list\n", {}, "top level"),
        ("memory: [unclosed\n", {}, "not valid YAML"),
    ],
)
def test_bad_values_fail_naming_the_key(
    tmp_path: Path, text: str, env: dict[str, str], needle: str
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_settings(cfg, env)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "nope.yaml")
