"""The typed, frozen configuration of pocketd.

Built once at start-up by `server.config.load_settings` (defaults < YAML file < environment
`POCKETD__SECTION__KEY` < flags). Every field has a default, so an empty file runs the server on its
embedded defaults. The memory defaults are those of the design documents (seed 000 §4.5).
"""

from __future__ import annotations

import msgspec


class ServerSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Transport settings."""

    listen: str = "127.0.0.1:50051"
    data_dir: str = "./data"
    # Larger messages are refused with RESOURCE_EXHAUSTED before they are parsed.
    max_message_bytes: int = 16 * 1024 * 1024
    # Seconds that SIGTERM waits for calls in flight before cancelling them.
    drain_seconds: float = 10.0
    # Threads for blocking native calls (usearch, tantivy, onnxruntime, SQLite reads).
    worker_threads: int = 4


class LimitSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Input limits enforced at the edge."""

    max_text_chars: int = 32_768
    max_top_k: int = 100
    max_batch_items: int = 1024
    max_tags: int = 32
    max_supersedes: int = 64


class HybridSearchSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Fusion of the vector and keyword channels (seed 000 §2.3, §4.2)."""

    vector_weight: float = 0.5
    keyword_weight: float = 0.5
    # Weights when the query carries an image or an image cue.
    image_vector_weight: float = 0.75
    image_keyword_weight: float = 0.25
    image_cues: tuple[str, ...] = (
        "截图",
        "照片",
        "这张图",
        "图片",
        "screenshot",
        "photo",
        "this image",
        "picture",
    )
    # Multiplier for a hit found by both channels.
    both_boost: float = 1.2
    top_k: int = 5
    # Candidates taken from each channel before fusion; deep enough that a strong hit of one
    # channel is not lost.
    candidates_per_channel: int = 64
    # Over-fetch factor for ANN search when filters may drop candidates.
    overfetch: float = 2.0
    # A filtered search whose matching rows are at most this many is scanned exactly instead.
    exact_scan_max_rows: int = 4096
    # HNSW search breadth (usearch expansion_search).
    expansion_search: int = 128


class DecaySettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Step time decay of fact-like kinds (seed 000 §4.3)."""

    kinds: tuple[str, ...] = ("fact", "preference")
    # Ascending age thresholds in days and the factor applied past each.
    after_days: tuple[float, ...] = (7.0, 30.0)
    factors: tuple[float, ...] = (0.6, 0.4)


class WritePolicySettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The write gate (seed 000 §2.2, 001 §2.3, §5.1)."""

    min_importance: int = 3
    expire_after_days: float = 90.0
    dedup_cosine: float = 0.95
    base_importance: int = 3
    # A client-given importance is clamped into these bounds.
    client_importance_min: int = 1
    client_importance_max: int = 5
    # The importance floor for the `remember` flag and for "error, then fix" experiences.
    flag_importance: int = 4
    # Keyword lists (case-insensitive substrings). Each matching list adjusts importance once.
    boost_keywords: dict[str, tuple[str, ...]] = msgspec.field(
        default_factory=lambda: {
            "identity": (
                "my name",
                "i am",
                "i'm",
                "身份",
                "我叫",
                "我是",
                "email",
                "邮箱",
                "phone number",
                "手机号",
                "address",
                "地址",
                "account",
                "账号",
                "id card",
                "身份证",
            ),
            "payment": (
                "payment",
                "pay ",
                "paid",
                "invoice",
                "billing",
                "credit card",
                "refund",
                "付款",
                "支付",
                "发票",
                "退款",
                "账单",
                "银行卡",
            ),
            "policy": (
                "policy",
                "compliance",
                "regulation",
                "must not",
                "not allowed",
                "政策",
                "规定",
                "合规",
                "制度",
                "禁止",
            ),
            "preference": (
                "prefer",
                "always",
                "never",
                "only use",
                "i like",
                "i don't like",
                "偏好",
                "喜欢",
                "不喜欢",
                "只用",
                "总是",
            ),
        }
    )
    boost_amount: int = 1
    small_talk: tuple[str, ...] = (
        "hello",
        "hi ",
        "thanks",
        "thank you",
        "good morning",
        "how are you",
        "lol",
        "ok",
        "你好",
        "谢谢",
        "哈哈",
        "早上好",
        "在吗",
        "好的",
        "嗯",
    )
    # Importance of text that is small talk and nothing else.
    small_talk_importance: int = 1
    # Text at most this long that matches small talk counts as small talk.
    small_talk_max_chars: int = 40
    error_keywords: tuple[str, ...] = (
        "error",
        "exception",
        "failed",
        "报错",
        "错误",
        "异常",
        "失败",
    )
    fix_keywords: tuple[str, ...] = ("fixed", "resolved", "solved", "workaround", "修复", "解决")


class HotSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The hot tier: recent memories, scanned exactly."""

    ttl_seconds: float = 1800.0
    # Indexed hot memories per namespace beyond this are evicted oldest first.
    max_records_per_namespace: int = 4096
    # Writers wait while this many acknowledged records are not yet indexed (backpressure).
    max_pending_index: int = 8192


class IndexSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The warm indexes."""

    # usearch scalar type: f16 halves memory and adds faster than f32 at ~no recall cost.
    vector_dtype: str = "f16"
    connectivity: int = 16
    # HNSW build breadth. 64 adds about 2x faster than 128 at 100k with the same recall@5 (0.995
    # on clustered data, bench/RESULTS.md).
    expansion_add: int = 64
    # Search breadth of the write gate's near-duplicate probe: a duplicate (cosine >= 0.95) is so
    # close that a narrow search finds it, at a fraction of the cost of a Recall search.
    dedup_expansion_search: int = 16
    # Records moved from the store into the indexes per step of the background indexer.
    batch_size: int = 512
    # Seconds between snapshots of the vector indexes to disk (they also snapshot on shutdown).
    snapshot_seconds: float = 60.0
    keyword_heap_bytes: int = 64_000_000


class EncoderSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The built-in text encoder (all-MiniLM-L6-v2 as ONNX)."""

    # "minilm" or "none" (clients then always send vectors).
    text: str = "minilm"
    model_dir: str = "./models/minilm"
    batch_size: int = 32
    threads: int = 2
    max_tokens: int = 256


class MemorySettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Memory settings (seed 000 §4.5)."""

    embedding_dim: int = 384
    hybrid_search: HybridSearchSettings = msgspec.field(default_factory=HybridSearchSettings)
    write_policy: WritePolicySettings = msgspec.field(default_factory=WritePolicySettings)
    retrieval: DecaySettings = msgspec.field(default_factory=DecaySettings)
    hot: HotSettings = msgspec.field(default_factory=HotSettings)
    index: IndexSettings = msgspec.field(default_factory=IndexSettings)


class Settings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The whole configuration."""

    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    limits: LimitSettings = msgspec.field(default_factory=LimitSettings)
    memory: MemorySettings = msgspec.field(default_factory=MemorySettings)
    encoder: EncoderSettings = msgspec.field(default_factory=EncoderSettings)
