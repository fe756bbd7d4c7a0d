"""``sotto screenshot``: the overlay and the settings panel rendered offscreen from a real run."""

from __future__ import annotations

import os
from pathlib import Path

from core import logger
from core.errors import SottoError
from core.paths import assets_dir, project_root


def default_recording() -> Path:
    """The shared recording used for screenshots (a reading with several sentences)."""
    shared = project_root().parent / "shared" / "data" / "asr" / "librivox_shakespeare_sonnet001.wav"
    return shared if shared.exists() else assets_dir() / "jfk.flac"


def _rich(view) -> bool:
    """A frame worth showing: finished lines, an unfinished line with unconfirmed words, a partial translation."""
    p = view.partial
    return bool(view.lines and p.committed and p.shown_tentative and p.shown_translation)


def caption_view(recording: Path | None = None, settings=None, on_status=None):
    """A frame of real captions of ``recording`` (the shared reading by default): the pipeline run with
    ``settings`` (the defaults) and the bundled models, stopped at the first frame with finished lines,
    an unfinished line with unconfirmed words and its partial translation, as a user would see it."""
    from core.audio.sources import FileSource
    from core.models.store import ModelStore
    from core.session import CaptionPipeline, create_asr_engine, create_translator
    from core.settings import Settings

    recording = Path(recording or default_recording())
    settings = settings or Settings()  # the defaults, not the user's settings: screenshots are reproducible
    store = ModelStore()
    asr = create_asr_engine(settings, store, on_status)
    translator = create_translator(settings, store, on_status)
    views = []

    class Collect:
        def on_view(self, view):
            views.append(view)
            if _rich(view) and len(view.partial.committed.split()) >= 4:
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
    view = max(rich, key=lambda v: len(v.partial.shown_source)) if rich else (views[-1] if views else None)
    if view is None:
        raise SottoError(f"No speech was recognised in {recording}; choose another recording.")
    return view


def screenshot(out_dir: Path, recording: Path | None = None, on_status=None) -> list[Path]:
    """Render the overlay (real captions of ``recording``, :func:`caption_view`) and the settings panel
    to PNG, offscreen."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QColor, QLinearGradient, QPainter, QPixmap
    from PySide6.QtWidgets import QApplication

    from core.models.store import ModelStore
    from core.settings import Settings

    from .views.overlay import CaptionOverlay
    from .views.settings_panel import SettingsPanel

    app = QApplication.instance() or QApplication([])
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SottoError(f"Could not create {out_dir} ({exc.strerror or exc}).") from exc
    settings = Settings()
    store = ModelStore()
    view = caption_view(recording, settings, on_status)

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
