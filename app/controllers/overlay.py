"""Drives the caption overlay: puts it back where it was (on a screen that is still there),
remembers where the user moves or resizes it, shows and hides it, switches click-through,
follows style and language changes, and says what is going on while there are no captions
(the placeholder text). From the overlay itself: reading mode on and off, Ctrl+wheel for the text
size, and "Copy the last lines" to the clipboard.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QRect, QTimer, Signal
from PySide6.QtGui import QGuiApplication

from core import logger
from core.captions.subtitles import last_lines_text
from core.errors import SottoError
from core.session.service import CaptionService, ServiceState
from core.settings import Settings, overlay_places, value_range, with_place
from core.stream import CaptionView

from ..views.overlay import CaptionOverlay
from .settings import SettingsController

_PLACEHOLDERS = {ServiceState.LOADING: "Preparing models…", ServiceState.RUNNING: "Listening…",
                 ServiceState.PAUSED: "Paused.", ServiceState.IDLE: "Stopped. Captions are saved in History."}


def target_language(settings: Settings) -> str | None:
    """The language captions are translated into, None for no translation."""
    t = settings.translation.target
    return None if t == "none" else t


class OverlayController(QObject):
    """Owns the caption overlay (:attr:`view`) and what it shows."""

    toggles_changed = Signal(bool, bool)  # visible, click-through (for the control window's check boxes)

    def __init__(self, settings: SettingsController, service: CaptionService) -> None:
        super().__init__()
        self._settings = settings
        self._service = service
        s = settings.settings
        self.view = CaptionOverlay(s.overlay, s.asr.language, target_language(s))
        self._problem_shown = False  # a problem is on screen instead of captions
        self._placed = QRect()
        self._geometry_timer = QTimer(self)
        self._geometry_timer.setSingleShot(True)
        self._geometry_timer.setInterval(600)
        self._geometry_timer.timeout.connect(self.save_geometry)
        self.view.geometry_changed.connect(self._geometry_timer.start)
        self.view.hide_requested.connect(lambda: self.set_visible(False))
        self.view.click_through_requested.connect(self.set_click_through)
        self.view.reading_mode_requested.connect(lambda on: self._settings.apply("overlay.reading_mode", on))
        self.view.text_size_step.connect(self.step_text_size)
        self.view.copy_requested.connect(self.copy_last_lines)
        self._last_view: CaptionView | None = None
        settings.applied.connect(self._on_applied)
        self.restore_geometry()

    # -- showing, hiding, click-through ----------------------------------------------------------------
    def show_at_start(self) -> None:
        """Show the overlay if it was shown when the app last ran."""
        if self._settings.settings.overlay.visible:
            self.view.show()

    def set_visible(self, visible: bool) -> None:
        """Show or hide the overlay (remembered)."""
        self.view.setVisible(visible)
        self.toggles_changed.emit(visible, self.view.click_through)
        self._settings.set_quietly("overlay.visible", visible)

    def set_click_through(self, enabled: bool) -> None:
        """Let the mouse pass through the overlay, or not (remembered)."""
        self.view.set_click_through(enabled)
        self.toggles_changed.emit(self.view.isVisible(), enabled)
        self._settings.set_quietly("overlay.click_through", enabled)

    def close(self) -> None:
        """Close the overlay window."""
        self.view.close()

    # -- what it shows -----------------------------------------------------------------------------------
    def new_session(self) -> None:
        """Captions start: forget the last session's, in the languages now chosen."""
        s = self._settings.settings
        self.view.set_languages(s.asr.language, target_language(s))
        self.view.clear()
        self._problem_shown = False

    def show_captions(self, view: CaptionView) -> None:
        """A new caption frame from the service."""
        self._last_view = view
        self.view.show_view(view)

    def step_text_size(self, step: int) -> None:
        """Ctrl+wheel on the overlay: the speech's text one point larger or smaller, and the translation's
        with it when it has a size of its own (kept within the settings' range)."""
        ov = self._settings.settings.overlay
        low, high = value_range("overlay.font_size")
        size = int(min(high, max(low, ov.font_size + step)))
        if size != ov.font_size:
            self._settings.apply("overlay.font_size", size)
        if ov.translation_font_size:
            self._settings.apply("overlay.translation_font_size",
                                 int(min(high, max(low, ov.translation_font_size + step))))

    def copy_last_lines(self) -> str:
        """Put the finished lines the overlay shows (speech, and translation under each) on the
        clipboard; returns the text copied ("" when there is none yet)."""
        view = self._last_view
        text = last_lines_text(view.lines if view is not None else [], max(1, self._settings.settings.overlay.lines))
        if text:
            QGuiApplication.clipboard().setText(text)
        return text

    def show_state(self, state: str) -> None:
        """The placeholder for the service state (shown while there are no captions)."""
        if state == ServiceState.IDLE and self._problem_shown:
            return  # what went wrong stays on screen until captions start again
        if state in _PLACEHOLDERS:
            self.view.set_placeholder(_PLACEHOLDERS[state])

    def show_problem(self, text: str) -> None:
        """What went wrong, in place of captions (kept when the session then stops)."""
        self._problem_shown = True
        self.view.set_placeholder(text)

    def _on_applied(self, key: str, new: Settings) -> None:
        if key.startswith("overlay."):
            self.view.apply_style(new.overlay)
        if key in ("asr.language", "translation.target") and self._service.state == ServiceState.IDLE:
            self.view.set_languages(new.asr.language, target_language(new))

    # -- geometry --------------------------------------------------------------------------------------------
    def restore_geometry(self) -> None:
        """Place the overlay where it was saved, kept on a screen that is there now: on the screen it was
        last on, or (that one gone, e.g. a laptop taken from its monitor) where it was on a screen that is
        still there, or centred at the bottom of the primary screen."""
        ov = self._settings.settings.overlay
        places = overlay_places(ov.places)
        screens = {s.name(): s for s in QGuiApplication.screens()}
        primary = QGuiApplication.primaryScreen()
        # the screen it was last on; else one it has a place on (the primary first); else the primary
        name = ov.screen if ov.screen in screens else next(
            (n for n in sorted(places, key=lambda n: primary is None or n != primary.name()) if n in screens), None)
        screen = screens.get(name) if name is not None else primary
        place = places.get(name) if name is not None else None
        if place is not None and screen is not None:  # kept relative to its screen's corner
            origin = screen.geometry().topLeft()
            place = (place[0] + origin.x(), place[1] + origin.y(), place[2], place[3])
        if place is None and name is not None and name == ov.screen:  # (a screen without a name too)
            place = (ov.x, ov.y, ov.width, ov.height)
        px, py, pw, ph = place or (-1, -1, ov.width, ov.height)
        area = screen.availableGeometry() if screen is not None else QRect(0, 0, 1280, 800)
        width = min(pw, area.width())
        height = min(max(ph, self.view.content_height()), area.height())
        if place is None or (px == -1 and py == -1):
            x = area.x() + (area.width() - width) // 2
            y = area.y() + area.height() - height - 60
        else:  # keep it on the screen even if the screen got smaller
            x = min(max(px, area.x()), area.right() - width)
            y = min(max(py, area.y()), area.bottom() - height)
        self.view.setGeometry(x, y, width, height)
        self._placed = QRect(x, y, width, height)  # where it was put: not a move of the user's to save
        self._geometry_timer.stop()

    def save_geometry(self) -> None:
        """Remember where the overlay is and how big (if it changed)."""
        g = self.view.geometry()
        if g == self._placed:  # where restore_geometry put it (maybe not on the screen saved), or saved already
            return
        screen = self.view.screen()
        name = screen.name() if screen is not None else ""
        current = self._settings.settings
        values = {"overlay.x": g.x(), "overlay.y": g.y(), "overlay.width": g.width(), "overlay.height": g.height(),
                  "overlay.screen": name}
        if name:  # and its place on this screen (from the screen's corner: the screen may move in the desktop)
            origin = screen.geometry().topLeft()
            values["overlay.places"] = with_place(current.overlay.places, name,
                                                  (g.x() - origin.x(), g.y() - origin.y(), g.width(), g.height()))
        new = current
        try:
            for key, value in values.items():
                new = new.with_value(key, value)
        except SottoError:
            logger.debug("overlay geometry out of range, not saved", exc_info=True)
            return
        if new != current:
            self._settings.save_quietly(new)
        self._placed = g

    def flush_geometry(self) -> None:
        """Save a move or resize still waiting for its timer (at quitting)."""
        if self._geometry_timer.isActive():
            self._geometry_timer.stop()
            self.save_geometry()
