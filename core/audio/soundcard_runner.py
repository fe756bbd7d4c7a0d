"""The soundcard library, which captures system audio on Linux and Windows, where Sotto needs more
than its public interface.

The only file that touches soundcard's private parts (it relies on soundcard 0.4.6):

* :func:`load_soundcard` imports it (on Linux that connects to the sound server) with
  one-sentence errors, and replaces its module-wide PulseAudio connection when the server was
  restarted;
* :func:`pulse_recorder` is its Linux recorder connected so that the server never moves the
  stream to another source, and :class:`PulseReader` reads that recorder without blocking
  for good while the output is quiet;
* :class:`ComThread` initialises COM on a capture thread for its Windows backend.

:mod:`core.audio.loopback` builds the system audio source on these.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np

from .. import logger
from ..errors import AudioDeviceError

_SC_LOCK = threading.Lock()
_NO_SERVER = "No sound server (PulseAudio or PipeWire) is running, so the system audio cannot be captured."


def load_soundcard():
    """The ``soundcard`` module, connected to a running sound server (reconnected on Linux if lost);
    :class:`AudioDeviceError` (one sentence) when the package, its system library or the server is
    missing. For Linux and Windows only: the caller checks first that this system can capture at all."""
    with _SC_LOCK:
        try:
            import soundcard
        except ImportError as exc:
            raise AudioDeviceError(
                "Capturing system audio needs the soundcard package, which is missing; "
                "rerun the setup command from README.md."
            ) from exc
        except OSError as exc:  # the system library is missing (libpulse on Linux)
            logger.info("soundcard could not load its system library: %s", exc)
            raise AudioDeviceError(
                "Capturing system audio needs the PulseAudio client library (libpulse0), which is missing; "
                "install it with the system's package manager."
                if sys.platform != "win32" else
                f"The Windows audio system could not be used to capture system audio ({exc})."
            ) from exc
        except Exception as exc:  # Linux: soundcard asserts a connected server at import
            logger.info("soundcard could not start: %r", exc)
            raise AudioDeviceError(_NO_SERVER if sys.platform != "win32" else
                                   "The Windows audio system could not be used to capture system audio.") from exc
        if sys.platform != "win32":
            _ensure_pulse_connection(sys.modules["soundcard.pulseaudio"])
        return soundcard


def _ensure_pulse_connection(pa) -> None:
    """Replace soundcard's connection to the sound server if it was lost (server killed or restarted).

    soundcard keeps one module-wide connection made at import; once the server
    goes away every later call would fail. The dead connection is left alone
    (streams of it may still be closing on other threads); a fresh one takes
    its place for everything that follows.
    """
    lib = pa._pa
    old = pa._pulse
    if old._pa_context_get_state(old.context) == lib.PA_CONTEXT_READY:
        return
    logger.info("the connection to the sound server was lost; connecting again")
    pa._pulse = _connect_pulse(pa)


def _connect_pulse(pa, timeout: float = 5.0):
    """A new soundcard ``_PulseAudio`` connection, without autospawning a server; cleaned up on failure."""
    import atexit

    lib, ffi = pa._pa, pa._ffi
    conn = object.__new__(pa._PulseAudio)  # its __init__ asserts and leaks on failure; same steps, checked
    conn.mainloop = lib.pa_threaded_mainloop_new()
    conn.mainloop_api = lib.pa_threaded_mainloop_get_api(conn.mainloop)
    conn.context = lib.pa_context_new(conn.mainloop_api, b"Sotto")
    no_autospawn = 1  # PA_CONTEXT_NOAUTOSPAWN
    lib.pa_context_connect(conn.context, ffi.NULL, no_autospawn, ffi.NULL)
    lib.pa_threaded_mainloop_start(conn.mainloop)
    pending = (lib.PA_CONTEXT_UNCONNECTED, lib.PA_CONTEXT_CONNECTING, lib.PA_CONTEXT_AUTHORIZING,
               lib.PA_CONTEXT_SETTING_NAME)
    deadline = time.monotonic() + timeout
    state = conn._pa_context_get_state(conn.context)
    while state in pending and time.monotonic() < deadline:
        time.sleep(0.005)  # polling a C state machine that offers no wait here
        state = conn._pa_context_get_state(conn.context)
    if state != lib.PA_CONTEXT_READY:
        conn._pa_context_disconnect(conn.context)
        conn._pa_context_unref(conn.context)
        lib.pa_threaded_mainloop_stop(conn.mainloop)
        lib.pa_threaded_mainloop_free(conn.mainloop)
        raise AudioDeviceError(_NO_SERVER)
    atexit.register(conn._shutdown)
    return conn


class ComThread:
    """COM initialised on the current thread (Windows); a no-op elsewhere."""

    def __enter__(self) -> ComThread:
        self._uninit = False
        if sys.platform == "win32":
            import ctypes

            hr = ctypes.windll.ole32.CoInitializeEx(None, 0)  # COINIT_MULTITHREADED
            # S_OK or S_FALSE: balance with CoUninitialize; RPC_E_CHANGED_MODE (an STA thread, e.g. Qt's): usable
            self._uninit = hr in (0, 1)
        return self

    def __exit__(self, *exc) -> None:
        if self._uninit:
            import ctypes

            ctypes.windll.ole32.CoUninitialize()


def pulse_recorder(source: str, samplerate: int, channels: int, blocksize: int):
    """soundcard's Linux recorder for ``source``, connected so that the server never moves it.

    By default PulseAudio (and pipewire-pulse) moves a stream whose source
    goes away to the default source, which may be the microphone: system audio
    would silently become the user's voice. With ``PA_STREAM_DONT_MOVE`` the
    stream fails instead, and the source reports the output as gone. The
    method is soundcard 0.4.6's ``_Recorder._connect_stream`` with that flag.
    """
    pa = sys.modules["soundcard.pulseaudio"]
    lib, ffi = pa._pa, pa._ffi

    class Recorder(pa._Recorder):
        def _connect_stream(self, bufattr) -> None:
            pa._pulse._pa_stream_connect_record(self.stream, self._id.encode(), bufattr,
                                                lib.PA_STREAM_ADJUST_LATENCY | lib.PA_STREAM_DONT_MOVE)

            @ffi.callback("pa_stream_request_cb_t")
            def read_callback(stream, nbytes, userdata):
                self._record_event.set()

            self._callback = read_callback
            pa._pulse._pa_stream_set_read_callback(self.stream, read_callback, ffi.NULL)

    return Recorder(source, samplerate, channels, blocksize)


class PulseReader:
    """soundcard's Linux recorder, read without blocking for good while the output is quiet.

    ``_Recorder.record`` waits until the monitor delivers, which for an idle
    null or virtual sink is never, so the capture thread could not be stopped.
    This waits at most ``wait`` seconds per call and raises once the stream has
    failed (server gone, output removed). Relies on soundcard 0.4.6 internals.
    """

    def __init__(self, rec, wait: float) -> None:
        self._rec = rec
        self._wait = wait
        self._pa = sys.modules["soundcard.pulseaudio"]

    def record(self, _numframes=None) -> np.ndarray | None:
        pa, rec = self._pa, self._rec
        pulse = pa._pulse
        state = pulse._pa_stream_get_state(rec.stream)
        if state != pa._pa.PA_STREAM_READY:
            raise RuntimeError(f"the recording stream is in state {state}")
        readable = pulse._pa_stream_readable_size(rec.stream)
        if readable == 0:
            rec._record_event.wait(self._wait)
            rec._record_event.clear()
            return None
        if readable >= 2**31:  # (size_t) -1: an error
            raise RuntimeError("the recording stream reported an error")
        return rec.record(None)
