"""Caption queries over drawn pictures through the tiny model's image space.

Pictures of the fixture's 22 captions ("a red circle", "the digit 7"; `synth.py`, fresh ones
from a seed: not the pictures the model was trained on), `per_caption` of each, are stored as
PNG bytes with no caption, in a shuffled order, in two servers:
- `image space`: `media.clip.model_dir` the tiny model, `media.ocr.enabled` false, so a picture
  is found only through its image vector;
- `image space off`: the defaults (OCR on, no image space): a shape has no text and is stored
  with its label ("image 64×64"), a digit with what OCR reads of it.
Each caption is then asked (a text-only Recall of the top 5, `min_score` 0). recall@5 is the
share of its top 5 that show it, out of min(5, `per_caption`); the trivial row ranks the five
pictures sent last. A random ranking scores 5 / (22 × min(5, `per_caption`)) × `per_caption` / 1,
about 0.045.
"""

from __future__ import annotations

import io
import random
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image

from bench.bilingual import served
from bench.media_pocketd import Namespace, log, wait_searchable
from bench.media_score import Rankings, caption_recall, newest

NS = "drawn"
SEED = 30


def pictures(per_caption: int, seed: int = SEED) -> list[tuple[str, bytes]]:
    """(caption, PNG bytes) for `per_caption` fresh pictures of each caption, shuffled."""
    from tools.tiny_clip import draw, synth

    rng = random.Random(seed)
    captions = [c for c in synth().CLASSES for _ in range(per_caption)]
    rng.shuffle(captions)
    out = []
    for caption, pixels in zip(captions, draw(captions, rng), strict=True):
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="PNG")
        out.append((caption, buf.getvalue()))
    return out


def ask(
    env: dict[str, str], pics: list[tuple[str, bytes]]
) -> tuple[Rankings, list[str], dict[str, int]]:
    """The pictures in one server with `env`: each caption's ranking (the captions its top 5
    show), the captions in the order sent, and the write decisions."""
    with served(env) as c:
        ns = Namespace(c, NS)
        for caption, png in pics:
            r = c.remember_image(NS, png)
            ns.decisions[f"{r.decision} {r.processing_state}"] += 1
            ns.owner[r.memory_id] = caption
            ns.order.append(caption)
        wait_searchable(c)
        out: Rankings = {}
        for caption in sorted(set(ns.order)):
            hits = c.recall(NS, caption, top_k=5, min_score=0.0).hits
            out[caption] = [ns.held(h.memory.memory_id, h.group_member_ids) for h in hits]
    return out, ns.order, dict(ns.decisions)


def run_captions(per_caption: int) -> dict[str, Any]:
    from tools.tiny_clip import FIXTURE, VOCABULARY, build

    pics = pictures(per_caption)
    shown = {c: sum(p == c for p, _ in pics) for c, _ in pics}
    out: dict[str, Any] = {"per_caption": per_caption, "pictures": len(pics)}
    with tempfile.TemporaryDirectory(prefix="pocketd-media-clip-") as tmp:
        model = build(FIXTURE, VOCABULARY, Path(tmp) / "tiny-clip")
        env = {
            "POCKETD__MEDIA__CLIP__MODEL_DIR": str(model),
            "POCKETD__MEDIA__OCR__ENABLED": "false",
        }
        log(f"captions: {len(pics)} pictures, the image space on")
        on, order, out["decisions_on"] = ask(env, pics)
    log("captions: the image space off (defaults)")
    off, _, out["decisions_off"] = ask({}, pics)
    trivial = {c: newest(order) for c in shown}
    rows = {"image space": on, "image space off": off, "newest 5": trivial}
    out["rows"] = {
        row: {
            part: caption_recall(r, {c: n for c, n in shown.items() if c.startswith(prefix)})
            for part, prefix in (("all", ""), ("shapes", "a "), ("digits", "the digit"))
        }
        for row, r in rows.items()
    }
    # A random top 5 shows a caption 5 × per_caption / pictures times on average.
    out["chance"] = 5 * per_caption / len(pics) / min(5, per_caption)
    out["rankings"] = rows
    return out
