"""Media for tests, made here rather than shipped: screenshots drawn by PIL (an application window
or an error dialog with the lines given) and notes spoken by espeak-ng.

Both are what issue 30's readers meet: a customer's screenshot of an error (Latin text in DejaVu
Sans, Chinese in WenQuanYi Micro Hei, 16 to 22 px) and a voice note. A seed varies the window's
colours, sizes and margins so that a set of screenshots is not one picture with other words.
"""

from __future__ import annotations

import io
import random
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
LATIN_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
LATIN_BOLD = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")

Font = ImageFont.FreeTypeFont
Rgb = tuple[int, int, int]


def is_cjk(ch: str) -> bool:
    """A character WenQuanYi draws and DejaVu does not: CJK ideographs, their punctuation and
    full-width forms."""
    o = ord(ch)
    return (
        0x2E80 <= o <= 0x9FFF  # radicals, punctuation, kana, ideographs
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0xFE30 <= o <= 0xFE4F  # vertical forms
        or 0xFF00 <= o <= 0xFFEF  # full-width forms (，：！)
    )


def runs(line: str) -> list[tuple[bool, str]]:
    """The line cut where it changes between CJK and Latin: (is CJK, text) pieces in order."""
    out: list[tuple[bool, str]] = []
    for ch in line:
        cjk = is_cjk(ch)
        if out and out[-1][0] == cjk:
            out[-1] = (cjk, out[-1][1] + ch)
        else:
            out.append((cjk, ch))
    return out


@cache
def font(path: Path, size: int) -> Font:
    if not path.is_file():
        pytest.skip(f"{path} is missing (Debian: fonts-wqy-microhei, fonts-dejavu-core)")
    return ImageFont.truetype(str(path), size)


def text_width(line: str, size: int, bold: bool = False) -> float:
    latin = LATIN_BOLD if bold else LATIN_FONT
    return sum(font(CJK_FONT if cjk else latin, size).getlength(piece) for cjk, piece in runs(line))


def draw_line(
    d: ImageDraw.ImageDraw, x: float, baseline: float, line: str, size: int, fill: Rgb
) -> None:
    """One line at (x, baseline), each piece in its script's font on one baseline."""
    for cjk, piece in runs(line):
        f = font(CJK_FONT if cjk else LATIN_FONT, size)
        d.text((x, baseline), piece, font=f, fill=fill, anchor="ls")
        x += f.getlength(piece)


def jitter(rng: random.Random, rgb: Rgb, by: int) -> Rgb:
    r, g, b = (min(255, max(0, c + rng.randint(-by, by))) for c in rgb)
    return (r, g, b)


def render_screenshot(
    lines: list[str],
    *,
    width: int = 800,
    height: int | None = None,
    title: str | None = None,
    seed: int = 0,
) -> bytes:
    """A PNG of an application window: a title bar (with `title`, or none), a light body with an
    icon box at the left, `lines` in dark text beside it, and a button at the bottom right.
    `height` None fits the lines. The seed picks the colours, the font size (16 to 22 px) and the
    margins."""
    rng = random.Random(seed)
    size = rng.randint(16, 22)
    bar_h = 34 if title is not None else 0
    pad = rng.randint(18, 30)
    icon = 40
    leading = round(size * 1.6)
    button_h = size + 16
    fit = bar_h + pad + max(icon, leading * len(lines)) + pad + button_h + pad
    h = fit if height is None else height
    body = jitter(rng, (244, 245, 247), 8)
    ink = jitter(rng, (30, 32, 36), 20)
    im = Image.new("RGB", (width, h), body)
    d = ImageDraw.Draw(im)
    d.rectangle((0, 0, width - 1, h - 1), outline=jitter(rng, (150, 152, 160), 20))
    if title is not None:
        bar = jitter(rng, (44, 92, 170), 30)
        d.rectangle((0, 0, width - 1, bar_h), fill=bar)
        draw_line(d, 12, bar_h - 11, title, 16, (250, 250, 252))
        d.rectangle((width - 30, 8, width - 12, bar_h - 8), outline=(250, 250, 252))
    # The icon: a coloured box with a mark, as dialogs draw a warning or an error.
    top = bar_h + pad
    d.rounded_rectangle(
        (pad, top, pad + icon, top + icon), radius=8, fill=jitter(rng, (212, 64, 52), 30)
    )
    d.text(
        (pad + icon / 2, top + icon / 2),
        "!",
        font=font(LATIN_BOLD, 26),
        fill=(255, 255, 255),
        anchor="mm",
    )
    x = pad + icon + pad
    for i, line in enumerate(lines):
        draw_line(d, x, top + size + i * leading, line, size, ink)
    label = "OK"
    bw = text_width(label, size, bold=True) + 48
    bx, by = width - pad - bw, h - pad - button_h
    d.rounded_rectangle(
        (bx, by, bx + bw, by + button_h),
        radius=5,
        fill=jitter(rng, (228, 230, 234), 10),
        outline=jitter(rng, (120, 124, 132), 20),
    )
    d.text(
        (bx + bw / 2, by + button_h / 2),
        label,
        font=font(LATIN_BOLD, size),
        fill=ink,
        anchor="mm",
    )
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def speak(text: str, *, voice: str = "en-us", rate: int = 160) -> bytes:
    """`text` spoken by espeak-ng (`voice`, `rate` words a minute) as WAV bytes (22,050 Hz mono
    16-bit PCM, espeak-ng's own format). Skips the calling test when espeak-ng is missing."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng; .ci/run installs it)")
    with tempfile.TemporaryDirectory(prefix="pocketd-speak-") as tmp:
        out = Path(tmp) / "note.wav"
        subprocess.run(
            [exe, "-v", voice, "-s", str(rate), "-w", str(out), text],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return out.read_bytes()
