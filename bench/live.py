"""Speech-to-screen latency: the shared long reading replayed in real time through the real pipeline.

Each engine configuration runs in a process of its own (so its peak memory and CPU
time are its own), one after the other in one run, on the shared 231 s LJSpeech
reading (``--quick``: its first 60 s). A listener stamps every frame the display
would paint (``CaptionView``) with the wall clock; the source's clock says when
each word was spoken. Per reference sentence (``segments.tsv``):

- **first seen**: the first frame whose text *as shown* (finished lines plus the
  partial line after display-only mask-k) covers the sentence's last word, minus
  the moment that word was spoken. Coverage: the shown words are aligned to the
  reference words (a semi-global edit distance: the shown text against a prefix of
  the reference) and the end of the best alignment is how far the screen reaches;
- **committed**: the same for the finished lines only;
- **translation**: the finished line that holds the sentence's last word (from an
  alignment of the final transcript) gets its final translation, minus the moment
  the word was spoken (``translation``) and minus the moment that line was
  committed (``translation_after_commit``).

Plus WER of the final transcript, CPU-seconds per audio-second, update interval
(time between frames whose source text changed), peak RSS, and NE of source and
translation as computed by the pipeline.

Usage: sotto bench live [--quick] [--configs a,b] [--repeats N] [--target de] [--set KEY=VALUE] [--json FILE]
                        [--plot PNG] [--write-docs] [--from-json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
READING = SHARED / "asr_long" / "ljspeech_LJ001-0001_to_0032_concat_16k.flac"
DOCS = ROOT / "docs" / "BENCHMARKS.md"
BEGIN, END = "<!-- live:begin -->", "<!-- live:end -->"
QUICK_S = 60.0
_QT: list = []  # the plot's Qt application, kept alive

# name -> settings changes on top of the defaults; translation "none" = source captions only
CONFIGURATIONS: dict[str, dict[str, object]] = {
    # the app as installed: every setting at its default, whatever the defaults are at the time
    "default": {},
    "faster-whisper tiny.en + translation": {"asr.engine": "faster-whisper", "asr.verify_lines": False},
    # the larger model alone, as the app runs a model (int8, the encoder rule, one pass): what a
    # verifier costs and hears when it decodes every update
    "faster-whisper base + translation": {"asr.engine": "faster-whisper", "asr.verify_lines": False,
                                          "asr.model": "whisper-base"},
    # tiny.en alone with its window trimmed at a line end beyond 5 s, as the default's drafter reads it
    # (core.asr.verified.VerifyOptions.drafter_trim_s): what those shorter windows do to tiny.en unverified
    "faster-whisper tiny.en + translation (window trimmed at 5 s)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False, "asr.buffer_trim_s": 5.0,
    },
    # tiny.en streams, base decodes each finished line again and its words are committed (core.asr.verified)
    "tiny.en verified by base + translation": {"asr.engine": "faster-whisper", "asr.verify_lines": True},
    # a pause commits the words before it (asr.pause_commit, off by default: see StreamingOptions)
    "faster-whisper tiny.en + translation (pause commit)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False, "asr.pause_commit": True,
    },
    # the default before the line was shown whole when the speaker pauses (captions.show_at_pause)
    "faster-whisper tiny.en + translation (masked at pauses)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False,
        "captions.show_at_pause": False,
    },
    # the source's unconfirmed words masked by count (the last mask_k), as before captions.source_mask "heard"
    "faster-whisper tiny.en + translation (source mask-3)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False,
        "captions.source_mask": "words",
    },
    # recognition may take 75% of the time while translating instead of 60% (pipeline.ASR_SHARE_TRANSLATING)
    "faster-whisper tiny.en + translation (speech share 0.75)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False,
        "pipeline.asr_share": 0.75,
    },
    # the default before asr.compute_dtype auto chose int8 on the CPU
    "faster-whisper tiny.en float32 + translation": {"asr.engine": "faster-whisper", "asr.verify_lines": False,
                                                     "asr.compute_dtype": "float32"},
    # the default before the encoder read the window plus padding (asr.encoder_seconds 10) instead of 30 s
    "faster-whisper tiny.en + translation (30 s encoder)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False,
        "asr.encoder_seconds": 30.0,
    },
    # the translator's settings before issue #31: β 0.2 (the unfinished line's draft checked token by
    # token), unfinished lines given 0.3 of the translator's time, and every core decoding each token
    # (translation.n_threads 0 then meant all cores for every call; this entry is that on 2 cores)
    "faster-whisper tiny.en + translation (before #31)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False,
        "translation.beta": 0.2, "translation.partial_share": 0.3, "translation.n_threads": 2,
    },
    # unfinished lines translated in at most this share of the translator's time (translation.partial_share)
    "faster-whisper tiny.en + translation (partial share 0.5)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False,
        "translation.partial_share": 0.5,
    },
    # the default before translation.partial_share 0.3: the unfinished line re-translated whenever the
    # translator is free
    "faster-whisper tiny.en + translation (partials whenever free)": {
        "asr.engine": "faster-whisper", "asr.verify_lines": False,
        "translation.partial_share": 1.0,
    },
    "faster-whisper tiny.en": {"asr.engine": "faster-whisper", "asr.verify_lines": False, "translation.target": "none"},
    "speculative tiny.en→base + translation": {"asr.engine": "speculative"},
    "speculative tiny.en→base": {"asr.engine": "speculative", "translation.target": "none"},
    # the speculative engine's encoders reading the window plus 2 s, at least 10 s (not its default)
    "speculative tiny.en→base (10 s encoder)": {
        "asr.engine": "speculative",
        "translation.target": "none",
        "asr.speculative_encoder_seconds": 10.0,
    },
    # the speculative engine's verifier run by faster-whisper as the app runs it: the fair baseline of
    # "faster than faster-whisper" (its transcript is base's, like the speculative engine's)
    "faster-whisper base": {"asr.engine": "faster-whisper", "asr.verify_lines": False, "asr.model": "whisper-base",
                            "translation.target": "none"},
}

_WORD = re.compile(r"[\w']+")


def words_of(text: str) -> list[str]:
    """Lower-case words without punctuation (the unit of alignment)."""
    return [w.strip("'") for w in _WORD.findall(text.lower()) if w.strip("'")]


# -- alignment -------------------------------------------------------------------------------
def coverage(hyp: list[str], ref: list[str]) -> int:
    """How many reference words the hypothesis reaches: the end of the best alignment of all of
    ``hyp`` against a prefix of ``ref`` (edit distance; among ties the nearest end: a shown word
    is not counted as a later reference word when it could as well be an extra word)."""
    if not hyp:
        return 0
    ref_arr = np.array(ref, dtype=object)
    m = len(ref)
    idx = np.arange(m + 1)
    prev = idx.astype(np.int64)  # row 0: deleting the first j reference words
    for i, word in enumerate(hyp, 1):
        sub = prev[:-1] + (ref_arr != word)
        best = np.empty(m + 1, dtype=np.int64)
        best[0] = i
        best[1:] = np.minimum(sub, prev[1:] + 1)
        # deletions of reference words along the row: best[j] = min_k (best[k] + j - k)
        best = np.minimum.accumulate(best - idx) + idx
        prev = best
    return int(np.argmin(prev))


def align_pairs(hyp: list[str], ref: list[str]) -> list[int]:
    """For each reference word, the hypothesis word aligned to it (matched or substituted), or
    the last hypothesis word before it when it was deleted (-1 before any); a global alignment."""
    n, m = len(hyp), len(ref)
    d = np.zeros((n + 1, m + 1), dtype=np.int32)
    d[:, 0] = np.arange(n + 1)
    d[0, :] = np.arange(m + 1)
    ref_arr = np.array(ref, dtype=object)
    for i in range(1, n + 1):
        sub = d[i - 1, :-1] + (ref_arr != hyp[i - 1])
        row = np.empty(m + 1, dtype=np.int64)
        row[0] = i
        row[1:] = np.minimum(sub, d[i - 1, 1:] + 1)
        idx = np.arange(m + 1)
        d[i] = np.minimum.accumulate(row - idx) + idx
    out = [-1] * m
    i, j = n, m
    while i > 0 and j > 0:
        if d[i, j] == d[i - 1, j - 1] + (hyp[i - 1] != ref[j - 1]):
            out[j - 1] = i - 1
            i, j = i - 1, j - 1
        elif d[i, j] == d[i, j - 1] + 1:
            j -= 1
        else:
            i -= 1
    last = -1
    for j in range(m):  # deleted reference words: the hypothesis word before them
        if out[j] < 0:
            out[j] = last
        last = out[j]
    return out


# -- one configuration (in its own process) --------------------------------------------------
@dataclass
class Frame:
    """One painted frame: when, the finished lines' texts, the partial line as shown, translations."""

    wall: float
    lines: list[str]
    partial: str
    translated: set[int]  # the finished lines that have their final translation


class _Recorder:
    def __init__(self) -> None:
        self.frames: list[Frame] = []

    def on_view(self, view) -> None:
        now = time.monotonic()
        lines = [line.sentence.text for line in view.lines]
        translated = {i for i, line in enumerate(view.lines) if line.translation is not None}
        self.frames.append(Frame(now, lines, view.partial.shown_source, translated))

    def on_progress(self, progress) -> None:
        pass

    def on_message(self, level: str, text: str) -> None:
        print(f"  [{level}] {text}", file=sys.stderr)


def _segments(seconds: float | None) -> list[tuple[float, float, str]]:
    rows = []
    for line in READING.with_name(READING.name.replace(".flac", ".segments.tsv")).read_text().splitlines()[1:]:
        _id, start, end, _src, text = line.split("\t")
        if seconds is None or float(end) <= seconds:
            rows.append((float(start), float(end), text))
    return rows


def run_one(name: str, quick: bool, target: str, overrides: list[str] = ()) -> dict:
    """Caption the reading in real time with configuration ``name``; the measurements."""
    from core.audio.decode import SAMPLE_RATE
    from core.audio.sources import FileSource
    from core.captions import normalize_english, word_error_rate

    class _TimedSource(FileSource):
        """The file in real time, remembering when its clock started: audio time 0 was spoken then."""

        started_at = 0.0

        def start(self) -> None:
            super().start()
            self.started_at = time.monotonic()

    from core.models import ModelStore
    from core.session.engines import create_asr_engine, create_translator
    from core.session.pipeline import CaptionPipeline
    from core.settings import Settings

    settings = Settings().with_value("translation.target", target)
    for key, value in CONFIGURATIONS[name].items():
        if key == "pipeline.asr_share":  # a constant of the pipeline, not a setting: measured here
            import core.session.pipeline as pipeline_module

            pipeline_module.ASR_SHARE_TRANSLATING = float(value)
            continue
        settings = settings.with_value(key, value)
    for item in overrides:  # --set KEY=VALUE, on top of every configuration
        key, _, value = item.partition("=")
        settings = settings.with_value(key, value)
    store = ModelStore()
    asr = create_asr_engine(settings, store)
    translator = create_translator(settings, store)
    seconds = QUICK_S if quick else None
    source = _TimedSource(READING, realtime=True)
    segments = _segments(seconds)
    if seconds is not None:  # up to the end of the last whole sentence (and its pause)
        source.audio = source.audio[: int((segments[-1][1] + 0.3) * SAMPLE_RATE)]
    recorder = _Recorder()
    pipeline = CaptionPipeline(settings, asr, translator, recorder, realtime=True)
    cpu0 = time.process_time()
    summary = pipeline.run(source).to_dict()
    cpu = time.process_time() - cpu0
    if translator is not None:
        translator.close()
    segments = [(start, _speech_end(source.audio, start, end), text) for start, end, text in segments]
    return _measure(name, recorder.frames, source.started_at, segments, summary, cpu,
                    normalize_english, word_error_rate, translating=translator is not None)


def _speech_end(audio: np.ndarray, start: float, end: float, rate: int = 16000) -> float:
    """When the sentence's last word ends: the last 10 ms frame of [start, end] louder than 5% of
    the sentence's loudest frame (the segment times include the recording's trailing silence)."""
    piece = audio[int(start * rate):int(end * rate)]
    frames = piece[: len(piece) // 160 * 160].reshape(-1, 160)
    if not frames.size:
        return end
    rms = np.sqrt((frames ** 2).mean(axis=1))
    loud = np.nonzero(rms > max(0.01, 0.05 * rms.max()))[0]
    return start + (loud[-1] + 1) / 100 if loud.size else end


def _measure(name, frames, spoken_at, segments, summary, cpu, normalize, wer_of, translating) -> dict:
    ref_words: list[str] = []
    last_word: list[int] = []  # index (exclusive end) of each sentence's last word
    for _s, _e, text in segments:
        ref_words += words_of(text)
        last_word.append(len(ref_words))
    spoken = [spoken_at + end for _s, end, _t in segments]

    first_seen: list[float | None] = [None] * len(segments)
    committed: list[float | None] = [None] * len(segments)
    shown_prev = committed_prev = None
    update_times = []
    for frame in frames:
        shown = " ".join(frame.lines + [frame.partial])
        if shown != shown_prev:
            update_times.append(frame.wall)
            reach = coverage(words_of(shown), ref_words)
            for k, end in enumerate(last_word):
                if first_seen[k] is None and reach >= end:
                    first_seen[k] = frame.wall - spoken[k]
            shown_prev = shown
        done = " ".join(frame.lines)
        if done != committed_prev:
            reach = coverage(words_of(done), ref_words)
            for k, end in enumerate(last_word):
                if committed[k] is None and reach >= end:
                    committed[k] = frame.wall - spoken[k]
            committed_prev = done

    final = frames[-1] if frames else Frame(0.0, [], "", set())
    hyp_words, word_line = [], []
    for li, text in enumerate(final.lines):
        for w in words_of(text):
            hyp_words.append(w)
            word_line.append(li)
    pairs = align_pairs(hyp_words, ref_words) if hyp_words else [-1] * len(ref_words)
    translation: list[float | None] = [None] * len(segments)
    after_commit: list[float | None] = [None] * len(segments)
    if translating:
        line_committed: dict[int, float] = {}
        line_translated: dict[int, float] = {}
        for frame in frames:
            for li in range(len(frame.lines)):
                line_committed.setdefault(li, frame.wall)
            for li in frame.translated:
                line_translated.setdefault(li, frame.wall)
        for k, end in enumerate(last_word):
            h = pairs[end - 1]
            if h < 0:
                continue
            li = word_line[h]
            if li in line_translated:
                translation[k] = line_translated[li] - spoken[k]
                after_commit[k] = line_translated[li] - line_committed[li]

    reference = " ".join(t for _s, _e, t in segments)
    hypothesis = " ".join(final.lines + [final.partial])
    wer = wer_of(normalize(reference), normalize(hypothesis))
    gaps = np.diff(update_times) if len(update_times) > 1 else np.array([])
    ne = summary.get("normalized_erasure") or {}
    audio = summary["audio_seconds"]

    def pct(values, q):
        got = [v for v in values if v is not None]
        return round(float(np.percentile(got, q)), 3) if got else None

    # the reading's clips end where a sentence does, or inside one ("… an exact imitation | of the more formal
    # …"): a finished sentence's latencies apart, since a clip ending mid-sentence waits for its line to end
    from core.text import ends_sentence

    ends = [ends_sentence(text) for _s, _e, text in segments]

    def at_ends(values):
        return [v for v, end in zip(values, ends, strict=True) if end]

    return {
        "name": name,
        "audio_seconds": audio,
        "sentences": len(segments),
        "first_seen_p50": pct(first_seen, 50), "first_seen_p90": pct(first_seen, 90),
        "first_seen_max": pct(first_seen, 100),
        "committed_p50": pct(committed, 50), "committed_p90": pct(committed, 90),
        "translation_p50": pct(translation, 50), "translation_p90": pct(translation, 90),
        "translation_after_commit_p50": pct(after_commit, 50),
        "translation_after_commit_p90": pct(after_commit, 90),
        "sentence_ends": sum(ends),
        "committed_sentence_end_p90": pct(at_ends(committed), 90),
        "translation_sentence_end_p50": pct(at_ends(translation), 50),
        "translation_sentence_end_p90": pct(at_ends(translation), 90),
        "missing": {"first_seen": first_seen.count(None), "committed": committed.count(None),
                    "translation": translation.count(None) if translating else None},
        "cpu_per_audio_s": round(cpu / audio, 3) if audio else None,
        "wer": round(wer, 4),
        "transcript": hypothesis,  # what the WER was computed from: each round's is kept, to look into outliers
        "update_interval_p50": round(float(np.median(gaps)), 3) if gaps.size else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "ne_source": ne.get("ne_source_output"),
        "ne_translation": ne.get("ne_translation_output"),
        "ne_source_shown": ne.get("ne_source_display"),
        "ne_source_shown_lines": ne.get("ne_source_display_lines"),
        "ne_translation_shown": ne.get("ne_translation_display"),
        "decodes": summary["asr"]["decodes"],
        "max_window_s": summary["asr"]["max_window_seconds"],
        "fell_behind": summary.get("fell_behind"),
        "lines": summary["sentences"],
        "stage_seconds": summary["stage_seconds"],
        "translation_calls": (summary.get("translation") or {}).get("calls"),
        "dropped_partials": (summary.get("translation") or {}).get("dropped_partials"),
        "preempted_partials": (summary.get("translation") or {}).get("preempted_partials"),
        "verifier_lines": {k: (summary.get("asr") or {}).get(f"{k}_lines")
                           for k in ("verified", "unverified", "merged", "carried", "rechecked", "dropped")},
        "sentence_wait_p50": (summary.get("translation") or {}).get("sentence_wait_p50"),
        "sentence_wait_p90": (summary.get("translation") or {}).get("sentence_wait_p90"),
        "per_sentence": {"end_s": [round(e, 2) for _s, e, _t in segments], "first_seen": _r(first_seen),
                         "committed": _r(committed), "translation": _r(translation)},
    }


def _r(values):
    return [None if v is None else round(v, 3) for v in values]


# -- the run -------------------------------------------------------------------------------
# the readings a repeated run reports as the median of the runs, with their spread (min, max)
SPREAD_KEYS = ("first_seen_p50", "first_seen_p90", "committed_p50", "committed_p90", "translation_p50",
               "translation_p90", "translation_after_commit_p50", "committed_sentence_end_p90",
               "translation_sentence_end_p50", "translation_sentence_end_p90", "update_interval_p50",
               "cpu_per_audio_s", "wer", "peak_rss_mb", "ne_source", "ne_translation", "ne_source_shown",
               "ne_source_shown_lines", "ne_translation_shown")


def combine(runs: list[dict]) -> dict:
    """Several runs of one configuration: the median of each reading, ``spread`` (min, max) beside
    it, every run's readings and final transcript kept under ``runs``; the per-sentence latencies are
    the median run's (by first seen)."""
    if len(runs) == 1:
        return runs[0]
    ordered = sorted(runs, key=lambda r: (r["first_seen_p50"] is None, r["first_seen_p50"] or 0.0))
    out = dict(ordered[(len(ordered) - 1) // 2])
    out["spread"] = {}
    for key in SPREAD_KEYS:
        values = [r.get(key) for r in runs if r.get(key) is not None]
        if values:
            out[key] = round(float(np.median(values)), 4)
            out["spread"][key] = [min(values), max(values)]
    out["runs"] = [{**{k: r.get(k) for k in SPREAD_KEYS}, "transcript": r.get("transcript")} for r in runs]
    return out


def run(quick: bool, configs: list[str], target: str, overrides: list[str] = (), repeats: int = 1) -> dict:
    """Every configuration in its own process, one after the other (``repeats`` rounds, interleaved:
    a slow moment of the machine hits every configuration alike); the combined results."""
    runs: dict[str, list[dict]] = {name: [] for name in configs}
    for round_ in range(repeats):
        for name in configs:
            print(f"{name}: replaying {'60 s' if quick else 'the whole reading'} in real time"
                  f"{f' (round {round_ + 1} of {repeats})' if repeats > 1 else ''}…", file=sys.stderr)
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "one.json"
                cmd = [sys.executable, "-m", "bench.live", "--one", name, "--target", target, "--json", str(out)]
                if quick:
                    cmd.append("--quick")
                for item in overrides:
                    cmd += ["--set", item]
                subprocess.run(cmd, cwd=ROOT, check=True)
                r = json.loads(out.read_text())
            runs[name].append(r)
            print(f"  first seen p50 {r['first_seen_p50']} s, p90 {r['first_seen_p90']} s; committed p50 "
                  f"{r['committed_p50']} s; translation p50 {r['translation_p50']} s; "
                  f"{r['cpu_per_audio_s']} CPU-s/audio-s; WER {r['wer']}; NE shown source "
                  f"{r.get('ne_source_shown')} (per line {r.get('ne_source_shown_lines')})", file=sys.stderr)
    results = {name: combine(rs) for name, rs in runs.items()}
    from core.settings import Settings

    # the app out of the box: "default" itself, else the default engine translating (None when neither ran)
    default = "default" if "default" in configs else next(
        (n for n in configs if CONFIGURATIONS[n].get("asr.engine") == Settings().asr.engine
         and CONFIGURATIONS[n].get("asr.verify_lines") == Settings().asr.verify_lines
         and set(CONFIGURATIONS[n]) == {"asr.engine", "asr.verify_lines"}), None)
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "recording": READING.name, "quick": quick, "target": target, "date": time.strftime("%Y-%m-%d"),
        "default": default, "overrides": list(overrides), "repeats": repeats, "configurations": results,
    }


def table(result: dict) -> str:
    """The Markdown table of a run."""
    rows = ["| configuration | first seen p50 / p90 (s) | committed p50 / p90 (s) | translation p50 / p90 (s) "
            "| translation after commit p50 (s) | sentence ends: committed p90, translation p50 / p90 (s) "
            "| update interval p50 (s) | CPU-s per audio-s | WER | peak RSS (MB) "
            "| NE source / translation | NE shown source / translation | NE shown source per line |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def f(r, key, fmt="{:.2f}"):
        v = r.get(key)
        if v is None:
            return "–"
        low_high = (r.get("spread") or {}).get(key)
        text = fmt.format(v)
        return f"{text} ({fmt.format(low_high[0])}–{fmt.format(low_high[1])})" if low_high else text

    for name, r in result["configurations"].items():
        mark = " (default)" if name == result["default"] and name != "default" else ""
        rows.append(
            f"| {name}{mark} | {f(r, 'first_seen_p50')} / {f(r, 'first_seen_p90')} | {f(r, 'committed_p50')} / "
            f"{f(r, 'committed_p90')} | {f(r, 'translation_p50')} / {f(r, 'translation_p90')} | "
            f"{f(r, 'translation_after_commit_p50')} | {f(r, 'committed_sentence_end_p90')}, "
            f"{f(r, 'translation_sentence_end_p50')} / {f(r, 'translation_sentence_end_p90')} | "
            f"{f(r, 'update_interval_p50')} | {f(r, 'cpu_per_audio_s')} | "
            f"{f(r, 'wer', '{:.1%}')} | {f(r, 'peak_rss_mb', '{:.0f}')} | {f(r, 'ne_source')} / "
            f"{f(r, 'ne_translation')} | {f(r, 'ne_source_shown', '{:.3f}')} / {f(r, 'ne_translation_shown')} | "
            f"{f(r, 'ne_source_shown_lines', '{:.3f}')} |")
    return "\n".join(rows)


def plot(result: dict, path: Path) -> None:
    """Latency per sentence over the reading, one line per configuration: the source first seen
    (left) and the finished sentence's translation on screen (right). Painted with Qt (offscreen)."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen

    if QGuiApplication.instance() is None:  # text needs a (offscreen) GUI application
        _QT.append(QGuiApplication([]))
    configs = result["configurations"]
    width, panel_h, margin = 1400, 400, 60
    height = 40 + panel_h + 50 + 18 * len(configs) + 10
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setFont(QFont("DejaVu Sans", 10))
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    ends = max((max(r["per_sentence"]["end_s"]) for r in configs.values()), default=1.0)
    values = [v for r in configs.values() for key in ("first_seen", "translation")
              for v in r["per_sentence"][key] if v is not None]
    top = max(2.0, float(np.ceil(max(values, default=2.0))))
    panel_w = (width - 3 * margin) / 2
    for k, (key, title) in enumerate((("first_seen", "source: first seen on screen"),
                                      ("translation", "translation of the finished sentence on screen"))):
        box = QRectF(margin + k * (panel_w + margin), 40, panel_w, panel_h)
        p.setPen(QPen(QColor("#888"), 1))
        p.drawRect(box)
        p.setPen(QColor("black"))
        p.drawText(QRectF(box.left(), 10, box.width(), 24), Qt.AlignmentFlag.AlignCenter, title)
        for tick in range(0, int(top) + 1, max(1, int(top) // 8)):
            y = box.bottom() - tick / top * box.height()
            p.setPen(QPen(QColor("#ddd"), 1))
            p.drawLine(QPointF(box.left(), y), QPointF(box.right(), y))
            p.setPen(QColor("black"))
            p.drawText(QRectF(box.left() - 40, y - 8, 35, 16), Qt.AlignmentFlag.AlignRight, f"{tick} s")
        for tick in range(0, int(ends) + 1, 30):
            x = box.left() + tick / ends * box.width()
            p.drawText(QRectF(x - 30, box.bottom() + 4, 60, 16), Qt.AlignmentFlag.AlignCenter, f"{tick}")
        p.drawText(QRectF(box.left(), box.bottom() + 22, box.width(), 16), Qt.AlignmentFlag.AlignCenter,
                   "end of the sentence in the reading (s)")
        for c, r in enumerate(configs.values()):
            ps = r["per_sentence"]
            pts = [QPointF(box.left() + e / ends * box.width(), box.bottom() - min(v, top) / top * box.height())
                   for e, v in zip(ps["end_s"], ps[key], strict=True) if v is not None]
            if not pts:
                continue
            p.setPen(QPen(QColor(colours[c % len(colours)]), 2))
            p.drawPolyline(pts)
            for pt in pts:
                p.drawEllipse(pt, 2.5, 2.5)
    for c, name in enumerate(configs):  # legend
        y = 40 + panel_h + 60 + 18 * c
        p.setPen(QPen(QColor(colours[c % len(colours)]), 3))
        p.drawLine(QPointF(margin, y - 5), QPointF(margin + 25, y - 5))
        p.setPen(QColor("black"))
        p.drawText(QPointF(margin + 32, y), name)
    p.end()
    image.save(str(path))


def write_docs(result: dict, command: str) -> None:
    """Replace the live section of docs/BENCHMARKS.md."""
    from .docs import write_section

    write_section(BEGIN, END, f"`{command}` — {result['recording']}{' (first 60 s)' if result['quick'] else ''}, "
                  f"target {result['target']}, {result['machine']}, {result['date']}.\n\n{table(result)}",
                  "## Live latency: speech to screen (`sotto bench live`)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench live", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_S:.0f} s of the reading")
    parser.add_argument("--configs", help="comma-separated configuration names (default: all)")
    parser.add_argument("--target", default="de")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--plot", help="write the per-sentence latency plot (PNG) here")
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds over the configurations, interleaved (median and min–max spread)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every configuration (e.g. asr.min_chunk_s=0.5)")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--from-json", help="table, plot and docs from an earlier --json file (no run)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        result = run_one(args.one, args.quick, args.target, args.set)
        Path(args.json).write_text(json.dumps(result), encoding="utf-8")
        return 0
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else list(CONFIGURATIONS)
    unknown = [c for c in configs if c not in CONFIGURATIONS]
    if unknown:
        parser.error(f"unknown configuration {unknown[0]!r}; choose from: {', '.join(CONFIGURATIONS)}")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
    else:
        result = run(args.quick, configs, args.target, args.set, max(1, args.repeats))
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    if args.plot:
        plot(result, Path(args.plot))
    if args.write_docs:
        repeats = result.get("repeats", 1)
        names = ",".join(result["configurations"])
        write_docs(result, "sotto bench live" + (" --quick" if result["quick"] else "")
                   + (f" --repeats {repeats}" if repeats > 1 else "")
                   + (f' --configs "{names}"' if list(result["configurations"]) != list(CONFIGURATIONS) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
