"""Audio sources: a file (replayed in real time or as fast as possible) and the microphone.

Every source delivers mono float32 at 16 kHz through one call,
``read(min_seconds, timeout)``, which returns *all* audio available once at
least ``min_seconds`` are there. A slow consumer therefore gets bigger chunks
instead of a growing queue: work never piles up, the newest audio is always
processed next. ``None`` means the stream has ended.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .. import logger
from ..errors import AudioDeviceError, AudioError
from .convert import SAMPLE_RATE, To16k, downmix
from .decode import check_file, declared_seconds, decode_file, stream_file
from .ringbuffer import RingBuffer


class AudioSource(Protocol):
    """What the pipeline reads audio from."""

    name: str

    def start(self) -> None: ...

    def read(self, min_seconds: float, timeout: float | None = None) -> np.ndarray | None: ...

    def stop(self) -> None: ...

    def interrupt(self) -> None: ...

    @property
    def duration(self) -> float | None: ...

    @property
    def overflows(self) -> int: ...


class BlockQueue:
    """Audio blocks in arrival order, taken from the front in any sizes (a file decoded block by
    block, or audio made as it is read)."""

    def __init__(self) -> None:
        self._blocks: deque[np.ndarray] = deque()
        self.size = 0  # samples queued

    def put(self, block: np.ndarray) -> None:
        if block.size:
            self._blocks.append(block)
            self.size += block.size

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` samples (fewer if fewer are queued)."""
        out, got = [], 0
        while got < n and self._blocks:
            piece = self._blocks[0]
            if piece.size <= n - got:
                out.append(self._blocks.popleft())
                got += piece.size
            else:
                out.append(piece[: n - got])
                self._blocks[0] = piece[n - got:]
                got = n
        self.size -= got
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


STREAM_OVER_S = 600.0
"""Files that say they are longer than this (10 minutes) are decoded block by block as they are
read, so hours of recording are never held in memory whole; shorter ones are decoded at once."""


class FileSource:
    """A decoded file, delivered in real time (``realtime=True``) or as fast as asked.

    ``audio`` holds the whole recording for files up to :data:`STREAM_OVER_S`; longer ones are
    decoded as they are read (``audio`` is None) and a file that breaks part-way raises
    :class:`AudioError` from :meth:`read` after the audio before the break."""

    def __init__(self, path: str | Path, channel: str = "mix", realtime: bool = False, speed: float = 1.0) -> None:
        self.path = Path(path)
        self.name = self.path.name
        check_file(self.path, channel)
        declared = declared_seconds(self.path)
        self.audio: np.ndarray | None = None
        self._blocks: Iterator[np.ndarray] | None = None
        self._pending = BlockQueue()
        self._declared = declared
        if declared is not None and declared > STREAM_OVER_S:
            self._blocks = stream_file(self.path, channel)
        else:
            self.audio = decode_file(self.path, channel)
        self.realtime = realtime
        self.speed = speed
        self._pos = 0
        self._t0: float | None = None
        self._stop = threading.Event()

    @property
    def duration(self) -> float | None:
        """Length of the recording in seconds (for a streamed file, what its header says)."""
        return self.audio.shape[0] / SAMPLE_RATE if self.audio is not None else self._declared

    @property
    def overflows(self) -> int:
        """A file never overflows."""
        return 0

    def start(self) -> None:
        """Start the replay clock."""
        self._t0 = time.monotonic()

    def stop(self) -> None:
        """End the stream early; a blocked ``read`` returns at once."""
        self._stop.set()

    def interrupt(self) -> None:
        """From another thread: make a blocked ``read`` return None (same as :meth:`stop` for a file)."""
        self._stop.set()

    def _available(self, n: int) -> int:
        """Samples ready from ``_pos`` on, decoding more blocks of a streamed file until ``n`` are (or
        the file ends)."""
        if self.audio is not None:
            return self.audio.shape[0] - self._pos
        while self._pending.size < n and self._blocks is not None:
            block = next(self._blocks, None)
            if block is None:
                self._blocks = None
                break
            self._pending.put(block)
        return self._pending.size

    def _take(self, n: int) -> np.ndarray:
        if self.audio is not None:
            return self.audio[self._pos:self._pos + n]
        return self._pending.take(n)

    def read(self, min_seconds: float, timeout: float | None = None) -> np.ndarray | None:
        """Next audio: exactly ``min_seconds`` in fast mode; all audio up to 'now' in real time."""
        want = max(1, int(min_seconds * SAMPLE_RATE))
        if self._stop.is_set() or self._available(1) <= 0:
            return None
        if not self.realtime:
            n = min(want, self._available(want))
        else:
            if self._t0 is None:
                self.start()
            assert self._t0 is not None
            target = self._pos + min(want, self._available(want))
            ready_at = self._t0 + target / SAMPLE_RATE / self.speed
            wait = ready_at - time.monotonic()
            if timeout is not None and wait > timeout:
                self._stop.wait(timeout)
                return np.zeros(0, dtype=np.float32)
            if wait > 0 and self._stop.wait(wait):
                return None
            now_samples = int((time.monotonic() - self._t0) * self.speed * SAMPLE_RATE)
            end = max(target, now_samples)
            n = min(end - self._pos, self._available(end - self._pos))
        chunk = self._take(n)
        self._pos += chunk.shape[0]
        return chunk

    @property
    def position(self) -> float:
        """Seconds of audio delivered so far."""
        return self._pos / SAMPLE_RATE


@dataclass
class InputDevice:
    """One audio input device as PortAudio sees it."""

    index: int
    name: str
    channels: int
    default_samplerate: float
    hostapi: str
    is_default: bool


def list_input_devices() -> list[InputDevice]:
    """Audio input devices (``sotto devices``)."""
    sd = load_sounddevice()
    try:
        devices = sd.query_devices()
        default_in = sd.default.device[0]
        hostapis = sd.query_hostapis()
    except Exception as exc:  # PortAudio errors are plain Exceptions
        raise AudioDeviceError(f"Could not list audio devices ({exc}).") from exc
    result = []
    for index, dev in enumerate(devices):
        if dev["max_input_channels"] > 0:
            result.append(
                InputDevice(
                    index,
                    dev["name"],
                    dev["max_input_channels"],
                    dev["default_samplerate"],
                    hostapis[dev["hostapi"]]["name"],
                    index == default_in,
                )
            )
    return result


def load_sounddevice():
    """The ``sounddevice`` module; :class:`AudioDeviceError` (one sentence) when PortAudio is missing."""
    try:
        import sounddevice
    except OSError as exc:  # PortAudio library missing
        raise AudioDeviceError(
            "The PortAudio library is missing, so no microphone can be used; rerun the setup command from README.md."
        ) from exc
    return sounddevice


def find_input_device(spec: str | int | None) -> InputDevice:
    """The input device named (substring, case-insensitive) or numbered by ``spec``; default if empty."""
    devices = list_input_devices()
    if not devices:
        raise AudioDeviceError("No audio input device was found; connect a microphone or check the sound settings.")
    if spec is None or spec == "":
        for dev in devices:
            if dev.is_default:
                return dev
        return devices[0]
    if isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit()):
        for dev in devices:
            if dev.index == int(spec):
                return dev
        raise AudioDeviceError(f"There is no audio input device number {spec}; `sotto devices` lists them.")
    matches = [d for d in devices if spec.lower() in d.name.lower()]
    exact = [d for d in matches if d.name.lower() == str(spec).lower()]
    if exact:
        return exact[0]
    if matches:
        return matches[0]
    raise AudioDeviceError(f"There is no audio input device called '{spec}'; `sotto devices` lists them.")


PERMISSION_HINT = (
    "On macOS allow Sotto (or your terminal) under System Settings → Privacy & Security → Microphone; "
    "on Windows under Settings → Privacy → Microphone; on Linux your user needs access to the sound "
    "server (PulseAudio or PipeWire) or to the audio group."
)


class MicrophoneSource:
    """Live input through sounddevice, resampled to 16 kHz mono, into a bounded ring buffer."""

    def __init__(
        self,
        device: str | int | None = None,
        channel: str = "mix",
        buffer_seconds: float = 30.0,
        stall_timeout: float = 3.0,
    ) -> None:
        self.device = find_input_device(device)
        self.name = self.device.name
        self.channel = channel
        self.stall_timeout = stall_timeout
        self._stream = None
        self._rate = SAMPLE_RATE
        self._ring = RingBuffer(int(buffer_seconds * SAMPLE_RATE * 3))
        self._to16k = To16k(SAMPLE_RATE)
        self._status_overflows = 0
        self._error: str | None = None
        self._last_data = time.monotonic()
        self._stopped = threading.Event()

    @property
    def duration(self) -> None:
        """A live stream has no known length."""
        return None

    @property
    def overflows(self) -> int:
        """Input overflows reported by PortAudio plus ring-buffer overwrites."""
        return self._status_overflows + self._ring.overflows

    @property
    def sample_rate(self) -> int:
        """The rate the device is opened at (before resampling)."""
        return self._rate

    def start(self) -> None:
        """Open the input stream, at 16 kHz if the device allows, else its own rate."""
        sd = load_sounddevice()
        channels = min(2, self.device.channels)
        last_exc: Exception | None = None
        for rate in (SAMPLE_RATE, int(self.device.default_samplerate)):
            try:
                self._stream = sd.InputStream(
                    device=self.device.index,
                    channels=channels,
                    samplerate=rate,
                    dtype="float32",
                    callback=self._callback,
                    finished_callback=self._finished,
                )
                self._rate = rate
                break
            except Exception as exc:  # sounddevice.PortAudioError
                last_exc = exc
                logger.info("opening %s at %d Hz failed: %s", self.device.name, rate, exc)
        if self._stream is None:
            raise AudioDeviceError(
                f"Could not open the audio input '{self.device.name}' ({last_exc}); it may be in use or unplugged, "
                f"or Sotto may not be allowed to use it. {PERMISSION_HINT}"
            ) from last_exc
        self._ring = RingBuffer(int(self._ring.capacity / SAMPLE_RATE * self._rate) // 3 * 3)
        self._to16k = To16k(self._rate)
        self._last_data = time.monotonic()
        self._stream.start()
        logger.info("recording from %s at %d Hz, %d channel(s)", self.device.name, self._rate, channels)

    def _callback(self, indata, frames, time_info, status) -> None:  # PortAudio thread
        if status.input_overflow:
            self._status_overflows += 1
        self._ring.write(downmix(indata, self.channel))
        self._last_data = time.monotonic()

    def _finished(self) -> None:
        if not self._stopped.is_set():
            self._error = f"The audio input '{self.device.name}' stopped; it may have been unplugged."
        self._ring.close()

    def read(self, min_seconds: float, timeout: float | None = None) -> np.ndarray | None:
        """All audio recorded so far once ``min_seconds`` are there (16 kHz mono)."""
        if self._stream is None:
            self.start()
        need = max(1, int(min_seconds * self._rate))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            slice_timeout = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
            chunk = self._ring.wait_read(need, slice_timeout)
            if chunk is not None and chunk.size:
                return self._to16k(chunk)
            if self._stopped.is_set():
                return None
            if self._error:
                raise AudioDeviceError(self._error)
            if time.monotonic() - self._last_data > self.stall_timeout:
                raise AudioDeviceError(
                    f"The audio input '{self.device.name}' stopped delivering sound; it may have been unplugged."
                )
            if deadline is not None and time.monotonic() >= deadline:
                return np.zeros(0, dtype=np.float32)

    def interrupt(self) -> None:
        """From another thread: make a blocked ``read`` return None at once.

        The stream itself is closed by :meth:`stop` on the reading thread; closing a
        PortAudio stream from two threads at once can hang.
        """
        self._stopped.set()
        self._ring.close()

    def stop(self) -> None:
        """Stop and close the stream; a blocked ``read`` returns None."""
        self._stopped.set()
        self._ring.close()
        if self._stream is not None:
            try:
                self._stream.stop()
                self._stream.close()
            except Exception:  # already gone with the device
                logger.debug("closing stream failed", exc_info=True)


def is_live(spec: str) -> bool:
    """True for a live source (``mic``, ``mic:DEVICE``, ``system``, ``system:OUTPUT``, ``both``), False for a file."""
    return spec in ("mic", "system", "both") or spec.startswith(("mic:", "system:"))


def open_streams(spec: str, realtime: bool = False, channel: str = "mix",
                 device: str | None = None) -> dict[str, AudioSource]:
    """The sources of a run by speaker: ``{"": source}`` for one source (see :func:`open_source`);
    for ``both``, what the computer plays as ``them`` and the microphone (``device``, default:
    the default input) as ``me``, the microphone behind an echo gate that the system audio feeds,
    so speech the microphone picks up from the speakers is not captioned twice."""
    if spec != "both":
        return {"": open_source(spec, realtime=realtime, channel=channel)}
    from ..stream import ME, THEM
    from .echo import EchoGate, EchoGatedSource, ReferenceTap
    from .loopback import open_system_source

    gate = EchoGate()
    them = ReferenceTap(open_system_source("system", channel=channel), gate)
    me = EchoGatedSource(MicrophoneSource(device or None, channel=channel), gate)
    return {THEM: them, ME: me}  # the system audio is read first: the gate needs it before the microphone


def open_source(spec: str, realtime: bool = False, channel: str = "mix") -> AudioSource:
    """A :class:`FileSource` for a path, a :class:`MicrophoneSource` for ``mic`` / ``mic:DEVICE``, or
    what an output plays (:class:`~core.audio.loopback.SystemAudioSource`) for ``system`` / ``system:OUTPUT``."""
    if spec == "mic" or spec.startswith("mic:"):
        return MicrophoneSource(spec[4:] or None, channel=channel)
    if spec == "system" or spec.startswith("system:"):
        from .loopback import open_system_source

        return open_system_source(spec, channel=channel)
    if not Path(spec).exists():
        raise AudioError(f"The audio file {spec} does not exist.")
    return FileSource(spec, channel=channel, realtime=realtime)
