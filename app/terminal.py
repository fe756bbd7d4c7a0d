"""The terminal front door: live captions in a terminal (finished lines scroll, the partial
line redraws in place), progress bars for long work, and the ``sotto caption`` run."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from core.stream import CaptionView, Progress, speaker_label

if TYPE_CHECKING:  # the session layer loads with the first caption run, not with every command
    from core.session.pipeline import MessageLevel


def status_printer(quiet: bool = False):
    """A callback drawing 'message [####....] 42%' on stderr for long work."""
    state = {"last": "", "t": 0.0}
    tty = sys.stderr.isatty()

    def show(message: str, fraction: float | None) -> None:
        if quiet:
            return
        now = time.monotonic()
        if fraction is not None and tty:
            if now - state["t"] < 0.1 and fraction < 1.0:
                return
            state["t"] = now
            bar = "#" * int(30 * fraction) + "." * (30 - int(30 * fraction))
            sys.stderr.write(f"\r{message} [{bar}] {100 * fraction:3.0f}%")
            if fraction >= 1.0:
                sys.stderr.write("\n")
            sys.stderr.flush()
        elif message != state["last"]:
            sys.stderr.write(message + ("" if fraction is None else "…") + "\n")
        state["last"] = message

    return show


DIM = "\033[2m"
ITALIC = "\033[3m"
CYAN = "\033[36m"
BOLD = "\033[1m"
RESET = "\033[0m"
CLEAR_LINE = "\033[2K"


def _said(line) -> str:
    """A finished line, after its voice's label or its speaker's name when it has one (as it is when printed)."""
    return f"{line.label}: {line.sentence.text}" if line.label else line.sentence.text


def _fit(text: str, width: int) -> str:
    """The end of ``text`` that fits one terminal line (newest words stay visible)."""
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1):]


class TerminalDisplay:
    """A :class:`~core.session.pipeline.PipelineListener` for terminals (ANSI) and plain pipes."""

    def __init__(self, stream: TextIO | None = None, color: bool | None = None, show_translation: bool = True,
                 errors: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.errors = errors or sys.stderr  # errors go here as one `sotto:` line each, like the command's own
        self.reported: list[str] = []  # the errors written there
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
        parts.append(f"window {progress.window_seconds:4.1f}s")
        with self._lock:
            self._progress = " · ".join(p for p in parts if p)
            if self.tty:
                self._render()

    def on_message(self, level: MessageLevel, text: str) -> None:
        """Show a warning above the live block; an error as a `sotto:` line on the error stream."""
        from core.session.pipeline import MessageLevel  # loaded already: a pipeline calls this

        with self._lock:
            if level == MessageLevel.ERROR and "translation" in text.lower():
                self._flush_all = True
            self._clear_live()
            if level == MessageLevel.ERROR:
                self.stream.flush()
                self.errors.write(f"sotto: {text}\n")
                self.errors.flush()
                self.reported.append(text)
            else:
                prefix = "⚠ " if level != MessageLevel.INFO else ""
                self.stream.write(f"{prefix}{text}\n")
            self._render()

    def close(self) -> None:
        """Leave the final state on screen."""
        with self._lock:
            self._flush_all = True
            self._progress = ""
            if self._view is not None:
                self._view.partials = []
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
                out.write(f"{BOLD if self.tty else ''}{_said(line)}{RESET if self.tty else ''}\n")
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
                live.append(_fit(_said(line), width))
            for partial in view.partials:
                label = f"{speaker_label(partial.speaker)}: " if partial.speaker else ""
                for text in partial.held:  # finished, waiting for verification (provisional): replaced in place
                    live.append(DIM + _fit(label + text, width) + RESET)
                committed, tentative = partial.committed, partial.shown_tentative
                if committed or tentative:
                    text = _fit((label + committed + " " + tentative).strip(), width)
                    cut = max(0, len(text) - len(tentative))
                    live.append(text[:cut] + DIM + text[cut:] + RESET)
                if self.show_translation and partial.shown_translation:
                    live.append(f"{CYAN}{DIM}{ITALIC}{_fit(partial.shown_translation, width)}{RESET}")
        if self._progress:
            live.append(f"{DIM}{_fit(self._progress, width)}{RESET}")
        for text in live:
            out.write(CLEAR_LINE + text + "\n")
        self._live_height = len(live)
        out.flush()


EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def caption(args: argparse.Namespace) -> int:
    """``sotto caption``: caption a file or a microphone in the terminal; returns the exit status."""
    from core.audio.sources import is_live, open_streams
    from core.models.store import ModelStore
    from core.session import CaptionPipeline, create_asr_engine, create_translator
    from core.settings import load_settings

    settings = load_settings()
    overrides = {
        "translation.target": args.target,
        "asr.model": args.model,
        "translation.model": args.translator,
        "captions.mask_k": args.mask_k,
        "captions.mask_mode": args.mask_mode,
        "translation.beta": args.beta,
        "translation.engine": args.translate_engine,
        "audio.channel": args.channel,
        "asr.engine": args.asr_engine,
    }
    for key, value in overrides.items():
        if value is not None:
            settings = settings.with_value(key, value)
    if args.no_vad:
        settings = settings.with_value("asr.vad", False)
    if getattr(args, "speakers", None) is not None:
        settings = settings.with_value("speakers.labels", True).with_value("speakers.expected", args.speakers)
    source_spec = args.input
    if source_spec == "mic" and settings.audio.device:
        source_spec = f"mic:{settings.audio.device}"
    sources = open_streams(source_spec, realtime=args.realtime, channel=settings.audio.channel,
                           device=settings.audio.device)
    name = " + ".join(s.name for s in sources.values())
    store = ModelStore()
    status = status_printer(args.quiet)
    asr = create_asr_engine(settings, store, status)
    translator = create_translator(settings, store, status)
    out_dir = Path(args.out) if args.out else None
    display = TerminalDisplay(show_translation=translator is not None) if not args.quiet else None
    pipeline = CaptionPipeline(settings, asr, translator, display, out_dir,
                               realtime=args.realtime or is_live(source_spec))
    if not args.quiet:
        target = settings.translation.target
        what = name + (f" → {target}" if translator else "")
        sys.stderr.write(f"Captioning {what} (Ctrl+C stops; captions so far are kept)\n")
    stopped = _stop_on_signals(pipeline)
    timer = None
    if args.stop_after is not None:  # a planned end: everything is written and the exit status is 0
        timer = threading.Timer(args.stop_after, pipeline.stop)
        timer.daemon = True
        timer.start()
    try:
        summary = pipeline.run_streams(sources)
    except KeyboardInterrupt:
        if display:
            display.close()
        sys.stderr.write("\nStopped." + (f" Captions so far are in {out_dir}.\n" if out_dir else "\n"))
        return EXIT_INTERRUPTED
    finally:
        if timer is not None:
            timer.cancel()
        if translator is not None:
            translator.close()
    if display:
        display.close()
    for error in summary.errors:  # said live by the display; said here when quiet
        if display is None or error not in display.reported:
            sys.stderr.write(f"sotto: {error}\n")
    if not args.quiet:
        _print_summary(summary, out_dir, pipeline.journal is None or pipeline.journal.problem is None)
    if summary.errors:
        return EXIT_ERROR
    return EXIT_INTERRUPTED if stopped.is_set() else 0


def _stop_on_signals(pipeline) -> threading.Event:
    """Ctrl+C or SIGTERM: finish gracefully (captions and files kept); a second Ctrl+C aborts."""
    stopped = threading.Event()

    def handler(signum, frame):
        if stopped.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stopped.set()
        sys.stderr.write("\nStopping… (finishing the last line; Ctrl+C again to abort)\n")
        pipeline.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
    return stopped


def _print_summary(summary, out_dir: Path | None, saved_all: bool = True) -> None:
    parts = [f"{summary.audio_seconds:.1f} s of audio in {summary.wall_seconds:.1f} s"]
    if summary.cpu_seconds_per_audio_second is not None:
        parts.append(f"{summary.cpu_seconds_per_audio_second:.2f} CPU-s per audio-s")
    ne = summary.normalized_erasure
    parts.append(f"NE source {ne['ne_source_display']:.2f}")
    if "ne_translation_display" in ne:
        parts.append(f"NE translation {ne['ne_translation_display']:.2f}")
    sys.stderr.write("Done: " + ", ".join(parts) + ".\n")
    if summary.no_speech:
        sys.stderr.write(f"No speech was detected in {summary.source}.\n")
    if out_dir:
        sys.stderr.write(f"Captions written to {out_dir}.\n" if saved_all else
                         f"The captions saved before that are in {out_dir}.\n")
