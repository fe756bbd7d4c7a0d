"""Verified lines at the edges: a quick Stop during a verifier decode, a pause, a failing verifier.

Nothing the drafter finished is lost, and nothing it alone heard is called verified: a line that
could not be verified is committed as the drafter heard it, marked ``verified: false`` in the
journal, the exports and the History, and counted in the summary. With the real bundled models
(tiny.en drafting, base verifying) on real recordings; the only thing added is a hook before a
verifier decode: a gate that holds one until the test has pressed Stop (so the Stop lands inside
it every time), or the error a model out of memory raises."""

from __future__ import annotations

import json
import threading

import pytest

from tests.conftest import Recorder

pytestmark = pytest.mark.slow


class HookedEngine:
    """The real drafter + verifier (:class:`~core.asr.verified.VerifiedEngine`), with ``hook(n)`` called
    before its n-th verifier decode (the real decode follows unless the hook raises)."""

    verifies_lines = True

    def __init__(self, engine, hook) -> None:
        self.engine = engine
        self.name = engine.name
        self.hook = hook
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def transcribe(self, *args, **kwargs):
        return self.engine.transcribe(*args, **kwargs)

    def verify(self, *args, **kwargs):
        self.calls += 1
        self.hook(self.calls)
        return self.engine.verify(*args, **kwargs)


@pytest.fixture(scope="module")
def verified_engine(store):
    from core.asr import FasterWhisperEngine
    from core.asr.verified import VerifiedEngine

    return VerifiedEngine(FasterWhisperEngine(store.resolve("whisper-tiny.en")),
                          FasterWhisperEngine(store.resolve("whisper-base")))


def _journal_sentences(directory) -> list[dict]:
    records = [json.loads(line) for line in (directory / "captions.jsonl").read_text().splitlines() if line.strip()]
    return [s for r in records if r.get("kind") == "source" for s in r["sentences"]]


def test_a_quick_stop_during_a_verifier_decode_loses_no_finished_line(verified_engine, shared, tmp_path):
    """The desktop's Stop (always quick) pressed while base decodes a held line: that line, and every
    other line the drafter had finished, is journalled (kept as the drafter heard it, marked
    unverified), the lines verified before stay verified, and the summary counts both."""
    from core.asr.threaded import ThreadedEngine
    from core.audio import FileSource
    from core.session import CaptionPipeline
    from core.session.history import export_entries, read_session
    from core.settings import Settings

    started, release = threading.Event(), threading.Event()

    def gate(n: int) -> None:  # the third verification waits until Stop has been pressed
        if n == 3:
            started.set()
            assert release.wait(60), "the test never released the gated decode"

    engine = ThreadedEngine(HookedEngine(verified_engine, gate))  # as the service runs it: Stop wakes the caller
    rec = Recorder()
    pipe = CaptionPipeline(Settings(), engine, None, rec, tmp_path, realtime=False)
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault(
        "summary", pipe.run(FileSource(shared / "asr" / "librivox_shakespeare_sonnet001.wav"))))
    thread.start()
    try:
        assert started.wait(300), "the third verification never started"
        # the pipeline's thread waits for the gated decode: every line the drafter finished is
        # committed, dropped (base heard nothing new in it) or held, the one being verified among them
        verifier = pipe.streams[0].transcriber
        before = [x.sentence for x in verifier.lines]  # committed (some perhaps not yet on screen)
        held = list(verifier.held)
        assert held and verifier.lines_finished == len(before) + len(verifier.dropped) + len(held)
        pipe.stop(quick=True)
    finally:
        release.set()
        thread.join(120)
        engine.close()
    assert not thread.is_alive()
    summary = result["summary"]

    journalled = _journal_sentences(tmp_path)
    texts = [s["text"] for s in journalled]
    assert [(s["text"], s["verified"]) for s in journalled[:len(before)]] == [(s.text, s.verified) for s in before]
    after = journalled[len(before):]
    for line in held:  # held at the Stop: kept as the drafter heard them, marked
        assert any(s["text"] == line and s["verified"] is False for s in after), (line, after)
    assert all(s["verified"] is False for s in after)
    assert summary.asr.unverified_lines == len(after) + sum(s.verified is False for s in before)
    assert summary.asr.verified_lines == sum(s.verified is True for s in before) >= 1
    assert [line.sentence.text for line in pipe.policy.lines] == texts  # on screen = journalled

    # the History and the exports carry the mark
    session = read_session(tmp_path)
    assert [e.verified for e in session.entries] == [s["verified"] for s in journalled]
    srt = export_entries(session.entries, tmp_path / "out.srt").read_text()
    txt = export_entries(session.entries, tmp_path / "out.txt").read_text()
    assert f"<i>{held[0]}</i>" in srt and f"{held[0]} (unverified)" in txt
    first = next(s.text for s in before if s.verified)
    assert f"<i>{first}" not in srt and f"{first} (unverified)" not in txt
    assert f"<i>{held[0]}</i>" in (tmp_path / "source.srt").read_text()


def _stream_until_held(transcriber, audio):
    """Stream 0.5 s chunks until a finished line is held for verification; returns the updates."""
    updates = []
    for i in range(0, len(audio), 8000):
        updates += transcriber.push(audio[i:i + 8000])
        if updates and updates[-1].held:
            return updates
    raise AssertionError("no line was ever held")


def test_a_pause_verifies_the_held_lines_and_an_abort_marks_them(verified_engine, shared):
    """Pausing (the pipeline's finish without a drafter decode) verifies every held line with the
    verifier; after an abort (a quick Stop) they are committed as the drafter heard them, marked and
    counted. Either way every held line is committed."""
    from core.asr.verified import make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")
    for abort in (False, True):
        transcriber = make_transcriber(verified_engine, streaming_options(Settings()))
        updates = _stream_until_held(transcriber, audio)
        held = list(updates[-1].held)
        verified_before = len(transcriber.lines)
        if abort:
            transcriber.abort()
        last = transcriber.finish(decode=False)
        assert not last.held and last.sentences
        if abort:
            assert [s.text for s in last.sentences[:len(held)]] == held
            assert all(s.verified is False for s in last.sentences)
            assert transcriber.unverified == len(last.sentences) and len(transcriber.lines) == verified_before
        else:
            assert all(s.verified is True for s in last.sentences)
            assert len(transcriber.lines) > verified_before  # base decoded them
            assert transcriber.unverified == 0
        assert all(s.verified is not None for u in updates for s in u.sentences)
        assert all(u.drafts for u in updates)


class SilencedEngine(HookedEngine):
    """The real engine, its ``n``-th verifier decode given silence for the audio: the real verifier
    then hears no words where the drafter heard a line (as base's decode fell into a loop from its first
    word on a line of a real call, SNG1640 with AVX-512 kernels: "Okay, one more. Okay, one more. …")."""

    def __init__(self, engine, n: int) -> None:
        super().__init__(engine, lambda _: None)
        self.n = n
        self.silenced = None

    def verify(self, audio, *args, **kwargs):
        self.calls += 1
        if self.calls != self.n:
            return self.engine.verify(audio, *args, **kwargs)
        import numpy as np

        self.silenced = self.engine.verify(np.zeros_like(audio), *args, **kwargs)
        return self.silenced


def test_a_line_whose_decode_holds_no_words_is_verified_again_with_the_next(verified_engine, shared):
    """A held line whose verifier decode holds no words (or loops into the line) is not committed as the
    drafter heard it while another line follows: the two are verified as one, by a decode with more
    audio, and committed verified (``merges``). Only where that fails too, or the stream ends first,
    is the drafter's line committed unverified."""
    from core.asr.streaming import degenerate
    from core.asr.verified import make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")
    engine = SilencedEngine(verified_engine, n=2)
    transcriber = make_transcriber(engine, streaming_options(Settings()))
    updates, finished = [], []
    drafter = transcriber.transcriber

    def noting(step):  # the drafter's finished lines, as it finishes them
        def noted(*args):
            update = step(*args)
            finished.extend(s.text for s in (update.sentences if update is not None else []))
            return update
        return noted

    drafter.process, drafter.finish = noting(drafter.process), noting(drafter.finish)
    for i in range(0, len(audio), 8000):
        updates += transcriber.push(audio[i:i + 8000])
    updates.append(transcriber.finish())

    assert engine.silenced is not None and (not engine.silenced.words or degenerate(engine.silenced.text))
    committed = [s for u in updates for s in u.sentences]
    for line in transcriber.lines:
        print(f"{line.drafted!r} -> {line.sentence.text!r} verified={line.sentence.verified}")
    assert transcriber.merges == 1 and transcriber.fallbacks == 0 and transcriber.unverified == 0
    assert all(s.verified is True for s in committed)
    joined = [x for x in transcriber.lines if x.drafted.count(" ") and x.drafted == " ".join(finished[1:3])]
    assert joined, (finished, [x.drafted for x in transcriber.lines])
    assert joined[0].sentence.text and joined[0].kept[0] < joined[0].kept[1]
    assert len(transcriber.lines) + len(transcriber.dropped) + transcriber.merges == len(finished)


class EchoingEngine(HookedEngine):
    """The real engine, each verifier decode's last two words said again at its last instant, as
    Whisper fills the end of a real-time window ("Of course. Of course.", the copy's two words at one
    instant, in real-time rounds of a held-out call)."""

    def __init__(self, engine) -> None:
        super().__init__(engine, lambda _: None)
        self.echoed: list[tuple[list, int]] = []  # (the decode's words, where the copy begins)

    def verify(self, audio, *args, **kwargs):
        import dataclasses

        from core.stream import Word

        hypothesis = self.engine.verify(audio, *args, **kwargs)
        said = [w for w in hypothesis.words if w.text.strip()][-2:]
        if len(said) < 2 or said[0].text.strip().lower() == said[1].text.strip().lower():
            return hypothesis
        at = said[-1].end
        words = hypothesis.words + [Word(at, at, w.text, w.probability) for w in said]
        self.echoed.append((words, len(hypothesis.words)))
        return dataclasses.replace(hypothesis, words=words, text="".join(w.text for w in words))


def test_a_phrase_echoed_at_a_decodes_end_is_not_committed(verified_engine, shared):
    """Where a line's words end the verifier's decode, a copy of its last words squashed into the
    decode's last instant is left out of the committed line: the line ends where the copy begins."""
    from core.asr.verified import make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = decode_file(shared / "asr" / "mfa_acoustic_corpus.wav")
    engine = EchoingEngine(verified_engine)
    transcriber = make_transcriber(engine, streaming_options(Settings()))
    for i in range(0, len(audio), 8000):
        transcriber.push(audio[i:i + 8000])
    transcriber.finish()
    records = [(x, at) for x in transcriber.lines for words, at in engine.echoed  # (the line's words are shifted)
               if [w.text for w in x.words] == [w.text for w in words]]
    for x, at in records:
        print(f"{x.drafted!r} -> {x.sentence.text!r} kept {x.kept} copy at {at} of {len(x.words)}")
    assert all(x.kept[1] <= at for x, at in records), "a squashed copy was committed"
    assert any(x.kept[1] == at for x, at in records), "no line ended its decode's words: nothing was tested"


def test_a_failing_verifier_loses_no_line_and_says_so_once(verified_engine, shared, tmp_path):
    from core.audio import FileSource
    from core.errors import ModelMemoryError
    from core.session import CaptionPipeline
    from core.settings import Settings

    def fail(n: int) -> None:  # from the second decode on, as a model out of memory fails
        if n >= 2:
            raise ModelMemoryError("Not enough memory to run the speech model.")

    rec = Recorder()
    pipe = CaptionPipeline(Settings(), HookedEngine(verified_engine, fail), None, rec, tmp_path, realtime=False)
    summary = pipe.run(FileSource(shared / "asr" / "mfa_acoustic_corpus.wav"))
    journalled = _journal_sentences(tmp_path)
    assert [s["verified"] for s in journalled[:1]] == [True]
    assert len(journalled) >= 4 and all(s["verified"] is False for s in journalled[1:])
    warnings = [text for _, text in rec.messages if "verifier failed" in text]
    assert len(warnings) == 1 and "marked unverified" in warnings[0]
    assert summary.asr.unverified_lines == len(journalled) - 1 and summary.errors == warnings


@pytest.mark.qt
def test_drafts_look_provisional_and_reading_mode_shows_only_verified_words(qtbot, tmp_path, monkeypatch):
    """Where lines are verified, a held line and the committed start of the line being spoken are
    drafts: drawn dimmed (not like the verified lines), and left out of reading mode, which shows
    only the verified lines and the final translations."""
    from app.views.layout import COMMITTED, HELD, TENTATIVE, line_text
    from app.views.overlay import CaptionOverlay
    from core.settings import OverlaySettings
    from core.stream import CaptionLine, CaptionView, PartialLine, Sentence

    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    view = CaptionView(
        [CaptionLine(Sentence(0, "We start at nine.", 0.0, 1.0, verified=True), "Wir beginnen um neun.")],
        [PartialLine("And then", " we go", "Und dann gehen", held=("It has a view.",), drafts=True)])
    overlay = CaptionOverlay(OverlaySettings(lines=6), "en", "de")
    qtbot.addWidget(overlay)
    overlay.resize(900, 400)
    overlay.show_view(view)
    src, tr = overlay.visible_lines()
    assert [line_text(x) for x in src] == ["We start at nine.", "It has a view.", "And then we go"]
    assert [[run.style for run in x] for x in src] == [[COMMITTED], [HELD], [HELD, TENTATIVE]]
    solid = overlay.pen_colour(COMMITTED, overlay.look.text_color)
    dim = overlay.pen_colour(HELD, overlay.look.text_color)
    assert dim.alphaF() < solid.alphaF() and dim.rgb() == solid.rgb()  # the text colour, dimmed

    overlay.apply_style(OverlaySettings(lines=6, reading_mode=True))
    src, tr = overlay.visible_lines()
    assert [line_text(x) for x in src] == ["We start at nine."]
    assert [line_text(x) for x in tr] == ["Wir beginnen um neun."]
    # where nothing verifies the lines, the committed words never change: reading mode shows them
    overlay.show_view(CaptionView(view.lines, [PartialLine("And then", " we go", "Und dann gehen")]))
    assert [line_text(x) for x in overlay.visible_lines()[0]] == ["We start at nine.", "And then"]


def test_a_decode_stops_being_speech_where_its_word_times_collapse():
    """Whisper saying the window's text again at its end squashes the repeat into an instant (seen on a
    telephone call); four words starting within a tenth of a second end what was said, three do not
    (Whisper's word timing is that coarse on fast speech)."""
    from core.asr.verified import collapse_start
    from core.stream import Word

    def words(spec: str) -> list[Word]:
        out = []
        for item in spec.split():
            text, at = item.rsplit("@", 1)
            out.append(Word(float(at), float(at) + 0.2, " " + text))
        return out

    said = words("Can@59.5 I@59.5 also@59.6 give@59.9 the@60.2 address@60.5 for@61.1 this?@61.4")
    again = words("Okay.@61.6 Okay.@61.6 One@61.6 more@61.6 thing.@61.6 Can@61.6 I@61.6")
    assert collapse_start(said + again) == len(said)
    fast = words("Hi,@9.5 this@10.2 is@10.3 for@10.3 customer@10.4 service@10.7 center@11.2")
    assert collapse_start(fast) == len(fast)
    # at the decode's end, three words at one instant are a repeat (tiny.en, a call, AVX2 kernels) ...
    perfect = words("Okay,@33.54 that's@34.3 perfect.@34.7 Okay,@35.48 that's@35.48 perfect.@35.48")
    assert collapse_start(perfect) == 3
    # ... but not two, nor three real words timed close (before more words or not at one instant)
    assert collapse_start(perfect[:5]) == 5 and collapse_start(fast[:4]) == 4
