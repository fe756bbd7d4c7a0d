"""Streaming voice activity detection with faster-whisper's bundled Silero VAD.

The model ships inside faster-whisper (no download). :class:`VoiceActivityDetector`
keeps the LSTM state and the 64-sample context between calls, so audio can be
fed in chunks of any size; it reports per-window speech probabilities and
speech start/end events with hysteresis and a minimum silence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .convert import SAMPLE_RATE

WINDOW = 512  # samples per Silero window (32 ms)
CONTEXT = 64


@dataclass
class VadOptions:
    """Thresholds: speech starts at ``threshold``; ends after ``min_silence_s`` below ``threshold - 0.15``."""

    threshold: float = 0.5
    min_silence_s: float = 0.8
    min_speech_s: float = 0.25


@dataclass
class VadEvent:
    """A speech boundary at ``time`` seconds since the detector started."""

    kind: str  # "start" or "end"
    time: float


def _silero_session():
    """faster-whisper's Silero VAD model in an ONNX Runtime session, with ONNX Runtime's runtime
    telemetry switch off as well (Windows' trace events; the Linux and macOS uploader is kept from
    starting by :mod:`core.privacy`, which must act before ONNX Runtime initializes)."""
    import onnxruntime
    from faster_whisper.vad import get_vad_model

    disable = getattr(onnxruntime, "disable_telemetry_events", None)
    if disable is not None:
        disable()
    return get_vad_model().session


class VoiceActivityDetector:
    """Chunk-by-chunk Silero VAD with state carried across calls."""

    def __init__(self, options: VadOptions | None = None) -> None:
        self.options = options or VadOptions()
        self._session = _silero_session()
        self.reset()

    def reset(self) -> None:
        """Forget all state (a new stream)."""
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)
        self._samples_done = 0
        self.in_speech = False
        self._speech_run = 0
        self._silence_run = 0
        self._candidate_start = 0.0
        self.last_speech_time = -1.0

    def probabilities(self, chunk: np.ndarray) -> np.ndarray:
        """Speech probability for every complete 512-sample window (leftovers kept for next call)."""
        audio = np.concatenate([self._pending, np.asarray(chunk, dtype=np.float32)])
        n = audio.shape[0] // WINDOW
        self._pending = audio[n * WINDOW:].copy()
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        windows = audio[: n * WINDOW].reshape(n, WINDOW)
        contexts = np.empty((n, CONTEXT), dtype=np.float32)
        contexts[0] = self._context
        if n > 1:
            contexts[1:] = windows[:-1, -CONTEXT:]
        self._context = windows[-1, -CONTEXT:].copy()
        batch = np.concatenate([contexts, windows], axis=1)
        out, self._h, self._c = self._session.run(None, {"input": batch, "h": self._h, "c": self._c})
        return np.asarray(out, dtype=np.float32).reshape(-1)

    def process(self, chunk: np.ndarray) -> list[VadEvent]:
        """Feed audio; returns the speech start/end events it completes."""
        probs = self.probabilities(chunk)
        events: list[VadEvent] = []
        opts = self.options
        win_s = WINDOW / SAMPLE_RATE
        min_speech = max(1, int(opts.min_speech_s / win_s))
        min_silence = max(1, int(opts.min_silence_s / win_s))
        for p in probs:
            t = self._samples_done / SAMPLE_RATE
            self._samples_done += WINDOW
            if p >= opts.threshold:
                self.last_speech_time = t + win_s
            if not self.in_speech:
                if p >= opts.threshold:
                    if self._speech_run == 0:
                        self._candidate_start = t
                    self._speech_run += 1
                    if self._speech_run >= min_speech:
                        self.in_speech = True
                        self._silence_run = 0
                        events.append(VadEvent("start", self._candidate_start))
                else:
                    self._speech_run = 0
            else:
                if p < opts.threshold - 0.15:
                    self._silence_run += 1
                    if self._silence_run >= min_silence:
                        self.in_speech = False
                        self._speech_run = 0
                        events.append(VadEvent("end", t + win_s - self._silence_run * win_s))
                else:
                    self._silence_run = 0
        return events

    @property
    def time(self) -> float:
        """Seconds of audio analysed so far."""
        return self._samples_done / SAMPLE_RATE
