"""A bounded, thread-safe ring buffer of float32 samples.

Writers never block: when the reader lags by more than the capacity, the oldest
samples are overwritten and counted in :attr:`RingBuffer.overflows` (the newest
audio always wins). Readers wait on a condition, not a sleep.
"""

from __future__ import annotations

import threading

import numpy as np


class RingBuffer:
    """Fixed-capacity sample FIFO with overwrite-oldest semantics."""

    def __init__(self, capacity: int) -> None:
        self._data = np.zeros(capacity, dtype=np.float32)
        self._capacity = capacity
        self._start = 0  # index of the oldest unread sample
        self._size = 0
        self._cond = threading.Condition()
        self._closed = False
        self.overflows = 0  # times the writer overwrote unread audio
        self.dropped_samples = 0
        self.total_written = 0

    @property
    def capacity(self) -> int:
        """Maximum number of unread samples held."""
        return self._capacity

    def __len__(self) -> int:
        with self._cond:
            return self._size

    def write(self, samples: np.ndarray) -> None:
        """Append samples; overwrite the oldest unread ones if full."""
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        n = samples.shape[0]
        if n == 0:
            return
        with self._cond:
            self.total_written += n
            if n >= self._capacity:
                dropped = self._size + n - self._capacity
                samples = samples[-self._capacity:]
                n = self._capacity
                self._start = 0
                self._size = 0
                self._record_drop(dropped)
            free = self._capacity - self._size
            if n > free:
                over = n - free
                self._start = (self._start + over) % self._capacity
                self._size -= over
                self._record_drop(over)
            end = (self._start + self._size) % self._capacity
            first = min(n, self._capacity - end)
            self._data[end:end + first] = samples[:first]
            if first < n:
                self._data[: n - first] = samples[first:]
            self._size += n
            self._cond.notify_all()

    def _record_drop(self, count: int) -> None:
        if count > 0:
            self.overflows += 1
            self.dropped_samples += count

    def read(self, max_samples: int | None = None) -> np.ndarray:
        """Remove and return up to ``max_samples`` (default: all) unread samples."""
        with self._cond:
            return self._read_locked(max_samples)

    def _read_locked(self, max_samples: int | None) -> np.ndarray:
        n = self._size if max_samples is None else min(max_samples, self._size)
        out = np.empty(n, dtype=np.float32)
        first = min(n, self._capacity - self._start)
        out[:first] = self._data[self._start:self._start + first]
        if first < n:
            out[first:] = self._data[: n - first]
        self._start = (self._start + n) % self._capacity
        self._size -= n
        return out

    def wait_read(self, min_samples: int, timeout: float | None = None) -> np.ndarray | None:
        """Block until ``min_samples`` are unread (or closed), then return all unread.

        Returns None on timeout with nothing to read; after :meth:`close`, returns
        what is left (possibly empty).
        """
        with self._cond:
            ok = self._cond.wait_for(lambda: self._size >= min_samples or self._closed, timeout)
            if not ok and self._size == 0:
                return None
            return self._read_locked(None)

    def close(self) -> None:
        """Wake readers for good: no more writes are coming."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed
