"""System audio on macOS: the reader of the ``sotto-audiotap`` helper, run for real on any system.

The Swift helper itself needs macOS 14.2 and is not built here. What it speaks
is a small wire format (a header line, then float32 frames) on stdout and an
exit code with one line on stderr; a stand-in helper written to a temporary
directory speaks exactly that: it streams real speech (``jfk.flac`` at 48 kHz
stereo), pauses, exits with each of the helper's codes, or ignores SIGTERM. It
is found through ``SOTTO_AUDIOTAP`` like the real one, and read through
:class:`core.audio.loopback.SystemAudioSource` with the platform check of
``loopback`` (and ``platform.mac_ver``) saying macOS; everything after that
check is the code that runs on a Mac.
"""

from __future__ import annotations

import os
import platform
import signal
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import wait_for

from core.audio import loopback, macos_tap
from core.audio.loopback import SystemAudioSource, list_output_devices, open_system_source
from core.audio.macos_tap import (
    INCOMPATIBLE,
    KEPT_CHANGING,
    MACOS_UNAVAILABLE,
    MISSING,
    NO_OUTPUT,
    PERMISSION_DENIED,
    TapFormat,
    exit_sentence,
    find_helper,
    parse_header,
)
from core.errors import AudioDeviceError

RATE = 16000
TAP_RATE = 48000

STAND_IN = textwrap.dedent('''\
    #!{python}
    """A stand-in for sotto-audiotap: wire format 1 on stdout, exit codes and one line on stderr."""
    import os, signal, sys, threading, time

    work = os.environ["FAKE_TAP_DIR"]
    mode = os.environ["FAKE_TAP_MODE"]
    with open(os.path.join(work, "pids"), "a") as f:
        f.write(f"{{os.getpid()}}\\n")
    out = sys.stdout.buffer

    def fail(code, message):
        sys.stderr.write(f"sotto-audiotap: {{message}}\\n")
        sys.stderr.flush()
        os._exit(code)

    def header(rate=48000, channels=2, fmt="f32le"):
        out.write(f"SOTTO-TAP 1 rate={{rate}} channels={{channels}} format={{fmt}}\\n".encode())
        out.flush()

    def stream(data, rate, channels, speed):
        step = rate // 100 * channels * 4  # 10 ms
        t0 = time.monotonic()
        for k, pos in enumerate(range(0, len(data), step)):
            ahead = t0 + k * 0.01 / speed - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            out.write(data[pos:pos + step])
            out.flush()

    def until_stdin_closes():
        while os.read(0, 256):
            pass
        with open(os.path.join(work, "eof"), "a") as f:
            f.write("stdin closed\\n")

    speech = open(os.path.join(work, "speech.f32"), "rb").read()
    second = 48000 * 2 * 4
    try:
        if mode == "speech":
            header()
            stream(speech, 48000, 2, speed=4.0)
            until_stdin_closes()
        elif mode == "pause":
            header()
            stream(speech[second // 2:second], 48000, 2, speed=1.0)  # 0.5 s of speech,
            time.sleep(2.0)  # nothing for 2 s,
            stream(speech[3 * second:3 * second + second // 2], 48000, 2, speed=1.0)  # 0.5 s of speech
            until_stdin_closes()
        elif mode == "quiet":
            header()
            until_stdin_closes()
        elif mode == "stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            header()
            while True:
                time.sleep(0.05)
        elif mode.startswith("exit:"):
            _, code, message = mode.split(":", 2)
            fail(int(code), message)
        elif mode.startswith("exit-after-audio:"):
            _, code, message = mode.split(":", 2)
            header()
            stream(speech[:second // 4], 48000, 2, speed=8.0)
            fail(int(code), message)
        elif mode == "crash":
            header()
            os.kill(os.getpid(), signal.SIGKILL)
        elif mode == "garbage":
            out.write(b"HELLO 2 rate=48000\\n")
            out.flush()
            until_stdin_closes()
        elif mode == "change":
            runs = os.path.join(work, "runs")
            n = len(open(runs).read()) if os.path.exists(runs) else 0
            open(runs, "a").write("x")
            if n == 0:
                header()
                stream(speech[:second // 2], 48000, 2, speed=8.0)
                fail(8, "the default output changed")
            import numpy as np  # a second output: 44.1 kHz mono
            stereo = np.frombuffer(speech, dtype="<f4").reshape(-1, 2)
            idx = np.arange(0, len(stereo), 48000 / 44100).astype(int)
            mono = stereo[idx, 0].astype("<f4").tobytes()
            header(rate=44100, channels=1)
            stream(mono[:44100 * 4 * 4], 44100, 1, speed=8.0)  # 4 s
            until_stdin_closes()
        else:
            fail(2, f"unknown mode {{mode}}")
    except BrokenPipeError:
        os._exit(0)
    ''')


def _one_sentence(msg: str) -> bool:
    return bool(msg) and msg.endswith(".") and ". " not in msg and "\n" not in msg


@pytest.fixture(scope="module")
def speech_48k_stereo(shared) -> np.ndarray:
    """jfk.flac at 48 kHz as stereo float32 (left the speech, right the speech at half level)."""
    import av

    with av.open(str(shared / "asr" / "jfk.flac")) as container:
        resampler = av.AudioResampler(format="flt", layout="mono", rate=TAP_RATE)
        parts = [f.to_ndarray().reshape(-1) for frame in container.decode(audio=0) for f in resampler.resample(frame)]
        parts += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
    mono = np.concatenate(parts).astype(np.float32)
    return np.stack([mono, 0.5 * mono], axis=1)


@pytest.fixture
def helper(tmp_path, monkeypatch, speech_48k_stereo):
    """The stand-in helper, found through SOTTO_AUDIOTAP; ``helper(mode)`` picks its behaviour.

    ``loopback`` sees macOS 14.5 (its platform check and ``platform.mac_ver``).
    Yields the control object; afterwards every helper started must be gone (reaped, no zombie).
    """
    script = tmp_path / "sotto-audiotap"
    script.write_text(STAND_IN.format(python=sys.executable))
    script.chmod(0o755)
    (tmp_path / "speech.f32").write_bytes(speech_48k_stereo.astype("<f4").tobytes())
    monkeypatch.setenv("SOTTO_AUDIOTAP", str(script))
    monkeypatch.setenv("FAKE_TAP_DIR", str(tmp_path))
    monkeypatch.setattr(loopback, "sys", types.SimpleNamespace(platform="darwin", modules=sys.modules))
    monkeypatch.setattr(platform, "mac_ver", lambda *a, **k: ("14.5", ("", "", ""), "arm64"))

    class Control:
        dir = tmp_path

        def __call__(self, mode: str) -> None:
            monkeypatch.setenv("FAKE_TAP_MODE", mode)

        def pids(self) -> list[int]:
            path = tmp_path / "pids"
            return [int(p) for p in path.read_text().split()] if path.exists() else []

        def alive(self) -> list[int]:
            """Started helpers still running, or exited but not reaped by us (a zombie of ours)."""
            left = []
            for pid in self.pids():
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                except OSError:
                    continue  # gone
                state, ppid = stat.rpartition(")")[2].split()[:2]
                if state != "Z" or int(ppid) == os.getpid():  # an orphan's zombie is its new parent's
                    left.append(pid)
            return left

    control = Control()
    yield control
    assert control.alive() == [], "a helper process was left behind"


def _collect(src: SystemAudioSource, samples: int, deadline_s: float) -> np.ndarray:
    parts, have = [], 0
    deadline = time.monotonic() + deadline_s
    while have < samples and time.monotonic() < deadline:
        chunk = src.read(0.2, timeout=0.5)
        if chunk is None:
            break
        parts.append(chunk)
        have += chunk.size
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


# -- the wire format and the sentences ------------------------------------------------------------

def test_header_is_parsed_and_strangers_are_refused():
    assert parse_header(b"SOTTO-TAP 1 rate=48000 channels=2 format=f32le") == TapFormat(48000, 2)
    assert parse_header(b"SOTTO-TAP 1 channels=1 format=f32le rate=44100 extra=ok\n") == TapFormat(44100, 1)
    assert TapFormat(48000, 2).frame_bytes == 8
    for bad in (b"", b"HELLO", b"SOTTO-TAP 2 rate=48000 channels=2 format=f32le",
                b"SOTTO-TAP 1 rate=48000 channels=2 format=s16le", b"SOTTO-TAP 1 rate=fast channels=2 format=f32le",
                b"SOTTO-TAP 1 channels=2 format=f32le", b"SOTTO-TAP 1 rate=48000 channels=0 format=f32le",
                b"\xff\xfe"):
        with pytest.raises(AudioDeviceError) as err:
            parse_header(bad)
        assert str(err.value) == INCOMPATIBLE


def test_every_exit_has_one_sentence():
    sentences = {code: exit_sentence(code) for code in (-11, 0, 2, 3, 4, 5, 6, 7, 9)}
    assert all(_one_sentence(s) for s in sentences.values()), sentences
    assert sentences[3] == MACOS_UNAVAILABLE and "BlackHole" in MACOS_UNAVAILABLE
    assert sentences[4] == PERMISSION_DENIED
    assert "Privacy & Security" in PERMISSION_DENIED and "System Audio Recording Only" in PERMISSION_DENIED
    assert sentences[5] == NO_OUTPUT and sentences[2] == sentences[7] == INCOMPATIBLE
    assert "signal 11" in sentences[-11] and "exit code 9" in sentences[9]
    assert all(_one_sentence(s) for s in (MISSING, INCOMPATIBLE, KEPT_CHANGING))


def test_the_helper_is_found_by_env_var_or_path(tmp_path, monkeypatch):
    program = tmp_path / "bin" / "sotto-audiotap"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n")
    monkeypatch.delenv("SOTTO_AUDIOTAP", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    if not (Path(macos_tap.__file__).resolve().parents[2] / "packaging/macos/build/sotto-audiotap").exists():
        with pytest.raises(AudioDeviceError) as err:
            find_helper()
        assert str(err.value) == MISSING
    program.chmod(0o644)  # not executable: not a program
    monkeypatch.setenv("SOTTO_AUDIOTAP", str(program))
    with pytest.raises(AudioDeviceError) as err:
        find_helper()
    assert _one_sentence(str(err.value)) and "SOTTO_AUDIOTAP" in str(err.value)
    program.chmod(0o755)
    assert find_helper() == program
    monkeypatch.delenv("SOTTO_AUDIOTAP")
    monkeypatch.setenv("PATH", str(program.parent))
    assert macos_tap.helper_candidates()[-1] == program
    assert find_helper() == program


# -- the darwin branch of loopback ----------------------------------------------------------------

def test_macos_versions_and_the_one_global_output(helper, monkeypatch):
    assert loopback.system_audio_unavailable() is None
    assert [(d.name, d.id, d.is_default) for d in list_output_devices()] == [("All system audio", "all", True)]
    with pytest.raises(AudioDeviceError) as err:
        open_system_source("system:speakers")  # the tap is global: there is no other output
    assert "speakers" in str(err.value) and _one_sentence(str(err.value))

    monkeypatch.setattr(platform, "mac_ver", lambda *a, **k: ("13.6.1", ("", "", ""), "arm64"))
    assert loopback.system_audio_unavailable() == MACOS_UNAVAILABLE
    assert list_output_devices() == []
    with pytest.raises(AudioDeviceError) as err:
        SystemAudioSource()
    assert str(err.value) == MACOS_UNAVAILABLE

    # a Python that sees the compatibility version 10.16: the helper decides (here: too old)
    monkeypatch.setattr(platform, "mac_ver", lambda *a, **k: ("10.16", ("", "", ""), "x86_64"))
    assert loopback.system_audio_unavailable() is None
    helper("exit:3:capturing system audio needs macOS 14.2 or newer")
    with pytest.raises(AudioDeviceError) as err:
        SystemAudioSource().start()
    assert str(err.value) == MACOS_UNAVAILABLE

    monkeypatch.setattr(platform, "mac_ver", lambda *a, **k: ("15.1", ("", "", ""), "arm64"))
    monkeypatch.setenv("SOTTO_AUDIOTAP", str(helper.dir / "missing"))
    assert "SOTTO_AUDIOTAP" in loopback.system_audio_unavailable()
    assert list_output_devices() == []


# -- capture through the helper --------------------------------------------------------------------

def test_speech_arrives_as_16k_mono(helper, jfk):
    helper("speech")
    src = open_system_source("system:all")
    assert src.device.name == "All system audio"
    src.start()
    got = _collect(src, jfk.size + RATE // 2, deadline_s=10.0)
    src.stop()
    assert got.dtype == np.float32 and got.ndim == 1
    assert got.size >= jfk.size  # every sample came through (at 4x real time: no gaps)
    lags = range(-200, 201)
    seg = slice(RATE, RATE * 9)
    corr = [float(np.dot(got[seg.start + k:seg.stop + k], jfk[seg])) for k in lags]
    lag = lags[int(np.argmax(corr))]
    a, b = got[seg.start + lag:seg.stop + lag], jfk[seg]
    r = float(np.corrcoef(a, b)[0, 1])
    assert r > 0.98, f"correlation {r:.3f} at lag {lag}"
    assert abs(lag) < 100
    gain = float(np.dot(a, b) / np.dot(b, b))
    assert 0.7 < gain < 0.8  # the mean of left (1.0) and right (0.5)
    assert src.overflows == 0 and src.samples_captured >= jfk.size - 64  # less what the resampler holds
    wait_for(lambda: helper.alive() == [], 3.0, "the helper to be reaped")
    assert (helper.dir / "eof").exists(), "the helper was not told to stop through stdin"


def test_a_pause_is_filled_with_silence(helper, jfk):
    helper("pause")
    src = SystemAudioSource()
    src.start()
    got = _collect(src, int(3.0 * RATE), deadline_s=8.0)
    src.stop()
    assert 2.8 * RATE <= got.size <= 3.8 * RATE  # 0.5 s speech, ~2 s silence, 0.5 s speech (and silence after)
    assert 1.7 <= src.silence_filled <= 3.0
    first, middle, rest = got[: RATE // 2 - 800], got[int(0.9 * RATE): int(2.2 * RATE)], got[int(2.2 * RATE):]
    assert np.abs(middle).max() == 0.0
    assert np.sqrt(np.mean(first ** 2)) > 0.01
    spoken = rest[np.abs(rest) > 0]
    assert spoken.size >= 0.45 * RATE and np.sqrt(np.mean(spoken ** 2)) > 0.01


@pytest.mark.parametrize("mode, sentence", [
    ("exit:4:no permission to record the system audio (System Audio Recording)", PERMISSION_DENIED),
    ("exit:5:there is no audio output device", NO_OUTPUT),
    ("exit:6:could not create the process tap ('!obj' (560947818))", exit_sentence(6)),
    ("exit:7:the tap delivers an unsupported format", INCOMPATIBLE),
    ("exit:2:unknown argument --stereo", INCOMPATIBLE),
    ("exit:0:", exit_sentence(0)),
    ("exit:42:odd", exit_sentence(42)),
    ("garbage", INCOMPATIBLE),
    ("exit:8:the default output changed", KEPT_CHANGING),  # restarted, but not for ever
])
def test_a_helper_that_cannot_start_says_why(helper, mode, sentence):
    helper(mode)
    src = SystemAudioSource()
    with pytest.raises(AudioDeviceError) as err:
        src.start()
    assert str(err.value) == sentence and _one_sentence(sentence)
    src.stop()


@pytest.mark.parametrize("mode, sentence", [
    ("exit-after-audio:4:no permission to record the system audio", PERMISSION_DENIED),
    ("exit-after-audio:6:the aggregate device stopped", exit_sentence(6)),
    ("crash", exit_sentence(-signal.SIGKILL)),
])
def test_a_helper_that_ends_while_capturing_says_why_after_the_audio(helper, mode, sentence):
    helper(mode)
    src = SystemAudioSource()
    src.start()
    audio = []
    with pytest.raises(AudioDeviceError) as err:
        for _ in range(100):
            chunk = src.read(0.1, timeout=1.0)
            assert chunk is not None
            audio.append(chunk)
    assert str(err.value) == sentence
    if mode != "crash":
        assert sum(c.size for c in audio) >= RATE // 4 - 200  # what came before the end is delivered
    src.stop()


def test_interrupt_and_stop_end_the_helper(helper):
    helper("quiet")
    src = SystemAudioSource()
    src.start()
    result = {}
    reader = threading.Thread(target=lambda: result.setdefault("read", src.read(60.0)))
    reader.start()
    time.sleep(0.3)  # let the read block (the quiet tap only yields filled silence)
    started = time.monotonic()
    src.interrupt()
    reader.join(2.0)
    assert not reader.is_alive() and result["read"] is None
    assert time.monotonic() - started < 1.0
    src.stop()
    wait_for(lambda: helper.alive() == [], 3.0, "the helper to end")
    assert (helper.dir / "eof").exists()


def test_a_helper_that_ignores_sigterm_is_killed(helper):
    helper("stubborn")
    src = SystemAudioSource()
    src.start()
    started = time.monotonic()
    src.stop(timeout=3.0)
    assert time.monotonic() - started < 2.5
    wait_for(lambda: helper.alive() == [], 3.0, "the helper to be killed")


def test_an_output_change_restarts_the_helper(helper):
    helper("change")
    src = SystemAudioSource()
    src.start()
    got = _collect(src, int(4.2 * RATE), deadline_s=6.0)
    src.stop()
    assert src.switches == 1 and len(helper.pids()) == 2
    assert got.size >= int(4.2 * RATE)  # 0.5 s before the change, 4 s (44.1 kHz mono) after it
    assert np.sqrt(np.mean(got[-2 * RATE:] ** 2)) > 0.01


def test_the_helper_is_gone_when_the_process_reading_it_dies(helper, tmp_path):
    """stdin closing is the helper's sign to stop: a reader killed outright leaves nothing behind."""
    import subprocess

    helper("quiet")
    code = (
        f"import sys; sys.path.insert(0, {str(Path(macos_tap.__file__).resolve().parents[2])!r})\n"
        "from core.audio.macos_tap import TapProcess, find_helper\n"
        "import threading\n"
        "tap = TapProcess(find_helper()); tap.open(threading.Event())\n"
        "print('open', flush=True); threading.Event().wait()\n"
    )
    reader = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert reader.stdout.readline().strip() == b"open"
    wait_for(lambda: len(helper.pids()) == 1, 3.0, "the helper to start")
    reader.kill()
    reader.wait()
    # the orphaned helper is re-parented (not our child): it is gone once it has exited
    wait_for(lambda: (helper.dir / "eof").exists(), 3.0, "the helper to see stdin close")
    wait_for(lambda: helper.alive() == [], 3.0, "the orphaned helper to exit")
