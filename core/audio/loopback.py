"""System audio: capture what an output device plays (the meeting, the video), as a live source.

In a meeting most speech comes out of the speakers, not into the microphone.
:class:`SystemAudioSource` records the sound sent to an output device and
delivers it like :class:`~core.audio.sources.MicrophoneSource`: 16 kHz mono
float32 through ``read(min_seconds, timeout)``, all audio since the last read.

Backends, through the ``soundcard`` library (imported lazily, since on Linux it
connects to the sound server at import; its private parts are used in
:mod:`core.audio.soundcard_runner` only):

* Linux (PulseAudio, or PipeWire through pipewire-pulse): the output's monitor
  source (``<sink>.monitor``). A lost server connection is re-made on the next
  use, so a restarted sound server needs no restart of Sotto.
* Windows: WASAPI loopback of the speaker (COM is initialised on the capture
  thread; two channels are recorded and mixed down, as one-channel loopback
  returns garbage).
* macOS 14.2 and newer: a Core Audio process tap of every process's output,
  created by the helper program ``sotto-audiotap`` and read through
  :mod:`core.audio.macos_tap`; the tap is global, so there is one output, "All
  system audio". Older macOS: a clear error says how to route the sound instead.

Outputs deliver nothing while nothing plays (WASAPI loopback; PulseAudio's null
and virtual sinks). The source fills such gaps with silence at real-time rate,
so the pipeline's audio clock keeps pace with the wall clock.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from .. import logger
from ..errors import AudioDeviceError
from ..threads import WorkerThread
from .convert import SAMPLE_RATE, downmix
from .ringbuffer import RingBuffer
from .soundcard_runner import ComThread, PulseReader, load_soundcard, pulse_recorder

LIST_HINT = "`sotto devices` lists the outputs whose sound can be captured"

CAPTURE_CHANNELS = 2  # record stereo and mix down (WASAPI loopback in mono returns garbage)
GAP_TOLERANCE_S = 0.5  # no audio for longer than this is a gap, filled with silence
_READ_SLICE_S = 0.1  # how often a waiting read checks for gaps, errors and stops
_OPEN_TIMEOUT_S = 10.0
FOLLOW_CHECK_S = 1.0  # how often a capture of "the default output" checks whether the default changed


@dataclass(frozen=True)
class OutputDevice:
    """An output device whose sound can be captured."""

    name: str  # human-readable ("Built-in Audio Analog Stereo", "Speakers (Realtek Audio)")
    id: str  # the backend's id (PulseAudio sink name, WASAPI endpoint id)
    is_default: bool
    channels: int
    capture_id: str = ""  # what is recorded (the sink's monitor source on Linux; the endpoint id on Windows)


# -- pure logic (unit-tested on every system) -----------------------------------------------------

class GapFiller:
    """Silence owed to the audio clock while a device delivers nothing.

    The capture side reports every chunk with :meth:`audio`; the reading side
    asks :meth:`silence_due`. Once nothing has arrived for ``tolerance``
    seconds, all of the quiet time is owed as zeros, and from then on every
    bit of further quiet until audio comes back. Not thread-safe: callers hold
    one lock around both calls and the matching buffer writes.
    """

    def __init__(self, rate: int = SAMPLE_RATE, tolerance: float = GAP_TOLERANCE_S) -> None:
        self.rate = rate
        self.tolerance = tolerance
        self._last: float | None = None  # when audio (or owed silence) last reached this point
        self._in_gap = False
        self.filled = 0  # zeros owed so far (samples)

    def start(self, now: float) -> None:
        """The stream opened at ``now``: quiet from here on counts."""
        self._last = now
        self._in_gap = False

    def audio(self, samples: int, now: float) -> None:
        """``samples`` of real audio arrived at ``now``."""
        if samples > 0:
            self._last = now
            self._in_gap = False

    def silence_due(self, now: float) -> int:
        """Samples of silence to add now (0 while audio flows or within the tolerance)."""
        if self._last is None:
            return 0
        idle = now - self._last
        if idle <= 0 or (not self._in_gap and idle < self.tolerance):
            return 0
        samples = int(idle * self.rate)
        if samples <= 0:
            return 0
        self._in_gap = True
        self._last += samples / self.rate  # exact: no rounding drift over a long gap
        self.filled += samples
        return samples


def choose_output(devices: list[OutputDevice], spec: str | None) -> OutputDevice:
    """The output named by ``spec`` (id or name, exact first, then a case-insensitive part); default if empty."""
    if not devices:
        raise AudioDeviceError(
            "No audio output was found whose sound could be captured; check the sound settings."
        )
    if spec is None or not spec.strip():
        for dev in devices:
            if dev.is_default:
                return dev
        return devices[0]
    want = spec.strip()
    low = want.lower()
    for test in (
        lambda d: d.id == want,
        lambda d: d.name == want,
        lambda d: d.id.lower() == low or d.name.lower() == low,
        lambda d: low in d.name.lower() or low in d.id.lower(),
    ):
        for dev in devices:
            if test(dev):
                return dev
    raise AudioDeviceError(f"There is no audio output called '{spec}'; {LIST_HINT}.")


def pulse_outputs(sinks: list[tuple[str, str, int]], sources: set[str], default_sink: str | None) -> list[OutputDevice]:
    """Outputs from a PulseAudio listing: ``sinks`` as (id, description, channels), ``sources`` the source ids.

    A sink is capturable when its monitor source ``<id>.monitor`` exists.
    """
    out = []
    for sink_id, description, channels in sinks:
        monitor = f"{sink_id}.monitor"
        if monitor in sources:
            out.append(OutputDevice(description or sink_id, sink_id, sink_id == default_sink, channels, monitor))
    return out


def system_audio_unavailable() -> str | None:
    """Why system audio cannot be captured on this kind of system (a sentence), or None where it can."""
    if sys.platform == "darwin":
        from .macos_tap import unavailable_reason

        return unavailable_reason()
    if sys.platform.startswith("linux") or sys.platform == "win32":
        return None
    return f"Capturing system audio is not supported on this system ({sys.platform})."


# -- the soundcard library (Linux, Windows) ---------------------------------------------------------

def _soundcard():
    """The connected ``soundcard`` module (:func:`~core.audio.soundcard_runner.load_soundcard`), where
    this system can capture system audio through it; :class:`AudioDeviceError` otherwise."""
    reason = system_audio_unavailable()
    if reason:
        raise AudioDeviceError(reason)
    return load_soundcard()


def list_output_devices() -> list[OutputDevice]:
    """Outputs whose sound can be captured, the default marked (on macOS the one global tap, ``[]``
    where it cannot be used)."""
    if sys.platform == "darwin":
        if system_audio_unavailable():
            return []
        from .macos_tap import ALL_SYSTEM_AUDIO, TAP_ID

        return [OutputDevice(ALL_SYSTEM_AUDIO, TAP_ID, True, CAPTURE_CHANNELS, TAP_ID)]
    try:
        with ComThread():
            sc = _soundcard()
            if sys.platform == "win32":
                return _windows_outputs(sc)
            return _pulse_listing(sc)
    except AudioDeviceError:
        raise
    except Exception as exc:  # backend errors are RuntimeError, IndexError, AssertionError...
        logger.exception("listing audio outputs failed")
        raise AudioDeviceError(f"Could not list the audio outputs ({exc}).") from exc


def _pulse_listing(sc) -> list[OutputDevice]:
    speakers = sc.all_speakers()
    try:
        default = sc.default_speaker().id
    except Exception:  # no default sink (no outputs at all)
        default = None
    sources = {m.id for m in sc.all_microphones(include_loopback=True)}
    return pulse_outputs([(s.id, s.name, int(s.channels)) for s in speakers], sources, default)


def _windows_outputs(sc) -> list[OutputDevice]:
    try:
        default = sc.default_speaker().id
    except Exception:  # no default output endpoint
        default = None
    out = []
    for spk in sc.all_speakers():
        try:
            channels = int(spk.channels)
        except Exception:  # an unusual format blob: loopback still records the mix format
            channels = CAPTURE_CHANNELS
        out.append(OutputDevice(spk.name, spk.id, spk.id == default, channels, spk.id))
    return out


# -- the source -------------------------------------------------------------------------------------

class SystemAudioSource:
    """What an output device plays (default: the default output), as 16 kHz mono in a bounded ring buffer.

    ``device`` names the output (id, name or part of the name, as
    :func:`list_output_devices` shows them). The capture runs on its own
    thread; gaps where the output delivers nothing are filled with silence.

    Without ``device`` the source follows the default output: when the user
    switches it (headphones plugged in, another output chosen) or the output in
    use goes away while another is the default, capture moves to the new default
    within about :data:`FOLLOW_CHECK_S`; the gap is silence, so the audio clock
    keeps pace. A named output that goes away ends the capture with one sentence.
    """

    def __init__(self, device: str | None = None, channel: str = "mix", buffer_seconds: float = 30.0,
                 gap_tolerance: float = GAP_TOLERANCE_S) -> None:
        reason = system_audio_unavailable()
        if reason:
            raise AudioDeviceError(reason)
        self.device = choose_output(list_output_devices(), device)
        self.follow_default = device is None
        self.name = f"System audio ({self.device.name})"
        self.switches = 0  # times the capture moved to a new default output
        self.channel = channel
        self._ring = RingBuffer(int(buffer_seconds * SAMPLE_RATE))
        self._gaps = GapFiller(SAMPLE_RATE, gap_tolerance)
        self._clock_lock = threading.Lock()  # one writer at a time, and the gap clock with it
        self._stopped = threading.Event()
        self._ready = threading.Event()
        self._error: str | None = None
        self._opened = False  # the capture delivered its first audio path; later errors come through read()
        self._thread: WorkerThread | None = None
        self.samples_captured = 0  # real audio delivered by the device
        self.chunks = 0

    @property
    def duration(self) -> None:
        """A live stream has no known length."""
        return None

    @property
    def overflows(self) -> int:
        """Times the reader fell so far behind that the oldest audio was overwritten."""
        return self._ring.overflows

    @property
    def silence_filled(self) -> float:
        """Seconds of silence added for gaps where the output delivered nothing."""
        return self._gaps.filled / SAMPLE_RATE

    def start(self) -> None:
        """Open the capture on its own thread; raises :class:`AudioDeviceError` if it cannot open."""
        if self._thread is not None:
            return
        self._thread = WorkerThread("sotto-system-audio", self._capture)
        if not self._ready.wait(_OPEN_TIMEOUT_S):
            self._stopped.set()
            if sys.platform == "darwin":
                raise AudioDeviceError("Capturing the system audio did not start; try again.")
            raise AudioDeviceError(
                f"Capturing the sound of '{self.device.name}' did not start; the sound server may be busy."
            )
        if self._error and not self._opened:
            raise AudioDeviceError(self._error)

    # -- capture thread ------------------------------------------------------------------------
    def _capture(self) -> None:
        if sys.platform == "darwin":
            self._capture_tap()
            return
        try:
            with ComThread():
                sc = _soundcard()
                while not self._stopped.is_set():
                    moved_to = self._capture_one(sc)
                    if moved_to is None:
                        return
                    logger.info("the default output is now %s; capturing it instead of %s",
                                moved_to.name, self.device.name)
                    self.device = moved_to
                    self.switches += 1
        except Exception as exc:  # _soundcard() failing: no server, no library
            logger.warning("opening system audio capture failed: %r", exc)
            self._error = (exc.args[0] if isinstance(exc, AudioDeviceError) else
                           "The system audio could not be captured; the sound server may be busy.")
        finally:
            self._ring.close()
            self._ready.set()

    def _capture_tap(self) -> None:
        """macOS: the helper's process tap (:func:`core.audio.macos_tap.run_tap`); it is global, so a
        change of the default output restarts the helper instead of switching devices."""
        from .macos_tap import run_tap

        try:
            run_tap(self._stopped, self._deliver, self._tap_opened, self.channel, restarted=self._tap_restarted)
        except AudioDeviceError as exc:
            if not self._stopped.is_set():
                logger.warning("system audio capture ended: %s", exc)
                self._error = str(exc)
        except Exception:  # a bug: the capture ends with a sentence, the log has the trace
            logger.exception("system audio capture failed")
            self._error = "The system audio could not be captured; the log file has the details."
        finally:
            self._ring.close()
            self._ready.set()

    def _tap_opened(self) -> None:
        with self._clock_lock:
            self._gaps.start(time.monotonic())
        self._opened = True
        self._ready.set()
        logger.info("capturing the system audio through the process tap")

    def _tap_restarted(self) -> None:
        self.switches += 1

    def _capture_one(self, sc) -> OutputDevice | None:
        """Capture ``self.device`` until stopped (None) or, when following the default, until another
        output becomes the default or this one goes away while another is the default (that output)."""
        opened = False
        try:
            if sys.platform == "win32":
                # a 200 ms endpoint buffer rides out the GIL being held elsewhere; soundcard itself
                # returns zeros for the time WASAPI delivers no packets (nothing playing)
                mic = sc.get_microphone(self.device.capture_id, include_loopback=True)
                recorder = mic.recorder(samplerate=SAMPLE_RATE, channels=CAPTURE_CHANNELS,
                                        blocksize=SAMPLE_RATE // 5)
                next_frames = recorder.record
            else:
                # 50 ms fragments; without a block size PulseAudio picks ~2 s
                recorder = pulse_recorder(self.device.capture_id, SAMPLE_RATE, CAPTURE_CHANNELS, SAMPLE_RATE // 20)
                next_frames = None
            with recorder as rec:
                if next_frames is None:
                    next_frames = PulseReader(rec, _READ_SLICE_S).record
                if not self._ready.is_set():
                    with self._clock_lock:
                        self._gaps.start(time.monotonic())
                opened = True
                self._opened = True
                self._ready.set()
                logger.info("capturing system audio from %s (%s)", self.device.name, self.device.capture_id)
                checked = time.monotonic()
                while not self._stopped.is_set():
                    frames = next_frames(None)
                    if frames is not None and frames.size:
                        self._deliver(frames)
                    if self.follow_default and time.monotonic() - checked >= FOLLOW_CHECK_S:
                        checked = time.monotonic()
                        new = self._new_default()
                        if new is not None:
                            return new
            return None
        except Exception as exc:
            if self._stopped.is_set():
                return None
            new = self._new_default() if opened and self.follow_default else None
            if new is not None:
                return new
            if opened:
                logger.warning("system audio capture from %s ended: %r", self.device.name, exc)
                self._error = (f"Capturing the sound of '{self.device.name}' stopped; the output may have "
                               "been removed or the sound server restarted.")
            else:
                logger.warning("opening system audio capture from %s failed: %r", self.device.name, exc)
                self._error = (exc.args[0] if isinstance(exc, AudioDeviceError) else
                               f"The sound of '{self.device.name}' could not be captured; the output may have "
                               "been removed or the sound server may be busy.")
            return None

    def _new_default(self) -> OutputDevice | None:
        """The default output when it is another one than the output captured now (else None)."""
        try:
            outputs = list_output_devices()
        except AudioDeviceError:
            return None
        default = next((o for o in outputs if o.is_default), None)
        if default is None or default.capture_id == self.device.capture_id:
            return None
        return default

    def _deliver(self, frames: np.ndarray) -> None:
        mono = downmix(frames, self.channel)
        with self._clock_lock:
            self._ring.write(mono)
            self._gaps.audio(mono.shape[0], time.monotonic())
        self.samples_captured += mono.shape[0]
        self.chunks += 1

    def _fill_gap(self) -> None:
        with self._clock_lock:
            owed = self._gaps.silence_due(time.monotonic())
            if owed:
                self._ring.write(np.zeros(owed, dtype=np.float32))

    # -- reading side --------------------------------------------------------------------------
    def read(self, min_seconds: float, timeout: float | None = None) -> np.ndarray | None:
        """All audio captured so far once ``min_seconds`` are there (16 kHz mono).

        Returns what there is (maybe empty) when ``timeout`` runs out, None once
        stopped or interrupted, and raises :class:`AudioDeviceError` (after the
        audio captured before) when the output went away.
        """
        if self._thread is None:
            if self._stopped.is_set():
                return None
            self.start()
        need = max(1, int(min_seconds * SAMPLE_RATE))
        deadline = None if timeout is None else time.monotonic() + timeout
        pieces: list[np.ndarray] = []
        have = 0
        while True:
            if self._stopped.is_set():
                return None
            wait = _READ_SLICE_S if deadline is None else max(0.0, min(_READ_SLICE_S, deadline - time.monotonic()))
            chunk = self._ring.wait_read(need - have, wait)
            if chunk is not None and chunk.size:
                pieces.append(chunk)
                have += chunk.size
            if self._stopped.is_set():
                return None
            if have >= need:
                break
            if self._ring.closed:
                if pieces:
                    break
                if self._error:
                    raise AudioDeviceError(self._error)
                return None
            self._fill_gap()
            if deadline is not None and time.monotonic() >= deadline:
                break
        if not pieces:
            return np.zeros(0, dtype=np.float32)
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def interrupt(self) -> None:
        """From another thread: make a blocked ``read`` return None at once."""
        self._stopped.set()
        self._ring.close()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop capturing and close the stream; a blocked ``read`` returns None."""
        self._stopped.set()
        self._ring.close()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.alive:
                logger.warning("the system audio capture thread did not end within %.1f s", timeout)


def open_system_source(spec: str, channel: str = "mix") -> SystemAudioSource:
    """A :class:`SystemAudioSource` for ``system`` (the default output) or ``system:NAME``."""
    if spec == "system":
        return SystemAudioSource(None, channel=channel)
    if spec.startswith("system:"):
        return SystemAudioSource(spec[len("system:"):] or None, channel=channel)
    raise ValueError(f"not a system audio spec: {spec!r}")
