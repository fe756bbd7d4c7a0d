"""The app's behaviour: one controller per window, and the Qt plumbing they share.

- :mod:`.app`: :class:`~.app.AppController`, the composition root; drives the control window
  and tray, turns caption-service events into what the windows show, starts, stops, pauses, quits;
- :mod:`.overlay`: the caption overlay (geometry, show/hide, click-through, placeholder text);
- :mod:`.settings`: the settings panel (validation, saving, applying, model downloads, level meter)
  and the settings in force;
- :mod:`.history`: the history window (sessions, search, export).

Plumbing, not controllers: :mod:`.bridge` carries the service's calls from its threads to the UI
thread as Qt signals; :mod:`.downloads` runs model downloads on threads of their own.

Controllers use views only through the views' methods and signals, never their child widgets.
"""
