"""Cross-checked lines (core.asr.verified.VerifiedEngine.cross_check): each verified window is decoded
by both bundled models and the decode both find likelier is committed, each line still one model's
own greedy words.

With the real models: a text's token log-probabilities come from the right window's encoding
(reused only for the audio the model last decoded), both models win lines of a real recording, and
every verified line is a run of its named model's greedy decode of that line's audio and prompt."""

from __future__ import annotations

import math

import numpy as np
import pytest


def test_the_likelier_decode_is_the_one_both_models_score_higher_per_token():
    from core.asr.verified import mean_log_prob, second_likelier

    # first[i] / second[i]: model i's token log-probabilities of each decode
    assert second_likelier([[-1.0, -1.0], [-0.5]], [[-0.2], [-0.4, -0.6]])
    assert not second_likelier([[-0.2], [-0.4, -0.6]], [[-1.0, -1.0], [-0.5]])
    # one model sure of its own decode does not outvote the other model's doubt about it
    assert not second_likelier([[-0.3, -0.3], [-0.3, -0.3]], [[-0.01, -0.01], [-2.0, -2.0]])
    # per token: a decode is neither likelier nor less likely for being shorter
    assert not second_likelier([[-0.1] * 10, [-0.1] * 10], [[-0.5], [-0.5]])
    assert second_likelier([[-0.5], [-0.5]], [[-0.1] * 10, [-0.1] * 10])
    assert mean_log_prob([]) == -math.inf


def test_only_a_window_the_verifier_is_unsure_of_is_decoded_again():
    from core.asr.engine import Hypothesis
    from core.asr.verified import CROSS_CHECK_BELOW, doubt
    from core.stream import Word

    sure = Hypothesis([Word(0, 1, " Hello", 0.99), Word(1, 2, " there.", 0.95)], "Hello there.")
    unsure = Hypothesis([Word(0, 1, " Hello", 0.99), Word(1, 2, " bear.", 0.4)], "Hello bear.")
    assert doubt(sure) >= CROSS_CHECK_BELOW > doubt(unsure)
    assert doubt(Hypothesis([], "")) == -math.inf


@pytest.mark.slow
def test_a_texts_log_probs_are_read_from_that_audios_encoding(store, shared):
    from core.asr import FasterWhisperEngine
    from core.audio import decode_file

    engine = FasterWhisperEngine(store.resolve("whisper-base"))
    recording = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")
    audio, other = recording[:4 * 16000], recording[10 * 16000:14 * 16000]
    decoded = engine.transcribe(audio, "", "en")
    assert len(decoded.text.split()) >= 4, decoded.text
    reused = engine.text_log_probs(audio, decoded.text, "en")  # the decode's own encoding
    engine.transcribe(other, "", "en")
    fresh = engine.text_log_probs(audio, decoded.text, "en")  # another window decoded since: encoded anew
    assert len(reused) == len(fresh) >= 4
    np.testing.assert_allclose(reused, fresh, atol=1e-3)
    assert all(x <= 0 for x in reused)
    # the same words in reverse order read as far less likely from the same audio
    backwards = " ".join(reversed(decoded.text.split()))
    assert np.mean(engine.text_log_probs(audio, backwards, "en")) < np.mean(reused) - 1.0


@pytest.mark.slow
def test_both_models_win_lines_and_each_line_is_its_models_greedy_output(store, shared):
    from core.asr import FasterWhisperEngine
    from core.asr.verified import VerifiedEngine, kept_words, make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    tiny, base = (FasterWhisperEngine(store.resolve(name)) for name in ("whisper-tiny.en", "whisper-base"))
    engine = VerifiedEngine(tiny, base, cross_check=True)
    audio = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")
    transcriber = make_transcriber(engine, streaming_options(Settings()))
    updates = []
    for i in range(0, len(audio), 8000):  # 0.5 s chunks, as the app reads them
        updates += transcriber.push(audio[i:i + 8000])
    updates.append(transcriber.finish())
    sentences = [s for u in updates for s in u.sentences]
    lines = transcriber.lines
    assert [x.sentence for x in lines] == sentences
    # the recording's lines are not all heard best by one model (without cross-checking base decodes all); a
    # window base is sure of is not decoded again
    assert engine.chosen[tiny.name] >= 1 and engine.chosen[base.name] >= 1, engine.chosen
    assert {x.model for x in lines if not x.fallback} == {tiny.name, base.name}
    again = {name: FasterWhisperEngine(store.resolve(name.split(":")[-1])) for name in (tiny.name, base.name)}
    for line in lines:
        print(f"{line.model}: {line.drafted!r} -> {line.sentence.text!r}")
        if line.fallback:
            continue
        clip = audio[int(round(line.start * 16000)):int(round(line.end * 16000))]
        redo = [w.shifted(line.start) for w in again[line.model].transcribe(clip, line.prompt, "en").words]
        assert [w.text for w in redo] == [w.text for w in line.words], line
        first, last = line.kept
        assert line.sentence.text == "".join(w.text for w in kept_words(line)).strip()
        assert all(first <= k < last for k in line.left_out)  # a squashed copy inside the run, left out
        assert line.sentence.verified


@pytest.mark.slow
def test_the_setting_reaches_the_engine(store):
    from core.session.engines import create_asr_engine
    from core.settings import Settings

    for on in (True, False):
        engine = create_asr_engine(Settings().with_value("asr.cross_check", on), store)
        assert engine.cross_check is on and engine.verifies_lines
    # off by default: more CPU and later lines for a gain within noise on the calls (docs/BENCHMARKS.md)
    assert not Settings().asr.cross_check


@pytest.mark.slow
def test_a_failing_cross_check_leaves_the_verifiers_decode(store, shared):
    """A drafter that fails while scoring (a fault put into the real engine) costs the line its second
    opinion, not its verification."""
    from core.asr import FasterWhisperEngine
    from core.asr.verified import VerifiedEngine
    from core.audio import decode_file

    class Failing:
        def __init__(self, engine):
            self.engine, self.calls = engine, 0

        def __getattr__(self, name):
            return getattr(self.engine, name)

        def text_log_probs(self, *args, **kwargs):
            self.calls += 1
            raise RuntimeError("scoring failed")

    tiny, base = (FasterWhisperEngine(store.resolve(name)) for name in ("whisper-tiny.en", "whisper-base"))
    drafter = Failing(tiny)
    engine = VerifiedEngine(drafter, base, cross_check=True)
    audio = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")
    for start in range(0, 24, 3):  # windows until one that base is unsure of is cross-checked
        clip = audio[start * 16000:(start + 6) * 16000]
        hypothesis = engine.verify(clip, "", "en")
        assert hypothesis.model == base.name
        assert hypothesis.text == base.transcribe(clip, "", "en").text
        if drafter.calls:
            break
    assert drafter.calls >= 1
