"""The translation worker: one thread owns the translator.

Finished sentences queue in order and are never dropped; the partial sentence
is latest-only, so while the translator is busy a newer partial replaces an
older one (stale work never queues up). Waiting uses a condition variable.
"""

from __future__ import annotations

import threading
from typing import Callable

from .. import logger
from ..asr.types import CaptionUpdate, Sentence
from ..errors import SottoError
from .streaming import StreamingTranslator, TranslationUpdate


class TranslationWorker:
    """Runs a :class:`StreamingTranslator` on its own long-lived thread."""

    def __init__(
        self,
        translator: StreamingTranslator,
        on_result: Callable[[TranslationUpdate], None],
        on_error: Callable[[SottoError], None],
    ) -> None:
        self.translator = translator
        self._on_result = on_result
        self._on_error = on_error
        self._cond = threading.Condition()
        self._sentences: list[Sentence] = []
        self._partial = ""
        self._audio_time = 0.0
        self._dirty = False
        self._closing = False
        self._failed = False
        self.dropped_partials = 0
        self._thread = threading.Thread(target=self._loop, name="sotto-translate", daemon=True)
        self._thread.start()

    def submit(self, update: CaptionUpdate) -> None:
        """Queue the update's finished sentences; replace the pending partial."""
        with self._cond:
            if self._failed:
                return
            self._sentences.extend(update.sentences)
            if self._dirty and self._partial != update.partial:
                self.dropped_partials += 1
            self._partial = update.partial
            self._audio_time = update.audio_time
            self._dirty = True
            self._cond.notify()

    def close(self, timeout: float | None = None) -> None:
        """Translate what is queued, then stop the thread (the sentinel is ``_closing``)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._dirty or self._closing)
                if not self._dirty:
                    return
                sentences, self._sentences = self._sentences, []
                partial, audio_time = self._partial, self._audio_time
                self._dirty = False
            try:
                result = self.translator.translate(sentences, partial, audio_time)
            except SottoError as exc:
                logger.exception("translation failed")
                with self._cond:
                    self._failed = True
                    self._sentences = []
                    self._dirty = False
                self._on_error(exc)
                return
            except Exception as exc:  # an engine bug must not take captions down
                logger.exception("translation failed unexpectedly")
                with self._cond:
                    self._failed = True
                self._on_error(SottoError(f"The translator stopped unexpectedly ({exc}); captions continue."))
                return
            if result is not None:
                self._on_result(result)
