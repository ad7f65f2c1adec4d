"""The typed, frozen configuration of pocketd.

Built once at start-up by `server.config.load_settings` (defaults < YAML file < environment
`POCKETD__SECTION__KEY` < flags). Every field has a default, so an empty file runs the server on its
embedded defaults. The memory defaults are those of the design documents (seed 000 §4.5).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

# Every numeric key has a range; a value outside it stops start-up (exit 2) naming the key.
Importance = Annotated[int, Meta(ge=1, le=5)]
Ratio = Annotated[float, Meta(ge=0.0, le=1.0)]
Seconds = Annotated[float, Meta(gt=0.0, le=10 * 365 * 86_400.0)]
Threads = Annotated[int, Meta(ge=1, le=256)]


def between(lo: float, hi: float) -> Meta:
    """A closed range, for the keys whose bounds are their own."""
    return Meta(ge=lo, le=hi)


class EncoderThresholds(msgspec.Struct, frozen=True):
    """The values that depend on a text encoder's cosine spread, measured per encoder and kept
    in its manifest: a setting left unset takes its encoder's value."""

    vector_floor: float
    vector_ceiling: float
    dedup_cosine: float


# When no encoder is configured (clients send their own vectors): MiniLM's values, a unit
# normalised sentence embedding's usual spread.
GENERIC_THRESHOLDS = EncoderThresholds(vector_floor=0.1, vector_ceiling=1.0, dedup_cosine=0.95)


class ServerSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Transport settings."""

    # The address the gRPC port listens on, host:port ([::] or 0.0.0.0 for every interface;
    # beyond loopback it needs `auth.tokens` or `server.allow_unauthenticated`).
    listen: str = "127.0.0.1:50051"
    # Where the record store, the indexes, the ledger and the router's files live; locked by one
    # server at a time.
    data_dir: str = "./data"
    # Larger messages are refused with RESOURCE_EXHAUSTED before they are parsed.
    max_message_bytes: Annotated[int, between(1024, 1 << 30)] = 16 * 1024 * 1024
    # Seconds that SIGTERM waits for calls in flight before cancelling them.
    drain_seconds: Annotated[float, between(0.0, 3600.0)] = 10.0
    # Threads for reads (Recall, Get, Stats): blocking native calls into usearch, tantivy,
    # onnxruntime and SQLite.
    worker_threads: Threads = 4
    # Threads for single writes (Remember), and as many again for bulk writes (RememberBatch),
    # apart from the reads' threads, so that writers held back by backpressure never keep a
    # Recall waiting, and an import never takes a Remember's worker (both still take the
    # writer's lock in turn).
    write_threads: Threads = 2
    # MemoryService calls in flight (running or queued for a worker) beyond this get
    # RESOURCE_EXHAUSTED at once instead of queueing without end.
    max_concurrent_calls: Annotated[int, between(1, 100_000)] = 64
    # The longest a call may run when the client sets no deadline (or a longer one): its work
    # is stopped at this point with DEADLINE_EXCEEDED.
    max_call_seconds: Annotated[float, Meta(gt=0.0, le=3600.0)] = 60.0
    # A call slower than this is logged at WARNING (every call is logged at INFO).
    slow_call_ms: Annotated[float, Meta(gt=0.0, le=3_600_000.0)] = 500.0
    # The interpreter's thread switch interval (Python's default is 5 ms): a thread doing
    # Python work holds the GIL this long before a Recall's thread may run.
    gil_switch_ms: Annotated[float, Meta(gt=0.0, le=100.0)] = 1.0
    # The niceness of the threads that write in bulk (RememberBatch) and index (0: as the
    # process), so that a Recall, a Remember and a Step get the cores and the GIL first while an
    # import runs (server/core/priority.py).
    background_nice: Annotated[int, between(0, 19)] = 10
    # Without `auth.tokens`, the server may listen only on loopback, unless this is true (it
    # then says at start that anyone who reaches the port acts as the default tenant).
    allow_unauthenticated: bool = False
    # Threads for LedgerService and AgentService calls (a ledger transaction, a Step), apart
    # from MemoryService's reads, so that Steps never keep a Recall waiting.
    agent_threads: Threads = 4
    # With more than one tenant: the in-flight calls one tenant may hold in each pool (a
    # StepBatch counts as its Steps), so one tenant's burst cannot take the slots of
    # another's; 0: no share, only the pool's bound.
    max_calls_per_tenant: Annotated[int, between(0, 100_000)] = 32
    # Where Prometheus scrapes `/metrics` (HTTP, host:port, apart from the gRPC port; port 0
    # picks a free one). Empty: no endpoint. It names tenants and methods, never a namespace or
    # a text: keep it on loopback or a network only the operator's scraper reaches.
    metrics_listen: str = ""


class TokenSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One bearer token, stored hashed: `pocketd token new` makes one."""

    # The tenant it acts for (1-32 of [a-z0-9_-]); `default` is the tenant of a server without
    # auth, so its data stays reachable once auth is turned on.
    tenant: str
    # The lowercase hex SHA-256 of the token.
    sha256: str
    # The namespaces of its tenant it may use, as globs (`*` matches `/` too).
    namespaces: tuple[str, ...] = ("*",)
    # May see the server's own figures in Stats (the index's revisions).
    admin: bool = False


class AuthSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Bearer tokens (`authorization: Bearer <token>` metadata). None: no authentication (only
    on loopback unless `server.allow_unauthenticated`)."""

    # The accepted bearer tokens, each with its tenant and namespace globs (`pocketd token new`
    # prints an entry).
    tokens: tuple[TokenSettings, ...] = ()


class TlsSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """TLS for the listening port (PEM files). No certificate: plaintext."""

    # The server's certificate chain (PEM). Set with `key_file`.
    cert_file: str = ""
    # The server certificate's private key (PEM).
    key_file: str = ""
    # With it, clients must present a certificate it signed (mTLS).
    client_ca_file: str = ""


class LimitSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Input limits enforced at the edge."""

    # A memory's text, and each text a Step stores or reads (goal, input, observation, tool
    # results).
    max_text_chars: Annotated[int, between(1, 1 << 22)] = 32_768
    # Recall's query_text (the keyword channel turns every distinct word into a query term).
    max_query_chars: Annotated[int, between(1, 1 << 20)] = 4096
    # Entries of filter.kinds and filter.modalities (duplicates are dropped after the check).
    max_filter_values: Annotated[int, between(1, 1024)] = 16
    # The largest `top_k` a Recall may ask for.
    max_top_k: Annotated[int, between(1, 10_000)] = 100
    # Items of one RememberBatch.
    max_batch_items: Annotated[int, between(1, 65_536)] = 1024
    # Tags of one memory.
    max_tags: Annotated[int, between(0, 1024)] = 32
    # Ids one memory may supersede.
    max_supersedes: Annotated[int, between(0, 4096)] = 64
    # Steps of a Recall plan.
    max_plan_steps: Annotated[int, between(1, 65_536)] = 1024
    # Records per List page.
    max_page_size: Annotated[int, between(1, 100_000)] = 1000


class HybridSearchSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Fusion of the vector and keyword channels (seed 000 §2.3, §4.2)."""

    # The weights of the vector channel (`vector_weight`) and the keyword channel
    # (`keyword_weight`) in the fused score.
    vector_weight: Ratio = 0.5
    keyword_weight: Ratio = 0.5
    # The weights (`image_vector_weight`, `image_keyword_weight`) when the query carries an
    # image or an image cue.
    image_vector_weight: Ratio = 0.75
    image_keyword_weight: Ratio = 0.25
    # Words of a query that ask about an image (case-insensitive substrings): its weights become
    # the image ones.
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
    # Multiplier for a hit found by both channels (a vector hit is above `vector_floor`).
    both_boost: Annotated[float, between(1.0, 10.0)] = 1.2
    # The cosine at or below which a memory is no vector hit; above it the vector score is
    # (cos − floor) / (ceiling − floor), clipped. Unset: the encoder's own (its manifest's):
    # it depends on where the encoder puts unrelated texts (MiniLM about 0, USE-m3 about 0.1).
    vector_floor: Annotated[float, between(-1.0, 0.99)] | None = None
    # The cosine at and above which the vector score is 1: about where the encoder puts a
    # memory as near as one usually gets (MiniLM: 1; USE-m3 about 0.6). Unset: the encoder's.
    vector_ceiling: Annotated[float, between(-0.99, 1.0)] | None = None
    # Added to the fused score of a memory that holds every exact identifier of the query
    # (an error code, an order id): at 1 or more such a holder is never outranked by a memory
    # that merely shares topic words.
    exact_boost: Annotated[float, between(0.0, 10.0)] = 1.0
    # Added to the fused score of a memory that occurred inside the window a time cue of the
    # query names ("last week", "上周"; see server/core/memory/timecues.py).
    time_cue_boost: Annotated[float, between(0.0, 10.0)] = 0.3
    # For a question that asks when ("when did …", "什么时候", `retrieval.when_cues`), the fused
    # score of a memory whose text says when ("last Saturday", "on 3 May", "上周六") is raised by
    # this share: the answer type scales relevance, it never creates it (added, 0.15 made any
    # dated memory outrank a paraphrase's answer on the bilingual bench).
    temporal_answer_boost: Annotated[float, between(0.0, 10.0)] = 0.15
    # A memory in the other script than the query (a Chinese question, an English memory),
    # which no keyword can match: this share of its vector score stands in for its keyword
    # score (`kernels.fusion`). 0 turns it off.
    across_scripts_share: Ratio = 0.75
    # A turn from the role the question is about (`retrieval.asker_cues`, `agent_cues`;
    # `server.core.memory.roles`) has its fused score raised by this share.
    role_boost: Annotated[float, between(0.0, 1.0)] = 0.3
    # A keyword match counts in full only where the vector score (on its [0, 1] scale) reaches
    # this, and in proportion below it: one incidental shared word is a weak match
    # (`kernels.fusion`). 0 turns it off.
    keyword_gate: Ratio = 0.1
    # The least share of its keyword score a match keeps below the gate (one the vector puts at
    # or below its floor: a name or a rare word the encoder does not place near the question).
    keyword_unbacked_share: Ratio = 0.5
    # The weight of a match in a memory's speaker's name and its event date (the keyword
    # channel's `meta` field) against one in its text: a question names whom it is about and
    # which day.
    speaker_weight: Ratio = 1.0
    # BM25's saturation (`bm25_k1`) and length normalisation (`bm25_b`). Dialog turns are short, so
    # a second occurrence of a word says little more than the first: k1 below the textbook 1.2.
    bm25_k1: Annotated[float, between(0.0, 10.0)] = 0.5
    bm25_b: Ratio = 0.75
    # The keyword scale is BM25 over the query terms' summed idf. A query term that no memory of
    # the namespace holds counts in that sum at this share of the rarest idf: a memory sharing
    # one incidental word of a paraphrase ("keep", "做") then matches a share of the query, not
    # all that the namespace could match. 0: such terms are left out of the scale.
    unseen_term_weight: Ratio = 0.3
    # Hits a Recall returns when the request sets no `top_k`.
    top_k: Annotated[int, between(1, 10_000)] = 5
    # Candidates taken from each channel before fusion; deep enough that a strong hit of one
    # channel is not lost.
    candidates_per_channel: Annotated[int, between(50, 10_000)] = 64
    # Over-fetch factor for ANN search when filters may drop candidates.
    overfetch: Annotated[float, between(1.0, 100.0)] = 2.0
    # A filtered search whose matching rows are at most this many is scanned exactly instead.
    exact_scan_max_rows: Annotated[int, between(0, 1 << 24)] = 4096
    # HNSW search breadth (usearch expansion_search), shared by the HNSW pockets of a plan in
    # proportion to their sizes, with at least `min_expansion_search` each.
    expansion_search: Annotated[int, between(1, 1 << 16)] = 128
    min_expansion_search: Annotated[int, between(1, 1 << 16)] = 64
    # A larger graph needs a wider search for the same recall: each doubling of a pocket beyond
    # `expansion_base_rows` adds this much to its minimum. Measured on the bench's clustered data
    # (4 pockets, 32 candidates each): at 25,000 rows breadth 64 gave recall@5 1.000; at 250,000
    # breadth 64 gave 0.947, 96 gave 0.974 and 128 gave 0.986. This rule gives 64 and 135.
    expansion_per_doubling: Annotated[float, between(0.0, 4096.0)] = 24.0
    expansion_base_rows: Annotated[int, between(1, 1 << 30)] = 32_768
    # The relevance floor: hits whose fused score (before time decay) is below it are not
    # returned. A request's `min_score` overrides it.
    min_score: Annotated[float, between(0.0, 10.0)] = 0.1

    @property
    def floor(self) -> float:
        """`vector_floor`, or the generic one until the composition root resolved it."""
        return GENERIC_THRESHOLDS.vector_floor if self.vector_floor is None else self.vector_floor

    @property
    def ceiling(self) -> float:
        """`vector_ceiling`, or the generic one until the composition root resolved it."""
        c = self.vector_ceiling
        return GENERIC_THRESHOLDS.vector_ceiling if c is None else c


class ContextSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A dialog turn's session neighbours, mixed into its keyword document and its vector: a
    turn alone ("yes, the blue one") often lacks the words and the meaning its neighbours
    carry. A neighbour `d` turns away weighs `weight · decay^(d−1)` before the turn, and
    `after` times that after it (what led to a turn explains it more than what follows)."""

    # Neighbours each side (at most 3: the keyword index keeps that many).
    turns: Annotated[int, between(0, 3)] = 2
    # The nearest earlier neighbour's weight in the keyword document: its term counts (and
    # length) are added to the turn's own at this weight (BM25F), at query time.
    keyword_weight: Ratio = 0.2
    # The nearest earlier neighbour's weight in the stored vector: the turn's own vector plus
    # the weighted neighbours' vectors, normalised (no extra encoder call). Applied when a
    # turn is indexed; a turn arriving later re-indexes its neighbours.
    vector_weight: Ratio = 0.2
    # Each further neighbour weighs this times the one before it (`decay`), and a neighbour
    # after the turn `after` times one before it.
    decay: Ratio = 0.5
    after: Ratio = 0.5

    def weight(self, distance: int, base: float) -> float:
        """The weight of the neighbour at signed `distance` (−1: the turn just before)."""
        d = abs(distance)
        if d == 0 or d > self.turns:
            return 0.0
        w = base * self.decay ** (d - 1)
        return w * self.after if distance > 0 else w


class DecaySettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Step time decay of fact-like kinds (seed 000 §4.3)."""

    # The kinds whose score decays with age (`after_days`, `factors`).
    kinds: tuple[str, ...] = ("fact", "preference")
    # A question about time ("when did …", "上周") asks for the old memory itself: no decay.
    temporal_cues: tuple[str, ...] = (
        "when did",
        "when was",
        "what time",
        "what date",
        "which date",
        "what day",
        "which day",
        "how long ago",
        "before",
        "after",
        "last week",
        "last month",
        "last year",
        "ago",
        "什么时候",
        "哪天",
        "几号",
        "哪一天",
        "几月",
        "之前",
        "以前",
        "上周",
        "上个月",
        "去年",
    )
    # A question asking when: the answer type `hybrid_search.temporal_answer_boost` favours.
    when_cues: tuple[str, ...] = (
        "when did",
        "when was",
        "when is",
        "when will",
        "what time",
        "what date",
        "which date",
        "what day",
        "which day",
        "how long ago",
        "什么时候",
        "哪天",
        "哪一天",
        "几号",
        "几月",
        "几点",
    )
    # A question about what the agent said ("the name you suggested", "你推荐的"): its turns
    # (speaker "assistant", "ai", …) are what it is about (`hybrid_search.role_boost`).
    agent_cues: tuple[str, ...] = (
        "you said",
        "you told",
        "you mentioned",
        "you recommended",
        "you suggested",
        "you gave",
        "you provided",
        "you listed",
        "you shared",
        "you explained",
        "you wrote",
        "you came up with",
        "you helped",
        "did you say",
        "did you recommend",
        "did you suggest",
        "did you mention",
        "did you tell",
        "did you give",
        "did you call",
        "your suggestion",
        "your recommendation",
        "your advice",
        "you told me",
        "you listed",
        "你说",
        "你之前说",
        "跟我说过",
        "你告诉我",
        "你给我推荐",
        "你提到",
        "你推荐",
        "你建议",
        "你给我",
        "你告诉",
    )
    # A question in the asker's own voice ("what did I buy", "我买了什么"): the asker's turns
    # (speaker "user", "human", …) are what it is about, unless it asks what the agent said.
    # A question about the agent's words that none of `agent_cues` names ("remind me of the
    # third restaurant in the list") reads as the asker's: its answer, the agent's turn, is then
    # not raised and the asker's turns are (by `role_boost`).
    asker_cues: tuple[str, ...] = ("i", "my", "me", "mine", "myself", "i'm", "i've", "我")
    # A question about a past value ("which tool did we use before?", "以前用什么"): the newer
    # of two memories of one slot is not put first (`lifecycle.supersede.older_factor`).
    past_cues: tuple[str, ...] = (
        "before",
        "previously",
        "used to",
        "formerly",
        "originally",
        "in the past",
        "earlier",
        "prior to",
        "old ",
        "以前",
        "之前",
        "原来",
        "过去",
        "曾经",
        "当初",
        "原先",
        "先前",
        "本来",
        "早先",
    )
    # Ascending age thresholds in days (`after_days`) and the factor applied past each
    # (`factors`).
    after_days: tuple[Annotated[float, between(0.0, 36_500.0)], ...] = (7.0, 30.0)
    factors: tuple[float, ...] = (0.6, 0.4)


DEFAULT_MERGE = {
    "preference": "similar",
    "fact": "similar",
    "skill": "similar",
    "summary": "identical_in_session",
    "episode": "identical_in_session",
    "observation": "identical_in_session",
}


class WritePolicySettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The write gate (seed 000 §2.2, 001 §2.3, §5.1)."""

    # A memory scored below this importance (1-5) is not stored.
    min_importance: Importance = 3
    # Counted from when pocketd stores the memory, so imported history is not expired on arrival.
    expire_after_days: Annotated[float, Meta(gt=0.0, le=36_500.0)] = 90.0
    # Unset: the encoder's own (its manifest's `thresholds`).
    dedup_cosine: Annotated[float, Meta(gt=0.0, le=1.0)] | None = None
    # A `similar` merge also needs this Jaccard similarity of the indexed terms (and the same
    # identifiers: tokens holding a digit). See server/core/memory/dedup.py.
    dedup_lexical: Ratio = 0.5
    # How each kind merges: "similar", "identical_in_session" or "never". An episode is
    # something that happened: the same words on another day are another episode.
    # Kinds left out keep their default (DEFAULT_MERGE).
    merge: dict[str, str] = msgspec.field(default_factory=lambda: dict(DEFAULT_MERGE))
    # The importance a memory starts from when the client gives none, before the keyword boosts.
    base_importance: Importance = 3
    # A client-given importance is clamped into `client_importance_min` ..
    # `client_importance_max`.
    client_importance_min: Importance = 1
    client_importance_max: Importance = 5
    # The importance floor for the `remember` flag and for "error, then fix" experiences.
    flag_importance: Importance = 4
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
    # Importance added for each `boost_keywords` list that matches.
    boost_amount: Annotated[int, between(0, 4)] = 1
    # Greetings and fillers (case-insensitive; Latin ones as whole words): a text of little else
    # gets `small_talk_importance`.
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
    small_talk_importance: Importance = 1
    # Text that holds small talk counts as small talk when what is left besides it is at most
    # this many letters and digits, a CJK character counting as two ("hi there!", "好的，谢谢你"):
    # "你好，今天我去了公园散步" is a greeting, then a real report.
    small_talk_max_rest: Annotated[int, between(0, 10_000)] = 12
    # A text naming an error (`error_keywords`) and its fix (`fix_keywords`) is an experience
    # worth keeping: importance at least `flag_importance`.
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

    @property
    def dedup_floor(self) -> float:
        """`dedup_cosine`, or the generic one until the composition root resolved it."""
        c = self.dedup_cosine
        return GENERIC_THRESHOLDS.dedup_cosine if c is None else c


class HotSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The hot tier: a session's raw recent turns, scanned exactly, and every memory until the
    indexer has it."""

    # Memories of these kinds, with a session, whose event time lies within `ttl_seconds`, or
    # of the namespace's current session (the one of its latest hot turn), arrive in tier hot;
    # so does the namespace's latest turn (of a new session) up to `session_window_seconds`
    # old: the current conversation, sent late. The rest arrive warm. Hot memories move to warm
    # after `ttl_seconds`, except those of the current session: it stays one hot pocket, apart
    # from past sessions, until another begins.
    kinds: tuple[str, ...] = ("episode", "observation")
    ttl_seconds: Seconds = 1800.0
    session_window_seconds: Seconds = 43_200.0
    # Hot memories per namespace beyond this move to warm early, oldest first.
    max_records_per_namespace: Annotated[int, between(0, 1 << 24)] = 4096
    # Writers wait while this many acknowledged records are not yet indexed (backpressure).
    max_pending_index: Annotated[int, between(1, 1 << 24)] = 8192
    # After a restart, health stays NOT_SERVING until the indexer has caught up to at most this
    # many unindexed records, so that a SERVING server never makes writers wait for it.
    serving_max_pending: Annotated[int, between(0, 1 << 24)] = 2048
    # Where a session's raw recent turns are kept for `ttl_seconds` after its last turn:
    # "memory" (in the server's process) or "redis" (`url`, keys under `key_prefix`, the TTL
    # kept by Redis itself, so a restart of pocketd keeps them).
    backend: Literal["memory", "redis"] = "memory"
    # The Redis server of the hot tier (redis://host:port/db or rediss://…); used with
    # backend: redis. Unreachable at start-up: pocketd exits 2 naming this key.
    url: str = "redis://127.0.0.1:6379/0"
    # Every key pocketd writes in Redis starts with this (several servers can share one Redis).
    key_prefix: Annotated[str, Meta(min_length=1, max_length=64)] = "pocketd:"
    # A Redis call that fails is retried this many times (with a short backoff) before the
    # call is answered UNAVAILABLE.
    redis_retries: Annotated[int, between(0, 10)] = 3


class PocketSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Pockets: the partitions of a namespace's memory that recall plans name and price."""

    # The time bucket of the kinds in `bucketed_kinds`, by event time: "week" (ISO week),
    # "month", "day" or "none" (one pocket per kind, tier and modality).
    time_bucket: str = "week"
    bucketed_kinds: tuple[str, ...] = ("episode", "observation")
    # A warm pocket of at most this many vectors is scanned exactly, not by its HNSW.
    exact_max_rows: Annotated[int, between(0, 1 << 24)] = 2048
    # A pocket scanned whole (at most `exact_max_rows`) of at least this many vectors is scanned
    # coarse to fine: its int8 codes first (kept in memory by its index, half the size of its
    # f16 vectors), then the best `coarse_rerank` × depth candidates on their stored vectors,
    # unless that rerank would cost more than the exact scan. From `python -m bench coarse`
    # (bench/RESULTS.md): the coarse stage loses no recall and costs less than the f16 scan from
    # about 12k vectors. The graph costs less still, so by default `exact_max_rows` stays below
    # it and the coarse range is empty: raise `exact_max_rows` to trade the graph's latency for
    # exact vector candidates at half the exact scan's cost.
    coarse_min_rows: Annotated[int, between(1, 1 << 30)] = 12_288
    coarse_rerank: Annotated[int, between(1, 1000)] = 2
    # Cost units: one unit is one exact 384-d f16 dot product. An HNSW search costs
    # `hnsw_units` × log2(pocket size) × max(depth, breadth); a coarse scan `coarse_units` per
    # code plus a unit per reranked vector; a BM25 search `bm25_units` per posting it reads.
    # Measured by `python -m bench costs` and `coarse` (bench/RESULTS.md).
    hnsw_units: Annotated[float, between(0.0, 1e6)] = 5.0
    coarse_units: Annotated[float, between(0.0, 1e6)] = 0.4
    bm25_units: Annotated[float, between(0.0, 1e6)] = 3.9


class IndexSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The warm indexes."""

    # usearch scalar type: f16 halves memory and adds faster than f32 at ~no recall cost.
    vector_dtype: str = "f16"
    # HNSW graph degree (usearch `connectivity`): more edges, better recall, more memory and
    # slower adds.
    connectivity: Annotated[int, between(2, 256)] = 16
    # HNSW build breadth. 64 adds about 2x faster than 128 at 100k with the same recall@5 (0.995
    # on clustered data, bench/RESULTS.md).
    expansion_add: Annotated[int, between(1, 1 << 16)] = 64
    # Search breadth of the write gate's near-duplicate probe: a duplicate (cosine >= 0.95) is so
    # close that a narrow search finds it, at a fraction of the cost of a Recall search.
    dedup_expansion_search: Annotated[int, between(1, 1 << 16)] = 16
    # Threads that insert into the HNSW graphs, one pocket each at a time (a graph is only ever
    # built by one thread); BM25 is built meanwhile on the indexer's own thread.
    add_workers: Annotated[int, between(1, 64)] = 2
    # Records moved from the store into the indexes per step of the background indexer.
    batch_size: Annotated[int, between(1, 65_536)] = 512
    # After a step that was not full (writes trickling in), the indexer waits this long so the
    # next writes share one commit (the hot tier serves them meanwhile, so a Recall finds a
    # memory as soon as it is written). A commit per write, with its segment and its merges,
    # took half of the cores from the agent loop's Recalls. 0: index each write at once.
    refresh_ms: Annotated[int, between(0, 10_000)] = 250
    # Seconds between snapshots of the vector indexes to disk (they also snapshot on shutdown).
    snapshot_seconds: Seconds = 60.0
    # Also snapshot once this many rows (`snapshot_rows`) were indexed since the last snapshot, or
    # this share of the indexed rows (`snapshot_fraction`) if that is more (a snapshot rewrites the
    # whole index, so its interval grows with the index). A crash re-indexes at most this much on
    # restart.
    snapshot_rows: Annotated[int, between(1, 1 << 30)] = 4096
    snapshot_fraction: Annotated[float, between(0.0, 10.0)] = 0.1
    # tantivy's writer heap, in bytes (tantivy's own minimum is 15 MB).
    keyword_heap_bytes: Annotated[int, between(15_000_000, 1 << 32)] = 64_000_000
    # Records' payloads held in memory (write-through), so a Recall's hits are not read from
    # SQLite: about 550 bytes with its entry for a memory of a sentence or two, so the default
    # holds some 240,000.
    record_cache_bytes: Annotated[int, between(0, 1 << 40)] = 128 << 20
    # Keyword documents whose analysed terms are held for the exact BM25 rescoring (about
    # 1.6 KB each, interned): a candidate missing from it is read out of tantivy.
    keyword_term_cache: Annotated[int, between(0, 1 << 30)] = 65_536
    # The metadata columns are snapshotted at most this often once they have changed, and at
    # shutdown, so a start-up replays the changes since instead of scanning every record.
    columns_snapshot_seconds: Annotated[float, Meta(gt=0.0, le=86_400.0)] = 60.0


class EncoderSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The built-in text encoder, run as ONNX by onnxruntime."""

    # "use-m3" (Universal Sentence Encoder multilingual v3: Chinese, English and across them;
    # `make models`), "minilm" (all-MiniLM-L6-v2, English only; `make models-minilm`) or
    # "none" (clients then always send vectors).
    text: str = "use-m3"
    # Empty: the built-in location, models/<text> in the checkout.
    model_dir: str = ""
    # An encoder that takes raw strings (use-m3) reads at most this many characters of a text.
    max_chars: Annotated[int, between(16, 1 << 20)] = 2048
    # Texts encoded per onnxruntime run.
    batch_size: Annotated[int, between(1, 4096)] = 32
    # Intra-op threads of the queries' session.
    threads: Threads = 2
    # Writes (Remember, RememberBatch, the agent loop's memories) encode on a session of their
    # own, on their caller's thread, so a Recall's query never waits for a write's batch to
    # finish. Off: one session for both (about 90 MB less memory).
    write_session: bool = True
    # Intra-op threads of the writes' session (`write_session`).
    write_threads: Threads = 1
    # A tokenized encoder (minilm) reads at most this many tokens of a text.
    max_tokens: Annotated[int, between(8, 512)] = 256


class SupersedeSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Supersession without ids (seed 000 §4.3): a new fact or preference that states a new value
    for the same thing as an older current memory makes the older one obsolete."""

    # Off: only the client's `supersedes` ids supersede.
    enabled: bool = True
    # Near neighbours of the same namespace and kind weighed per new memory.
    candidates: Annotated[int, between(1, 64)] = 8
    # The cosine from which two memories may be about the same thing (measured on the built-in
    # encoder, USE-multilingual-v3, by `python -m bench update` on its tune half).
    cosine: Annotated[float, Meta(gt=0.0, le=1.0)] = 0.5
    # A changed number, date or negation also needs the rest of the two texts' terms to agree
    # this much (their Jaccard similarity without the numbers).
    subject_overlap: Ratio = 0.25
    # A changed name needs vectors this much closer than `cosine`.
    name_margin: Annotated[float, between(0.0, 1.0)] = 0.0
    # A changed object of the same verb (the weakest evidence) needs vectors this much closer.
    object_margin: Annotated[float, between(0.0, 1.0)] = 0.15
    # Ranking: two current memories of one kind whose vectors lie this close, and that are not
    # plainly both true (one adds to the other, or they are about two people), are one slot: the
    # newer value ranks first even when the writer was unsure (tuned on `python -m bench update`'s
    # tune half).
    slot_cosine: Annotated[float, Meta(gt=0.0, le=1.0)] = 0.4
    # The newer of a slot takes the older's place in the ranking when its score is at least this
    # share of the older's (a question worded like the old value still finds the new one); an
    # older memory yields once, to the newer one of its slot closest to it.
    older_factor: Annotated[float, Meta(gt=0.0, le=1.0)] = 0.2


class RetentionSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Retention = w_importance·importance + w_freshness·freshness (seed 001 §2.3), each in [0, 1];
    a warm memory below `threshold` moves to cold."""

    # The weight of importance ((importance - 1) / 4).
    w_importance: Ratio = 0.5
    # The weight of freshness (recency of the last access or event, and the access count).
    w_freshness: Ratio = 0.5
    # Freshness halves every `half_life_days` since the last access (or the event time).
    half_life_days: Annotated[float, Meta(gt=0.0, le=36_500.0)] = 30.0
    # Each access adds to freshness, saturating: accesses / (accesses + access_saturation).
    access_saturation: Annotated[float, Meta(gt=0.0, le=1e6)] = 4.0
    # A warm memory whose retention falls below this moves to cold.
    threshold: Ratio = 0.3
    # Memories younger than this never move to cold, whatever their score.
    min_age_days: Annotated[float, Meta(ge=0.0, le=36_500.0)] = 14.0
    # Cold memories stored longer ago than this are deleted (unset, the default: the cold archive
    # keeps them however old; a memory past its `expires_at` is deleted from every tier anyway).
    cold_max_age_days: Annotated[float, Meta(gt=0.0, le=36_500.0)] | None = None


class CompressionSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Topic compression (seed 000 §2.4): more than `compress_after_count` current warm memories of
    one topic become one summary; the originals move to cold, linked both ways."""

    # Off: no topic is compressed.
    enabled: bool = True
    # A topic with more current warm memories than this is compressed (6 are, 5 are not).
    compress_after_count: Annotated[int, between(2, 10_000)] = 5
    # Without a `topic` field, memories whose vectors lie this close to a cluster's first member
    # form one topic.
    cluster_cosine: Annotated[float, Meta(gt=0.0, le=1.0)] = 0.8
    # Sentences kept in a summary.
    summary_sentences: Annotated[int, between(1, 64)] = 5


class SessionEndSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a session's end (EndSession, or `hot.ttl_seconds` after its last turn) writes: a
    summary of its hot turns as warm candidates, through the write gate."""

    # "extractive" (local, over the built-in encoder) or "openai" (an OpenAI-compatible
    # chat-completions endpoint; on failure the extractive summary is used).
    summariser: Literal["extractive", "openai"] = "extractive"
    # Sentences the extractive summary keeps per session.
    sentences: Annotated[int, between(1, 64)] = 4
    # The endpoint's base URL (…/v1) for summariser: openai.
    openai_url: str = ""
    # The model name sent to the endpoint.
    openai_model: str = ""
    # The environment variable that holds the endpoint's API key (unset or empty: no key sent).
    openai_key_env: str = "OPENAI_API_KEY"
    # How long a summary request may take before the extractive summary is used instead.
    openai_timeout_seconds: Annotated[float, Meta(gt=0.0, le=600.0)] = 30.0


class ColdSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The cold tier: compressed segments (msgspec + zstd) in the data directory, searched only at
    a high price."""

    # The price of one scanned cold vector, in cost units (an exact dot product is 1): what the
    # router weighs before it plans a cold pocket.
    units_per_vector: Annotated[float, Meta(gt=0.0, le=1e6)] = 20.0
    # Records per segment file.
    segment_rows: Annotated[int, between(16, 1 << 20)] = 4096
    # The zstd level of the segments (higher: smaller, slower to write).
    zstd_level: Annotated[int, between(1, 19)] = 3


class MaintenanceSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The lifecycle maintenance: retention tier moves, expiry, topic compression, session ends.
    One run at a time, journalled: a run interrupted by a crash is finished on restart."""

    # Off: maintenance runs only when the Maintain RPC asks for it.
    enabled: bool = True
    # How often maintenance runs on its own.
    interval_seconds: Annotated[float, Meta(gt=0.0, le=604_800.0)] = 3600.0
    # Each interval is stretched or shrunk by up to this share at random, so that servers
    # started together do not run together.
    jitter: Annotated[float, between(0.0, 0.5)] = 0.1


class LifecycleSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How memory changes with time (seed 000 §2.4, §4.3; seed 001 §2.3, §4.1)."""

    supersede: SupersedeSettings = msgspec.field(default_factory=SupersedeSettings)
    retention: RetentionSettings = msgspec.field(default_factory=RetentionSettings)
    compression: CompressionSettings = msgspec.field(default_factory=CompressionSettings)
    session_end: SessionEndSettings = msgspec.field(default_factory=SessionEndSettings)
    cold: ColdSettings = msgspec.field(default_factory=ColdSettings)
    maintenance: MaintenanceSettings = msgspec.field(default_factory=MaintenanceSettings)


class MemorySettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Memory settings (seed 000 §4.5)."""

    # The vectors' dimension: the encoder's (use-m3: 512, minilm: 384), or your own with
    # encoder.text: none.
    embedding_dim: Annotated[int, between(1, 8192)] = 512
    # A memory with a speaker is encoded as "speaker: text", as a transcript reads: a question
    # that names whom it is about ("what did Maya say about …") then finds that speaker's
    # turns by meaning too, not only through the keyword channel's speaker field.
    embed_speaker: bool = False
    # Recall hits and Get are counted in memory and folded into the records this often.
    access_flush_seconds: Annotated[float, Meta(gt=0.0, le=3600.0)] = 1.0
    hybrid_search: HybridSearchSettings = msgspec.field(default_factory=HybridSearchSettings)
    write_policy: WritePolicySettings = msgspec.field(default_factory=WritePolicySettings)
    retrieval: DecaySettings = msgspec.field(default_factory=DecaySettings)
    context: ContextSettings = msgspec.field(default_factory=ContextSettings)
    hot: HotSettings = msgspec.field(default_factory=HotSettings)
    pockets: PocketSettings = msgspec.field(default_factory=PocketSettings)
    index: IndexSettings = msgspec.field(default_factory=IndexSettings)
    lifecycle: LifecycleSettings = msgspec.field(default_factory=LifecycleSettings)


class RouterSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Store routing: which pockets a Recall searches, and how deep (seed 003)."""

    # "full": every pocket the filter allows (the reference, and the default until the router's
    # benchmark shows a policy keeps recall); "heuristic": the rules of seed 003 §3.1, §4.2;
    # "learned": the trained model (`pocketd router train`); "hybrid": strong rules, then the
    # model. learned and hybrid run the heuristic until a model is installed (cold start).
    # A Recall's `route_policy` overrides it.
    policy: Literal["full", "heuristic", "learned", "hybrid"] = "full"
    # A routed plan searches every pocket whose probability of holding what the query needs
    # is at least this (and the most probable one whatever its probability): coverage first,
    # since a missed pocket costs a wrong answer and an extra one microseconds. Lower it to
    # search more; `python -m bench router` draws coverage and cost against it.
    skip_below: Ratio = 0.1
    # A cap on a routed plan's estimated cost, as a share of what the full plan would cost: past
    # it, the least probable pockets are dropped (1: no cap).
    max_cost_share: Ratio = 1.0
    # The example questions of each intent the router reads from a query's vector (session,
    # profile, summary, history, none: `server.core.routing.intents`); empty: the built-in
    # English and Chinese ones. An intent given no example is never read.
    intent_examples: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    # A plan whose most probable pocket is below this is widened to the full plan.
    min_confidence: Ratio = 0.5
    # The share of routed Recalls that also run the full plan in shadow, off the request path,
    # and log the comparison (exploration, seed 003 §5.1; the labels for training).
    explore_share: Ratio = 0.05
    # The decision log (`pocketd router log`), in `<data_dir>/router`: it rotates past
    # `log_max_bytes` and keeps `log_files` older files.
    log_max_bytes: Annotated[int, between(4096, 1 << 34)] = 16 * 1024 * 1024
    log_files: Annotated[int, between(0, 1000)] = 4
    # How often the server looks for a newly installed (or rolled back) model, in seconds.
    reload_interval_s: Annotated[float, between(0.05, 3600.0)] = 1.0
    # Leading values of the query vector a policy sees.
    prefix_dim: Annotated[int, between(1, 8192)] = 128
    # The query's lexical flags (a route feature; English whole words, Chinese substrings): it
    # names a time (`time_cues`), a quantity (`quantity_cues`, or a number with a unit) or a
    # comparison (`comparison_cues`).
    time_cues: tuple[str, ...] = (
        "when",
        "today",
        "yesterday",
        "last week",
        "last month",
        "last year",
        "ago",
        "recently",
        "什么时候",
        "今天",
        "昨天",
        "上周",
        "上个月",
        "去年",
        "最近",
        "之前",
        "以前",
    )
    quantity_cues: tuple[str, ...] = (
        "how many",
        "how much",
        "how long",
        "how often",
        "多少",
        "几个",
        "几次",
        "多久",
    )
    comparison_cues: tuple[str, ...] = (
        "more than",
        "less than",
        "compared",
        "versus",
        "vs",
        "better",
        "worse",
        "bigger",
        "smaller",
        "比",
        "更",
        "还是",
    )
    # A reference to the current conversation. Not "earlier", "before", "you said" or "我说":
    # they as often point back to a past conversation ("from our earlier chats").
    just_said_cues: tuple[str, ...] = (
        "just said",
        "just told",
        "just mentioned",
        "just asked",
        "a moment ago",
        "a minute ago",
        "a few minutes ago",
        "just now",
        "in this conversation",
        "in this chat",
        "earlier today",
        "刚才",
        "刚刚",
        "方才",
        "这次对话",
        "这次聊天",
    )
    # A question about the user's standing facts, in the first person or the third. Not a bare
    # "my" or "我的": "my trip last spring" asks for the history.
    about_me_cues: tuple[str, ...] = (
        "what is my",
        "what's my",
        "my name",
        "my favorite",
        "my favourite",
        "do i like",
        "do i prefer",
        "who am i",
        "the user's",
        "user's",
        "the user prefer",
        "my preferred",
        "i usually",
        "我叫什么",
        "我的名字",
        "我喜欢",
        "我最喜欢",
        "我是谁",
        "用户的",
        "用户喜欢",
        "偏好",
        "习惯",
        "爱好",
        "平时",
        "口味",
    )
    # The form of a question, for the heuristic's store model (`routing.heuristic`): it asks for the
    # gist of past conversations (`summary_cues`), for an exact detail (`detail_cues`), points back
    # to a past conversation (`past_cues`), or to the current one (`current_cues`). Latin cues match
    # whole words, CJK ones as substrings.
    summary_cues: tuple[str, ...] = (
        "overall",
        "in general",
        "generally",
        "general terms",
        "big picture",
        "gist",
        "overview",
        "recap",
        "summarize",
        "summarise",
        "summary",
        "so far",
        "shaping up",
        "came up",
        "all about",
        "discussed",
        "talked about",
        "how is it going",
        "how did it go",
        "progress",
        "概括",
        "总结",
        "回顾",
        "大概",
        "整体",
        "总体",
        "进展",
        "聊了些",
        "聊过",
        "都聊",
        "情况",
        "怎么样了",
    )
    detail_cues: tuple[str, ...] = (
        "exact",
        "exactly",
        "how much",
        "which",
        "name of",
        "number",
        "price",
        "date",
        "word for word",
        "quote",
        "具体",
        "叫什么",
        "哪个",
        "哪家",
        "哪天",
        "原话",
        "精确",
    )
    past_cues: tuple[str, ...] = (
        "back then",
        "a while ago",
        "a while back",
        "previously",
        "earlier chat",
        "earlier conversation",
        "earlier conversations",
        "past conversation",
        "past conversations",
        "previous conversation",
        "previous session",
        "last time",
        "ago",
        "older conversation",
        "以前",
        "之前",
        "那阵子",
        "当时",
        "有一次",
        "上次",
        "那时候",
        "过去",
        "曾经",
    )
    current_cues: tuple[str, ...] = (
        "settled on",
        "right now",
        "currently",
        "this conversation",
        "this session",
        "so far today",
        "we're talking",
        "we are talking",
        "这次",
        "正聊",
        "刚说",
        "刚提",
        "现在",
    )
    # Critical patterns: a query that names one is searched in full (seed 003 §5.2).
    safety_cues: tuple[str, ...] = (
        "allergy",
        "allergic",
        "medication",
        "medicine",
        "dose",
        "dosage",
        "payment",
        "credit card",
        "bank account",
        "password",
        "passport",
        "social security",
        "security",
        "过敏",
        "药",
        "剂量",
        "支付",
        "付款",
        "银行卡",
        "密码",
        "身份证",
        "护照",
        "安全",
    )


class LedgerSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The agent tasks' budget ledger (`<data_dir>/ledger.sqlite3`)."""

    # The share of a task's total held back for its final answer, unless the task sets its own.
    emergency_ratio: Annotated[float, between(0.0, 0.9)] = 0.2
    # The degrade ladder, in percent of the ordinary budget spent or held: warn (unless the task
    # sets its own; `warn_at_percent`), then a cheaper model tier (`cheaper_tier_at_percent`),
    # then optional tools off (`tools_off_at_percent`); 100: the failover.
    warn_at_percent: Annotated[int, between(1, 100)] = 80
    cheaper_tier_at_percent: Annotated[int, between(1, 100)] = 90
    tools_off_at_percent: Annotated[int, between(1, 100)] = 95
    # How long a reservation holds when the call names no TTL (`reservation_ttl_seconds`), and
    # the longest it may ask for (`max_reservation_ttl_seconds`).
    reservation_ttl_seconds: Annotated[int, between(1, 86_400)] = 300
    max_reservation_ttl_seconds: Annotated[int, between(1, 604_800)] = 86_400
    # How long an answer stays recorded under its idempotency key: a retry later than this
    # runs again. Older answers are pruned.
    reply_ttl_seconds: Annotated[int, between(60, 31_536_000)] = 86_400
    # A final answer's reservations a task may hold at once (the emergency share is for one
    # final answer, not many).
    max_final_holds: Annotated[int, between(1, 64)] = 1


class RouteSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One model tier: what Step names as the round's model, and its limits."""

    # The model Step names for a round of this tier (priced by `agent.prices`).
    model: str
    # Rounds a task may run at this tier before Step says to stop.
    max_rounds: Annotated[int, between(1, 10_000)]
    # The tokens one round of this tier may spend.
    token_budget_round: Annotated[int, between(16, 10_000_000)]


class PriceSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A model's price, in micro-units per 1,000 tokens."""

    # Micro-units per 1,000 prompt tokens (`input_per_1k_micros`) and per 1,000 completion
    # tokens (`output_per_1k_micros`).
    input_per_1k_micros: Annotated[int, between(0, 10**12)] = 0
    output_per_1k_micros: Annotated[int, between(0, 10**12)] = 0


def _routes() -> dict[str, RouteSettings]:  # seed 001 §4.1
    return {
        "simple": RouteSettings("fast_small_model", 3, 2000),
        "medium": RouteSettings("default_chat_model", 8, 6000),
        "complex": RouteSettings("strong_reasoning_model", 15, 16000),
        "vision": RouteSettings("vlm_model", 10, 12000),
    }


def _prices() -> dict[str, PriceSettings]:  # placeholders, by tier: set your own
    return {
        "fast_small_model": PriceSettings(150, 600),
        "default_chat_model": PriceSettings(1000, 3000),
        "strong_reasoning_model": PriceSettings(5000, 15000),
        "vlm_model": PriceSettings(3000, 9000),
    }


class AgentSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The agent loop's Step: model tiers, prices, memory commits."""

    # The model tiers (simple, medium, complex, vision; every one must be named), each with its
    # model, its round limit and its per-round token budget (seed 001 §4.1).
    routes: dict[str, RouteSettings] = msgspec.field(default_factory=_routes)
    # Round rules (seed 001 §5.3): the complex tier only for a task's first `complex_rounds`
    # rounds (then medium), and Step says to escalate from round `escalate_round`.
    complex_rounds: Annotated[int, between(1, 10_000)] = 5
    escalate_round: Annotated[int, between(1, 10_000)] = 10
    # The intent cache's TTL (seed 000 §4.4), and the classifier's confidences: below
    # `min_confidence` a prompt goes to medium; a later round moves the task up a tier only
    # at `jump_confidence`.
    intent_ttl_seconds: Annotated[float, Meta(gt=0.0, le=86_400.0)] = 1800.0
    min_confidence: Annotated[float, between(0.0, 1.0)] = 0.6
    jump_confidence: Annotated[float, between(0.0, 1.0)] = 0.75
    # Each model's price in micro-units per 1,000 input and output tokens: what Step charges a
    # task for a model call. The defaults are placeholders: set your own.
    prices: dict[str, PriceSettings] = msgspec.field(default_factory=_prices)
    # A model not in `prices`: charged at this, with a warning.
    default_price: PriceSettings = PriceSettings(1000, 3000)
    # pocketd's own work, charged to the task: a Recall per 1,000 of its cost units
    # (`recall_micros_per_kilounit`), a stored memory each (`remember_micros`).
    recall_micros_per_kilounit: Annotated[int, between(0, 10**9)] = 1
    remember_micros: Annotated[int, between(0, 10**9)] = 20
    # A lookup in the tool-result cache (seed 001 §3.2: a hit charges the lookup, not the call).
    cache_lookup_micros: Annotated[int, between(0, 10**9)] = 1
    # A round's key event (a new medium, a stage completed, an error fixed) is committed as a
    # memory when its strength reaches this (seed 001 §2.3). What the user says is kept always.
    commit_threshold: Annotated[float, between(0.0, 1.0)] = 0.7
    # The same action this many rounds in a row is a loop: Step says to stop or change course.
    loop_repeat: Annotated[int, between(2, 100)] = 3
    # Memories a Step recalls for the round's context (2: chosen on the agent bench's seen,
    # held-out, blind and blind2 wordings, 2026-12-07, issue 32, once the task's own
    # preferences and the earlier tasks' outcomes were shown apart: 3 cost 1 % more tokens for
    # the same completion; 5 showed earlier sessions' tool outputs no round used).
    recall_top_k: Annotated[int, between(1, 100)] = 2
    # Beside them, the user's profile: of twice as many of the most relevant of their
    # preferences (memories of kind preference: an input Step read as one, or Remember with
    # that kind) and of the inputs Step kept as episodes that read likelier a preference than
    # anything else, not already recalled, this many of the newest. 0: none.
    profile_top_k: Annotated[int, between(0, 20)] = 3
    # And in every round of a task, how the user's latest earlier tasks ended (each one's
    # outcome: the observation its final answer rested on; for a session that kept none, its
    # newest stage completed or error fixed), among those nearest its goal: what happened last
    # time. 0: none.
    earlier_outcomes: Annotated[int, between(0, 20)] = 2
    # Entries of the tool-result cache per tenant (a repeated read-only tool call is served from
    # it).
    tool_cache_size: Annotated[int, between(1, 1_000_000)] = 512
    # Tasks whose loop state (goal, rounds, tools) is held in memory; the least recent goes.
    sessions: Annotated[int, between(1, 10_000_000)] = 10_000
    # The rounds of a task its loop state keeps (turns, inputs, actions, stored
    # observations): the context shows recent rounds, and a long task's state stays bounded.
    session_rounds: Annotated[int, between(4, 100_000)] = 64
    # The tokenizer.json that prompt tokens are counted with. Empty: the built-in one,
    # models/tokenizer/tokenizer.json (all-MiniLM-L6-v2's WordPiece; `make models`).
    tokenizer_file: str = ""


class ImageLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What an image may be, checked from its header before a pixel is decoded (a small PNG
    that decodes to 50,000 × 50,000 pixels is refused, not decoded)."""

    # The encoded file's size (below `server.max_message_bytes`, which bounds any call).
    max_bytes: Annotated[int, between(1, 1 << 30)] = 15 << 20
    # Width × height.
    max_pixels: Annotated[int, between(1, 1 << 32)] = 40_000_000
    # The longer side.
    max_side: Annotated[int, between(1, 1 << 20)] = 16_384


class AudioLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a recording may be, its duration read from its header before it is decoded (an
    hour of silence compresses to little, so bytes alone do not bound the work)."""

    # The encoded file's size (below `server.max_message_bytes`, which bounds any call: 15 MiB
    # hold 8 minutes of 16 kHz 16-bit WAV, hours of a compressed recording).
    max_bytes: Annotated[int, between(1, 1 << 30)] = 15 << 20
    # Its duration.
    max_seconds: Annotated[float, Meta(gt=0.0, le=86_400.0)] = 600.0


class TableLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """CSV, TSV and Markdown tables, linearised into "column: value" rows."""

    # The file's size (UTF-8).
    max_bytes: Annotated[int, between(1, 1 << 30)] = 4 << 20
    # Rows linearised into the memory's text; the rest are counted ("… 120 more rows").
    max_rows: Annotated[int, between(1, 1 << 20)] = 200
    # Columns kept per row (and as tags).
    max_columns: Annotated[int, between(1, 1024)] = 32


class OcrSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Reading the text in images (rapidocr on onnxruntime; its Chinese and English models ship
    in its wheel)."""

    # Off: an image memory's text is its caption only (a bare image is then refused unless an
    # image space is configured).
    enabled: bool = True
    # Lines the recogniser is less sure of than this are left out.
    min_score: Ratio = 0.5
    # onnxruntime's intra-op threads for OCR.
    threads: Threads = 1


class SpeechSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Transcribing recordings (faster-whisper on CTranslate2; weights from `make models`)."""

    # Off: an audio memory needs its transcript in `text`.
    enabled: bool = True
    # The English model (Whisper tiny.en); empty: `models/whisper-tiny-en` in the checkout.
    model_dir: str = ""
    # A multilingual model (Whisper base, `make models-speech-zh`) for recordings in other
    # languages; empty: none, and only English is transcribed.
    multilingual_model_dir: str = ""
    # The language a recording is decoded as when the write names none: "en", or "auto"
    # (detected on the first 30 s by the multilingual model, which must then be set).
    default_language: str = "en"
    # CTranslate2's threads.
    threads: Threads = 1


class ClipSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An image space: a CLIP-style model that puts images and text queries in one vector space
    (user-supplied: `pocketd models export-clip`). Off while `model_dir` is empty."""

    # The exported model's directory (image.onnx, text.onnx, manifest.json, the tokenizer's
    # vocabulary); empty: no image space.
    model_dir: str = ""
    # The space's name in records and pockets.
    space: Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] = "clip"
    # Cosines at or below this count as no match in this space; unset: the model manifest's.
    vector_floor: Annotated[float, between(-1.0, 1.0)] | None = None
    # A cosine at or above this counts as a full match; unset: the model manifest's.
    vector_ceiling: Annotated[float, between(-1.0, 1.0)] | None = None
    # onnxruntime's intra-op threads for the two towers.
    threads: Threads = 1


class AlignmentSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The check that a caption and what the image says agree (seed 001 §5.2)."""

    # "off", "warn" (stored, with a warning in the reply and the record's tags), or "reject"
    # (not stored; the reply's reason says why).
    mode: Literal["off", "warn", "reject"] = "warn"
    # Caption and OCR text whose agreement score is below this disagree.
    min_score: Ratio = 0.15


class MediaQueueSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The background queue that reads, transcribes and encodes media after the write is
    acknowledged."""

    # Items waiting or in work; a write beyond it gets RESOURCE_EXHAUSTED (backpressure).
    max_pending: Annotated[int, between(1, 1 << 20)] = 256
    # Worker threads (OCR and speech are CPU-bound: one per spare core).
    workers: Annotated[int, between(1, 64)] = 1
    # A Recall waits at most this long (within its deadline) for its session's pending media
    # (the namespace's, when its filter names no session).
    recall_wait_seconds: Annotated[float, between(0.0, 600.0)] = 30.0
    # Load the OCR and speech models in the background at start-up, so that the first medium
    # is not read behind several seconds of loading.
    warm_up: bool = True


class MediaSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Multimodal memory: screenshots, voice notes and tables (seed 001 §2.2, §5.2; seed 000
    §2.1, §4.2)."""

    image: ImageLimits = msgspec.field(default_factory=ImageLimits)
    audio: AudioLimits = msgspec.field(default_factory=AudioLimits)
    table: TableLimits = msgspec.field(default_factory=TableLimits)
    ocr: OcrSettings = msgspec.field(default_factory=OcrSettings)
    speech: SpeechSettings = msgspec.field(default_factory=SpeechSettings)
    clip: ClipSettings = msgspec.field(default_factory=ClipSettings)
    alignment: AlignmentSettings = msgspec.field(default_factory=AlignmentSettings)
    queue: MediaQueueSettings = msgspec.field(default_factory=MediaQueueSettings)
    # Two images whose image-space cosine is at least this are one picture (near-duplicate
    # merging of media reads the blob's hash and this, never an empty or generic text).
    dedup_image_cosine: Ratio = 0.97


class Settings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The whole configuration."""

    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    auth: AuthSettings = msgspec.field(default_factory=AuthSettings)
    tls: TlsSettings = msgspec.field(default_factory=TlsSettings)
    limits: LimitSettings = msgspec.field(default_factory=LimitSettings)
    memory: MemorySettings = msgspec.field(default_factory=MemorySettings)
    encoder: EncoderSettings = msgspec.field(default_factory=EncoderSettings)
    router: RouterSettings = msgspec.field(default_factory=RouterSettings)
    ledger: LedgerSettings = msgspec.field(default_factory=LedgerSettings)
    agent: AgentSettings = msgspec.field(default_factory=AgentSettings)
    media: MediaSettings = msgspec.field(default_factory=MediaSettings)


def resolve_thresholds(mem: MemorySettings, t: EncoderThresholds) -> MemorySettings:
    """The memory settings with each encoder-dependent key left unset taken from `t` (the
    encoder's manifest)."""
    hs, wp = mem.hybrid_search, mem.write_policy
    if hs.vector_floor is None:
        hs = msgspec.structs.replace(hs, vector_floor=t.vector_floor)
    if hs.vector_ceiling is None:
        hs = msgspec.structs.replace(hs, vector_ceiling=t.vector_ceiling)
    if wp.dedup_cosine is None:
        wp = msgspec.structs.replace(wp, dedup_cosine=t.dedup_cosine)
    return msgspec.structs.replace(mem, hybrid_search=hs, write_policy=wp)
