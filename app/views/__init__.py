"""The windows, as layout only: each view lays out its widgets, shows what it is told through
its methods and emits signals for what the user does. What happens next is decided by the
window's controller (:mod:`app.controllers`).

- :mod:`.control`: the control window and the tray icon;
- :mod:`.overlay`: the floating caption overlay (:mod:`.layout` wraps its lines);
- :mod:`.settings_panel`: the settings panel;
- :mod:`.history_window`: the history window;
- :mod:`.icons`: the app icon.
"""
