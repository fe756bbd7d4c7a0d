"""The first run: what to caption, the languages, a level meter, and the engine calibration.

:class:`WelcomeController` opens :class:`~app.views.welcome.WelcomeDialog` when Sotto starts with
no settings file. Each answer is applied (and saved) at once through the settings controller; the
level meter listens to the sound chosen; the calibration (:mod:`core.asr.calibration`, on its own
thread) measures which speech engine keeps up on this machine with the chosen translation, and its
choice is applied when it ends. A spoken language other than English brings a multilingual speech
model with it (:func:`core.session.engines.engines_for_language`), said in the dialog in one sentence;
a choice that cannot be made is refused there too. "Start captions" closes the welcome and starts captions; a
calibration still running is then stopped (it is never measured while captions run) and runs
again, in the background, at the next start. Later starts go straight to captions.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QIcon

from core.audio.level import LevelMonitor
from core.settings import Settings
from core.text import language_name

from ..views.welcome import WelcomeDialog
from .calibration import CalibrationJob, choice_settings
from .settings import SettingsController, level_streams


class _Levels(QObject):
    level = Signal(str, float)
    error = Signal(str, str)


class WelcomeController(QObject):
    """Behaviour of the welcome dialog (one per first run)."""

    start_requested = Signal()  # the user is ready: start captions
    calibrated = Signal(str)  # the calibration's choice was applied: the sentence that says why

    def __init__(self, settings: SettingsController, calibration: CalibrationJob, icon: QIcon | None) -> None:
        super().__init__()
        self.settings = settings
        self.calibration = calibration
        s = settings.settings
        source = s.audio.source if s.audio.source in ("mic", "system", "both") else "mic"
        self.view = WelcomeDialog(icon, source, s.asr.language, s.translation.target)
        self._monitors: list[LevelMonitor] = []
        self._levels = _Levels()
        self._levels.level.connect(self.view.show_level)
        self._levels.error.connect(self.view.show_level_error)
        self._calibrated_for: tuple[str, str] | None = None
        self.view.source_chosen.connect(self.choose_source)
        self.view.language_chosen.connect(self.choose_language)
        self.view.start_requested.connect(self.start)
        self.view.rejected.connect(self.close)  # Escape or the window's close button: captions stay stopped
        calibration.progress.connect(self._on_progress)
        calibration.finished.connect(self._on_calibrated)
        calibration.failed.connect(self._on_failed)

    # -- the flow ------------------------------------------------------------------------------------
    def open(self) -> WelcomeDialog:
        """Show the welcome, listen to the sound chosen and start the calibration."""
        if self.view.source() != self.settings.settings.audio.source:
            self.settings.apply("audio.source", self.view.source())
        if self.settings.settings.asr.language != "en":
            from core.session.engines import engine_words

            self.view.show_language_note(f"Sotto uses {engine_words(self.settings.settings)}.")
        self._listen()
        self._calibrate()
        self.view.show()
        self.view.raise_()
        return self.view

    def choose_source(self, source: str) -> None:
        if self.settings.apply("audio.source", source):
            self._listen()

    def choose_language(self, key: str, value: str) -> None:
        if key == "asr.language":
            ok, text = self.settings.apply_language(value)
            self.view.show_language_note(text)
            if not ok:
                self.view.set_spoken(self.settings.settings.asr.language)
                return
        elif not self.settings.apply(key, value):
            return
        self._calibrate()  # the translation's cost (or the models' language) changed: measure again

    def start(self) -> None:
        """Close the welcome and start captions (which stops a calibration still running)."""
        self._stop_listening()
        self.view.accept()
        self.start_requested.emit()

    def close(self) -> None:
        """Close the welcome without starting (settings chosen so far are kept)."""
        self._stop_listening()
        self.view.hide()

    # -- level meter ---------------------------------------------------------------------------------
    def _listen(self) -> None:
        self._stop_listening()
        streams = level_streams(self.settings.settings)
        self.view.show_meters(tuple(streams))
        for stream, spec in streams.items():
            self._monitors.append(LevelMonitor(spec, lambda db, s=stream: self._levels.level.emit(s, db),
                                               lambda text, s=stream: self._levels.error.emit(s, text)))

    def _stop_listening(self) -> None:
        for monitor in self._monitors:
            monitor.stop()
        self._monitors = []

    # -- calibration ---------------------------------------------------------------------------------
    def _key(self, settings: Settings) -> tuple[str, str]:
        return settings.asr.language, settings.translation.target

    def _calibrate(self) -> None:
        key = self._key(self.settings.settings)
        if key == self._calibrated_for:
            return
        if self.calibration.running:
            self.calibration.cancel()
            self.calibration.wait()
        self._calibrated_for = key
        self.view.show_calibration(0.0, "Checking how fast this computer runs the speech models…")
        self.calibration.start(self.settings.settings)

    def _on_progress(self, fraction, text: str) -> None:
        self.view.show_calibration(fraction, text)

    def _on_calibrated(self, result) -> None:
        chosen = choice_settings(result)
        for key, value in chosen.items():
            if self.settings.settings.value(key) != value:
                self.settings.apply(key, value)
        reason = result.reason
        if not chosen and self.settings.settings.asr.language != "en":
            # the multilingual ladder's drafter (whisper-tiny) is not installed: the language's own choice
            # (base alone, bundled) stays, and that is what the user is told
            from core.session.engines import engine_words

            reason = f"Sotto uses {engine_words(self.settings.settings)} for {language_name(result.language)}."
        self.view.calibration_done(f"Done. {reason}")
        self.calibrated.emit(reason)

    def _on_failed(self, text: str) -> None:
        if text:
            self.view.calibration_done(text)

