"""Drives the history window: lists the journaled sessions, shows the one selected or the
captions a search finds, and exports what is shown.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject

from core.errors import SottoError
from core.session.history import CaptionHistory, HistoryEntry, export_entries, read_session, rename_voice

from ..views.history_window import HistoryWindow


class HistoryController(QObject):
    """Owns the history window (opened on demand) and the captions it shows."""

    def __init__(self, history: CaptionHistory) -> None:
        super().__init__()
        self.history = history
        self.window: HistoryWindow | None = None
        self._shown: list[HistoryEntry] = []  # what the table shows, and what Export writes

    def show(self) -> HistoryWindow:
        """Open (or raise) the history window, with the sessions listed afresh."""
        if self.window is None:
            hw = HistoryWindow()
            hw.search_changed.connect(self.search)
            hw.session_selected.connect(self.select_session)
            hw.export_requested.connect(self.export)
            hw.refresh_requested.connect(self.refresh)
            hw.rename_requested.connect(self.rename)
            self.window = hw
        self.refresh()
        self.window.show()
        self.window.raise_()
        return self.window

    def refresh(self) -> None:
        """List the sessions again; keep the search, else show the newest session."""
        hw = self.window
        if hw is None:
            return
        sessions = self.history.sessions()
        hw.show_sessions(sessions)
        if hw.search_text():
            self.search(hw.search_text())
        elif sessions:
            hw.select_first_session()
        else:
            hw.show_entries([], "No captions yet.")

    def search(self, query: str) -> None:
        """Show the captions of every session that contain ``query`` (empty: the selected session)."""
        hw = self.window
        if hw is None:
            return
        if not query.strip():  # back to the selected session
            name = hw.current_session_name()
            if name is not None:
                self.select_session(name)
            else:
                self._shown = []
                hw.show_entries([], "")
            return
        hits = self.history.search(query)
        self._shown = [e for _, e in hits]
        hw.show_voices({})  # renaming is per session
        hw.show_entries(self._shown, f"{len(hits)} caption(s) contain “{query}”.")

    def select_session(self, name: str) -> None:
        """Show the captions of session folder ``name``."""
        hw = self.window
        if hw is None or not name:
            return
        session = read_session(self.history.root / name)
        self._shown = session.entries
        note = session.title
        if session.damaged_lines:
            note += f" — {session.damaged_lines} damaged line(s) skipped (the app stopped mid-write)."
        hw.show_entries(session.entries, note)
        hw.show_voices(session.voices)

    def rename(self, voice: int, name: str) -> None:
        """Call speaker ``voice`` of the selected session ``name``, in every line of it and its files."""
        hw = self.window
        if hw is None or not hw.current_session_name():
            return
        try:
            rename_voice(self.history.root / hw.current_session_name(), voice, name)
        except SottoError as exc:
            hw.show_status(str(exc))
            return
        self.select_session(hw.current_session_name())

    def export(self, path: str, fmt: str, which: str) -> Path | None:
        """Export the captions shown in the history window; None if that failed (the window says why)."""
        entries = self._shown
        try:
            out = export_entries(entries, Path(path), fmt, which)
        except SottoError as exc:
            if self.window is not None:
                self.window.show_status(str(exc))
            return None
        if self.window is not None:
            self.window.show_status(f"Exported {len(entries)} caption(s) to {out}.")
        return out

    def close(self) -> None:
        """Close the window if it was opened."""
        if self.window is not None:
            self.window.close()
