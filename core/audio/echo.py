"""Echo gate: keep what the speakers play out of the microphone's captions.

On laptop speakers the microphone hears the meeting too; captioning both
streams would caption "them" a second time as "me". :class:`EchoGate` compares
the microphone with what the computer played (the system audio, the
*reference*) frame by frame (20 ms energies): it finds the delay from the
speakers to the microphone (the lag where the two energy envelopes correlate
best), estimates the echo's gain (how loud the speakers are in the
microphone), and silences microphone frames whose energy the echo explains.
Where the user speaks over the others (double talk) the microphone carries
more energy than the echo can explain over the last 200 ms: nothing is
silenced then, nor for 300 ms after (the speech model copes with an echo
under the user's voice much better than with speech cut into pieces). With headphones there is no echo
path: the gain is tiny and nothing the user says is touched.

The gate works on energies, not samples (an adaptive echo canceller in Python
would cost more CPU than the speech model): silenced frames become silence,
which the voice activity detector then drops before the model, so echoes cost
no decoding either. :class:`ReferenceTap` and :class:`EchoGatedSource` wrap
the two sources so the pipeline reads them like any other.
"""

from __future__ import annotations

import numpy as np

from .convert import SAMPLE_RATE

FRAME_S = 0.02
HISTORY_S = 12.0  # envelope history kept for the lag and gain estimates
MAX_LAG_S = 0.6  # the microphone may hear the speakers up to this late in the streams' own clocks ...
MAX_LEAD_S = 2.5  # ... or this early: system audio reaches Sotto later than the microphone (capture latency;
#                   a PulseAudio monitor that was idle delivers its first sound 1.5–2 s late)
MAX_HOLD_S = 2.8  # microphone audio waits at most this long for the system audio it is compared with
ACTIVE_DB = -55.0  # reference frames quieter than this play nothing
MARGIN = 2.0  # a frame is echo when its energy is at most MARGIN × the echo estimate (3 dB)
TALK_FRAMES = 10  # double talk is judged over the last 200 ms ...
TALK_RATIO = 3.0  # ... the user speaks when the microphone has 5 dB more energy than the echo explains
HANGOVER = 15  # and is taken to go on speaking for 300 ms after
GAIN_PERCENTILE = 10  # the echo gain: a low percentile of microphone / reference energy (pauses in double talk count)
ESTIMATE_FRAMES = 50  # the lag and gain are estimated from at least 1 s of microphone audio
SPREAD = (-1, 1)  # reference frames around the lag that may still ring in the room (40 ms before, 80 ms after)


class _Envelope:
    """Frame energies of a stream, indexed by frame number since its start; a bounded history."""

    def __init__(self, frame: int, history: int) -> None:
        self.frame = frame
        self.history = history
        self.energy = np.zeros(0, dtype=np.float64)
        self.first = 0  # frame number of energy[0]
        self._rest = np.zeros(0, dtype=np.float32)  # samples of an unfinished frame

    @property
    def end(self) -> int:
        """Frame number after the last complete frame."""
        return self.first + self.energy.size

    def add(self, samples: np.ndarray) -> np.ndarray:
        """Append samples; returns the energies of the frames they completed."""
        data = np.concatenate([self._rest, samples]) if self._rest.size else samples
        n = data.size // self.frame
        self._rest = data[n * self.frame:].copy()
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        frames = data[: n * self.frame].reshape(n, self.frame).astype(np.float64)
        energies = np.mean(frames * frames, axis=1)
        self.energy = np.concatenate([self.energy, energies])
        if self.energy.size > self.history:
            drop = self.energy.size - self.history
            self.energy = self.energy[drop:]
            self.first += drop
        return energies

    def at(self, frames: np.ndarray) -> np.ndarray:
        """Energies of the given frame numbers (0 where outside the history)."""
        idx = frames - self.first
        ok = (idx >= 0) & (idx < self.energy.size)
        out = np.zeros(frames.shape, dtype=np.float64)
        out[ok] = self.energy[idx[ok]]
        return out


class EchoGate:
    """Silences microphone frames that are the speakers' echo (see the module docstring)."""

    def __init__(self, rate: int = SAMPLE_RATE) -> None:
        self.frame = int(FRAME_S * rate)
        history = int(HISTORY_S / FRAME_S)
        self._reference = _Envelope(self.frame, history)
        self._mic = _Envelope(self.frame, history)
        self._max_lag = int(MAX_LAG_S / FRAME_S)
        self._max_lead = int(MAX_LEAD_S / FRAME_S)
        self._max_hold = int(MAX_HOLD_S / FRAME_S)
        self._active = 10.0 ** (ACTIVE_DB / 10.0)
        self.lag = 0  # frames from the speakers to the microphone
        self.gain = 0.0  # echo energy per reference energy
        self.gated_seconds = 0.0  # microphone audio silenced as echo
        self._held = np.zeros(0, dtype=np.float32)  # microphone samples not given out yet
        self._next = 0  # frame number of the first held sample
        self._estimated = False  # a lag and gain have been found from sound the speakers played

    def reference(self, samples: np.ndarray) -> None:
        """What the speakers played next (the system stream, in order)."""
        self._reference.add(np.asarray(samples, dtype=np.float32).reshape(-1))

    def filter(self, samples: np.ndarray) -> np.ndarray:
        """The microphone's audio with the echo frames silenced, as far as it can be judged: a frame
        is given out once the system audio it is compared with has arrived, and, once the speakers
        have played, the echo's lag and gain are known (or after :data:`MAX_HOLD_S`); the rest is
        held for the next call."""
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        self._mic.add(samples)
        self._held = np.concatenate([self._held, samples]) if self._held.size else samples.copy()
        self._estimate()
        lo, _ = SPREAD
        ready = min(self._mic.end, self._reference.end + self.lag + lo)  # frames whose reference is there
        if self._mic.energy.size < ESTIMATE_FRAMES:  # too little heard to estimate the echo: wait for more
            ready = self._next
        elif not self._estimated and (self._reference.energy > self._active).any():
            # the speakers play, and the echo's lag and gain are not known yet (the two streams have too
            # little sound in common so far): judged now, their first word would pass as the user's
            ready = self._next
        ready = max(ready, self._mic.end - self._max_hold)  # waited long enough: judged with what there is
        if ready <= self._next:
            return np.zeros(0, dtype=np.float32)
        frames = np.arange(self._next, ready)
        echo = self._is_echo(frames, self._mic.at(frames))
        out = self._held[: frames.size * self.frame].copy()
        self._held = self._held[frames.size * self.frame:]
        self._next = ready
        for i in np.flatnonzero(echo):
            out[i * self.frame:(i + 1) * self.frame] = 0.0
        self.gated_seconds += echo.sum() * FRAME_S
        return out

    # -- estimates -------------------------------------------------------------------------
    def _estimate(self) -> None:
        """Lag: where the log-energy envelopes correlate best; gain: a low percentile of the
        microphone/reference ratio where the reference plays (echo-only frames give the lowest)."""
        mic, ref = self._mic, self._reference
        n = min(mic.energy.size, 250)  # the last 5 s
        if n < ESTIMATE_FRAMES:
            return
        frames = np.arange(mic.end - n, mic.end)
        m = np.log10(mic.at(frames) + 1e-10)
        best, best_corr = self.lag, -1.0
        for lag in range(-self._max_lead, self._max_lag + 1):
            r_raw = ref.at(frames - lag)
            active = r_raw > self._active
            if active.sum() < 25:
                continue
            r = np.log10(r_raw + 1e-10)
            mc, rc = m[active] - m[active].mean(), r[active] - r[active].mean()
            denom = np.sqrt((mc * mc).sum() * (rc * rc).sum())
            corr = float((mc * rc).sum() / denom) if denom > 0 else 0.0
            if corr > best_corr:
                best, best_corr = lag, corr
        if best_corr < 0:
            return
        self._estimated = True
        self.lag = best
        r_raw = ref.at(frames - best)
        active = r_raw > self._active
        ratios = mic.at(frames)[active] / r_raw[active]
        self.gain = float(np.percentile(ratios, GAIN_PERCENTILE)) if ratios.size else self.gain

    def _predicted(self, frames: np.ndarray) -> np.ndarray:
        """The echo energy the reference explains at these microphone frames."""
        lo, hi = SPREAD
        ringing = np.max([self._reference.at(frames - self.lag - d) for d in range(lo, hi + 1)], axis=0)
        return self.gain * ringing

    def _is_echo(self, frames: np.ndarray, energies: np.ndarray) -> np.ndarray:
        predicted = self._predicted(frames)
        # double talk: over a trailing window the microphone holds clearly more than the echo explains
        back = TALK_FRAMES + HANGOVER
        span = np.arange(frames[0] - back, frames[-1] + 1)
        mic = self._mic.at(span)
        echo = self._predicted(span)
        window = np.ones(TALK_FRAMES)
        talking = np.convolve(mic, window)[: span.size] > TALK_RATIO * np.convolve(echo, window)[: span.size]
        talking &= np.convolve(mic, window)[: span.size] > self._active * TALK_FRAMES
        held = np.convolve(talking.astype(float), np.ones(HANGOVER + 1))[: span.size] > 0
        held = held[back:]
        return (predicted > self.gain * self._active) & (energies <= MARGIN * predicted) & ~held


class _Wrapper:
    """A source that passes through another one (start, stop, interrupt, duration, overflows are its own)."""

    def __init__(self, source, gate: EchoGate) -> None:
        self.source = source
        self.gate = gate
        self.name = source.name

    def __getattr__(self, name: str):
        return getattr(self.source, name)


class ReferenceTap(_Wrapper):
    """A source whose audio also feeds an :class:`EchoGate` as the reference (the system audio)."""

    def read(self, min_seconds: float, timeout: float | None = None) -> np.ndarray | None:
        """The wrapped source's next audio, also handed to the gate."""
        chunk = self.source.read(min_seconds, timeout)
        if chunk is not None and chunk.size:
            self.gate.reference(chunk)
        return chunk


class EchoGatedSource(_Wrapper):
    """A source (the microphone) whose audio passes an :class:`EchoGate` before anyone hears it."""

    def read(self, min_seconds: float, timeout: float | None = None) -> np.ndarray | None:
        """The wrapped source's next audio with the speakers' echo silenced."""
        chunk = self.source.read(min_seconds, timeout)
        if chunk is None or chunk.size == 0:
            return chunk
        return self.gate.filter(chunk)
