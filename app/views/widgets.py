"""Small pieces the views share: a progress bar showing a fraction, and a level-meter row."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QProgressBar


def show_fraction(bar: QProgressBar, fraction: float | None) -> None:
    """``fraction`` (0–1) on ``bar``; None: busy, with no known end."""
    if fraction is None:
        bar.setRange(0, 0)
    else:
        bar.setRange(0, 1000)
        bar.setValue(int(1000 * fraction))


def level_meter(name: str) -> tuple[QProgressBar, QLabel]:
    """A level meter in dBFS (-60 to 0) and the note under it (why it does not listen)."""
    bar = QProgressBar()
    bar.setObjectName(name)
    bar.setRange(-60, 0)
    bar.setValue(-60)
    bar.setFormat("%v dB")
    note = QLabel("")
    note.setWordWrap(True)
    return bar, note
