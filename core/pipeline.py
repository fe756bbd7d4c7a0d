"""The headless caption pipeline: audio → VAD → streaming ASR → translation → captions.

:class:`CaptionPipeline` runs on the caller's thread (the ASR loop) plus one
translation worker thread. In real-time mode each read takes *all* audio that
arrived since the last one (never a backlog), and the translator drops stale
partials. In fast mode (a file as fast as possible) every step runs in order,
so results are reproducible. Displays plug in through :class:`PipelineListener`.
"""

from __future__ import annotations

import os
import platform
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from . import __version__, logger
from .asr.engine import ASREngine
from .asr.streaming import StreamingTranscriber
from .asr.types import CaptionUpdate, StageTimings, StreamingOptions
from .audio.sources import AudioSource
from .captions.journal import CaptionJournal
from .captions.policy import CaptionPolicy, CaptionView
from .engines import translator_knobs
from .errors import Interrupted, SottoError
from .settings import Settings
from .translate.streaming import FrozenTranslation, StreamingTranslator, TranslationUpdate
from .translate.translator import LlamaTranslator
from .translate.worker import TranslationWorker


@dataclass
class Progress:
    """Where the run stands: audio done, speed and lag."""

    audio_time: float
    duration: float | None
    wall: float
    lag: float | None  # real time only: seconds between speech and screen for the newest audio
    buffer_seconds: float

    @property
    def rtf(self) -> float:
        """Wall seconds per audio second so far."""
        return self.wall / self.audio_time if self.audio_time > 0 else 0.0


class PipelineListener(Protocol):
    """Receives what a display shows; called from pipeline threads."""

    def on_view(self, view: CaptionView) -> None: ...

    def on_progress(self, progress: Progress) -> None: ...

    def on_message(self, level: str, text: str) -> None: ...


class NullListener:
    """A listener that shows nothing."""

    def on_view(self, view: CaptionView) -> None:
        """Ignore."""

    def on_progress(self, progress: Progress) -> None:
        """Ignore."""

    def on_message(self, level: str, text: str) -> None:
        """Ignore."""


@dataclass
class _Latency:
    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    def stats(self) -> dict[str, float] | None:
        if not self.values:
            return None
        ordered = sorted(self.values)
        return {
            "mean": round(sum(ordered) / len(ordered), 3),
            "p50": round(ordered[len(ordered) // 2], 3),
            "p90": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))], 3),
            "max": round(ordered[-1], 3),
            "count": len(ordered),
        }


def _translation_mask_k(settings: Settings) -> int | None:
    """The policy's on-screen mask for the translation: none when mask-k is applied in the draft."""
    return 0 if settings.captions.mask_mode == "draft" else None


class CaptionPipeline:
    """Runs one source through the engines it is given and journals the captions."""

    def __init__(
        self,
        settings: Settings,
        asr_engine: ASREngine,
        translator: LlamaTranslator | None = None,
        listener: PipelineListener | None = None,
        out_dir: Path | None = None,
        realtime: bool = False,
        translation_worker: TranslationWorker | None = None,
    ) -> None:
        self.settings = settings
        self.asr_engine = asr_engine
        self.translator = translator
        self.listener = listener or NullListener()
        self.out_dir = out_dir
        self.realtime = realtime
        target = settings.translation.target if translator is not None else None
        captions = settings.captions
        # In "draft" mode the translator trims its draft instead; the source line is masked on screen either way.
        self.policy = CaptionPolicy(captions.mask_k, settings.asr.language, target,
                                    translation_mask_k=_translation_mask_k(settings))
        self._lock = threading.Lock()  # guards policy, journal and listener calls
        self._stop = threading.Event()
        self._quick_stop = False
        self._paused = threading.Event()
        self._external_worker = translation_worker
        self._source: AudioSource | None = None
        self._t0 = 0.0
        self._timings = StageTimings()
        self._lag = _Latency()
        self._sentence_latency = _Latency()
        self._translation_latency = _Latency()
        self._errors: list[str] = []
        self._translation_failed = False
        self._sentence_shown_at: dict[int, float] = {}
        self.journal: CaptionJournal | None = None
        self._worker: TranslationWorker | None = None
        self._streaming_translator: StreamingTranslator | None = None
        self.transcriber: StreamingTranscriber | None = None

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
            source, transcriber = self._source, self.transcriber
            if transcriber is not None:
                transcriber.abort()  # a decode waiting for the CPU is skipped
            wake = getattr(self.asr_engine, "interrupt", None)
            if wake is not None:
                wake()  # a threaded engine stops waiting for a decode in progress
            if self.translator is not None:
                self.translator.interrupt()  # frees the CPU within one model call
            if source is not None:
                source.interrupt()  # wakes a blocked read at once; the run loop closes the source

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
        """Apply what can change while running: mask-k and the translator's β/engine (thread-safe)."""
        with self._lock:
            self.policy.mask_k = settings.captions.mask_k
            self.policy.translation_mask_k = _translation_mask_k(settings)
            self.settings = settings
        if self.translator is not None:
            self.translator.configure(*translator_knobs(settings))

    # -- the loop ------------------------------------------------------------------------
    def run(self, source: AudioSource) -> dict[str, Any]:
        """Caption ``source`` to the end (or until :meth:`stop`); returns the summary."""
        asr = self.settings.asr
        options = StreamingOptions(
            language=asr.language,
            min_chunk_s=asr.min_chunk_s,
            buffer_trim_s=asr.buffer_trim_s,
            use_vad=asr.vad,
            vad_threshold=asr.vad_threshold,
            vad_min_silence_s=asr.vad_min_silence_s,
            utterance_end_s=asr.utterance_end_s,
        )
        self.transcriber = StreamingTranscriber(self.asr_engine, options)
        if self.out_dir is not None:
            self.journal = CaptionJournal(self.out_dir, self.translator is not None, {
                "source": getattr(source, "name", "?"),
                "language": self.settings.asr.language,
                "target": self.settings.translation.target if self.translator is not None else None,
                "asr_model": self.settings.asr.model,
                "translation_model": self.settings.translation.model if self.translator is not None else None,
            })
        if self.translator is not None:
            self._streaming_translator = StreamingTranslator(self.translator)
            if self._external_worker is not None:
                self._worker = self._external_worker
                self._worker.begin(self._streaming_translator, self._on_translation, self._on_translate_error)
            elif self.realtime:
                self._worker = TranslationWorker(self._streaming_translator, self._on_translation, self._on_translate_error)
        if self.translator is not None:
            self.translator.clear_interrupt()
        cpu0 = time.process_time()
        self._t0 = time.monotonic()
        interrupted: BaseException | None = None
        was_paused = False
        self._source = source
        try:
            source.start()
            while not self._stop.is_set():
                chunk = source.read(asr.min_chunk_s, timeout=0.5)
                if chunk is None:
                    break
                if chunk.size == 0:
                    continue
                paused = self._paused.is_set()
                if paused and not was_paused:
                    self._on_asr(self.transcriber.finish(decode=False))
                was_paused = paused
                if paused:  # silence keeps the clock in step with the audio; VAD drops it cheaply
                    chunk = np.zeros_like(chunk)
                for update in self.transcriber.push(chunk):
                    self._on_asr(update)
                self._progress(source)
            if self._quick_stop:
                self._finish_quickly()
            else:
                self._on_asr(self.transcriber.finish())
        except BaseException as exc:  # KeyboardInterrupt or an error: keep what was produced
            interrupted = exc
            raise
        finally:
            source.stop()
            if self._worker is not None:
                if self._worker is self._external_worker:
                    self._worker.finish(cancel=self._quick_stop or interrupted is not None)
                else:
                    self._worker.close()
            with self._lock:
                self.policy.finish()
            summary = self._summary(source, time.process_time() - cpu0, interrupted)
            if self.journal is not None:
                self.journal.close(summary)
        return summary

    def _finish_quickly(self) -> None:
        """Commit the unfinished line as last recognised and give it the translation last shown."""
        assert self.transcriber is not None
        st = self._streaming_translator
        last_source, last_translation = (st.last_partial if st is not None else ("", ""))
        update = self.transcriber.finish(decode=False)
        self._on_asr(update, translate=False)
        if st is None or self._translation_failed:
            return
        left = self._worker.finish(cancel=True) if self._worker is not None else []
        frozen = [FrozenTranslation(s, last_translation) for s in (*left, *update.sentences)
                  if last_translation and s.text.strip() == last_source.strip()]
        if frozen:
            self._on_translation(TranslationUpdate(frozen[-1:], "", "", update.audio_time))

    def _progress(self, source: AudioSource) -> None:
        assert self.transcriber is not None
        wall = time.monotonic() - self._t0
        lag = wall - self.transcriber.audio_time if self.realtime else None
        if lag is not None:
            self._lag.add(lag)
        self.listener.on_progress(
            Progress(self.transcriber.audio_time, source.duration, wall, lag, self.transcriber.window.seconds)
        )

    # -- ASR updates -------------------------------------------------------------------------
    def _on_asr(self, update: CaptionUpdate, translate: bool = True) -> None:
        self._timings.add(update.timings)
        now = time.monotonic() - self._t0
        with self._lock:
            view = self.policy.on_asr(update)
            for sentence in update.sentences:
                self._sentence_shown_at[sentence.index] = now
                if self.realtime:
                    self._sentence_latency.add(now - sentence.end)
                if self.journal is not None:
                    self.journal.add_sentence(sentence.start, sentence.end, sentence.text)
            if self.journal is not None:
                self.journal.record(
                    {
                        "kind": "source",
                        "wall": round(now, 3),
                        "audio_time": round(update.audio_time, 3),
                        "sentences": [asdict(s) for s in update.sentences],
                        "current": update.current,
                        "tentative": update.tentative,
                        "display": view.partial_source,
                        "final": update.final,
                        "asr_s": round(update.timings.asr, 4),
                    }
                )
            self.listener.on_view(view)
        if self._streaming_translator is None or self._translation_failed or not translate:
            return
        if self._worker is not None:
            self._worker.submit(update)
            return
        try:
            result = self._streaming_translator.update(update)
        except Interrupted:
            return
        except SottoError as exc:
            self._on_translate_error(exc)
            return
        if result is not None:
            self._on_translation(result)

    # -- translation updates -----------------------------------------------------------------
    def _on_translation(self, update: TranslationUpdate) -> None:
        self._timings.translate += update.seconds
        now = time.monotonic() - self._t0
        with self._lock:
            view = self.policy.on_translation(update)
            for frozen in update.frozen:
                s = frozen.sentence
                if self.realtime:
                    self._translation_latency.add(now - s.end)
                if self.journal is not None:
                    self.journal.add_translation(s.index, s.start, s.end, frozen.text)
            if self.journal is not None:
                self.journal.record(
                    {
                        "kind": "translation",
                        "wall": round(now, 3),
                        "audio_time": round(update.audio_time, 3),
                        "frozen": [{"index": f.sentence.index, "source": f.sentence.text, "text": f.text}
                                   for f in update.frozen],
                        "partial_source": update.partial_source,
                        "partial": update.partial,
                        "display": view.partial_translation,
                        "translate_s": round(update.seconds, 4),
                    }
                )
            self.listener.on_view(view)

    def _on_translate_error(self, exc: SottoError) -> None:
        message = f"{exc} Captions continue without translation."
        self._errors.append(message)
        logger.error("translation disabled: %s", exc)
        self._translation_failed = True
        self.listener.on_message("error", message)

    # -- summary -----------------------------------------------------------------------------
    def _summary(self, source: AudioSource, cpu: float, interrupted: BaseException | None) -> dict[str, Any]:
        wall = time.monotonic() - self._t0
        tr = self.transcriber
        audio = tr.audio_time if tr else 0.0
        policy = self.policy
        summary: dict[str, Any] = {
            "sotto_version": __version__,
            "source": getattr(source, "name", "?"),
            "mode": "realtime" if self.realtime else "fast",
            "audio_seconds": round(audio, 3),
            "wall_seconds": round(wall, 3),
            "real_time_factor": round(wall / audio, 4) if audio else None,
            "cpu_seconds": round(cpu, 3),
            "cpu_seconds_per_audio_second": round(cpu / audio, 4) if audio else None,
            "stage_seconds": {k: round(v, 3) for k, v in asdict(self._timings).items()},
            "sentences": len(policy.lines),
            "no_speech": not policy.lines,
            "asr": {
                "engine": getattr(self.asr_engine, "name", "?"),
                "model": (self.settings.asr.model if self.settings.asr.engine == "faster-whisper"
                          else f"{self.settings.asr.drafter}->{self.settings.asr.verifier}"),
                "decodes": tr.decodes if tr else 0,
                "max_window_seconds": round(tr.max_window_seconds, 3) if tr else 0.0,
            },
            "translation": None,
            "normalized_erasure": policy.metrics(),
            "mask_k": self.settings.captions.mask_k,
            "mask_mode": self.settings.captions.mask_mode,
            "overflows": getattr(source, "overflows", 0),
            "errors": list(self._errors),
            "completed": interrupted is None and not self._stop.is_set(),
            "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "processor": platform.machine()},
        }
        st = self._streaming_translator
        if self.translator is not None and st is not None:
            summary["translation"] = {
                "engine": self.translator.name,
                "model": self.settings.translation.model,
                "target": self.settings.translation.target,
                "calls": st.calls,
                "draft_tokens": st.draft_tokens,
                "accepted_tokens": st.accepted_tokens,
                "output_tokens": st.output_tokens,
                "dropped_partials": self._worker.dropped_partials if self._worker else 0,
            }
        if self.realtime:
            summary["latency_seconds"] = {
                "lag": self._lag.stats(),
                "sentence_on_screen": self._sentence_latency.stats(),
                "translation_on_screen": self._translation_latency.stats(),
            }
        return summary
