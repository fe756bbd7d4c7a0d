"""The engine calibration for the desktop: a thread, progress as Qt signals, the choice applied
(plumbing for :mod:`app.controllers.welcome` and :mod:`app.controllers.settings`, like
:mod:`.downloads`). What it measures and how it chooses is :mod:`core.asr.calibration`'s."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal

from core.errors import Interrupted, SottoError
from core.models.store import ModelStore
from core.settings import Settings


class CalibrationJob(QObject):
    """Runs one calibration at a time; signals arrive on the UI thread."""

    progress = Signal(object, str)  # fraction (or None), sentence
    finished = Signal(object)  # the saved core.asr.calibration.Calibration
    failed = Signal(str)  # a sentence ("" when cancelled)

    def __init__(self, store: ModelStore) -> None:
        super().__init__()
        self.store = store
        self._thread: threading.Thread | None = None
        self._abort = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, settings: Settings) -> bool:
        """Calibrate for ``settings``' spoken language and translation target; False if one runs."""
        if self.running:
            return False
        self._abort = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(settings, self._abort), name="sotto-calibration",
                                        daemon=True)
        self._thread.start()
        return True

    def cancel(self) -> None:
        self._abort.set()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the thread (after :meth:`cancel`, at shutdown)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, settings: Settings, abort: threading.Event) -> None:
        from core.asr.calibration import calibrate, save_calibration
        from core.session.engines import create_translator, streaming_options

        def report(text: str, fraction: float | None) -> None:
            self.progress.emit(fraction, text)

        try:
            translator = None
            if settings.translation.target != "none":
                report("Loading the translator", 0.0)
                translator = create_translator(settings, self.store)
            try:
                result = calibrate(streaming_options(settings), translator, language=settings.asr.language,
                                   target=settings.translation.target, store=self.store,
                                   device=settings.asr.compute_device, encoder_seconds=settings.asr.encoder_seconds,
                                   on_status=report, abort=abort)
            finally:
                if translator is not None:
                    translator.close()
            save_calibration(result)
        except Interrupted:
            self.failed.emit("")
        except SottoError as exc:
            self.failed.emit(f"The speed check stopped: {exc}")
        except Exception as exc:  # a model or library error: say it plainly, keep the current engine
            self.failed.emit(f"The speed check failed ({exc}); the current speech engine stays.")
        else:
            self.finished.emit(result)


def choice_settings(calibration) -> dict[str, object]:
    """The settings that select a calibration's choice (empty when it chose nothing)."""
    return dict(calibration.settings) if calibration.choice else {}
