"""The voice encoder's frontend: power mel frames of 16 kHz audio, in numpy.

It is the frontend Resemblyzer trained its GE2E encoder on (``librosa.feature.melspectrogram`` with
its defaults): a 400-point periodic Hann window (25 ms), a 160-sample hop (10 ms), the signal
centred (padded by half a window on each side, reflected), the power spectrum, and 40 Slaney mel
bands (librosa's ``htk=False``, ``norm="slaney"``: each triangle scaled to unit area in Hz). The
frames are not logged: the encoder was trained on the power mel values themselves.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40

_F_SP = 200.0 / 3  # Slaney: linear below 1 kHz at 200/3 Hz per mel
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP  # 15
_LOGSTEP = np.log(6.4) / 27.0  # log-spaced above 1 kHz: 27 mels per factor 6.4


def hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    """Slaney's mel scale (librosa's default, ``htk=False``)."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / _F_SP
    log = _MIN_LOG_MEL + np.log(np.maximum(hz, _MIN_LOG_HZ) / _MIN_LOG_HZ) / _LOGSTEP
    return np.where(hz >= _MIN_LOG_HZ, log, linear)


def mel_to_hz(mel: np.ndarray | float) -> np.ndarray:
    """The inverse of :func:`hz_to_mel`."""
    mel = np.asarray(mel, dtype=np.float64)
    linear = mel * _F_SP
    log = _MIN_LOG_HZ * np.exp(_LOGSTEP * (np.maximum(mel, _MIN_LOG_MEL) - _MIN_LOG_MEL))
    return np.where(mel >= _MIN_LOG_MEL, log, linear)


def mel_filterbank(sr: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """Triangular filters (n_mels, 1 + n_fft // 2) from 0 Hz to sr / 2, each of unit area (Slaney norm)."""
    fft_hz = np.linspace(0.0, sr / 2, 1 + n_fft // 2)
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_hz[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


_FILTERS = mel_filterbank()
_WINDOW = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)  # periodic Hann


def frame_count(n_samples: int) -> int:
    """How many mel frames :func:`mel_frames` gives for ``n_samples`` samples."""
    return 1 + n_samples // HOP


def mel_frames(wav: np.ndarray) -> np.ndarray:
    """Power mel frames (n_frames, 40) float32 of mono 16 kHz float audio."""
    wav = np.asarray(wav, dtype=np.float32)
    pad = N_FFT // 2
    mode = "reflect" if len(wav) > pad else "constant"
    padded = np.pad(wav, pad, mode=mode)
    n = frame_count(len(wav))
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:n]
    spectrum = np.fft.rfft(frames * _WINDOW, axis=1)
    power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
    return power @ _FILTERS.T
