"""An ASR engine on its own long-lived thread, so a caller can stop waiting for a decode.

CTranslate2 cannot interrupt a decode that has started (a long window takes
about a second on two cores). :class:`ThreadedEngine` runs every decode on one
thread that owns the model; the caller waits for the result *or* for its abort
signal, whichever comes first. An abandoned decode finishes in the background
and its result is dropped, so a Stop never waits for the model.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .. import logger
from ..errors import Interrupted
from ..threads import JobThread
from .engine import ASREngine, Hypothesis


@dataclass(slots=True, eq=False)
class DecodeRequest:
    """One decode handed to the model thread (the arguments of :meth:`ASREngine.transcribe`) and,
    once ``done``, its result or error."""

    audio: np.ndarray
    prompt: str
    language: str | None
    abort: threading.Event | None
    previous_transcript: str
    verify: bool = False  # the verifier's decode of a finished line (a VerifiedEngine's ``verify``)
    result: Hypothesis | None = None
    error: BaseException | None = None
    done: bool = False


class ThreadedEngine(ASREngine):
    """Wraps an :class:`ASREngine`; decodes run on the ``sotto-asr-model`` thread."""

    def __init__(self, engine: ASREngine, name: str = "sotto-asr-model") -> None:
        self.engine = engine
        self.name = getattr(engine, "name", "asr")
        self._cond = threading.Condition()
        self._thread = JobThread(name, self._run)

    @property
    def verifies_lines(self) -> bool:
        """Whether the wrapped engine verifies finished lines (:class:`~core.asr.verified.VerifiedEngine`)."""
        return bool(getattr(self.engine, "verifies_lines", False))

    def transcribe(self, audio: np.ndarray, prompt: str = "", language: str | None = None,
                   abort: threading.Event | None = None, previous_transcript: str = "") -> Hypothesis:
        """Decode on the model thread; raises :class:`Interrupted` as soon as ``abort`` is set
        and :meth:`interrupt` is called (the decode itself finishes unseen)."""
        return self._wait(DecodeRequest(audio=audio, prompt=prompt, language=language, abort=abort,
                                        previous_transcript=previous_transcript))

    def verify(self, audio: np.ndarray, prompt: str = "", language: str | None = None,
               abort: threading.Event | None = None) -> Hypothesis:
        """The verifier's decode of a finished line, on the model thread (as :meth:`transcribe`)."""
        return self._wait(DecodeRequest(audio=audio, prompt=prompt, language=language, abort=abort,
                                        previous_transcript="", verify=True))

    def _wait(self, job: DecodeRequest) -> Hypothesis:
        abort = job.abort
        self._thread.submit(job)
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
        """Finish the decode in progress (if any) and end the thread."""
        self._thread.close(timeout)

    @property
    def alive(self) -> bool:
        """True while the model thread runs."""
        return self._thread.alive

    def _run(self, job: DecodeRequest) -> None:
        if job.abort is not None and job.abort.is_set():
            job.error = Interrupted("Recognition was stopped.")
        else:
            try:
                if job.verify:
                    job.result = self.engine.verify(job.audio, job.prompt, job.language, abort=job.abort)
                else:
                    job.result = self.engine.transcribe(job.audio, job.prompt, job.language, abort=job.abort,
                                                        previous_transcript=job.previous_transcript)
            except BaseException as exc:  # handed to the caller, who reports it
                if not isinstance(exc, Interrupted):
                    logger.exception("speech recognition failed")
                job.error = exc
        with self._cond:
            job.done = True
            self._cond.notify_all()
