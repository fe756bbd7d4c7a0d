"""A preallocated, trimmable audio window (no growing appends in the hot loop)."""

from __future__ import annotations

import numpy as np

from .convert import SAMPLE_RATE


class AudioWindow:
    """The audio the recogniser re-decodes: append at the end, trim at the front.

    ``offset`` is the absolute time (seconds since stream start) of the first
    sample held. Storage is one preallocated array; trimming moves the kept tail
    to the front, which happens once per committed sentence, not per chunk.
    """

    def __init__(self, capacity_s: float) -> None:
        self._data = np.zeros(int(capacity_s * SAMPLE_RATE), dtype=np.float32)
        self._len = 0
        self.offset = 0.0

    @property
    def capacity(self) -> int:
        """Samples the window can hold."""
        return self._data.shape[0]

    @property
    def seconds(self) -> float:
        """Duration held."""
        return self._len / SAMPLE_RATE

    @property
    def end_time(self) -> float:
        """Absolute time of the end of the held audio."""
        return self.offset + self.seconds

    @property
    def free(self) -> int:
        """Samples that can still be appended."""
        return self.capacity - self._len

    def append(self, samples: np.ndarray) -> None:
        """Append samples (must fit: check :attr:`free` first)."""
        n = samples.shape[0]
        if n > self.free:
            raise ValueError(f"audio window overflow: {n} samples, {self.free} free")
        self._data[self._len:self._len + n] = samples
        self._len += n

    def view(self) -> np.ndarray:
        """The held audio (a view; copy it before the next trim)."""
        return self._data[:self._len]

    def trim_to(self, time: float) -> None:
        """Drop audio before absolute ``time``."""
        cut = int(round((time - self.offset) * SAMPLE_RATE))
        if cut <= 0:
            return
        cut = min(cut, self._len)
        keep = self._len - cut
        self._data[:keep] = self._data[cut:self._len]
        self._len = keep
        self.offset += cut / SAMPLE_RATE

    def clear(self, time: float) -> None:
        """Empty the window; the next sample appended is at absolute ``time``."""
        self._len = 0
        self.offset = time
