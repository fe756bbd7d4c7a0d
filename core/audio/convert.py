"""Audio into Sotto's one format, mono float32 at 16 kHz: one channel chosen from several, and any
rate resampled to 16 kHz.

Every source (microphone, file, system audio, the macOS tap) goes through these two steps, so
``left``, ``right`` and ``mix`` mean the same everywhere and every live source resamples alike.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16000
CHANNELS = ("mix", "left", "right")  # what ``channel`` may be


def downmix(frames: np.ndarray, channel: str = "mix") -> np.ndarray:
    """Mono float32 from ``frames`` (``(n, channels)`` or already mono ``(n,)``).

    ``channel`` is ``mix`` (the mean of all channels), ``left`` or ``right``;
    audio with one channel gives that channel whatever is asked.
    """
    data = np.asarray(frames, dtype=np.float32)
    if data.ndim == 1:
        return data
    if data.ndim != 2:
        raise ValueError(f"audio frames must be 1- or 2-dimensional, not {data.ndim}-dimensional")
    if data.shape[1] == 1:
        return np.ascontiguousarray(data[:, 0])
    if channel == "left":
        return np.ascontiguousarray(data[:, 0])
    if channel == "right":
        return np.ascontiguousarray(data[:, 1])
    return data.mean(axis=1, dtype=np.float32)


class To16k:
    """Mono float32 at ``rate`` to 16 kHz, chunk after chunk of one stream (PyAV's resampler,
    which keeps its filter state between chunks); audio at 16 kHz passes unchanged."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._resampler = None

    def __call__(self, mono: np.ndarray) -> np.ndarray:
        if self.rate == SAMPLE_RATE or mono.size == 0:
            return mono
        import av

        if self._resampler is None:
            self._resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(mono, dtype=np.float32).reshape(1, -1),
                                           format="flt", layout="mono")
        frame.sample_rate = self.rate
        out = [f.to_ndarray().reshape(-1) for f in self._resampler.resample(frame)]
        return np.concatenate(out).astype(np.float32) if out else np.zeros(0, dtype=np.float32)
