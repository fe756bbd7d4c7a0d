"""System audio on macOS: the ``sotto-audiotap`` helper's Core Audio process tap, read as a live source.

Python cannot create a Core Audio process tap (macOS 14.2+) itself, so a small
Swift program does (``packaging/macos/sotto-audiotap/main.swift``, built by
``packaging/macos/build-audiotap.sh``) and writes what the Mac plays to its
stdout. Wire format 1: one ASCII header line, then raw frames::

    SOTTO-TAP 1 rate=48000 channels=2 format=f32le\\n
    <interleaved little-endian float32 frames at that rate, until the helper ends>

The helper ends on SIGTERM or when its stdin closes; its exit code says why it
ended (see ``EXIT_*``), with one line on stderr. :func:`run_tap` launches it,
reads the frames on the caller's thread (the source's capture thread), mixes
them down, resamples them to 16 kHz and hands them on; when the default output
or the tap's format changes the helper exits with ``EXIT_OUTPUT_CHANGED`` and is
started again. :class:`~core.audio.loopback.SystemAudioSource` owns the ring
buffer and the gap filling around it.

The helper is found through ``SOTTO_AUDIOTAP`` (a path), next to the frozen app
(``Contents/MacOS``, ``Contents/Frameworks``, ``Contents/Helpers``,
``Contents/Resources``), in ``packaging/macos/build/`` of a source checkout, or
on ``PATH``.
"""

from __future__ import annotations

import os
import platform
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import logger
from ..errors import AudioDeviceError
from .convert import To16k, downmix

HELPER_NAME = "sotto-audiotap"
ENV_VAR = "SOTTO_AUDIOTAP"
MIN_MACOS = (14, 2)
WIRE_MAGIC = "SOTTO-TAP"
WIRE_VERSION = 1
WIRE_FORMAT = "f32le"
ALL_SYSTEM_AUDIO = "All system audio"  # the one "output" the tap offers: it is global
TAP_ID = "all"

EXIT_STOPPED = 0
EXIT_USAGE = 2
EXIT_OLD_MACOS = 3
EXIT_PERMISSION = 4
EXIT_NO_OUTPUT = 5
EXIT_CORE_AUDIO = 6
EXIT_FORMAT = 7
EXIT_OUTPUT_CHANGED = 8

MACOS_UNAVAILABLE = (
    "Capturing system audio needs macOS 14.2 or newer; on this Mac route the meeting's sound through "
    "a loopback device such as BlackHole and choose that device as the microphone."
)
PERMISSION_DENIED = (
    "Sotto may not record the system audio; allow Sotto (or your terminal) under System Settings → "
    "Privacy & Security → Screen & System Audio Recording, in the list \"System Audio Recording Only\", "
    "then start again."
)
NO_OUTPUT = "This Mac has no audio output whose sound could be captured; check the sound settings."
INCOMPATIBLE = (
    f"The system audio helper {HELPER_NAME} does not speak this Sotto's language; reinstall Sotto or rebuild "
    "it with packaging/macos/build-audiotap.sh."
)
MISSING = (
    f"Capturing system audio needs Sotto's helper program {HELPER_NAME}, which is missing; reinstall Sotto "
    "or build it with packaging/macos/build-audiotap.sh."
)
NOT_STARTED = f"The system audio helper {HELPER_NAME} did not start capturing in time; try again."
KEPT_CHANGING = "The system audio output kept changing, so its capture stopped; start again."

HEADER_TIMEOUT_S = 8.0  # the helper sets up the tap (and may wait up to 2 s to check a denied permission)
_HEADER_MAX = 256  # bytes: a longer first line is not a header
_SLICE_S = 0.1  # how often the reading loop checks for a stop
_READ_BYTES = 1 << 16
_STDIN_GRACE_S = 0.3  # stdin closed, then SIGTERM after this
_STOP_WAIT_S = 1.0  # SIGTERM, then SIGKILL after this
_RESTART_LIMIT = 5  # restarts (output changes) within _RESTART_WINDOW_S before giving up
_RESTART_WINDOW_S = 30.0
_STDERR_KEEP = 4096


@dataclass(frozen=True)
class TapFormat:
    """What the helper announced: frames of ``channels`` float32 samples at ``rate`` Hz."""

    rate: int
    channels: int

    @property
    def frame_bytes(self) -> int:
        """Bytes per frame (4 per channel)."""
        return 4 * self.channels


def parse_header(line: bytes) -> TapFormat:
    """The format announced by a header line (``SOTTO-TAP 1 rate=48000 channels=2 format=f32le``)."""
    try:
        words = line.decode("ascii").strip().split()
    except UnicodeDecodeError:
        words = []
    if len(words) < 2 or words[0] != WIRE_MAGIC or words[1] != str(WIRE_VERSION):
        logger.warning("the system audio helper sent an unknown header: %r", line[:_HEADER_MAX])
        raise AudioDeviceError(INCOMPATIBLE)
    fields = dict(word.partition("=")[::2] for word in words[2:])
    try:
        rate, channels = int(fields["rate"]), int(fields["channels"])
    except (KeyError, ValueError):
        rate = channels = 0
    if fields.get("format") != WIRE_FORMAT or not 1000 <= rate <= 768000 or not 1 <= channels <= 64:
        logger.warning("the system audio helper announced an unusable format: %r", line[:_HEADER_MAX])
        raise AudioDeviceError(INCOMPATIBLE)
    return TapFormat(rate, channels)


def exit_sentence(code: int | None) -> str:
    """The one sentence for the helper ending with ``code`` (None: it ended without a code)."""
    if code == EXIT_OLD_MACOS:
        return MACOS_UNAVAILABLE
    if code == EXIT_PERMISSION:
        return PERMISSION_DENIED
    if code == EXIT_NO_OUTPUT:
        return NO_OUTPUT
    if code in (EXIT_USAGE, EXIT_FORMAT):
        return INCOMPATIBLE
    if code == EXIT_CORE_AUDIO:
        return "macOS refused to capture the system audio; restart Sotto, or the Mac if it keeps happening."
    if code is not None and code < 0:
        return f"The system audio helper {HELPER_NAME} stopped unexpectedly (signal {-code}); start again."
    if code == EXIT_STOPPED:
        return f"The system audio helper {HELPER_NAME} ended unexpectedly; start again."
    return f"The system audio helper {HELPER_NAME} failed (exit code {code}); start again."


# -- availability -----------------------------------------------------------------------------------

def macos_version() -> tuple[int, ...] | None:
    """This Mac's version, e.g. ``(14, 5)``; None where it cannot be told (or on another system).

    Python built against an old SDK may see the compatibility version 10.16 on
    macOS 11 and later: that says nothing, and counts as unknown.
    """
    release = platform.mac_ver()[0]
    try:
        version = tuple(int(part) for part in release.split("."))
    except ValueError:
        return None
    if not version or version[:2] == (10, 16):
        return None
    return version


def tap_supported() -> bool:
    """False on a Mac known to be older than macOS 14.2 (no process taps) or whose version cannot be
    told; True otherwise. The compatibility version 10.16 lets the helper decide (it exits with
    ``EXIT_OLD_MACOS`` on an old system)."""
    if platform.mac_ver()[0].startswith("10.16"):
        return True
    version = macos_version()
    return version is not None and version >= MIN_MACOS


def helper_candidates() -> list[Path]:
    """Where the helper may be, in order (the ``SOTTO_AUDIOTAP`` override is handled by :func:`find_helper`)."""
    places: list[Path] = []
    if getattr(sys, "frozen", False):
        exe_dir = Path(sys.executable).resolve().parent  # Sotto.app/Contents/MacOS
        contents = exe_dir.parent
        places += [exe_dir / HELPER_NAME, contents / "Frameworks" / HELPER_NAME,
                   contents / "Helpers" / HELPER_NAME, contents / "Resources" / HELPER_NAME]
        bundle_dir = getattr(sys, "_MEIPASS", None)
        if bundle_dir:
            places.append(Path(bundle_dir) / HELPER_NAME)
    root = Path(__file__).resolve().parents[2]
    places.append(root / "packaging" / "macos" / "build" / HELPER_NAME)
    on_path = shutil.which(HELPER_NAME)
    if on_path:
        places.append(Path(on_path))
    return places


def _is_program(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_helper() -> Path:
    """The helper program; raises :class:`AudioDeviceError` (one sentence) when there is none."""
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        path = Path(override).expanduser()
        if _is_program(path):
            return path
        raise AudioDeviceError(f"{ENV_VAR} names {path}, which is not a program that can be run.")
    for path in helper_candidates():
        if _is_program(path):
            return path
    raise AudioDeviceError(MISSING)


def unavailable_reason() -> str | None:
    """Why the tap cannot be used on this Mac (a sentence), or None where it can be tried."""
    if not tap_supported():
        return MACOS_UNAVAILABLE
    try:
        find_helper()
    except AudioDeviceError as exc:
        return str(exc)
    return None


# -- one run of the helper ----------------------------------------------------------------------------

class TapEnded(Exception):
    """The helper's output ended; ``code`` is its exit status (negative: killed by that signal)."""

    def __init__(self, code: int | None, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code
        self.detail = detail


class TapProcess:
    """One run of the helper: started, its header read, its frames read without blocking for good.

    Not thread-safe: one thread reads; :meth:`close` may come from that thread only.
    """

    def __init__(self, helper: Path, args: tuple[str, ...] = ()) -> None:
        self.helper = helper
        self.args = args
        self.format: TapFormat | None = None
        self._proc: subprocess.Popen | None = None
        self._pending = bytearray()  # stdout bytes not yet handed out (part of a header or a frame)
        self._stderr = bytearray()
        self._out_open = self._err_open = False

    @property
    def pid(self) -> int | None:
        """The helper's process id while it runs."""
        return None if self._proc is None else self._proc.pid

    def open(self, stopped: threading.Event, timeout: float = HEADER_TIMEOUT_S) -> TapFormat | None:
        """Start the helper and read its header; None when ``stopped`` was set meanwhile.

        Raises :class:`AudioDeviceError` when it cannot start, speaks another
        format or sends no header in time, and :class:`TapEnded` when it ends first.
        """
        try:
            self._proc = subprocess.Popen(
                [str(self.helper), *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, bufsize=0, close_fds=True, start_new_session=True)
        except OSError as exc:
            logger.warning("starting %s failed: %r", self.helper, exc)
            raise AudioDeviceError(
                f"The system audio helper {self.helper} could not be started ({exc.strerror or exc}).") from exc
        self._out_open = self._err_open = True
        logger.info("started %s (pid %d)", self.helper, self._proc.pid)
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            if stopped.is_set():
                return None
            if len(self._pending) > _HEADER_MAX:
                raise AudioDeviceError(INCOMPATIBLE)
            left = deadline - time.monotonic()
            if left <= 0:
                logger.warning("%s sent no header within %.1f s", self.helper, timeout)
                raise AudioDeviceError(NOT_STARTED)
            self._pump(min(_SLICE_S, left))
        line, _, rest = bytes(self._pending).partition(b"\n")
        self._pending = bytearray(rest)
        self.format = parse_header(line)
        logger.info("system audio tap: %d Hz, %d channel(s)", self.format.rate, self.format.channels)
        return self.format

    def frames(self, wait: float) -> np.ndarray | None:
        """The whole frames that arrived within ``wait`` seconds, as ``(n, channels)`` float32; None
        if none did. Raises :class:`TapEnded` once the helper's output has ended and it has exited."""
        assert self.format is not None
        size = self.format.frame_bytes
        if len(self._pending) < size:
            self._pump(wait)
        whole = len(self._pending) // size * size
        if whole == 0:
            return None
        data = np.frombuffer(bytes(self._pending[:whole]), dtype="<f4").reshape(-1, self.format.channels)
        del self._pending[:whole]
        return data

    def _pump(self, wait: float) -> None:
        """Take what the helper wrote within ``wait`` seconds; :class:`TapEnded` once stdout ended."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        if not self._out_open:
            raise self._ended()
        fds = [proc.stdout.fileno()] + ([proc.stderr.fileno()] if self._err_open else [])
        ready, _, _ = select.select(fds, [], [], max(0.0, wait))
        if proc.stderr.fileno() in ready and self._err_open:
            chunk = os.read(proc.stderr.fileno(), _STDERR_KEEP)
            if chunk:
                self._stderr += chunk
                del self._stderr[:-_STDERR_KEEP]
            else:
                self._err_open = False
        if proc.stdout.fileno() in ready:
            chunk = os.read(proc.stdout.fileno(), _READ_BYTES)
            if chunk:
                self._pending += chunk
            else:
                self._out_open = False
                if len(self._pending) < (self.format.frame_bytes if self.format else 1):
                    raise self._ended()

    def _ended(self) -> TapEnded:
        """The helper's exit, waited for briefly (stdout closes just before it exits)."""
        proc = self._proc
        assert proc is not None
        try:
            code = proc.wait(_STOP_WAIT_S)
        except subprocess.TimeoutExpired:  # closed stdout but lives on: make it go
            self.close()
            code = proc.returncode
        self._drain_stderr()
        detail = self.stderr_tail
        logger.info("%s ended with code %s%s", self.helper, code, f": {detail}" if detail else "")
        return TapEnded(code, detail)

    def _drain_stderr(self) -> None:
        proc = self._proc
        if proc is None or proc.stderr is None or not self._err_open:
            return
        while True:
            ready, _, _ = select.select([proc.stderr.fileno()], [], [], 0)
            if not ready:
                return
            chunk = os.read(proc.stderr.fileno(), _STDERR_KEEP)
            if not chunk:
                self._err_open = False
                return
            self._stderr += chunk
            del self._stderr[:-_STDERR_KEEP]

    @property
    def stderr_tail(self) -> str:
        """The last line the helper wrote to stderr (its reason), or ''."""
        lines = self._stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[-1].strip() if lines else ""

    def close(self) -> int | None:
        """End the helper (stdin closed, then SIGTERM, then SIGKILL) and reap it; its exit status."""
        proc = self._proc
        if proc is None:
            return None
        if proc.stdin is not None and not proc.stdin.closed:
            try:
                proc.stdin.close()  # the helper's sign to stop
            except OSError:
                pass
        try:
            proc.wait(_STDIN_GRACE_S)  # the orderly way: it sees stdin end and tears the tap down
        except subprocess.TimeoutExpired:
            pass
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(_STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                logger.warning("%s did not end on SIGTERM; killing it", self.helper)
                proc.kill()
                proc.wait()
            except ProcessLookupError:
                proc.wait()
        self._drain_stderr()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        self._out_open = self._err_open = False
        return proc.returncode


# -- the capture loop ----------------------------------------------------------------------------------

def run_tap(stopped: threading.Event, deliver: Callable[[np.ndarray], None], opened: Callable[[], None],
            channel: str = "mix", restarted: Callable[[], None] | None = None) -> None:
    """Capture the system audio through the helper until ``stopped`` is set.

    Runs on the caller's thread (the source's capture thread). ``deliver``
    gets 16 kHz mono chunks; ``opened`` is called once the first run has
    announced its format; ``restarted`` each time the helper was started again
    because the output changed. Returns when stopped; raises
    :class:`AudioDeviceError` (one sentence) when the helper cannot run or ends
    by itself. The helper is always ended and reaped before this returns.
    """
    helper = find_helper()
    restarts: list[float] = []
    first = True
    while not stopped.is_set():
        tap = TapProcess(helper)
        try:
            fmt = tap.open(stopped)
            if fmt is None:
                return
            if first:
                opened()
                first = False
            to16k = To16k(fmt.rate)
            while not stopped.is_set():
                frames = tap.frames(_SLICE_S)
                if frames is not None:
                    mono = to16k(downmix(frames, channel))
                    if mono.size:
                        deliver(mono)
            return
        except TapEnded as ended:
            if stopped.is_set():
                return
            if ended.code != EXIT_OUTPUT_CHANGED:
                raise AudioDeviceError(exit_sentence(ended.code)) from None
            now = time.monotonic()
            restarts = [t for t in restarts if now - t < _RESTART_WINDOW_S] + [now]
            if len(restarts) > _RESTART_LIMIT:
                raise AudioDeviceError(KEPT_CHANGING) from None
            logger.info("the system audio output changed (%s); starting the tap again", ended.detail)
            if restarted is not None:
                restarted()
        finally:
            tap.close()
