"""Live captions in a terminal: finished lines scroll, the partial line redraws in place."""

from __future__ import annotations

import shutil
import sys
import threading
from typing import TextIO

from .captions.policy import CaptionView
from .pipeline import Progress

DIM = "\033[2m"
ITALIC = "\033[3m"
CYAN = "\033[36m"
BOLD = "\033[1m"
RESET = "\033[0m"
CLEAR_LINE = "\033[2K"


def _fit(text: str, width: int) -> str:
    """The end of ``text`` that fits one terminal line (newest words stay visible)."""
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1):]


class TerminalDisplay:
    """A :class:`~core.pipeline.PipelineListener` for terminals (ANSI) and plain pipes."""

    def __init__(self, stream: TextIO | None = None, color: bool | None = None, show_translation: bool = True) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if color is None else color
        self.show_translation = show_translation
        self._printed_lines = 0  # finished lines already printed
        self._printed_translations: set[int] = set()
        self._live_height = 0
        self._progress = ""
        self._view: CaptionView | None = None
        self._lock = threading.Lock()
        self._flush_all = False

    # -- listener -------------------------------------------------------------------------
    def on_view(self, view: CaptionView) -> None:
        """Print newly finished lines; redraw the live block."""
        with self._lock:
            self._view = view
            self._render()

    def on_progress(self, progress: Progress) -> None:
        """Update the progress line."""
        parts = [f"{progress.audio_time:6.1f}s"]
        if progress.duration:
            parts[0] += f"/{progress.duration:.1f}s ({100 * min(1.0, progress.audio_time / progress.duration):3.0f}%)"
        if progress.lag is not None:
            parts.append(f"lag {progress.lag:4.1f}s")
        else:
            parts.append(f"speed {1 / progress.rtf:4.1f}× real time" if progress.rtf else "")
        parts.append(f"window {progress.buffer_seconds:4.1f}s")
        with self._lock:
            self._progress = " · ".join(p for p in parts if p)
            if self.tty:
                self._render()

    def on_message(self, level: str, text: str) -> None:
        """Show a warning or error above the live block."""
        with self._lock:
            if level == "error" and "translation" in text.lower():
                self._flush_all = True
            self._clear_live()
            prefix = "⚠ " if level != "info" else ""
            self.stream.write(f"{prefix}{text}\n")
            self._render()

    def close(self) -> None:
        """Leave the final state on screen."""
        with self._lock:
            self._flush_all = True
            self._progress = ""
            if self._view is not None:
                self._view.partial_committed = self._view.partial_tentative = self._view.partial_translation = ""
            self._render()
            self._clear_live()
            self.stream.flush()

    # -- drawing --------------------------------------------------------------------------
    def _clear_live(self) -> None:
        if self.tty and self._live_height:
            self.stream.write(f"\033[{self._live_height}F" + (CLEAR_LINE + "\n") * self._live_height)
            self.stream.write(f"\033[{self._live_height}F")
            self._live_height = 0

    def _render(self) -> None:
        view = self._view
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        self._clear_live()
        out = self.stream
        if view is not None:
            lines = view.lines
            # Finished lines are printed once the translation arrived (or right away without translation).
            while self._printed_lines < len(lines):
                line = lines[self._printed_lines]
                if self.show_translation and line.translation is None and not self._flush_all:
                    break
                out.write(f"{BOLD if self.tty else ''}{line.sentence.text}{RESET if self.tty else ''}\n")
                if self.show_translation and line.translation:
                    out.write(f"{CYAN if self.tty else '  → '}{line.translation}{RESET if self.tty else ''}\n")
                self._printed_lines += 1
        if not self.tty:
            out.flush()
            return
        live = []
        if view is not None:
            pending = view.lines[self._printed_lines:]
            for line in pending:
                live.append(_fit(line.sentence.text, width))
            partial = view.partial_committed
            tentative = view.partial_tentative
            if partial or tentative:
                text = _fit((partial + " " + tentative).strip(), width)
                cut = max(0, len(text) - len(tentative))
                live.append(text[:cut] + DIM + text[cut:] + RESET)
            if self.show_translation and view.partial_translation:
                live.append(f"{CYAN}{DIM}{ITALIC}{_fit(view.partial_translation, width)}{RESET}")
        if self._progress:
            live.append(f"{DIM}{_fit(self._progress, width)}{RESET}")
        for text in live:
            out.write(CLEAR_LINE + text + "\n")
        self._live_height = len(live)
        out.flush()
