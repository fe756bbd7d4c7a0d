"""Streaming voice activity detection with faster-whisper's bundled Silero VAD.

The model ships inside faster-whisper (no download). :class:`VoiceActivityDetector`
keeps the LSTM state and the 64-sample context between calls, so audio can be
fed in chunks of any size; it reports per-window speech probabilities and
speech start/end events with hysteresis and a minimum silence.

Silero hears speech by its level as well as its shape: a quiet voice (a far microphone, a remote
participant at low volume, a voice under low rumble) gives it no speech at all, although Whisper hears
it well. So the detector listens to the audio through :class:`VadInput` (a rumble filter and a level
that raises a quiet voice), and only the detector does: the speech models get the audio
as it came.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .convert import SAMPLE_RATE

WINDOW = 512  # samples per Silero window (32 ms)
CONTEXT = 64


@dataclass
class VadOptions:
    """Thresholds: speech starts at ``threshold``; ends after ``min_silence_s`` below ``threshold - 0.15``.
    ``level``: the detector hears the audio through :class:`VadInput` (off: as it came)."""

    threshold: float = 0.5
    min_silence_s: float = 0.8
    min_speech_s: float = 0.25
    level: bool = True


HIGH_PASS_HZ = 100.0  # rumble, handling noise and hum lie below; the voice's fundamental mostly above
HIGH_PASS_TAPS = 640  # 40 ms: the filter's impulse response has decayed below 1e-7 by then
# A voice whose loudest windows reach LOUD_DBFS is heard as it came (the detector's decisions on ordinary
# recordings stay as they were); a quieter one is raised to it. Raising more than needed costs: Silero's
# state follows the level, so noise raised in a pause makes the next words' onset look weaker.
LOUD_DBFS = -30.0
MAX_GAIN_DB = 30.0  # at most this much louder: a noise floor at -80 dBFS stays at -50
RELEASE_DB_PER_S = 3.0  # how fast the loudest level forgets a loud sound


def _high_pass_response(cutoff_hz: float = HIGH_PASS_HZ, taps: int = HIGH_PASS_TAPS) -> np.ndarray:
    """The impulse response of a 2nd-order Butterworth high-pass (the audio-EQ cookbook's biquad), cut where
    it has decayed: applied by convolution it is the recursive filter, causal, without a linear-phase delay."""
    w0 = 2.0 * np.pi * cutoff_hz / SAMPLE_RATE
    alpha = np.sin(w0) / np.sqrt(2.0)  # Q = 1/sqrt(2)
    cos = np.cos(w0)
    b = np.array([(1 + cos) / 2, -(1 + cos), (1 + cos) / 2]) / (1 + alpha)
    a1, a2 = -2 * cos / (1 + alpha), (1 - alpha) / (1 + alpha)
    h = np.zeros(taps)
    x1 = x2 = y1 = y2 = 0.0
    for n in range(taps):
        x0 = 1.0 if n == 0 else 0.0
        y0 = b[0] * x0 + b[1] * x1 + b[2] * x2 - a1 * y1 - a2 * y2
        h[n], x2, x1, y2, y1 = y0, x1, x0, y1, y0
    return h.astype(np.float32)


class VadInput:
    """What the detector hears: the audio without its rumble (below ``HIGH_PASS_HZ``), each 32 ms window
    brought up so that the loudest window of the last seconds sits at ``LOUD_DBFS`` (at most ``MAX_GAIN_DB``
    louder, never quieter). The loudest level follows a louder window at once and forgets it at
    ``RELEASE_DB_PER_S``; a stream starts as if a voice at ``LOUD_DBFS`` had just been heard, so its first
    seconds are heard as they came and a quiet voice is raised within a few seconds. Chunks of any size
    give the same result."""

    def __init__(self) -> None:
        self._h = _high_pass_response()
        self._spectra: dict[int, np.ndarray] = {}
        self._release = 10.0 ** (-RELEASE_DB_PER_S * WINDOW / SAMPLE_RATE / 20.0)
        self._loud_target = 10.0 ** (LOUD_DBFS / 20.0)
        self._max_gain = 10.0 ** (MAX_GAIN_DB / 20.0)
        self.reset()

    def reset(self) -> None:
        self._history = np.zeros(len(self._h) - 1, dtype=np.float32)
        self._loud = self._loud_target
        # whether the loudest level is one heard in the stream, not the level it started from: until
        # then a quieter voice is still being raised, and its first words may go unheard
        self.heard = False

    def filter(self, chunk: np.ndarray) -> np.ndarray:
        """The chunk high-passed, the filter's state carried over from the chunks before."""
        if chunk.size == 0:
            return chunk
        taps = len(self._h)
        buf = np.concatenate([self._history, chunk])
        self._history = buf[-(taps - 1):].copy()
        size = 1 << int(np.ceil(np.log2(buf.size + taps - 1)))
        if size not in self._spectra:  # a few sizes at most: the chunks' lengths rounded up to powers of two
            self._spectra[size] = np.fft.rfft(self._h, size)
        spectrum = self._spectra[size]
        out = np.fft.irfft(np.fft.rfft(buf, size) * spectrum, size)[taps - 1:buf.size]
        return out.astype(np.float32)

    def gains(self, windows: np.ndarray) -> np.ndarray:
        """Each window's gain (rows of ``WINDOW`` filtered samples, in order), the level state carried over."""
        rms = np.sqrt(np.mean(np.square(windows, dtype=np.float64), axis=1))
        out = np.empty(len(rms), dtype=np.float32)
        loud, release, target, top = self._loud, self._release, self._loud_target, self._max_gain
        heard = self.heard
        for i, r in enumerate(rms.tolist()):
            loud = loud * release
            if r >= loud:
                loud, heard = r, True
            out[i] = min(top, max(1.0, target / loud))
        self._loud, self.heard = loud, heard
        return out


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
        self._input = VadInput() if self.options.level else None
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
        if self._input is not None:
            self._input.reset()

    def probabilities(self, chunk: np.ndarray) -> np.ndarray:
        """Speech probability for every complete 512-sample window (leftovers kept for next call)."""
        chunk = np.asarray(chunk, dtype=np.float32).reshape(-1)
        if self._input is not None:
            chunk = self._input.filter(chunk)
        audio = np.concatenate([self._pending, chunk])
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
        if self._input is not None:
            batch = np.clip(batch * self._input.gains(windows)[:, None], -1.0, 1.0)
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
    def raising(self) -> bool:
        """Whether a voice quieter than the stream's start is still being raised (:class:`VadInput`): its
        onset may have been missed, so the audio before a speech start is worth more than usual."""
        return self._input is not None and not self._input.heard

    @property
    def time(self) -> float:
        """Seconds of audio analysed so far."""
        return self._samples_done / SAMPLE_RATE
