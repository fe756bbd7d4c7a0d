"""Starting the desktop app, checking for a display, and offscreen screenshots."""

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

    from .controller import AppController

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


def default_recording() -> Path:
    """The shared recording used for screenshots (a reading with several sentences)."""
    shared = project_root().parent / "shared" / "data" / "asr" / "librivox_shakespeare_sonnet001.wav"
    return shared if shared.exists() else assets_dir() / "jfk.flac"


def _rich(view) -> bool:
    """A frame worth showing: finished lines, an unfinished line with unconfirmed words, a partial translation."""
    return bool(view.lines and view.partial_committed and view.partial_tentative and view.partial_translation)


def screenshot(out_dir: Path, recording: Path | None = None, on_status=None) -> list[Path]:
    """Render the overlay (real captions of ``recording``) and the settings panel to PNG, offscreen.

    Runs the real pipeline with the default settings and bundled models and
    shows the first frame that has finished lines, an unfinished line with
    unconfirmed words and its partial translation, as a user would see it.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QColor, QLinearGradient, QPainter, QPixmap
    from PySide6.QtWidgets import QApplication

    from core.audio.sources import FileSource
    from core.engines import create_asr_engine, create_translator
    from core.models.store import ModelStore
    from core.pipeline import CaptionPipeline
    from core.settings import Settings

    from .overlay import CaptionOverlay
    from .settings_panel import SettingsPanel

    app = QApplication.instance() or QApplication([])
    recording = Path(recording or default_recording())
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SottoError(f"Could not create {out_dir} ({exc.strerror or exc}).") from exc
    settings = Settings()  # the defaults, not the user's settings: screenshots are reproducible
    store = ModelStore()
    asr = create_asr_engine(settings, store, on_status)
    translator = create_translator(settings, store, on_status)
    views = []

    class Collect:
        def on_view(self, view):
            views.append(view)
            if _rich(view) and len(view.partial_committed.split()) >= 4:
                pipeline.stop()

        def on_progress(self, progress):
            pass

        def on_message(self, level, text):
            logger.info("screenshot pipeline: %s", text)

    pipeline = CaptionPipeline(settings, asr, translator, Collect(), realtime=False)
    if on_status:
        on_status(f"Captioning {recording.name}", None)
    try:
        pipeline.run(FileSource(recording))
    finally:
        if translator is not None:
            translator.close()
    rich = [v for v in views if _rich(v)]
    view = max(rich, key=lambda v: len(v.partial_source)) if rich else (views[-1] if views else None)
    if view is None:
        raise SottoError(f"No speech was recognised in {recording}; choose another recording.")

    overlay = CaptionOverlay(settings.overlay, settings.asr.language, settings.translation.target)
    overlay.resize(settings.overlay.width, overlay.content_height())
    overlay.show_view(view)
    overlay.show()
    app.processEvents()
    caption = overlay.grab()
    margin = 40
    canvas = QPixmap(caption.width() + 2 * margin, caption.height() + 2 * margin)
    painter = QPainter(canvas)
    gradient = QLinearGradient(0, 0, canvas.width(), canvas.height())  # stands in for the desktop behind
    gradient.setColorAt(0, QColor("#3a6073"))
    gradient.setColorAt(1, QColor("#16222a"))
    painter.fillRect(canvas.rect(), gradient)
    painter.drawPixmap(QPoint(margin, margin), caption)
    painter.end()
    overlay_png = out_dir / "overlay.png"
    if not canvas.save(str(overlay_png)):
        raise SottoError(f"Could not write {overlay_png}.")
    overlay.close()

    panel = SettingsPanel(settings, store.list(), [("", "System default")], cuda_available=False)
    panel.show()
    app.processEvents()
    settings_png = out_dir / "settings.png"
    if not panel.grab().save(str(settings_png)):
        raise SottoError(f"Could not write {settings_png}.")
    panel.close()
    return [overlay_png, settings_png]
