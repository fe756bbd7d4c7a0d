"""Drives the settings panel: validates, saves and applies each change, runs model downloads
with their progress and the input level meter. It also keeps the settings in force for the
whole app.

The other controllers read :attr:`SettingsController.settings`, keep what the user changed by
using the app (overlay geometry, visibility, click-through) with
:meth:`SettingsController.set_quietly`, and follow changes made in the panel through the
``applied`` signal.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from core import logger
from core.audio.level import LevelMonitor
from core.audio.loopback import list_output_devices, system_audio_unavailable
from core.audio.sources import is_live, list_input_devices
from core.compute import ct2_cuda_problem
from core.errors import SottoError
from core.models.advice import advise, speed_notes
from core.models.store import ModelStore, check_reference
from core.session.service import CaptionService, ServiceState
from core.settings import Settings, check_combination, save_settings, settings_path

from ..views.settings_panel import SettingsPanel
from .calibration import CalibrationJob, choice_settings
from .downloads import ModelDownloads

_MODEL_KINDS = {"asr.model": "whisper-ct2", "asr.drafter": "whisper-ct2", "asr.verifier": "whisper-ct2",
                "translation.model": "gguf"}


class _LevelSignals(QObject):
    """Carries the level meter's readings from its thread to the UI thread."""

    level = Signal(str, float)  # stream (mic, system), dBFS
    error = Signal(str, str)  # stream, sentence


def level_streams(settings: Settings) -> dict[str, str]:
    """The live sounds chosen in ``settings`` as level meters hear them: ``{"mic"|"system": source}``."""
    audio = settings.audio
    mic = f"mic:{audio.device}" if audio.device else "mic"
    streams = {"mic": {"mic": mic}, "both": {"mic": mic, "system": "system"}}.get(audio.source)
    if streams is None:
        streams = {"system": audio.source} if is_live(audio.source) else {}
    return streams


def calibration_summary() -> str:
    """What the saved engine calibration chose and why, in a sentence or two (for Settings › Compute)."""
    from core.asr.calibration import load_calibration, same_machine

    try:
        cal = load_calibration()
    except Exception as exc:  # a damaged file: say so; checking again replaces it
        return f"The saved speed check could not be read ({exc}); check again."
    if cal is None:
        return "Not checked yet on this computer."
    when = f"Checked {cal.date} on {cal.machine}"
    if not same_machine(cal):
        when += " (another computer: check again)"
    return f"{cal.reason} {when}."


def verifier_fits(calibration=None) -> dict[str, str]:
    """For each speech model that can verify lines: whether it keeps up here as the verifier, in a few
    words, from the saved engine check (timed or predicted; "not measured yet" before one). Shown
    beside the model where it is chosen, so before a download."""
    from core.asr.calibration import load_calibration, verifier_speed_words
    from core.models.registry import MODELS

    cal = calibration or load_calibration()
    return verifier_speed_words(cal, [name for name, spec in MODELS.items() if spec.kind == "whisper-ct2"])


class SettingsController(QObject):
    """The settings in force, and what the settings panel's edits, downloads and meter do."""

    applied = Signal(str, object)  # key, the new Settings: a change was validated, saved and applied
    problem = Signal(str)  # an error for the control window (no panel is open to show it)
    hotkey_recording = Signal(bool)  # the panel records a hotkey: global hotkeys step aside meanwhile

    def __init__(self, settings: Settings, service: CaptionService, store: ModelStore,
                 downloads: ModelDownloads, calibration: CalibrationJob | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.service = service
        self.store = store
        self.downloads = downloads
        self.calibration = calibration or CalibrationJob(store)
        self.panel: SettingsPanel | None = None
        self._use_when_downloaded: str | None = None  # the advised model, used once its download ends
        self._levels: list[LevelMonitor] = []
        self._meter_on = False
        self._hotkey_problems: dict[str, str] = {}  # from the hotkeys controller, for the Hotkeys tab
        self._applying_calibration = False
        self._level_signals = _LevelSignals()
        self._level_signals.level.connect(lambda s, v: self.panel.show_level(s, v) if self.panel else None)
        self._level_signals.error.connect(lambda s, t: self.panel.show_level_error(s, t) if self.panel else None)
        downloads.progress.connect(self._on_download_progress)
        downloads.finished.connect(self._on_download_finished)
        downloads.failed.connect(self._on_download_failed)
        self.calibration.progress.connect(self._on_calibration_progress)
        self.calibration.finished.connect(self._on_calibrated)
        self.calibration.failed.connect(self._on_calibration_failed)

    # -- the settings in force -----------------------------------------------------------------------
    def set_quietly(self, key: str, value) -> None:
        """Keep and save one setting the user changed by using the app (not through the panel)."""
        self.save_quietly(self.settings.with_value(key, value))

    def save_quietly(self, settings: Settings) -> None:
        """Keep and save settings the user changed by using the app (not through the panel)."""
        self.settings = settings
        try:
            save_settings(settings)
        except (SottoError, OSError) as exc:
            self.problem.emit(f"Could not save settings ({exc}).")

    def apply(self, key: str, value) -> bool:
        """Validate, save and apply one setting; refused changes leave everything as it was. The spoken
        language brings the speech models it needs (:meth:`apply_language`)."""
        if key == "asr.language":
            ok, text = self.apply_language(str(value))
            if ok or text:  # (a step that failed has said why)
                self._answer(ok, text or "Saved.")
            return ok
        return self._apply(key, value)

    def apply_language(self, language: str) -> tuple[bool, str]:
        """Set the spoken language with speech models that understand it
        (:func:`core.session.engines.engines_for_language`); returns whether it was done and the
        sentence that says what changed, or why not (for the caller to show)."""
        from core.asr.calibration import load_calibration
        from core.session.engines import engines_for_language, installed_in

        choice = engines_for_language(self.settings, language, installed_in(self.store), load_calibration())
        try:
            check_combination(choice.apply_to(self.settings))
        except SottoError as exc:
            return False, str(exc)
        for key, value in choice.steps():
            if self.settings.value(key) != value and not self._apply(key, value):
                return False, ""
        if choice.changes and self.panel is not None:
            self.panel.load(self.settings)  # the Models tab shows them
        return True, choice.sentence

    def _apply(self, key: str, value) -> bool:
        try:
            new = self.settings.with_value(key, value)
            check_combination(new)
            if key in _MODEL_KINDS:
                check_reference(str(value), _MODEL_KINDS[key])
        except SottoError as exc:
            self._answer(False, str(exc))
            return False
        try:
            save_settings(new)
        except SottoError as exc:  # e.g. a value that cannot be stored
            self._answer(False, str(exc))
            return False
        except OSError as exc:
            self._answer(False, f"Could not save settings to {settings_path()} ({exc.strerror or exc}).")
            return False
        self.settings = new
        later = self.service.apply_settings(new)
        self.applied.emit(key, new)
        if key in _MODEL_KINDS:
            self._refresh_models()
            self._show_advice()
        if key in ("asr.engine", "asr.calibrate") and self.panel is not None:
            self.panel.load(new)  # shows the rows of the chosen engine
        if key in ("audio.device", "audio.source") and self._meter_on:
            self._meter(True)
        note = "Saved."
        if later and self.service.state != ServiceState.IDLE:
            note = "Saved; this applies when captions next start (Stop, then Start)."
        self._answer(True, note)
        return True

    def _answer(self, ok: bool, text: str) -> None:
        if self.panel is not None:
            self.panel.show_result(ok, text)
            if not ok:
                self.panel.load(self.settings)
        elif not ok:
            self.problem.emit(text)

    # -- the panel ---------------------------------------------------------------------------------------
    def show(self) -> SettingsPanel:
        """Open (or raise) the settings panel."""
        if self.panel is None:
            self.panel = self._make_panel()
        self.panel.show()
        self.panel.raise_()
        return self.panel

    def _make_panel(self) -> SettingsPanel:
        devices: list[tuple[str, str]] = []
        outputs: list[tuple[str, str]] = []
        try:
            devices = [(d.name, f"{d.name} ({d.hostapi})") for d in list_input_devices()]
        except SottoError as exc:
            self.problem.emit(str(exc))
        if system_audio_unavailable() is None:
            try:
                outputs = [(f"system:{o.id}", f"System audio: {o.name}") for o in list_output_devices()]
            except SottoError as exc:  # no sound server: "System audio" still says why when started
                logger.info("outputs not listed: %s", exc)
        cuda_problem = ct2_cuda_problem()
        panel = SettingsPanel(self.settings, self.store.list(), devices, cuda_problem is None, outputs,
                              cuda_problem=cuda_problem)
        panel.change_requested.connect(self.apply)
        panel.download_requested.connect(self.start_download)
        panel.cancel_download.connect(self.downloads.cancel)
        panel.meter_wanted.connect(self._meter)
        panel.advice_accepted.connect(self.use_advised)
        panel.calibrate_requested.connect(self.calibrate)
        panel.show_calibration(calibration_summary())
        panel.show_verifier_fit(verifier_fits())
        panel.show_hotkey_problems(self._hotkey_problems)
        panel.hotkey_recording.connect(self.hotkey_recording.emit)
        self.panel = panel
        self._show_advice()
        return panel

    def show_hotkey_problems(self, problems: dict) -> None:
        """The global hotkeys not in force, one sentence each, for Settings › Hotkeys."""
        self._hotkey_problems = dict(problems)
        if self.panel is not None:
            self.panel.show_hotkey_problems(self._hotkey_problems)

    # -- model advice --------------------------------------------------------------------------------------
    def _show_advice(self) -> None:
        if self.panel is None:
            return
        try:
            advice = advise()
        except Exception:  # advice is a courtesy: a failed probe must not cost the panel
            logger.exception("model advice failed")
            return
        ready = not self.store.status(advice.model).downloadable
        self.panel.show_advice(advice.model, advice.reason, advice.languages,
                               self.settings.translation.model == advice.model, ready)
        self.panel.show_translator_speeds(speed_notes())

    def use_advised(self, name: str) -> None:
        """Use translation model ``name``, downloading it first (with progress) if needed."""
        if self.store.status(name).downloadable:
            self._use_when_downloaded = name
            self.start_download(name)
        elif self.apply("translation.model", name) and self.panel is not None:
            self.panel.load(self.settings)  # the picker shows it

    def close(self) -> None:
        """Close the panel if it was opened."""
        if self.panel is not None:
            self.panel.close()

    # -- model downloads -----------------------------------------------------------------------------------
    def _refresh_models(self) -> None:
        if self.panel is not None:
            self.panel.show_model_status({m.name: m for m in self.store.list()})

    def start_download(self, name: str) -> None:
        """Download a model with progress in the panel (resumes a partial download)."""
        if self.downloads.start(name) and self.panel is not None:
            self.panel.show_result(True, f"Downloading {name}…")

    def _on_download_progress(self, name: str, fraction, text: str) -> None:
        if self.panel is not None:
            self.panel.show_download_progress(name, fraction, text)

    def _on_download_finished(self, name: str, path: str) -> None:
        if self.panel is not None:
            self.panel.end_download(name)
        self._refresh_models()
        if name == self._use_when_downloaded:
            self._use_when_downloaded = None
            if self.apply("translation.model", name):
                if self.panel is not None:
                    self.panel.load(self.settings)  # the picker shows it
                self._answer(True, f"{name} is downloaded, checked and in use.")
            return
        self._answer(True, f"{name} is downloaded and checked.")

    def _on_download_failed(self, name: str, message: str) -> None:
        if self.panel is not None:
            self.panel.end_download(name)
        self._refresh_models()
        self._answer(not message, message or f"Download of {name} paused; Download resumes it.")

    # -- the engine calibration (Settings › Compute) --------------------------------------------------------
    def calibrate(self) -> None:
        """Measure again which speech engine keeps up here; its choice is applied when it ends."""
        if not self.calibration.start(self.settings):
            self._answer(True, "The speed check is already running.")
            return
        self._applying_calibration = True
        if self.panel is not None:
            self.panel.show_calibration_progress(0.0, "Checking how fast this computer runs the speech models…")

    def _on_calibration_progress(self, fraction, text: str) -> None:
        if self.panel is not None:
            self.panel.show_calibration_progress(fraction, text)

    def _on_calibrated(self, result) -> None:
        if self._applying_calibration:  # (the welcome applies the runs it started)
            self._applying_calibration = False
            for key, value in choice_settings(result).items():
                if self.settings.value(key) != value:
                    self.apply(key, value)
        if self.panel is not None:
            self.panel.show_calibration(calibration_summary())
            self.panel.show_verifier_fit(verifier_fits())

    def _on_calibration_failed(self, text: str) -> None:
        self._applying_calibration = False
        if self.panel is not None:
            self.panel.show_calibration(calibration_summary(), text or "The speed check was stopped.")

    # -- level meter (while the Audio tab is shown) -------------------------------------------------------
    def _meter(self, wanted: bool) -> None:
        """Level meters for the live sound chosen: the microphone, the system audio, or both."""
        self._meter_on = wanted
        for monitor in self._levels:
            monitor.stop()
        self._levels = []
        if not wanted:
            return
        streams = level_streams(self.settings)
        signals = self._level_signals
        for stream, spec in streams.items():
            self._levels.append(LevelMonitor(spec, lambda db, s=stream: signals.level.emit(s, db),
                                             lambda text, s=stream: signals.error.emit(s, text)))
        if self.panel is not None:
            for stream in ("mic", "system"):
                if stream not in streams:
                    self.panel.show_level_error(stream, "Not listening: it is not among the sounds chosen above.")

    def stop_meter(self) -> None:
        """Stop the level meter and its thread."""
        self._meter(False)
