"""A live input level meter for the settings panel (no Qt)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import numpy as np

from .. import logger
from ..errors import AudioError
from ..threads import WorkerThread
from .sources import AudioSource, open_source

SILENCE_DB = -90.0


def level_dbfs(samples: np.ndarray) -> float:
    """RMS level of ``samples`` in dB relative to full scale (``SILENCE_DB`` for silence)."""
    if samples.size == 0:
        return SILENCE_DB
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return max(SILENCE_DB, 20.0 * math.log10(rms)) if rms > 0 else SILENCE_DB


class LevelMonitor:
    """Opens a live source and reports its level about ``rate`` times a second on its own thread.

    ``spec`` is a live source as :func:`~core.audio.sources.open_source` takes it: ``mic``,
    ``mic:DEVICE``, ``system`` or ``system:OUTPUT``; a bare device name means that microphone.

    ``on_level(dbfs)`` gets each reading; ``on_error(message)`` gets a plain
    sentence if the device cannot be opened or stops (the thread then ends).
    """

    def __init__(
        self,
        spec: str,
        on_level: Callable[[float], None],
        on_error: Callable[[str], None],
        rate: float = 15.0,
    ) -> None:
        self._spec = spec if spec.startswith(("mic", "system")) else f"mic:{spec}"
        self._on_level = on_level
        self._on_error = on_error
        self._interval = 1.0 / rate
        self._stop = threading.Event()
        self._source: AudioSource | None = None
        self._thread = WorkerThread("sotto-level", self._loop)

    def _loop(self) -> None:
        try:
            self._source = open_source(self._spec)
            if self._stop.is_set():
                return
            self._source.start()
            while not self._stop.is_set():
                chunk = self._source.read(self._interval, timeout=1.0)
                if chunk is None:
                    return
                self._on_level(level_dbfs(chunk))
        except AudioError as exc:
            if not self._stop.is_set():
                self._on_error(str(exc))
        except Exception as exc:  # PortAudio errors of every kind: say so, never crash the UI
            logger.exception("level meter failed")
            if not self._stop.is_set():
                self._on_error(f"The level meter could not read the input ({exc}).")
        finally:
            if self._source is not None:
                self._source.stop()

    def stop(self, timeout: float | None = 2.0) -> None:
        """Close the device and end the thread."""
        self._stop.set()
        if self._source is not None:
            self._source.interrupt()  # the thread closes the stream itself
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.alive
