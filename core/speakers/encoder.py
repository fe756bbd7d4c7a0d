"""The GE2E voice encoder (Resemblyzer's weights) run in numpy: a 3-layer LSTM over 40-band mel
frames, a linear layer and a ReLU, L2-normalised to a 256-d voice embedding.

As Resemblyzer embeds an utterance, the audio is cut into partial windows of 160 frames (1.6 s) at
``rate`` windows a second, each window is embedded, and the mean embedding is normalised again.
Resemblyzer's default rate is 1.3 (windows overlap); the minimum, 0.625, tiles the audio without
overlap and halves the work, and ``max_windows`` spreads at most that many windows over a long line,
so the cost per line is bounded. A line shorter than one window is embedded from its own frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .mel import HOP, SAMPLE_RATE, mel_frames

WINDOW_FRAMES = 160  # 1.6 s per partial window, as trained
HIDDEN = 256
LAYERS = 3
WEIGHT_NAMES = tuple(f"lstm.{w}_l{i}" for i in range(LAYERS) for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
                     ) + ("linear.weight", "linear.bias")
_NORM_TARGET_DBFS = -30.0  # Resemblyzer raises quieter audio to this level before embedding


@dataclass(frozen=True)
class EncoderOptions:
    """How a stretch of audio is cut into the encoder's partial windows."""

    rate: float = 0.625  # windows per second (0.625 = back to back; Resemblyzer's default is 1.3)
    min_coverage: float = 0.75  # a last window less full than this is dropped (unless it is the only one)
    max_windows: int = 4  # at most this many windows per embedding, spread evenly (0: no limit)


def partial_windows(n_samples: int, rate: float, min_coverage: float) -> list[tuple[int, int]]:
    """Frame ranges (start, stop) of the partial windows over ``n_samples`` (Resemblyzer's
    ``compute_partial_slices``); the audio is zero-padded up to the last window's end."""
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = max(1, min(WINDOW_FRAMES, int(np.round(SAMPLE_RATE / rate / HOP))))
    windows = [(i, i + WINDOW_FRAMES) for i in range(0, max(1, n_frames - WINDOW_FRAMES + step + 1), step)]
    start = windows[-1][0] * HOP
    coverage = (n_samples - start) / (WINDOW_FRAMES * HOP)
    if coverage < min_coverage and len(windows) > 1:
        windows.pop()
    return windows


class VoiceEncoder:
    """Voice embeddings from the GE2E weights (a dict of float32 arrays named as in the checkpoint)."""

    def __init__(self, weights: dict[str, np.ndarray], options: EncoderOptions | None = None) -> None:
        missing = [n for n in WEIGHT_NAMES if n not in weights]
        if missing:
            raise ValueError(f"the voice encoder weights lack {', '.join(missing)}")
        self.options = options or EncoderOptions()
        f32 = {n: np.ascontiguousarray(weights[n], dtype=np.float32) for n in WEIGHT_NAMES}
        # The cell-candidate gate's rows doubled: one sigmoid over all four gates serves, tanh(x) = 2 sigmoid(2x) - 1.
        scale = np.ones((4 * HIDDEN, 1), np.float32)
        scale[2 * HIDDEN:3 * HIDDEN] = 2.0
        self._layers = [((f32[f"lstm.weight_ih_l{i}"] * scale).T.copy(), (f32[f"lstm.weight_hh_l{i}"] * scale).T.copy(),
                         (f32[f"lstm.bias_ih_l{i}"] + f32[f"lstm.bias_hh_l{i}"]) * scale[:, 0]) for i in range(LAYERS)]
        self._linear = (f32["linear.weight"].T.copy(), f32["linear.bias"])

    @classmethod
    def load(cls, path: Path, options: EncoderOptions | None = None) -> VoiceEncoder:
        """The encoder from a converted ``.npz`` (see :mod:`core.speakers.model`)."""
        with np.load(path) as data:
            return cls({n: data[n] for n in data.files}, options)

    def forward(self, mels: np.ndarray) -> np.ndarray:
        """Embeddings (batch, 256), each L2-normalised, of mel windows (batch, frames, 40)."""
        x = np.asarray(mels, dtype=np.float32)
        batch, steps, _ = x.shape
        h = np.zeros((batch, HIDDEN), np.float32)
        for w_ih, w_hh, bias in self._layers:
            # einsum without optimize is numpy's own loop, not BLAS: products this small cost many times more on
            # BLAS threads (they wake, share a few microseconds of work, and contend with the speech models), and
            # one BLAS thread cannot be asked for here without changing the speech models' features.
            projected = np.einsum("btk,kn->btn", x, w_ih) + bias  # the layer's input, every frame at once
            h = np.zeros((batch, HIDDEN), np.float32)
            c = np.zeros((batch, HIDDEN), np.float32)
            out = np.empty((batch, steps, HIDDEN), np.float32)
            for t in range(steps):
                gates = projected[:, t] + np.einsum("bk,kn->bn", h, w_hh)
                np.tanh(gates * 0.5, out=gates)  # sigmoid(x) = (tanh(x / 2) + 1) / 2, without overflow
                gates += 1.0
                gates *= 0.5
                i, f, g, o = np.split(gates, 4, axis=1)  # PyTorch's gate order: input, forget, cell candidate, output
                c = f * c + i * (2.0 * g - 1.0)
                h = o * np.tanh(c)
                out[:, t] = h
            x = out
        raw = np.maximum(np.einsum("bk,kn->bn", h, self._linear[0]) + self._linear[1], 0.0)
        return raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)

    def window_mels(self, wav: np.ndarray) -> np.ndarray:
        """The mel windows (n, frames, 40) the embedding of ``wav`` is made of: 160 frames each, except that
        audio shorter than one window is one window of its own frames, not padded with silence (the
        encoder's cost follows the speech, and on real calls the label is as often right: sotto bench
        speakers)."""
        wav = _normalise_volume(np.asarray(wav, dtype=np.float32))
        if len(wav) < WINDOW_FRAMES * HOP:
            return mel_frames(wav)[None]
        opts = self.options
        windows = partial_windows(len(wav), opts.rate, opts.min_coverage)
        if opts.max_windows and len(windows) > opts.max_windows:
            pick = np.linspace(0, len(windows) - 1, opts.max_windows).round().astype(int)
            windows = [windows[i] for i in pick]
        end = windows[-1][1] * HOP
        if end >= len(wav):
            wav = np.pad(wav, (0, end - len(wav)))
        mel = mel_frames(wav)
        return np.stack([mel[a:b] for a, b in windows])

    def embed(self, wav: np.ndarray) -> np.ndarray:
        """The voice embedding (256,) of mono 16 kHz audio: the normalised mean of its windows'."""
        mean = self.forward(self.window_mels(wav)).mean(axis=0)
        return mean / max(float(np.linalg.norm(mean)), 1e-12)


def _normalise_volume(wav: np.ndarray) -> np.ndarray:
    """Raise quiet audio to -30 dBFS (never lower it), as the encoder's training audio was."""
    rms = float(np.sqrt(np.mean(np.square(wav, dtype=np.float64)))) if len(wav) else 0.0
    if rms <= 0.0:
        return wav
    change = _NORM_TARGET_DBFS - 20 * np.log10(rms)
    return wav * np.float32(10 ** (change / 20)) if change > 0 else wav
