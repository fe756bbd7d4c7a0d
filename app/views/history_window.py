"""The history window (a view, layout only): every journaled session, searchable, exportable.
:mod:`app.controllers.history` fills it and does the searching and exporting."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.session.history import UNVERIFIED_NOTE, HistoryEntry, HistorySession

_NAME = Qt.ItemDataRole.UserRole  # where a session item keeps its folder name
UNVERIFIED_TIP = ("Not verified: captioning stopped (or the verifier failed) before this line was checked, "
                  "so it is kept as first heard.")


def _stamp(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class HistoryWindow(QWidget):
    """Sessions on the left, their captions on the right, a search box and export buttons."""

    search_changed = Signal(str)
    session_selected = Signal(str)  # session folder name ("" = search results across all)
    export_requested = Signal(str, str, str)  # path, format, which
    refresh_requested = Signal()
    rename_requested = Signal(int, str)  # a voice of the selected session, its new name

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Sotto history")
        self.setObjectName("historyWindow")
        self.resize(860, 520)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search all captions…")
        self.search.setClearButtonEnabled(True)
        self.sessions = QListWidget()
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["Time", "Said", "Translation"])
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        self.which = QComboBox()
        for value, label in (("both", "Speech + translation"), ("source", "Speech"), ("translation", "Translation")):
            self.which.addItem(label, value)
        self.status = QLabel()
        buttons = QHBoxLayout()
        buttons.addWidget(QLabel("Export"))
        buttons.addWidget(self.which)
        for fmt in ("srt", "vtt", "txt"):
            b = QPushButton(fmt.upper())
            b.clicked.connect(lambda _=False, f=fmt: self._export(f))
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.rename = QPushButton("Rename a speaker…")
        self.rename.setObjectName("renameSpeaker")
        self.rename.setVisible(False)
        self.rename.clicked.connect(self._rename)
        buttons.addWidget(self.rename)
        self._voices: dict[int, str] = {}
        refresh = QPushButton("Refresh")
        refresh.clicked.connect(self.refresh_requested.emit)
        buttons.addWidget(refresh)
        splitter = QSplitter()
        splitter.addWidget(self.sessions)
        splitter.addWidget(self.table)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(splitter, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        self.search.textChanged.connect(self.search_changed.emit)
        self.sessions.currentItemChanged.connect(
            lambda item, _old: self.session_selected.emit(item.data(_NAME) if item is not None else ""))

    def show_sessions(self, sessions: list[HistorySession]) -> None:
        """List the sessions (newest first)."""
        self.sessions.blockSignals(True)
        self.sessions.clear()
        for s in sessions:
            item = QListWidgetItem(f"{s.title} ({len(s.entries)})")
            item.setData(_NAME, s.name)
            self.sessions.addItem(item)
        self.sessions.blockSignals(False)

    def select_first_session(self) -> None:
        """Select the newest session (its captions are then asked for with ``session_selected``)."""
        self.sessions.setCurrentRow(0)

    def current_session_name(self) -> str | None:
        """The folder name of the selected session, or None when none is selected."""
        item = self.sessions.currentItem()
        return item.data(_NAME) if item is not None else None

    def search_text(self) -> str:
        """What is typed in the search box."""
        return self.search.text()

    def show_status(self, text: str) -> None:
        """A line under the table (what is shown, or how an export went)."""
        self.status.setText(text)

    def show_entries(self, entries: list[HistoryEntry], note: str = "") -> None:
        """Show captions in the table."""
        self.table.setRowCount(len(entries))
        for row, e in enumerate(entries):
            self.table.setItem(row, 0, QTableWidgetItem(_stamp(e.start)))
            said = f"{e.label}: {e.source}" if e.label else e.source
            source, translation = QTableWidgetItem(said), QTableWidgetItem(e.translation or "")
            if e.verified is False:  # kept as first heard: italic, with the note and why on hover
                source.setText(f"{said} {UNVERIFIED_NOTE}")
                for item in (source, translation):
                    font = item.font()
                    font.setItalic(True)
                    item.setFont(font)
                    item.setToolTip(UNVERIFIED_TIP)
            self.table.setItem(row, 1, source)
            self.table.setItem(row, 2, translation)
        self.table.resizeRowsToContents()
        self.show_status(note)

    def show_voices(self, voices: dict[int, str]) -> None:
        """The speakers of the session shown (number → label), whom "Rename a speaker…" offers; none: hidden."""
        self._voices = dict(voices)
        self.rename.setVisible(bool(voices))

    def _rename(self) -> None:
        labels = [self._voices[n] for n in sorted(self._voices)]
        label, ok = QInputDialog.getItem(self, "Rename a speaker", "Speaker", labels, 0, False)
        if not ok:
            return
        name, ok = QInputDialog.getText(self, "Rename a speaker", f"New name for {label}")
        if ok and name.strip():
            self.rename_requested.emit(sorted(self._voices)[labels.index(label)], name.strip())

    def _export(self, fmt: str) -> None:
        path, _ = QFileDialog.getSaveFileName(self, f"Export captions as {fmt.upper()}", f"captions.{fmt}",
                                              f"{fmt.upper()} (*.{fmt})")
        if path:
            self.export_requested.emit(path, fmt, self.which.currentData())
