"""What a blob is, read from its own header, never from the client: the MIME type, the medium,
and the size the header declares (pixels, seconds), so that the limits can refuse a
decompression bomb or an hour of silence before a pixel or a sample is decoded.

Images: PNG, JPEG, GIF, WebP, BMP. Recordings: WAV (and RF64), FLAC, Ogg (Vorbis, Opus), MP3
(Layer III), M4A/MP4 (a file with a sound track). Text: UTF-8 without NUL and with few control
characters, as CSV, TSV, a Markdown pipe table or plain text.

A header that is cut short or contradicts itself is "truncated or corrupt"; a signature we do not
know is "unsupported media type". Either way `MediaRejected`, never another exception: every read
is bounds-checked (a short buffer raises `struct.error` or `IndexError`, which `_reading` turns
into the rejection). A blob shorter than a signature that begins like one (b"\\x89PN", b"RIFF")
is read as that header, cut: so a text of a few bytes that happens to begin like a signature is
refused, the price of refusing every cut header.

A header can lie about a recording's length (an MP3 without a Xing frame is estimated from its
first frame's bitrate); the decoder still stops at the limit. What the header says bounds the
work before decoding starts, which is what the limits need.
"""

from __future__ import annotations

import csv
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn

from server.core.media.ports import MediaRejected, Sniffed
from server.core.media.tables import delimited_rows, is_pipe_separator, pipe_cells
from server.core.memory.model import Modality
from server.core.settings import MediaSettings

OCTET = "application/octet-stream"
TABLE_MIMES = ("text/csv", "text/tab-separated-values", "text/markdown")
_BOM = b"\xef\xbb\xbf"
# Text and table detection read this much of a text (whole lines).
TEXT_SAMPLE = 1 << 16
# Control characters a text may hold, as a share of it (whitespace and the ESC of a coloured log
# are not counted). More is binary.
MAX_CONTROL = 0.01
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
# Segments, chunks or boxes before what a header must state (a fragmented MP4 of ten minutes
# in one-second fragments has 1,200 boxes; a JPEG, a few dozen segments before its frame). A
# header of more is made up: 50 MB of four-byte JPEG segments would take seconds to walk.
MAX_PARTS = 10_000
_FILL = re.compile(rb"\xff+")
# A CSV's header cells are names, not sentences: a longer one means prose with commas.
MAX_HEADER_CELL = 64


def corrupt(what: str, mime: str) -> MediaRejected:
    return MediaRejected(f"truncated or corrupt {what}", mime)


def unsupported(mime: str = OCTET, detail: str = "") -> MediaRejected:
    return MediaRejected("unsupported media type" + (f" ({detail})" if detail else ""), mime)


@contextmanager
def _reading(what: str, mime: str) -> Iterator[None]:
    """Reads past the end of the bytes become the rejection of a truncated `what`."""
    try:
        yield
    except (struct.error, IndexError) as e:
        raise corrupt(what, mime) from e


def _u16be(b: bytes, at: int) -> int:
    return int(struct.unpack_from(">H", b, at)[0])


def _u32be(b: bytes, at: int) -> int:
    return int(struct.unpack_from(">I", b, at)[0])


def _u64be(b: bytes, at: int) -> int:
    return int(struct.unpack_from(">Q", b, at)[0])


def _u16le(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<H", b, at)[0])


def _u24le(b: bytes, at: int) -> int:
    return int.from_bytes(b[at : at + 3], "little") if at + 3 <= len(b) else _short()


def _u32le(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", b, at)[0])


def _i32le(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<i", b, at)[0])


def _i64le(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<q", b, at)[0])


def _short() -> NoReturn:
    raise IndexError("past the end")


def _need(data: bytes, end: int) -> None:
    """The header runs to `end`: a shorter blob is cut."""
    if len(data) < end:
        _short()


def _image(mime: str, what: str, width: int, height: int) -> Sniffed:
    if width <= 0 or height <= 0:
        raise corrupt(what, mime)
    return Sniffed(mime, Modality.IMAGE, width=width, height=height)


def _audio(mime: str, what: str, seconds: float) -> Sniffed:
    if not seconds > 0.0:  # no samples (or NaN from a nonsense header)
        raise corrupt(what, mime)
    return Sniffed(mime, Modality.AUDIO, seconds=seconds)


# ---------------------------------------------------------------------------------------- images


def _png(data: bytes) -> Sniffed:
    mime = "image/png"
    # The signature, then the IHDR chunk first: length 13, type, width, height, five bytes, CRC.
    _need(data, 33)
    if _u32be(data, 8) != 13 or data[12:16] != b"IHDR":
        raise corrupt("PNG (no IHDR)", mime)
    if zlib.crc32(data[12:29]) != _u32be(data, 29):
        raise corrupt("PNG (IHDR checksum)", mime)
    width, height = _u32be(data, 16), _u32be(data, 20)
    if width > 0x7FFFFFFF or height > 0x7FFFFFFF:
        raise corrupt("PNG", mime)
    return _image(mime, "PNG", width, height)


# The frame headers: SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC), which share the range.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length: TEM and the restart markers.
_STANDALONE = frozenset([0x01, *range(0xD0, 0xD8)])


def _jpeg(data: bytes) -> Sniffed:
    mime = "image/jpeg"
    pos = 2
    for _ in range(MAX_PARTS):
        fill = _FILL.match(data, pos)  # fill bytes may precede a marker
        if fill is None:
            raise corrupt("JPEG (a segment does not start with a marker)", mime)
        pos = fill.end()
        marker = data[pos]
        pos += 1
        if marker in _STANDALONE:
            continue
        if marker in (0x00, 0xD8, 0xD9, 0xDA):  # stuffing, a second SOI, EOI or a scan: no frame
            raise corrupt("JPEG (no frame header before the image data)", mime)
        length = _u16be(data, pos)
        if length < 2:
            raise corrupt("JPEG (segment length)", mime)
        _need(data, pos + length)
        if marker in _SOF:
            if length < 8:
                raise corrupt("JPEG (frame header)", mime)
            height, width = _u16be(data, pos + 3), _u16be(data, pos + 5)
            return _image(mime, "JPEG", width, height)
        pos += length
    raise corrupt("JPEG (too many segments)", mime)


def _gif(data: bytes) -> Sniffed:
    _need(data, 13)  # the signature and the logical screen descriptor
    return _image("image/gif", "GIF", _u16le(data, 6), _u16le(data, 8))


def _webp(data: bytes) -> Sniffed:
    mime = "image/webp"
    chunk, body = data[12:16], 20
    if chunk == b"VP8 ":  # lossy: a frame tag, the start code, 14-bit sizes
        _need(data, body + 10)
        if data[body + 3 : body + 6] != b"\x9d\x01\x2a":
            raise corrupt("WebP (VP8 start code)", mime)
        w, h = _u16le(data, body + 6) & 0x3FFF, _u16le(data, body + 8) & 0x3FFF
    elif chunk == b"VP8L":  # lossless: a signature byte, then 14 bits each of width-1, height-1
        _need(data, body + 5)
        if data[body] != 0x2F:
            raise corrupt("WebP (VP8L signature)", mime)
        bits = _u32le(data, body + 1)
        w, h = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    elif chunk == b"VP8X":  # extended: flags, reserved, 24-bit canvas width-1 and height-1
        _need(data, body + 10)
        w, h = _u24le(data, body + 4) + 1, _u24le(data, body + 7) + 1
    else:
        _need(data, body)
        raise corrupt("WebP (unknown first chunk)", mime)
    return _image(mime, "WebP", w, h)


# The DIB headers' sizes: OS/2 1.x core, OS/2 2.x, Windows 3.x and its V2..V5 extensions.
_DIB_SIZES = frozenset([12, 16, 40, 52, 56, 64, 108, 124])


def _bmp(data: bytes) -> Sniffed:
    mime = "image/bmp"
    dib = _u32le(data, 14)
    if dib not in _DIB_SIZES:
        raise corrupt("BMP (DIB header size)", mime)
    _need(data, 14 + dib)
    if dib == 12:
        return _image(mime, "BMP", _u16le(data, 18), _u16le(data, 20))
    # A negative height is a top-down bitmap; a negative width means nothing.
    return _image(mime, "BMP", _i32le(data, 18), abs(_i32le(data, 22)))


# ------------------------------------------------------------------------------------ recordings

# The PCM-like WAV formats, whose byte rate must be the sample rate × the block: PCM, float,
# A-law, µ-law, extensible. A lying byte rate would make the duration (bytes / rate) a lie.
_WAV_PCM = frozenset([1, 3, 6, 7, 0xFFFE])


def _wav(data: bytes) -> Sniffed:
    mime = "audio/wav"
    pos, fmt = 12, None
    for _ in range(MAX_PARTS):
        _need(data, pos + 8)
        cid, size, body = data[pos : pos + 4], _u32le(data, pos + 4), pos + 8
        if cid == b"fmt ":
            if size < 16:
                raise corrupt("WAV (fmt chunk)", mime)
            _need(data, body + 16)
            tag, channels, rate, byte_rate, block = struct.unpack_from("<HHIIH", data, body)
            if not (channels and rate and byte_rate and block):
                raise corrupt("WAV (zero channels, rate, byte rate or block)", mime)
            if tag in _WAV_PCM and byte_rate != rate * block:
                raise corrupt("WAV (byte rate is not the sample rate × the block)", mime)
            fmt = byte_rate
        elif cid == b"data":
            if fmt is None:
                raise corrupt("WAV (data before fmt)", mime)
            # A streamed WAV (or RF64) says 0xFFFFFFFF; a cut one says more than is there: what
            # is there is what will be decoded.
            return _audio(mime, "WAV (no samples)", min(size, len(data) - body) / fmt)
        pos = body + size + (size & 1)  # chunks are padded to an even length
    raise corrupt("WAV (too many chunks)", mime)


def _flac(data: bytes, at: int = 0) -> Sniffed:
    mime = "audio/flac"
    # fLaC, then the first metadata block: STREAMINFO (type 0), 34 bytes.
    _need(data, at + 42)
    if data[at + 4] & 0x7F != 0 or int.from_bytes(data[at + 5 : at + 8], "big") != 34:
        raise corrupt("FLAC (no STREAMINFO)", mime)
    si = data[at + 8 : at + 42]
    # 20 bits of sample rate, 3 of channels, 5 of bits per sample, 36 of total samples.
    rate = (si[10] << 12) | (si[11] << 4) | (si[12] >> 4)
    total = ((si[13] & 0x0F) << 32) | _u32be(si, 14)
    if rate == 0:
        raise corrupt("FLAC (zero sample rate)", mime)
    if total == 0:
        raise MediaRejected("FLAC stream of unknown length (STREAMINFO states no samples)", mime)
    return _audio(mime, "FLAC", total / rate)


def _ogg(data: bytes) -> Sniffed:
    mime = "audio/ogg"
    # The first page: version 0, beginning of stream, its segment table, then the id packet.
    _need(data, 27)
    if data[4] != 0 or not data[5] & 0x02:
        raise corrupt("Ogg (first page)", mime)
    serial, segments = _u32le(data, 14), data[26]
    start = 27 + segments
    lacing = data[27:start]
    _need(data, start)
    length = 0
    for n in lacing:  # the first packet's length: segments up to one shorter than 255
        length += n
        if n < 255:
            break
    packet = data[start : start + length]
    _need(data, start + length)
    if packet.startswith(b"\x01vorbis"):
        _need(packet, 16)
        preskip, rate = 0, _u32le(packet, 12)
    elif packet.startswith(b"OpusHead"):
        _need(packet, 19)
        preskip, rate = _u16le(packet, 10), 48_000  # Opus granules count at 48 kHz always
    else:
        raise unsupported(mime, "an Ogg stream that is neither Vorbis nor Opus")
    if rate == 0:
        raise corrupt("Ogg (zero sample rate)", mime)
    return _audio(mime, "Ogg (no audio pages)", (_last_granule(data, serial) - preskip) / rate)


# How far from its end an Ogg file's last page that ends a packet may start: a page is at most
# 65,307 bytes, and a packet spans a few.
OGG_TAIL = 1 << 20


def _last_granule(data: bytes, serial: int) -> int:
    """The granule position of the stream's last page that ends a packet, found scanning back
    from the end for "OggS" (a page's granule is -1 when no packet ends on it), within the last
    `OGG_TAIL` bytes."""
    end, stop = len(data), max(0, len(data) - OGG_TAIL)
    while (pos := data.rfind(b"OggS", stop, end)) >= 0:
        end = pos
        if pos + 18 <= len(data) and data[pos + 4] == 0 and _u32le(data, pos + 14) == serial:
            granule = _i64le(data, pos + 6)
            if granule >= 0:
                return granule
    return 0


def _id3(data: bytes) -> Sniffed:
    """An ID3v2 tag (10 bytes, a syncsafe size, a footer when flagged), then MP3 or FLAC."""
    mime = "audio/mpeg"
    _need(data, 10)
    size_bytes = data[6:10]
    if any(b & 0x80 for b in size_bytes):
        raise corrupt("ID3 tag", mime)
    size = (size_bytes[0] << 21) | (size_bytes[1] << 14) | (size_bytes[2] << 7) | size_bytes[3]
    end = 10 + size + (10 if data[5] & 0x10 else 0)
    if data[end : end + 4] == b"fLaC":
        return _flac(data, end)
    return _mp3(data, end)


@dataclass(frozen=True)
class _Frame:
    """An MPEG audio Layer III frame header."""

    mpeg1: bool
    rate: int
    kbps: int
    length: int
    mono: bool
    crc: bool

    @property
    def samples(self) -> int:
        return 1152 if self.mpeg1 else 576


_KBPS_V1 = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)
_KBPS_V2 = (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)
_RATES = (44_100, 48_000, 32_000)
# How far past the ID3 tag the first frame may start (some taggers leave padding outside it).
MP3_SCAN = 1 << 16


def _frame(data: bytes, at: int) -> _Frame | None:
    """The Layer III frame header at `at`, or None when those four bytes are not one."""
    if at + 4 > len(data) or data[at] != 0xFF or data[at + 1] & 0xE0 != 0xE0:
        return None
    b1, b2, b3 = data[at + 1], data[at + 2], data[at + 3]
    version, layer = (b1 >> 3) & 3, (b1 >> 1) & 3
    kbps_index, rate_index = b2 >> 4, (b2 >> 2) & 3
    if version == 1 or layer != 1 or kbps_index in (0, 15) or rate_index == 3:
        return None  # reserved, not Layer III, free format, or a bad index
    mpeg1 = version == 3
    rate = _RATES[rate_index] >> (0 if mpeg1 else 1 if version == 2 else 2)
    kbps = (_KBPS_V1 if mpeg1 else _KBPS_V2)[kbps_index]
    length = (144_000 if mpeg1 else 72_000) * kbps // rate + ((b2 >> 1) & 1)
    return _Frame(mpeg1, rate, kbps, length, b3 >> 6 == 3, not b1 & 1)


def _mp3(data: bytes, start: int = 0) -> Sniffed:
    mime = "audio/mpeg"
    if start == 0 and _frame(data, 0) is None:
        _need(data, 4)
        raise unsupported()  # a sync, but no Layer III header (Layer I/II, ADTS AAC, UTF-16)
    at, frame = start, None
    for at in range(start, min(len(data), start + MP3_SCAN)):
        frame = _frame(data, at)
        if frame is None:
            continue
        follower = at + frame.length
        if follower + 4 > len(data) or _frame(data, follower) is not None:
            break  # the next frame confirms this one (when there is a next frame)
        frame = None
    if frame is None:
        raise corrupt("MP3 (no frame header)", mime)
    _need(data, at + frame.length)  # the first frame (and its Xing or VBRI tag) whole
    samples = _vbr_samples(data, at, frame)
    if samples is not None:
        return _audio(mime, "MP3 (no frames)", samples / frame.rate)
    audio = len(data) - at - (128 if data[-128:-125] == b"TAG" else 0)  # less an ID3v1 tag
    return _audio(mime, "MP3", audio * 8 / (frame.kbps * 1000))


def _vbr_samples(data: bytes, at: int, frame: _Frame) -> int | None:
    """The samples a VBR tag in the first frame counts, when there is one: a Xing/Info tag
    (after the side information; its frame count, less the encoder's delay and padding that a
    LAME or FFmpeg extension states) or a VBRI tag (32 bytes after the header)."""
    end = at + frame.length
    side = (17 if frame.mono else 32) if frame.mpeg1 else (9 if frame.mono else 17)
    for xing in (at + 4 + side, at + 6 + side):  # without, then with, a CRC
        if data[xing : xing + 4] not in (b"Xing", b"Info") or xing + 12 > end:
            continue
        flags = _u32be(data, xing + 4)
        if not flags & 1:
            return None
        samples = _u32be(data, xing + 8) * frame.samples
        # The fields present (frames, bytes, a 100-byte TOC, quality), then the extension.
        ext = xing + 8 + sum(n for bit, n in ((1, 4), (2, 4), (4, 100), (8, 4)) if flags & bit)
        if data[ext : ext + 4] in (b"LAME", b"Lavf", b"Lavc") and ext + 24 <= end:
            gap = int.from_bytes(data[ext + 21 : ext + 24], "big")  # 12 bits each
            samples = max(samples - (gap >> 12) - (gap & 0xFFF), 0)
        return samples
    vbri = at + 36
    if data[vbri : vbri + 4] == b"VBRI" and vbri + 18 <= end:
        return _u32be(data, vbri + 14) * frame.samples
    return None


def _boxes(data: bytes, start: int, end: int) -> Iterator[tuple[bytes, int, int]]:
    """The ISO BMFF boxes between `start` and `end`: (type, body start, body end). A box that
    runs past its parent is a cut file."""
    pos = start
    for _ in range(MAX_PARTS):
        if pos >= end:
            return
        _need(data, pos + 8)
        size, kind, header = _u32be(data, pos), data[pos + 4 : pos + 8], 8
        if size == 1:
            size, header = _u64be(data, pos + 8), 16
        elif size == 0:  # to the end of the parent
            size = end - pos
        if size < header or pos + size > end:
            _short()
        yield kind, pos + header, pos + size
        pos += size
    raise corrupt("MP4 (too many boxes)", "audio/mp4")


def _child(data: bytes, start: int, end: int, kind: bytes) -> tuple[int, int] | None:
    for k, s, e in _boxes(data, start, end):
        if k == kind:
            return s, e
    return None


_IMAGE_BRANDS = {b"heic": "image/heic", b"heix": "image/heic", b"mif1": "image/heif"}
_IMAGE_BRANDS |= {b"msf1": "image/heif", b"avif": "image/avif", b"avis": "image/avif"}


def _mp4(data: bytes) -> Sniffed:
    mime = "audio/mp4"
    brand = data[8:12]
    if brand in _IMAGE_BRANDS:
        raise unsupported(_IMAGE_BRANDS[brand], "HEIF and AVIF images are not read")
    moov = None
    for kind, s, e in _boxes(data, 0, len(data)):  # every box, so a cut file is seen as one
        if kind == b"moov":
            moov = (s, e)
    if moov is None:
        raise corrupt("MP4 (no moov)", mime)
    if not any(_handler(data, s, e) == b"soun" for k, s, e in _boxes(data, *moov) if k == b"trak"):
        raise unsupported("video/mp4", "an MP4 without a sound track")
    mvhd = _child(data, *moov, b"mvhd")
    if mvhd is None:
        raise corrupt("MP4 (no mvhd)", mime)
    s = mvhd[0]
    if data[s] == 1:
        _need(data, s + 32)
        scale, duration = _u32be(data, s + 20), _u64be(data, s + 24)
        unknown = duration == (1 << 64) - 1
    else:
        _need(data, s + 20)
        scale, duration = _u32be(data, s + 12), _u32be(data, s + 16)
        unknown = duration == (1 << 32) - 1
    if scale == 0:
        raise corrupt("MP4 (zero timescale)", mime)
    if duration == 0 or unknown:  # a fragmented file states its length in mvex/mehd
        duration = _fragmented_duration(data, *moov)
    return _audio(mime, "MP4 (no duration)", duration / scale)


def _handler(data: bytes, start: int, end: int) -> bytes:
    """A trak's handler type (soun, vide, …) from mdia/hdlr."""
    mdia = _child(data, start, end, b"mdia")
    hdlr = _child(data, *mdia, b"hdlr") if mdia else None
    if hdlr is None:
        return b""
    _need(data, hdlr[0] + 12)
    return data[hdlr[0] + 8 : hdlr[0] + 12]


def _fragmented_duration(data: bytes, start: int, end: int) -> int:
    mvex = _child(data, start, end, b"mvex")
    mehd = _child(data, *mvex, b"mehd") if mvex else None
    if mehd is None:
        return 0
    s = mehd[0]
    return _u64be(data, s + 4) if data[s] == 1 else _u32be(data, s + 4)


# ------------------------------------------------------------------------------------------ text


def _is_markdown_table(lines: list[str]) -> bool:
    """The whole text is one pipe table: a header row, the separator row with as many cells,
    then rows (prose around a table leaves the text plain, so none of it is dropped)."""
    return (
        len(lines) >= 2
        and is_pipe_separator(lines[1])
        and len(pipe_cells(lines[1])) == len(pipe_cells(lines[0]))
        and all("|" in line for line in lines)
    )


def _is_delimited(sample: str, cut: bool, delimiter: str) -> bool:
    """Rows with one field count of at least two (the last row of a cut sample aside), at least
    a header and one row, and header cells that are names rather than sentences."""
    try:
        rows = list(delimited_rows(sample, delimiter))
    except csv.Error:
        return False
    rows = [r for r in rows if any(c.strip() for c in r)]
    if cut and len(rows) > 2:
        rows = rows[:-1]
    if len(rows) < 2 or len(rows[0]) < 2:
        return False
    width = len(rows[0])
    if any(len(cell.strip()) > MAX_HEADER_CELL for cell in rows[0]):
        return False
    return all(len(r) == width for r in rows)


def text_mime(text: str) -> str:
    """The kind of a text: a CSV, a TSV, a Markdown pipe table, or plain."""
    cut = len(text) > TEXT_SAMPLE
    sample = text[: text.rfind("\n", 0, TEXT_SAMPLE) + 1 or TEXT_SAMPLE] if cut else text
    lines = [line for line in sample.splitlines() if line.strip()]
    if _is_markdown_table(lines):
        return "text/markdown"
    if "\t" in sample and _is_delimited(sample, cut, "\t"):
        return "text/tab-separated-values"
    if "," in sample and _is_delimited(sample, cut, ","):
        return "text/csv"
    return "text/plain"


def _text(data: bytes) -> Sniffed:
    body = data.removeprefix(_BOM)
    if b"\0" in body:
        raise unsupported()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise unsupported() from None
    if not text.strip():
        raise MediaRejected("empty text", "text/plain")
    sample = text[:TEXT_SAMPLE]
    if len(_CONTROL.findall(sample)) > MAX_CONTROL * len(sample):
        raise unsupported()  # binary that happens to be UTF-8
    mime = text_mime(text)
    return Sniffed(mime, Modality.TABLE if mime in TABLE_MIMES else Modality.TEXT)


# ------------------------------------------------------------------------------------- dispatch


def _riff(data: bytes) -> Sniffed:
    form = data[8:12]
    if form == b"WEBP":
        return _webp(data)
    if form == b"WAVE":
        return _wav(data)
    raise unsupported(OCTET, f"a RIFF file of form {form!r}")


@dataclass(frozen=True)
class _Signature:
    """A header's first bytes as (value, mask) pairs (a byte matches when `byte & mask ==
    value`), what it is called when cut, and its reader."""

    magic: tuple[tuple[int, int], ...]
    what: str
    mime: str
    read: Callable[[bytes], Sniffed]

    def matches(self, data: bytes) -> bool:
        """Whether `data` begins as this header does (when shorter: as far as it goes)."""
        return all(b & mask == v for (v, mask), b in zip(self.magic, data, strict=False))


def _magic(pattern: bytes, *masked: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """Bytes with "?" for any byte, then bytes matched under a mask."""
    return tuple((0, 0) if b == ord("?") else (b, 0xFF) for b in pattern) + masked


_SIGNATURES = (
    _Signature(_magic(b"\x89PNG\r\n\x1a\n"), "PNG", "image/png", _png),
    _Signature(_magic(b"\xff\xd8\xff"), "JPEG", "image/jpeg", _jpeg),
    _Signature(_magic(b"GIF87a"), "GIF", "image/gif", _gif),
    _Signature(_magic(b"GIF89a"), "GIF", "image/gif", _gif),
    _Signature(_magic(b"RIFF????"), "RIFF header", OCTET, _riff),
    _Signature(_magic(b"RF64????WAVE"), "WAV", "audio/wav", _wav),
    # The reserved fields are zero: "BM" alone would claim texts about BMWs.
    _Signature(_magic(b"BM????\0\0\0\0"), "BMP", "image/bmp", _bmp),
    _Signature(_magic(b"fLaC"), "FLAC", "audio/flac", _flac),
    _Signature(_magic(b"OggS"), "Ogg", "audio/ogg", _ogg),
    # Then a major version below 8 (so "ID3 tags…" stays a text).
    _Signature(_magic(b"ID3", (0x00, 0xF8)), "ID3 tag", "audio/mpeg", _id3),
    # A box size below 64 KiB, then ftyp.
    _Signature(_magic(b"\0\0??ftyp"), "MP4", "audio/mp4", _mp4),
    # A frame sync: eleven set bits (the rest of the header is read by _mp3).
    _Signature(_magic(b"\xff", (0xE0, 0xE0)), "MP3", "audio/mpeg", _mp3),
)


def sniff(data: bytes) -> Sniffed:
    """What `data` is, from its header alone. Raises `MediaRejected`: "unsupported media type"
    for a signature not listed above (or bytes that are not UTF-8 text), "truncated or corrupt
    <what>" for a header cut short or inconsistent."""
    if not data:
        raise MediaRejected("empty data", OCTET)
    for sig in _SIGNATURES:
        if sig.matches(data):
            with _reading(sig.what, sig.mime):
                if len(data) < len(sig.magic):
                    _short()
                return sig.read(data)
    return _text(data)


# ---------------------------------------------------------------------------------------- limits


def _count(n: int) -> str:
    """A count as people read it: 40000000 stays whole, 2500000000 is 2.5e9."""
    if n < 10**9:
        return str(n)
    mantissa, exponent = f"{n:.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _at_most(what: str, value: int, key: str, limit: int, mime: str) -> None:
    if value > limit:
        raise MediaRejected(f"{what} is {value} bytes; {key} is {limit}", mime)


def check_limits(s: Sniffed, size: int, media: MediaSettings) -> None:
    """Refuses a medium beyond its limits from what its header declares (before anything is
    decoded), naming the limit's key and both values. A plain text is held to the tables' byte
    limit (there is no key of its own)."""
    if s.modality == Modality.IMAGE:
        img = media.image
        _at_most("image", size, "media.image.max_bytes", img.max_bytes, s.mime)
        pixels = s.width * s.height
        if pixels > img.max_pixels:
            raise MediaRejected(
                f"image is {s.width} × {s.height} = {_count(pixels)} pixels; "
                f"media.image.max_pixels is {img.max_pixels}",
                s.mime,
            )
        if max(s.width, s.height) > img.max_side:
            raise MediaRejected(
                f"image is {s.width} × {s.height}, a side of {max(s.width, s.height)} pixels; "
                f"media.image.max_side is {img.max_side}",
                s.mime,
            )
    elif s.modality == Modality.AUDIO:
        aud = media.audio
        _at_most("recording", size, "media.audio.max_bytes", aud.max_bytes, s.mime)
        if s.seconds > aud.max_seconds:
            raise MediaRejected(
                f"recording is {s.seconds:.1f} seconds; media.audio.max_seconds is "
                f"{aud.max_seconds:g}",
                s.mime,
            )
    else:
        what = "table" if s.modality == Modality.TABLE else "text"
        _at_most(what, size, "media.table.max_bytes", media.table.max_bytes, s.mime)
