"""Reading a medium: what its bytes are (sniffed, never the client's word), whether they are
within the limits and decode, and what they say: the text in an image (OCR) and its vector in
the image space, a recording's transcript, a table's linearised rows.

`MediaReader.check` runs on the request path (header, limits, a full decode: a corrupt file is
refused before anything is stored); `read` runs on the media queue's workers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from server.core.media.ports import (
    SAMPLE_RATE,
    ImageSpace,
    MediaDecoder,
    MediaRejected,
    Ocr,
    Sniffed,
    Speech,
)
from server.core.media.sniff import check_limits, sniff
from server.core.media.tables import Table, linearise
from server.core.memory.model import Modality, SpaceVector, Vector
from server.core.settings import MediaSettings


@dataclass(frozen=True)
class Reading:
    """What a medium says: its text (OCR lines, a transcript; "" when none), its vectors in the
    image space, and for a recording the language decoded and its duration."""

    text: str
    space_vectors: tuple[SpaceVector, ...] = ()
    language: str = ""
    seconds: float = 0.0


class MediaReader:
    """The decoders and readers behind their ports; any of OCR, speech and the image space may
    be absent (turned off, or no model)."""

    def __init__(
        self,
        settings: MediaSettings,
        decoder: MediaDecoder,
        ocr: Ocr | None,
        speech: Speech | None,
        space: ImageSpace | None,
    ) -> None:
        self._s = settings
        self._decoder = decoder
        self.ocr = ocr
        self.speech = speech
        self.space = space

    def check(self, data: bytes) -> Sniffed:
        """The medium's type and size from its header, within the limits, and decodable
        (images and recordings are decoded once here: a truncated file is refused now, not
        after the acknowledgement). Raises `MediaRejected`."""
        sn = sniff(data)
        check_limits(sn, len(data), self._s)
        if sn.modality == Modality.IMAGE:
            self._decoder.image(data, sn)
        elif sn.modality == Modality.AUDIO:
            self._decoder.audio(data, sn)
        return sn

    def can_read(self, sn: Sniffed, has_text: bool) -> str | None:
        """None when this medium can become a searchable memory here, else why not."""
        if sn.modality == Modality.IMAGE:
            if self.ocr is None and self.space is None and not has_text:
                return (
                    "an image without a caption needs OCR (media.ocr.enabled) or an image space"
                    " (media.clip.model_dir); send its caption as text"
                )
        elif sn.modality == Modality.AUDIO:
            if self.speech is None and not has_text:
                return (
                    "a recording without a transcript needs a speech model (media.speech;"
                    " `make models` fetches Whisper tiny.en); send its transcript as text"
                )
        elif sn.modality != Modality.TABLE:
            return f"{sn.mime} is not a medium pocketd reads: send it as text"
        return None

    def table(self, data: bytes, sn: Sniffed) -> Table:
        """A CSV, TSV or Markdown table's linearised rows (on the request path: it is cheap)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:  # sniff says UTF-8; a BOM or a cut may still fail
            raise MediaRejected(f"a table must be UTF-8 text: {e.reason}", sn.mime) from e
        return linearise(text.removeprefix("\ufeff"), sn.mime, self._s.table)

    def read(self, data: bytes, sn: Sniffed, language: str) -> Reading:
        """What the medium says (on a worker). Raises `MediaRejected` if it no longer decodes."""
        if sn.modality == Modality.IMAGE:
            pixels = self._decoder.image(data, sn)
            text = self.ocr.read(pixels).text.strip() if self.ocr is not None else ""
            vectors: tuple[SpaceVector, ...] = ()
            if self.space is not None:
                v = self.space.encode_images([pixels])[0]
                vectors = (SpaceVector.of(self.space.name, v),)
            return Reading(text, vectors)
        if sn.modality == Modality.AUDIO and self.speech is not None:
            samples = self._decoder.audio(data, sn)
            lang = language or self._s.speech.default_language
            if lang not in self.speech.languages:
                lang = self.speech.languages[0]
            got = self.speech.transcribe(samples, lang)
            return Reading(got.text.strip(), (), got.language, got.seconds)
        return Reading("")

    def warm(self) -> None:
        """Load the readers' models by reading a blank image and a moment of silence (a first
        medium is then not read behind seconds of loading)."""
        if self.ocr is not None:
            self.ocr.read(np.full((32, 32, 3), 255, np.uint8))
        if self.speech is not None:
            self.speech.transcribe(np.zeros(SAMPLE_RATE // 2, np.float32), self.speech.languages[0])

    def image_query(self, data: bytes) -> tuple[str, Vector]:
        """A query image's vector in the image space (query by image). Raises `MediaRejected`
        for anything but a readable image, and `LookupError` without an image space."""
        if self.space is None:
            raise LookupError("no image space")
        sn = sniff(data)
        check_limits(sn, len(data), self._s)
        if sn.modality != Modality.IMAGE:
            raise MediaRejected("a query image must be an image", sn.mime)
        pixels = self._decoder.image(data, sn)
        return self.space.name, self.space.encode_images([pixels])[0]

    def text_query(self, text: str) -> tuple[str, Vector] | None:
        """A query text's vector in the image space (its text tower), or None without one."""
        if self.space is None or not text.strip():
            return None
        return self.space.name, self.space.encode_texts([text])[0]
