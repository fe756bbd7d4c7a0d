"""An ASR engine on its own long-lived thread, so a caller can stop waiting for a decode.

CTranslate2 cannot interrupt a decode that has started (a long window takes
about a second on two cores). :class:`ThreadedEngine` runs every decode on one
thread that owns the model; the caller waits for the result *or* for its abort
signal, whichever comes first. An abandoned decode finishes in the background
and its result is dropped, so a Stop never waits for the model.
"""

from __future__ import annotations

import queue
import threading

import numpy as np

from .. import logger
from ..errors import Interrupted
from .engine import ASREngine, Hypothesis


class _Job:
    __slots__ = ("audio", "prompt", "language", "abort", "draft_text", "result", "error", "done")

    def __init__(self, audio, prompt, language, abort, draft_text) -> None:
        self.audio, self.prompt, self.language, self.abort = audio, prompt, language, abort
        self.draft_text = draft_text
        self.result: Hypothesis | None = None
        self.error: BaseException | None = None
        self.done = False


class ThreadedEngine:
    """Wraps an :class:`ASREngine`; decodes run on the ``sotto-asr-model`` thread."""

    def __init__(self, engine: ASREngine, name: str = "sotto-asr-model") -> None:
        self.engine = engine
        self.name = getattr(engine, "name", "asr")
        self._jobs: queue.Queue = queue.Queue()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def transcribe(self, audio: np.ndarray, prompt: str = "", language: str | None = None,
                   abort: threading.Event | None = None, draft_text: str = "") -> Hypothesis:
        """Decode on the model thread; raises :class:`Interrupted` as soon as ``abort`` is set
        and :meth:`interrupt` is called (the decode itself finishes unseen)."""
        job = _Job(audio, prompt, language, abort, draft_text)
        self._jobs.put(job)
        with self._cond:
            self._cond.wait_for(lambda: job.done or (abort is not None and abort.is_set()))
        if not job.done:
            raise Interrupted("Recognition was stopped.")
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def interrupt(self) -> None:
        """Wake every caller waiting in :meth:`transcribe` so it can see its abort signal."""
        with self._cond:
            self._cond.notify_all()

    def close(self, timeout: float | None = 10.0) -> None:
        """Finish the decode in progress (if any) and end the thread (sentinel: None)."""
        self._jobs.put(None)
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        """True while the model thread runs."""
        return self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if job.abort is not None and job.abort.is_set():
                job.error = Interrupted("Recognition was stopped.")
            else:
                try:
                    job.result = self.engine.transcribe(job.audio, job.prompt, job.language, abort=job.abort,
                                                        draft_text=job.draft_text)
                except BaseException as exc:  # handed to the caller, who reports it
                    if not isinstance(exc, Interrupted):
                        logger.exception("speech recognition failed")
                    job.error = exc
            with self._cond:
                job.done = True
                self._cond.notify_all()
