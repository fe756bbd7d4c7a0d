"""Global hotkeys on Windows: ``RegisterHotKey`` for the UI thread and a native event filter for
``WM_HOTKEY``. Written against the documented Win32 API and not run here."""

from __future__ import annotations

import ctypes
import sys

from PySide6.QtCore import QAbstractNativeEventFilter, QCoreApplication

from .base import (
    NAMED_KEYS,
    PUNCTUATION,
    Chord,
    HotkeyBackend,
    HotkeysUnavailable,
    conflict_sentence,
    unsupported_sentence,
)

MOD_ALT, MOD_CONTROL, MOD_SHIFT, MOD_WIN, MOD_NOREPEAT = 0x1, 0x2, 0x4, 0x8, 0x4000
WM_HOTKEY = 0x0312
ERROR_HOTKEY_ALREADY_REGISTERED = 1409
WIN_MODIFIERS = {"alt": MOD_ALT, "ctrl": MOD_CONTROL, "shift": MOD_SHIFT, "meta": MOD_WIN}
FIRST_ID = 0x5077  # hotkey ids of this app (any number 0x0000–0xBFFF)


def virtual_key(chord: Chord) -> int | None:
    """The Windows virtual-key code of the chord's key, None when it has none."""
    if chord.key in NAMED_KEYS:
        return NAMED_KEYS[chord.key][2]
    if chord.function_key is not None:
        return 0x70 + chord.function_key - 1 if chord.function_key <= 24 else None  # VK_F1..VK_F24
    char = chord.char
    if char is not None and char.isalnum():
        return ord(char.upper())  # VK_0..VK_9, VK_A..VK_Z are the characters
    if char is not None and char in PUNCTUATION:
        return PUNCTUATION[char][1]
    return None


def modifier_flags(chord: Chord) -> int:
    """RegisterHotKey's fsModifiers for the chord (a held key does not repeat)."""
    flags = MOD_NOREPEAT
    for name in chord.modifiers:
        flags |= WIN_MODIFIERS[name]
    return flags


class _HotkeyFilter(QAbstractNativeEventFilter):
    def __init__(self, on_hotkey) -> None:
        super().__init__()
        self._on_hotkey = on_hotkey

    def nativeEventFilter(self, event_type, message):  # noqa: N802
        if event_type in (b"windows_generic_MSG", "windows_generic_MSG"):
            from ctypes import wintypes

            msg = wintypes.MSG.from_address(int(message))
            if msg.message == WM_HOTKEY:
                self._on_hotkey(int(msg.wParam))
                return True, 0
        return False, 0


class WindowsHotkeys(HotkeyBackend):
    """Hotkeys registered for the UI thread (no window: WM_HOTKEY comes to the thread's queue)."""

    name = "Windows (RegisterHotKey)"

    def __init__(self) -> None:
        super().__init__()
        if sys.platform != "win32":
            raise HotkeysUnavailable("RegisterHotKey exists only on Windows")
        self._user32 = ctypes.WinDLL("user32", use_last_error=True)
        self._ids: dict[int, str] = {}
        self._filter = _HotkeyFilter(self._on_hotkey)
        QCoreApplication.instance().installNativeEventFilter(self._filter)

    def _on_hotkey(self, hotkey_id: int) -> None:
        action = self._ids.get(hotkey_id)
        if action is not None:
            self.activated.emit(action)

    def _unregister(self) -> None:
        for hotkey_id in self._ids:
            self._user32.UnregisterHotKey(None, hotkey_id)
        self._ids = {}

    def bind(self, chords: dict[str, Chord]) -> dict[str, str]:
        self._unregister()
        problems: dict[str, str] = {}
        for i, (action, chord) in enumerate(chords.items()):
            vk = virtual_key(chord)
            if vk is None:
                problems[action] = unsupported_sentence(chord.text, "on Windows")
                continue
            if self._user32.RegisterHotKey(None, FIRST_ID + i, modifier_flags(chord), vk):
                self._ids[FIRST_ID + i] = action
            elif ctypes.get_last_error() == ERROR_HOTKEY_ALREADY_REGISTERED:
                problems[action] = conflict_sentence(chord.text)
            else:
                problems[action] = f"{chord.text} could not be bound (Windows error {ctypes.get_last_error()})."
        return problems

    def close(self) -> None:
        self._unregister()
        app = QCoreApplication.instance()
        if app is not None:
            app.removeNativeEventFilter(self._filter)
