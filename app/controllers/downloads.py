"""Model downloads for the settings panel: a thread per download, progress as Qt signals
(plumbing for :mod:`app.controllers.settings`, not a controller)."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal

from core.errors import DownloadCancelled, SottoError
from core.models.download import DownloadProgress
from core.models.store import ModelStore


class ModelDownloads(QObject):
    """Starts, reports and cancels downloads; signals arrive on the UI thread."""

    progress = Signal(str, object, str)  # model, fraction or None, text
    finished = Signal(str, str)  # model, path
    failed = Signal(str, str)  # model, message ("" when cancelled)

    def __init__(self, store: ModelStore) -> None:
        super().__init__()
        self.store = store
        self._jobs: dict[str, tuple[threading.Thread, threading.Event]] = {}
        self._lock = threading.Lock()

    def start(self, name: str) -> bool:
        """Download ``name`` (resuming a partial one); False if it is already downloading."""
        with self._lock:
            if name in self._jobs and self._jobs[name][0].is_alive():
                return False
            cancel = threading.Event()
            thread = threading.Thread(target=self._run, args=(name, cancel), name=f"sotto-download-{name}",
                                      daemon=True)
            self._jobs[name] = (thread, cancel)
        thread.start()
        return True

    def cancel(self, name: str) -> None:
        """Stop a download; the partial file is kept so the next start resumes."""
        job = self._jobs.get(name)
        if job is not None:
            job[1].set()

    def active(self) -> list[str]:
        """Models downloading now."""
        with self._lock:
            return [n for n, (t, _) in self._jobs.items() if t.is_alive()]

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel every download and wait for the threads."""
        with self._lock:
            jobs = list(self._jobs.values())
        for _thread, cancel in jobs:
            cancel.set()
        for thread, _ in jobs:
            thread.join(timeout)

    def _run(self, name: str, cancel: threading.Event) -> None:
        def report(fname: str, p: DownloadProgress) -> None:
            total = f" of {p.total / 1e6:.0f} MB" if p.total else ""
            speed = f", {p.bytes_per_s / 1e6:.1f} MB/s" if p.bytes_per_s else ""
            self.progress.emit(name, p.fraction, f"{fname}: {p.done / 1e6:.0f} MB{total}{speed}")

        try:
            path = self.store.download(name, report, cancel)
        except DownloadCancelled:
            signal, args = self.failed, (name, "")
        except SottoError as exc:
            signal, args = self.failed, (name, str(exc))
        except Exception as exc:  # network stacks raise all sorts; say it plainly
            signal, args = self.failed, (name, f"The download of {name} failed ({exc}); try again to resume it.")
        else:
            signal, args = self.finished, (name, str(path))
        # the job is over before it says so: a Download clicked as soon as a cancel is shown starts at once
        # (the thread used to be still alive then, under load, and the click was ignored)
        with self._lock:
            if self._jobs.get(name, (None,))[0] is threading.current_thread():
                del self._jobs[name]
        signal.emit(*args)
