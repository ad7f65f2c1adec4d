"""The media decoder: images to RGB pixels (first frame, EXIF rotation, transparency on white),
recordings to mono float32 at 16 kHz (WAV read here, the rest by FFmpeg), the limits checked from
what the decoder reads, and every corrupt, truncated or unsupported input refused with
MediaRejected naming the sniffed type."""

from __future__ import annotations

import io
import struct
import wave
import zlib
from fractions import Fraction

import av
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from server.adapters.media_decode import PilDecoder
from server.core.media.ports import SAMPLE_RATE, MediaDecoder, MediaRejected, Sniffed
from server.core.memory.model import Modality
from server.core.settings import AudioLimits, ImageLimits, MediaSettings
from tests.media_samples import render_screenshot, speak

DECODER: MediaDecoder = PilDecoder(MediaSettings())
PNG = Sniffed("image/png", Modality.IMAGE)
JPEG = Sniffed("image/jpeg", Modality.IMAGE)
WAV = Sniffed("audio/wav", Modality.AUDIO)


def encoded(im: Image.Image, fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


def riff(tag: int, channels: int, rate: int, bits: int, payload: bytes, **kw: int) -> bytes:
    """A WAV file: its fmt chunk (the extensible form when `extensible`) and data chunk
    (`declared` overrides the data chunk's size)."""
    block = channels * bits // 8
    fields = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    if kw.get("extensible"):
        guid_tail = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
        fields = struct.pack("<HHIIHH", 0xFFFE, channels, rate, rate * block, block, bits)
        fields += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", tag) + guid_tail
    size = kw.get("declared", len(payload))
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fields)) + fields
    body += b"data" + struct.pack("<I", size) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def tone(freq: float, seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def peak_hz(x: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(x))
    return float(np.argmax(spectrum) * SAMPLE_RATE / len(x))


def ffmpeg_encoded(x: np.ndarray, rate: int, container: str, codec: str) -> bytes:
    """Mono float samples encoded by FFmpeg (PyAV), as a client's recording would be."""
    buf = io.BytesIO()
    with av.open(buf, mode="w", format=container) as out:
        stream = out.add_stream(codec, rate=rate, layout="mono")
        assert isinstance(stream, av.AudioStream)
        fmt = stream.codec_context.format.name
        frame_size = stream.codec_context.frame_size or 1024
        scale = {"s16": (np.int16, 32767.0), "s32": (np.int32, 2**31 * 0.999)}
        dtype, gain = scale.get(fmt[:3], (np.float32, 1.0))
        pts = 0
        for i in range(0, len(x), frame_size):
            data = (x[i : i + frame_size] * gain).astype(dtype)[None, :]
            frame = av.AudioFrame.from_ndarray(data, format=fmt, layout="mono")
            frame.sample_rate, frame.pts, frame.time_base = rate, pts, Fraction(1, rate)
            pts += data.shape[1]
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return buf.getvalue()


# --- images ------------------------------------------------------------------------------------


def test_a_screenshot_decodes_to_its_exact_pixels() -> None:
    png = render_screenshot(["Error E1234: disk quota exceeded"], title="Backup", seed=3)
    px = DECODER.image(png, PNG)
    want = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert px.dtype == np.uint8 and px.shape == want.shape and px.shape[2] == 3
    assert np.array_equal(px, want)


def test_transparency_is_composited_on_white() -> None:
    rgba = Image.new("RGBA", (3, 1))
    rgba.putdata([(0, 0, 0, 0), (0, 0, 0, 255), (0, 0, 0, 128)])
    px = DECODER.image(encoded(rgba, "PNG"), PNG)
    assert px[0, 0].tolist() == [255, 255, 255]  # fully transparent: the page
    assert px[0, 1].tolist() == [0, 0, 0]
    assert 120 <= px[0, 2, 0] <= 135  # half black over white
    pal = Image.new("P", (2, 1))
    pal.putpalette([0, 0, 0, 200, 10, 10])
    pal.putdata([0, 1])
    px = DECODER.image(encoded(pal, "PNG", transparency=0), PNG)
    assert px[0].tolist() == [[255, 255, 255], [200, 10, 10]]


def test_exif_rotation_is_applied() -> None:
    im = Image.new("RGB", (40, 20), (250, 250, 250))
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90° clockwise to view
    px = DECODER.image(encoded(im, "JPEG", exif=exif), JPEG)
    assert px.shape == (40, 20, 3)


def test_an_animation_gives_its_first_frame() -> None:
    frames = [Image.new("RGB", (8, 8), c) for c in ((255, 0, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    px = DECODER.image(buf.getvalue(), Sniffed("image/gif", Modality.IMAGE))
    assert px[4, 4, 0] > 200 and px[4, 4, 2] < 50


def test_sixteen_bit_grey_keeps_its_levels() -> None:
    grey = np.array([[0, 32768, 65535]], dtype=np.uint16)
    im = Image.fromarray(grey)
    assert im.mode == "I;16"
    px = DECODER.image(encoded(im, "PNG"), PNG)
    assert px[0, :, 0].tolist() == [0, 128, 255]


def png_declaring(width: int, height: int) -> bytes:
    """A PNG of a few hundred bytes whose header declares width × height 1-bit pixels (a
    decompression bomb's shape; its data would decode to far more than it holds)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    rows = zlib.compress(b"\x00" * 4096)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def test_a_decompression_bomb_is_refused_from_its_header() -> None:
    bomb = png_declaring(50_000, 50_000)
    assert len(bomb) < 1_000
    with pytest.raises(MediaRejected, match="50000×50000 pixels, beyond the limits") as e:
        DECODER.image(bomb, PNG)
    assert e.value.detected == "image/png"
    # The longer side alone: within max_pixels but beyond max_side.
    narrow = PilDecoder(MediaSettings(image=ImageLimits(max_side=1000)))
    with pytest.raises(MediaRejected, match="beyond the limits"):
        narrow.image(encoded(Image.new("1", (1001, 2)), "PNG"), PNG)
    assert narrow.image(encoded(Image.new("1", (1000, 2)), "PNG"), PNG).shape == (2, 1000, 3)


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_png_and_jpeg_are_refused(cut: float) -> None:
    png = render_screenshot(["Error E1234: disk quota exceeded"], seed=1)
    jpeg = encoded(Image.open(io.BytesIO(png)).convert("RGB"), "JPEG", quality=90)
    for data, sniffed in ((png, PNG), (jpeg, JPEG)):
        with pytest.raises(MediaRejected, match="corrupt or truncated image") as e:
            DECODER.image(data[: int(len(data) * cut)], sniffed)
        assert e.value.detected == sniffed.mime


def test_a_png_missing_its_last_chunks_is_refused() -> None:
    png = render_screenshot(["Error E1234"], seed=2)
    with pytest.raises(MediaRejected, match="corrupt or truncated image"):
        DECODER.image(png[:-20], PNG)  # the last IDAT's checksum and IEND


def test_bytes_are_read_only_as_the_sniffed_type() -> None:
    jpeg = encoded(Image.new("RGB", (8, 8)), "JPEG")
    with pytest.raises(MediaRejected, match="unreadable as image/png"):
        DECODER.image(jpeg, PNG)  # PIL may not guess another format
    with pytest.raises(MediaRejected, match="corrupt or truncated image"):
        DECODER.image(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, PNG)
    with pytest.raises(MediaRejected, match="unsupported image type image/x-eps"):
        DECODER.image(b"%!PS-Adobe-3.0 EPSF-3.0\n", Sniffed("image/x-eps", Modality.IMAGE))


# --- WAV ---------------------------------------------------------------------------------------


@given(hnp.arrays(np.int16, st.integers(1, 2000)))
def test_16_bit_pcm_at_16_khz_is_exact(x: np.ndarray) -> None:
    out = DECODER.audio(riff(1, 1, SAMPLE_RATE, 16, x.astype("<i2").tobytes()), WAV)
    assert out.dtype == np.float32
    assert np.array_equal(out, x.astype(np.float32) / 32768)


@given(st.lists(st.integers(-(1 << 23), (1 << 23) - 1), min_size=1, max_size=500))
def test_24_bit_pcm_is_sign_extended(values: list[int]) -> None:
    payload = b"".join(v.to_bytes(3, "little", signed=True) for v in values)
    for extensible in (0, 1):
        out = DECODER.audio(riff(1, 1, SAMPLE_RATE, 24, payload, extensible=extensible), WAV)
        assert np.allclose(out, np.array(values) / (1 << 23), atol=1e-7)


def test_8_and_32_bit_pcm_and_float_wavs() -> None:
    want = np.array([-1.0, -0.5, 0.0, 0.5], dtype=np.float32)
    u8 = bytes([0, 64, 128, 192])
    i32 = (want.astype(np.float64) * (1 << 31)).astype("<i4").tobytes()
    cases = [
        riff(1, 1, SAMPLE_RATE, 8, u8),
        riff(1, 1, SAMPLE_RATE, 32, i32),
        riff(3, 1, SAMPLE_RATE, 32, want.astype("<f4").tobytes()),
        riff(3, 1, SAMPLE_RATE, 64, want.astype("<f8").tobytes()),
        riff(3, 1, SAMPLE_RATE, 32, want.astype("<f4").tobytes(), extensible=1),
    ]
    for data in cases:
        assert np.allclose(DECODER.audio(data, WAV), want, atol=1e-6)


def test_stereo_is_mixed_to_mono_and_other_rates_resampled() -> None:
    # The stdlib's own writer: 22,050 Hz stereo, a 440 Hz tone in the left channel only.
    x = tone(440, 1.0, 22_050)
    pcm = np.stack([x, np.zeros_like(x)], axis=1)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(22_050)
        w.writeframes((pcm * 32767).astype("<i2").tobytes())
    out = DECODER.audio(buf.getvalue(), WAV)
    assert abs(len(out) - SAMPLE_RATE) <= 64
    assert abs(peak_hz(out) - 440) < 5
    assert 0.2 < np.abs(out).max() < 0.3  # half the left channel's 0.5
    up = DECODER.audio(riff(3, 1, 8_000, 32, tone(300, 1.0, 8_000).tobytes()), WAV)
    assert abs(len(up) - SAMPLE_RATE) <= 64 and abs(peak_hz(up) - 300) < 5


def test_an_espeak_note_decodes_to_its_duration() -> None:
    data = speak("remind me to renew the passport before March")
    with wave.open(io.BytesIO(data)) as w:
        seconds = w.getnframes() / w.getframerate()
    out = DECODER.audio(data, WAV)
    assert abs(len(out) / SAMPLE_RATE - seconds) < 0.01
    assert np.abs(out).max() > 0.1


def test_truncated_or_broken_wavs_are_refused() -> None:
    data = speak("remind me to renew the passport before March")
    for bad, why in (
        (data[: len(data) // 2], "its data chunk declares"),
        (data[:30], "fmt chunk is short"),
        (data[:36], "no data chunk"),
        (b"RIFF\x00\x00\x00\x00WAVE", "no fmt chunk"),
        (b"RIFX" + data[4:], "no RIFF/WAVE header"),
        (riff(1, 1, SAMPLE_RATE, 12, b"\x00" * 12), "unsupported WAV"),
        (riff(2, 1, SAMPLE_RATE, 16, b"\x00" * 4), "format tag 2"),
        (riff(1, 1, SAMPLE_RATE, 16, b""), "holds no samples"),
        (riff(3, 1, SAMPLE_RATE, 32, np.array([np.nan], "<f4").tobytes()), "NaN"),
    ):
        with pytest.raises(MediaRejected, match=why) as e:
            DECODER.audio(bad, WAV)
        assert e.value.detected == "audio/wav"


def test_a_recording_past_the_limit_is_refused_whatever_its_header_says() -> None:
    short = PilDecoder(MediaSettings(audio=AudioLimits(max_seconds=2.0)))
    ok = tone(200, 2.5, SAMPLE_RATE).tobytes()  # within the limit and its second of grace
    assert len(short.audio(riff(3, 1, SAMPLE_RATE, 32, ok), WAV)) == int(2.5 * SAMPLE_RATE)
    four = tone(200, 4.0, SAMPLE_RATE).tobytes()
    for data in (
        riff(3, 1, SAMPLE_RATE, 32, four),
        riff(3, 1, SAMPLE_RATE, 32, four, declared=0xFFFF_FFFF),  # "to the end of the file"
    ):
        with pytest.raises(MediaRejected, match="beyond the limit of 2 s"):
            short.audio(data, WAV)
    # An Ogg file says nothing true about its length until it is decoded: decoding stops.
    ogg = ffmpeg_encoded(tone(200, 4.0, 48_000), 48_000, "ogg", "libopus")
    with pytest.raises(MediaRejected, match="beyond the limit of 2 s"):
        short.audio(ogg, Sniffed("audio/ogg", Modality.AUDIO))


# --- other formats (FFmpeg) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mime", "container", "codec", "rate"),
    [
        ("audio/flac", "flac", "flac", 44_100),
        ("audio/ogg", "ogg", "libopus", 48_000),
        ("audio/mpeg", "mp3", "libmp3lame", 44_100),
    ],
)
def test_compressed_recordings_decode_to_16_khz_mono(
    mime: str, container: str, codec: str, rate: int
) -> None:
    if codec not in av.codecs_available:
        pytest.skip(f"this FFmpeg build has no {codec} encoder")
    data = ffmpeg_encoded(tone(440, 1.5, rate), rate, container, codec)
    out = DECODER.audio(data, Sniffed(mime, Modality.AUDIO))
    assert out.dtype == np.float32 and out.ndim == 1
    assert abs(len(out) / SAMPLE_RATE - 1.5) < 0.1  # codecs pad a frame or two
    assert abs(peak_hz(out) - 440) < 5


def test_corrupt_or_unsupported_recordings_are_refused() -> None:
    flac = ffmpeg_encoded(tone(440, 1.0, 44_100), 44_100, "flac", "flac")
    sniffed = Sniffed("audio/flac", Modality.AUDIO)
    for bad in (flac[:42] + bytes(4096), b"fLaC" + b"\xff" * 64, b""):
        with pytest.raises(MediaRejected) as e:
            DECODER.audio(bad, sniffed)
        assert e.value.detected == "audio/flac"
    playlist = b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:///etc/passwd\n"
    with pytest.raises(MediaRejected, match="unsupported audio type"):
        DECODER.audio(playlist, Sniffed("application/vnd.apple.mpegurl", Modality.AUDIO))
