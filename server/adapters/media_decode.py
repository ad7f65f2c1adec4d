"""Decoding a client's media into the one form each reader takes: RGB pixels, or mono float32
samples at 16 kHz.

The bytes are a client's and have been sniffed, not decoded: here they meet a decoder for the
first time. So each decoder is told which format to read (the sniffed type picks PIL's plugin or
FFmpeg's demuxer, never a guess of the library's: FFmpeg's playlist demuxers open other files,
and PIL's EPS plugin runs Ghostscript), the size limits are checked again from what the decoder
itself reads before the bulk of the work, and whatever a library raises on the bytes becomes
`MediaRejected`, naming the sniffed type.

- Images (PIL): the declared size is read with the header and checked against
  media.image.max_pixels and max_side before a pixel is decoded; then the first frame, its EXIF
  rotation, and RGB (transparency composited on white, as a viewer shows it).
- WAV: read here (`wav_layout`, `wav_samples`) rather than with the stdlib `wave`, which in 3.11
  reads integer PCM only (not IEEE float nor WAVE_FORMAT_EXTENSIBLE, which 24-bit and multichannel
  tools write) and hands back a truncated file's frames without a word. 8/16/24/32-bit PCM and
  32/64-bit float; the data chunk's size is checked against the bytes present.
- Other recordings (MP3, Ogg Vorbis/Opus, FLAC, AAC, MP4/M4A, WebM): PyAV (FFmpeg).

Every recording is mixed to mono and resampled to 16 kHz by FFmpeg's resampler (PyAV's
`AudioResampler`, libswresample: a windowed-sinc filter, not a linear interpolation, so that
44.1 kHz speech does not fold its upper band into the 0-8 kHz that Whisper hears). Decoding stops
once the recording runs past media.audio.max_seconds + 1 s, whatever its header said, and the
recording is refused: an hour of silence compresses to little, and a header may lie.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import av
import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from server.core.media.ports import SAMPLE_RATE, MediaRejected, Pixels, Samples, Sniffed
from server.core.settings import MediaSettings

# The sniffed type → PIL's plugin for it. A type missing here is refused as unsupported.
PIL_FORMATS = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
    "image/bmp": "BMP",
    "image/tiff": "TIFF",
}
WAV_TYPES = frozenset({"audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"})
# The sniffed type → FFmpeg's demuxer for it (WAV is read here, `wav_layout`).
FFMPEG_DEMUXERS = {
    "audio/mpeg": "mp3",
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "audio/aac": "aac",
    "audio/mp4": "mp4",
    "audio/x-m4a": "mp4",
    "audio/webm": "matroska",
    "audio/x-matroska": "matroska",
}
WHITE = (255, 255, 255, 255)
# WAV format tags: integer PCM, IEEE float, and the extensible header (whose sub-format GUID
# begins with one of the other two).
WAVE_PCM, WAVE_FLOAT, WAVE_EXTENSIBLE = 1, 3, 0xFFFE
# A data chunk of this size was written by a streaming writer that never went back to fill it
# in: the data runs to the end of the file.
SIZE_UNKNOWN = 0xFFFF_FFFF


def corrupt(kind: str, exc: BaseException, sniffed: Sniffed) -> MediaRejected:
    """The rejection of bytes a library failed on: what kind of medium, and its short reason
    (the library's first line, or the error's name)."""
    said = str(exc).strip()
    if isinstance(exc, UnidentifiedImageError) or not said:
        reason = f"unreadable as {sniffed.mime}" if said else type(exc).__name__
    else:
        reason = said.splitlines()[0][:160]
    return MediaRejected(f"corrupt or truncated {kind}: {reason}", sniffed.mime)


def to_rgb(im: Image.Image) -> Image.Image:
    """RGB, with any transparency composited on white (a palette's transparent index too)."""
    if im.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in im.info:
        rgba = im.convert("RGBA")
        page = Image.new("RGBA", rgba.size, WHITE)
        page.alpha_composite(rgba)
        return page.convert("RGB")
    if im.mode.startswith("I;16"):
        # 16-bit grey: PIL's conversion would clip it to white; keep its top 8 bits.
        grey = (np.asarray(im, dtype=np.uint16) >> 8).astype(np.uint8)
        return Image.fromarray(grey).convert("RGB")
    return im.convert("RGB")


@dataclass(frozen=True)
class WavLayout:
    """What a WAV's fmt chunk says, and where its samples are."""

    encoding: int  # WAVE_PCM or WAVE_FLOAT
    channels: int
    rate: int
    bits: int
    offset: int  # of the first sample byte
    size: int  # of the sample bytes present (whole frames)


def riff_chunks(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    """(id, offset of the body, declared size) of each chunk after the RIFF/WAVE header. Chunks
    are word-aligned (an odd size is followed by a pad byte)."""
    pos = 12
    while pos + 8 <= len(data):
        cid, size = struct.unpack_from("<4sI", data, pos)
        yield cid, pos + 8, size
        pos += 8 + size + (size & 1)


def wav_layout(data: bytes) -> WavLayout:
    """Reads the fmt and data chunks; raises ValueError (a message for the client) when the file
    is not a WAV this reads or holds fewer sample bytes than its data chunk declares."""
    fmt: tuple[int, int, int, int] | None = None
    for cid, body, size in riff_chunks(data):
        if cid == b"fmt ":
            if size < 16 or body + size > len(data):
                raise ValueError("its fmt chunk is short")
            tag, channels, rate, _, block, bits = struct.unpack_from("<HHIIHH", data, body)
            if tag == WAVE_EXTENSIBLE:
                if size < 40:
                    raise ValueError("its extensible fmt chunk is short")
                tag = struct.unpack_from("<H", data, body + 24)[0]
            if tag not in (WAVE_PCM, WAVE_FLOAT):
                raise ValueError(f"unsupported WAV encoding (format tag {tag})")
            ok_bits = (8, 16, 24, 32) if tag == WAVE_PCM else (32, 64)
            if bits not in ok_bits or channels < 1 or not 1_000 <= rate <= 768_000:
                raise ValueError(f"unsupported WAV: {bits}-bit, {channels} channels, {rate} Hz")
            if block != channels * bits // 8:
                raise ValueError(f"its block size {block} does not match {channels}×{bits} bits")
            fmt = (tag, channels, rate, bits)
        elif cid == b"data":
            if fmt is None:
                raise ValueError("its data chunk comes before its fmt chunk")
            tag, channels, rate, bits = fmt
            present = len(data) - body
            if size != SIZE_UNKNOWN and size > present:
                raise ValueError(f"its data chunk declares {size} bytes, {present} are present")
            frame = channels * bits // 8
            size = present if size == SIZE_UNKNOWN else size
            return WavLayout(tag, channels, rate, bits, body, size - size % frame)
    raise ValueError("no data chunk" if fmt else "no fmt chunk")


def wav_samples(data: bytes, w: WavLayout) -> Samples:
    """The samples as float32 in [-1, 1], frames × channels."""
    raw = memoryview(data)[w.offset : w.offset + w.size]
    if w.encoding == WAVE_FLOAT:
        x = np.frombuffer(raw, dtype="<f4" if w.bits == 32 else "<f8").astype(np.float32)
        if not np.isfinite(x).all():
            raise ValueError("its float samples hold NaN or infinity")
    elif w.bits == 8:  # unsigned, centred on 128
        x = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif w.bits == 24:  # three little-endian bytes, sign-extended through the top byte
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        x = (np.where(v >= 1 << 23, v - (1 << 24), v) / float(1 << 23)).astype(np.float32)
    else:
        dtype = "<i2" if w.bits == 16 else "<i4"
        x = (np.frombuffer(raw, dtype=dtype) / float(1 << (w.bits - 1))).astype(np.float32)
    return x.reshape(-1, w.channels)


class OverlongError(Exception):
    """Decoding ran past the duration limit (carries how many samples at 16 kHz it came to)."""

    def __init__(self, samples: int) -> None:
        self.samples = samples
        super().__init__(samples)


def resampled(frames: Iterable[av.AudioFrame], cap: int) -> Samples:
    """The frames mixed to mono and resampled to 16 kHz by one FFmpeg resampler; raises
    `OverlongError` once more than `cap` samples come out."""
    rs = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
    out: list[Samples] = []
    total = 0

    def take(chunk: Iterable[av.AudioFrame]) -> None:
        nonlocal total
        for f in chunk:
            a = f.to_ndarray().reshape(-1).astype(np.float32, copy=False)
            total += a.size
            if total > cap:
                raise OverlongError(total)
            out.append(a)

    for frame in frames:
        take(rs.resample(frame))
    take(rs.resample(None))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


def as_frame(x: Samples, rate: int) -> av.AudioFrame:
    """Interleaved float32 frames × channels as one FFmpeg frame (mono, or mixed to mono by
    averaging first: FFmpeg's layouts need a channel count it knows)."""
    mono = x.mean(axis=1, dtype=np.float32) if x.shape[1] > 1 else x[:, 0]
    packed = np.ascontiguousarray(mono)[None, :]
    frame = av.AudioFrame.from_ndarray(packed, format="flt", layout="mono")
    frame.sample_rate = rate
    return frame


class PilDecoder:
    """`MediaDecoder`: images with PIL, WAV here, other recordings with PyAV (module docstring).
    Stateless past its limits, so one instance serves every thread."""

    def __init__(self, limits: MediaSettings) -> None:
        self._image = limits.image
        self._max_seconds = limits.audio.max_seconds
        # PIL's own bomb check runs inside `Image.open`, by a fixed process-wide rule (a warning
        # past MAX_IMAGE_PIXELS, an error past twice that) and before our limits could be read:
        # it is turned off, and ours, from the same header, decides (`_check_size`).
        Image.MAX_IMAGE_PIXELS = None

    def image(self, data: bytes, sniffed: Sniffed) -> Pixels:
        fmt = PIL_FORMATS.get(sniffed.mime)
        if fmt is None:
            raise MediaRejected(f"unsupported image type {sniffed.mime}", sniffed.mime)
        try:
            with Image.open(io.BytesIO(data), formats=[fmt]) as probe:
                self._check_size(*probe.size, sniffed)  # from the header: nothing decoded yet
                # The file's structure without its pixels: a PNG whose chunks or checksums were
                # cut short decodes its pixels without complaint, but is refused here.
                probe.verify()
            with Image.open(io.BytesIO(data), formats=[fmt]) as im:
                im.seek(0)
                upright = ImageOps.exif_transpose(im)
                rgb = to_rgb(upright)
                return np.asarray(rgb, dtype=np.uint8).copy()
        except MediaRejected:
            raise
        except Exception as exc:
            # The bytes are a client's: whatever PIL raises on them (OSError for a truncated
            # file, SyntaxError for a bad PNG chunk, struct.error, ...) means it cannot read them.
            raise corrupt("image", exc, sniffed) from exc

    def _check_size(self, w: int, h: int, sniffed: Sniffed) -> None:
        lim = self._image
        if w < 1 or h < 1:
            raise MediaRejected(f"image declares {w}×{h} pixels", sniffed.mime)
        if w * h > lim.max_pixels or max(w, h) > lim.max_side:
            raise MediaRejected(
                f"image is {w}×{h} pixels, beyond the limits of {lim.max_pixels:,} pixels and"
                f" {lim.max_side:,} on a side (media.image.max_pixels, max_side)",
                sniffed.mime,
            )

    def audio(self, data: bytes, sniffed: Sniffed) -> Samples:
        try:
            if sniffed.mime in WAV_TYPES:
                return self._wav(data, sniffed)
            demuxer = FFMPEG_DEMUXERS.get(sniffed.mime)
            if demuxer is None:
                raise MediaRejected(f"unsupported audio type {sniffed.mime}", sniffed.mime)
            return self._ffmpeg(data, demuxer, sniffed)
        except OverlongError as exc:
            raise MediaRejected(
                f"recording runs past {exc.samples / SAMPLE_RATE:.0f} s, beyond the limit of"
                f" {self._max_seconds:g} s (media.audio.max_seconds)",
                sniffed.mime,
            ) from exc
        except MediaRejected:
            raise
        except Exception as exc:
            # As for images: a client's bytes that FFmpeg or the WAV reader fail on.
            raise corrupt("recording", exc, sniffed) from exc

    def _cap(self, rate: int) -> int:
        """Samples at `rate` past which decoding stops: the limit and one second."""
        return int((self._max_seconds + 1.0) * rate)

    def _wav(self, data: bytes, sniffed: Sniffed) -> Samples:
        if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
            raise MediaRejected("corrupt WAV: no RIFF/WAVE header", sniffed.mime)
        w = wav_layout(data)
        frames = w.size // (w.channels * w.bits // 8)
        if frames > self._cap(w.rate):
            raise OverlongError(int(frames * SAMPLE_RATE / w.rate))
        if frames == 0:
            raise MediaRejected("recording holds no samples", sniffed.mime)
        x = wav_samples(data, w)
        if w.rate == SAMPLE_RATE and w.channels == 1:
            return np.ascontiguousarray(x[:, 0])
        return resampled([as_frame(x, w.rate)], self._cap(SAMPLE_RATE))

    def _ffmpeg(self, data: bytes, demuxer: str, sniffed: Sniffed) -> Samples:
        with av.open(io.BytesIO(data), mode="r", format=demuxer) as container:
            if not container.streams.audio:
                raise MediaRejected("no audio stream", sniffed.mime)
            stream = container.streams.audio[0]
            out = resampled(container.decode(stream), self._cap(SAMPLE_RATE))
        if out.size == 0:
            raise MediaRejected("recording holds no samples", sniffed.mime)
        return out
