"""Drives the global hotkeys: binds the combinations of the ``hotkeys`` settings (again whenever one
changes), hands each press on as :attr:`HotkeyController.triggered`, and says what could not be bound,
one sentence per action, to the control window and to Settings › Hotkeys.

Where no global hotkeys work (no X server, a display without a portal, …) it says so once; the
shortcuts of Sotto's own windows still work.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QObject, Signal

from core import logger
from core.session.pipeline import MessageLevel
from core.settings import Settings

from ..hotkeys import ACTIONS, GlobalHotkeys, HotkeyBackend
from .settings import SettingsController

UNAVAILABLE = ("Global hotkeys are not available here ({why}); the shortcuts work while a Sotto window "
               "has focus.")


class HotkeyController(QObject):
    """The app's global hotkeys and what the user is told about them."""

    triggered = Signal(str)  # an action of ACTIONS (on the UI thread)
    problems_changed = Signal(dict)  # {action: sentence} for the bindings that are not in force
    notice = Signal(str, str)  # a MessageLevel and what the control window says (once; "" clears it)

    def __init__(self, settings: SettingsController, backend: HotkeyBackend | None = None) -> None:
        super().__init__()
        self._settings = settings
        self.hotkeys = GlobalHotkeys(backend)
        self.hotkeys.activated.connect(self.triggered.emit)
        self.problems: dict[str, str] = {}
        self._said = ""  # what the control window was last told
        self._suspended = False  # a hotkey is being recorded in the settings panel
        settings.applied.connect(self._on_applied)

    @property
    def available(self) -> bool:
        """True when global hotkeys work here."""
        return not self.hotkeys.unavailable

    def start(self) -> None:
        """Bind the combinations in force (at start-up); tells what is unavailable, once."""
        if not self.available:
            text = UNAVAILABLE.format(why=self.hotkeys.unavailable)
            logger.info(text)
            self.notice.emit(MessageLevel.INFO, text)
            return
        self.rebind(self._settings.settings)

    def rebind(self, settings: Settings) -> dict[str, str]:
        """Bind every action to its combination in ``settings``; returns the problems."""
        if not self.available:
            return {}
        self.problems = self.hotkeys.bind(dataclasses.asdict(settings.hotkeys))
        self.problems_changed.emit(dict(self.problems))
        text = " ".join(self.problems[a] for a in ACTIONS if a in self.problems)
        if text or self._said:  # a problem, or the last one is solved
            self.notice.emit(MessageLevel.WARNING, text)
        self._said = text
        return self.problems

    def suspend(self, recording: bool) -> None:
        """Release every binding while Settings › Hotkeys records a combination (so that pressing one in
        use records it instead of doing its action), and bind them again after."""
        if recording == self._suspended or not self.available:
            return
        self._suspended = recording
        if recording:
            self.hotkeys.bind({})
        else:
            self.rebind(self._settings.settings)

    def _on_applied(self, key: str, new: Settings) -> None:
        if key.startswith("hotkeys.") and not self._suspended:
            self.rebind(new)

    def close(self) -> None:
        """Release the bindings (at quitting)."""
        self.hotkeys.close()
