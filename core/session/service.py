"""The caption service: long-lived workers that own the models and run caption sessions.

A desktop app (or any other front end) talks to one :class:`CaptionService`:
``start(source)``, ``pause``, ``stop``, ``apply_settings``, ``shutdown``. None of
these block: commands go to the service's ASR thread (``sotto-asr``), which owns
the speech model for the life of the service and runs each session's pipeline;
the translator is owned by one long-lived translation thread
(``sotto-translate``). Everything the front end shows arrives through a
:class:`ServiceListener`, called on those threads. Each session is journaled to
its own history folder as it is produced.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from .. import logger
from ..asr.engine import ASREngine
from ..asr.threaded import ThreadedEngine
from ..audio.sources import AudioSource, is_live, open_streams
from ..errors import ModelError, SottoError
from ..models.store import ModelStore
from ..paths import demo_sample
from ..settings import NEXT_START_KEYS, Settings
from ..threads import JobThread
from ..translate.translator import LlamaTranslator
from ..translate.worker import TranslationWorker
from .engines import ASREngineSpec, TranslatorKnobs, TranslatorSpec, create_asr_engine, create_translator
from .history import CaptionHistory
from .pipeline import CaptionPipeline, MessageLevel, PipelineListener
from .summary import RunSummary


class ServiceState(StrEnum):
    """Where the service stands (the values are what :meth:`ServiceListener.on_state` is told)."""

    IDLE = "idle"
    LOADING = "loading"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"


class ServiceListener(PipelineListener, Protocol):
    """What a front end receives (a pipeline listener plus state and status); called on the
    service's threads, never the caller's."""

    def on_state(self, state: ServiceState, detail: str) -> None: ...

    def on_status(self, message: str, fraction: float | None) -> None: ...


@dataclass
class SessionInfo:
    """The last finished session: where its captions are and its summary."""

    directory: Path
    summary: RunSummary


def restart_needed(old: Settings, new: Settings) -> list[str]:
    """Keys changed between ``old`` and ``new`` that only apply when captions next start (those
    :mod:`core.settings` marks so), in alphabetical order."""
    return sorted(key for key in NEXT_START_KEYS if old.value(key) != new.value(key))


def source_spec(settings: Settings) -> tuple[str, bool]:
    """The source to open for ``audio.source`` and whether it is live (a microphone or system audio)."""
    src = settings.audio.source or "mic"
    if src == "mic":
        return (f"mic:{settings.audio.device}" if settings.audio.device else "mic"), True
    if src == "demo":
        return str(demo_sample()), False
    return src, is_live(src)


class CaptionService:
    """Owns the engines on long-lived threads and runs one caption session at a time."""

    def __init__(
        self,
        settings: Settings,
        listener: ServiceListener,
        store: ModelStore | None = None,
        history: CaptionHistory | None = None,
    ) -> None:
        self.settings = settings
        self.listener = listener
        self.store = store or ModelStore()
        self.history = history or CaptionHistory()
        self.state = ServiceState.IDLE
        self.asr_engine: ASREngine | None = None
        self.translation_engine: LlamaTranslator | None = None
        self.last_session: SessionInfo | None = None
        self._asr_spec: ASREngineSpec | None = None  # what the loaded engines were built from
        self._translator_spec: TranslatorSpec | None = None
        self._pipeline: CaptionPipeline | None = None
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._translation_worker = TranslationWorker(name="sotto-translate")
        self._thread = JobThread("sotto-asr", self._handle)

    # -- commands (any thread; none of them blocks) -----------------------------------------
    def start(self, spec: str | AudioSource | None = None) -> None:
        """Start captioning ``spec``: a file path, ``mic``, ``mic:NAME``, ``system``, ``both`` (default:
        from settings), or a live source the front end made itself (read in real time; the service
        stops it at the end)."""
        with self._lock:
            if self.state != ServiceState.IDLE:
                return
            self._idle.clear()
            self._set_state(ServiceState.LOADING, "Preparing models…")
        self._thread.submit(("start", spec))

    def preload(self) -> None:
        """Load the models named in settings now, so the first start is quick."""
        self._thread.submit(("preload", None))

    def stop(self) -> None:
        """Stop the running session quickly; captions shown so far are kept."""
        with self._lock:
            if self.state in (ServiceState.IDLE, ServiceState.STOPPING):
                return
            pipeline = self._pipeline  # None while models load: the session stops as soon as it starts
            self._set_state(ServiceState.STOPPING, "Stopping…")
        if pipeline is not None:
            pipeline.stop(quick=True)

    def pause(self, paused: bool) -> None:
        """Pause (the unfinished line is committed; nothing is captioned) or resume."""
        with self._lock:
            pipeline = self._pipeline
            if pipeline is None or self.state not in (ServiceState.RUNNING, ServiceState.PAUSED):
                return
            pipeline.pause(paused)
            self._set_state(ServiceState.PAUSED if paused else ServiceState.RUNNING,
                            "Paused" if paused else "Listening")

    def apply_settings(self, settings: Settings) -> list[str]:
        """Use ``settings`` from now on. The live settings (β, the translation engine, mask-k…) apply
        at once, also mid-session; the keys returned apply when captions next start."""
        with self._lock:
            later = restart_needed(self.settings, settings)
            self.settings = settings
            pipeline = self._pipeline
        if pipeline is not None:
            pipeline.apply_settings(settings)
        elif self.translation_engine is not None:
            TranslatorKnobs.from_settings(settings).apply_to(self.translation_engine)
        return later if pipeline is not None or self.asr_engine is not None else []

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no session runs (for scripts and tests); False on timeout."""
        return self._idle.wait(timeout)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop any session, end both threads and free the models."""
        self.stop()
        self._thread.close(timeout)
        self._translation_worker.close(timeout)
        if self.translation_engine is not None:
            self.translation_engine.close()
            self.translation_engine = None
        self._close_asr()

    def _close_asr(self) -> None:
        engine, self.asr_engine = self.asr_engine, None
        if isinstance(engine, ThreadedEngine):
            engine.close()

    @property
    def threads_alive(self) -> list[str]:
        """Names of this service's threads still running."""
        out = [self._thread.name] if self._thread.alive else []
        if self._translation_worker.alive:
            out.append("sotto-translate")
        if isinstance(self.asr_engine, ThreadedEngine) and self.asr_engine.alive:
            out.append("sotto-asr-model")
        return out

    @property
    def pipeline(self) -> CaptionPipeline | None:
        """The running session's pipeline, if any."""
        return self._pipeline

    # -- the ASR thread ------------------------------------------------------------------------
    def _set_state(self, state: ServiceState, detail: str = "") -> None:
        self.state = state
        self.listener.on_state(state, detail)

    def _handle(self, command: tuple[str, str | AudioSource | None]) -> None:
        kind, arg = command
        try:
            if kind == "preload":
                self._load_engines()
            elif kind == "start":
                self._run_session(arg)
        except SottoError as exc:
            logger.error("%s", exc, exc_info=True)
            self.listener.on_message(MessageLevel.ERROR, str(exc))
        except Exception as exc:  # a bug must not kill the service thread
            logger.exception("caption session failed")
            self.listener.on_message(MessageLevel.ERROR,
                                     f"Captioning stopped unexpectedly ({type(exc).__name__}: {exc}); "
                                     "details are in the log file.")
        finally:
            if kind == "start":
                with self._lock:
                    self._pipeline = None
                    self._set_state(ServiceState.IDLE, "")
                self._idle.set()

    def _load_engines(self) -> None:
        settings = self.settings
        asr_spec = ASREngineSpec.from_settings(settings)
        if self.asr_engine is None or asr_spec != self._asr_spec:
            self._close_asr()
            self.asr_engine = ThreadedEngine(create_asr_engine(settings, self.store, self.listener.on_status))
            self._asr_spec = asr_spec
        tr_spec = TranslatorSpec.from_settings(settings)
        if tr_spec != self._translator_spec:
            if self.translation_engine is not None:
                self.translation_engine.close()
                self.translation_engine = None
            self._translator_spec = None
            try:
                self.translation_engine = create_translator(settings, self.store, self.listener.on_status)
            except ModelError as exc:  # captions still work: run without translation, try again next start
                logger.error("translator not loaded: %s", exc, exc_info=True)
                self.listener.on_message(MessageLevel.ERROR, f"{exc} Captions run without translation.")
            else:
                self._translator_spec = tr_spec
        elif self.translation_engine is not None:
            TranslatorKnobs.from_settings(settings).apply_to(self.translation_engine)
        self.listener.on_status("Models ready", 1.0)

    def _run_session(self, spec: str | AudioSource | None) -> None:
        self._load_engines()
        settings = self.settings
        if spec is None:
            spec, _ = source_spec(settings)
        if isinstance(spec, str):
            sources = open_streams(spec, realtime=True, channel=settings.audio.channel, device=settings.audio.device)
        else:  # a source made by the front end
            sources, spec = {"": spec}, spec.name
        name = " + ".join(s.name for s in sources.values())
        try:
            directory = self.history.new_session_dir()
        except OSError as exc:  # a full or unwritable disk: the journal tells the user once, captions go on
            logger.error("no history folder: %s", exc)
            directory = self.history.root / time.strftime("%Y%m%d-%H%M%S")
        assert self.asr_engine is not None
        pipeline = CaptionPipeline(settings, self.asr_engine, self.translation_engine, self.listener, directory,
                                   realtime=True, translation_worker=self._translation_worker)
        with self._lock:
            stop_requested = self.state == ServiceState.STOPPING
            self._pipeline = pipeline
            if not stop_requested:
                what = "the microphone" if spec == "mic" or spec.startswith("mic:") else name
                self._set_state(ServiceState.RUNNING, f"Listening to {what}")
        if stop_requested:
            pipeline.stop(quick=True)
        summary = pipeline.run_streams(sources)
        self.last_session = SessionInfo(directory, summary)
        if summary.no_speech and summary.completed:
            self.listener.on_message(MessageLevel.INFO, f"No speech was heard in {name}.")
