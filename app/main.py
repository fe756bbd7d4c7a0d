"""Starting the desktop app: checking for a display, the event loop, the Linux launcher."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from core import logger
from core.errors import SottoError
from core.paths import assets_dir, project_root

_PROBE = "from PySide6.QtGui import QGuiApplication; QGuiApplication([]); print('ok')"


def display_problem() -> str | None:
    """Why no window can be shown here, in plain words, or None when a display is usable.

    On Linux the display is probed in a child process, because Qt aborts the
    process when its platform plugin cannot start.
    """
    if os.environ.get("QT_QPA_PLATFORM"):
        return None  # chosen explicitly (offscreen, xcb, wayland, …)
    if not sys.platform.startswith("linux"):
        return None
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        return "No display was found (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"The display could not be checked ({exc})"
    if probe.returncode != 0 or "ok" not in probe.stdout:
        lines = [line for line in probe.stderr.splitlines() if line.strip()]
        logger.error("Qt display probe failed: %s", probe.stderr)
        return f"The display could not be opened ({lines[-1] if lines else 'Qt could not start'})"
    return None


def run_app(argv: list[str] | None = None) -> int:
    """Open the control window, tray icon and caption overlay; returns when the user quits."""
    from PySide6.QtWidgets import QApplication

    from .controllers.app import AppController

    app = QApplication.instance() or QApplication(list(argv or sys.argv[:1]))
    app.setApplicationName("Sotto")
    app.setOrganizationName("Sotto")
    app.setDesktopFileName("sotto")
    app.setQuitOnLastWindowClosed(False)  # the tray keeps the app; Quit ends it
    controller = AppController()
    app.aboutToQuit.connect(controller.shutdown)
    _quit_on_signals(app)
    code = app.exec()
    controller.shutdown()
    return int(code)


def _quit_on_signals(app) -> None:
    """Ctrl+C or SIGTERM in the launching terminal quits cleanly (captions are already journaled).

    Python runs signal handlers only between bytecodes, so a light timer lets the
    interpreter in while Qt's event loop waits.
    """
    import signal

    from PySide6.QtCore import QTimer

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: app.quit())
    timer = QTimer(app)
    timer.setInterval(250)
    timer.timeout.connect(lambda: None)
    timer.start()


def desktop_entry() -> str:
    """The Linux ``.desktop`` entry for this checkout (launches the README run command)."""
    template = (assets_dir() / "sotto.desktop").read_text(encoding="utf-8")
    return template.replace("@ROOT@", str(project_root()))


def install_desktop_entry() -> Path:
    """Write the ``.desktop`` entry into the user's applications folder; returns its path."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    path = base / "applications" / "sotto.desktop"
    text = desktop_entry()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SottoError(f"Could not write the launcher {path} ({exc.strerror or exc}).") from exc
    return path
