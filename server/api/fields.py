"""The rules for single fields: identifiers, labels, timestamps and vectors.

Each rule is a pure function returning a problem description, or None when the value is fine, so
`server.api.validation` can name the field path. The proto comments state the same rules.

- Identifiers are ASCII and matched whole (`fullmatch`: a trailing newline is not ignored):
  a namespace is 1-128 of [A-Za-z0-9_.:/-] starting with a letter or digit; a memory id (and
  group id) 1-128 of [A-Za-z0-9_.:-]; a session id (and task id) 1-128 of [A-Za-z0-9_.:/@+=-].
- Labels (tags, topic, source tool) are Unicode, so Chinese labels work, but printable: no control,
  format, private-use, unassigned or surrogate characters, no separator but the plain space, and no
  leading or trailing space.
- Timestamps lie in [1970-01-01T00:00:00Z, 9999-12-31T23:59:59.999999999Z]: seconds in
  0..253402300799 and nanos in 0..999,999,999, the range every client library's date type holds.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sized

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

NAMESPACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}")
MEMORY_ID_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
SESSION_ID_RE = re.compile(r"[A-Za-z0-9_.:/@+=-]{1,128}")
MIME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}")
SHA256_RE = re.compile(r"[0-9a-f]{64}")

NAMESPACE_RULE = "must be 1-128 characters of [A-Za-z0-9_.:/-], starting with a letter or digit"
SPACE_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
SPACE_RULE = (
    'must be 1-32 characters of [a-z0-9_-], starting with a letter, and not "text" or "passages"'
)
LANGUAGE_RE = re.compile(r"auto|[a-z]{2,3}")
LANGUAGE_RULE = 'must be "auto" or a 2-3 letter language code ("en", "zh")'
MEMORY_ID_RULE = "must be 1-128 characters of [A-Za-z0-9_.:-]"
SESSION_ID_RULE = "must be 1-128 characters of [A-Za-z0-9_.:/@+=-]"
POCKET_RE = re.compile(r"[a-z]+/[a-z]+/[a-z]+(?:/[0-9A-Z-]{4,10})?")
POCKET_RULE = "must be a pocket name as Stats lists it: kind/tier/modality[/bucket]"

# 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in seconds since the epoch.
MIN_SECONDS = 0
MAX_SECONDS = 253_402_300_799
TIME_RULE = "must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z"


def matches(pattern: re.Pattern[str], value: str) -> bool:
    return pattern.fullmatch(value) is not None


def length_problem(value: str, limit: int) -> str | None:
    """Why `value` is too long for `limit` characters, or None."""
    return f"has {len(value)} characters; the maximum is {limit}" if len(value) > limit else None


def label_problem(value: str, limit: int) -> str | None:
    """Why `value` is not a valid label of at most `limit` characters, or None."""
    if not value:
        return f"must be 1-{limit} characters; it is empty"
    if (too_long := length_problem(value, limit)) is not None:
        return too_long
    if value != value.strip():
        return "must not start or end with whitespace"
    for ch in value:
        cat = unicodedata.category(ch)
        if cat[0] == "C" or (cat[0] == "Z" and ch != " "):
            return f"contains the character U+{ord(ch):04X}, which is not printable"
    return None


def uri_problem(value: str, limit: int) -> str | None:
    """Why `value` is not a URI of at most `limit` characters, or None."""
    if (too_long := length_problem(value, limit)) is not None:
        return too_long
    for ch in value:
        cat = unicodedata.category(ch)
        if cat[0] in "CZ":
            return f"contains the character U+{ord(ch):04X}; a URI has no spaces or controls"
    if ":" not in value:
        return "must be an absolute URI with a scheme, for example s3://bucket/key"
    return None


def timestamp_problem(ts: Timestamp) -> str | None:
    """Why `ts` is out of the documented range, or None."""
    if not 0 <= ts.nanos <= 999_999_999:
        return f"nanos {ts.nanos} must be in 0..999999999"
    if not MIN_SECONDS <= ts.seconds <= MAX_SECONDS:
        return TIME_RULE
    return None


def seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def vector_problem(values: Sized, dim: int) -> str | None:
    """Why `values` is not a usable embedding of `dim` values, or None.

    The norm is taken in float64, so a vector scaled by 1e20 (whose float32 squares overflow) or
    1e-30 (whose squares underflow) keeps its direction; one with no direction is refused.
    """
    n = len(values)
    if n != dim:
        return f"has {n} values; memory.embedding_dim is {dim}"
    arr = np.array(values, dtype=np.float64)  # ~2 µs: the repeated field exposes a buffer
    if not np.isfinite(arr).all():
        return "contains NaN or Inf"
    norm = float(np.linalg.norm(arr))
    if norm == 0.0 or not math.isfinite(norm):
        return "is the zero vector, which has no direction"
    unit = (arr / norm).astype(np.float32)
    if not np.isfinite(unit).all() or not np.any(unit):
        return "has no direction that float32 can hold once normalised"
    return None
