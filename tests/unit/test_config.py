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
    assert s.memory.write_policy.dedup_cosine is None  # the encoder's manifest decides
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
        ("", {"POCKETD__MEMORY__INDEX__BATCH_SIZE": "0"}, "memory.index.batch_size"),
        ("", {"POCKETD__ENCODER__BATCH_SIZE": "0"}, "encoder.batch_size"),
        ("", {"POCKETD__MEMORY__HOT__TTL_SECONDS": "-5"}, "memory.hot.ttl_seconds"),
        ("", {"POCKETD__SERVER__DRAIN_SECONDS": "-1"}, "server.drain_seconds"),
        ("", {"POCKETD__LIMITS__MAX_BATCH_ITEMS": "0"}, "limits.max_batch_items"),
        ("", {"POCKETD__MEMORY__WRITE_POLICY__BASE_IMPORTANCE": "9"}, "base_importance"),
        ("", {"POCKETD__MEMORY__INDEX__SNAPSHOT_SECONDS": "0"}, "snapshot_seconds"),
        ("", {"POCKETD__MEMORY__RETRIEVAL__AFTER_DAYS": "[-1, 30]"}, r"after_days\[0\]"),
        ("", {"POCKETD__SERVER__MAX_CONCURRENT_CALLS": "0"}, "max_concurrent_calls"),
        ("", {"POCKETD__SERVER__LISTEN": "127.0.0.1:99999"}, "server.listen"),
        ("", {"POCKETD__SERVER__LISTEN": "localhost"}, "server.listen"),
        ("", {"POCKETD__SERVER__METRICS_LISTEN": "9464"}, "server.metrics_listen"),
        ("", {"POCKETD__SERVER__METRICS_LISTEN": "127.0.0.1:70000"}, "server.metrics_listen"),
        ("", {"POCKETD__MEMORY__HOT__SERVING_MAX_PENDING": "9000"}, "serving_max_pending"),
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


def test_every_numeric_key_has_a_range() -> None:
    """A numeric setting without bounds is how `batch_size: 0` stalled the server."""
    import typing

    import msgspec

    from server.core.settings import Settings

    unbounded: list[str] = []

    def walk(struct: type, prefix: str) -> None:
        hints = typing.get_type_hints(struct, include_extras=True)
        for name in struct.__struct_fields__:  # type: ignore[attr-defined]
            hint = hints[name]
            if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
                walk(hint, f"{prefix}{name}.")
                continue
            base = typing.get_origin(hint)
            args = typing.get_args(hint)
            if base is tuple and args and typing.get_origin(args[0]) is typing.Annotated:
                continue
            if hint in (int, float) or (base is tuple and args and args[0] in (int, float)):
                unbounded.append(prefix + name)

    walk(Settings, "")
    assert unbounded == ["memory.retrieval.factors"], unbounded  # factors: checked in check()


def test_relative_paths_in_a_config_file_are_relative_to_that_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    cfg = tmp_path / "conf" / "c.yaml"
    cfg.write_text("encoder:\n  model_dir: ../models/minilm\nserver:\n  data_dir: d\n")
    s = load_settings(cfg, {}, None, cwd=Path("/somewhere/else"))
    assert Path(s.encoder.model_dir) == tmp_path / "conf" / ".." / "models" / "minilm"
    assert Path(s.server.data_dir) == tmp_path / "conf" / "d"
    # From the environment or a flag: relative to the working directory.
    env = {"POCKETD__ENCODER__MODEL_DIR": "m"}
    flags = {"server": {"data_dir": "here"}}
    s = load_settings(cfg, env, flags, cwd=tmp_path)
    assert s.encoder.model_dir == str(tmp_path / "m")
    assert s.server.data_dir == str(tmp_path / "here")
    assert flags == {"server": {"data_dir": "here"}}  # the caller's mapping is left alone


def test_unset_model_dir_means_the_built_in_location() -> None:
    from server.config import MODELS_DIR, model_dir

    s = load_settings()
    assert s.encoder.model_dir == "" and model_dir(s) == MODELS_DIR / "use-m3"
    assert MODELS_DIR == ROOT / "models"
