"""Check an image space on your own pairs before turning it on: does a caption find its image?

    python tools/clip_recall.py --model DIR --pairs pairs.tsv [--threads N]

`pairs.tsv`: one pair a line, an image file and the text a user would search it by, separated by
a tab (paths relative to the file). Not every model puts texts and images in one comparable
space (seed 000 §2.1); this prints text-to-image recall@1 and @5 over the pairs (each text
against every image) and where matched and unmatched pairs' cosines lie, and suggests the floor
and ceiling for `media.clip` (the unmatched 90th percentile, the matched median: how the tiny
test model's were chosen). Fewer than about 50 pairs say little.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageOps

from server.adapters.clip_onnx import OnnxImageSpace
from server.core.settings import ClipSettings


def recall(
    space: OnnxImageSpace, images: Sequence[npt.NDArray[np.uint8]], texts: Sequence[str]
) -> dict[str, float]:
    """Text-to-image recall@1 and @5 where text i describes image i, and the cosines' spread;
    texts that repeat (several images of one caption) count a hit on any of their images."""
    cos = space.encode_texts(texts) @ space.encode_images(images).T  # texts x images
    same = np.asarray([[a == b for b in texts] for a in texts])
    order = np.argsort(-cos, axis=1)
    hit_at = [same[i, order[i]].argmax() for i in range(len(texts))]
    q = np.quantile
    return {
        "pairs": float(len(texts)),
        "recall_at_1": float(np.mean([h < 1 for h in hit_at])),
        "recall_at_5": float(np.mean([h < 5 for h in hit_at])),
        "matched_median": float(np.median(cos[same])),
        "matched_p01": float(q(cos[same], 0.01)),
        "unmatched_mean": float(cos[~same].mean()) if (~same).any() else 0.0,
        "unmatched_p90": float(q(cos[~same], 0.90)) if (~same).any() else 0.0,
        "unmatched_p99": float(q(cos[~same], 0.99)) if (~same).any() else 0.0,
    }


def read_pairs(path: Path) -> tuple[list[npt.NDArray[np.uint8]], list[str]]:
    images, texts = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        name, sep, text = line.partition("\t")
        if not sep or not text.strip():
            raise SystemExit(f"{path}:{n}: expected an image path, a tab and a text")
        with Image.open(path.parent / name) as im:
            images.append(np.asarray(ImageOps.exif_transpose(im).convert("RGB"), np.uint8))
        texts.append(text.strip())
    return images, texts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="the exported model directory")
    ap.add_argument("--pairs", type=Path, required=True, help="image path <TAB> text, a line")
    ap.add_argument("--threads", type=int, default=2)
    ns = ap.parse_args(argv)
    space = OnnxImageSpace(ns.model, ClipSettings(model_dir=str(ns.model), threads=ns.threads))
    images, texts = read_pairs(ns.pairs)
    r = recall(space, images, texts)
    for k, v in r.items():
        print(f"{k}: {v:.3f}" if k != "pairs" else f"pairs: {int(v)}")
    print(
        f"suggested: media.clip.vector_floor {r['unmatched_p90']:.2f},"
        f" media.clip.vector_ceiling {r['matched_median']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
