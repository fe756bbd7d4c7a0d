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

    def start(self, name: str) -> bool:
        """Download ``name`` (resuming a partial one); False if it is already downloading."""
        if name in self._jobs and self._jobs[name][0].is_alive():
            return False
        cancel = threading.Event()
        thread = threading.Thread(target=self._run, args=(name, cancel), name=f"sotto-download-{name}", daemon=True)
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
        return [n for n, (t, _) in self._jobs.items() if t.is_alive()]

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel every download and wait for the threads."""
        for _thread, cancel in self._jobs.values():
            cancel.set()
        for thread, _ in self._jobs.values():
            thread.join(timeout)

    def _run(self, name: str, cancel: threading.Event) -> None:
        def report(fname: str, p: DownloadProgress) -> None:
            total = f" of {p.total / 1e6:.0f} MB" if p.total else ""
            speed = f", {p.bytes_per_s / 1e6:.1f} MB/s" if p.bytes_per_s else ""
            self.progress.emit(name, p.fraction, f"{fname}: {p.done / 1e6:.0f} MB{total}{speed}")

        try:
            path = self.store.download(name, report, cancel)
        except DownloadCancelled:
            self.failed.emit(name, "")
        except SottoError as exc:
            self.failed.emit(name, str(exc))
        except Exception as exc:  # network stacks raise all sorts; say it plainly
            self.failed.emit(name, f"The download of {name} failed ({exc}); try again to resume it.")
        else:
            self.finished.emit(name, str(path))
