"""Global hotkeys on Wayland: the xdg-desktop-portal ``GlobalShortcuts`` interface over D-Bus (QtDBus).

Written against the documented interface (org.freedesktop.portal.GlobalShortcuts, version 1) and not
run here: ``CreateSession`` opens a session, ``BindShortcuts`` offers the four actions with their
preferred triggers (the desktop shows its own dialog, where the user agrees or picks other keys),
and the ``Activated`` signal names the action pressed. The compositor decides the final keys: a
combination it refuses is not reported back as a conflict, the portal's dialog shows it instead.

``BindShortcuts`` takes its shortcuts as ``a(sa{sv})``, an array of structures. Qt's C++ API marshals
that through a registered struct type; PySide6's QtDBus (6.11) can register none, and its
``QDBusArgument.beginArray`` takes only a registered element type, so the list cannot be built here:
the backend checks this first (:func:`shortcut_list`) and then says plainly that global hotkeys are not
available, and the app keeps its windows' shortcuts. Sending the call needs a D-Bus library that
marshals structures (e.g. jeepney) or a PySide6 that can.
"""

from __future__ import annotations

import os

from PySide6.QtCore import SLOT, Slot

from core import logger

from .base import ACTIONS, NAMED_KEYS, PUNCTUATION, Chord, HotkeyBackend, HotkeysUnavailable

PORTAL = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
SHORTCUTS = "org.freedesktop.portal.GlobalShortcuts"
REQUEST = "org.freedesktop.portal.Request"
# Qt's modifier names -> the portal's (the XDG shortcuts specification)
PORTAL_MODIFIERS = {"ctrl": "CTRL", "alt": "ALT", "shift": "SHIFT", "meta": "LOGO"}


def preferred_trigger(chord: Chord) -> str | None:
    """The portal's ``preferred_trigger`` text of a chord ("CTRL+SHIFT+s"): modifiers in the
    specification's order, then the key's xkb keysym name; None when the key has no such name."""
    if chord.key in NAMED_KEYS:
        key = NAMED_KEYS[chord.key][1]
    elif chord.function_key is not None:
        key = f"F{chord.function_key}"
    elif chord.char is not None and chord.char.isalnum():
        key = chord.char.lower()
    elif chord.char is not None and chord.char in PUNCTUATION:
        key = PUNCTUATION[chord.char][0]
    else:
        return None
    mods = [PORTAL_MODIFIERS[m] for m in ("ctrl", "alt", "shift", "meta") if m in chord.modifiers]
    return "+".join([*mods, key])


def request_path(unique_name: str, token: str) -> str:
    """The object path of a portal request made with ``handle_token`` = ``token`` by the D-Bus client
    ``unique_name`` (":1.42" -> ".../request/1_42/TOKEN"), known before the call so that its Response
    can be subscribed to first."""
    sender = unique_name.lstrip(":").replace(".", "_")
    return f"{PORTAL_PATH}/request/{sender}/{token}"


def shortcut_list(qd, chords: dict[str, Chord]):
    """BindShortcuts' ``a(sa{sv})`` argument: (action, {description, preferred_trigger}) per chord;
    HotkeysUnavailable when this QtDBus cannot build it."""
    try:
        shortcuts = qd.QDBusArgument()
        shortcuts.beginArray(qd.QDBusArgument.ElementType.StructureType)
        for action, chord in chords.items():
            options = {"description": ACTIONS[action]}
            trigger = preferred_trigger(chord)
            if trigger:
                options["preferred_trigger"] = trigger
            shortcuts.beginStructure()
            shortcuts << action  # noqa: B015 (QDBusArgument's streaming operator appends)
            shortcuts << options  # noqa: B015
            shortcuts.endStructure()
        shortcuts.endArray()
    except (TypeError, AttributeError, NotImplementedError):
        raise HotkeysUnavailable("PySide6's QtDBus cannot build the portal's list of shortcuts, a(sa{sv})") from None
    return shortcuts


def _dbus():
    try:
        from PySide6 import QtDBus
    except ImportError:
        raise HotkeysUnavailable("this Qt has no D-Bus module (QtDBus) for the desktop portal") from None
    return QtDBus


class PortalHotkeys(HotkeyBackend):
    """A GlobalShortcuts session with the desktop portal."""

    name = "the desktop portal (GlobalShortcuts)"

    def __init__(self) -> None:
        super().__init__()
        self._qd = _dbus()
        shortcut_list(self._qd, {})  # this QtDBus can send BindShortcuts, or say so now
        self._bus = self._qd.QDBusConnection.sessionBus()
        if not self._bus.isConnected():
            raise HotkeysUnavailable("there is no D-Bus session bus")
        self._iface = self._qd.QDBusInterface(PORTAL, PORTAL_PATH, SHORTCUTS, self._bus)
        if not self._iface.isValid():
            raise HotkeysUnavailable("the desktop portal offers no GlobalShortcuts interface")
        self._session = ""
        self._pending: dict[str, Chord] | None = None
        self._count = 0
        token = self._token()
        self._bus.connect(PORTAL, request_path(self._bus.baseService(), token), REQUEST, "Response",
                          self, SLOT("_on_session(uint,QVariantMap)"))
        self._bus.connect(PORTAL, PORTAL_PATH, SHORTCUTS, "Activated",
                          self, SLOT("_on_activated(QDBusObjectPath,QString,qulonglong,QVariantMap)"))
        self._iface.call("CreateSession", {"handle_token": token, "session_handle_token": f"sotto{os.getpid()}"})

    def _token(self) -> str:
        self._count += 1
        return f"sotto{os.getpid()}_{self._count}"

    @Slot("uint", "QVariantMap")
    def _on_session(self, response: int, results: dict) -> None:
        if response != 0:
            logger.warning("the desktop portal refused a global shortcuts session (response %s)", response)
            return
        self._session = str(results.get("session_handle", ""))
        if self._pending is not None:
            self.bind(self._pending)

    @Slot("QDBusObjectPath", str, "qulonglong", "QVariantMap")
    def _on_activated(self, session, shortcut_id: str, _timestamp: int, _options: dict) -> None:
        if shortcut_id in ACTIONS:
            self.activated.emit(shortcut_id)

    def bind(self, chords: dict[str, Chord]) -> dict[str, str]:
        if not self._session:  # the session is still being created: bind when it is
            self._pending = chords
            return {}
        self._pending = None
        self._iface.call("BindShortcuts", self._qd.QDBusObjectPath(self._session), shortcut_list(self._qd, chords),
                         "", {"handle_token": self._token()})
        return {}

    def close(self) -> None:
        if self._session:
            session = self._qd.QDBusInterface(PORTAL, self._session, "org.freedesktop.portal.Session", self._bus)
            session.call("Close")
            self._session = ""
