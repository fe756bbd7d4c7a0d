"""Long-lived worker threads: one per model or device, named, daemon, ended by a sentinel.

:class:`WorkerThread` runs one loop for the life of its owner (the translation
worker, the level meter); :class:`JobThread` runs jobs from a queue in order
until :meth:`JobThread.close` sends the sentinel (the speech model's thread, the
caption service's session thread). Nothing here sleeps to synchronise.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from . import logger


class WorkerThread:
    """A named daemon thread running ``loop`` until it returns; started at once."""

    def __init__(self, name: str, loop: Callable[[], None]) -> None:
        self._loop = loop
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self._loop()
        except BaseException:  # a bug must not pass silently: the thread ends, the log says why
            logger.exception("thread %s ended by an error", self.name)

    @property
    def name(self) -> str:
        """The thread's name (shown in logs and thread lists)."""
        return self._thread.name

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end."""
        self._thread.join(timeout)


_SENTINEL = object()


class JobThread(WorkerThread):
    """A long-lived thread that hands each submitted job to ``handle``, in order."""

    def __init__(self, name: str, handle: Callable[[Any], None]) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._handle = handle
        super().__init__(name, self._run)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _SENTINEL:
                return
            self._handle(job)

    def submit(self, job: Any) -> None:
        """Queue ``job`` (never blocks)."""
        self._jobs.put(job)

    def close(self, timeout: float | None = 10.0) -> None:
        """Let queued jobs finish, then end the thread (sentinel)."""
        self._jobs.put(_SENTINEL)
        self.join(timeout)
