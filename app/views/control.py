"""The control window and tray icon (views, layout only): start/stop, pause, overlay, click-through,
settings, history. :mod:`app.controllers.app` decides what the buttons do and what is shown."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QProgressBar,
    QPushButton,
    QSystemTrayIcon,
    QVBoxLayout,
    QWidget,
)

from core.session.pipeline import MessageLevel
from core.session.service import ServiceState
from core.settings import HotkeySettings

from .widgets import show_fraction

HOTKEYS = dataclasses.asdict(HotkeySettings())  # the defaults, until the app binds the settings in force

MESSAGE_STYLES = {MessageLevel.ERROR: "color: #c0392b;", MessageLevel.WARNING: "color: #b9770e;"}
STATE_WORDS = {ServiceState.IDLE: "Ready", ServiceState.LOADING: "Preparing…", ServiceState.RUNNING: "Captioning",
               ServiceState.PAUSED: "Paused", ServiceState.STOPPING: "Stopping…"}


class ControlWindow(QMainWindow):
    """A small main window: what runs, and the buttons to control it."""

    start_stop = Signal()
    pause_toggled = Signal(bool)
    overlay_toggled = Signal(bool)
    click_through_toggled = Signal(bool)
    settings_requested = Signal()
    history_requested = Signal()
    quit_requested = Signal()

    def __init__(self, icon: QIcon) -> None:
        super().__init__()
        self.setWindowTitle("Sotto")
        self.setObjectName("controlWindow")
        self.setWindowIcon(icon)
        central = QWidget()
        self.state = QLabel("Ready")
        self.state.setObjectName("stateLabel")
        self.detail = QLabel("")
        self.detail.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.message = QLabel("")
        self.message.setObjectName("messageLabel")
        self.message.setWordWrap(True)
        self.start = QPushButton("Start")
        self.start.setObjectName("startButton")
        self.pause = QPushButton("Pause")
        self.pause.setCheckable(True)
        self.pause.setEnabled(False)
        self.overlay = QCheckBox("Show captions")
        self.click_through = QCheckBox("Click-through")
        settings = QPushButton("Settings…")
        history = QPushButton("History…")
        row = QHBoxLayout()
        for w in (self.start, self.pause):
            row.addWidget(w)
        row2 = QHBoxLayout()
        for w in (self.overlay, self.click_through):
            row2.addWidget(w)
        row3 = QHBoxLayout()
        for w in (settings, history):
            row3.addWidget(w)
        layout = QVBoxLayout(central)
        layout.addWidget(self.state)
        layout.addWidget(self.detail)
        layout.addWidget(self.progress)
        layout.addLayout(row)
        layout.addLayout(row2)
        layout.addLayout(row3)
        layout.addWidget(self.message)
        layout.addStretch(1)
        self.setCentralWidget(central)
        self.resize(360, 260)
        self.start.clicked.connect(self.start_stop.emit)
        self.pause.toggled.connect(self.pause_toggled.emit)
        self.overlay.toggled.connect(self.overlay_toggled.emit)
        self.click_through.toggled.connect(self.click_through_toggled.emit)
        settings.clicked.connect(self.settings_requested.emit)
        history.clicked.connect(self.history_requested.emit)
        self.shortcuts: dict[str, QAction] = {}
        self._add_shortcuts()
        self.set_shortcuts(HOTKEYS)

    def _add_shortcuts(self) -> None:
        for key, handler in (("start", self.start.click), ("pause", self.pause.toggle),
                             ("overlay", self.overlay.toggle), ("click_through", self.click_through.toggle)):
            action = QAction(self)
            action.triggered.connect(handler)
            self.addAction(action)
            self.shortcuts[key] = action

    def set_shortcuts(self, bindings: dict[str, str]) -> None:
        """The keys of the buttons while a Sotto window has focus (the hotkeys' bindings; "" = none)."""
        tips = {"start": "Start or stop captions", "pause": "Pause captions",
                "overlay": "Show or hide the caption overlay",
                "click_through": "Let the mouse pass through the overlay"}
        buttons = {"start": self.start, "pause": self.pause, "overlay": self.overlay,
                   "click_through": self.click_through}
        for key, action in self.shortcuts.items():
            keys = bindings.get(key, "")
            action.setShortcut(QKeySequence(keys))
            buttons[key].setToolTip(f"{tips[key]} ({keys})" if keys else tips[key])

    def show_state(self, state: str, detail: str) -> None:
        """Reflect the service state in the buttons."""
        self.state.setText(STATE_WORDS.get(state, state))
        if detail:
            self.detail.setText(detail)
        self.start.setText("Start" if state == ServiceState.IDLE else "Stop")
        self.start.setEnabled(state != ServiceState.STOPPING)
        self.pause.setEnabled(state in (ServiceState.RUNNING, ServiceState.PAUSED))
        self.pause.blockSignals(True)
        self.pause.setChecked(state == ServiceState.PAUSED)
        self.pause.setText("Resume" if state == ServiceState.PAUSED else "Pause")
        self.pause.blockSignals(False)
        if state in (ServiceState.IDLE, ServiceState.RUNNING):
            self.progress.setVisible(False)

    def show_status(self, message: str, fraction: float | None) -> None:
        """Progress of long work (model preparation)."""
        self.detail.setText(message)
        if fraction is not None and fraction >= 1.0:
            self.progress.setVisible(False)
            return
        self.progress.setVisible(True)
        show_fraction(self.progress, fraction)

    def show_detail(self, text: str) -> None:
        """The line under the state: what is captioned and how far behind it runs."""
        self.detail.setText(text)

    def show_message(self, level: str, text: str) -> None:
        """A message for the user (errors in red, warnings such as falling behind in amber)."""
        self.message.setStyleSheet(MESSAGE_STYLES.get(level, ""))
        self.message.setText(text)

    def set_toggles(self, overlay_visible: bool, click_through: bool) -> None:
        """Reflect the overlay's state in the check boxes."""
        for box, value in ((self.overlay, overlay_visible), (self.click_through, click_through)):
            box.blockSignals(True)
            box.setChecked(value)
            box.blockSignals(False)

    def closeEvent(self, event) -> None:  # noqa: N802
        event.accept()
        self.quit_requested.emit()


class TrayIcon(QSystemTrayIcon):
    """The tray icon with the same actions as the control window."""

    def __init__(self, icon: QIcon, window: ControlWindow) -> None:
        super().__init__(icon)
        self.setToolTip("Sotto — live captions")
        menu = QMenu()
        self.start_action = menu.addAction("Start", window.start.click)
        self.pause_action = menu.addAction("Pause", window.pause.toggle)
        menu.addSeparator()
        menu.addAction("Show/hide captions", window.overlay.toggle)
        menu.addAction("Click-through on/off", window.click_through.toggle)
        menu.addAction("Settings…", window.settings_requested.emit)
        menu.addAction("History…", window.history_requested.emit)
        menu.addAction("Control window", lambda: (window.showNormal(), window.raise_(), window.activateWindow()))
        menu.addSeparator()
        menu.addAction("Quit Sotto", window.quit_requested.emit)
        self._menu = menu
        self.setContextMenu(menu)
        self.activated.connect(lambda reason: window.showNormal()
                               if reason == QSystemTrayIcon.ActivationReason.Trigger else None)

    def show_warning(self, text: str) -> None:
        """A desktop notification from the tray icon (when it is shown)."""
        if self.isVisible():
            self.showMessage("Sotto", text, QSystemTrayIcon.MessageIcon.Warning, 8000)

    def show_state(self, state: str) -> None:
        """Relabel the menu for the service state."""
        self.start_action.setText("Start" if state == ServiceState.IDLE else "Stop")
        self.pause_action.setEnabled(state in (ServiceState.RUNNING, ServiceState.PAUSED))
        self.pause_action.setText("Resume" if state == ServiceState.PAUSED else "Pause")
