"""`sotto bench meeting`: where the default live path loses words on real conversation (issue #48).

Each recording (the shared spontaneous clips ``../shared/data/asr/mfa_*``, and the recordings of a
data folder: ``--data DIR``, by default ``../shared/data/gathered`` (real telephone calls gathered from
public repositories, kept in the shared folder with their sources and licences, never in the project)
where it has a ``manifest.tsv``, the rows of ``--split``) goes through:

- **the default live path**: the app's settings as installed (tiny.en streams, base verifies each
  finished line, German translation), through the real :class:`~core.session.pipeline.CaptionPipeline`.
  Fast mode by default (0.5 s chunks, every step in order: deterministic); ``--realtime`` replays the
  file in real time, ``--rounds N`` times; ``--chunks 0.4,0.5,0.6`` runs fast mode once per chunk size
  (where decodes end moves the line cuts, and with them the words) and reports each size's WER per
  split, their mean and their spread;
- **offline greedy decoding** of each bundled model (the drafter and the verifier, int8 and the encoder
  rule as the app's engine runs them), one call per piece of at most 30 s (cut at the quietest 0.1 s
  between 20 and 30 s, as ``sotto bench asr`` cuts).

Per recording and configuration: WER with substitutions, deletions and insertions apart, words out
against reference words, CPU-s per audio-s (live: the whole process, translation included), and for
the live path first-seen and committed latency per reference word (fast mode: audio seconds received
when the word was shown, minus its end in the offline decode; real time: wall seconds after it was
spoken). Both sides are normalised by Whisper's English normaliser (transformers'), fillers (um, uh,
mm-hmm …) out, "gonna" = "going to".

**Loss attribution.** A word offline decoding reliably hears is a reference word that *both* offline
decodes align to as correct; one the committed live text lacks (deleted or substituted) is lost, and
is put down to the first of these that holds:

- ``dropped_line``: the drafter heard it, in a line the verifier dropped (``LineVerifier.dropped``);
- ``verifier_cut``: the drafter heard it in a line, and the verified line lacks it (``select_line``'s
  cut, or the verifier heard it otherwise);
- ``vad_silence``: its audio (the offline decode's word times) lies outside every VAD speech segment
  (from its start less the transcriber's pre-roll to its end);
- ``never_committed``: a drafter decode had it (within 1 s of its time), and no drafter line did
  (LocalAgreement never agreed, or the window was trimmed past it);
- ``other``: no drafter decode ever heard it.

Stretches committed twice: a run of 4 or more committed words that occurs again in the committed text
and at most once in the reference. The drafter's own lines (every line it finished, dropped ones too)
are scored the same way, so a repeat or an insertion can be put down to the drafter or the verifier;
each live row's ``line_log`` holds every verification (the drafter's line, the audio decoded, the
verifier's words with their start times, the kept range), and ``collapsed_lines`` counts the
verified lines with three or more consecutive words at one start time (how Whisper times a phrase it
repeats at the end of a window).

In fast mode the committed text does not depend on translation (it runs inline, after each update),
so ``--target none`` gives the same words and attribution in less time; CPU-s per audio-s then lacks
the translator's share.

Usage: sotto bench meeting [--data DIR] [--split tune|heldout|all] [--no-shared] [--only NAME,...]
                           [--realtime] [--rounds N] [--target de|none] [--unverified] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from pathlib import Path

import numpy as np

from bench.machine import describe
from bench.output import report

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DATA = SHARED / "gathered"
AUDIO_SUFFIXES = (".flac", ".wav", ".ogg", ".mp3")
LOSS_KINDS = ("dropped_line", "verifier_cut", "vad_silence", "never_committed", "other")
REPEAT_N = 4  # a stretch committed twice: at least this many words
NEAR_S = 1.0  # a drafter decode's word counts as the reference word's within this many seconds


# -- recordings ------------------------------------------------------------------------------
@dataclass
class Recording:
    name: str
    path: Path
    reference: str
    split: str  # "shared" for the shared clips, else the manifest's split


def _reference_text(path: Path) -> str:
    """A transcript file's text in order: plain lines, or tab-separated rows whose last field is the text."""
    lines = [line.split("\t")[-1].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return " ".join(line for line in lines if line)


def data_recordings(folder: Path, split: str) -> list[Recording]:
    """The audio rows of ``folder``'s manifest.tsv in ``split`` ("all": tune and heldout) that have a transcript
    (other rows, such as the Spanish speech of ``lang/``, are not conversation in English)."""
    manifest = folder / "manifest.tsv"
    with manifest.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    out = []
    for row in rows:
        name = row.get("file") or row.get("name") or row.get("path") or next(iter(row.values()), "")
        path = folder / name
        if path.suffix not in AUDIO_SUFFIXES or not path.is_file():
            continue
        row_split = (row.get("split") or "").strip()
        reference = path.with_suffix(".txt")
        if (row_split == split or (split == "all" and row_split in ("tune", "heldout"))) and reference.is_file():
            out.append(Recording(path.stem, path, _reference_text(reference), row_split))
    return out


def shared_recordings() -> list[Recording]:
    """The shared spontaneous clips (mfa_*)."""
    clips = sorted(p for p in (SHARED / "asr").glob("mfa_*") if p.suffix in AUDIO_SUFFIXES)
    return [Recording(p.stem, p, _reference_text(p.with_suffix(".txt")), "shared") for p in clips]


# -- scoring ---------------------------------------------------------------------------------
_NORMALIZER: list = []
_FILLERS = re.compile(r"\b(?:mm-hmm|um+|uh+|uhm+|erm+|hmm+|mm+|mhm+)\b")


def normalise(text: str) -> list[str]:
    """Words as scored: Whisper's English normaliser (without its British-to-American spelling table,
    which ships with the tokenizer files, not here), fillers out, "gonna" = "going to"."""
    if not _NORMALIZER:
        try:
            from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

            _NORMALIZER.append(EnglishTextNormalizer({}))
        except ImportError:  # the app's own normaliser where transformers is missing
            from core.captions import normalize_english

            _NORMALIZER.append(normalize_english)
    text = _FILLERS.sub(" ", text.lower().replace("’", "'"))
    text = re.sub(r"\bgonna\b", "going to", text)
    return _FILLERS.sub(" ", _NORMALIZER[0](text)).split()


@dataclass
class Alignment:
    """A word alignment of a hypothesis to a reference: per reference word its op ("C" correct, "S"
    substituted, "D" deleted) and the hypothesis word aligned to it (-1 when deleted); the inserted
    hypothesis words."""

    ops: list[str]
    hyp_of: list[int]
    inserted: list[int]

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(self.ops)
        return {"sub": c["S"], "del": c["D"], "ins": len(self.inserted)}


def align(ref: list[str], hyp: list[str]) -> Alignment:
    """Levenshtein alignment of word lists (ties: a match or substitution before a deletion before an insertion)."""
    n, m = len(ref), len(hyp)
    d = np.zeros((n + 1, m + 1), dtype=np.int32)
    d[0, :] = np.arange(m + 1)
    hyp_arr = np.array(hyp, dtype=object)
    idx = np.arange(m + 1)
    for i in range(1, n + 1):
        row = np.empty(m + 1, dtype=np.int64)
        row[0] = i
        row[1:] = np.minimum(d[i - 1, :-1] + (hyp_arr != ref[i - 1]), d[i - 1, 1:] + 1)
        d[i] = np.minimum.accumulate(row - idx) + idx  # insertions along the row
    ops, hyp_of, inserted = [""] * n, [-1] * n, []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and d[i, j] == d[i - 1, j - 1] + (ref[i - 1] != hyp[j - 1]):
            ops[i - 1] = "C" if ref[i - 1] == hyp[j - 1] else "S"
            hyp_of[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif i > 0 and d[i, j] == d[i - 1, j] + 1:
            ops[i - 1] = "D"
            i -= 1
        else:
            inserted.append(j - 1)
            j -= 1
    return Alignment(ops, hyp_of, inserted[::-1])


def score(ref: list[str], hyp: list[str]) -> dict:
    """WER and its parts of normalised word lists."""
    counts = align(ref, hyp).counts
    errors = counts["sub"] + counts["del"] + counts["ins"]
    return {"ref_words": len(ref), "words_out": len(hyp), **counts,
            "wer": round(errors / len(ref), 4) if ref else None}


# -- loss attribution ------------------------------------------------------------------------
@dataclass
class TimedToken:
    """A normalised word of a timed decode (a decoded word may give several, or none)."""

    text: str
    start: float
    end: float


def timed_tokens(words) -> list[TimedToken]:
    """Each decoded word (``.text``, ``.start``, ``.end``, stream seconds) normalised on its own."""
    return [TimedToken(t, w.start, w.end) for w in words for t in normalise(w.text)]


@dataclass
class LiveTrace:
    """What the live path did with one recording, as the loss attribution reads it."""

    committed: list[str]  # the committed text, normalised
    drafter_lines: list[tuple[list[str], bool]]  # each drafter line (normalised) in order, and whether it was dropped
    speech: list[tuple[float, float]]  # VAD speech segments (stream seconds)
    decoded: list[TimedToken]  # every word of every drafter decode
    pre_roll_s: float = 0.4


@dataclass
class Loss:
    """A reference word both offline decodes hear that the committed text lacks."""

    index: int
    word: str
    time: float  # its middle in the first offline decode
    kind: str  # one of LOSS_KINDS
    live: str  # "S" (committed as another word) or "D" (not committed)


def reliable(ref: list[str], offline: list[list[TimedToken]]) -> dict[int, TimedToken]:
    """The reference words every offline decode aligns to as correct, with the first decode's timed word."""
    alignments = [align(ref, [t.text for t in tokens]) for tokens in offline]
    if not alignments:
        return {}
    return {j: offline[0][alignments[0].hyp_of[j]] for j in range(len(ref))
            if all(a.ops[j] == "C" for a in alignments)}


def classify_losses(ref: list[str], offline: list[list[TimedToken]], trace: LiveTrace) -> list[Loss]:
    """The reliably heard words the committed text lacks, each with where it went (see the module doc)."""
    heard = reliable(ref, offline)
    live = align(ref, trace.committed)
    drafted, line_of = [], []
    for k, (words, _dropped) in enumerate(trace.drafter_lines):
        drafted += words
        line_of += [k] * len(words)
    drafter = align(ref, drafted)
    losses = []
    for j, token in sorted(heard.items()):
        if live.ops[j] == "C":
            continue
        mid = (token.start + token.end) / 2
        if drafter.ops[j] == "C":
            kind = "dropped_line" if trace.drafter_lines[line_of[drafter.hyp_of[j]]][1] else "verifier_cut"
        elif not any(s - trace.pre_roll_s <= token.end and token.start <= e for s, e in trace.speech):
            kind = "vad_silence"
        elif any(t.text == ref[j] and abs((t.start + t.end) / 2 - mid) <= NEAR_S for t in trace.decoded):
            kind = "never_committed"
        else:
            kind = "other"
        losses.append(Loss(j, ref[j], round(mid, 2), kind, live.ops[j]))
    return losses


def repeated_stretches(committed: list[str], ref: list[str], n: int = REPEAT_N,
                       spans: list[tuple[float, float]] | None = None) -> list[str]:
    """Stretches of the committed words that repeat an earlier run of ``n`` or more of them (the
    earlier run ending before the repeat begins: "words words words words words" is not a run said
    twice), where that run occurs at most once in the reference: each stretch's words.

    With ``spans`` (each committed word's line, start and end in stream seconds) a repeat in a line of
    its own counts only where it has no audio of its own: its line overlaps the earlier run's, or holds
    more than ``FAST_WPS`` words a second (Whisper saying a window again, its times squashed). A
    repeat in a later line with audio of its own was said twice: a caller's number read back, which
    a loose reference writes once ("0 4 8 2 … 3703180482")."""
    grams = [tuple(committed[i:i + n]) for i in range(len(committed) - n + 1)]
    in_ref = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
    first: dict[tuple, int] = {}
    marked = [False] * len(committed)
    for i, g in enumerate(grams):
        if g in first and first[g] + n <= i and in_ref[g] <= 1 and (spans is None or _no_audio_of_its_own(
                spans, first[g], i, n)):
            marked[i:i + n] = [True] * n
        first.setdefault(g, i)
    stretches, i = [], 0
    while i < len(marked):
        if marked[i]:
            j = i
            while j < len(marked) and marked[j]:
                j += 1
            stretches.append(" ".join(committed[i:j]))
            i = j
        else:
            i += 1
    return stretches


FAST_WPS = 8.0  # words a second no one speaks: a line this dense was not timed from its own audio


def _no_audio_of_its_own(spans: list[tuple[float, float]], earlier: int, later: int, n: int) -> bool:
    """Whether the run at ``later`` lies in the earlier run's line, in a line overlapping it, or in a
    line too dense to be speech (see :func:`repeated_stretches`)."""
    if spans[later][0] < spans[earlier + n - 1][1] - 0.05:
        return True
    line = spans[later]
    in_line = sum(1 for s in spans if s == line)
    return in_line / max(line[1] - line[0], 0.05) > FAST_WPS


def speech_segments(events, end: float) -> list[tuple[float, float]]:
    """VAD events (``.kind`` "start"/"end", ``.time``) as speech segments; one still open ends at ``end``."""
    segments, start = [], None
    for e in events:
        if e.kind == "start" and start is None:
            start = e.time
        elif e.kind == "end" and start is not None:
            segments.append((start, e.time))
            start = None
    if start is not None:
        segments.append((start, end))
    return segments


def collapsed(words, run: int = 3) -> bool:
    """Whether ``run`` or more consecutive words share one start time: Whisper's word timing for a
    phrase it repeats at the end of a window (a hallucinated loop too short for the compression check)."""
    same = 1
    for a, b in pairwise(words):
        same = same + 1 if abs(b.start - a.start) < 0.005 else 1
        if same >= run:
            return True
    return False


# -- the live path ---------------------------------------------------------------------------
@contextlib.contextmanager
def _traced():
    """Record every VAD event and every drafter decode's words (absolute times) while the pipeline
    runs: the transcriber's own methods, called as they are, their results kept."""
    from core.asr.streaming import StreamingTranscriber
    from core.audio.vad import VoiceActivityDetector

    events: list = []
    decodes: list = []
    process, decode = VoiceActivityDetector.process, StreamingTranscriber._decode

    def traced_process(self, chunk):
        got = process(self, chunk)
        events.extend(got)
        return got

    def traced_decode(self, audio):
        words = decode(self, audio)
        decodes.append(list(words))
        return words

    VoiceActivityDetector.process, StreamingTranscriber._decode = traced_process, traced_decode
    try:
        yield events, decodes
    finally:
        VoiceActivityDetector.process, StreamingTranscriber._decode = process, decode


class _Frames:
    """A pipeline listener: each painted frame's clock, committed text and text as shown."""

    def __init__(self, clock) -> None:
        self.clock = clock
        self.frames: list[tuple[float, str, str]] = []
        self.lines: list[tuple[str, float, float]] = []  # the committed lines of the last frame, with times

    def on_view(self, view) -> None:
        committed = " ".join(line.sentence.text for line in view.lines)
        self.lines = [(line.sentence.text, line.sentence.start, line.sentence.end) for line in view.lines]
        self.frames.append((self.clock(view), committed, f"{committed} {view.partial.shown_source}"))

    def on_progress(self, progress) -> None:
        pass

    def on_message(self, level: str, text: str) -> None:
        print(f"  [{level}] {text}", file=sys.stderr)


def latencies(frames: list[tuple[float, str, str]], ref: list[str], times: dict[int, TimedToken]) -> dict:
    """First seen and committed latency (p50, p90) over the timed reference words: the first frame
    whose shown (committed) text reaches the word, by an alignment of that text against a prefix of
    the reference (``bench.live.coverage``), minus the word's end."""
    from bench.live import coverage

    out = {}
    for key, which in (("first_seen", 2), ("committed", 1)):
        reached: dict[int, float] = {}
        previous, reach = None, 0
        for frame in frames:
            if frame[which] == previous:
                continue
            previous = frame[which]
            new = coverage(normalise(frame[which]), ref)
            for j in range(reach, new):
                if j in times:
                    reached.setdefault(j, frame[0] - times[j].end)
            reach = max(reach, new)
        values = list(reached.values())
        out[f"{key}_p50"] = round(float(np.percentile(values, 50)), 3) if values else None
        out[f"{key}_p90"] = round(float(np.percentile(values, 90)), 3) if values else None
    return out


@dataclass
class LiveRun:
    """One recording through the default live path."""

    committed: str
    trace: LiveTrace
    frames: list
    cpu_s: float
    audio_s: float
    lines: int
    dropped: int
    fallbacks: int
    fell_behind: object
    merges: int
    carried: int
    draft_s: float
    verify_s: float
    drafter_lines: list[tuple[str, bool]] = field(default_factory=list)
    line_log: list[dict] = field(default_factory=list)
    collapsed: int = 0
    committed_tokens: list[tuple[str, float, float]] = field(default_factory=list)  # normalised, with its line's times
    drafter_tokens: list[tuple[str, float, float]] = field(default_factory=list)  # the same for the drafter's lines
    rechecks: int = 0  # lines decoded again later (VerifyOptions.recheck_s)


def line_tokens(lines) -> list[tuple[str, float, float]]:
    """Each line's normalised words with the line's start and end: ``lines`` of (text, start, end)."""
    return [(token, start, end) for text, start, end in lines for token in normalise(text)]


def run_live(recording: Recording, settings, asr, translator, realtime: bool) -> LiveRun:
    """Caption ``recording`` with the default pipeline (fast mode or real time) and trace it."""
    from core.audio.sources import FileSource
    from core.session.pipeline import CaptionPipeline

    class _TimedSource(FileSource):
        started_at = 0.0

        def start(self) -> None:
            super().start()
            self.started_at = time.monotonic()

    source = _TimedSource(recording.path, realtime=realtime)
    recorder = _Frames((lambda view: time.monotonic() - source.started_at) if realtime
                       else (lambda view: view.audio_time))
    pipeline = CaptionPipeline(settings, asr, translator, recorder, realtime=realtime)
    with _traced() as (events, decodes):
        cpu0 = time.process_time()
        summary = pipeline.run(source).to_dict()
        cpu = time.process_time() - cpu0
    transcriber = pipeline.streams[0].transcriber
    audio_s = summary["audio_seconds"]
    verified = getattr(transcriber, "lines", None)
    dropped = getattr(transcriber, "dropped", [])
    gone = {id(x) for x in dropped}
    committed = recorder.frames[-1][1] if recorder.frames else ""
    if verified is not None:
        in_order = sorted(verified + dropped, key=lambda x: x.drafted_start)
        drafter = [(x.drafted, id(x) in gone) for x in in_order]
        drafter_lines = [(x.drafted, x.drafted_start, x.drafted_end) for x in in_order]
    else:  # unverified: the drafter's lines are the committed ones
        drafter = [(committed, False)]
        drafter_lines = recorder.lines
    inner = getattr(transcriber, "transcriber", transcriber)
    # each verification as it happened (time order): what the drafter finished, the audio the verifier read,
    # its words with times, which of them became the line; to look into a line committed twice
    log = [{"drafted": x.drafted, "drafted_s": [round(x.drafted_start, 2), round(x.drafted_end, 2)],
            "committed": None if id(x) in gone else x.sentence.text, "fallback": x.fallback,
            "decoded_s": [round(x.start, 2), round(x.end, 2)], "kept": list(x.kept),
            "first": " ".join(f"{w.text.strip()}@{w.probability:.2f}" for w in getattr(x, "first", [])),
            "words": " ".join(f"{w.text.strip()}@{w.start:.2f}-{w.end:.2f}" for w in x.words)}
           for x in sorted(verified + dropped, key=lambda x: x.end)] if verified is not None else []
    trace = LiveTrace(normalise(committed), [(normalise(t), d) for t, d in drafter],
                      speech_segments(events, audio_s), [t for words in decodes for t in timed_tokens(words)],
                      inner.options.pre_roll_s)
    return LiveRun(committed, trace, recorder.frames, cpu, audio_s, len(verified or []), len(dropped),
                   getattr(transcriber, "fallbacks", 0), summary.get("fell_behind"), getattr(transcriber, "merges", 0),
                   getattr(transcriber, "carried", 0), inner.decode_seconds,
                   getattr(transcriber, "verify_seconds", 0.0), drafter, log,
                   sum(1 for x in verified or [] if not x.fallback and collapsed(x.words[x.kept[0]:x.kept[1]])),
                   line_tokens(recorder.lines), line_tokens(drafter_lines), getattr(transcriber, "rechecks", 0))


# -- offline decoding ------------------------------------------------------------------------
def decode_offline(engine, audio: np.ndarray) -> tuple[str, list]:
    """Greedy decoding of ``audio`` in pieces of at most 30 s (``bench.asr._windows``): the text and
    the words (stream seconds)."""
    from bench.asr import _windows

    texts, words, offset = [], [], 0.0
    for piece in _windows(audio):
        hypothesis = engine.transcribe(piece, "", "en")
        texts.append(hypothesis.text)
        words += [w.shifted(offset) for w in hypothesis.words if w.text.strip()]
        offset += len(piece) / 16000
    return " ".join(texts), words


# -- the run ---------------------------------------------------------------------------------
ROW_KEYS = ("recording", "split", "config", "round", "audio_s", "ref_words", "words_out", "wer", "sub", "del",
            "ins", "cpu_per_audio_s", "first_seen_p50", "first_seen_p90", "committed_p50", "committed_p90",
            "lines", "dropped_lines", "merged_lines", "carried_lines", "rechecked_lines", "fallbacks", "fell_behind",
            "reliable_words", "lost", "lost_words",
            "repeats", "drafter", "drafter_repeats", "draft_s_per_audio_s", "verify_s_per_audio_s", "transcript",
            "collapsed_lines", "drafter_transcript", "line_log")


def _row(recording: Recording, config: str, audio_s: float, ref: list[str], text: str, cpu_s: float,
         round_: int | None = None) -> dict:
    row = dict.fromkeys(ROW_KEYS)
    row.update(recording=recording.name, split=recording.split, config=config, round=round_,
               audio_s=round(audio_s, 1), cpu_per_audio_s=round(cpu_s / audio_s, 3) if audio_s else None,
               transcript=text, **score(ref, normalise(text)))
    return row


def at_gain(recordings: list[Recording], gain_db: float, folder: Path) -> list[Recording]:
    """The recordings as 16 kHz WAV files in ``folder``, ``gain_db`` louder (negative: quieter; a quiet
    voice, a far microphone), for the live path and offline decoding alike."""
    import wave

    from core.audio import decode_file

    out = []
    for rec in recordings:
        audio = np.clip(decode_file(rec.path) * 10.0 ** (gain_db / 20.0), -1.0, 1.0)
        path = folder / f"{rec.name}.wav"
        with wave.open(str(path), "wb") as f:
            f.setnchannels(1)
            f.setsampwidth(2)
            f.setframerate(16000)
            f.writeframes(np.round(audio * 32767).astype("<i2").tobytes())
        out.append(replace(rec, path=path))
    return out


def run(recordings: list[Recording], realtime: bool, rounds: int, target: str, verify: bool = True,
        overrides: list[str] = (), gain_db: float = 0.0, chunks: list[float] | None = None) -> dict:
    """Offline decoding of each recording by each bundled model, then the live path (``rounds`` times in
    real time, else once in fast mode; with ``chunks``, fast mode once per chunk size, each an
    ``asr.min_chunk_s``: a change to where decodes end moves the line cuts, so the same words are
    compared at several timings)."""
    from core.asr import FasterWhisperEngine
    from core.audio import decode_file
    from core.models import ModelStore
    from core.session.engines import create_asr_engine, create_translator
    from core.settings import Settings

    settings = Settings().with_value("translation.target", target).with_value("asr.verify_lines", verify)
    for item in overrides:  # --set KEY=VALUE
        key, _, value = item.partition("=")
        settings = settings.with_value(key, value)
    store = ModelStore()
    models = [settings.asr.model, settings.asr.verifier]
    offline_engines = {m: FasterWhisperEngine(store.resolve(m), compute_type=settings.asr.compute_dtype,
                                              encoder_seconds=settings.asr.encoder_seconds) for m in models}
    asr = create_asr_engine(settings, store)
    translator = create_translator(settings, store)
    rows = []
    scratch = tempfile.TemporaryDirectory(prefix="sotto-meeting-") if gain_db else None
    try:
        if scratch is not None:
            recordings = at_gain(recordings, gain_db, Path(scratch.name))
        for rec in recordings:
            ref = normalise(rec.reference)
            audio = decode_file(rec.path)
            audio_s = len(audio) / 16000
            offline = []
            for model, engine in offline_engines.items():
                cpu0 = time.process_time()
                text, words = decode_offline(engine, audio)
                row = _row(rec, f"offline {model}", audio_s, ref, text, time.process_time() - cpu0)
                offline.append(timed_tokens(words))
                rows.append(row)
                print(f"{rec.name}: offline {model} WER {row['wer']:.1%}", file=sys.stderr, flush=True)
            heard = reliable(ref, offline)
            runs = ([(round_ + 1, None) for round_ in range(rounds)] if realtime
                    else [(None, c) for c in chunks or [None]])
            for round_, chunk in runs:
                timed = settings if chunk is None else settings.with_value("asr.min_chunk_s", chunk)
                live = run_live(rec, timed, asr, translator, realtime)
                config = ("live real time" if realtime else "live fast") + (
                    "" if verify else f", {settings.asr.model} alone") + ("" if chunk is None else
                                                                           f", chunks {chunk:g} s")
                row = _row(rec, config, live.audio_s, ref, live.committed, live.cpu_s, round_)
                row["chunk_s"] = timed.asr.min_chunk_s
                losses = classify_losses(ref, offline, live.trace)
                drafted = [w for words, _dropped in live.trace.drafter_lines for w in words]
                row.update(latencies(live.frames, ref, heard), lines=live.lines, dropped_lines=live.dropped,
                           merged_lines=live.merges, carried_lines=live.carried, rechecked_lines=live.rechecks,
                           fallbacks=live.fallbacks, fell_behind=live.fell_behind, reliable_words=len(heard),
                           lost={k: sum(1 for x in losses if x.kind == k) for k in LOSS_KINDS},
                           lost_words=[{**asdict(x), "context": " ".join(ref[max(0, x.index - 3):x.index + 4])}
                                       for x in losses],
                           repeats=_repeats(live.committed_tokens, ref),
                           drafter=score(ref, drafted), drafter_repeats=_repeats(live.drafter_tokens, ref),
                           drafter_transcript=" ".join(text for text, _dropped in live.drafter_lines),
                           line_log=live.line_log, collapsed_lines=live.collapsed,
                           draft_s_per_audio_s=round(live.draft_s / live.audio_s, 3),
                           verify_s_per_audio_s=round(live.verify_s / live.audio_s, 3))
                rows.append(row)
                print(f"{rec.name}: {config} WER {row['wer']:.1%} (S {row['sub']}, D {row['del']}, I {row['ins']}), "
                      f"lost {sum(row['lost'].values())} of {len(heard)} reliably heard {row['lost']}, "
                      f"{len(row['repeats'])} repeats; the drafter's lines: WER {row['drafter']['wer']:.1%} (S "
                      f"{row['drafter']['sub']}, D {row['drafter']['del']}, I {row['drafter']['ins']}), "
                      f"{len(row['drafter_repeats'])} repeats; {live.collapsed} verified lines with collapsed word "
                      "times", file=sys.stderr, flush=True)
    finally:
        if translator is not None:
            translator.close()
        if scratch is not None:
            scratch.cleanup()
    return {"date": time.strftime("%Y-%m-%d"), "machine": describe(), "mode": "real time" if realtime else "fast",
            "rounds": rounds if realtime else 1, "target": target, "models": models, "overrides": list(overrides),
            "gain_db": gain_db,
            "recordings": [r.name for r in recordings], "rows": rows, "totals": totals(rows),
            "timings": timings(rows) if chunks and len(chunks) > 1 else None}


def _repeats(tokens: list[tuple[str, float, float]], ref: list[str]) -> list[str]:
    return repeated_stretches([t for t, _s, _e in tokens], ref, spans=[(s, e) for _t, s, e in tokens])


def _wer(rows: list[dict]) -> float | None:
    """The pooled WER of ``rows`` (their errors over their reference words), None without reference words."""
    ref = sum(r["ref_words"] for r in rows)
    return sum(r["sub"] + r["del"] + r["ins"] for r in rows) / ref if ref else None


def totals(rows: list[dict]) -> list[dict]:
    """Per configuration (and round), over every recording: WER of the pooled errors, the parts, the losses."""
    out = []
    keys = list(dict.fromkeys((r["config"], r["round"]) for r in rows))
    for config, round_ in keys:
        group = [r for r in rows if r["config"] == config and r["round"] == round_]
        ref = sum(r["ref_words"] for r in group)
        audio = sum(r["audio_s"] for r in group)
        wer = _wer(group)
        total = {"config": config, "round": round_, "recordings": len(group), "audio_s": round(audio, 1),
                 "ref_words": ref, "words_out": sum(r["words_out"] for r in group),
                 "wer": None if wer is None else round(wer, 4),
                 **{k: sum(r[k] for r in group) for k in ("sub", "del", "ins")},
                 "cpu_per_audio_s": round(sum(r["cpu_per_audio_s"] * r["audio_s"] for r in group) / audio, 3)}
        if group[0]["lost"] is not None:
            total["reliable_words"] = sum(r["reliable_words"] for r in group)
            total["lost"] = {k: sum(r["lost"][k] for r in group) for k in LOSS_KINDS}
            total["repeats"] = sum(len(r["repeats"]) for r in group)
            for k in ("lines", "dropped_lines", "merged_lines", "carried_lines", "rechecked_lines"):
                total[k] = sum(r[k] for r in group)
            drafter = {k: sum(r["drafter"][k] for r in group) for k in ("words_out", "sub", "del", "ins")}
            errors = drafter["sub"] + drafter["del"] + drafter["ins"]
            total["drafter"] = {**drafter, "wer": round(errors / ref, 4) if ref else None}
            total["drafter_repeats"] = sum(len(r["drafter_repeats"]) for r in group)
            total["collapsed_lines"] = sum(r["collapsed_lines"] for r in group)
        out.append(total)
    return out


def timings(rows: list[dict]) -> dict:
    """The live path's WER per chunk size and per split (tune, heldout, shared, all: pooled errors), with
    each one's mean over the chunk sizes and its spread (largest less smallest), in points."""
    live = [r for r in rows if r.get("chunk_s") is not None and r["lost"] is not None]
    chunk_sizes = sorted({r["chunk_s"] for r in live})
    splits = list(dict.fromkeys(r["split"] for r in live)) + ["all"]
    wer: dict[str, dict[str, float]] = {}
    for split in splits:
        wer[split] = {}
        for c in chunk_sizes:
            group = [r for r in live if r["chunk_s"] == c and split in ("all", r["split"])]
            wer[split][f"{c:g}"] = round(100 * _wer(group), 2)
    return {"chunks": [f"{c:g}" for c in chunk_sizes], "wer": wer,
            "mean": {k: round(sum(v.values()) / len(v), 2) for k, v in wer.items()},
            "spread": {k: round(max(v.values()) - min(v.values()), 2) for k, v in wer.items()}}


def table(result: dict) -> str:
    """The Markdown tables of a run: per recording and configuration, the totals, the lost words."""

    def f(v, fmt="{:.2f}"):
        return "–" if v is None else fmt.format(v)

    def asr(r):
        d, v = r.get("draft_s_per_audio_s"), r.get("verify_s_per_audio_s")
        return "–" if d is None else f"{d:.3f} + {v:.3f}"

    def lost(r):
        return "–" if r.get("lost") is None else " / ".join(str(r["lost"][k]) for k in LOSS_KINDS)

    head = ("| recording | config | audio s | words out / ref | WER | S | D | I | CPU-s/audio-s "
            "| drafter + verifier s/audio-s | first seen p50 / p90 | committed p50 / p90 | lost (dropped line "
            "/ verifier cut / VAD / never committed / other) of reliably heard | committed twice |")
    gain = f"; {result['gain_db']:+g} dB" if result.get("gain_db") else ""
    out = [f"Measured {result['date']} on {result['machine']} ({result['mode']}; target {result['target']}{gain}; "
           "WER after Whisper's English normaliser, fillers out).", "", head,
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        name = r["config"] + (f" (round {r['round']})" if r["round"] else "")
        heard = f" of {r['reliable_words']}" if r.get("reliable_words") is not None else ""
        out.append(f"| {r['recording']} | {name} | {r['audio_s']} | {r['words_out']} / {r['ref_words']} | "
                   f"{f(r['wer'], '{:.1%}')} | {r['sub']} | {r['del']} | {r['ins']} | {f(r['cpu_per_audio_s'])} | "
                   f"{asr(r)} | {f(r['first_seen_p50'])} / {f(r['first_seen_p90'])} | {f(r['committed_p50'])} / "
                   f"{f(r['committed_p90'])} | {lost(r)}{heard} | "
                   f"{'–' if r['repeats'] is None else len(r['repeats'])} |")
    out += ["", "| total | recordings | audio s | words out / ref | WER | S | D | I | CPU-s/audio-s | lost | "
            "committed twice | lines / dropped / merged / carried / rechecked |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t in result["totals"]:
        name = t["config"] + (f" (round {t['round']})" if t["round"] else "")
        heard = f" of {t['reliable_words']}" if "reliable_words" in t else ""
        out.append(f"| {name} | {t['recordings']} | {t['audio_s']} | {t['words_out']} / {t['ref_words']} | "
                   f"{f(t['wer'], '{:.1%}')} | {t['sub']} | {t['del']} | {t['ins']} | {f(t['cpu_per_audio_s'])} | "
                   f"{lost(t)}{heard} | {t.get('repeats', '–')} | {t.get('lines', '–')} / "
                   f"{t.get('dropped_lines', '–')} / {t.get('merged_lines', '–')} / {t.get('carried_lines', '–')} / "
                   f"{t.get('rechecked_lines', '–')} |")
    live = [r for r in result["rows"] if r.get("drafter")] + [t for t in result["totals"] if t.get("drafter")]
    if live:
        out += ["", "The drafter's lines before verification (every line it finished, dropped ones too), against "
                "the committed text:", "", "| recording | config | drafter words out | drafter WER (S / D / I) "
                "| drafter committed twice | committed WER (S / D / I) | committed twice | verified lines with "
                "collapsed word times |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in live:
            d, name = r["drafter"], r["config"] + (f" (round {r['round']})" if r["round"] else "")
            twice = r["drafter_repeats"] if isinstance(r["drafter_repeats"], int) else len(r["drafter_repeats"])
            repeats = r["repeats"] if isinstance(r["repeats"], int) else len(r["repeats"])
            out.append(f"| {r.get('recording', '**total**')} | {name} | {d['words_out']} | {f(d['wer'], '{:.1%}')} "
                       f"({d['sub']} / {d['del']} / {d['ins']}) | {twice} | {f(r['wer'], '{:.1%}')} ({r['sub']} / "
                       f"{r['del']} / {r['ins']}) | {repeats} | {r['collapsed_lines']} |")
    lost_rows = [(r, x) for r in result["rows"] if r.get("lost_words") for x in r["lost_words"]]
    if lost_rows:
        out += ["", "Lost words (reliably heard offline, not committed): recording, time, word, where it went, "
                "committed as another word (S) or not at all (D), the reference around it.", ""]
        out += [f"- {r['recording']}{' r' + str(r['round']) if r['round'] else ''} {x['time']:.1f} s "
                f"**{x['word']}** {x['kind']} ({x['live']}): …{x['context']}…" for r, x in lost_rows]
    repeats = [(r, s) for r in result["rows"] if r.get("repeats") for s in r["repeats"]]
    if repeats:
        out += ["", "Committed twice:", ""] + [f"- {r['recording']}: “{s}”" for r, s in repeats]
    if result.get("timings"):
        t = result["timings"]
        out += ["", "The live path's WER at each chunk size (fast mode), its mean and spread (points):", "",
                "| recordings | " + " | ".join(f"chunks {c} s" for c in t["chunks"]) + " | mean | spread |",
                "|---|" + "---:|" * (len(t["chunks"]) + 2)]
        out += [f"| {split} | " + " | ".join(f"{v:.1f}%" for v in wer.values())
                + f" | {t['mean'][split]:.1f}% | {t['spread'][split]:.1f} |" for split, wer in t["wer"].items()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench meeting", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, metavar="DIR",
                        help="a recordings folder with manifest.tsv (default: ../shared/data/gathered if it has one)")
    parser.add_argument("--split", choices=("tune", "heldout", "all"), default="tune",
                        help="the manifest's recordings of this split (default tune)")
    parser.add_argument("--no-shared", action="store_true", help="leave out the shared mfa_* clips")
    parser.add_argument("--only", help="comma-separated recording names (without suffix)")
    parser.add_argument("--realtime", action="store_true", help="replay in real time (default: fast mode)")
    parser.add_argument("--rounds", type=int, default=1, help="real-time rounds per recording")
    parser.add_argument("--target", default="de", help="translation target (default de; 'none': no translation)")
    parser.add_argument("--unverified", action="store_true",
                        help="the drafter alone, its lines unverified (what the engine check chooses where verifying "
                             "does not keep up)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for the live path, e.g. asr.pause_commit=true (repeatable)")
    parser.add_argument("--gain", type=float, default=0.0, metavar="DB",
                        help="replay every recording this many dB louder; negative is quieter (-20: a quiet voice "
                             "or a far microphone)")
    parser.add_argument("--chunks", metavar="S,S,…",
                        help="fast mode at each of these chunk sizes (asr.min_chunk_s), e.g. 0.4,0.5,0.6: WER per "
                             "size, the mean and the spread")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    chunks = None
    if args.chunks:
        if args.realtime:
            parser.error("--chunks is for fast mode (in real time decodes end on the asr.min_chunk_s grid).")
        try:
            chunks = [float(c) for c in args.chunks.split(",") if c.strip()]
        except ValueError:
            parser.error(f"--chunks takes seconds separated by commas, not {args.chunks!r}.")
        from core.settings import Settings, SettingsError

        try:
            for c in chunks:
                Settings().with_value("asr.min_chunk_s", c)
        except SettingsError as exc:
            parser.error(f"--chunks: {exc}")
        if not chunks:
            parser.error("--chunks takes chunk sizes in seconds, e.g. 0.4,0.5,0.6.")
    recordings = [] if args.no_shared else shared_recordings()
    data = args.data or (DATA if (DATA / "manifest.tsv").is_file() else None)
    if args.data is not None and not (args.data / "manifest.tsv").is_file():
        parser.error(f"{args.data} has no manifest.tsv.")
    if data is not None:
        recordings += data_recordings(data, args.split)
    if args.only:
        names = {n.strip() for n in args.only.split(",")}
        recordings = [r for r in recordings if r.name in names]
    if not recordings:
        parser.error("no recordings to run (see --data, --split, --only).")
    result = run(recordings, args.realtime, max(1, args.rounds), args.target, verify=not args.unverified,
                 overrides=args.set, gain_db=args.gain, chunks=chunks)
    return report(result, args.json, table(result))


if __name__ == "__main__":
    sys.exit(main())
