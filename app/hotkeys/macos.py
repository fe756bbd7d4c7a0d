"""Global hotkeys on macOS: Carbon's ``RegisterEventHotKey`` and an application event handler for
``kEventHotKeyPressed``, through ctypes. Written against Apple's documented Carbon Event Manager API
(still shipped, also on Apple silicon) and not run here. It needs no Accessibility permission.

Qt's "Ctrl" is the Command key on macOS and its "Meta" the Control key; the mapping follows Qt, so
the default Ctrl+Alt+Shift+P is ⌥⇧⌘P, as in a Qt shortcut (core.hotkeys lists the macOS system
shortcuts in Qt's names).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from ctypes import POINTER, Structure, byref, c_int32, c_uint32, c_void_p

from .base import (
    NAMED_KEYS,
    PUNCTUATION,
    Chord,
    HotkeyBackend,
    HotkeysUnavailable,
    conflict_sentence,
    unsupported_sentence,
)

CMD_KEY, SHIFT_KEY, OPTION_KEY, CONTROL_KEY = 0x100, 0x200, 0x800, 0x1000
MAC_MODIFIERS = {"ctrl": CMD_KEY, "shift": SHIFT_KEY, "alt": OPTION_KEY, "meta": CONTROL_KEY}
EVENT_HOT_KEY_EXISTS = -9878  # eventHotKeyExistsErr
K_EVENT_CLASS_KEYBOARD = int.from_bytes(b"keyb", "big")
K_EVENT_HOT_KEY_PRESSED = 5
K_EVENT_PARAM_DIRECT_OBJECT = int.from_bytes(b"----", "big")
TYPE_EVENT_HOT_KEY_ID = int.from_bytes(b"hkid", "big")
SIGNATURE = int.from_bytes(b"Stto", "big")
# kVK_ANSI_* (Events.h): the US layout's key positions
ANSI_KEYS = {"A": 0x00, "S": 0x01, "D": 0x02, "F": 0x03, "H": 0x04, "G": 0x05, "Z": 0x06, "X": 0x07, "C": 0x08,
             "V": 0x09, "B": 0x0B, "Q": 0x0C, "W": 0x0D, "E": 0x0E, "R": 0x0F, "Y": 0x10, "T": 0x11, "1": 0x12,
             "2": 0x13, "3": 0x14, "4": 0x15, "6": 0x16, "5": 0x17, "9": 0x19, "7": 0x1A, "8": 0x1C, "0": 0x1D,
             "O": 0x1F, "U": 0x20, "I": 0x22, "P": 0x23, "L": 0x25, "J": 0x26, "K": 0x28, "N": 0x2D, "M": 0x2E}
FUNCTION_KEYS = {1: 0x7A, 2: 0x78, 3: 0x63, 4: 0x76, 5: 0x60, 6: 0x61, 7: 0x62, 8: 0x64, 9: 0x65, 10: 0x6D,
                 11: 0x67, 12: 0x6F, 13: 0x69, 14: 0x6B, 15: 0x71, 16: 0x6A, 17: 0x40, 18: 0x4F, 19: 0x50, 20: 0x5A}


def key_code(chord: Chord) -> int | None:
    """The macOS virtual key code (kVK_*) of the chord's key, None when it has none."""
    if chord.key in NAMED_KEYS:
        return NAMED_KEYS[chord.key][3]
    if chord.function_key is not None:
        return FUNCTION_KEYS.get(chord.function_key)
    char = chord.char
    if char is None:
        return None
    if char in PUNCTUATION:
        return PUNCTUATION[char][2]
    return ANSI_KEYS.get(char.upper())


def modifier_flags(chord: Chord) -> int:
    """RegisterEventHotKey's modifiers for the chord (Qt's Ctrl is Command)."""
    flags = 0
    for name in chord.modifiers:
        flags |= MAC_MODIFIERS[name]
    return flags


class EventHotKeyID(Structure):
    _fields_ = [("signature", c_uint32), ("id", c_uint32)]


class EventTypeSpec(Structure):
    _fields_ = [("eventClass", c_uint32), ("eventKind", c_uint32)]


HANDLER = ctypes.CFUNCTYPE(c_int32, c_void_p, c_void_p, c_void_p)


class MacHotkeys(HotkeyBackend):
    """Carbon hot keys; the handler runs on the main (UI) thread's run loop, which Qt's runs."""

    name = "macOS (Carbon RegisterEventHotKey)"

    def __init__(self) -> None:
        super().__init__()
        if sys.platform != "darwin":
            raise HotkeysUnavailable("Carbon hot keys exist only on macOS")
        path = ctypes.util.find_library("Carbon")
        if not path:
            raise HotkeysUnavailable("the Carbon framework was not found")
        self._carbon = c = ctypes.CDLL(path)
        c.GetApplicationEventTarget.restype = c_void_p
        c.InstallEventHandler.argtypes = [c_void_p, HANDLER, c_uint32, POINTER(EventTypeSpec), c_void_p,
                                          POINTER(c_void_p)]
        c.RegisterEventHotKey.argtypes = [c_uint32, c_uint32, EventHotKeyID, c_void_p, c_uint32, POINTER(c_void_p)]
        c.UnregisterEventHotKey.argtypes = [c_void_p]
        c.GetEventParameter.argtypes = [c_void_p, c_uint32, c_uint32, c_void_p, c_uint32, c_void_p, c_void_p]
        c.RemoveEventHandler.argtypes = [c_void_p]
        self._target = c.GetApplicationEventTarget()
        self._callback = HANDLER(self._on_event)  # kept referenced while installed
        spec = EventTypeSpec(K_EVENT_CLASS_KEYBOARD, K_EVENT_HOT_KEY_PRESSED)
        self._handler_ref = c_void_p()
        status = c.InstallEventHandler(self._target, self._callback, 1, byref(spec), None, byref(self._handler_ref))
        if status != 0:
            raise HotkeysUnavailable(f"the hot key handler could not be installed (status {status})")
        self._refs: dict[int, tuple[str, c_void_p]] = {}

    def _on_event(self, _next_handler, event, _data) -> int:
        hotkey = EventHotKeyID()
        status = self._carbon.GetEventParameter(event, K_EVENT_PARAM_DIRECT_OBJECT, TYPE_EVENT_HOT_KEY_ID, None,
                                                ctypes.sizeof(hotkey), None, byref(hotkey))
        if status == 0 and hotkey.signature == SIGNATURE and hotkey.id in self._refs:
            self.activated.emit(self._refs[hotkey.id][0])
        return 0

    def _unregister(self) -> None:
        for _action, ref in self._refs.values():
            self._carbon.UnregisterEventHotKey(ref)
        self._refs = {}

    def bind(self, chords: dict[str, Chord]) -> dict[str, str]:
        self._unregister()
        problems: dict[str, str] = {}
        for i, (action, chord) in enumerate(chords.items(), start=1):
            code = key_code(chord)
            if code is None:
                problems[action] = unsupported_sentence(chord.text, "on macOS")
                continue
            ref = c_void_p()
            status = self._carbon.RegisterEventHotKey(code, modifier_flags(chord), EventHotKeyID(SIGNATURE, i),
                                                      self._target, 0, byref(ref))
            if status == 0:
                self._refs[i] = (action, ref)
            elif status == EVENT_HOT_KEY_EXISTS:
                problems[action] = conflict_sentence(chord.text)
            else:
                problems[action] = f"{chord.text} could not be bound (Carbon status {status})."
        return problems

    def close(self) -> None:
        self._unregister()
        if self._handler_ref:
            self._carbon.RemoveEventHandler(self._handler_ref)
            self._handler_ref = c_void_p()
