"""Screenshots and voice notes of one half through a real `pocketd serve`, and the reading speed
of its OCR and speech models in process.

One server (its defaults, but `media.speech.multilingual_model_dir` set to Whisper base when
`make models-speech-zh` has fetched it: it is used only for a recording sent with language
"zh"), five namespaces, each holding the 300 distractors (facts) first:
- `screens-<half>`: the half's screenshots (both languages), one `remember_image` each, as PNG
  bytes with no caption, in a shuffled order; the ingest figures are timed here;
- `screens-<half>-oracle`: each screenshot's true title and lines as a text observation (what
  perfect OCR would give, through pocketd's text path);
- `notes-<half>`: the half's voice notes as WAV bytes, the English ones decoded as "en" (Whisper
  tiny.en), the Chinese ones as "zh" (Whisper base) when it is there;
- `notes-<half>-english`: the same notes with no language, as a default server decodes every
  recording (English only);
- `notes-<half>-oracle`: each note's true words as a text observation.
Each item's question is then asked in its namespace (`bench.media_pocketd.Namespace.rank`), and
in process over the same texts (`bench.media_score.Afternoon`, on what Get returned for each
item) and by the trivial rule (`newest`).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.bilingual import Serve, served
from bench.bilingual_rankers import Encoder
from bench.media_data import LANGS, Item, MediaSet, media_bytes, seconds_of
from bench.media_pocketd import Namespace, ReadBack, log, wait_searchable
from bench.media_score import (
    Afternoon,
    Rankings,
    figures,
    newest,
    rank_all,
    read,
)
from bench.server_proc import ROOT

WHISPER_BASE = ROOT / "models" / "whisper-base"
SHUFFLE_SEED = 30


def multilingual_env() -> dict[str, str]:
    """Whisper base for recordings sent as "zh", when `make models-speech-zh` fetched it."""
    if (WHISPER_BASE / "model.bin").is_file():
        return {"POCKETD__MEDIA__SPEECH__MULTILINGUAL_MODEL_DIR": str(WHISPER_BASE)}
    log(f"{WHISPER_BASE} is missing (make models-speech-zh): Chinese notes decoded as English")
    return {}


def shuffled(items: Sequence[Item], seed: int = SHUFFLE_SEED) -> list[Item]:
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def ingest(
    ns: Namespace, items: Sequence[Item], data: dict[str, bytes], lang: Any
) -> dict[str, float]:
    """Send `items` as fast as one client can, then wait until every one is searchable: the
    acknowledged and the searchable rate, and each acknowledgement's latency."""
    t0 = time.perf_counter()
    ns.add_media(items, data, lang)
    acked = time.perf_counter() - t0
    searchable = acked + wait_searchable(ns.client)
    n = len(items)
    return {
        "n": n,
        "ack_s": acked,
        "ack_per_s": n / acked,
        "ack_p50_ms": 1000 * statistics.median(ns.ack_s),
        "ack_max_ms": 1000 * max(ns.ack_s),
        "searchable_s": searchable,
        "searchable_per_s": n / searchable,
        "queue_s_per_item": searchable / n,
    }


def rows_of(
    items: Sequence[Item],
    pocketd: dict[str, Rankings],
    texts: dict[str, str],
    s: MediaSet,
    encoder: Encoder | None,
    order: list[str],
) -> dict[str, Rankings]:
    """Every row's rankings: pocketd's (given), the afternoon's on `texts`, the trivial one."""
    out = dict(pocketd)
    for name, ranker in Afternoon(s.distractors, texts, encoder).rankers().items():
        out[name] = rank_all(ranker, items)
    out["newest 5"] = {i.id: newest(order) for i in items}
    return out


def scored(
    items: Sequence[Item], rows: dict[str, Rankings], got: dict[str, ReadBack]
) -> dict[str, Any]:
    """Each row's figures per language, the share of answers the read text holds, the states."""
    states: dict[str, int] = {}
    for rb in got.values():
        states[rb.state] = states.get(rb.state, 0) + 1
    answered = {
        lang: [read(i.answer, got[i.id].text) for i in items if i.lang == lang and i.id in got]
        for lang in LANGS
    }
    return {
        "rows": {row: figures(items, r) for row, r in rows.items()},
        "answer_read": {k: sum(v) / len(v) if v else float("nan") for k, v in answered.items()},
        "states": states,
    }


def run_half(
    s: MediaSet, half: str, env: dict[str, str], encoder: Encoder | None, serve: Serve = served
) -> dict[str, Any]:
    """The half's screenshots and notes through one server (see the module's docstring)."""
    shots, notes = shuffled(s.screenshots), shuffled(s.notes)
    log(f"{half}: drawing {len(shots)} screenshots and speaking {len(notes)} notes")
    data = {i.id: media_bytes(i) for i in (*shots, *notes)}
    audio_s = sum(seconds_of(data[i.id]) for i in notes)
    multi = multilingual_env()
    zh: Callable[[Item], str] = lambda i: "zh" if multi and i.lang == "zh" else "en"  # noqa: E731
    out: dict[str, Any] = {"env": {**env, **multi}, "audio_seconds": audio_s}
    with serve({**env, **multi}) as c:
        spaces = {k: Namespace(c, f"{k}-{half}") for k in ("screens", "notes")}
        spaces.update({f"{k}-oracle": Namespace(c, f"{k}-{half}-oracle") for k in spaces})
        spaces["notes-english"] = Namespace(c, f"notes-{half}-english")
        for ns in spaces.values():
            ns.add_texts(s.distractors, "fact")
        log(f"  screenshots: sending {len(shots)}")
        out["screens_ingest"] = ingest(spaces["screens"], shots, data, zh)
        log(f"  screenshots: {out['screens_ingest']}")
        out["notes_ingest"] = ingest(spaces["notes"], notes, data, zh)
        out["notes_ingest"]["queue_rtf"] = out["notes_ingest"]["searchable_s"] / audio_s
        log(f"  notes: {out['notes_ingest']}")
        spaces["notes-english"].add_media(notes, data, lambda i: "")
        spaces["screens-oracle"].add_truths(shots)
        spaces["notes-oracle"].add_truths(notes)
        wait_searchable(c)
        got = {k: spaces[k].read_back() for k in ("screens", "notes", "notes-english")}
        ranked = {k: ns.rank(s.screenshots if k.startswith("screens") else s.notes)
                  for k, ns in spaces.items()}  # fmt: skip
        out["decisions"] = {k: dict(ns.decisions) for k, ns in spaces.items()}
    for k, items in (("screens", s.screenshots), ("notes", s.notes)):
        pocketd = {"pocketd": ranked[k], "oracle": ranked[f"{k}-oracle"]}
        if k == "notes":
            pocketd["pocketd, English model"] = ranked["notes-english"]
        texts = {i: rb.text for i, rb in got[k].items()}
        rows = rows_of(items, pocketd, texts, s, encoder, spaces[k].order)
        out[k] = scored(items, rows, got[k])
        out[k]["rankings"] = rows
        out[k]["texts"] = texts
    out["notes"]["answer_read_english"] = scored(s.notes, {}, got["notes-english"])["answer_read"]
    return out


def speed(s: MediaSet, k: int) -> dict[str, Any]:
    """OCR seconds per image and speech seconds per second of audio, in this process (run it
    while no server works), on `k` screenshots (both languages in turn), `k` English notes
    (Whisper tiny.en) and the Chinese notes (Whisper base, when it is there), after one untimed
    read of each model; one thread each, the server's defaults."""
    from server.adapters.media_decode import PilDecoder
    from server.adapters.rapid_ocr import RapidOcr
    from server.adapters.whisper_speech import WhisperSpeech
    from server.core.media.sniff import sniff
    from server.core.settings import MediaSettings

    m = MediaSettings()
    decode = PilDecoder(m)
    shots = [
        i for pair in zip(*(_of(s.screenshots, lang) for lang in LANGS), strict=False) for i in pair
    ][:k]
    ocr = RapidOcr(m.ocr)
    out: dict[str, Any] = {"ocr_threads": m.ocr.threads, "speech_threads": m.speech.threads}
    times: list[float] = []
    for j, it in enumerate([shots[0], *shots]):
        png = media_bytes(it)
        px = decode.image(png, sniff(png))
        t0 = time.perf_counter()
        ocr.read(px)
        if j:
            times.append(time.perf_counter() - t0)
    out["ocr"] = {
        "n": len(times),
        "p50_s": statistics.median(times),
        "mean_s": statistics.mean(times),
    }
    multi = WHISPER_BASE if (WHISPER_BASE / "model.bin").is_file() else None
    speech = WhisperSpeech(m.speech, ROOT / "models" / "whisper-tiny-en", multi)
    for lang, notes in (("en", _of(s.notes, "en")[:k]), ("zh", _of(s.notes, "zh")[:k])):
        if (lang == "zh" and multi is None) or not notes:
            continue
        took = audio = 0.0
        for j, it in enumerate([notes[0], *notes]):
            wav = media_bytes(it)
            samples = decode.audio(wav, sniff(wav))
            t0 = time.perf_counter()
            speech.transcribe(samples, lang)
            if j:
                took += time.perf_counter() - t0
                audio += seconds_of(wav)
        out[f"speech_{lang}"] = {"n": len(notes), "audio_s": audio, "rtf": took / audio}
    return out


def _of(items: Sequence[Item], lang: str) -> list[Item]:
    return [i for i in items if i.lang == lang]
