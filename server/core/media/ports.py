"""The ports of multimodal memory: what reads a medium (decoders, OCR, speech, an image space)
and where its bytes live (the blob store). The adapters implement them; the core sees only
these types.

Images travel as RGB pixels (`Pixels`, uint8, height × width × 3) and recordings as mono float32
samples at 16 kHz (`Samples`), so that every reader gets one form whatever the file was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from server.core.memory.model import Modality, Vector

Pixels = npt.NDArray[np.uint8]
Samples = npt.NDArray[np.float32]

SAMPLE_RATE = 16_000


class MediaRejected(Exception):  # noqa: N818 (a verdict on the bytes, not a failure of ours)
    """A medium that is refused before anything is stored: unsupported, corrupt, truncated or
    beyond a limit. `detected` is the type sniffed from the bytes ("image/png", or "unknown");
    `reason` says what is wrong in words a client can act on."""

    def __init__(self, reason: str, detected: str) -> None:
        self.reason = reason
        self.detected = detected
        super().__init__(f"{reason} (detected type: {detected})")


@dataclass(frozen=True)
class Sniffed:
    """What the bytes are, read from their header only: the MIME type, the medium, and the
    size the header declares (pixels for an image, seconds for a recording; 0 when not
    applicable). Never trusted from the client."""

    mime: str
    modality: Modality
    width: int = 0
    height: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class OcrLine:
    """One line of text found in an image: its text, the recogniser's confidence, and its box
    (left, top, right, bottom) in pixels."""

    text: str
    score: float
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class OcrText:
    """The text read from an image, its lines in reading order (top to bottom, left to right),
    and `text`: the lines joined by newlines."""

    text: str
    lines: tuple[OcrLine, ...] = ()


@dataclass(frozen=True)
class Transcript:
    """What a recording says: its text, the language it was decoded as, and its duration."""

    text: str
    language: str
    seconds: float


class MediaDecoder(Protocol):
    """Decodes sniffed bytes into pixels or samples; raises `MediaRejected` for corrupt or
    truncated data."""

    def image(self, data: bytes, sniffed: Sniffed) -> Pixels:
        """The image as RGB pixels (the first frame of an animation; EXIF rotation applied)."""
        ...

    def audio(self, data: bytes, sniffed: Sniffed) -> Samples:
        """The recording as mono float32 samples at `SAMPLE_RATE`."""
        ...


class Ocr(Protocol):
    """Reads the text in an image (Chinese and English)."""

    def read(self, image: Pixels) -> OcrText: ...


class Speech(Protocol):
    """Transcribes a recording. `languages` lists what it can decode ("en", "zh", …);
    `language` is one of them, or "auto" when the model can detect it."""

    languages: tuple[str, ...]

    def transcribe(self, samples: Samples, language: str) -> Transcript: ...


class ImageSpace(Protocol):
    """A CLIP-style model: images and texts as unit vectors of one space named `name`, of `dim`
    dimensions. `vector_floor` and `vector_ceiling` are the cosines that mean no match and a
    full match in this space (its manifest's)."""

    name: str
    dim: int
    vector_floor: float
    vector_ceiling: float

    def encode_images(self, images: Sequence[Pixels]) -> Vector:
        """One unit row per image."""
        ...

    def encode_texts(self, texts: Sequence[str]) -> Vector:
        """One unit row per text."""
        ...


class BlobStore(Protocol):
    """Content-addressed bytes (by lower-case hex sha256), durable before `put` returns."""

    def put(self, data: bytes) -> str:
        """Stores `data` (once, whatever the number of puts) and returns its sha256."""
        ...

    def get(self, sha256: str) -> bytes | None:
        """The bytes, or None when the store has no such blob."""
        ...

    def has(self, sha256: str) -> bool: ...

    def remove(self, sha256: str) -> None:
        """Removes the blob (no error when absent)."""
        ...

    def all(self) -> list[str]:
        """Every blob's sha256 (for the start-up sweep of blobs no record or job holds)."""
        ...


@dataclass(frozen=True)
class Job:
    """A medium acknowledged and waiting to be read: whose, under which id, which blob, and the
    write to make once it is read (`spec`, the core's own encoding). `failed` says why reading
    it failed ("" while it waits)."""

    job_id: int
    namespace: str
    memory_id: str
    session_id: str
    sha256: str
    spec: bytes
    created: float
    failed: str = ""


class MediaLedger(Protocol):
    """The media pipeline's durable state: the jobs (each durable before its write is
    acknowledged, so that work pending at a crash resumes) and which record holds which blob
    (as of a revision of the record store)."""

    def add(self, job: Job) -> int:
        """Stores a job (its `job_id` is ignored) durably; returns its id."""
        ...

    def jobs(self) -> list[Job]:
        """Every job, pending and failed, oldest first."""
        ...

    def finish(self, job_id: int) -> None:
        """The job's write is stored: forget the job."""
        ...

    def fail(self, job_id: int, why: str) -> None:
        """Keep the job as failed, with why (the oldest failed ones beyond a bound go)."""
        ...

    def refs(self) -> tuple[int, dict[int, str]]:
        """The revision the blob references are current to, and record key → blob sha256."""
        ...

    def save_refs(self, rev: int, put: dict[int, str], drop: list[int]) -> None:
        """Records `put` now hold their blobs, `drop` hold none; current to `rev`."""
        ...

    def close(self) -> None:
        """Release the ledger (after the workers stopped)."""
        ...
