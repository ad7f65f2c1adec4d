"""One item, one memory_id (seed 001 §5.2): the memories a read medium becomes.

The item's own memory keeps the id the write was acknowledged under, the blob and the image
vector, and as its text the description: the client's caption, else what the medium says (the
OCR text, the transcript), else a plain label ("image 800×600"). When the caption and what the
medium says are both there, what it says becomes a second memory of the same group (`group_id`,
the item's id unless the client named a group), derived from the first: each is found by its own
words and vector, and Recall returns the group once, as its best-scoring memory, with the other
ids.
"""

from __future__ import annotations

import hashlib

import msgspec
import numpy as np

from server.core.media.ports import Sniffed
from server.core.media.reading import Reading
from server.core.memory.model import (
    BLOB_URI,
    Blob,
    Modality,
    NewMemory,
    Record,
    WriteHints,
)

MAX_ID = 128
_SUFFIX = {Modality.IMAGE: ".ocr", Modality.AUDIO: ".transcript"}


class Spec(msgspec.Struct, frozen=True):
    """The write a job makes once its medium is read: the request's record and options (the
    medium's bytes are in the blob store, not here)."""

    record: Record
    vector: bytes | None = None
    explicit_importance: int | None = None
    hints: WriteHints = msgspec.field(default_factory=WriteHints)
    supersedes: tuple[str, ...] = ()
    created_at: float | None = None
    turn: int | None = None
    language: str = ""


def sibling_id(memory_id: str, modality: Modality) -> str:
    """The id of the memory that holds what an item's medium says: the item's id and a suffix,
    or, when that would be too long, a digest of the id with the suffix."""
    suffix = _SUFFIX.get(modality, ".text")
    if len(memory_id) + len(suffix) <= MAX_ID:
        return memory_id + suffix
    return "g" + hashlib.sha256(memory_id.encode()).hexdigest()[:40] + suffix


def label(sn: Sniffed) -> str:
    """The description of a medium that says nothing readable: its kind and size."""
    if sn.modality == Modality.IMAGE:
        return f"image {sn.width}×{sn.height}"
    if sn.modality == Modality.AUDIO:
        return f"recording {sn.seconds:.0f} s"
    return sn.mime


def compose(
    spec: Spec, sn: Sniffed, sha256: str, size: int, reading: Reading, note: str
) -> list[NewMemory]:
    """The item's memory, and the memory of what its medium says when it has a caption too.
    `note` is the alignment check's warning (kept on the item's memory), or ""."""
    rec = spec.record
    caption = rec.text.strip()
    said = reading.text.strip()
    blob = Blob(f"{BLOB_URI}{sha256}", sn.mime, size, sha256)
    spaces = tuple(reading.space_vectors) + tuple(
        sv for sv in rec.space_vectors if all(sv.space != r.space for r in reading.space_vectors)
    )
    split = bool(caption and said)
    group = rec.group_id or (rec.memory_id if split else "")
    item = msgspec.structs.replace(
        rec,
        modality=sn.modality,
        blob=blob,
        text=caption or said or label(sn),
        space_vectors=spaces,
        group_id=group,
        processing_note=note,
    )
    out = [_write(spec, item, supersedes=spec.supersedes)]
    if split:
        words = msgspec.structs.replace(
            rec,
            memory_id=sibling_id(rec.memory_id, sn.modality),
            modality=sn.modality,
            blob=None,
            text=said,
            space_vectors=(),
            group_id=group,
            derived_from=(rec.memory_id,),
        )
        out.append(_write(spec, words, supersedes=()))
    return out


def _write(spec: Spec, rec: Record, supersedes: tuple[str, ...]) -> NewMemory:
    vector = None
    if spec.vector is not None and rec.blob is not None:  # the client's vector is the item's
        vector = np.frombuffer(spec.vector, dtype=np.float32).copy()
    return NewMemory(
        record=rec,
        vector=vector,
        explicit_importance=spec.explicit_importance,
        hints=spec.hints,
        supersedes=supersedes,
        client_memory_id=True,  # a job replayed after a crash upserts, never duplicates
        created_at=spec.created_at,
        turn=spec.turn if rec.blob is not None else None,
    )


def spec_of(new: NewMemory, memory_id: str) -> Spec:
    """The job's spec for a write that carries a medium."""
    vec = None if new.vector is None else new.vector.astype("float32").tobytes()
    lang = new.media.language if new.media is not None else ""
    return Spec(
        record=msgspec.structs.replace(new.record, memory_id=memory_id),
        vector=vec,
        explicit_importance=new.explicit_importance,
        hints=new.hints,
        supersedes=new.supersedes,
        created_at=new.created_at,
        turn=new.turn,
        language=lang,
    )
