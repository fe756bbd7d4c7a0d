"""Global hotkeys on X11: ``XGrabKey`` on the root window through libX11 (ctypes).

The grabs live on a connection of their own, read on the UI thread when its socket has data
(a QSocketNotifier: no polling). Each combination is grabbed four times, with and without NumLock
and CapsLock, so it works whatever those locks are. A combination another client already grabbed
answers BadAccess; an error handler installed around the grabs and an ``XSync`` catch it, so it is
reported by name and the other combinations stay grabbed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from ctypes import POINTER, Structure, c_int, c_long, c_ubyte, c_uint, c_ulong, c_void_p

from PySide6.QtCore import QSocketNotifier

from core import logger

from .base import NAMED_KEYS, Chord, HotkeyBackend, HotkeysUnavailable, conflict_sentence

SHIFT, LOCK, CONTROL, MOD1, MOD2, MOD4 = 1, 2, 4, 8, 16, 64
KEY_PRESS, KEY_RELEASE = 2, 3
GRAB_MODE_ASYNC = 1
BAD_ACCESS = 10
XK_NUM_LOCK = 0xFF7F
# Qt modifier -> X modifier mask (Alt is Mod1 and Super/Meta Mod4 on every common layout)
X_MODIFIERS = {"shift": SHIFT, "ctrl": CONTROL, "alt": MOD1, "meta": MOD4}


class XErrorEvent(Structure):
    _fields_ = [("type", c_int), ("display", c_void_p), ("resourceid", c_ulong), ("serial", c_ulong),
                ("error_code", c_ubyte), ("request_code", c_ubyte), ("minor_code", c_ubyte)]


class XKeyEvent(Structure):
    _fields_ = [("type", c_int), ("serial", c_ulong), ("send_event", c_int), ("display", c_void_p),
                ("window", c_ulong), ("root", c_ulong), ("subwindow", c_ulong), ("time", c_ulong),
                ("x", c_int), ("y", c_int), ("x_root", c_int), ("y_root", c_int), ("state", c_uint),
                ("keycode", c_uint), ("same_screen", c_int)]


class XModifierKeymap(Structure):
    _fields_ = [("max_keypermod", c_int), ("modifiermap", POINTER(c_ubyte))]


ERROR_HANDLER = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(XErrorEvent))


def keysym(chord: Chord) -> int | None:
    """The X keysym of the chord's key (letters as their lower-case keysym), None if it has none."""
    if chord.key in NAMED_KEYS:
        return NAMED_KEYS[chord.key][0]
    if chord.function_key is not None:
        return 0xFFBE + chord.function_key - 1  # XK_F1 onwards
    char = chord.char
    if char is not None:
        return ord(char.lower())  # Latin-1 keysyms are the characters themselves
    return None


def modifier_mask(chord: Chord) -> int:
    """The X modifier mask of the chord."""
    mask = 0
    for name in chord.modifiers:
        mask |= X_MODIFIERS[name]
    return mask


def lock_variants(num_lock: int) -> tuple[int, ...]:
    """The lock states a grab is repeated for: none, CapsLock, NumLock, both."""
    return (0, LOCK, num_lock, LOCK | num_lock)


def _libx11() -> ctypes.CDLL:
    name = ctypes.util.find_library("X11") or "libX11.so.6"
    try:
        lib = ctypes.CDLL(name)
    except OSError as exc:
        raise HotkeysUnavailable(f"libX11 could not be loaded ({exc})") from None
    lib.XOpenDisplay.restype = c_void_p
    lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    lib.XCloseDisplay.argtypes = [c_void_p]
    lib.XDefaultRootWindow.restype = c_ulong
    lib.XDefaultRootWindow.argtypes = [c_void_p]
    lib.XConnectionNumber.argtypes = [c_void_p]
    lib.XKeysymToKeycode.restype = c_ubyte
    lib.XKeysymToKeycode.argtypes = [c_void_p, c_ulong]
    lib.XGrabKey.argtypes = [c_void_p, c_int, c_uint, c_ulong, c_int, c_int, c_int]
    lib.XUngrabKey.argtypes = [c_void_p, c_int, c_uint, c_ulong]
    lib.XSync.argtypes = [c_void_p, c_int]
    lib.XFlush.argtypes = [c_void_p]
    lib.XPending.argtypes = [c_void_p]
    lib.XNextEvent.argtypes = [c_void_p, c_void_p]
    lib.XNextRequest.restype = c_ulong
    lib.XNextRequest.argtypes = [c_void_p]
    lib.XSetErrorHandler.restype = c_void_p
    lib.XSetErrorHandler.argtypes = [c_void_p]
    lib.XGetModifierMapping.restype = POINTER(XModifierKeymap)
    lib.XGetModifierMapping.argtypes = [c_void_p]
    lib.XFreeModifiermap.argtypes = [POINTER(XModifierKeymap)]
    lib.XkbSetDetectableAutoRepeat.argtypes = [c_void_p, c_int, c_void_p]
    return lib


class X11Hotkeys(HotkeyBackend):
    """Grabs on the root window of the X display Qt uses (``DISPLAY``)."""

    name = "X11 (XGrabKey)"

    def __init__(self) -> None:
        super().__init__()
        self._x = _libx11()
        self._dpy = self._x.XOpenDisplay(None)
        if not self._dpy:
            raise HotkeysUnavailable("the X display could not be opened")
        self._root = self._x.XDefaultRootWindow(self._dpy)
        self._x.XkbSetDetectableAutoRepeat(self._dpy, 1, None)  # a held key: presses without releases
        self._num_lock = self._num_lock_mask()
        self._grabs: dict[tuple[int, int], str] = {}  # (keycode, modifiers) -> action
        self._down: set[int] = set()  # keycodes held (a held key repeats: one action per press)
        self._event = (c_long * 24)()  # an XEvent
        self._errors: list[tuple[int, int]] = []  # (serial, error code) seen while grabbing
        self._handler = ERROR_HANDLER(self._on_error)  # kept referenced while installed
        self._notifier = QSocketNotifier(self._x.XConnectionNumber(self._dpy), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._read)

    def _num_lock_mask(self) -> int:
        """The modifier bit NumLock sets (Mod2 on most layouts)."""
        code = self._x.XKeysymToKeycode(self._dpy, XK_NUM_LOCK)
        keymap = self._x.XGetModifierMapping(self._dpy)
        mask = MOD2
        if keymap and code:
            per = keymap.contents.max_keypermod
            for i in range(8 * per):
                if keymap.contents.modifiermap[i] == code:
                    mask = 1 << (i // per)
            self._x.XFreeModifiermap(keymap)
        return mask

    def _on_error(self, _display, event) -> int:
        self._errors.append((event.contents.serial, event.contents.error_code))
        return 0

    def _checked(self, calls) -> dict[int, int]:
        """Run Xlib ``calls`` (each returns a tag) under our error handler; {tag: error code} of those
        the server refused (known after an XSync)."""
        self._errors = []
        previous = self._x.XSetErrorHandler(ctypes.cast(self._handler, c_void_p))
        serials: list[tuple[int, int]] = []
        try:
            for tag, call in calls:
                serials.append((self._x.XNextRequest(self._dpy), tag))
                call()
            self._x.XSync(self._dpy, 0)
        finally:
            self._x.XSetErrorHandler(previous)
        failed: dict[int, int] = {}
        for serial, code in self._errors:
            tag = next((t for s, t in reversed(serials) if s <= serial), None)
            if tag is not None:
                failed.setdefault(tag, code)
        return failed

    def _ungrab_all(self) -> None:
        grabs = list(self._grabs)
        self._grabs = {}
        self._checked([(0, lambda c=code, m=mods: self._x.XUngrabKey(self._dpy, c, m, self._root))
                       for code, mods in grabs])

    def bind(self, chords: dict[str, Chord]) -> dict[str, str]:
        self._ungrab_all()
        problems: dict[str, str] = {}
        wanted: dict[str, tuple[int, int]] = {}
        for action, chord in chords.items():
            sym = keysym(chord)
            code = self._x.XKeysymToKeycode(self._dpy, sym) if sym is not None else 0
            if not code:
                problems[action] = (f"{chord.text} has no key on this keyboard; "
                                    "choose another in Settings › Hotkeys.")
                continue
            wanted[action] = (code, modifier_mask(chord))
        actions = list(wanted)
        calls = []
        for tag, action in enumerate(actions):
            code, mods = wanted[action]
            for lock in lock_variants(self._num_lock):
                calls.append((tag, lambda c=code, m=mods | lock: self._x.XGrabKey(
                    self._dpy, c, m, self._root, 0, GRAB_MODE_ASYNC, GRAB_MODE_ASYNC)))
        failed = self._checked(calls)
        for tag, action in enumerate(actions):
            code, mods = wanted[action]
            variants = [(code, mods | lock) for lock in lock_variants(self._num_lock)]
            if tag in failed:
                # release the variants that were granted; the combination belongs to the other program
                self._checked([(0, lambda c=c, m=m: self._x.XUngrabKey(self._dpy, c, m, self._root))
                               for c, m in variants])
                problems[action] = (conflict_sentence(chords[action].text) if failed[tag] == BAD_ACCESS
                                    else f"{chords[action].text} could not be bound (X error {failed[tag]}).")
                continue
            for variant in variants:
                self._grabs[variant] = action
        logger.info("X11 hotkeys grabbed: %s", {a: chords[a].text for a in set(self._grabs.values())})
        self._read()  # events Xlib already queued while syncing
        return problems

    def _read(self, *_args) -> None:
        """Take every event the connection has; a grabbed press emits its action."""
        if not self._dpy:
            return
        while self._x.XPending(self._dpy):
            self._x.XNextEvent(self._dpy, self._event)
            key = ctypes.cast(self._event, POINTER(XKeyEvent)).contents
            if key.type == KEY_RELEASE:
                self._down.discard(key.keycode)
            elif key.type == KEY_PRESS and key.keycode not in self._down:
                self._down.add(key.keycode)
                action = self._grabs.get((key.keycode, key.state & 0xFF))
                if action is not None:
                    self.activated.emit(action)

    def close(self) -> None:
        if not self._dpy:
            return
        self._notifier.setEnabled(False)
        self._ungrab_all()
        self._x.XCloseDisplay(self._dpy)
        self._dpy = None
