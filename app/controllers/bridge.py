"""Carries what the caption service reports from its threads to the UI thread, as Qt signals
(plumbing for :mod:`app.controllers.app`, not a controller)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from core.session.pipeline import MessageLevel
from core.session.service import ServiceState
from core.stream import CaptionView, Progress


class ServiceBridge(QObject):
    """A :class:`core.session.service.ServiceListener` whose calls become queued Qt signals.

    The service calls these methods on its worker threads; connected slots run on
    the thread that owns the bridge (the UI thread), so the UI never blocks on a
    model and widgets are only touched from the UI thread.
    """

    view_changed = Signal(object)  # CaptionView
    progress_changed = Signal(object)  # Progress
    message = Signal(str, str)  # level, text
    state_changed = Signal(str, str)  # state, detail
    status = Signal(str, object)  # message, fraction or None

    def on_view(self, view: CaptionView) -> None:
        """From the service: a new caption frame."""
        self.view_changed.emit(view)

    def on_progress(self, progress: Progress) -> None:
        """From the service: where the session stands."""
        self.progress_changed.emit(progress)

    def on_message(self, level: MessageLevel, text: str) -> None:
        """From the service: a message for the user."""
        self.message.emit(level, text)

    def on_state(self, state: ServiceState, detail: str) -> None:
        """From the service: idle, loading, running, paused or stopping."""
        self.state_changed.emit(state, detail)

    def on_status(self, message: str, fraction: float | None) -> None:
        """From the service: progress of long work (preparing or loading models)."""
        self.status.emit(message, fraction)
