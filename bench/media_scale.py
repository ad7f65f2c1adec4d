"""Recall latency with image memories beside text memories, against the text memories alone, in
one server and one run.

One `pocketd serve` with the tiny image space (`media.clip.model_dir`: `tools/tiny_clip.py`'s
model directory built from `../shared/fixtures/tiny-clip`, 64-d), two namespaces:
- `scale-text`: `bench.data.make`'s N text memories (clustered 512-d vectors given by the client,
  texts of topic words and a code, the four kinds in turn: `bench memory`'s set);
- `scale-mixed`: the same N, and N/10 image memories. Reading 10k screenshots would take hours
  here (about 3 s of OCR each), so they are written as their reading would leave them, through
  the ordinary Remember: modality image, an observation, synthetic OCR-like lines as the text
  (an app, a field, a code or an amount), a clustered 512-d text vector (another seed of the
  same generator), and a vector in the image space from the tiny model's image tower on a
  picture drawn by the fixture's `synth.py` (`space_vectors`). No blob is stored.
Each of `bench memory`'s queries (its text and its vector, top 5) is asked of both namespaces in
turn, alternating which goes first, after an untimed warm-up; in `scale-mixed` the server also
puts the text through the image space's text tower and searches that space's pockets (the
namespace holds vectors of it). The figures: p50 and p99 end to end (gRPC) and server-side
(`took_micros`), and the ratios mixed / text.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.bilingual import served
from bench.data import Dataset, make
from bench.media_pocketd import log
from bench.quality_retrievers import wait_indexed
from bench.stats import summary_ms
from pocketd import Client, MemoryInput
from server.core.settings import ClipSettings

TEXT_NS, MIXED_NS = "scale-text", "scale-mixed"
SPACE = ClipSettings().space  # "clip"
KINDS = ("fact", "preference", "episode", "skill")
BATCH = 256
WARMUP = 50
INDEX_WAIT_S = 1800.0
APPS = ("Payments", "Backup", "Mail", "Orders", "VPN Client", "Installer", "退款详情", "订单详情")
FIELDS = ("Error code", "Order ID", "Amount", "Ticket", "Reference", "错误码", "订单编号", "金额")
STATUS = ("Failed", "Completed", "Declined", "Pending review", "已拒绝", "成功", "处理中")


def ocr_like(rng: random.Random, i: int) -> str:
    """A screenshot's text as OCR leaves it: a title, a field with a code or an amount, a
    status, the button."""
    value = rng.choice((f"0x8007{i:04X}", f"IMG-{i:06d}", f"¥{rng.randint(1, 99999)}.00"))
    return "\n".join((rng.choice(APPS), f"{rng.choice(FIELDS)}: {value}", rng.choice(STATUS), "OK"))


def image_vectors(model_dir: Path, n: int, seed: int) -> npt.NDArray[np.float32]:
    """The tiny image tower's vectors of `n` pictures drawn by the fixture (its captions in
    turn), in batches."""
    from server.adapters.clip_onnx import OnnxImageSpace
    from tools.tiny_clip import draw, synth

    space = OnnxImageSpace(model_dir, ClipSettings(model_dir=str(model_dir)))
    classes = synth().CLASSES
    rng = random.Random(seed)
    out = np.zeros((n, space.dim), np.float32)
    for start in range(0, n, 512):
        idx = range(start, min(start + 512, n))
        out[start : idx.stop] = space.encode_images(
            draw([classes[i % len(classes)] for i in idx], rng)
        )
    return out


def ingest_text(c: Client, ns: str, data: Dataset) -> float:
    t0 = time.perf_counter()
    n = len(data.texts)
    for start in range(0, n, BATCH):
        c.remember_batch(
            [
                MemoryInput(ns, data.texts[i], kind=KINDS[i % 4], importance=3,
                            vector=data.vectors[i].tolist())
                for i in range(start, min(start + BATCH, n))
            ]
        )  # fmt: skip
    return time.perf_counter() - t0


def ingest_images(
    c: Client,
    ns: str,
    texts: list[str],
    text_vecs: npt.NDArray[np.float32],
    clip: npt.NDArray[np.float32],
) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        c.remember_batch(
            [
                MemoryInput(ns, texts[i], kind="observation", modality="image", importance=3,
                            vector=text_vecs[i].tolist(), space_vectors={SPACE: clip[i].tolist()})
                for i in range(start, min(start + BATCH, len(texts)))
            ]
        )  # fmt: skip
    return time.perf_counter() - t0


@dataclass
class Timings:
    """Seconds per namespace, end to end and server-side; in how many of the mixed namespace's
    Recalls a step searched the image space (its pocket `@clip`), and its hits from there."""

    e2e: dict[str, list[float]] = field(default_factory=lambda: {TEXT_NS: [], MIXED_NS: []})
    server: dict[str, list[float]] = field(default_factory=lambda: {TEXT_NS: [], MIXED_NS: []})
    space_searched: int = 0
    space_hits: int = 0


def timed(c: Client, data: Dataset, queries: int) -> Timings:
    """Every query asked of both namespaces in turn, the first of the pair alternating."""
    t = Timings()
    for i in range(queries):
        pair = (TEXT_NS, MIXED_NS) if i % 2 == 0 else (MIXED_NS, TEXT_NS)
        for ns in pair:
            t0 = time.perf_counter()
            r = c.recall(ns, data.query_texts[i], vector=data.queries[i].tolist(), top_k=5)
            t.e2e[ns].append(time.perf_counter() - t0)
            t.server[ns].append(r.took_micros / 1e6)
            t.space_searched += any(step.pocket == f"@{SPACE}" for step in r.plan)
            t.space_hits += sum(h.score.vector_space == SPACE for h in r.hits)
    return t


def run_scale(n_text: int, queries: int) -> dict[str, Any]:
    from tools.tiny_clip import FIXTURE, VOCABULARY, build

    n_img = n_text // 10
    log(f"scale: {n_text} text memories, {n_img} image memories, {queries} queries")
    data = make(n_text, dim=512, queries=queries)
    imgs = make(n_img, dim=512, queries=1, seed=1)
    rng = random.Random(30)
    texts = [ocr_like(rng, i) for i in range(n_img)]
    with tempfile.TemporaryDirectory(prefix="pocketd-media-clip-") as tmp:
        model = build(FIXTURE, VOCABULARY, Path(tmp) / "tiny-clip")
        t0 = time.perf_counter()
        clip = image_vectors(model, n_img, seed=30)
        out: dict[str, Any] = {"n_text": n_text, "n_images": n_img, "queries": queries,
                               "image_vectors_s": time.perf_counter() - t0}  # fmt: skip
        with served({"POCKETD__MEDIA__CLIP__MODEL_DIR": str(model)}) as c:
            out["ingest_text_s"] = ingest_text(c, TEXT_NS, data)
            out["ingest_text_again_s"] = ingest_text(c, MIXED_NS, data)
            out["ingest_images_s"] = ingest_images(c, MIXED_NS, texts, imgs.vectors, clip)
            log(f"  ingested: {out}")
            out["index_wait_s"] = wait_indexed(c, INDEX_WAIT_S)
            warm = min(WARMUP, queries)
            timed(c, data, warm)
            got = timed(c, data, queries)
            out["pockets"] = {
                ns: len(c.stats(ns).namespaces[0].pockets) for ns in (TEXT_NS, MIXED_NS)
            }
    out["space_searched"], out["space_hits"] = got.space_searched, got.space_hits
    for ns in (TEXT_NS, MIXED_NS):
        out[ns] = {"e2e": summary_ms(got.e2e[ns]), "server": summary_ms(got.server[ns])}
    for side in ("e2e", "server"):
        for q in ("p50_ms", "p99_ms"):
            out[f"ratio_{side}_{q[:3]}"] = out[MIXED_NS][side][q] / out[TEXT_NS][side][q]
    return out
