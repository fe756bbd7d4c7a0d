"""The app's behaviour: wires the views to the caption service, settings, history and downloads.

Views (overlay, control window, tray, settings panel, history window) hold
layout and emit signals; this controller decides what happens. The caption
service does the work on its own threads; the UI thread only ever waits for
signals.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QRect, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QSystemTrayIcon

from core import logger
from core.audio.level import LevelMonitor
from core.captions.history import CaptionHistory, export_entries, read_session
from core.captions.policy import CaptionView
from core.errors import SottoError
from core.models.store import ModelStore, check_reference
from core.pipeline import Progress
from core.service import IDLE, CaptionService
from core.settings import Settings, check_combination, load_settings, save_settings, settings_path

from .bridge import ServiceBridge
from .control import ControlWindow, TrayIcon
from .downloads import ModelDownloads
from .history_window import HistoryWindow
from .icons import app_icon
from .overlay import CaptionOverlay
from .settings_panel import SettingsPanel

_MODEL_KINDS = {"asr.model": "whisper-ct2", "asr.drafter": "whisper-ct2", "asr.verifier": "whisper-ct2",
                "translation.model": "gguf"}


class _LevelSignals(QObject):
    level = Signal(float)
    error = Signal(str)


class AppController(QObject):
    """Owns the windows, the settings and the caption service for one app run."""

    def __init__(self, store: ModelStore | None = None, history: CaptionHistory | None = None,
                 show_windows: bool = True, preload: bool = True) -> None:
        super().__init__()
        self.store = store or ModelStore()
        self.history = history or CaptionHistory()
        self.first_run = not settings_path().exists()
        startup_problem = ""
        try:
            self.settings = load_settings()
        except SottoError as exc:  # a broken settings file: say so, run on defaults, keep the file
            startup_problem = f"{exc} Sotto is using default settings for now."
            self.settings = Settings()
        self.bridge = ServiceBridge()
        self.service = CaptionService(self.settings, self.bridge, self.store, self.history)
        self.icon = app_icon()
        target = self._target()
        self.overlay = CaptionOverlay(self.settings.overlay, self.settings.asr.language, target)
        self.window = ControlWindow(self.icon)
        self.tray: TrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = TrayIcon(self.icon, self.window)
        self.panel: SettingsPanel | None = None
        self.history_window: HistoryWindow | None = None
        self.downloads = ModelDownloads(self.store)
        self._level: LevelMonitor | None = None
        self._meter_on = False
        self._level_signals = _LevelSignals()
        self._geometry_timer = QTimer(self)
        self._geometry_timer.setSingleShot(True)
        self._geometry_timer.setInterval(600)
        self._geometry_timer.timeout.connect(self._save_geometry)
        self._shut_down = False
        self._selected_entries: list = []
        self._connect()
        self._restore_geometry()
        self.window.set_toggles(self.settings.overlay.visible, self.settings.overlay.click_through)
        if show_windows:
            self.window.show()
            if self.tray is not None:
                self.tray.show()
            if self.settings.overlay.visible:
                self.overlay.show()
        if startup_problem:
            self.window.show_message("error", startup_problem)
        elif self.first_run:
            self.window.show_message("info", (
                "Welcome to Sotto. The bundled models are ready: Whisper tiny.en for English speech and "
                "Gemma 3 270M for translation. Bigger, more accurate models are in Settings → Models."))
        if preload:
            self.service.preload()

    # -- wiring ------------------------------------------------------------------------------------
    def _connect(self) -> None:
        b, w, o = self.bridge, self.window, self.overlay
        b.view_changed.connect(self._on_view)
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
        o.geometry_changed.connect(self._geometry_timer.start)
        o.hide_requested.connect(lambda: self.set_overlay_visible(False))
        o.click_through_requested.connect(self.set_click_through)
        o.settings_requested.connect(self.show_settings)
        self._level_signals.level.connect(lambda v: self.panel.show_level(v) if self.panel else None)
        self._level_signals.error.connect(lambda t: self.panel.show_level_error(t) if self.panel else None)
        self.downloads.progress.connect(self._on_download_progress)
        self.downloads.finished.connect(self._on_download_finished)
        self.downloads.failed.connect(self._on_download_failed)

    def _target(self) -> str | None:
        t = self.settings.translation.target
        return None if t == "none" else t

    # -- service events (UI thread) ----------------------------------------------------------------
    def _on_view(self, view: CaptionView) -> None:
        self.overlay.show_view(view)

    def _on_progress(self, progress: Progress) -> None:
        if progress.lag is not None and self.service.state == "running":
            self.window.detail.setText(
                f"{self._source_words()} · {progress.audio_time:.0f} s · {progress.lag:.1f} s behind")

    def _source_words(self) -> str:
        src = self.settings.audio.source
        return "Microphone" if src == "mic" else "Demo recording" if src == "demo" else Path(src).name

    def _on_message(self, level: str, text: str) -> None:
        self.window.show_message(level, text)
        if level == "error":
            self.overlay.set_placeholder(text)
            if self.tray is not None and self.tray.isVisible():
                self.tray.showMessage("Sotto", text, QSystemTrayIcon.MessageIcon.Warning, 8000)

    def _on_state(self, state: str, detail: str) -> None:
        self.window.show_state(state, detail)
        if self.tray is not None:
            self.tray.show_state(state)
        placeholders = {"loading": "Preparing models…", "running": "Listening…", "paused": "Paused.",
                        "idle": "Stopped. Captions are saved in History."}
        if state in placeholders and not (state == "idle" and self.window.message.text()
                                          and "error" in self.window.message.styleSheet()):
            self.overlay.set_placeholder(placeholders[state])

    # -- actions -------------------------------------------------------------------------------------
    def toggle_start(self) -> None:
        """Start captions, or stop them if they run."""
        if self.service.state == IDLE:
            self.window.show_message("info", "")
            self.overlay.set_languages(self.settings.asr.language, self._target())
            self.overlay.clear()
            self.service.start()
        else:
            self.service.stop()

    def set_overlay_visible(self, visible: bool) -> None:
        """Show or hide the caption overlay (remembered)."""
        self.overlay.setVisible(visible)
        self.window.set_toggles(visible, self.overlay.click_through)
        self._set_quietly("overlay.visible", visible)

    def set_click_through(self, enabled: bool) -> None:
        """Let the mouse pass through the overlay, or not (remembered)."""
        self.overlay.set_click_through(enabled)
        self.window.set_toggles(self.overlay.isVisible(), enabled)
        self._set_quietly("overlay.click_through", enabled)

    def _set_quietly(self, key: str, value) -> None:
        self._save_quietly(self.settings.with_value(key, value))

    def _save_quietly(self, settings: Settings) -> None:
        """Keep and save settings the user changed by using the app (not through the panel)."""
        self.settings = settings
        try:
            save_settings(settings)
        except (SottoError, OSError) as exc:
            self.window.show_message("error", f"Could not save settings ({exc}).")

    def apply_setting(self, key: str, value) -> bool:
        """Validate, save and apply one setting; refused changes leave everything as it was."""
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
        except OSError as exc:
            self._answer(False, f"Could not save settings to {settings_path()} ({exc.strerror or exc}).")
            return False
        self.settings = new
        later = self.service.apply_settings(new)
        if key.startswith("overlay."):
            self.overlay.apply_style(new.overlay)
        if key in _MODEL_KINDS:
            self._refresh_models()
        if key in ("asr.engine", "asr.calibrate") and self.panel is not None:
            self.panel.load(new)  # shows the rows of the chosen engine
        if key in ("asr.language", "translation.target") and self.service.state == IDLE:
            self.overlay.set_languages(new.asr.language, self._target())
        if key in ("audio.device", "audio.source") and self._meter_on:
            self._meter(True)
        note = "Saved."
        if later and self.service.state != IDLE:
            note = "Saved; this applies when captions next start (Stop, then Start)."
        self._answer(True, note)
        return True

    def _answer(self, ok: bool, text: str) -> None:
        if self.panel is not None:
            self.panel.show_result(ok, text)
            if not ok:
                self.panel.load(self.settings)
        elif not ok:
            self.window.show_message("error", text)

    # -- settings panel ------------------------------------------------------------------------------
    def show_settings(self) -> SettingsPanel:
        """Open (or raise) the settings panel."""
        if self.panel is None:
            self.panel = self._make_panel()
        self.panel.show()
        self.panel.raise_()
        return self.panel

    def _make_panel(self) -> SettingsPanel:
        devices: list[tuple[str, str]] = []
        try:
            from core.audio.sources import list_input_devices

            devices = [(d.name, f"{d.name} ({d.hostapi})") for d in list_input_devices()]
        except SottoError as exc:
            self.window.show_message("error", str(exc))
        panel = SettingsPanel(self.settings, self.store.list(), devices, _cuda_available())
        panel.change_requested.connect(self.apply_setting)
        panel.download_requested.connect(self.start_download)
        panel.cancel_download.connect(self.downloads.cancel)
        panel.meter_wanted.connect(self._meter)
        return panel

    def _refresh_models(self) -> None:
        if self.panel is not None:
            self.panel.show_model_status({m.name: m for m in self.store.list()})

    def start_download(self, name: str) -> None:
        """Download a model with progress in the panel (resumes a partial download)."""
        if self.downloads.start(name) and self.panel is not None:
            self.panel.show_result(True, f"Downloading {name}…")

    def _download_row(self, name: str):
        if self.panel is None:
            return None
        rows = [r for r in self.panel.model_rows() if r.combo.findData(name) >= 0]
        current = [r for r in rows if r.combo.currentData() == name]
        return (current or rows or [None])[0]

    def _on_download_progress(self, name: str, fraction, text: str) -> None:
        row = self._download_row(name)
        if row is not None:
            row.show_progress(fraction, text)

    def _on_download_finished(self, name: str, path: str) -> None:
        row = self._download_row(name)
        if row is not None:
            row.end_progress()
        self._refresh_models()
        self._answer(True, f"{name} is downloaded and checked.")

    def _on_download_failed(self, name: str, message: str) -> None:
        row = self._download_row(name)
        if row is not None:
            row.end_progress()
        self._refresh_models()
        self._answer(not message, message or f"Download of {name} paused; Download resumes it.")

    def _meter(self, wanted: bool) -> None:
        self._meter_on = wanted
        if self._level is not None:
            self._level.stop()
            self._level = None
        if wanted and self.settings.audio.source == "mic":
            signals = self._level_signals
            self._level = LevelMonitor(self.settings.audio.device, signals.level.emit, signals.error.emit)
        elif wanted and self.panel is not None:
            self.panel.show_level_error("The meter listens to the microphone; choose Microphone above to use it.")

    # -- history -----------------------------------------------------------------------------------------
    def show_history(self) -> HistoryWindow:
        """Open (or raise) the history window."""
        if self.history_window is None:
            hw = HistoryWindow()
            hw.search_changed.connect(self._search_history)
            hw.session_selected.connect(self._select_session)
            hw.export_requested.connect(self.export_history)
            hw.refresh_requested.connect(self._refresh_history)
            self.history_window = hw
        self._refresh_history()
        self.history_window.show()
        self.history_window.raise_()
        return self.history_window

    def _refresh_history(self) -> None:
        hw = self.history_window
        if hw is None:
            return
        sessions = self.history.sessions()
        hw.show_sessions(sessions)
        if hw.search.text():
            self._search_history(hw.search.text())
        elif sessions:
            hw.sessions.setCurrentRow(0)
        else:
            hw.show_entries([], "No captions yet.")

    def _search_history(self, query: str) -> None:
        hw = self.history_window
        if hw is None:
            return
        if not query.strip():  # back to the selected session
            item = hw.sessions.currentItem()
            if item is not None:
                self._select_session(item.data(256))
            else:
                self._selected_entries = []
                hw.show_entries([], "")
            return
        hits = self.history.search(query)
        self._selected_entries = [e for _, e in hits]
        hw.show_entries(self._selected_entries, f"{len(hits)} caption(s) contain “{query}”.")

    def _select_session(self, name: str) -> None:
        hw = self.history_window
        if hw is None or not name:
            return
        session = read_session(self.history.root / name)
        self._selected_entries = session.entries
        note = session.title
        if session.damaged_lines:
            note += f" — {session.damaged_lines} damaged line(s) skipped (the app stopped mid-write)."
        hw.show_entries(session.entries, note)

    def export_history(self, path: str, fmt: str, which: str) -> Path | None:
        """Export the captions shown in the history window."""
        entries = self._selected_entries
        try:
            out = export_entries(entries, Path(path), fmt, which)
        except SottoError as exc:
            if self.history_window is not None:
                self.history_window.status.setText(str(exc))
            return None
        if self.history_window is not None:
            self.history_window.status.setText(f"Exported {len(entries)} caption(s) to {out}.")
        return out

    # -- overlay geometry --------------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        ov = self.settings.overlay
        screen = None
        for s in QGuiApplication.screens():
            if s.name() == ov.screen:
                screen = s
        screen = screen or QGuiApplication.primaryScreen()
        area = screen.availableGeometry() if screen is not None else QRect(0, 0, 1280, 800)
        width = min(ov.width, area.width())
        height = min(max(ov.height, self.overlay.content_height()), area.height())
        if ov.x == -1 and ov.y == -1:
            x = area.x() + (area.width() - width) // 2
            y = area.y() + area.height() - height - 60
        else:  # keep it on the screen even if the screen got smaller
            x = min(max(ov.x, area.x()), area.right() - width)
            y = min(max(ov.y, area.y()), area.bottom() - height)
        self.overlay.setGeometry(x, y, width, height)
        self._geometry_timer.stop()

    def _save_geometry(self) -> None:
        g = self.overlay.geometry()
        screen = self.overlay.screen()
        values = {"overlay.x": g.x(), "overlay.y": g.y(), "overlay.width": g.width(), "overlay.height": g.height(),
                  "overlay.screen": screen.name() if screen is not None else ""}
        new = self.settings
        try:
            for key, value in values.items():
                new = new.with_value(key, value)
        except SottoError:
            logger.debug("overlay geometry out of range, not saved", exc_info=True)
            return
        if new != self.settings:
            self._save_quietly(new)

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
        if self._geometry_timer.isActive():
            self._geometry_timer.stop()
            self._save_geometry()
        self._meter(False)
        self.downloads.shutdown()
        self.service.shutdown()
        if self.tray is not None:
            self.tray.hide()
        for w in (self.overlay, self.panel, self.history_window):
            if w is not None:
                w.close()


def _cuda_available() -> bool:
    try:
        import ctranslate2

        return ctranslate2.get_cuda_device_count() > 0
    except Exception:
        return False
