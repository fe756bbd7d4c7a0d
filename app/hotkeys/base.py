"""What every global-hotkey backend shares: the actions, a parsed key combination (:class:`Chord`),
the key tables the backends map it with, the sentences users read, and :class:`HotkeyBackend`."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QKeySequence

# action -> what it does (the labels of Settings › Hotkeys)
ACTIONS: dict[str, str] = {
    "start": "Start or stop captions",
    "pause": "Pause or resume",
    "overlay": "Show or hide captions",
    "click_through": "Click-through on or off",
}

MODIFIERS = ("ctrl", "shift", "alt", "meta")  # Qt's names; on macOS Qt's Ctrl is Command and Meta is Control
_QT_MODIFIERS = {"ctrl": Qt.KeyboardModifier.ControlModifier, "shift": Qt.KeyboardModifier.ShiftModifier,
                 "alt": Qt.KeyboardModifier.AltModifier, "meta": Qt.KeyboardModifier.MetaModifier}


class HotkeysUnavailable(Exception):
    """No global hotkeys here; the message says why, in a few words."""


@dataclass(frozen=True)
class Chord:
    """One key combination: Qt's modifier names and Qt's key code (``Qt.Key``'s value)."""

    modifiers: frozenset[str]
    key: int
    text: str  # as the user wrote it, in Qt's portable text

    @property
    def char(self) -> str | None:
        """The key as a printable ASCII character (upper case for letters), else None."""
        return chr(self.key) if 0x20 < self.key < 0x7F else None

    @property
    def function_key(self) -> int | None:
        """n for the key Fn, else None."""
        n = self.key - Qt.Key.Key_F1.value + 1
        return n if 1 <= n <= 35 else None


# Named keys: Qt key -> (X11 keysym, its xkb name, Windows virtual key, macOS kVK code); None: not there
NAMED_KEYS: dict[int, tuple[int, str, int | None, int | None]] = {
    Qt.Key.Key_Space.value: (0x20, "space", 0x20, 0x31),
    Qt.Key.Key_Escape.value: (0xFF1B, "Escape", 0x1B, 0x35),
    Qt.Key.Key_Tab.value: (0xFF09, "Tab", 0x09, 0x30),
    Qt.Key.Key_Backspace.value: (0xFF08, "BackSpace", 0x08, 0x33),
    Qt.Key.Key_Return.value: (0xFF0D, "Return", 0x0D, 0x24),
    Qt.Key.Key_Enter.value: (0xFF8D, "KP_Enter", 0x0D, 0x4C),
    Qt.Key.Key_Insert.value: (0xFF63, "Insert", 0x2D, 0x72),
    Qt.Key.Key_Delete.value: (0xFFFF, "Delete", 0x2E, 0x75),
    Qt.Key.Key_Pause.value: (0xFF13, "Pause", 0x13, None),
    Qt.Key.Key_Print.value: (0xFF61, "Print", 0x2C, None),
    Qt.Key.Key_Home.value: (0xFF50, "Home", 0x24, 0x73),
    Qt.Key.Key_End.value: (0xFF57, "End", 0x23, 0x77),
    Qt.Key.Key_Left.value: (0xFF51, "Left", 0x25, 0x7B),
    Qt.Key.Key_Up.value: (0xFF52, "Up", 0x26, 0x7E),
    Qt.Key.Key_Right.value: (0xFF53, "Right", 0x27, 0x7C),
    Qt.Key.Key_Down.value: (0xFF54, "Down", 0x28, 0x7D),
    Qt.Key.Key_PageUp.value: (0xFF55, "Page_Up", 0x21, 0x74),
    Qt.Key.Key_PageDown.value: (0xFF56, "Page_Down", 0x22, 0x79),
    Qt.Key.Key_Menu.value: (0xFF67, "Menu", 0x5D, None),
}

# Punctuation (US layout): character -> (xkb keysym name, Windows OEM virtual key, macOS kVK code)
PUNCTUATION: dict[str, tuple[str, int, int]] = {
    ",": ("comma", 0xBC, 0x2B), "-": ("minus", 0xBD, 0x1B), ".": ("period", 0xBE, 0x2F),
    "=": ("equal", 0xBB, 0x18), ";": ("semicolon", 0xBA, 0x29), "/": ("slash", 0xBF, 0x2C),
    "`": ("grave", 0xC0, 0x32), "[": ("bracketleft", 0xDB, 0x21), "\\": ("backslash", 0xDC, 0x2A),
    "]": ("bracketright", 0xDD, 0x1E), "'": ("apostrophe", 0xDE, 0x27),
}


def parse_chord(text: str) -> Chord | None:
    """The combination ``text`` names (None for "", i.e. off); ValueError with one sentence when Qt
    cannot read it as one modifier-and-key combination."""
    text = text.strip()
    if not text:
        return None
    seq = QKeySequence.fromString(text, QKeySequence.SequenceFormat.PortableText)
    if seq.count() != 1:
        raise ValueError(f"{text!r} is not one key combination; write it like Ctrl+Alt+Shift+P.")
    combo = seq[0]
    key = combo.key().value
    held = combo.keyboardModifiers()
    if key == Qt.Key.Key_unknown.value or Qt.Key.Key_Shift.value <= key <= Qt.Key.Key_ScrollLock.value:
        raise ValueError(f"{text!r} is not a key combination Qt can read; write it like Ctrl+Alt+Shift+P.")
    modifiers = frozenset(name for name, flag in _QT_MODIFIERS.items() if held & flag)
    return Chord(modifiers, key, seq.toString(QKeySequence.SequenceFormat.PortableText))


def conflict_sentence(text: str) -> str:
    """What the user reads when another program holds ``text``."""
    return f"{text} is already used by another program; choose another in Settings › Hotkeys."


def unsupported_sentence(text: str, where: str) -> str:
    """What the user reads when ``text`` names a key the platform cannot bind."""
    return f"{text} cannot be a global hotkey {where}; choose another in Settings › Hotkeys."


class HotkeyBackend(QObject):
    """One platform's global hotkeys. ``activated`` carries the action's name; subclasses emit it on
    the UI thread."""

    activated = Signal(str)
    name = "none"

    def bind(self, chords: dict[str, Chord]) -> dict[str, str]:
        """Bind each action to its chord, replacing what was bound; returns {action: sentence} for those
        that could not be bound."""
        raise NotImplementedError

    def close(self) -> None:
        """Release every binding."""
