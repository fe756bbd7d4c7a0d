"""Latency: speech goes first on the compute gate, lines end at clauses, the encoder sees the window,
and the live benchmark's alignment measures what it says.

Speed itself is measured by ``sotto bench live`` (docs/BENCHMARKS.md), never here.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from bench.live import align_pairs, coverage, words_of
from core.compute import SPEECH, TRANSLATION, ComputeGate

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


# -- the compute gate ---------------------------------------------------------------------------
def _waiter(gate: ComputeGate, priority: int, order: list[str], name: str) -> threading.Thread:
    def run() -> None:
        with gate.held(priority):
            order.append(name)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _wait_until(predicate, what: str) -> None:
    done = threading.Event()
    for _ in range(2000):
        if predicate():
            return
        done.wait(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_waiting_speech_decode_goes_before_a_waiting_translation():
    gate = ComputeGate()
    order: list[str] = []
    gate.acquire(SPEECH)
    translation = _waiter(gate, TRANSLATION, order, "translation")
    _wait_until(lambda: gate._waiting[TRANSLATION] == 1, "the translation to wait")
    speech = _waiter(gate, SPEECH, order, "speech")
    _wait_until(lambda: gate.speech_waiting, "the speech decode to wait")
    gate.release()
    translation.join(5)
    speech.join(5)
    assert order == ["speech", "translation"]


def test_a_translation_steps_aside_between_tokens_for_speech_and_takes_the_gate_back():
    gate = ComputeGate()
    order: list[str] = []
    with gate.held(TRANSLATION):
        assert gate.yield_to_speech() == 0.0  # nobody waits: it keeps going
        speech = _waiter(gate, SPEECH, order, "speech")
        _wait_until(lambda: gate.speech_waiting, "the speech decode to wait")
        waited = gate.yield_to_speech()
        order.append("translation resumed")
        speech.join(5)
    assert order == ["speech", "translation resumed"] and waited > 0
    assert not gate._busy


def test_the_gate_is_free_after_an_error_inside():
    gate = ComputeGate()
    with pytest.raises(RuntimeError):
        with gate:
            raise RuntimeError("a model failed")
    assert gate.acquire(TRANSLATION) is None and gate._busy
    gate.release()


# -- how idle threads wait (core.compute; its cost: sotto bench threads) --------------------------
_BLAS_THREADS = """
import ctypes, glob, os, sys
{first}
import numpy
libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__) + ".libs", "libscipy_openblas*"))
print(ctypes.CDLL(libs[0]).scipy_openblas_get_num_threads64_() if libs else "no OpenBLAS")
print(*(os.environ.get(k) for k in ("OPENBLAS_THREAD_TIMEOUT", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")))
"""
_WAITING = ("OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def _waiting(first: str, **env: str) -> list[str]:
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if k not in _WAITING}
    out = subprocess.run([sys.executable, "-c", _BLAS_THREADS.format(first=first)], env={**clean, **env},
                         cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, check=True)
    return out.stdout.split("\n")


def test_importing_core_first_puts_idle_threads_to_sleep_soon_and_keeps_the_blas_threads():
    """core sets how idle threads wait before numpy loads: OpenBLAS's threads sleep as soon as a
    product is done (they spun ~0.1 s after every mel filterbank, taking a core from the decode), in
    the same number as without core (so the mel features stay the same bit for bit), and OpenMP
    threads spin briefly, not for ever; a value already in the environment wins."""
    blas, variables, _ = _waiting("import core")
    plain, _, _ = _waiting("")
    assert blas == plain != "no OpenBLAS"
    assert variables == "4 ACTIVE 10000"
    _, variables, _ = _waiting("import core", OMP_WAIT_POLICY="PASSIVE", GOMP_SPINCOUNT="0")
    assert variables == "4 PASSIVE 0"


# -- the live benchmark's alignment ----------------------------------------------------------------
def test_coverage_is_how_far_the_shown_words_reach_into_the_reference():
    ref = words_of("Printing, in the only sense with which we are at present concerned, differs from most.")
    assert coverage([], ref) == 0
    assert coverage(words_of("printing in the only"), ref) == 4
    assert coverage(words_of("Printing in the holy sense"), ref) == 5  # a substitution inside still covers
    # an extra word or a wrong last word: not counted as the next reference word (a tie: the nearer end)
    assert coverage(words_of("printing in the only sense with which we're"), ref) == 7
    assert coverage(words_of("in the only sense"), ref) == 5  # the first word missed: a deletion
    assert coverage(words_of("printing in the only sense with which we are at present concerned differs from "
                             "most and more"), ref) == len(ref)
    assert words_of("U.S. «quotes», don't") == ["u", "s", "quotes", "don't"]


def test_align_pairs_maps_every_reference_word_to_a_hypothesis_word():
    ref = words_of("the cat sat on the mat and slept")
    hyp = words_of("the cat on a mat and it slept")
    pairs = align_pairs(hyp, ref)
    assert [hyp[i] for i in pairs] == ["the", "cat", "cat", "on", "a", "mat", "and", "slept"]


# -- the translator on the gate ------------------------------------------------------------------
SENTENCE = ("The committee met on Tuesday to discuss the budget for the coming year, and after a long "
            "debate it agreed to spend more on schools and hospitals.")


def _translate_while_speech_waits(translator, final: bool) -> tuple[str, int, int]:
    """Translate SENTENCE on a thread; once it holds the compute gate, take the gate for speech.
    Returns the translation, the tokens the model had run when speech got the gate, and the tokens
    it had run at the end (the model runs only while its thread holds the gate)."""
    from conftest import wait_for

    from core.compute import COMPUTE_GATE

    got: dict[str, object] = {}
    start = translator.runner.evaluated

    def work() -> None:
        got["text"] = translator.translate(SENTENCE, final=final).text

    thread = threading.Thread(target=work)
    thread.start()
    wait_for(lambda: COMPUTE_GATE._busy, 10.0, "the translation to hold the gate", poll=0.001)
    with COMPUTE_GATE:
        at_speech = translator.runner.evaluated - start
    thread.join(60)
    return str(got["text"]), at_speech, translator.runner.evaluated - start


def test_a_partial_translation_steps_aside_for_speech_and_its_output_is_unchanged(translator_de):
    from conftest import use_knobs

    use_knobs(translator_de)  # plain greedy: the output must not depend on the pause
    alone = translator_de.translate(SENTENCE).text
    text, at_speech, total = _translate_while_speech_waits(translator_de, final=False)
    assert at_speech < total, "speech waited for the whole partial translation"
    assert text == alone


def test_a_finished_sentence_translation_runs_to_its_end(translator_de):
    from conftest import use_knobs

    use_knobs(translator_de)
    text, at_speech, total = _translate_while_speech_waits(translator_de, final=True)
    assert at_speech == total, "a finished sentence's translation was interrupted by speech"
    assert text == translator_de.translate(SENTENCE).text


# -- the speech engine: one pass per window ------------------------------------------------------
def _count_encodes(engine) -> list[int]:
    calls = [0]
    original = engine.model.encode

    def counting(features):
        out = original(features)  # the one-pass engine refuses a second pass here
        calls[0] += 1
        return out

    engine.model.encode = counting
    return calls


@pytest.fixture(scope="module")
def reading() -> np.ndarray:
    from core.audio.decode import decode_file

    return decode_file(SHARED / "asr_long" / "ljspeech_LJ001-0001_to_0032_concat_16k.flac", "mix")


def test_a_short_tail_is_not_encoded_again_and_a_long_one_is(store, reading):
    """faster-whisper's long-form loop encodes a window again from its last word. On the first
    window that tail is a fraction of a second: the streaming engine skips it, keeping the first
    pass's words. On the second the tail is over TAIL_S: it is decoded, so nothing is lost at the
    end of a stream, and the words are faster-whisper's own."""
    from core.asr.engine import TAIL_S, FasterWhisperEngine

    # float32: these windows were chosen for its output (in int8 the first one's last segment ends
    # with a single timestamp, so faster-whisper makes no second pass to skip)
    two = FasterWhisperEngine(store.resolve("whisper-tiny.en"), one_pass=False, compute_type="float32")
    one = FasterWhisperEngine(store.resolve("whisper-tiny.en"), compute_type="float32")
    two_calls, one_calls = _count_encodes(two), _count_encodes(one)

    short = reading[100 * 16000:112 * 16000]
    full, first = two.transcribe(short, language="en"), one.transcribe(short, language="en")
    assert two_calls[0] == 2 and one_calls[0] == 1
    assert 12.0 - first.words[-1].end < TAIL_S
    assert first.words and [w.text for w in first.words] == [w.text for w in full.words[:len(first.words)]]

    long_tail = reading[60 * 16000:69 * 16000]
    two_calls[0] = one_calls[0] = 0
    full, both = two.transcribe(long_tail, language="en"), one.transcribe(long_tail, language="en")
    assert two_calls[0] == one_calls[0] == 2
    assert [w.text for w in both.words] == [w.text for w in full.words]


# -- the encoder reads the window, not 30 s ----------------------------------------------------------
class _EncoderFrames:
    """CTranslate2's Whisper model, noting the frames of every features array its encoder reads."""

    def __init__(self, model, frames: list[int]) -> None:
        self._model, self._frames = model, frames

    def encode(self, features, *args, **kwargs):
        self._frames.append(features.shape[-1])
        return self._model.encode(features, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)


def test_encoder_frames_are_the_content_plus_padding_at_least_the_minimum():
    from core.asr.engine import content_frames, encoder_frames_rule

    frames = encoder_frames_rule(10.0)
    assert [frames(n) for n in (0, 400, 800, 801, 1100, 2800, 2900, 3000)] == \
        [1000, 1000, 1000, 1002, 1300, 3000, 3000, 3000]
    assert encoder_frames_rule(30.0) is None  # Whisper's own 30 s
    segment = np.zeros((1, 80, 3000), dtype=np.float32)
    segment[0, 3, 1233] = -0.5  # the last frame with audio
    assert content_frames(segment) == 1234 and content_frames(np.zeros((80, 3000))) == 0


def test_the_encoder_reads_the_window_plus_padding_and_hears_as_well(store, shared):
    """With asr.encoder_seconds 10 the speech model's encoder reads an 11 s clip plus 2 s of padding
    (1300 frames, not Whisper's 3000) and a 3 s clip padded to 10 s. Over the 16 shared clips it
    writes as well as the 30 s encoder: pooled WER at most one point above (measured: 10.7% against
    11.3%; single clips move both ways, e.g. "stuff it into you" heard as "stuffered into you" with
    10 s and "fat mutton" as "fat mutten" with 30 s; every clip that differs is printed)."""
    from core.asr.engine import FasterWhisperEngine
    from core.audio.decode import decode_file
    from core.captions import normalize_english, word_error_rate

    short = FasterWhisperEngine(store.resolve("whisper-tiny.en"), encoder_seconds=10.0)
    full = FasterWhisperEngine(store.resolve("whisper-tiny.en"), encoder_seconds=30.0)
    read = {id(short): [], id(full): []}
    for engine in (short, full):
        engine.model.model = _EncoderFrames(engine.model.model, read[id(engine)])
    clips = sorted(p for p in (shared / "asr").iterdir() if p.suffix in (".flac", ".wav") and "stereo" not in p.name)
    expected_frames = {"jfk.flac": 1300, "librispeech_1089-134686-0001.flac": 1000}
    refs, heard_short, heard_full = [], [], []
    for clip in clips:
        audio = decode_file(clip)
        refs.append(normalize_english(clip.with_suffix(".txt").read_text()))
        for engine in (short, full):
            read[id(engine)].clear()
        heard_short.append(normalize_english(short.transcribe(audio).text))
        heard_full.append(normalize_english(full.transcribe(audio).text))
        assert read[id(full)] and set(read[id(full)]) == {3000}, (clip.name, read)
        assert read[id(short)] and max(read[id(short)]) <= 3000, (clip.name, read)
        if clip.name in expected_frames:
            assert all(abs(n - expected_frames[clip.name]) <= 2 for n in read[id(short)]), (clip.name, read)
        if heard_short[-1] != heard_full[-1]:
            print(f"{clip.name}: 10 s {heard_short[-1]!r}\n{'':{len(clip.name)}}  30 s {heard_full[-1]!r}")
    wer_short = word_error_rate(" ".join(refs), " ".join(heard_short))
    wer_full = word_error_rate(" ".join(refs), " ".join(heard_full))
    print(f"pooled WER: 10 s {wer_short:.3f}, 30 s {wer_full:.3f}")
    assert wer_short <= wer_full + 0.01



def test_the_speculative_runner_reads_the_same_frames_through_the_same_encoder_layers(store, shared):
    """The speculative engine's PyTorch runner cuts the features as the default engine does (an 11 s
    clip: 1300 frames; a 3 s clip: 1000; 3000 with encoder_seconds 30). transformers' encoder refuses
    fewer than 3000 frames, so the runner runs its layers itself: on 3000 frames that equals the
    library's forward bit for bit, and with the short encoder the verifier still hears the clip."""
    import torch

    from core.asr.speculative.decoder import greedy_decode
    from core.asr.speculative.runtime import WhisperRunner
    from core.audio.decode import decode_file
    from core.captions import normalize_english, word_error_rate

    short = WhisperRunner(store.resolve("whisper-tiny.en"), encoder_seconds=10.0)
    full = WhisperRunner(store.resolve("whisper-tiny.en"), encoder_seconds=30.0)
    jfk = decode_file(shared / "asr" / "jfk.flac")
    three = decode_file(shared / "asr" / "librispeech_1089-134686-0001.flac")
    assert [short.features(a).shape[-1] for a in (jfk, three)] == [1300, 1000]
    assert [full.features(a).shape[-1] for a in (jfk, three)] == [3000, 3000]
    features = full.features(jfk)
    with torch.inference_mode():
        library = full.model.model.encoder(features).last_hidden_state
        ours = full._encode_short(features)
    assert ours.shape == library.shape == (1, 1500, 384) and torch.equal(ours, library)
    assert short.encode(jfk).shape == (1, 650, 384)
    ref = normalize_english((shared / "asr" / "jfk.txt").read_text())
    heard = {n: normalize_english(greedy_decode(r, jfk).text) for n, r in (("10 s", short), ("30 s", full))}
    print(heard)
    assert word_error_rate(ref, heard["10 s"]) <= max(0.1, word_error_rate(ref, heard["30 s"])), heard

# -- lines end at clauses --------------------------------------------------------------------------
def test_lines_end_at_clauses_pauses_or_the_word_limit_and_never_lose_a_word(tiny_engine, reading):
    from conftest import transcribe_stream

    from core.captions import normalize_english, word_error_rate

    audio = reading[: 52 * 16000]  # the first five sentences, long ones without full stops
    lines, _st, _u = transcribe_stream(tiny_engine, audio, clause_min_words=6, max_line_words=20)
    whole, _st, _u = transcribe_stream(tiny_engine, audio, clause_min_words=0, max_line_words=0)
    counts = [len(s.text.split()) for s in lines]
    assert max(counts) <= 20 and len(lines) > len(whole), (counts, [s.text for s in lines])
    for s in lines[:-1]:
        following = lines[s.index + 1]
        assert (s.text.rstrip()[-1] in ".,;:!?" or len(s.text.split()) == 20
                or following.start - s.end >= 0.3), s.text
    text = " ".join(s.text for s in lines)
    assert word_error_rate(normalize_english(" ".join(s.text for s in whole)), normalize_english(text)) < 0.25
    assert [s.index for s in lines] == list(range(len(lines)))


# -- how often to decode ----------------------------------------------------------------------------
def test_decodes_come_every_min_chunk_or_as_often_as_the_machine_affords(tiny_engine, translator_de, shared):
    """In real time the pipeline waits for asr.min_chunk_s of new audio, or longer when a decode
    takes more than its share of the time (60% beside a translator, 90% alone); in fast mode always
    min_chunk_s, so results are reproducible."""
    from core.asr.streaming import StreamingTranscriber
    from core.audio.sources import FileSource
    from core.session.pipeline import ASR_SHARE_ALONE, ASR_SHARE_TRANSLATING, AudioStream, CaptionPipeline
    from core.settings import Settings

    settings = Settings()
    for translator, share in ((translator_de, ASR_SHARE_TRANSLATING), (None, ASR_SHARE_ALONE)):
        pipe = CaptionPipeline(settings, tiny_engine, translator, realtime=True)
        pipe._translation = pipe._open_translation()
        try:
            transcriber = StreamingTranscriber(tiny_engine)
            pipe.streams = [AudioStream("", FileSource(shared / "asr" / "jfk.flac"), transcriber)]
            assert pipe._chunk_seconds() == settings.asr.min_chunk_s  # nothing decoded yet
            transcriber.push(FileSource(shared / "asr" / "jfk.flac").audio[: 16000 * 4])
            assert transcriber.decodes > 0 and transcriber.recent_decode_seconds > 0
            expected = max(settings.asr.min_chunk_s, transcriber.recent_decode_seconds / share)
            assert pipe._chunk_seconds() == pytest.approx(expected)
            transcriber.recent_decode_seconds = 0.9  # a slow machine: 0.9 s per decode
            assert pipe._chunk_seconds() == pytest.approx(0.9 / share) and 0.9 / share > settings.asr.min_chunk_s
            pipe.realtime = False
            assert pipe._chunk_seconds() == settings.asr.min_chunk_s
        finally:
            pipe._close_translation(cancel=True)


def test_repeated_live_runs_report_the_median_and_the_spread():
    """`sotto bench live --repeats N`: each reading is the median of the runs with (min, max)
    beside it, the per-sentence latencies come from the median run, and the table shows the spread."""
    from bench.live import combine, table

    def one(first_seen, cpu, ne):
        return {"first_seen_p50": first_seen, "first_seen_p90": first_seen + 1, "cpu_per_audio_s": cpu,
                "wer": 0.07, "peak_rss_mb": 700.0, "ne_source_shown": ne, "committed_p50": None,
                "per_sentence": {"first_seen": [first_seen]}, "transcript": f"heard in {first_seen}"}

    got = combine([one(1.4, 1.5, 0.1), one(1.0, 1.6, 0.0), one(1.2, 1.4, 0.3)])
    assert got["first_seen_p50"] == 1.2 and got["spread"]["first_seen_p50"] == [1.0, 1.4]
    assert got["cpu_per_audio_s"] == 1.5 and got["spread"]["cpu_per_audio_s"] == [1.4, 1.6]
    assert got["per_sentence"]["first_seen"] == [1.2] and len(got["runs"]) == 3
    # each round's transcript is kept, so that an outlier's WER can be looked into
    assert [r["transcript"] for r in got["runs"]] == ["heard in 1.4", "heard in 1.0", "heard in 1.2"]
    assert got["committed_p50"] is None and "committed_p50" not in got["spread"]
    assert combine([one(1.0, 1.0, 0.0)]) == one(1.0, 1.0, 0.0)
    row = table({"default": "a", "configurations": {"a": got}}).splitlines()[-1]
    assert row.startswith("| a (default) | 1.20 (1.00–1.40) / 2.20 (2.00–2.40) |"), row
    assert "7.0% (7.0%–7.0%)" in row and "0.100 (0.000–0.300)" in row


def test_the_readings_finished_sentences_are_told_from_clips_that_end_inside_one(shared):
    """`sotto bench live` reports a finished sentence's latencies apart: the reading's clips also end
    inside a sentence, where the line runs on and its translation waits for the line's end. A sentence
    ends as the drafter ends a line at one (core.text.ends_sentence)."""
    from bench.live import READING
    from core.text import ends_sentence

    assert ends_sentence("has never been surpassed.") and ends_sentence('and other cities."')
    assert ends_sentence("(which also was printed at Maintz by Peter Schoeffer in the year 1462)") is False
    assert not ends_sentence("is printed in letters which are an exact imitation")
    assert not ends_sentence("whatever they were,")
    rows = READING.with_name(READING.name.replace(".flac", ".segments.tsv")).read_text().splitlines()[1:]
    ends = [ends_sentence(row.split("\t")[4]) for row in rows]
    assert len(ends) == 32 and sum(ends) == 12  # the other 20 end at a comma, a semicolon or no mark


def test_the_mask_study_names_its_rules_after_the_caption_policy_settings():
    """`sotto bench masks` replays updates through the app's CaptionPolicy; each rule name must
    build the policy it names (a wrong mapping would measure another rule)."""
    from bench.masks import RULES, policy_for
    from core.stream import TranscriptUpdate, Word

    words = (Word(0.0, 0.4, " so"), Word(0.5, 0.9, " here"), Word(1.0, 1.3, " we"), Word(1.35, 1.6, " are."))
    update = TranscriptUpdate([], "", "".join(w.text for w in words), 1.65, 2.0, tentative_words=words)
    shown = {rule: policy_for(rule).on_transcript(update).partial.shown_source for rule in RULES}
    assert shown["mask-3"] == "so" and shown["mask-1"] == "so here we" and shown["mask-0"] == "so here we are."
    assert shown["heard-0.3"] == "so here we" and shown["heard-0.8"] == "so"
    assert shown["heard-0.2"] == "so here we"
