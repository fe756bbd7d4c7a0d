"""Verified lines (core/asr/verified.py): tiny.en streams, base confirms each finished line.

With the real bundled models: every committed line is a contiguous run of the verifier's own
greedy words for the audio it decoded and the prompt it was given (decoded again here by a second
instance of the verifier), and the pipeline commits, journals and translates the verified lines."""

from __future__ import annotations

import dataclasses

import pytest

from core.stream import Word

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def verified_engine(store):
    from core.asr import FasterWhisperEngine
    from core.asr.verified import VerifiedEngine

    return VerifiedEngine(FasterWhisperEngine(store.resolve("whisper-tiny.en")),
                          FasterWhisperEngine(store.resolve("whisper-base")))


def _stream(engine, audio):
    from core.asr.verified import make_transcriber
    from core.session.engines import streaming_options
    from core.settings import Settings

    transcriber = make_transcriber(engine, streaming_options(Settings()))
    updates = []
    for i in range(0, len(audio), 8000):  # 0.5 s chunks, as the app reads them
        updates += transcriber.push(audio[i:i + 8000])
    updates.append(transcriber.finish())
    return transcriber, updates


@pytest.fixture(scope="module")
def acoustic(verified_engine, shared):
    """mfa_acoustic_corpus streamed once for the tests that only read the result: (audio, transcriber, updates)."""
    from core.audio import decode_file

    audio = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")
    return (audio, *_stream(_Windows(verified_engine), audio))  # the drafter's windows noted as it streams


@pytest.fixture(scope="module")
def sonnet(verified_engine, shared):
    """librivox_shakespeare_sonnet001 streamed once for the tests that read it: (transcriber, updates)."""
    from core.audio import decode_file

    return _stream(verified_engine, decode_file(shared / "asr" / "librivox_shakespeare_sonnet001.wav"))


def test_each_committed_line_is_a_run_of_the_verifiers_greedy_words(acoustic, store):
    from core.asr import FasterWhisperEngine
    from core.asr.verified import kept_words

    audio, transcriber, updates = acoustic
    sentences = [s for u in updates for s in u.sentences]
    lines = transcriber.lines
    assert len(lines) >= 5 and [x.sentence for x in lines] == sentences
    again = FasterWhisperEngine(store.resolve("whisper-base"))  # a second instance: same weights, same greedy
    checked = 0
    for line in lines:
        print(f"{line.drafted!r} -> {line.sentence.text!r} [{line.start:.2f}-{line.end:.2f}]")
        if line.fallback:
            continue
        clip = audio[int(round(line.start * 16000)):int(round(line.end * 16000))]
        redo = again.transcribe(clip, line.prompt, "en")
        words = [w.shifted(line.start) for w in redo.words]
        assert [w.text for w in words] == [w.text for w in line.words], line
        first, last = line.kept
        assert line.sentence.text == "".join(w.text for w in kept_words(line)).strip()
        assert all(first <= k < last for k in line.left_out)  # a squashed copy inside the run, left out
        checked += 1
    assert checked >= 4, checked
    assert transcriber.fallbacks <= 1
    # the context is the verified line before (context_s = 2 s, whole lines): 5.6 s of audio per decode
    # on this clip, against 8.6 s with the 6 s of context it had before (docs/BENCHMARKS.md)
    window = sum(x.end - x.start for x in lines) / len(lines)
    assert window < 7.0, window


def test_the_context_reaches_back_over_a_short_pause_and_not_over_a_long_one(verified_engine, shared):
    """A line after a pause shorter than ``pause_s`` (3 s) is decoded with the line before it (from
    its own audio alone base heard mfa_acoustic_corpus's "And that should be all", 1.9 s after the
    line before, as "and I'll see you all"); after a longer pause the context starts afresh. Three
    recordings with 1.6 s and then 4 s of silence between them."""
    import numpy as np

    from core.asr.verified import VerifyOptions
    from core.audio import decode_file

    names = ("librispeech_61-70968-0000.flac", "librispeech_1089-134691-0001.flac", "librispeech_2412-153948-0000.flac")
    clips = [decode_file(shared / "asr" / name) for name in names]
    silence = [np.zeros(int(s * 16000), dtype=np.float32) for s in (1.6, 4.0)]
    audio = np.concatenate([clips[0], silence[0], clips[1], silence[1], clips[2]])
    transcriber, _updates = _stream(verified_engine, audio)
    lines = transcriber.lines
    pause_s = VerifyOptions().pause_s
    short = long = 0
    for before, line in zip(lines, lines[1:], strict=False):
        gap = line.drafted_start - before.drafted_end
        if gap >= pause_s:
            long += 1
            assert line.start >= before.drafted_end, (line.drafted, line.start, before.drafted_end)
        elif gap > 1.5:  # a pause that started the context afresh before (pause_s was 1.5 s)
            short += 1
            assert line.start < before.drafted_end, (line.drafted, line.start, before.drafted_end)
    assert short >= 1 and long >= 1, [(x.drafted, x.drafted_start, x.drafted_end, x.start) for x in lines]


def test_a_stretch_no_drafter_line_holds_is_no_pause_where_the_verifier_heard_it():
    """After a stall (the CPU taken, then 12 s of a real call at once, SNG1640 with AVX2 kernels) tiny.en's
    lines went from "Can I please get the entrance fee?" (to 10.8 s) to "Okay, one part." (from 15.0 s):
    "Entrance fee, can let me have a look. It will cost you one pound." was in no line. The 4.2 s between
    the lines looked like a pause, so the next decode started just before its line and the stretch was
    lost, though base's decode of the line before had heard it. Where that decode heard two words or more
    between the lines, the next one reads them; where it heard none, the time is a pause."""
    from core.asr.verified import LineVerifier, VerifiedLine
    from core.stream import Sentence

    def w(start, text):
        return Word(start, start + 0.3, " " + text, 0.9)

    said = [w(7.36, "Can"), w(8.0, "I"), w(8.16, "please"), w(8.52, "get"), w(8.78, "the"), w(9.46, "entrance"),
            w(9.98, "fee?")]
    heard_after = [w(11.24, "Entrance"), w(11.88, "fee,"), w(12.82, "can"), w(12.92, "let"), w(13.06, "me"),
                   w(13.16, "have"), w(13.36, "a"), w(13.54, "look."), w(14.56, "It"), w(14.72, "will")]
    next_line = Sentence(9, "Okay, one part.", 15.0, 17.96)
    for after_line, reaches_back in ((heard_after, True), ([], False)):
        verifier = LineVerifier(None, None)
        words = said + after_line
        line = Sentence(8, "Can I please get the entrance fee?", 7.36, 10.28)
        verifier.lines = [VerifiedLine(line, "Can I please get the entrance fee?", 2.54, 20.0, "", words, (0, 7))]
        verifier._verified_words = list(said)
        verifier._cut, verifier._last_end = 10.8, 10.8
        start = verifier._context_start(next_line)
        assert (start < 10.8) == reaches_back, (start, after_line)


def test_a_line_after_a_pause_can_wait_for_a_longer_window(verified_engine, shared):
    """With ``min_window_s`` no line is decoded with less audio than that, save at the end of the
    stream; without it, the first line of mfa_acoustic_corpus is decoded with under 6 s."""
    from core.asr.streaming import StreamingTranscriber
    from core.asr.verified import LineVerifier, VerifyOptions
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")[: 12 * 16000]
    for wait in (0.0, 6.0):
        transcriber = LineVerifier(StreamingTranscriber(verified_engine, streaming_options(Settings())),
                                   verified_engine, VerifyOptions(min_window_s=wait))
        for i in range(0, len(audio), 8000):
            transcriber.push(audio[i:i + 8000])
        transcriber.finish()
        short = [x for x in transcriber.lines if x.end - x.start < 6.0 and abs(x.end - 12.0) > 0.01]
        assert bool(short) == (wait == 0.0), [(x.start, x.end, x.sentence.text) for x in transcriber.lines]


class _Windows:
    """The real engine, noting how many seconds of audio each drafter decode reads."""

    def __init__(self, engine) -> None:
        self.engine, self.seconds = engine, []

    def transcribe(self, audio, *args, **kwargs):
        self.seconds.append(len(audio) / 16000)
        return self.engine.transcribe(audio, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.engine, name)


def test_the_drafters_window_is_trimmed_sooner_when_its_lines_are_verified(verified_engine, acoustic):
    """With a verifier the drafter's words are drafts: its window is trimmed at a line end beyond
    ``drafter_trim_s`` instead of the app's 8 s, so it decodes shorter windows than the same model
    streaming alone (fewer tokens per decode); the lines are still verified."""
    from core.asr.verified import LineVerifier, VerifyOptions, make_transcriber
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio, verified, _updates = acoustic
    options = streaming_options(Settings())
    assert options.buffer_trim_s > VerifyOptions().drafter_trim_s
    alone = _Windows(verified_engine.drafter)
    transcriber = make_transcriber(alone, options)
    assert not isinstance(transcriber, LineVerifier) and isinstance(verified, LineVerifier)
    for i in range(0, len(audio), 8000):
        transcriber.push(audio[i:i + 8000])
    transcriber.finish()
    mean = {name: sum(e.seconds) / len(e.seconds) for name, e in (("alone", alone), ("verified", verified.engine))}
    # verified, not the drafter's
    assert len(verified.lines) >= 5 and sum(x.fallback for x in verified.lines) <= 1
    print(mean)
    assert mean["verified"] < 0.85 * mean["alone"], mean


def test_held_lines_are_shown_as_lines_of_their_own_and_replaced_in_place(acoustic):
    """A finished line waits for ``lookahead_s`` of audio after it; meanwhile it is a held line of the
    update (not part of the partial line's committed words), shown on a row of its own; its
    verified text then takes that row, and the partial line under it is not touched."""
    from core.asr.verified import VerifyOptions
    from core.captions.policy import CaptionPolicy, shown_lines

    _audio, transcriber, updates = acoustic
    held = {x.drafted for u in updates for x in transcriber.lines if x.drafted in u.held}
    assert held, "no update showed a finished line while it waited for its verification"
    first_line = next(x for x in transcriber.lines if x.drafted in held)
    held_at = [i for i, u in enumerate(updates) if first_line.drafted in u.held]
    assert not any(u.committed.strip().startswith(first_line.drafted) for u in updates)
    commit = next(i for i, u in enumerate(updates) if first_line.sentence in u.sentences)
    assert held_at[-1] == commit - 1 and first_line.drafted not in updates[commit].held
    assert all(x.end >= x.drafted_end + VerifyOptions().lookahead_s - 1e-6 for x in transcriber.lines[:-1])

    policy = CaptionPolicy(mask_k=3)
    views = [policy.on_transcript(u) for u in updates]
    before, after = shown_lines(views[commit - 1]), shown_lines(views[commit])
    row = next(k for k, text in before.items() if text == first_line.drafted)
    assert after[row] == first_line.sentence.text  # the verified line on the held line's row
    assert views[commit - 1].partial.held[0] == first_line.drafted
    # the partial line's row keeps its place; and what the translator reads still holds the held lines
    partial_row = (row[0], row[1] + len(views[commit - 1].partial.held))
    assert partial_row in after and updates[commit - 1].partial.startswith(first_line.drafted)


def test_a_step_that_verifies_a_line_leaves_the_drafters_decode_to_the_next(acoustic):
    """The verifier's decode reads the newest audio too, so a step that verifies a held line does
    not also decode the drafter's window (one drafter decode fewer per line): the drafter decodes at
    the next step, with the new audio of both. Its words are drafts either way. (A line the drafter
    finishes late enough to be verified at once is verified with that decode; and the decode that
    settles a line when the speaker pauses is not put off.)"""
    _audio, transcriber, updates = acoustic
    assert sum(1 for u in updates if u.timings.asr > 0) == transcriber.decodes
    steps = [u for before, u in zip(updates, updates[1:-1], strict=False)
             if u.sentences and before.held and not u.paused]  # a line held since an earlier step verified
    # steps to check: 3 to 6 with the machines' and kernels' line cuts so far (3: AVX2 kernels on a Zen 5)
    assert len(steps) >= 2
    assert [u.timings.asr for u in steps] == [0.0] * len(steps)


def _keys(text: str) -> list[str]:
    """A line's words as the recheck compares them (core.asr.verified.word_key, empty ones left out)."""
    from core.asr.verified import word_key

    return [k for k in map(word_key, text.split()) if k]


def test_a_line_heard_otherwise_than_drafted_is_decoded_again_later(verified_engine, acoustic, store):
    """With ``recheck_s`` (``asr.verify_recheck_s``, off by default): where the verifier's first decode
    of a line has the drafter's words, the line is committed then (``lookahead_s`` after it); where it
    heard other words, the line waits for ``recheck_s`` of audio after it and is decoded again, and
    that decode is committed, still a run of the verifier's greedy words for its audio and prompt."""
    from core.asr import FasterWhisperEngine
    from core.asr.verified import VerifyOptions, make_transcriber
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = acoustic[0]
    options = VerifyOptions(recheck_s=2.5)
    transcriber = make_transcriber(verified_engine, streaming_options(Settings()), options)
    for i in range(0, len(audio), 8000):
        transcriber.push(audio[i:i + 8000])
    transcriber.finish()
    end = len(audio) / 16000 - 0.01

    own = [x for x in transcriber.lines if x.seconds > 0 and not x.fallback and x.end < end]  # not carried
    early = [x for x in own if x.end < x.drafted_end + options.recheck_s - 0.01]
    late = [x for x in own if x.first]
    for x in own:
        print(f"{x.drafted!r} -> {x.sentence.text!r}: decoded {x.end - x.drafted_end:.2f} s after the line")
    assert transcriber.rechecks >= 1 and len(late) >= 1 and len(early) >= 3
    assert all(_keys(x.sentence.text) == _keys(x.drafted) for x in early), \
        [(x.drafted, x.sentence.text) for x in early if _keys(x.sentence.text) != _keys(x.drafted)]
    again = FasterWhisperEngine(store.resolve("whisper-base"))
    for x in late:
        assert x.end >= x.drafted_end + options.recheck_s - 0.01
        assert _keys(" ".join(w.text for w in x.first)) != _keys(x.drafted)  # why it waited
        clip = audio[int(round(x.start * 16000)):int(round(x.end * 16000))]
        redo = again.transcribe(clip, x.prompt, "en")
        assert [w.text for w in redo.words] == [w.text for w in x.words], x
    # off (the default), no line waits for more than its decode
    assert acoustic[1].rechecks == 0 and not any(x.first for x in acoustic[1].lines)


def test_a_stop_while_a_line_waits_for_its_recheck_keeps_its_first_decode(verified_engine, acoustic):
    """A Stop (abort, then finish) while lines wait for their recheck commits each as its first decode
    heard it, verified (the verifier's greedy words), not the drafter's line marked unverified."""
    from core.asr.verified import VerifyOptions, make_transcriber
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = acoustic[0]
    transcriber = make_transcriber(verified_engine, streaming_options(Settings()), VerifyOptions(recheck_s=8.0))
    for i in range(0, len(audio), 8000):
        transcriber.push(audio[i:i + 8000])
    assert transcriber.rechecks >= 1
    waiting = sum(1 for p in transcriber._pending if p.first is not None)  # lines held for their recheck
    assert waiting >= 1, "no line was waiting for its recheck at the Stop"
    transcriber.abort()
    transcriber.finish(decode=False)  # as the pipeline's quick Stop

    kept = [x for x in transcriber.lines if x.sentence.verified and x.end < x.drafted_end + 8.0 - 0.01
            and _keys(x.sentence.text) != _keys(x.drafted)]
    assert len(kept) >= waiting, [(x.drafted, x.sentence.text, x.sentence.verified) for x in transcriber.lines]


def test_line_selection_strips_verified_words_and_ends_at_the_drafters_last_word():
    from core.asr.verified import VerifyOptions, select_line

    def w(start, text, p=0.9):
        return Word(start, start + 0.3, text, p)

    verified = [w(0.0, " And"), w(0.4, " so")]
    words = [w(0.0, " And"), w(0.4, " so"), w(0.8, " my"), w(1.2, " fellow"), w(1.6, " Americans,"),
             w(2.0, " ask"), w(2.4, " not", 0.1)]
    # the verified tail is skipped, the line ends at "Americans" (the drafter's last word, "americans")
    assert select_line(words, verified, 0.7, "americans", 1.9, VerifyOptions()) == (2, 5)
    # no match for the drafter's last word: words whose middle lies before the line's end
    assert select_line(words, verified, 0.7, "citizens", 2.2, VerifyOptions()) == (2, 6)
    # the drafter's last word matched after the line's end, but improbable there: left out
    assert select_line(words, verified, 0.7, "not", 2.3, VerifyOptions()) == (2, 6)
    assert select_line(words, verified, 0.7, "not", 2.3, VerifyOptions(late_probability=0.0)) == (2, 7)
    # the decode's timing put the verified words after the cut: they are not committed twice
    assert select_line(words, verified, -0.5, "americans", 1.9, VerifyOptions()) == (2, 5)
    # a word said again and again (mfa_acoustic_corpus: "more words, words, words, words"): the decode
    # heard the verified ones where they were, so the repeats after them are new words, kept
    verified = [w(0.0, " more"), w(0.4, " words."), w(0.8, " Words,")]
    words = [w(0.0, " more"), w(0.4, " words."), w(0.8, " Words,"), w(1.2, " words,"), w(1.6, " words."),
             w(2.0, " And")]
    assert select_line(words, verified, 1.1, "and", 2.3, VerifyOptions()) == (3, 6)
    # the decode timed the verified line's end seconds later and heard its last word differently (a
    # live run of the reading): the repeat is not committed again, what follows it is
    said = "In 1465, Sweynheim and Panartes began printing in the monastery of Subeck".split()
    verified = [w(0.3 * i, " " + t) for i, t in enumerate(said)]
    again = "Sweynheim and Panartes began printing in the monastery of Subiaco near Rome, and used".split()
    words = [w(3.7 + 0.3 * i, " " + t) for i, t in enumerate(again)]
    assert select_line(words, verified, 3.6, "used", 7.9, VerifyOptions()) == (10, 14)
    # ... or timed it where it was, all but its last word, heard again just after the cut
    words = [w(1.0 + 0.3 * i, " " + t) for i, t in enumerate(again)]
    assert select_line(words, verified, 3.6, "used", 4.9, VerifyOptions()) == (10, 14)
    # ... but a phrase said again right after it was heard (the decode heard it where it was) stays
    words = verified + [w(3.6 + 0.3 * i, " " + t) for i, t in enumerate("in the monastery of Subeck".split())]
    assert select_line(words, verified, 3.5, "subeck", 5.1, VerifyOptions()) == (12, 17)


def test_a_word_starting_inside_the_verified_last_words_stretch_is_new():
    """The next decode says the verified lines its window opens with first, at times of its own. Whisper
    stretches a line's last word over the pause after it, and the next decode can start the next word
    inside that stretch. SNG0072 (fast mode): "Thank you." was verified with "you." from 94.62 to
    95.62 s; the next decode heard "you." from 94.64 s and "You will welcome." from 95.42 s, so by its
    middle (95.61 s) "You" lay before the verified end and was lost. The decode heard the verified last
    word where it was: what follows it is new."""
    from core.asr.verified import VerifyOptions, select_line

    said = [(" Just", 93.08, 93.36), (" for", 93.36, 93.6), (" the", 93.6, 93.76), (" information.", 93.76, 94.26),
            (" Thank", 94.48, 94.62), (" you.", 94.62, 95.62)]
    heard = [(" I", 92.8, 93.12), (" just", 93.12, 93.36), (" for", 93.36, 93.6), (" the", 93.6, 93.76),
             (" information.", 93.76, 94.28), (" Thank", 94.48, 94.64), (" you.", 94.64, 95.42),
             (" You", 95.42, 95.8), (" will", 95.8, 96.32), (" welcome.", 96.32, 97.08), (" Thanks", 97.38, 97.62),
             (" for", 97.62, 97.78), (" calling.", 97.78, 98.12)]
    verified = [Word(a, b, t) for t, a, b in said]
    words = [Word(a, b, t) for t, a, b in heard]
    assert select_line(words, verified, 95.62, "come", 97.24, VerifyOptions()) == (7, 10)
    # a one-word line the next decode opens with, stamped at the window's start (SNG1640, tune: "Can" verified
    # from 42.26 s; the next decode heard "Can" at 40.76 s and "I" from 42.26 s): what follows it is new
    verified = [Word(a, b, t) for t, a, b in [(" Okay,", 39.52, 40.18), (" that's", 40.18, 40.36),
                                              (" perfect.", 40.36, 40.9), (" Can", 42.26, 43.02)]]
    heard = [(" Can", 40.76, 42.26), (" I", 42.26, 43.16), (" please", 43.16, 43.5), (" get", 43.5, 43.78),
             (" the", 43.78, 44.44), (" entrance", 44.44, 44.98), (" fee?", 44.98, 45.4)]
    words = [Word(a, b, t) for t, a, b in heard]
    assert select_line(words, verified, 42.98, "fee", 45.98, VerifyOptions()) == (1, 7)
    # a phrase said twice in the decode, the verified one and again after it: the repeat is not new
    verified = [Word(0.3 * i, 0.3 * i + 0.3, t) for i, t in enumerate([" See", " you", " soon."])]
    words = verified + [Word(0.9 + 0.1 * i, 1.0 + 0.1 * i, t) for i, t in enumerate([" See", " you", " soon."])] + \
        [Word(2.0, 2.3, " Bye.")]
    assert select_line(words, verified, 1.2, "bye", 2.3, VerifyOptions())[0] == 6


def test_a_phrase_said_again_squashed_into_the_windows_end_is_not_committed():
    """Whisper fills the end of a real-time window by saying the last phrase again in a fraction of
    its time; the drafter heard it once. Seen in real-time rounds of a held-out call (SNG0072):
    "Of course." became "Of course. Of course." (the copy's words at one instant) and "Okay,
    great." became "Okay, great. Okay, great." (the copy in 0.1 s). A phrase said twice takes its
    time twice, or the drafter heard it twice too: kept."""
    from core.asr.verified import squashed_echo

    def ws(*spans):
        return [Word(a, b, " " + t) for a, b, t in spans]

    of_course = ws((21.32, 22.30, "Of"), (22.42, 22.74, "course."), (22.74, 22.74, "Of"), (22.74, 22.74, "course."))
    assert squashed_echo(of_course, "Of course.") == 2
    okay_great = ws((52.15, 52.80, "Okay,"), (52.89, 53.05, "great."), (53.05, 53.15, "Okay,"),
                    (53.15, 53.20, "great."))
    assert squashed_echo(okay_great, "Okay, great.") == 2
    be_it = ws((85.14, 85.40, "Be"), (85.40, 85.40, "it."), (85.40, 85.48, "Be"), (85.48, 85.48, "it."))
    assert squashed_echo(be_it, "Okay. Please. Be it.") == 2
    # said twice at its own pace: kept, whatever the drafter heard
    bye = ws((98.46, 99.00, "Bye"), (99.02, 99.50, "bye."), (99.62, 100.10, "Bye"), (100.12, 100.60, "bye."))
    assert squashed_echo(bye, "Bye bye.") == 0
    # squashed, but the drafter heard it twice as well: kept
    assert squashed_echo(of_course, "Of course. Of course.") == 0
    # no repeat at the end: nothing to drop
    assert squashed_echo(of_course[:3], "Of course.") == 0
    assert squashed_echo([], "") == 0


def test_a_phrase_said_early_squashed_before_the_phrase_as_said_is_committed_once():
    """Whisper may say a phrase early, squashed, and then again where it was said. Seen at 0.4 s
    chunks in a tune call (SNG1640, fast mode, Zen 4): the line the drafter heard as "Okay." was
    committed as "Okay, one more thing. Okay," (its decode's words below; the drafter's last word
    matched the second "Okay,") and the next line committed "one more thing." again; the line before
    committed "It's very reasonable. Very reasonable." where the call says "very reasonable" once."""
    from core.asr.verified import VerifyOptions, select_spoken, squashed_copy

    def ws(*spans):
        return [Word(a, b, " " + t) for a, b, t in spans]

    okay = ws((56.56, 56.96, "Okay,"), (56.96, 56.96, "one"), (56.96, 56.96, "more"), (56.96, 56.96, "thing."),
              (57.86, 58.26, "Okay,"), (58.70, 58.80, "one"), (58.80, 58.98, "more"), (58.98, 59.18, "thing."))
    verified = ws((55.16, 55.62, "Very"), (55.62, 55.98, "reasonable."))
    assert squashed_copy(okay, "Okay.") == (0, 4)
    first, last, left_out = select_spoken(okay, verified, 55.98, "Okay.", "okay", 58.26, VerifyOptions())
    assert (first, last, left_out) == (4, 5, ())  # "Okay,": the next line's "one more thing." is new
    reasonable = ws((53.30, 53.62, "It's"), (53.62, 53.88, "free."), (54.12, 54.26, "It's"),
                    (54.26, 54.26, "very"), (54.26, 54.26, "reasonable."), (55.16, 55.62, "Very"),
                    (55.62, 55.98, "reasonable."))
    before = ws((53.44, 53.62, "That's"), (53.62, 54.06, "reasonable."))
    first, last, left_out = select_spoken(reasonable, before, 54.06, "Very reasonable.", "reasonable", 56.16,
                                          VerifyOptions())
    kept = [w.text.strip() for k, w in enumerate(reasonable[first:last], first) if k not in left_out]
    assert kept == ["It's", "Very", "reasonable."] and left_out == (3, 4)
    # said twice at its own pace, or heard twice by the drafter: no copy
    bye = ws((98.46, 99.00, "Bye"), (99.02, 99.50, "bye."), (99.62, 100.10, "Bye"), (100.12, 100.60, "bye."))
    assert squashed_copy(bye, "Bye bye.") is None
    assert squashed_copy(okay, "Okay, one more thing. Okay, one more thing.") is None
    assert squashed_copy(okay[4:], "Okay, one more thing.") is None


def test_a_line_the_decode_before_heard_past_its_own_line_is_carried():
    """Two decodes that disagree on where one line ends lose the words between them: base's decode of
    SNG1640's "Um..." line (a real call, AVX-512 kernels) heard "… reasonable. Very reasonable.", the
    drafter's line ended after "Very", and the next line's decode ("Very reasonable.") timed its only
    "reasonable." at its window's first instant, before what was verified: nothing new. The words the
    decode before heard past its line, up to the drafter's last word, are that line."""
    from core.asr.verified import VerifiedLine, VerifyOptions, carried_range
    from core.stream import Sentence

    def w(start, end, text):
        return Word(start, end, " " + text, 0.9)

    heard = [w(16.15, 17.5, "Okay,"), w(17.55, 17.63, "one"), w(17.63, 17.89, "part"), w(17.89, 18.19, "that's"),
             w(18.19, 18.27, "each"), w(18.27, 18.57, "touch"), w(18.57, 19.1, "reasonable."),
             w(20.03, 20.61, "Very"), w(20.61, 21.02, "reasonable.")]
    before = VerifiedLine(Sentence(7, "Very", 20.03, 20.61), "Um...", 16.15, 21.5, "", heard, (7, 8))
    verified = heard[6:8]
    # the next line, "Very reasonable." (20.86-21.18): its last word is the one past the line before
    assert carried_range(before, verified, 20.61, "reasonable", 21.18, VerifyOptions()) == (8, 9)
    # a drafter's line the decode before did not hear past its own: nothing carried
    assert carried_range(before, verified, 20.61, "thing", 24.4, VerifyOptions()) is None
    assert carried_range(dataclasses.replace(before, kept=(7, 9)), heard[6:9], 21.02, "reasonable", 21.18,
                         VerifyOptions()) is None
    # a decode that loops is not heard past its line
    looping = heard[:8] + [w(20.61 + 0.01 * i, 20.62 + 0.01 * i, "reasonable.") for i in range(40)]
    assert carried_range(dataclasses.replace(before, words=looping), verified, 20.61, "reasonable", 21.18,
                         VerifyOptions()) is None


def test_a_loop_after_the_lines_words_leaves_them_verified(verified_engine, sonnet, shared):
    """A verifier decode that falls into a loop after the line (sonnet001 with AVX-512 kernels: "…
    self-substantial fuel, making a fa - - - - …") still verifies the line's words before the loop;
    only a loop that reaches into the line leaves the drafter's line committed. Whether the sonnet
    loops depends on the kernels, so the case is made on any CPU: jfk's last word said again and again
    after its last line, which reaches the verifier in one piece with the end of the stream; base's
    decode of the line runs on past the audio ("… for your country country country …")."""
    import numpy as np

    from core.asr.streaming import degenerate
    from core.asr.verified import before_loop, make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    def w(start, text):
        return Word(start, start + 0.3, text, 0.9)

    said = [w(0.3 * i, " " + t) for i, t in enumerate("with self substantial fuel, making a fa".split())]
    assert before_loop(said + [w(3.0 + 0.1 * i, " -") for i in range(60)]) == len(said)
    phrase = [w(3.0 + 0.1 * i, t) for i, t in enumerate([" thanks", " for", " watching."] * 30)]
    # a phrase over and over: cut where the words so far become as repetitive as Whisper refuses
    assert len(said) <= before_loop(said + phrase) < len(said) + len(phrase)
    assert before_loop(said) == len(said)

    jfk = decode_file(shared / "asr" / "jfk.flac")
    country = jfk[int(9.9 * 16000):int(10.5 * 16000)]  # "... for your country."
    # the line waits for 5 s of audio after it (the longest wait Settings offers), so that on any CPU it is
    # verified with the repeats in its window: a drafter that commits "... your country." as it is said
    # would otherwise have it verified before they arrive
    settings = Settings().with_value("asr.verify_lookahead_s", 5.0)
    transcriber = make_transcriber(verified_engine, streaming_options(settings))
    speech = jfk[:int(10.5 * 16000)]
    for i in range(0, len(speech), 8000):
        transcriber.push(speech[i:i + 8000])
    transcriber.insert_audio(np.concatenate([country] * 16))
    transcriber.finish()
    assert transcriber.lines[-1].end > 10.5 + 8 * len(country) / 16000, "the last line was verified before the repeats"
    made = [x for x in transcriber.lines if degenerate("".join(w.text for w in x.words))]
    for line in transcriber.lines:
        print(f"{line.drafted!r} -> {line.sentence.text!r} fallback={line.fallback} kept={line.kept} "
              f"heard {''.join(w.text for w in line.words)[:100]!r}")
    assert made, "no verifier decode looped after jfk's last line"

    sonnet_lines = sonnet[0].lines
    looped = made + [x for x in sonnet_lines if degenerate("".join(w.text for w in x.words))]
    assert all(not x.fallback and x.kept[0] < x.kept[1] <= before_loop(x.words) for x in looped)
    assert transcriber.fallbacks == 0 and sonnet[0].fallbacks == 0


class _Again:
    """The real drafter's transcriber, finishing again, at its next update, each line numbered in
    ``again`` of those the verifier has verified (fallbacks left out): its verified text, where the
    verifier heard it. The verifier's decode for it then holds only words it has verified already, as
    when tiny.en finished mfa_acoustic_corpus's "We're just saying some words." (with AVX2 kernels)
    after base had verified those words with the line before."""

    def __init__(self, transcriber, again: tuple[int, ...]) -> None:
        self.transcriber, self.again = transcriber, again
        self.verifier = None  # the LineVerifier around this
        self.finished, self.repeated, self.done = 0, [], set()

    def process(self):
        return self._with_repeats(self.transcriber.process())

    def finish(self, decode: bool = True):
        return self._with_repeats(self.transcriber.finish(decode))

    def _with_repeats(self, update):
        if update is None:
            return update
        self.finished += len(update.sentences)
        lines = [x for x in self.verifier.lines if not x.fallback]  # lines the verifier heard itself
        due = [i for i in self.again if i < len(lines) and i not in self.done]
        repeats = [dataclasses.replace(lines[i].sentence) for i in due]
        self.done.update(due)
        self.repeated += repeats
        return dataclasses.replace(update, sentences=[*repeats, *update.sentences])

    def __getattr__(self, name: str):
        return getattr(self.transcriber, name)


def test_a_line_the_verifier_hears_nothing_new_in_is_not_committed(verified_engine, acoustic, sonnet, shared):
    """Where the verifier's decode holds words but none new in a drafter's line, nothing is committed
    for that line (``LineVerifier.dropped``); committing the drafter's line there committed
    mfa_cold_corpus's last line "x." (base: "… Alright, thanks." and nothing after) and, with AVX2
    kernels, mfa_acoustic_corpus's "We're just saying some words." a second time. Which recording
    has such a line of its own depends on the CPU's kernels, so the case is made on any CPU: the real
    drafter finishes two of mfa_cold_corpus's verified lines again, and the real verifier, decoding
    the real audio once more, hears nothing new in them. The drafter's line is committed only where
    the decode holds no words or loops into the line; the three recordings' own lines are checked
    for that too."""
    from core.asr.streaming import degenerate
    from core.asr.verified import make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = decode_file(shared / "asr" / "mfa_cold_corpus.wav")
    cold = make_transcriber(verified_engine, streaming_options(Settings()))
    cold.transcriber = drafter = _Again(cold.transcriber, again=(0, 2))
    drafter.verifier = cold
    cold_updates = []
    for i in range(0, len(audio), 8000):
        cold_updates += cold.push(audio[i:i + 8000])
    cold_updates.append(cold.finish())

    assert len(drafter.repeated) == 2, [x.sentence.text for x in cold.lines]
    committed = [s.text for u in cold_updates for s in u.sentences]
    # every line the drafter finished is committed once or dropped, the repeats dropped
    assert len(cold.lines) + len(cold.dropped) == drafter.finished + len(drafter.repeated)
    for line in drafter.repeated:
        again = [x for x in cold.dropped if x.sentence is line]
        assert again, f"the repeat of {line.text!r} was committed: {committed}"
        print(f"repeat of {line.text!r} dropped; the verifier heard {''.join(w.text for w in again[0].words)!r}")
        assert committed.count(line.text) == 1

    for transcriber, updates in (acoustic[1:], (cold, cold_updates), sonnet):
        committed = [s.text for u in updates for s in u.sentences]
        assert [x.sentence.text for x in transcriber.lines] == committed
        for line in transcriber.dropped:
            print(f"dropped {line.drafted!r}; the verifier heard {''.join(w.text for w in line.words)!r}")
            assert line.words and line.kept[0] == line.kept[1]
            if not any(line.sentence is r for r in drafter.repeated):  # (a repeat's text is committed once)
                assert line.drafted not in committed
        for line in transcriber.lines:
            if line.fallback:  # only an empty decode or one that loops into the line
                assert not line.words or degenerate("".join(w.text for w in line.words)), line


def test_a_missing_verifier_leaves_the_drafter_captioning_with_one_sentence(store, tmp_path):
    """The verifier's model gone (deleted, a bad path): captions go on with tiny.en alone, and the
    status says so in one sentence, instead of captions not starting."""
    from core.asr import FasterWhisperEngine
    from core.session.engines import create_asr_engine
    from core.settings import Settings

    said = []
    engine = create_asr_engine(Settings().with_value("asr.verifier", str(tmp_path / "gone")), store,
                               lambda text, fraction: said.append(text))
    assert isinstance(engine, FasterWhisperEngine) and not getattr(engine, "verifies_lines", False)
    note = [t for t in said if "unverified" in t]
    assert len(note) == 1 and note[0].endswith("Captions go on with whisper-tiny.en alone, unverified."), said
    assert create_asr_engine(Settings(), store).verifies_lines  # with base there, lines are verified


def test_the_verification_wait_is_the_settings(verified_engine, shared):
    """``asr.verify_lookahead_s`` reaches the verifier through the pipeline: each line is decoded with at
    least that much audio after the drafter's line (save at the stream's end), and the app's default
    decodes some lines with less than 2.5 s after them; ``asr.verify_recheck_s`` reaches it too."""
    from core.audio.sources import FileSource
    from core.session.pipeline import CaptionPipeline
    from core.settings import Settings
    from tests.conftest import Recorder

    path = shared / "asr" / "mfa_acoustic_corpus.wav"
    for wait in (Settings().asr.verify_lookahead_s, 2.5):
        settings = Settings().with_value("translation.target", "none").with_value("asr.verify_lookahead_s", wait)
        pipeline = CaptionPipeline(settings, verified_engine, None, Recorder(), realtime=False)
        summary = pipeline.run(FileSource(path))
        decoded = [x for x in pipeline.streams[0].transcriber.lines
                   if x.seconds > 0 and not x.fallback and x.end < summary.audio_seconds - 0.01]
        assert len(decoded) >= 3, [(x.drafted, x.end) for x in pipeline.streams[0].transcriber.lines]
        assert all(x.end >= x.drafted_end + wait - 0.01 for x in decoded), \
            [(x.drafted, x.drafted_end, x.end) for x in decoded]
        if wait < 2.5:
            assert any(x.end < x.drafted_end + 2.5 for x in decoded)
    settings = Settings().with_value("translation.target", "none").with_value("asr.verify_recheck_s", 2.5)
    pipeline = CaptionPipeline(settings, verified_engine, None, Recorder(), realtime=False)
    pipeline.run(FileSource(path))
    transcriber = pipeline.streams[0].transcriber
    assert transcriber.verify_options.recheck_s == 2.5 and transcriber.rechecks >= 1
