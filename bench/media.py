"""`python -m bench media [--half tune|report] [--parts read,speed,scale,captions] [--quick]
[--out PATH]`: screenshots, voice notes and drawn pictures through a real `pocketd serve`
(issue 30).

Parts (each in its own server, one after another; all by default):
- `read` (`bench.media_read`): the half's 80 screenshots (40 English, 40 Chinese) and 35 voice
  notes (30 English, 5 Chinese) of the blind set (`bench.media_data`), sent as bytes with no
  caption and no text; the ingest rate, acknowledged and searchable; then each item's question
  in one namespace holding every item of the half and the 300 distractors: recall@5 and
  recall@1 per language. Rows, each given the same items and questions: `pocketd`; `bm25` (the
  afternoon build on the same text pocketd read, fetched with Get: bm25s, stemmed, stopwords
  out, jieba for Chinese) and `hybrid` (that and exact cosine over the server's own encoder,
  0.5/0.5); `oracle` (the item's true text, as a memory of its modality: perfect reading);
  `newest 5` (the trivial rule: the five items sent last). Also the share of answers the read
  text holds at all (`answer read`), and for the notes the same server with every recording
  decoded as English (`pocketd, English model`: a default server, which has no Chinese model).
- `speed` (`bench.media_read.speed`): OCR seconds per screenshot and speech seconds per second
  of audio, the models run in this process on one thread each, no server running.
- `scale` (`bench.media_scale`): Recall latency in a namespace of N text memories and N/10 image
  memories (written with their text and an image-space vector, not read: see there) against N
  text memories alone, in one server, the queries alternating: the ratio (goal ≤ 1.2×).
- `captions` (`bench.media_clip`): the 22 captions of the tiny model asked over pictures drawn
  for them and stored as bytes, with the image space on (OCR off) and off (the defaults).

Only `--half tune` may choose settings: `--set KEY=VALUE` (a server setting for `read`, e.g.
`media.ocr.min_score=0.4`) and `--misses` (print the questions pocketd got wrong) are refused
with `--half report`. `--quick` is a small run (a few items a language, 2,000 text memories,
two pictures a caption) that checks the plumbing, not the figures.

`--out PATH` (default `bench/out/media-<half>.json`) gets every figure, the environment, the
commit, and (for `read`) each row's rankings and the text pocketd read of each item.
"""

from __future__ import annotations

# onnxruntime first: importing tantivy (bench.textproc) before it can crash its import.
from server.adapters.onnx_encoder import OnnxTextEncoder  # isort: skip  # noqa: F401

import argparse
import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bilingual_rankers import Symmetric
from bench.encoder import bench_encoder
from bench.media_data import HALVES, LANGS, load
from bench.media_pocketd import log
from bench.server_proc import ROOT
from bench.stats import environment

PARTS = ("read", "speed", "scale", "captions")
TUNING_FLAGS = ("--set", "--misses")
GOAL_READ = 0.90  # the outside check: a screenshot's question finds it in the top 5
GOAL_NOTES = 0.80  # and an English note's
GOAL_RATIO = 1.2
SETS = {"screens": "screenshots", "notes": "voice notes"}


def environment_of(settings: dict[str, str]) -> dict[str, str]:
    """`media.ocr.min_score` → `POCKETD__MEDIA__OCR__MIN_SCORE`."""
    return {"POCKETD__" + k.upper().replace(".", "__"): v for k, v in settings.items()}


def commit() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "server", "bench"], cwd=ROOT,
                           capture_output=True, text=True)  # fmt: skip
    return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def read_table(out: dict[str, Any], half: str) -> list[str]:
    r = out["read"]
    lines: list[str] = []
    for key, label in SETS.items():
        rows = r[key]["rows"]
        n = {lang: rows["pocketd"][lang]["n"] for lang in LANGS}
        lines.append(
            f"{label} ({half} half): {n['en']} en and {n['zh']} zh, sent as bytes with no caption;"
            f" each question asked of one namespace holding all of them and"
            f" {out['distractors']} distractors"
        )
        lines.append(
            f"{'':28}" + "".join(f"{lang + ' ' + f:>10}" for lang in LANGS for f in ("r@5", "r@1"))
        )
        for row, figs in rows.items():
            lines.append(
                f"{row:28}"
                + "".join(f"{figs[lang][f]:>10.3f}" for lang in LANGS for f in ("r@5", "r@1"))
            )
        read = r[key]["answer_read"]
        lines.append(f"answer in the text pocketd read: en {read['en']:.3f}, zh {read['zh']:.3f};"
                     f" items {r[key]['states']}")  # fmt: skip
        if key == "notes":
            eng = r["notes"]["answer_read_english"]
            lines.append(f"  with the English model only: en {eng['en']:.3f}, zh {eng['zh']:.3f}")
        ing = r[f"{key}_ingest"]
        lines.append(
            f"ingest: {ing['n']} acknowledged in {ing['ack_s']:.2f} s ({ing['ack_per_s']:.1f}/s,"
            f" p50 {ing['ack_p50_ms']:.1f} ms, max {ing['ack_max_ms']:.1f} ms); searchable after"
            f" {ing['searchable_s']:.1f} s ({ing['searchable_per_s']:.2f}/s,"
            f" {ing['queue_s_per_item']:.2f} s an item through the queue)"
            + (
                f"; {r['audio_seconds']:.0f} s of audio, queue RTF {ing['queue_rtf']:.3f}"
                if key == "notes"
                else ""
            )
        )
        lines.append("")
    lines.append(f"goals (outside, on unseen items): screenshots ≥ {GOAL_READ} r@5 in en and in zh;"
                 f" English notes ≥ {GOAL_NOTES}")  # fmt: skip
    return lines


def speed_table(sp: dict[str, Any]) -> list[str]:
    lines = [
        f"OCR in process ({sp['ocr_threads']} thread): {sp['ocr']['p50_s']:.2f} s an image p50,"
        f" {sp['ocr']['mean_s']:.2f} s mean ({sp['ocr']['n']} screenshots, 800 px wide)"
    ]
    for lang, model in (("en", "Whisper tiny.en"), ("zh", "Whisper base, zh")):
        if f"speech_{lang}" in sp:
            s = sp[f"speech_{lang}"]
            lines.append(
                f"speech in process, {model} ({sp['speech_threads']} thread): {s['rtf']:.3f} s"
                f" a second of audio ({s['n']} notes, {s['audio_s']:.0f} s)"
            )
    return lines


def scale_table(sc: dict[str, Any]) -> list[str]:
    lines = [
        f"Recall (text + vector, top 5), {sc['queries']} queries each:"
        f" {sc['n_text']} text memories ('scale-text', {sc['pockets']['scale-text']} pockets)"
        f" against the same and {sc['n_images']} image memories ('scale-mixed',"
        f" {sc['pockets']['scale-mixed']} pockets; the image space searched in"
        f" {sc['space_searched']} of its Recalls, {sc['space_hits']} hits from it)"
    ]
    for ns in ("scale-text", "scale-mixed"):
        e, s = sc[ns]["e2e"], sc[ns]["server"]
        lines.append(f"  {ns:12} e2e p50 {e['p50_ms']:6.2f} ms p99 {e['p99_ms']:6.2f} ms;"
                     f" server p50 {s['p50_ms']:6.2f} ms p99 {s['p99_ms']:6.2f} ms")  # fmt: skip
    lines.append(
        f"  ratio mixed / text: e2e p50 {sc['ratio_e2e_p50']:.2f}× p99 {sc['ratio_e2e_p99']:.2f}×;"
        f" server p50 {sc['ratio_server_p50']:.2f}× p99 {sc['ratio_server_p99']:.2f}×"
        f" (goal ≤ {GOAL_RATIO}×)"
    )
    lines.append(
        f"  ingest: text {sc['ingest_text_s']:.0f} s + {sc['ingest_text_again_s']:.0f} s,"
        f" images {sc['ingest_images_s']:.0f} s, indexes caught up {sc['index_wait_s']:.0f} s later"
    )
    return lines


def captions_table(cp: dict[str, Any]) -> list[str]:
    lines = [
        f"captions: {cp['pictures']} drawn pictures ({cp['per_caption']} of each of 22 captions),"
        f" recall@5 (chance {cp['chance']:.3f})",
        f"{'':20}{'all':>8}{'shapes':>8}{'digits':>8}",
    ]
    for row, f in cp["rows"].items():
        lines.append(f"{row:20}{f['all']:8.3f}{f['shapes']:8.3f}{f['digits']:8.3f}")
    return lines


def misses(out: dict[str, Any], items: dict[str, Any]) -> list[str]:
    """pocketd's misses on `read` (tuning only): the question, what it read, what came first."""
    lines: list[str] = []
    for key in SETS:
        r = out["read"][key]
        for iid, ranking in r["rankings"]["pocketd"].items():
            if iid not in ranking:
                it = items[iid]
                lines.append(f"{iid} {it.question!r} (answer {it.answer!r}): read"
                             f" {r['texts'].get(iid, '')[:120]!r}; got {ranking}")  # fmt: skip
    return lines


def parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench media", description=__doc__.split("\n\n")[0])
    ap.add_argument("--half", choices=HALVES, default="report")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"a subset of {','.join(PARTS)}")
    ap.add_argument(
        "--quick", action="store_true", help="a small run: the plumbing, not the figures"
    )
    ap.add_argument("--out", type=Path, help="the JSON (default bench/out/media-<half>.json)")
    ap.add_argument("--scale", type=int, help="text memories for `scale` (default 100000)")
    ap.add_argument("--queries", type=int, help="queries for `scale` (default 1000)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a server setting for `read` (tune half only)")  # fmt: skip
    ap.add_argument("--misses", action="store_true", help="print pocketd's misses (tune only)")
    ns = ap.parse_args(argv)
    ns.parts = [p for p in ns.parts.split(",") if p]
    if set(ns.parts) - set(PARTS):
        ap.error(f"--parts: {sorted(set(ns.parts) - set(PARTS))} not in {PARTS}")
    if ns.half == "report" and (ns.set or ns.misses):
        ap.error(f"{'/'.join(TUNING_FLAGS)} choose settings: the tune half only")
    pairs = [s.split("=", 1) for s in ns.set]
    if any(len(p) != 2 or not p[0] for p in pairs):
        ap.error("--set takes KEY=VALUE")
    ns.settings = {k: v for k, v in pairs}
    ns.scale = ns.scale or (2_000 if ns.quick else 100_000)
    ns.queries = ns.queries or (50 if ns.quick else 1_000)
    ns.out = ns.out or ROOT / "bench" / "out" / f"media-{ns.half}.json"
    return ns


def main(argv: Sequence[str]) -> int:
    from bench.media_clip import run_captions
    from bench.media_read import run_half, speed
    from bench.media_scale import run_scale

    ns = parse(argv)
    t0 = time.perf_counter()
    full = load()
    s = full.half(ns.half)
    if ns.quick:
        s = s.cut(per_lang=6, notes_per_lang=3, distractors_per_lang=20)
    out: dict[str, Any] = {"half": ns.half, "quick": ns.quick, "settings": ns.settings,
                           "commit": commit(), "environment": environment(),
                           "distractors": len(s.distractors)}  # fmt: skip
    printed: list[str] = []
    if "read" in ns.parts:
        enc = Symmetric("use-m3", bench_encoder())
        out["read"] = run_half(s, ns.half, environment_of(ns.settings), enc)
        printed += read_table(out, ns.half)
    if "speed" in ns.parts:
        out["speed"] = speed(s, 2 if ns.quick else 16)
        printed += [*speed_table(out["speed"]), ""]
    if "scale" in ns.parts:
        out["scale"] = run_scale(ns.scale, ns.queries)
        printed += [*scale_table(out["scale"]), ""]
    if "captions" in ns.parts:
        out["captions"] = run_captions(2 if ns.quick else 5)
        printed += captions_table(out["captions"])
    print("\n".join(printed))
    if ns.misses and "read" in out:
        print("\n".join(misses(out, {i.id: i for i in (*s.screenshots, *s.notes)})))
    log(f"done in {time.perf_counter() - t0:.0f} s; commit {out['commit']}")
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps(out, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    log(f"wrote {ns.out}")
    return 0
