"""Drives the control window and the tray icon, and puts the app together.

:class:`AppController` is the composition root of one app run: it loads the settings,
makes the caption service, the windows' controllers (:mod:`.overlay`, :mod:`.settings`,
:mod:`.history`), the global hotkeys (:mod:`.hotkeys`) and the control window with its tray
icon, and wires them. It turns what the service reports (captions, progress, messages, state)
into what the windows show, and does what the control window's buttons, shortcuts, tray menu
and global hotkeys ask: start, stop, pause, show or hide the overlay, open a window, quit.

The caption service does the work on its own threads; the UI thread only ever waits for
signals.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QSystemTrayIcon

from core.errors import SottoError
from core.models.store import ModelStore
from core.session.history import CaptionHistory
from core.session.pipeline import MessageLevel
from core.session.service import CaptionService, ServiceState
from core.session.summary import CAUGHT_UP_MESSAGE
from core.settings import Settings, load_settings, settings_path
from core.stream import Progress

from ..views.control import ControlWindow, TrayIcon
from ..views.history_window import HistoryWindow
from ..views.icons import app_icon
from ..views.settings_panel import SettingsPanel
from .bridge import ServiceBridge
from .calibration import CalibrationJob
from .downloads import ModelDownloads
from .history import HistoryController
from .hotkeys import HotkeyController
from .overlay import OverlayController
from .settings import SettingsController
from .welcome import WelcomeController

WELCOME = ("Welcome to Sotto. The bundled models are ready: Whisper tiny.en shows English speech as it is "
           "said, Whisper base checks each finished line, and Gemma 3 270M translates. Bigger, more "
           "accurate models are in Settings → Models.")


class AppController(QObject):
    """Owns the windows, the settings and the caption service for one app run."""

    def __init__(self, store: ModelStore | None = None, history: CaptionHistory | None = None,
                 show_windows: bool = True, preload: bool = True, welcome: bool = True) -> None:
        """``welcome``: on a first run with windows shown, open the welcome (:mod:`.welcome`), which
        also runs the engine calibration; scripts that drive the app themselves turn it off."""
        super().__init__()
        self.store = store or ModelStore()
        self.history = history or CaptionHistory()
        self.first_run = not settings_path().exists()
        startup_problem = ""
        try:
            settings = load_settings()
        except SottoError as exc:  # a broken settings file: say so, run on defaults, keep the file
            startup_problem = f"{exc} Sotto is using default settings for now."
            settings = Settings()
        self.bridge = ServiceBridge()
        self.service = CaptionService(settings, self.bridge, self.store, self.history)
        self.downloads = ModelDownloads(self.store)
        self.calibration = CalibrationJob(self.store)
        self.settings_controller = SettingsController(settings, self.service, self.store, self.downloads,
                                                      self.calibration)
        self.overlay_controller = OverlayController(self.settings_controller, self.service)
        self.history_controller = HistoryController(self.history)
        self.hotkey_controller = HotkeyController(self.settings_controller)
        self.overlay = self.overlay_controller.view
        self.icon = app_icon()
        self.window = ControlWindow(self.icon)
        self.tray: TrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = TrayIcon(self.icon, self.window)
        self.welcome: WelcomeController | None = None
        self._shut_down = False
        self._error_shown = False  # an error is on the control window (falling behind does not replace it)
        self._connect()
        self.window.set_toggles(settings.overlay.visible, settings.overlay.click_through)
        self._bind_shortcuts(settings)
        if show_windows:
            self.window.show()
            if self.tray is not None:
                self.tray.show()
            self.overlay_controller.show_at_start()
        if startup_problem:
            self.window.show_message(MessageLevel.ERROR, startup_problem)
        elif self.first_run:
            self.window.show_message(MessageLevel.INFO, WELCOME)
        self._startup_text = startup_problem or (WELCOME if self.first_run else "")
        self.hotkey_controller.start()
        if preload:
            self.service.preload()
        if welcome and show_windows and self.first_run and not startup_problem:
            self.open_welcome()
        elif welcome and show_windows:
            self._calibrate_if_needed()

    @property
    def settings(self) -> Settings:
        """The settings in force (kept by the settings controller)."""
        return self.settings_controller.settings

    # -- wiring ------------------------------------------------------------------------------------
    def _connect(self) -> None:
        b, w = self.bridge, self.window
        b.view_changed.connect(self.overlay_controller.show_captions)
        b.progress_changed.connect(self._on_progress)
        b.message.connect(self._on_message)
        b.state_changed.connect(self._on_state)
        b.status.connect(w.show_status)
        w.start_stop.connect(self.toggle_start)
        w.pause_toggled.connect(self.service.pause)
        w.overlay_toggled.connect(self.set_overlay_visible)
        w.click_through_toggled.connect(self.set_click_through)
        w.settings_requested.connect(self.show_settings)
        w.history_requested.connect(self.show_history)
        w.quit_requested.connect(self.quit)
        self.overlay.settings_requested.connect(self.show_settings)  # the overlay's menu opens the panel
        self.overlay_controller.toggles_changed.connect(w.set_toggles)
        self.settings_controller.problem.connect(lambda text: w.show_message(MessageLevel.ERROR, text))
        self.hotkey_controller.triggered.connect(self.on_hotkey)
        self.hotkey_controller.notice.connect(self._on_hotkey_notice)
        self.hotkey_controller.problems_changed.connect(self.settings_controller.show_hotkey_problems)
        self.settings_controller.hotkey_recording.connect(self.hotkey_controller.suspend)
        self.settings_controller.applied.connect(
            lambda key, new: self._bind_shortcuts(new) if key.startswith("hotkeys.") else None)

    def _bind_shortcuts(self, settings: Settings) -> None:
        """The control window's shortcuts follow the hotkeys' bindings (Settings › Hotkeys)."""
        self.window.set_shortcuts(dataclasses.asdict(settings.hotkeys))

    # -- service events (UI thread) ----------------------------------------------------------------
    def _on_progress(self, progress: Progress) -> None:
        if progress.lag is not None and self.service.state == ServiceState.RUNNING:
            self.window.show_detail(
                f"{self._source_words()} · {progress.audio_time:.0f} s · {progress.lag:.1f} s behind")

    def _source_words(self) -> str:
        src = self.settings.audio.source
        names = {"mic": "Microphone", "system": "System audio", "both": "Meeting (me and them)",
                 "demo": "Demo recording"}
        return names.get(src) or (f"System audio ({src[7:]})" if src.startswith("system:") else Path(src).name)

    def _on_message(self, level: str, text: str) -> None:
        if level == MessageLevel.ERROR:
            self._error_shown = True
        elif self._error_shown and (level == MessageLevel.WARNING or text == CAUGHT_UP_MESSAGE):
            return  # this session's error stays in view; how far behind shows in the detail line
        self.window.show_message(level, text)
        if level == MessageLevel.ERROR:
            self.overlay_controller.show_problem(text)
            if self.tray is not None:
                self.tray.show_warning(text)

    def _on_state(self, state: str, detail: str) -> None:
        self.window.show_state(state, detail)
        if self.tray is not None:
            self.tray.show_state(state)
        self.overlay_controller.show_state(state)

    def _on_hotkey_notice(self, level: str, text: str) -> None:
        if self._startup_text:  # at start-up the welcome or a broken settings file stays in view, the notice after it
            text = f"{self._startup_text} {text}".strip()
            level = MessageLevel.ERROR if self._startup_text != WELCOME else level
            self._startup_text = ""
        self.window.show_message(level, text)

    # -- actions -------------------------------------------------------------------------------------
    def open_welcome(self) -> WelcomeController:
        """The first-run welcome: what to caption, the languages, a level meter, the engine check."""
        if self.welcome is None:
            self.welcome = WelcomeController(self.settings_controller, self.calibration, self.icon)
            self.welcome.start_requested.connect(self._start_after_welcome)
            self.welcome.calibrated.connect(
                lambda reason: self.window.show_message(MessageLevel.INFO, f"Speech engine: {reason}"))
        self.welcome.open()
        return self.welcome

    def _calibrate_if_needed(self) -> None:
        """No engine check saved for this machine (a Sotto from before it, another computer, or one stopped
        by starting captions): run it now in the background, while captions are stopped; its choice applies."""
        from core.asr.calibration import load_calibration, same_machine

        cal = load_calibration()
        if cal is not None and same_machine(cal):
            return
        self.calibration.progress.connect(self._on_calibration_progress)
        self.calibration.finished.connect(lambda result: self.window.show_status("", 1.0))
        self.calibration.failed.connect(lambda text: self.window.show_status("", 1.0))
        self.settings_controller.calibrate()

    def _on_calibration_progress(self, fraction, text: str) -> None:
        if self.calibration.running:
            self.window.show_status(f"Checking which speech engine suits this computer: {text}", fraction)

    def _start_after_welcome(self) -> None:
        if self.service.state == ServiceState.IDLE:
            self.toggle_start()

    def toggle_start(self) -> None:
        """Start captions, or stop them if they run."""
        if self.service.state == ServiceState.IDLE:
            if self.calibration.running:  # never measured while captioning: it runs again at the next start
                self.calibration.cancel()
                self.window.show_status("", 1.0)
            self._error_shown = False
            self.window.show_message(MessageLevel.INFO, "")
            self.overlay_controller.new_session()
            self.service.start()
        else:
            self.service.stop()

    def on_hotkey(self, action: str) -> None:
        """A global hotkey was pressed (whichever program has focus)."""
        if action == "start":
            self.toggle_start()
        elif action == "pause":
            state = self.service.state
            if state in (ServiceState.RUNNING, ServiceState.PAUSED):
                self.service.pause(state == ServiceState.RUNNING)
        elif action == "overlay":
            self.set_overlay_visible(not self.overlay.isVisible())
        elif action == "click_through":
            self.set_click_through(not self.overlay.click_through)

    def set_overlay_visible(self, visible: bool) -> None:
        """Show or hide the caption overlay (remembered)."""
        self.overlay_controller.set_visible(visible)

    def set_click_through(self, enabled: bool) -> None:
        """Let the mouse pass through the overlay, or not (remembered)."""
        self.overlay_controller.set_click_through(enabled)

    def apply_setting(self, key: str, value) -> bool:
        """Validate, save and apply one setting; refused changes leave everything as it was."""
        return self.settings_controller.apply(key, value)

    def show_settings(self) -> SettingsPanel:
        """Open (or raise) the settings panel."""
        return self.settings_controller.show()

    def show_history(self) -> HistoryWindow:
        """Open (or raise) the history window."""
        return self.history_controller.show()

    def export_history(self, path: str, fmt: str, which: str) -> Path | None:
        """Export the captions shown in the history window."""
        return self.history_controller.export(path, fmt, which)

    # -- quitting --------------------------------------------------------------------------------------------
    def quit(self) -> None:
        """Stop everything, save, and leave the event loop."""
        self.shutdown()
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance()
        if app is not None:
            app.quit()

    def shutdown(self) -> None:
        """Stop captions, the level meter and downloads; end every thread (idempotent)."""
        if self._shut_down:
            return
        self._shut_down = True
        self.overlay_controller.flush_geometry()
        self.hotkey_controller.close()
        self.settings_controller.stop_meter()
        if self.welcome is not None:
            self.welcome.close()
        self.calibration.cancel()
        self.downloads.shutdown()
        self.service.shutdown()
        if self.tray is not None:
            self.tray.hide()
        self.overlay_controller.close()
        self.settings_controller.close()
        self.history_controller.close()
        self.calibration.wait(10.0)
