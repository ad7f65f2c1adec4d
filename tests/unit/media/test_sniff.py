"""Sniffing media from their own headers, and the limits checked before anything is decoded
(server/core/media/sniff.py): real files made with PIL, `wave`, espeak-ng and PyAV; the
decompression bomb and the hour of silence; every cut of every real header; any bytes."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import wave
import zlib
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from server.core.media.ports import MediaRejected, Sniffed
from server.core.media.sniff import OCTET, check_limits, sniff, text_mime
from server.core.memory.model import Modality
from server.core.settings import AudioLimits, ImageLimits, MediaSettings, TableLimits

MEDIA = MediaSettings()


# ----------------------------------------------------------------------------------- the makers


def image(fmt: str, size: tuple[int, int], mode: str = "RGB", **save: object) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, "#c04020" if mode == "RGB" else None).save(buf, fmt, **save)
    return buf.getvalue()


def tone(rate: int, seconds: float, channels: int = 1) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return np.repeat((0.3 * np.sin(2 * np.pi * 440 * t))[None, :], channels, 0).astype(np.float32)


def encode(
    fmt: str,
    codec: str,
    rate: int,
    seconds: float,
    *,
    channels: int = 1,
    silence: bool = False,
    options: dict[str, str] | None = None,
    path: Path | None = None,
    muxer: dict[str, str] | None = None,
) -> bytes:
    """A recording encoded by PyAV (FFmpeg): a 440 Hz tone or silence."""
    layout = "stereo" if channels == 2 else "mono"
    out: io.BytesIO | Path = path or io.BytesIO()
    samples = (
        np.zeros((channels, int(rate * seconds)), np.float32)
        if silence
        else tone(rate, seconds, channels)
    )
    with av.open(out, "w", format=fmt, options=muxer or {}) as c:
        stream = c.add_stream(codec, rate=rate, layout=layout)
        assert isinstance(stream, av.AudioStream)
        if options:  # the native Vorbis encoder is experimental: opened with strict -2
            stream.codec_context.options = options
            stream.codec_context.open()
        step = 1 << 16 if silence else 4096
        for i in range(0, samples.shape[1], step):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples[:, i : i + step]), format="fltp", layout=layout
            )
            frame.sample_rate, frame.pts = rate, i
            for packet in stream.encode(frame):
                c.mux(packet)
        for packet in stream.encode(None):
            c.mux(packet)
    return path.read_bytes() if path else out.getvalue()  # type: ignore[union-attr]


def wav(rate: int, seconds: float, channels: int = 1, width: int = 2) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(b"\x01" * int(rate * seconds) * channels * width)
    return buf.getvalue()


def chunk(kind: bytes, body: bytes) -> bytes:
    """A PNG chunk with its CRC."""
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_header(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)


def rejected(data: bytes) -> MediaRejected:
    with pytest.raises(MediaRejected) as e:
        sniff(data)
    return e.value


# ---------------------------------------------------------------------------------------- images

SIZES = [(1, 1), (37, 200), (640, 17), (1920, 1080)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    ("fmt", "mime", "save"),
    [
        ("PNG", "image/png", {}),
        ("JPEG", "image/jpeg", {}),
        ("JPEG", "image/jpeg", {"progressive": True}),
        ("GIF", "image/gif", {}),
        ("WEBP", "image/webp", {}),  # lossy: VP8
        ("WEBP", "image/webp", {"lossless": True}),  # VP8L
        ("WEBP", "image/webp", {"exif": b"Exif\0\0MM\0*\0\0\0\x08\0\0"}),  # VP8X
        ("BMP", "image/bmp", {}),
    ],
)
def test_every_image_format_is_read_from_its_header(
    fmt: str, mime: str, save: dict[str, object], size: tuple[int, int]
) -> None:
    data = image(fmt, size, **save)
    assert sniff(data) == Sniffed(mime, Modality.IMAGE, width=size[0], height=size[1])


def test_webp_chunks_are_the_three_kinds() -> None:
    # The parametrised cases above cover each first chunk: the fixture is what it claims.
    chunks = {image("WEBP", (5, 5), **s)[12:16] for s in ({}, {"lossless": True})}
    assert chunks == {b"VP8 ", b"VP8L"}
    assert image("WEBP", (5, 5), exif=b"Exif\0\0MM\0*\0\0\0\x08\0\0")[12:16] == b"VP8X"


def test_a_grey_jpeg_and_a_palette_png_are_read() -> None:
    assert sniff(image("JPEG", (33, 44), "L")).width == 33
    assert sniff(image("PNG", (33, 44), "P")).height == 44


def test_jpeg_fill_bytes_standalone_markers_and_app_segments() -> None:
    data = image("JPEG", (321, 123), exif=b"Exif\0\0" + b"\0" * 3000)
    assert data[2:4] == b"\xff\xe0" or data[2:4] == b"\xff\xe1"
    # Fill bytes before a marker: still a JPEG to a decoder, and to the sniffer.
    filled = data[:2] + b"\xff\xff\xff" + data[2:]
    assert Image.open(io.BytesIO(filled)).size == (321, 123)
    assert (sniff(filled).width, sniff(filled).height) == (321, 123)
    # Markers without a length (TEM, a restart marker) are stepped over.
    standalone = data[:2] + b"\xff\x01\xff\xd3" + data[2:]
    assert (sniff(standalone).width, sniff(standalone).height) == (321, 123)


def test_a_top_down_bmp_has_a_negative_height() -> None:
    data = bytearray(image("BMP", (20, 30)))
    struct.pack_into("<i", data, 22, -30)
    assert sniff(bytes(data)).height == 30


# ------------------------------------------------------------------------------------ recordings


@pytest.mark.parametrize(
    ("rate", "channels", "width"), [(8000, 1, 1), (16000, 1, 2), (44100, 2, 2)]
)
def test_wav_duration_is_the_data_over_the_byte_rate(rate: int, channels: int, width: int) -> None:
    s = sniff(wav(rate, 2.5, channels, width))
    assert (s.mime, s.modality) == ("audio/wav", Modality.AUDIO)
    assert s.seconds == pytest.approx(2.5)


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng (.ci/run installs it)")
def test_a_spoken_note_by_espeak(tmp_path: Path) -> None:
    out = tmp_path / "note.wav"
    subprocess.run(
        ["espeak-ng", "-w", str(out), "The refund for order 48213 was declined"],
        check=True,
        timeout=60,
    )
    with wave.open(str(out)) as w:
        truth = w.getnframes() / w.getframerate()
    assert truth > 1.0
    assert sniff(out.read_bytes()).seconds == pytest.approx(truth, rel=1e-6)


def test_rf64_and_a_streamed_wav_run_to_the_end() -> None:
    body = wav(16000, 1.5)
    data_at = body.index(b"data")
    pcm = body[data_at + 8 :]
    fmt = body[12:data_at]
    ds64 = b"ds64" + struct.pack("<I", 28) + b"\0" * 28
    rf64 = b"RF64" + b"\xff" * 4 + b"WAVE" + ds64 + fmt + b"data" + b"\xff" * 4 + pcm
    assert sniff(rf64).seconds == pytest.approx(1.5)
    streamed = body[:data_at] + b"data" + b"\xff" * 4 + pcm
    assert sniff(streamed).seconds == pytest.approx(1.5)


SECONDS = 9.7


@pytest.mark.parametrize(
    ("fmt", "codec", "rate", "channels", "options", "mime"),
    [
        ("flac", "flac", 16000, 1, None, "audio/flac"),
        ("flac", "flac", 44100, 2, None, "audio/flac"),
        ("ogg", "libopus", 48000, 1, None, "audio/ogg"),
        ("ogg", "libopus", 24000, 2, None, "audio/ogg"),
        ("ogg", "vorbis", 44100, 2, {"strict": "-2"}, "audio/ogg"),
        ("mp3", "libmp3lame", 44100, 1, None, "audio/mpeg"),  # MPEG-1
        ("mp3", "libmp3lame", 22050, 2, None, "audio/mpeg"),  # MPEG-2
        ("mp3", "libmp3lame", 8000, 1, None, "audio/mpeg"),  # MPEG-2.5
        ("ipod", "aac", 44100, 1, None, "audio/mp4"),
        ("mp4", "aac", 16000, 2, None, "audio/mp4"),
    ],
)
def test_encoded_recordings_are_timed_within_two_percent(
    fmt: str, codec: str, rate: int, channels: int, options: dict[str, str] | None, mime: str
) -> None:
    data = encode(fmt, codec, rate, SECONDS, channels=channels, options=options)
    s = sniff(data)
    assert (s.mime, s.modality) == (mime, Modality.AUDIO)
    assert s.seconds == pytest.approx(SECONDS, rel=0.02)


def id3v2(size: int) -> bytes:
    syncsafe = bytes((size >> s) & 0x7F for s in (21, 14, 7, 0))
    return b"ID3\x04\x00\x00" + syncsafe + b"\0" * size


def mp3_frames(data: bytes) -> tuple[int, bytes]:
    """Where an FFmpeg MP3's first frame (its Info tag) starts, past the ID3v2 tag."""
    assert data.startswith(b"ID3")
    size = data[6] << 21 | data[7] << 14 | data[8] << 7 | data[9]
    start = 10 + size
    assert data[start] == 0xFF
    return start, data[start:]


def test_mp3_without_a_vbr_tag_is_timed_by_its_bitrate() -> None:
    data = encode("mp3", "libmp3lame", 44100, SECONDS, options=None)
    _, frames = mp3_frames(data)
    info = frames.find(b"Info")
    assert 0 < info < 64
    # Drop the Info frame: CBR frames from the first, and an ID3v1 tag at the end.
    second = frames.index(b"\xff\xfb", info)
    cbr = frames[second:] + b"TAG" + b"\0" * 125
    assert sniff(cbr).seconds == pytest.approx(SECONDS, rel=0.02)
    assert sniff(id3v2(300) + cbr).seconds == pytest.approx(SECONDS, rel=0.02)


def test_a_vbri_tag_is_believed() -> None:
    # MPEG-1 Layer III, 128 kb/s, 44.1 kHz, stereo: 417-byte frames of 1152 samples.
    header = b"\xff\xfb\x90\x00"
    vbri = header + b"\0" * 32 + b"VBRI" + struct.pack(">HHHII", 1, 0, 75, 0, 1000)
    first = vbri + b"\0" * (417 - len(vbri))
    data = first + (header + b"\0" * 413) * 3
    assert sniff(data).seconds == pytest.approx(1000 * 1152 / 44100)


def test_m4a_with_moov_first_and_last(tmp_path: Path) -> None:
    last = encode("ipod", "aac", 44100, SECONDS)
    first = encode(
        "ipod", "aac", 44100, SECONDS, path=tmp_path / "a.m4a", muxer={"movflags": "faststart"}
    )
    assert last.find(b"moov") > last.find(b"mdat") and first.find(b"moov") < first.find(b"mdat")
    for data in (first, last):
        assert sniff(data).seconds == pytest.approx(SECONDS, rel=0.02)


def test_an_mp4_without_sound_is_a_video_and_heic_an_image() -> None:
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as c:
        s = c.add_stream("mpeg4", rate=5)
        s.width, s.height, s.pix_fmt = 32, 32, "yuv420p"
        for i in range(3):
            f = av.VideoFrame.from_ndarray(np.zeros((32, 32, 3), np.uint8), format="rgb24")
            f.pts = i
            for p in s.encode(f):
                c.mux(p)
        for p in s.encode(None):
            c.mux(p)
    e = rejected(buf.getvalue())
    assert (e.reason.startswith("unsupported media type"), e.detected) == (True, "video/mp4")
    heic = struct.pack(">I", 24) + b"ftypheic" + b"\0\0\0\0mif1heic"
    assert rejected(heic).detected == "image/heic"


def test_an_ogg_stream_of_another_codec_is_unsupported() -> None:
    packet = b"Speex   " + b"\0" * 72
    page = b"OggS\0\x02" + b"\0" * 8 + struct.pack("<III", 7, 0, 0) + bytes([1, 80]) + packet
    e = rejected(page)
    assert e.reason.startswith("unsupported media type") and e.detected == "audio/ogg"


# ------------------------------------------------------------------------------------------ text


@pytest.mark.parametrize(
    ("text", "mime"),
    [
        ("name,amount\nAlice,12.50\nBob,7\n", "text/csv"),
        ('name,note\n"Smith, J","said ""hi""\nthen left"\nLi,ok\n', "text/csv"),
        ("\ufeff姓名,金额\n张伟,1200\n", "text/csv"),
        ("name\tamount\nAlice\t12.50\n", "text/tab-separated-values"),
        ('a\tb\n"quoted\tcell\n', "text/tab-separated-values"),
        ("| a | b |\n|:--|--:|\n| 1 | 2 |\n", "text/markdown"),
        ("a | b\n--- | ---\n1 | 2\n", "text/markdown"),
        ("Hello, world. How are you?", "text/plain"),  # one line with a comma is no table
        ("Dear Li, thanks for the note, it helped.\nBest, Mary", "text/plain"),  # 3 then 2 fields
        ("# Prices\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "text/plain"),  # prose and a table
        ("a,b\n" + "x" * 70 + ",y\n", "text/csv"),  # a long cell, but the header is names
        (
            "the first cell of this header is far too long to be a column's name,b\n1,2\n",
            "text/plain",
        ),
        ("错误码 E1234：支付失败", "text/plain"),
        ("BMW is a car", "text/plain"),  # "BM" without the BMP header's zeros
        ("ID3 tags are metadata", "text/plain"),
    ],
)
def test_texts_are_tables_or_plain(text: str, mime: str) -> None:
    s = sniff(text.encode())
    assert s.mime == mime
    assert s.modality == (Modality.TEXT if mime == "text/plain" else Modality.TABLE)


def test_a_long_csv_is_judged_on_whole_lines_of_its_start() -> None:
    rows = "".join(f"{i},name {i},{i * 3}\n" for i in range(20_000))
    assert len(rows) > 1 << 16
    assert sniff(("id,name,score\n" + rows).encode()).mime == "text/csv"


@pytest.mark.parametrize(
    "data",
    [b"\x00\x01\x02binary", "text".encode("utf-16"), b"\xc3\x28 bad utf-8", b"\x7fELF\x02\x01"],
)
def test_unknown_bytes_are_unsupported(data: bytes) -> None:
    e = rejected(data)
    assert (e.reason, e.detected) == ("unsupported media type", OCTET)


def test_a_text_may_hold_a_few_control_characters() -> None:
    log = "\x1b[31mERROR\x1b[0m E1234 payment failed after three retries, then gave up"
    assert sniff(log.encode()).mime == "text/plain"


def test_empty_data_and_an_empty_text_are_refused() -> None:
    assert rejected(b"").reason == "empty data"
    assert rejected(b" \n\t ").reason == "empty text"


# --------------------------------------------------------------------------------- corrupt files


def test_corrupt_headers_name_what_is_wrong() -> None:
    no_ihdr = b"\x89PNG\r\n\x1a\n" + chunk(b"gAMA", b"\0\0\xb1\x8f") + b"\0" * 20
    assert rejected(no_ihdr).reason == "truncated or corrupt PNG (no IHDR)"
    assert rejected(no_ihdr).detected == "image/png"
    assert rejected(png_header(0, 100)).reason == "truncated or corrupt PNG"
    bad_crc = bytearray(png_header(10, 10))
    bad_crc[20] ^= 1
    assert "checksum" in rejected(bytes(bad_crc)).reason
    zero_rate = bytearray(wav(16000, 1.0))
    struct.pack_into("<I", zero_rate, 28, 0)  # the byte rate
    e = rejected(bytes(zero_rate))
    assert e.reason.startswith("truncated or corrupt WAV") and e.detected == "audio/wav"
    lying_rate = bytearray(wav(16000, 1.0))
    struct.pack_into("<I", lying_rate, 28, 16000 * 2 * 1000)
    assert "byte rate" in rejected(bytes(lying_rate)).reason
    gif = bytearray(image("GIF", (10, 10)))
    struct.pack_into("<H", gif, 6, 0)
    assert rejected(bytes(gif)).reason == "truncated or corrupt GIF"


def test_made_up_headers_of_many_parts_are_refused() -> None:
    # Walking them would take seconds at 50 MB; they are refused after MAX_PARTS parts.
    jpeg = b"\xff\xd8" + b"\xff\xe0\x00\x02" * 20_000
    assert rejected(jpeg).reason == "truncated or corrupt JPEG (too many segments)"
    riff = b"RIFF\0\0\0\0WAVE" + b"junk\0\0\0\0" * 20_000
    assert rejected(riff).reason == "truncated or corrupt WAV (too many chunks)"
    mp4 = b"\0\0\0\x10ftypM4A \0\0\0\0" + b"\0\0\0\x08free" * 20_000
    assert rejected(mp4).reason == "truncated or corrupt MP4 (too many boxes)"
    fill = b"\xff\xd8" + b"\xff" * 1_000_000  # fill bytes to the end: no marker
    assert rejected(fill).reason == "truncated or corrupt JPEG"


def test_a_flac_of_unknown_length_is_refused() -> None:
    data = bytearray(encode("flac", "flac", 16000, 1.0))
    data[21] &= 0xF0  # STREAMINFO's 36-bit total samples: 0, unknown
    data[22:26] = b"\0\0\0\0"
    assert "unknown length" in rejected(bytes(data)).reason


def _jpeg_header_end(data: bytes) -> int:
    pos = 2
    while True:
        marker, length = data[pos + 1], struct.unpack_from(">H", data, pos + 2)[0]
        pos += 2 + length
        if marker in (0xC0, 0xC1, 0xC2):
            return pos


def _ogg_first_audio_granule_end(data: bytes) -> int:
    pos = 0
    while True:
        granule = struct.unpack_from("<q", data, pos + 6)[0]
        if granule > 0:
            return pos + 18  # the granule and the serial: what the last-page search reads
        segments = data[pos + 26]
        pos += 27 + segments + sum(data[pos + 27 : pos + 27 + segments])


def _mp4_box_end(data: bytes, kind: bytes) -> int:
    at = data.index(kind) - 4
    return at + struct.unpack_from(">I", data, at)[0]


def _first_mp3_frame_end(data: bytes) -> int:
    start, frames = mp3_frames(data)
    return start + frames.index(b"\xff\xfb", 4)  # where the second frame starts


HEADERS: dict[str, Callable[[], tuple[bytes, int]]] = {
    "png": lambda: (image("PNG", (50, 60)), 33),
    "jpeg": lambda: (
        d := image("JPEG", (50, 60), exif=b"Exif\0\0" + b"\0" * 40),
        _jpeg_header_end(d),
    ),
    "gif": lambda: (image("GIF", (50, 60)), 13),
    "webp-vp8": lambda: (image("WEBP", (50, 60)), 30),
    "webp-vp8l": lambda: (image("WEBP", (50, 60), lossless=True), 25),
    "webp-vp8x": lambda: (image("WEBP", (50, 60), exif=b"Exif\0\0MM\0*\0\0\0\x08\0\0"), 30),
    "bmp": lambda: (image("BMP", (50, 60)), 54),
    "wav": lambda: (d := wav(16000, 0.5), d.index(b"data") + 8),
    "flac": lambda: (encode("flac", "flac", 16000, 0.5), 42),
    "opus": lambda: (d := encode("ogg", "libopus", 48000, 0.5), _ogg_first_audio_granule_end(d)),
    "vorbis": lambda: (
        d := encode("ogg", "vorbis", 44100, 0.5, channels=2, options={"strict": "-2"}),
        _ogg_first_audio_granule_end(d),
    ),
    "mp3": lambda: (d := encode("mp3", "libmp3lame", 44100, 0.5), _first_mp3_frame_end(d)),
    "m4a-moov-last": lambda: (d := encode("ipod", "aac", 16000, 0.5), len(d)),
}


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_every_cut_of_a_real_header_is_refused(name: str) -> None:
    data, header = HEADERS[name]()
    whole = sniff(data)  # the uncut file is fine
    assert whole.modality in (Modality.IMAGE, Modality.AUDIO)
    for n in range(header):
        with pytest.raises(MediaRejected):
            sniff(data[:n])


def test_the_cut_lengths_above_are_where_the_headers_end() -> None:
    # The lengths are not too long: a cut at each header's end is read (an image as the whole
    # file; a recording as what is there), a WAV's from its first sample.
    for name in ("png", "jpeg", "gif", "webp-vp8", "webp-vp8l", "webp-vp8x", "bmp", "flac"):
        data, header = HEADERS[name]()
        assert sniff(data[:header]) == sniff(data), name
    for name in ("opus", "vorbis", "mp3"):
        data, header = HEADERS[name]()
        assert sniff(data[:header]).seconds > 0, name
    data, header = HEADERS["wav"]()
    assert sniff(data[: header + 2]).seconds == pytest.approx(1 / 16000)


def test_m4a_with_moov_first_is_refused_when_cut_in_moov(tmp_path: Path) -> None:
    data = encode(
        "ipod", "aac", 16000, 0.5, path=tmp_path / "a.m4a", muxer={"movflags": "faststart"}
    )
    for n in range(_mp4_box_end(data, b"moov")):
        with pytest.raises(MediaRejected):
            sniff(data[:n])


_REAL = [
    HEADERS[n]()[0][:4096]
    for n in ("png", "jpeg", "webp-vp8x", "bmp", "wav", "flac", "opus", "mp3")
]


@given(st.binary(max_size=512))
def test_any_bytes_are_sniffed_or_refused(data: bytes) -> None:
    try:
        s = sniff(data)
    except MediaRejected as e:
        assert e.reason and e.detected
    else:
        assert isinstance(s, Sniffed)


@given(
    st.sampled_from(range(len(_REAL))),
    st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255)), max_size=8),
    st.integers(0, 4096),
)
def test_mangled_real_headers_are_sniffed_or_refused(
    which: int, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(_REAL[which])
    for at, value in flips:
        if at < len(data):
            data[at] = value
    try:
        s = sniff(bytes(data[:cut]))
    except MediaRejected:
        return
    assert s.width >= 0 and s.height >= 0 and s.seconds >= 0


@given(st.text(max_size=300))
def test_any_text_is_one_of_four_kinds(text: str) -> None:
    assert text_mime(text) in (
        "text/csv",
        "text/tab-separated-values",
        "text/markdown",
        "text/plain",
    )


# ---------------------------------------------------------------------------------------- limits


def test_a_decompression_bomb_is_refused_from_its_header() -> None:
    # 50,000 × 50,000 RGB declared; the IDAT holds a few rows of zeros, not 7.5 GB.
    idat = zlib.compress(b"\0" * (1 + 3 * 50_000) * 4, 9)
    bomb = png_header(50_000, 50_000) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    assert len(bomb) < 4096
    s = sniff(bomb)
    assert (s.width, s.height) == (50_000, 50_000)
    # Its pixel data is never read: garbage in its place sniffs the same.
    assert sniff(png_header(50_000, 50_000) + b"\xde\xad" * 100) == s
    with pytest.raises(MediaRejected) as e:
        check_limits(s, len(bomb), MEDIA)
    assert e.value.reason == (
        "image is 50000 × 50000 = 2.5e9 pixels; media.image.max_pixels is 40000000"
    )
    assert e.value.detected == "image/png"


def test_an_hour_of_silence_is_refused_on_its_duration() -> None:
    data = encode("flac", "flac", 8000, 3600.0, silence=True)
    assert len(data) < 1 << 20  # small: bytes alone would let it through
    s = sniff(data)
    assert s.seconds == pytest.approx(3600.0)
    with pytest.raises(MediaRejected) as e:
        check_limits(s, len(data), MEDIA)
    assert e.value.reason == "recording is 3600.0 seconds; media.audio.max_seconds is 600"


def test_every_limit_names_its_key_and_values() -> None:
    tight = MediaSettings(
        image=ImageLimits(max_bytes=1000, max_pixels=10_000, max_side=500),
        audio=AudioLimits(max_bytes=2000, max_seconds=5.0),
        table=TableLimits(max_bytes=100),
    )
    img = Sniffed("image/png", Modality.IMAGE, width=500, height=20)
    check_limits(img, 1000, tight)  # at the limits: fine
    cases: list[tuple[Sniffed, int, str]] = [
        (img, 1001, "image is 1001 bytes; media.image.max_bytes is 1000"),
        (
            Sniffed("image/png", Modality.IMAGE, width=200, height=51),
            10,
            "image is 200 × 51 = 10200 pixels; media.image.max_pixels is 10000",
        ),
        (
            Sniffed("image/png", Modality.IMAGE, width=501, height=2),
            10,
            "image is 501 × 2, a side of 501 pixels; media.image.max_side is 500",
        ),
        (
            Sniffed("audio/wav", Modality.AUDIO, seconds=1.0),
            2001,
            "recording is 2001 bytes; media.audio.max_bytes is 2000",
        ),
        (
            Sniffed("audio/wav", Modality.AUDIO, seconds=5.31),
            10,
            "recording is 5.3 seconds; media.audio.max_seconds is 5",
        ),
        (
            Sniffed("text/csv", Modality.TABLE),
            101,
            "table is 101 bytes; media.table.max_bytes is 100",
        ),
        (
            Sniffed("text/plain", Modality.TEXT),
            101,
            "text is 101 bytes; media.table.max_bytes is 100",
        ),
    ]
    for s, size, reason in cases:
        with pytest.raises(MediaRejected) as e:
            check_limits(s, size, tight)
        assert (e.value.reason, e.value.detected) == (reason, s.mime)
    check_limits(Sniffed("audio/wav", Modality.AUDIO, seconds=5.0), 2000, tight)
