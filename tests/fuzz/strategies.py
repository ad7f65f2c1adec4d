"""Hypothesis strategies that build every request message of every RPC, valid and invalid.

They mix well-formed values (so that calls get past validation and reach the engine) with the
values an attacker would send: unicode of every category, NUL bytes, huge strings; NaN, Inf,
huge, tiny and denormal vectors of any dimension; unknown enum values; the extremes of every
integer type; timestamps far outside the calendar; huge repeated fields; and raw garbage bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import strategies as st

from pocketd.v1 import memory_pb2 as pb
from pocketd.v1 import memory_service_pb2 as spb

DIM = 512
NAMESPACES = ("fz1", "fz2", "fz.team/a")  # never the canary's namespace
INT32 = (-(2**31), 2**31 - 1)
UINT32 = (0, 2**32 - 1)
UINT64 = (0, 2**64 - 1)
INT64 = (-(2**63), 2**63 - 1)


def mostly(
    valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """`valid` nine times in ten: a request has a dozen fields, and one that is almost always
    invalid somewhere would never get past validation to the engine."""
    return st.integers(0, 9).flatmap(lambda i: invalid if i == 0 else valid)


# Protobuf strings are UTF-8: surrogates cannot be encoded at all, so they are left out.
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=64)
huge_text = st.sampled_from([40_000, 5_000, 129, 128]).map(lambda n: "x" * n)
texts = st.one_of(
    st.sampled_from(
        [
            "",
            "Alice only uses Android phones",
            "E1234 failed; fixed by raising the quota",
            "付款失败 安卓",
            "\x00",
            "my name is Bob and I prefer email",
        ]
    ),
    any_text,
    mostly(st.just("refund policy"), huge_text),
)
ids = mostly(
    st.sampled_from(["m1", "m2", "m:1.2-3", "x" * 128]),
    st.one_of(st.sampled_from(["", "id\n", "a" * 129, "../etc"]), any_text),
)
namespaces = mostly(
    st.sampled_from(NAMESPACES), st.one_of(st.sampled_from(["", "r4\n", "a b"]), any_text)
)
labels = mostly(
    st.sampled_from(["ok", "设备", "Café au lait", "p1"]),
    st.one_of(st.sampled_from([" pad", "t\tab", "\u200b", "z" * 65]), any_text),
)


def ints(bounds: tuple[int, int]) -> st.SearchStrategy[int]:
    lo, hi = bounds
    return st.one_of(st.sampled_from([lo, hi, 0, 1, -1 if lo < 0 else 2]), st.integers(lo, hi))


enums = st.one_of(st.integers(-3, 12), ints(INT32))


def enum(lo: int, hi: int) -> st.SearchStrategy[int]:
    return mostly(st.integers(lo, hi), enums)


timestamps = st.builds(
    lambda s, n: Timestamp(seconds=s, nanos=n),
    mostly(
        st.integers(0, 1_790_000_000),
        st.one_of(
            st.integers(0, 253_402_300_799),
            st.sampled_from([INT64[0], INT64[1], -1, 253_402_300_800, 1_800_000_000]),
        ),
    ),
    mostly(st.integers(0, 999_999_999), ints(INT32)),
)


@st.composite
def vectors(draw: st.DrawFn) -> list[float]:
    """Empty, valid, wrongly sized, scaled to the float32 extremes, or poisoned with NaN/Inf."""
    shape = draw(
        st.sampled_from(
            ["empty", "empty", "ok", "ok", "ok", "ok", "dim", "scaled", "poison", "zero"]
        )
    )
    if shape == "empty":
        return []
    if shape == "dim":
        return [0.5] * draw(st.sampled_from([1, 383, 385, 768, 3000]))
    if shape == "zero":
        return [0.0] * DIM
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    v = rng.normal(size=DIM)
    v /= np.abs(v).max()
    if shape == "scaled":
        v *= draw(st.sampled_from([1e38, 1e20, 1e-30, 1e-38, 1e-45]))
    out = [float(x) for x in v.astype(np.float32)]
    if shape == "poison":
        out[draw(st.integers(0, DIM - 1))] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
    return out


def repeated(elem: st.SearchStrategy[Any], huge: int) -> st.SearchStrategy[list[Any]]:
    """Short lists mostly, and now and then one far over any cap."""
    return mostly(
        st.lists(elem, max_size=3),
        st.one_of(st.lists(elem, min_size=30, max_size=40), elem.map(lambda e: [e] * huge)),
    )


def sometimes(draw: st.DrawFn) -> bool:
    return draw(st.integers(0, 3)) == 0


@st.composite
def records(draw: st.DrawFn) -> pb.MemoryRecord:
    r = pb.MemoryRecord(
        namespace=draw(namespaces),
        memory_id=draw(st.one_of(st.just(""), ids)),
        session_id=draw(st.one_of(st.just(""), st.just("s1"), ids)),
        kind=draw(enum(1, 6)),
        modality=draw(enum(0, 4)),
        text=draw(texts),
        source_type=draw(enum(0, 4)),
        topic=draw(st.one_of(st.just(""), labels)),
        group_id=draw(st.one_of(st.just(""), ids)),
    )
    r.vector.extend(draw(vectors()))
    r.tags.extend(draw(repeated(labels, 3_000)))
    if draw(st.booleans()):
        r.importance = draw(mostly(st.integers(1, 5), ints(INT32)))
    for name in ("created_at", "expires_at"):
        if sometimes(draw):
            getattr(r, name).CopyFrom(draw(timestamps))
    if sometimes(draw):
        r.blob.CopyFrom(
            pb.BlobRef(
                uri=draw(mostly(st.just("s3://b/k"), st.sampled_from(["no scheme", ""]))),
                mime_type=draw(mostly(st.just("image/png"), st.sampled_from(["png", "x" * 200]))),
                size_bytes=draw(ints(UINT64)),
                sha256=draw(mostly(st.just("0" * 64), st.just("XYZ"))),
            )
        )
    if sometimes(draw):
        r.source.CopyFrom(
            pb.MemorySource(tool=draw(labels), round=draw(ints(UINT32)), task_id=draw(ids))
        )
    return r


@st.composite
def filters(draw: st.DrawFn) -> spb.MemoryFilter:
    f = spb.MemoryFilter(
        session_id=draw(st.one_of(st.just(""), st.just("s1"), ids)),
        min_importance=draw(mostly(st.integers(0, 5), ints(UINT32))),
    )
    f.kinds.extend(draw(repeated(enum(1, 6), 20_000)))
    f.modalities.extend(draw(repeated(enum(1, 4), 20_000)))
    f.tags.extend(draw(repeated(labels, 3_000)))
    for name in ("created_after", "created_before"):
        if sometimes(draw):
            getattr(f, name).CopyFrom(draw(timestamps))
    return f


@st.composite
def remember_requests(draw: st.DrawFn) -> spb.RememberRequest:
    req = spb.RememberRequest(record=draw(records()))
    req.hints.remember = draw(st.booleans())
    req.hints.error_resolved = draw(st.booleans())
    if sometimes(draw):
        req.supersedes.extend(draw(repeated(ids, 500)))
    return req


@st.composite
def batch_requests(draw: st.DrawFn) -> spb.RememberBatchRequest:
    n = draw(st.one_of(st.integers(0, 6), st.sampled_from([1025])))
    if n > 6:  # over the cap: cheap copies, refused before any item is looked at
        item = draw(remember_requests())
        return spb.RememberBatchRequest(items=[item] * n)
    return spb.RememberBatchRequest(items=[draw(remember_requests()) for _ in range(n)])


@st.composite
def recall_requests(draw: st.DrawFn) -> spb.RecallRequest:
    req = spb.RecallRequest(
        namespace=draw(namespaces),
        query_text=draw(texts),
        query_modality=draw(enum(0, 4)),
        include_obsolete=draw(st.booleans()),
        include_expired=draw(st.booleans()),
        include_vectors=draw(st.booleans()),
    )
    req.query_vector.extend(draw(vectors()))
    if draw(st.booleans()):
        req.top_k = draw(mostly(st.integers(1, 10), ints(INT32)))
    if draw(st.booleans()):
        req.min_score = draw(mostly(st.floats(0.0, 1.0, width=32), st.floats(width=32)))
    if draw(st.booleans()):
        req.filter.CopyFrom(draw(filters()))
    return req


@st.composite
def get_requests(draw: st.DrawFn) -> spb.GetRequest:
    return spb.GetRequest(
        namespace=draw(namespaces), memory_id=draw(ids), include_vector=draw(st.booleans())
    )


@st.composite
def forget_requests(draw: st.DrawFn) -> spb.ForgetRequest:
    req = spb.ForgetRequest(namespace=draw(namespaces), all=draw(st.booleans()))
    target = draw(st.sampled_from(["none", "id", "filter"]))
    if target == "id":
        req.memory_id = draw(ids)
    elif target == "filter":
        req.filter.CopyFrom(draw(filters()))
    return req


stats_requests = st.builds(spb.StatsRequest, namespace=st.one_of(st.just(""), namespaces))


@st.composite
def facts(draw: st.DrawFn) -> spb.AuthoritativeFact:
    f = spb.AuthoritativeFact(
        text=draw(texts),
        topic=draw(st.one_of(st.just(""), labels)),
        source_type=draw(enum(0, 4)),
        kind=draw(enum(0, 6)),
    )
    f.vector.extend(draw(vectors()))
    return f


@st.composite
def reconcile_requests(draw: st.DrawFn) -> spb.ReconcileRequest:
    req = spb.ReconcileRequest(namespace=draw(namespaces), dry_run=draw(st.booleans()))
    n = draw(st.one_of(st.integers(0, 4), st.sampled_from([1025])))
    if n > 4:  # over the cap: cheap copies, refused before any fact is looked at
        req.facts.extend([draw(facts())] * n)
    else:
        req.facts.extend(draw(facts()) for _ in range(n))
    return req


unsupersede_requests = st.builds(
    lambda ns, mids: spb.UnsupersedeRequest(namespace=ns, memory_ids=mids),
    namespaces,
    mostly(st.lists(ids, min_size=1, max_size=3), repeated(ids, 2_000)),
)
end_session_requests = st.builds(
    spb.EndSessionRequest,
    namespace=namespaces,
    session_id=st.one_of(st.just(""), st.just("s1"), ids),
)
maintain_requests = st.builds(spb.MaintainRequest, namespace=st.one_of(st.just(""), namespaces))

SERVICE = "/pocketd.v1.MemoryService/"
# (method path, strategy of its request message)
CALLS: list[tuple[str, st.SearchStrategy[Message]]] = [
    (SERVICE + "Remember", remember_requests()),
    (SERVICE + "RememberBatch", batch_requests()),
    (SERVICE + "Recall", recall_requests()),
    (SERVICE + "Get", get_requests()),
    (SERVICE + "Forget", forget_requests()),
    (SERVICE + "Stats", stats_requests),
    (SERVICE + "Reconcile", reconcile_requests()),
    (SERVICE + "Unsupersede", unsupersede_requests),
    (SERVICE + "EndSession", end_session_requests),
    (SERVICE + "Maintain", maintain_requests),
]
METHODS = [m for m, _ in CALLS] + ["/grpc.health.v1.Health/Check"]

# One call: (method path, serialised request bytes). Raw garbage goes to every method path.


def _on(path: str) -> Callable[[Message], tuple[str, bytes]]:
    return lambda m: (path, m.SerializeToString())


calls = st.one_of(
    *[s.map(_on(path)) for path, s in CALLS],
    st.tuples(st.sampled_from(METHODS), st.binary(min_size=1, max_size=512)),
)
