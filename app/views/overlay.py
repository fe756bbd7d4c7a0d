"""The floating caption overlay (a view, layout only): frameless, translucent, always on top,
draggable and resizable. :mod:`app.controllers.overlay` places it, shows and hides it and
tells it what to say while there are no captions.

It shows two tracks, the spoken language and the translation, each the last
``overlay.lines`` visual lines of its text. Committed text is solid; the
unconfirmed tail of the unfinished line (and the partial translation) is drawn
in the tentative colour and italic. Lines are wrapped greedily (see
:mod:`app.views.layout`), so an update never reflows committed lines.

A finished line that waits for its verification (and, while lines are verified, the committed
start of the line being spoken, also a draft) is drawn dimmed in the text colour: provisional,
replaced once, in place, by its verified words, which are solid.

In reading mode (``overlay.reading_mode``) only words that will not change are shown: finished
lines (verified, where lines are verified) and the frozen translations; the committed part of the
line being spoken only where nothing verifies it. The translation
may have a size of its own (``overlay.translation_font_size``), and the text an outline or a
shadow (``overlay.outline``) so it stays readable over bright video and in screen recordings.

Everything painted is recorded (:attr:`CaptionOverlay.painted`) and fed to
normalized-erasure meters, so the flicker users actually see can be measured.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QFont, QFontMetricsF, QMouseEvent, QPainter, QPainterPath, QPen, QWheelEvent
from PySide6.QtWidgets import QMenu, QSizeGrip, QWidget

from core.captions.metrics import ErasureMeter
from core.settings import OverlaySettings
from core.stream import CaptionView, speaker_label

from .layout import COMMITTED, HELD, TENTATIVE, VisualLine, line_text, wrap_paragraph

PADDING = 14
TRACK_GAP = 6
HELD_ALPHA = 0.6  # a held line's opacity against committed text



def _label(speaker: str) -> str:
    """The speaker's name before a caption when there are several streams ("Them: ")."""
    return f"{speaker_label(speaker)}: " if speaker else ""


# overlay.speaker_style "colour": a mark in one of these before each line, a colour per voice (in the order
# voices were first heard); chosen to stay apart from each other and from the default text colours
VOICE_COLOURS = ("#4fc3f7", "#ffb74d", "#aed581", "#f06292", "#ba68c8", "#4db6ac", "#e57373", "#fff176")
VOICE_MARK = "\u25cf "  # a dot before the line
VOICE_STYLE = "voice"  # a run's style "voice<N>": the mark of voice number N


def _line_parts(line, text: str, style: str, speaker_style: str) -> list[tuple[str, str]]:
    """A committed line's runs, after its label as ``overlay.speaker_style`` says: its voice's label
    ("Them 2: "), a mark in its voice's colour before its stream's label, or its stream's label alone."""
    if speaker_style == "label" and line.voice:
        return [(f"{line.voice}: " + text, style)]
    said = [(_label(line.sentence.speaker) + text, style)]
    if speaker_style == "colour" and line.voice_id:
        return [(VOICE_MARK, f"{VOICE_STYLE}{line.voice_id}"), *said]
    return said

class CaptionOverlay(QWidget):
    """The caption window users keep on top of their meeting or video."""

    geometry_changed = Signal()  # moved or resized by the user (the controller saves it)
    hide_requested = Signal()
    click_through_requested = Signal(bool)
    settings_requested = Signal()
    reading_mode_requested = Signal(bool)
    copy_requested = Signal()  # "Copy the last lines"
    text_size_step = Signal(int)  # Ctrl+wheel: +1 larger, -1 smaller

    def __init__(self, settings: OverlaySettings, source_lang: str = "en", target_lang: str | None = None) -> None:
        super().__init__(None)
        self.setWindowTitle("Sotto captions")
        self.setObjectName("captionOverlay")
        self._base_flags = (Qt.WindowType.FramelessWindowHint | Qt.WindowType.Tool
                            | Qt.WindowType.NoDropShadowWindowHint)
        self.setWindowFlags(self._base_flags | Qt.WindowType.WindowStaysOnTopHint)
        self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground, True)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setMinimumSize(200, 60)
        self._grip = QSizeGrip(self)
        self._grip.resize(16, 16)
        self._drag_offset: QPoint | None = None
        self._view: CaptionView | None = None
        self._placeholder = "Sotto is ready. Press Start to caption."
        self._source_lang = source_lang
        self._target_lang = target_lang
        self.painted: list[tuple[str, str]] = []  # (source track, translation track) as drawn, one per change
        self._painted_lines: list[tuple[tuple[VisualLine, ...], tuple[VisualLine, ...]]] = []  # the same, laid out
        self.source_meter = ErasureMeter(source_lang)
        self.translation_meter = ErasureMeter(target_lang)
        self._last_painted: tuple[str, str] | None = None
        self.look = settings
        self.apply_style(settings)
        self.set_click_through(settings.click_through)

    # -- configuration -----------------------------------------------------------------------
    def apply_style(self, settings: OverlaySettings) -> None:
        """Font, colours, opacity, number of lines and which tracks to show."""
        self.look = settings
        font = QFont(settings.font_family) if settings.font_family else QFont()
        if not settings.font_family:
            font.setStyleHint(QFont.StyleHint.SansSerif)
        font.setPointSize(settings.font_size)
        font.setWeight(QFont.Weight.DemiBold)
        self._font = font
        self._tentative_font = QFont(font)
        self._tentative_font.setItalic(True)
        self._metrics = QFontMetricsF(font)
        self._tentative_metrics = QFontMetricsF(self._tentative_font)
        self._tr_font = QFont(font)
        self._tr_font.setPointSize(settings.translation_font_size or settings.font_size)
        self._tr_tentative_font = QFont(self._tr_font)
        self._tr_tentative_font.setItalic(True)
        self._tr_metrics = QFontMetricsF(self._tr_font)
        self._tr_tentative_metrics = QFontMetricsF(self._tr_tentative_font)
        self.resize(self.width(), max(self.height(), self.content_height()))
        self.update()

    def set_languages(self, source_lang: str, target_lang: str | None) -> None:
        """The languages being shown (for the erasure meters' tokenisation)."""
        if (source_lang, target_lang) != (self._source_lang, self._target_lang):
            self._source_lang, self._target_lang = source_lang, target_lang
            self.reset_meters()

    def reset_meters(self) -> None:
        """Start measuring afresh (a new session)."""
        self.painted.clear()
        self._painted_lines.clear()
        self._last_painted = None
        self.source_meter = ErasureMeter(self._source_lang)
        self.translation_meter = ErasureMeter(self._target_lang)

    def content_height(self) -> int:
        """The height that fits the configured number of lines for the shown tracks."""
        spacings = {"source": [self._metrics.lineSpacing()], "translation": [self._tr_metrics.lineSpacing()],
                    "both": [self._metrics.lineSpacing(), self._tr_metrics.lineSpacing()]}[self.look.show]
        return int(2 * PADDING + sum(self.look.lines * s for s in spacings) + (len(spacings) - 1) * TRACK_GAP) + 1

    def set_click_through(self, enabled: bool) -> None:
        """Let the mouse pass through to the window below (and back).

        On a shown window the flag goes to the native window directly (``QWindow.setFlags``):
        QWidget.setWindowFlag would hide and show it again, and a window manager may then drop its
        "stay above" state (seen under openbox, one toggle in three or four)."""
        flags = self.windowFlags()
        flags = (flags | Qt.WindowType.WindowTransparentForInput if enabled
                 else flags & ~Qt.WindowType.WindowTransparentForInput)
        handle = self.windowHandle()
        if self.isVisible() and handle is not None:
            self.overrideWindowFlags(flags)
            handle.setFlags(flags)
        else:
            self.setWindowFlags(flags)
        self._grip.setVisible(not enabled)

    @property
    def click_through(self) -> bool:
        """True when mouse input passes through."""
        return bool(self.windowFlags() & Qt.WindowType.WindowTransparentForInput)

    def set_stay_on_top(self, enabled: bool) -> None:
        """Keep the overlay above all other windows (default) or not."""
        visible = self.isVisible()
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, enabled)
        if visible:
            self.show()

    @property
    def stays_on_top(self) -> bool:
        """True when the overlay is kept above other windows."""
        return bool(self.windowFlags() & Qt.WindowType.WindowStaysOnTopHint)

    def set_placeholder(self, text: str) -> None:
        """What to show while there are no captions (state, or what went wrong)."""
        self._placeholder = text
        self.update()

    @property
    def placeholder(self) -> str:
        """The text shown while there are no captions."""
        return self._placeholder

    # -- captions ----------------------------------------------------------------------------
    def show_view(self, view: CaptionView) -> None:
        """Show a new caption frame (UI thread)."""
        self._view = view
        self.update()

    def clear(self) -> None:
        """Forget the shown captions (a new session starts)."""
        self._view = None
        self.reset_meters()
        self.update()

    def _source_parts(self) -> list[list[tuple[str, str]]]:
        view = self._view
        if view is None:
            return []
        voices = self.look.speaker_style
        paragraphs = [_line_parts(line, line.sentence.text.strip(), COMMITTED, voices) for line in self._lines(view)]
        reading = self.look.reading_mode
        for p in self._partials(view):
            if not reading:  # a held line may still change when it is verified
                paragraphs += [[(_label(p.speaker) + text.strip(), HELD)] for text in p.held if text.strip()]
            # where lines are verified, the partial line's committed words are drafts too: provisional
            # like the held lines, and not in reading mode, which shows only words that will not change
            committed = "" if reading and p.drafts else p.committed.strip()
            tentative = "" if reading else p.shown_tentative.strip()
            partial = [(committed, HELD if p.drafts else COMMITTED), (tentative, TENTATIVE)]
            if any(text for text, _ in partial):
                paragraphs.append([(_label(p.speaker).rstrip(), COMMITTED), *partial] if p.speaker else partial)
        return paragraphs

    def _translation_parts(self) -> list[list[tuple[str, str]]]:
        view = self._view
        if view is None:
            return []
        voices = self.look.speaker_style
        if self.look.reading_mode:  # frozen translations only
            return [_line_parts(line, line.translation.strip(), COMMITTED, voices)
                    for line in self._lines(view) if line.translation]
        paragraphs = [_line_parts(line, (line.translation or line.provisional or "…").strip(),
                                  COMMITTED if line.translation else TENTATIVE, voices) for line in self._lines(view)]
        for p in self._partials(view):
            if p.shown_translation.strip():
                paragraphs.append([(_label(p.speaker) + p.shown_translation.strip(), TENTATIVE)])
        return paragraphs

    def _shown(self, speaker: str) -> bool:
        """Whether captions of ``speaker`` are shown (a single stream's always are)."""
        return not speaker or self.look.speakers in ("both", speaker)

    def _lines(self, view: CaptionView) -> list:
        return [line for line in view.lines if self._shown(line.sentence.speaker)][-8:]

    def _partials(self, view: CaptionView) -> list:
        return [p for p in view.partials if self._shown(p.speaker)]

    def _wrap(self, paragraphs: list[list[tuple[str, str]]], width: float, translation: bool = False
              ) -> list[VisualLine]:
        measure = self._measure_translation if translation else self._measure
        lines: list[VisualLine] = []
        for parts in paragraphs:
            lines += wrap_paragraph(parts, width, measure)
        return lines

    def _measure(self, text: str, style: str) -> float:
        return (self._tentative_metrics if style == TENTATIVE else self._metrics).horizontalAdvance(text)

    def _measure_translation(self, text: str, style: str) -> float:
        return (self._tr_tentative_metrics if style == TENTATIVE else self._tr_metrics).horizontalAdvance(text)

    def visible_lines(self) -> tuple[list[VisualLine], list[VisualLine]]:
        """The visual lines shown now: (source track, translation track), last ``lines`` of each."""
        width = max(10.0, self.width() - 2 * PADDING)
        n = self.look.lines
        show = self.look.show
        src = self._wrap(self._source_parts(), width)[-n:] if show in ("both", "source") else []
        has_translation = self._target_lang is not None
        tr = (self._wrap(self._translation_parts(), width, translation=True)[-n:]
              if show in ("both", "translation") and has_translation else [])
        return src, tr

    def full_text(self) -> tuple[str, str]:
        """All caption text of this session as displayed (source, translation), for the NE meters."""
        def flat(paragraphs):
            return " ".join(" ".join(t for t, _ in p if t) for p in paragraphs).strip()

        return flat(self._source_parts()), flat(self._translation_parts()).replace("…", "").strip()

    # -- painting ----------------------------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802 (Qt naming)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        bg = QColor(self.look.background_color)
        bg.setAlphaF(max(0.0, min(1.0, self.look.opacity)))
        path = QPainterPath()
        path.addRoundedRect(self.rect().adjusted(0, 0, -1, -1), 12, 12)
        painter.fillPath(path, bg)
        src, tr = self.visible_lines()
        y = float(PADDING)
        if not src and not tr:
            painter.setFont(self._tentative_font)
            painter.setPen(QColor(self.look.tentative_color))
            painter.drawText(QRect(PADDING, PADDING, self.width() - 2 * PADDING, self.height() - 2 * PADDING),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap,
                             self._placeholder)
        tracks = ((src, self.look.text_color, (self._font, self._metrics),
                   (self._tentative_font, self._tentative_metrics)),
                  (tr, self.look.translation_color, (self._tr_font, self._tr_metrics),
                   (self._tr_tentative_font, self._tr_tentative_metrics)))
        for lines, colour, solid, tentative_style in tracks:
            ascent, spacing = solid[1].ascent(), solid[1].lineSpacing()
            for line in lines:
                x = float(PADDING)
                for run in line:
                    font, metrics = tentative_style if run.style == TENTATIVE else solid
                    self._draw_text(painter, x, y + ascent, run.text, font, self.pen_colour(run.style, colour))
                    x += metrics.horizontalAdvance(run.text)
                y += spacing
            if lines:
                y += TRACK_GAP
        painter.end()
        self._record(src, tr)

    def pen_colour(self, style: str, colour: str) -> QColor:
        """The colour of a run of ``style`` on a track whose text is ``colour``: the tentative colour for
        unconfirmed words; a voice's colour for its mark; for a held line (a draft waiting for its
        verification) the text colour, dimmed, upright and in the same font, so that it reads as
        provisional and its verified words replace it without moving anything; the text colour for
        committed words."""
        if style == TENTATIVE:
            return QColor(self.look.tentative_color)
        if style.startswith(VOICE_STYLE):  # the mark of a voice (overlay.speaker_style "colour")
            return QColor(VOICE_COLOURS[(int(style[len(VOICE_STYLE):]) - 1) % len(VOICE_COLOURS)])
        pen = QColor(colour)
        if style == HELD:
            pen.setAlphaF(pen.alphaF() * HELD_ALPHA)
        return pen

    def _draw_text(self, painter: QPainter, x: float, baseline: float, text: str, font: QFont, colour: QColor) -> None:
        """``text`` at (x, baseline), plain, with a dark outline, or with a drop shadow."""
        style = self.look.outline
        if style == "outline":
            path = QPainterPath()
            path.addText(x, baseline, font, text)
            painter.strokePath(path, QPen(QColor(0, 0, 0, 230), max(2.0, font.pointSizeF() / 7),
                                          Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
                                          Qt.PenJoinStyle.RoundJoin))
            painter.fillPath(path, colour)
            return
        painter.setFont(font)
        if style == "shadow":
            offset = max(1.5, font.pointSizeF() / 12)
            painter.setPen(QColor(0, 0, 0, 200))
            painter.drawText(int(x + offset), int(baseline + offset), text)
        painter.setPen(colour)
        painter.drawText(int(x), int(baseline), text)

    def _record(self, src: list[VisualLine], tr: list[VisualLine]) -> None:
        shown = ("\n".join(line_text(x) for x in src), "\n".join(line_text(x) for x in tr))
        if shown == self._last_painted:
            return
        self._last_painted = shown
        self.painted.append(shown)
        self._painted_lines.append((tuple(src), tuple(tr)))
        full_src, full_tr = self.full_text()
        self.source_meter.add(full_src)
        if self._target_lang:
            self.translation_meter.add(full_tr)

    @property
    def painted_lines(self) -> tuple[tuple[tuple[VisualLine, ...], tuple[VisualLine, ...]], ...]:
        """What :attr:`painted` holds, as laid out and drawn: per change, the visual lines (styled runs)
        of the source track and of the translation track (read-only)."""
        return tuple(self._painted_lines)

    def displayed_ne(self) -> dict[str, float]:
        """Normalized erasure of what was painted, per track."""
        out = {"ne_source_painted": round(self.source_meter.value, 4)}
        if self._target_lang:
            out["ne_translation_painted"] = round(self.translation_meter.value, 4)
        return out

    # -- moving, resizing, menu ------------------------------------------------------------------
    def resizeEvent(self, event) -> None:  # noqa: N802
        self._grip.move(self.width() - self._grip.width() - 2, self.height() - self._grip.height() - 2)
        super().resizeEvent(event)
        if event.oldSize().isValid():
            self.geometry_changed.emit()

    def moveEvent(self, event) -> None:  # noqa: N802
        super().moveEvent(event)
        self.geometry_changed.emit()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            handle = self.windowHandle()
            if handle is not None and handle.startSystemMove():  # Wayland and modern X11/Windows/macOS
                event.accept()
                return
            self._drag_offset = event.globalPosition().toPoint() - self.frameGeometry().topLeft()
            event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if self._drag_offset is not None and event.buttons() & Qt.MouseButton.LeftButton:
            self.move(event.globalPosition().toPoint() - self._drag_offset)
            event.accept()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        self._drag_offset = None

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        """Ctrl+wheel: larger or smaller text (the controller changes the setting)."""
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier and event.angleDelta().y():
            self.text_size_step.emit(1 if event.angleDelta().y() > 0 else -1)
            event.accept()
            return
        super().wheelEvent(event)

    def contextMenuEvent(self, event) -> None:  # noqa: N802
        menu = QMenu(self)
        through = QAction("Click-through (mouse passes to the window below)", menu)
        through.setCheckable(True)
        through.triggered.connect(lambda on: QTimer.singleShot(0, lambda: self.click_through_requested.emit(on)))
        menu.addAction(through)
        reading = QAction("Reading mode (only finished words)", menu)
        reading.setCheckable(True)
        reading.setChecked(self.look.reading_mode)
        reading.triggered.connect(self.reading_mode_requested.emit)
        menu.addAction(reading)
        menu.addAction("Copy the last lines", self.copy_requested.emit)
        menu.addAction("Settings…", self.settings_requested.emit)
        menu.addAction("Hide captions", self.hide_requested.emit)
        menu.exec(event.globalPos())
