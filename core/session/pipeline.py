"""The caption loop: read audio, route updates from the recogniser to the translator
and the screen, stop on request. Nothing else lives here: the journal writes the
files (:mod:`.journal`), :mod:`.summary` keeps the statistics and builds the summary,
:mod:`.engines` turns settings into the engines' options, the caption policy decides
what is shown.

:class:`CaptionPipeline` runs on the caller's thread (the ASR loop) plus the
translation worker's thread. In real-time mode each read takes *all* audio that
arrived since the last one (never a backlog), and the translation worker drops
stale partials; when the lag still reaches :data:`~.summary.BEHIND_S` the listener
is told once ("falling behind"), and once more when it has caught up. In fast mode (a file as fast
as possible) every step runs in order, so results are reproducible. Displays plug in through :class:`PipelineListener`.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import numpy as np

from .. import logger
from ..asr.engine import ASREngine
from ..asr.streaming import StreamingTranscriber
from ..asr.verified import LineVerifier, VerifyOptions, make_transcriber
from ..audio.convert import SAMPLE_RATE
from ..audio.sources import AudioSource
from ..captions.policy import CaptionPolicy
from ..errors import SottoError
from ..models.advice import model_note
from ..settings import Settings
from ..speakers import SpeakerTracker, TrackerOptions, VoiceEncoder
from ..speakers.tracker import SpeakerAssignment
from ..stream import THEM, CaptionView, FrozenTranslation, Progress, TranscriptUpdate, TranslationUpdate
from ..translate.streaming import StreamingTranslator
from ..translate.translator import LlamaTranslator
from ..translate.worker import InlineTranslation, TranslationWorker
from .engines import PolicyKnobs, TranslatorKnobs, caption_policy, streaming_options
from .journal import CaptionJournal
from .summary import (
    BEHIND_S,
    CAUGHT_UP_MESSAGE,
    CAUGHT_UP_S,
    RunStats,
    RunSummary,
    falling_behind_message,
    journal_header,
    run_summary,
    translation_info,
)
from .voices import VoiceLabeler


class MessageLevel(StrEnum):
    """How a message for the user is shown (the values are what listeners are told)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class PipelineListener(Protocol):
    """Receives what a display shows; called from pipeline threads."""

    def on_view(self, view: CaptionView) -> None: ...

    def on_progress(self, progress: Progress) -> None: ...

    def on_message(self, level: MessageLevel, text: str) -> None: ...


class NullListener:
    """A listener that shows nothing."""

    def on_view(self, view: CaptionView) -> None:
        """Ignore."""

    def on_progress(self, progress: Progress) -> None:
        """Ignore."""

    def on_message(self, level: MessageLevel, text: str) -> None:
        """Ignore."""


@dataclass
class AudioStream:
    """One audio source of a run, with the speaker its sentences are labelled with ("" when alone)
    and its own transcriber (VAD, window, agreement); the speech model is shared."""

    speaker: str
    source: AudioSource
    transcriber: StreamingTranscriber | LineVerifier
    done: bool = False
    was_paused: bool = False
    pushed: int = 0  # samples given to the transcriber
    held: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.float32))


# In real time, speech recognition decodes as often as ``asr.min_chunk_s`` allows while it takes at
# most this share of the time: measured on two cores with tiny.en and Gemma 270M (sotto bench live),
# decoding back to back left finished sentences waiting 11 s for their translation; at 0.6 they
# wait about 1.5 s. Without a translator the recogniser may take nearly all of it.
ASR_SHARE_TRANSLATING = 0.6
ASR_SHARE_ALONE = 0.9


class CaptionPipeline:
    """Runs one source through the engines it is given and journals the captions."""

    def __init__(
        self,
        settings: Settings,
        asr_engine: ASREngine,
        translation_engine: LlamaTranslator | None = None,
        listener: PipelineListener | None = None,
        out_dir: Path | None = None,
        realtime: bool = False,
        translation_worker: TranslationWorker | None = None,
        voice_encoder: VoiceEncoder | None = None,
    ) -> None:
        self.settings = settings
        self.asr_engine = asr_engine
        self.translation_engine = translation_engine
        self.listener = listener or NullListener()
        self.out_dir = out_dir
        self.realtime = realtime
        # In "draft" mode the translator trims its draft instead; the source line is masked on screen either way.
        self._target = settings.translation.target if translation_engine is not None else None
        self.policy: CaptionPolicy = caption_policy(settings, self._target, ("",))
        self.stats = RunStats(realtime)
        self._lock = threading.Lock()  # guards policy, journal, stats and listener calls
        self._stop = threading.Event()
        self._quick_stop = False
        self._paused = threading.Event()
        self._shared_worker = translation_worker  # outlives this run (the service's)
        self.streams: list[AudioStream] = []
        self._sentences = 0  # sentences numbered so far, over all streams
        self._t0 = 0.0
        self._errors: list[str] = []
        self._translation_failed = False
        self._model_told = False  # the first translation says which model made it
        self.journal: CaptionJournal | None = None
        self._translation: TranslationWorker | InlineTranslation | None = None
        self._streaming_translator: StreamingTranslator | None = None
        self._voice_encoder = voice_encoder  # speaker labels (settings.speakers.labels): loaded at the start if None
        self.voices: VoiceLabeler | None = None

    # -- control (any thread) ------------------------------------------------------------------
    def stop(self, quick: bool = False) -> None:
        """Ask a running :meth:`run` to finish (thread-safe; captions so far are kept).

        A normal stop decodes the audio still buffered and translates everything
        queued. A ``quick`` stop (the app's Stop button) commits the unfinished line
        as it was last recognised, without another decode, gives it the translation
        last shown for it, and interrupts the translator, so :meth:`run` returns
        within about one model call.
        """
        self._quick_stop = quick
        self._stop.set()
        if quick:
            streams = list(self.streams)
            for stream in streams:
                stream.transcriber.abort()  # a decode waiting for the CPU is skipped
            self.asr_engine.interrupt()  # a threaded engine stops waiting for a decode in progress
            if self.translation_engine is not None:
                self.translation_engine.interrupt()  # frees the CPU within one model call
            for stream in streams:
                stream.source.interrupt()  # wakes a blocked read at once; the run loop closes the source

    def pause(self, paused: bool) -> None:
        """Pause or resume (thread-safe). Pausing commits the unfinished line; audio
        heard while paused is not captioned, but the clock keeps running."""
        if paused:
            self._paused.set()
        else:
            self._paused.clear()

    @property
    def paused(self) -> bool:
        """True while paused."""
        return self._paused.is_set()

    def apply_settings(self, settings: Settings) -> None:
        """Apply what can change while running (thread-safe): what the policy shows, the translator's
        β/engine and the unfinished lines' share of its time."""
        with self._lock:
            PolicyKnobs.from_settings(settings).apply_to(self.policy)
            self.settings = settings
            translation = self._translation
        if self.translation_engine is not None:
            TranslatorKnobs.from_settings(settings).apply_to(self.translation_engine)
        if translation is not None:
            translation.set_partial_share(settings.translation.partial_share)

    # -- the loop ------------------------------------------------------------------------
    def run(self, source: AudioSource) -> RunSummary:
        """Caption ``source`` to the end (or until :meth:`stop`); returns the summary."""
        return self.run_streams({"": source})

    def run_streams(self, sources: dict[str, AudioSource]) -> RunSummary:
        """Caption several sources at once, each labelled with its speaker (e.g. ``{"them": system
        audio, "me": microphone}``), until they end or :meth:`stop`; returns the summary."""
        options = streaming_options(self.settings)
        verify = VerifyOptions(lookahead_s=self.settings.asr.verify_lookahead_s,
                               recheck_s=self.settings.asr.verify_recheck_s,
                               join_unfinished=self.settings.asr.verify_whole_sentences)
        self.streams = [AudioStream(speaker, source, make_transcriber(self.asr_engine, options, verify,
                                                                      on_problem=self._on_verifier_problem))
                        for speaker, source in sources.items()]
        if len(self.streams) > 1:
            self.policy = caption_policy(self.settings, self._target, tuple(sources))
        self._translation = self._open_translation()
        self.voices = self._open_voices()
        cpu0 = time.process_time()
        self._t0 = time.monotonic()
        interrupted: BaseException | None = None
        try:
            for stream in self.streams:
                stream.source.start()
            if self.out_dir is not None:  # the files appear once every source captures
                translating = self.translation_engine is not None
                self.journal = CaptionJournal(self.out_dir, translating,
                                              journal_header(self.settings, self._source_name(), translating),
                                              on_problem=self._on_journal_problem)
            self._read_loop()
            if self._quick_stop:
                self._finish_quickly()
            else:
                for stream in self.streams:
                    self._on_transcript(stream, stream.transcriber.finish())
        except BaseException as exc:  # KeyboardInterrupt or an error: keep what was produced
            interrupted = exc
            raise
        finally:
            for stream in self.streams:
                stream.source.stop()
            self._close_translation(cancel=self._quick_stop or interrupted is not None)
            if self.voices is not None:
                self.voices.close()  # the labels of the last lines are journaled before the files close
            with self._lock:
                self.policy.finish()
            summary = self._summary(time.process_time() - cpu0, interrupted)
            if self.journal is not None:
                self.journal.close(summary.to_dict())
                summary.errors = list(self._errors)  # the disk may have filled at the last write
        return summary

    def _chunk_seconds(self) -> float:
        """New audio to wait for before the next decode: ``asr.min_chunk_s``, or in real time more
        when the machine is slower, so that speech recognition takes at most its share of the time
        (:data:`ASR_SHARE_TRANSLATING` when a translator needs the rest) and work never queues up."""
        min_chunk = self.settings.asr.min_chunk_s
        if not self.realtime:  # fast mode: every step in order, the same chunks every time
            return min_chunk
        share = ASR_SHARE_TRANSLATING if self._translation is not None else ASR_SHARE_ALONE
        decoding = sum(s.transcriber.recent_decode_seconds for s in self.streams)
        return max(min_chunk, decoding / share)

    def _read_loop(self) -> None:
        """Each stream in turn: take all audio that arrived since its last read, decode what is due.
        A live source produces audio in real time, so waiting on one lets the others fill up."""
        while not self._stop.is_set() and not all(s.done for s in self.streams):
            for stream in self.streams:
                if stream.done or self._stop.is_set():
                    continue
                chunk = stream.source.read(self._wanted_seconds(stream), timeout=0.5)
                if chunk is None:
                    stream.done = True
                    if stream.held.size:  # the recording's last fraction of a chunk
                        last, stream.held = stream.held, stream.held[:0]
                        stream.pushed += last.size
                        self._push(stream, last)
                    continue
                if chunk.size == 0:
                    continue
                chunk = self._on_grid(stream, chunk)
                if chunk.size:
                    self._push(stream, chunk)
            self._progress()

    def _grid(self) -> int:
        return max(1, round(self.settings.asr.min_chunk_s * SAMPLE_RATE))

    def _wanted_seconds(self, stream: AudioStream) -> float:
        """Audio to wait for before the next read. In real time each decode ends on the grid of
        ``asr.min_chunk_s`` from the stream's start, where fast mode's decodes end: the first grid
        point at least :meth:`_chunk_seconds` after the last decode."""
        chunk = self._chunk_seconds()
        if not self.realtime:
            return chunk
        grid = self._grid()
        point = -(-(stream.pushed + round(chunk * SAMPLE_RATE)) // grid) * grid
        return max(1, point - stream.pushed - stream.held.size) / SAMPLE_RATE

    def _on_grid(self, stream: AudioStream, chunk: np.ndarray) -> np.ndarray:
        """The audio to decode now: in real time up to the last grid point that has arrived, the rest
        held for the next read. A read ends wherever the thread woke up: taking all of it, one late
        read shifted every later decode, and a run's windows (so its words) differed from the next
        run's on the same recording (issue #48's rounds). On the grid they differ only where decoding
        falls behind it."""
        if not self.realtime:
            stream.pushed += chunk.size
            return chunk
        audio = np.concatenate([stream.held, chunk]) if stream.held.size else chunk
        grid = self._grid()
        cut = (stream.pushed + audio.size) // grid * grid - stream.pushed
        stream.held = audio[max(0, cut):]
        stream.pushed += max(0, cut)
        return audio[:max(0, cut)]

    def _push(self, stream: AudioStream, chunk: np.ndarray) -> None:
        paused = self._paused.is_set()
        if paused and not stream.was_paused:
            self._on_transcript(stream, stream.transcriber.finish(decode=False))
        stream.was_paused = paused
        if paused:  # silence keeps the clock in step with the audio; VAD drops it cheaply
            chunk = np.zeros_like(chunk)
        if self.voices is not None:
            self.voices.feed(stream.speaker, chunk)
        for update in stream.transcriber.push(chunk):
            self._on_transcript(stream, update)

    def _finish_quickly(self) -> None:
        """Commit each unfinished line as last recognised and give it the translation last shown."""
        st = self._streaming_translator
        last = {s.speaker: st.last_partial(s.speaker) if st is not None else ("", "") for s in self.streams}
        updates = []
        for stream in self.streams:
            updates.append(self._on_transcript(stream, stream.transcriber.finish(decode=False), translate=False))
        if st is None or self._translation_failed:
            return
        left = self._translation.finish(cancel=True) if self._translation is not None else []
        frozen = []
        for update in updates:
            source, translation = last[update.speaker]
            matching = [FrozenTranslation(s, translation) for s in (*left, *update.sentences)
                        if translation and s.speaker == update.speaker and s.text.strip() == source.strip()]
            frozen += matching[-1:]
        if frozen:
            self._on_translation(TranslationUpdate(frozen, "", "", max(u.audio_time for u in updates)))

    def _progress(self) -> None:
        wall = time.monotonic() - self._t0
        audio_time = min(s.transcriber.audio_time for s in self.streams)
        lag = self.stats.on_read(wall, audio_time)
        window = max(s.transcriber.window.seconds for s in self.streams)
        self.listener.on_progress(Progress(audio_time, self.streams[0].source.duration, wall, lag, window))
        if lag is not None:
            self._tell_lag(lag)

    def _tell_lag(self, lag: float) -> None:
        """Say once when captions fall :data:`BEHIND_S` behind the speech, and once when they are back."""
        if not self.stats.behind and lag >= BEHIND_S:
            self.stats.on_behind(lag)
            self.listener.on_message(MessageLevel.WARNING, falling_behind_message(lag))
        elif self.stats.behind and lag < CAUGHT_UP_S:
            self.stats.on_caught_up()
            self.listener.on_message(MessageLevel.INFO, CAUGHT_UP_MESSAGE)

    # -- translation routing -----------------------------------------------------------------
    def _open_translation(self) -> TranslationWorker | InlineTranslation | None:
        """Where transcript updates go to be translated: the service's long-lived worker, a worker
        of this run's own (real time), or straight through on this thread (fast mode)."""
        if self.translation_engine is None:
            return None
        self.translation_engine.clear_interrupt()
        self._streaming_translator = StreamingTranslator(self.translation_engine)
        route = self._shared_worker or (TranslationWorker() if self.realtime else InlineTranslation())
        route.begin(self._streaming_translator, self._on_translation, self._on_translate_error,
                    partial_share=self.settings.translation.partial_share)
        return route

    def _close_translation(self, cancel: bool) -> None:
        route = self._translation
        if route is None:
            return
        if route is self._shared_worker:
            route.finish(cancel=cancel)
        else:
            route.close()

    # -- updates --------------------------------------------------------------------------------
    def _now(self) -> float:
        return time.monotonic() - self._t0

    def _on_transcript(self, stream: AudioStream, update: TranscriptUpdate, translate: bool = True) -> TranscriptUpdate:
        update = self._label(stream, update)
        now = self._now()
        with self._lock:
            self.stats.on_transcript(now, update)
            view = self.policy.on_transcript(update)
            if self.journal is not None:
                self.journal.transcript(now, update, view.partial_of(update.speaker).shown_source)
            self.listener.on_view(view)
        if translate and self._translation is not None and not self._translation_failed:
            self._translation.submit(update)
        if self.voices is not None:  # after the line is on screen: its label follows it
            for sentence in update.sentences:
                self.voices.submit(sentence)
        return update

    def _label(self, stream: AudioStream, update: TranscriptUpdate) -> TranscriptUpdate:
        """With several streams: the update's speaker, and sentence numbers counted over all streams."""
        if len(self.streams) == 1:
            return update
        sentences = []
        for s in update.sentences:
            sentences.append(dataclasses.replace(s, index=self._sentences, speaker=stream.speaker))
            self._sentences += 1
        return dataclasses.replace(update, sentences=sentences, speaker=stream.speaker)

    def _on_translation(self, update: TranslationUpdate) -> None:
        if not self._model_told and (update.partial_translation or any(f.text for f in update.frozen)):
            self._model_told = True
            self.listener.on_message(MessageLevel.INFO, model_note(self.settings.translation.model))
        now = self._now()
        with self._lock:
            self.stats.on_translation(now, update)
            view = self.policy.on_translation(update)
            if self.journal is not None:
                self.journal.translation(now, update, view.partial_of(update.speaker).shown_translation)
            self.listener.on_view(view)

    # -- speaker labels ------------------------------------------------------------------------
    def _open_voices(self) -> VoiceLabeler | None:
        """The labeler of this run's lines where ``speakers.labels`` is on: in a meeting the other side's
        ("Them 1", "Them 2", …), else the one stream's ("Speaker 1", …). An encoder that cannot be had is
        said once, and captions go on without labels."""
        options = self.settings.speakers
        if not options.labels:
            return None
        names = [s.speaker for s in self.streams]
        streams, prefix = ((THEM,), "Them") if len(names) > 1 else ((names[0],), "Speaker")
        if not set(streams) & set(names):
            return None
        if self._voice_encoder is None:
            from ..speakers.model import load_encoder

            try:
                self._voice_encoder = load_encoder()
            except SottoError as exc:
                message = f"{exc} Captions continue without speaker labels."
                self._errors.append(message)
                self.listener.on_message(MessageLevel.WARNING, message)
                return None
        tracker = SpeakerTracker(self._voice_encoder, TrackerOptions(max_speakers=options.expected, prefix=prefix))
        return VoiceLabeler(tracker, streams, self._on_voice, threaded=self.realtime)

    def _on_voice(self, index: int, voice: SpeakerAssignment) -> None:
        now = self._now()
        label = self.voices.tracker.label(voice.speaker) if self.voices is not None else voice.label  # renamed since
        with self._lock:
            view = self.policy.on_voice(index, voice.speaker, label)
            if self.journal is not None:
                self.journal.voice(now, index, voice.speaker, label, voice.similarity, voice.mixed)
            self.listener.on_view(view)

    def rename_voice(self, voice: int, name: str) -> str:
        """Call voice number ``voice`` ``name`` for the rest of the session, its lines so far included, on
        screen and in the files (an empty name: its number again); returns its label now (thread-safe, but not
        from a listener's ``on_view``, which runs under the pipeline's lock)."""
        if self.voices is None:
            return ""
        self.voices.tracker.rename(voice, name)
        label = self.voices.tracker.label(voice)
        now = self._now()
        with self._lock:
            for index in self.voices.voices(voice):
                self.policy.on_voice(index, voice, label)
            if self.journal is not None:
                self.journal.rename(now, voice, label)
            self.listener.on_view(self.policy.view())
        return label

    def _on_journal_problem(self, message: str) -> None:
        """The journal stopped writing (disk full…): tell once; captioning goes on without saving."""
        self._errors.append(message)
        self.listener.on_message(MessageLevel.ERROR, message)

    def _on_verifier_problem(self, message: str) -> None:
        """The speech verifier failed: tell once per stream; lines go on, kept as first heard."""
        self._errors.append(message)
        self.listener.on_message(MessageLevel.WARNING, message)

    def _on_translate_error(self, exc: SottoError) -> None:
        message = f"{exc} Captions continue without translation."
        self._errors.append(message)
        logger.error("translation disabled: %s", exc)
        self._translation_failed = True
        self.listener.on_message(MessageLevel.ERROR, message)

    # -- summary -----------------------------------------------------------------------------
    def _source_name(self) -> str:
        return " + ".join(s.source.name for s in self.streams)

    def _summary(self, cpu: float, interrupted: BaseException | None) -> RunSummary:
        """This run's summary (:func:`.summary.run_summary` from what the loop holds)."""
        st = self._streaming_translator
        translation = None
        if self.translation_engine is not None and st is not None:
            route = self._translation
            translation = translation_info(self.translation_engine.name, self.settings, st,
                                           route.dropped_partials if route is not None else 0,
                                           route.preempted_partials if route is not None else 0,
                                           list(route.sentence_waits) if route is not None else None)
        return run_summary(
            self.settings, realtime=self.realtime, source=self._source_name(), asr_engine=self.asr_engine.name,
            transcribers=[s.transcriber for s in self.streams], translation=translation, stats=self.stats,
            policy=self.policy, cpu=cpu, wall=self._now(), overflows=sum(s.source.overflows for s in self.streams),
            errors=list(self._errors), completed=interrupted is None and not self._stop.is_set())
