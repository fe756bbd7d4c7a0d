"""The translation worker: one long-lived thread owns the translator.

Finished sentences queue in order and are never dropped, and go out as soon as they
are translated (before the partial is translated again); the partial sentence is
latest-only, so while the translator is busy a newer partial replaces an older one
(stale work never queues up). A partial being translated when a line is finished is
given up at the model's next call (``preempted_partials``): the finished line does not
wait behind it, and its own stream's partial is stale by then (another stream's is
translated again afterwards). Waiting uses a condition variable.

Unfinished lines may be given only part of the thread's time (``partial_share``): after a
translation, the next partial waits until the translator would have worked that share of the
time, so a small machine's CPU is not spent re-translating a line that changes every half
second; finished sentences never wait.

The thread outlives caption sessions: :meth:`TranslationWorker.begin` binds a
session (its :class:`StreamingTranslator` and callbacks), :meth:`finish` ends
it, either translating what is queued or, with ``cancel=True``, interrupting
the model at its next call so a stop is quick. :meth:`close` ends the thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .. import logger
from ..errors import Interrupted, SottoError
from ..stream import Sentence, TranscriptUpdate, TranslationUpdate
from ..threads import WorkerThread
from .streaming import StreamingTranslator

ResultCallback = Callable[[TranslationUpdate], None]
ErrorCallback = Callable[[SottoError], None]


class TranslationWorker:
    """Runs :class:`StreamingTranslator` sessions on its own long-lived thread."""

    def __init__(self, name: str = "sotto-translate") -> None:
        self._cond = threading.Condition()
        self._session: tuple[StreamingTranslator, ResultCallback, ErrorCallback] | None = None
        self._sentences: list[Sentence] = []
        self._pending: dict[str, tuple[str, float]] = {}  # speaker → newest partial and its audio time, oldest first
        self._busy = False
        self._closing = False
        self._failed = False
        self._draining = False  # finish() waits: held partials go at once
        self._partial_share = 1.0
        self._last_work = (0.0, 0.0)  # monotonic start and end of the last translation
        self._on_partial = False  # the translation in progress is a partial alone
        self._preempting = False  # ... and it was interrupted for finished sentences
        self._queued_at: float | None = None  # when the oldest queued finished sentence arrived
        self.dropped_partials = 0
        self.preempted_partials = 0  # partial translations given up for a finished sentence
        self.sentence_waits: list[float] = []  # seconds each batch of finished sentences waited to start
        self._thread = WorkerThread(name, self._loop)

    # -- sessions ----------------------------------------------------------------------------
    def begin(self, translator: StreamingTranslator, on_result: ResultCallback, on_error: ErrorCallback,
              partial_share: float = 1.0) -> None:
        """Start a session: updates go to ``translator``, results to the callbacks; unfinished lines
        get at most ``partial_share`` of the thread's time (1: whenever it is free)."""
        _check_share(partial_share)
        translator.engine.clear_interrupt()
        with self._cond:
            self._session = (translator, on_result, on_error)
            self._sentences, self._pending = [], {}
            self._failed = self._draining = False
            self._partial_share, self._last_work = partial_share, (0.0, 0.0)
            self.dropped_partials = self.preempted_partials = 0
            self.sentence_waits = []
            self._queued_at = None

    def set_partial_share(self, partial_share: float) -> None:
        """Change the unfinished lines' share mid-session: the rest after the last translation is
        measured again with the new share (a partial held longer than that goes at once)."""
        _check_share(partial_share)
        with self._cond:
            self._partial_share = partial_share
            self._cond.notify_all()

    @property
    def _dirty(self) -> bool:
        return bool(self._sentences or self._pending)

    def submit(self, update: TranscriptUpdate) -> None:
        """Queue the update's finished sentences; replace its stream's pending partial."""
        with self._cond:
            if self._failed or self._session is None:
                return
            if update.sentences:
                if self._queued_at is None:
                    self._queued_at = time.monotonic()
                if self._busy and self._on_partial and not self._preempting:
                    # the partial in progress is stale once a line is finished: it is given up at the
                    # model's next call, so the finished line goes at once instead of after it
                    self._preempting = True
                    self._session[0].engine.interrupt()
            self._sentences.extend(update.sentences)
            waiting = self._pending.get(update.speaker)
            if waiting is not None and waiting[0] != update.partial:
                self.dropped_partials += 1  # replaced unseen: the newest partial wins
            self._pending[update.speaker] = (update.partial, update.audio_time)  # a waiting stream keeps its turn
            self._cond.notify_all()

    def finish(self, cancel: bool = False, timeout: float | None = None) -> list[Sentence]:
        """End the session; returns the finished sentences left untranslated.

        Without ``cancel`` everything queued is translated first. With ``cancel``
        the queue is dropped, a translation in progress is interrupted at its next
        model call, and nothing is waited for: a late result is discarded.
        """
        with self._cond:
            session = self._session
            if session is None:
                return []
            if cancel:
                left, self._sentences = self._sentences, []
                self._pending = {}
                self._session = None
                if self._busy:
                    session[0].engine.interrupt()
                return left
            self._draining = True
            self._cond.notify_all()
            self._cond.wait_for(lambda: not self._busy and not self._dirty, timeout)
            left = self._sentences
            self._sentences, self._pending = [], {}
            self._session = None
            self._draining = False
        return left

    def close(self, timeout: float | None = None) -> None:
        """Finish the session (translating what is queued) and stop the thread (sentinel: ``_closing``)."""
        self.finish(timeout=timeout)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.alive

    # -- the thread ---------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._ready():
                    if self._closing and not self._dirty:
                        return
                    held = self._pending and self._session is not None and not self._sentences
                    self._cond.wait(max(0.0, self._partials_at() - time.monotonic()) if held else None)
                assert self._session is not None
                session = self._session
                sentences, self._sentences = self._sentences, []
                translator, on_result, on_error = session
                partial: str | None
                if sentences:
                    # finished sentences alone, sent as soon as they are translated: the partial waits its
                    # turn (a finished line's translation is not held back by the next line's partial)
                    speaker = sentences[-1].speaker
                    partial, audio_time = None, sentences[-1].end
                    if self._queued_at is not None:
                        self.sentence_waits.append(time.monotonic() - self._queued_at)
                        self._queued_at = None
                else:  # the stream whose partial has waited longest
                    speaker = next(iter(self._pending))
                    partial, audio_time = self._pending.pop(speaker)
                self._busy, self._on_partial = True, not sentences
            started = time.monotonic()
            try:
                result = translator.translate(sentences, partial, audio_time, speaker)
                if result is not None and self._session is session:  # a cancelled session's result is dropped
                    on_result(result)
            except Interrupted:
                with self._cond:
                    preempted = self._preempting and self._session is session
                    if preempted:  # the stream's partial comes back after the finished lines, unless a newer one waits
                        self.preempted_partials += 1
                        self._pending.setdefault(speaker, (partial, audio_time))
                if not preempted:
                    logger.info("translation interrupted (stop)")
            except SottoError as exc:
                logger.exception("translation failed")
                self._fail()
                on_error(exc)
            except Exception as exc:  # an engine bug must not take captions down
                logger.exception("translation failed unexpectedly")
                self._fail()
                on_error(SottoError(f"The translator stopped unexpectedly ({exc}); captions continue."))
            finally:
                with self._cond:
                    self._busy = self._on_partial = False
                    self._last_work = (started, time.monotonic())
                    if self._session is not session or self._preempting:  # the interrupt has done its job
                        translator.engine.clear_interrupt()
                        self._preempting = False
                    self._cond.notify_all()

    def _ready(self) -> bool:
        """Work to do now (called holding the lock): finished sentences, or a partial whose rest
        (see ``partial_share``) is over, or any partial while finishing or closing."""
        if self._session is None or not self._dirty:
            return False
        return (bool(self._sentences) or self._draining or self._closing
                or time.monotonic() >= self._partials_at())

    def _partials_at(self) -> float:
        """The monotonic time before which a partial alone waits (called holding the lock): the
        translator has then worked ``partial_share`` of the time since the last translation began."""
        started, ended = self._last_work
        return ended + (ended - started) * (1.0 / self._partial_share - 1.0)

    def _fail(self) -> None:
        with self._cond:
            self._failed = True
            self._sentences = []
            self._pending = {}


def _check_share(partial_share: float) -> None:
    if not 0.0 < partial_share <= 1.0:
        raise ValueError(f"partial_share must be in (0, 1], not {partial_share}")


class InlineTranslation:
    """Translation on the caller's thread (fast mode: every update in order, reproducible).

    Offers the worker's session calls, so the pipeline routes updates to either alike.
    """

    dropped_partials = preempted_partials = 0  # nothing is ever dropped or given up
    sentence_waits: tuple[float, ...] = ()  # ... nor waits for the thread

    def __init__(self) -> None:
        self._session: tuple[StreamingTranslator, ResultCallback, ErrorCallback] | None = None

    def begin(self, translator: StreamingTranslator, on_result: ResultCallback, on_error: ErrorCallback,
              partial_share: float = 1.0) -> None:
        """Start a session (``partial_share`` is for the worker: here every update is translated)."""
        self._session = (translator, on_result, on_error)

    def set_partial_share(self, partial_share: float) -> None:
        """Nothing to do: every update is translated in turn."""

    def submit(self, update: TranscriptUpdate) -> None:
        """Translate what changed in ``update`` now and hand over the result."""
        if self._session is None:
            return
        translator, on_result, on_error = self._session
        try:
            result = translator.update(update)
        except Interrupted:
            return
        except SottoError as exc:
            on_error(exc)
            return
        if result is not None:
            on_result(result)

    def finish(self, cancel: bool = False) -> list[Sentence]:
        """End the session (nothing is ever left untranslated)."""
        self._session = None
        return []

    def close(self) -> None:
        """End the session."""
        self.finish()
