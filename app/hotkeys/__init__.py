"""Global hotkeys: key combinations that reach Sotto while another program has focus.

:class:`GlobalHotkeys` picks the backend of the platform the app runs on and binds the four actions
(:data:`ACTIONS`) to key combinations written in Qt's portable key-sequence text ("Ctrl+Alt+Shift+P").
Each backend turns a :class:`Chord` into the platform's own key code and modifiers:

- :mod:`.x11`: ``XGrabKey`` on the root window through libX11 (tested under Xvfb and openbox);
- :mod:`.portal`: the xdg-desktop-portal ``GlobalShortcuts`` interface over D-Bus (Wayland);
- :mod:`.windows`: ``RegisterHotKey`` and ``WM_HOTKEY``;
- :mod:`.macos`: Carbon's ``RegisterEventHotKey``.

A press reaches the UI thread as the queued signal :attr:`GlobalHotkeys.activated` (the action's
name). What cannot be bound (a combination another program holds, a key this keyboard lacks) comes
back from :meth:`GlobalHotkeys.bind` as one sentence per action; the other actions stay bound.
Where no backend works, :attr:`GlobalHotkeys.unavailable` says why, and the app keeps the shortcuts
of its own windows.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication

from core import logger

from .base import (
    ACTIONS,
    MODIFIERS,
    NAMED_KEYS,
    PUNCTUATION,
    Chord,
    HotkeyBackend,
    HotkeysUnavailable,
    conflict_sentence,
    parse_chord,
    unsupported_sentence,
)

__all__ = ["ACTIONS", "MODIFIERS", "NAMED_KEYS", "PUNCTUATION", "Chord", "GlobalHotkeys", "HotkeyBackend",
           "HotkeysUnavailable", "choose_backend", "conflict_sentence", "parse_chord", "unsupported_sentence"]


def choose_backend() -> HotkeyBackend:
    """The backend of the platform the app runs on; HotkeysUnavailable says why there is none."""
    platform = QGuiApplication.platformName() if QGuiApplication.instance() is not None else ""
    if sys.platform == "win32":
        from .windows import WindowsHotkeys

        return WindowsHotkeys()
    if sys.platform == "darwin":
        from .macos import MacHotkeys

        return MacHotkeys()
    if platform == "xcb":
        from .x11 import X11Hotkeys

        return X11Hotkeys()
    if platform.startswith("wayland"):
        from .portal import PortalHotkeys

        return PortalHotkeys()
    raise HotkeysUnavailable(f"the {platform or 'current'} display offers none")


class GlobalHotkeys(QObject):
    """The app's global hotkeys on whatever platform it runs on."""

    activated = Signal(str)  # the action whose combination was pressed (queued: always on the UI thread)

    def __init__(self, backend: HotkeyBackend | None = None) -> None:
        super().__init__()
        self.unavailable = ""  # why there are no global hotkeys ("" when there are)
        self.backend: HotkeyBackend | None = backend
        if backend is None:
            try:
                self.backend = choose_backend()
            except HotkeysUnavailable as exc:
                self.unavailable = str(exc)
            except Exception as exc:  # a library that would not load: never cost the app
                logger.exception("global hotkeys failed to start")
                self.unavailable = f"they could not start ({exc})"
        if self.backend is not None:
            self.backend.activated.connect(self.activated.emit, Qt.ConnectionType.QueuedConnection)
            logger.info("global hotkeys through %s", self.backend.name)
        else:
            logger.info("no global hotkeys: %s", self.unavailable)

    def bind(self, bindings: dict[str, str]) -> dict[str, str]:
        """Bind each action to the combination text given ("" = off); returns {action: sentence} for
        those not bound (unreadable, bound twice, held by another program)."""
        problems: dict[str, str] = {}
        chords: dict[str, Chord] = {}
        seen: dict[tuple[frozenset[str], int], str] = {}
        for action, text in bindings.items():
            try:
                chord = parse_chord(text)
            except ValueError as exc:
                problems[action] = str(exc)
                continue
            if chord is None:
                continue
            if (chord.modifiers, chord.key) in seen:
                other = ACTIONS.get(seen[(chord.modifiers, chord.key)], "another action").lower()
                problems[action] = f"{chord.text} is already bound to {other}; choose another in Settings › Hotkeys."
                continue
            seen[(chord.modifiers, chord.key)] = action
            chords[action] = chord
        if self.backend is None:
            return problems
        try:
            problems.update(self.backend.bind(chords))
        except Exception as exc:  # a platform call that failed outright: say so, keep the app
            logger.exception("binding global hotkeys failed")
            problems.update({a: f"{c.text} could not be bound ({exc})." for a, c in chords.items()})
        for action, sentence in problems.items():
            logger.warning("hotkey %s: %s", action, sentence)
        return problems

    def close(self) -> None:
        """Release every binding (at quitting)."""
        if self.backend is not None:
            try:
                self.backend.close()
            except Exception:
                logger.exception("releasing global hotkeys failed")
            self.backend = None
