"""The app icon (assets/sotto.svg), for the control window and the tray."""

from __future__ import annotations

from PySide6.QtGui import QIcon, QPixmap

from core.paths import assets_dir


def app_icon() -> QIcon:
    """Sotto's icon, from the SVG in assets (a plain pixmap if SVG support is missing)."""
    icon = QIcon(str(assets_dir() / "sotto.svg"))
    if icon.isNull():
        icon = QIcon(QPixmap(str(assets_dir() / "sotto.png")))
    return icon
