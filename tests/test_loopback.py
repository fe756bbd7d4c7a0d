"""System audio (loopback): capture what the speakers play.

The pure logic (mixing down, filling the gaps where an output delivers
nothing, choosing the output) is tested on its own; the capture itself for real
against a private PulseAudio server per test, whose null sink ``meeting`` is
the default output ("the speakers") and ``other`` a second one. Recordings are
played into them with ``paplay`` / ``pacat`` and captured from their monitors
through :class:`core.audio.loopback.SystemAudioSource` in this process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import wait_for

from core.audio import loopback
from core.audio.convert import downmix
from core.audio.loopback import (
    GapFiller,
    OutputDevice,
    SystemAudioSource,
    choose_output,
    list_output_devices,
    open_system_source,
    pulse_outputs,
)
from core.audio.macos_tap import MACOS_UNAVAILABLE
from core.errors import AudioDeviceError

RATE = 16000


def _one_sentence(msg: str) -> bool:
    return bool(msg) and msg.endswith(".") and ". " not in msg and "\n" not in msg


# -- pure logic ---------------------------------------------------------------------------------

def test_downmix_mixes_picks_and_passes_mono():
    stereo = np.array([[1.0, 0.0], [0.5, 0.5], [-1.0, 1.0]], dtype=np.float32)
    assert np.allclose(downmix(stereo), [0.5, 0.5, 0.0])
    assert np.allclose(downmix(stereo, "left"), [1.0, 0.5, -1.0])
    assert np.allclose(downmix(stereo, "right"), [0.0, 0.5, 1.0])
    assert np.allclose(downmix(stereo[:, :1], "right"), [1.0, 0.5, -1.0])  # one channel: it, whatever asked
    mono = np.arange(4, dtype=np.float64)
    out = downmix(mono)
    assert out.dtype == np.float32 and out.shape == (4,)
    assert downmix(np.zeros((0, 2), dtype=np.float32)).shape == (0,)
    with pytest.raises(ValueError):
        downmix(np.zeros((2, 2, 2)))


def _simulate(filler: GapFiller, arrivals: dict[float, int], until: float, poll: float = 0.1) -> int:
    """Feed chunks arriving at the given times, a reader asking every ``poll`` s; total samples produced."""
    total = 0
    polls = [(round(k * poll, 6), 0) for k in range(int(until / poll) + 1)]
    events = sorted(list(arrivals.items()) + polls)
    filler.start(0.0)
    for t, n in events:
        if n:
            filler.audio(n, t)
            total += n
        else:
            total += filler.silence_due(t)
    return total


def test_gap_filler_keeps_the_audio_clock_through_silence():
    # WASAPI-like: audio for 1 s in 10 ms packets, nothing for 3 s, audio again for 1 s
    arrivals = {round(0.01 * k, 6): 160 for k in range(1, 101)}
    arrivals |= {round(4.0 + 0.01 * k, 6): 160 for k in range(1, 101)}
    filler = GapFiller(RATE, tolerance=0.5)
    total = _simulate(filler, arrivals, until=5.0)
    assert abs(total / RATE - 5.0) < 0.12, total / RATE
    assert 2.8 < filler.filled / RATE < 3.1


def test_gap_filler_leaves_jitter_alone_and_fills_a_silent_start():
    # packets 300 ms apart (under the tolerance): nothing is added
    arrivals = {round(0.3 * k, 6): int(0.3 * RATE) for k in range(1, 11)}
    filler = GapFiller(RATE, tolerance=0.5)
    assert _simulate(filler, arrivals, until=3.0) == 10 * int(0.3 * RATE)
    assert filler.filled == 0
    # nothing ever arrives (nothing plays from the start): silence at real-time rate
    filler = GapFiller(RATE, tolerance=0.5)
    total = _simulate(filler, {}, until=2.0)
    assert abs(total / RATE - 2.0) < 0.11
    # never started: nothing owed
    assert GapFiller(RATE).silence_due(10.0) == 0


_DEVICES = [
    OutputDevice("Built-in Audio Analog Stereo", "alsa_output.pci-0000_00_1f.3.analog-stereo", False, 2,
                 "alsa_output.pci-0000_00_1f.3.analog-stereo.monitor"),
    OutputDevice("Jabra Evolve2 65", "bluez_output.50_C2_ED_00_00_01.1", True, 2,
                 "bluez_output.50_C2_ED_00_00_01.1.monitor"),
    OutputDevice("Meeting", "meeting", False, 2, "meeting.monitor"),
]


def test_choose_output_default_id_name_and_part():
    assert choose_output(_DEVICES, None).name == "Jabra Evolve2 65"
    assert choose_output(_DEVICES, "").name == "Jabra Evolve2 65"
    assert choose_output(_DEVICES, "meeting").id == "meeting"
    assert choose_output(_DEVICES, "alsa_output.pci-0000_00_1f.3.analog-stereo").name.startswith("Built-in")
    assert choose_output(_DEVICES, "built-in audio analog stereo").id.startswith("alsa_output")
    assert choose_output(_DEVICES, "jabra").id.startswith("bluez")
    no_default = [d for d in _DEVICES if not d.is_default]
    assert choose_output(no_default, None) is no_default[0]
    with pytest.raises(AudioDeviceError) as err:
        choose_output(_DEVICES, "nope")
    assert "'nope'" in str(err.value) and "sotto devices" in str(err.value) and _one_sentence(str(err.value))
    with pytest.raises(AudioDeviceError) as err:
        choose_output([], None)
    assert _one_sentence(str(err.value))


def test_pulse_outputs_needs_a_monitor_and_marks_the_default():
    sinks = [("a", "Speakers", 2), ("b", "", 6), ("c", "No monitor", 2)]
    out = pulse_outputs(sinks, {"a.monitor", "b.monitor", "mic"}, "b")
    assert [(d.id, d.name, d.is_default, d.channels, d.capture_id) for d in out] == [
        ("a", "Speakers", False, 2, "a.monitor"), ("b", "b", True, 6, "b.monitor")]


def test_macos_before_14_2_says_what_to_do_meanwhile(monkeypatch):
    import platform

    monkeypatch.setattr(loopback, "sys", types.SimpleNamespace(platform="darwin", modules={}))
    monkeypatch.setattr(platform, "mac_ver", lambda: ("13.6", ("", "", ""), "arm64"))  # no process taps yet
    with pytest.raises(AudioDeviceError) as err:
        SystemAudioSource()
    assert str(err.value) == MACOS_UNAVAILABLE and _one_sentence(MACOS_UNAVAILABLE) and "BlackHole" in MACOS_UNAVAILABLE
    assert list_output_devices() == []
    assert loopback.system_audio_unavailable() == MACOS_UNAVAILABLE
    monkeypatch.setattr(loopback, "sys", types.SimpleNamespace(platform="freebsd14", modules={}))
    with pytest.raises(AudioDeviceError):
        open_system_source("system")


def test_open_system_source_only_takes_system_specs():
    with pytest.raises(ValueError):
        open_system_source("mic")


# -- real capture through a private PulseAudio server ---------------------------------------------



def _start_server(monkeypatch) -> tuple[dict, Path]:
    if not shutil.which("pulseaudio") or not shutil.which("paplay"):
        pytest.fail("PulseAudio is not installed; the test command's setup installs it (packaging/setup.sh test)")
    runtime = Path(tempfile.mkdtemp(prefix="sotto-loopback-"))
    runtime.chmod(0o700)
    for key in ("PULSE_SERVER", "PULSE_SOURCE", "PULSE_SINK"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("PULSE_RUNTIME_PATH", str(runtime / "pulse"))
    env = dict(os.environ)
    subprocess.run(["pulseaudio", "-D", "-n", "--exit-idle-time=-1", "--load=module-native-protocol-unix"],
                   env=env, check=True, capture_output=True)
    wait_for(lambda: _pactl(env, "info").returncode == 0, 10, "pulseaudio")
    _pactl(env, "load-module", "module-null-sink", "sink_name=meeting",
           'sink_properties=device.description="Meeting\\ Speakers"', check=True)
    _pactl(env, "load-module", "module-null-sink", "sink_name=other", check=True)
    _pactl(env, "set-default-sink", "meeting", check=True)
    return env, runtime


def _stop_server(env: dict) -> None:
    subprocess.run(["pulseaudio", "--kill"], env=env, capture_output=True)
    wait_for(lambda: _pactl(env, "info").returncode != 0, 10, "pulseaudio to end")


def _pactl(env: dict, *args: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["pactl", *args], env=env, check=check, capture_output=True, text=True)


@pytest.fixture()
def pulse(monkeypatch):
    env, runtime = _start_server(monkeypatch)
    yield env
    _stop_server(env)
    shutil.rmtree(runtime, ignore_errors=True)


def _tone(freq: float, seconds: float) -> bytes:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype("<f4").tobytes()


def _play_tone(env: dict, device: str, freq: float, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(["pacat", "--playback", f"--device={device}", "--format=float32le", f"--rate={RATE}",
                             "--channels=1"], env=env, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(_tone(freq, seconds))
    proc.stdin.close()
    return proc


def _read_for(src, seconds: float, min_seconds: float = 0.25) -> np.ndarray:
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        chunk = src.read(min_seconds, timeout=0.5)
        assert chunk is not None
        out.append(chunk)
    return np.concatenate(out)


def _peak_hz(audio: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(audio))
    return float(np.fft.rfftfreq(audio.size, 1 / RATE)[int(np.argmax(spectrum))])


def _best_correlation(captured: np.ndarray, clip: np.ndarray) -> tuple[float, int]:
    """Normalised correlation of ``clip`` with ``captured`` at the best lag (clip starts at ``lag``)."""
    n = 1 << int(np.ceil(np.log2(captured.size + clip.size)))
    xc = np.fft.irfft(np.fft.rfft(captured, n) * np.conj(np.fft.rfft(clip, n)), n)[: captured.size - clip.size + 1]
    lag = int(np.argmax(xc))
    seg = captured[lag:lag + clip.size]
    return float(xc[lag] / (np.linalg.norm(seg) * np.linalg.norm(clip) + 1e-9)), lag



@pytest.mark.audio
def test_captures_what_the_speakers_play(pulse, shared, jfk, tiny_engine):
    src = open_system_source("system")
    assert src.name == "System audio (Meeting Speakers)" and src.device.id == "meeting"
    assert src.duration is None
    t0 = time.monotonic()
    src.start()
    chunks = [_read_for(src, 1.0)]  # quiet first: nothing plays, the clock must still run
    player = subprocess.Popen(["paplay", "--device=meeting", str(shared / "asr" / "jfk.flac")], env=pulse)
    while player.poll() is None:
        chunks.append(src.read(0.5, timeout=0.5))
    chunks.append(_read_for(src, 1.5))
    wall = time.monotonic() - t0
    src.stop()
    audio = np.concatenate(chunks)
    assert player.returncode == 0
    assert audio.dtype == np.float32 and audio.ndim == 1
    # the audio clock tracks the wall clock, gaps (before and after the clip) filled with silence
    assert abs(audio.size / RATE - wall) < 0.8, (audio.size / RATE, wall)
    assert src.silence_filled > 1.0 and src.overflows == 0
    # it is the clip: high correlation at one lag, speech energy there, silence before
    corr, lag = _best_correlation(audio, jfk)
    assert corr > 0.8, corr
    assert lag >= RATE * 0.9, lag
    assert np.sqrt(np.mean(audio[:int(0.9 * RATE)] ** 2)) < 1e-4
    assert np.sqrt(np.mean(audio[lag:lag + jfk.size] ** 2)) > 0.3 * np.sqrt(np.mean(jfk ** 2))
    # and the speech model hears JFK in it
    text = tiny_engine.transcribe(audio[max(0, lag - RATE // 2):lag + jfk.size + RATE // 2]).text.lower()
    assert "fellow americans" in text and "country" in text, text


@pytest.mark.audio
def test_named_output_is_the_one_captured(pulse):
    src = open_system_source("system:other")
    assert src.device.id == "other" and src.name == "System audio (Null Output)"
    assert open_system_source("system:MEETING speakers").device.id == "meeting"
    src.start()
    players = [_play_tone(pulse, "other", 440.0, 1.5), _play_tone(pulse, "meeting", 1000.0, 1.5)]
    chunks = []
    while any(p.poll() is None for p in players):
        chunks.append(src.read(0.25, timeout=0.5))
    chunks.append(_read_for(src, 0.5))
    src.stop()
    audio = np.concatenate(chunks)
    loud = audio[np.abs(audio) > 0.1]
    assert loud.size > RATE // 2
    assert abs(_peak_hz(audio) - 440.0) < 5.0, _peak_hz(audio)
    with pytest.raises(AudioDeviceError) as err:
        open_system_source("system:nope")
    msg = str(err.value)
    assert _one_sentence(msg) and "'nope'" in msg and "sotto devices" in msg, msg


@pytest.mark.audio
def test_listing_marks_the_default_output(pulse):
    devices = list_output_devices()
    assert [(d.id, d.name, d.is_default, d.channels, d.capture_id) for d in devices] == [
        ("meeting", "Meeting Speakers", True, 2, "meeting.monitor"),
        ("other", "Null Output", False, 2, "other.monitor"),
    ]
    _pactl(pulse, "set-default-sink", "other", check=True)
    assert [d.id for d in list_output_devices() if d.is_default] == ["other"]
    assert SystemAudioSource().device.id == "other"


@pytest.mark.audio
def test_capture_follows_the_default_output_when_it_is_switched(pulse):
    """Headphones plugged in (another default output): "system" moves to it, the clock keeps pace;
    a named output stays where it is."""
    follow, named = SystemAudioSource(), open_system_source("system:meeting")
    follow.start()
    named.start()
    t0 = time.monotonic()
    first = _read_for(follow, 0.5)
    _pactl(pulse, "set-default-sink", "other", check=True)
    chunks = [first]
    wait_for(lambda: chunks.append(follow.read(0.1, timeout=0.2)) or follow.switches == 1, 10, "the switch")
    assert follow.device.id == "other" and named.device.id == "meeting"
    named.read(0.1, timeout=0.2)  # drop what the named source heard so far
    players = [_play_tone(pulse, "other", 440.0, 1.5), _play_tone(pulse, "meeting", 1000.0, 1.5)]
    tail = []
    while any(p.poll() is None for p in players):
        tail.append(follow.read(0.25, timeout=0.5))
    tail.append(_read_for(follow, 0.5))
    heard_named = _read_for(named, 0.3)
    wall = time.monotonic() - t0
    follow.stop()
    named.stop()
    audio = np.concatenate([*chunks, *tail])
    assert abs(audio.size / RATE - wall) < 0.8, (audio.size / RATE, wall)  # no time lost in the switch
    assert abs(_peak_hz(np.concatenate(tail)) - 440.0) < 5.0, "the new default's sound is captured"
    assert abs(_peak_hz(heard_named) - 1000.0) < 5.0, "the named output is still the one captured"


@pytest.mark.audio
def test_quiet_output_still_gives_audio_in_real_time_and_interrupt_wakes_a_read(pulse):
    src = SystemAudioSource()
    src.start()
    t0 = time.monotonic()
    chunk = src.read(1.0)  # nothing plays: the null sink's monitor delivers nothing, like WASAPI loopback
    took = time.monotonic() - t0
    assert chunk is not None and chunk.size >= RATE and not chunk.any()
    assert 0.9 < took < 2.0, took
    result: dict = {}

    def blocked() -> None:
        t = time.monotonic()
        result["chunk"] = src.read(60.0)
        result["took"] = time.monotonic() - t

    reader = threading.Thread(target=blocked)
    reader.start()
    time.sleep(0.4)  # let it block
    src.interrupt()
    reader.join(2.0)
    assert not reader.is_alive() and result["chunk"] is None and result["took"] < 1.0, result
    src.stop()
    assert not [t for t in threading.enumerate() if t.name == "sotto-system-audio"]  # capture ended though quiet


@pytest.mark.audio
def test_server_killed_mid_capture_is_one_sentence_then_a_new_server_works(pulse, shared, monkeypatch):
    src = SystemAudioSource()
    src.start()
    player = subprocess.Popen(["paplay", "--device=meeting", str(shared / "asr" / "jfk.flac")], env=pulse)
    assert _read_for(src, 1.0).size > 0
    subprocess.run(["pulseaudio", "--kill"], env=pulse, capture_output=True)  # the sound server is gone
    player.wait(10)
    t0 = time.monotonic()
    with pytest.raises(AudioDeviceError) as err:
        while time.monotonic() - t0 < 5:
            src.read(0.25, timeout=0.5)
    assert time.monotonic() - t0 < 3
    msg = str(err.value)
    assert _one_sentence(msg) and "stopped" in msg, msg
    src.stop()
    # a restarted server is found again without restarting the process
    env, runtime = _start_server(monkeypatch)
    try:
        assert [d.id for d in list_output_devices()] == ["meeting", "other"]
        again = SystemAudioSource()
        again.start()
        proc = _play_tone(env, "meeting", 300.0, 1.0)
        chunks = []
        while proc.poll() is None:
            chunks.append(again.read(0.25, timeout=0.5))
        chunks.append(_read_for(again, 0.5))
        again.stop()
        audio = np.concatenate(chunks)
        assert np.abs(audio).max() > 0.2
    finally:
        _stop_server(env)
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.audio
def test_output_removed_mid_capture_is_reported(pulse):
    module = next(line.split()[0] for line in _pactl(pulse, "list", "short", "modules").stdout.splitlines()
                  if "sink_name=other" in line)
    src = open_system_source("system:other")
    src.start()
    _read_for(src, 0.5)
    _pactl(pulse, "unload-module", module, check=True)  # the headset is unplugged
    t0 = time.monotonic()
    with pytest.raises(AudioDeviceError) as err:
        while time.monotonic() - t0 < 5:
            src.read(0.25, timeout=0.5)
    assert time.monotonic() - t0 < 3
    assert _one_sentence(str(err.value)) and "Null Output" in str(err.value)
    src.stop()


@pytest.mark.audio
def test_no_sound_server_is_one_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("PULSE_SERVER", f"unix:{tmp_path}/no-such-socket")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(AudioDeviceError) as err:
        list_output_devices()
    msg = str(err.value)
    assert _one_sentence(msg) and "sound server" in msg, msg


@pytest.mark.audio
def test_sotto_captions_what_the_meeting_says(pulse, shared, tmp_path):
    """End to end through the front door: `sotto devices` lists the outputs, `sotto caption system`
    captions what is played into the default output, and SIGTERM keeps the captions."""
    import signal
    import sys

    from conftest import ROOT

    from core.captions import normalize_english, word_error_rate

    devices = subprocess.run([sys.executable, "-m", "app", "devices"], cwd=ROOT, env=pulse,
                             capture_output=True, text=True, timeout=60)
    assert devices.returncode == 0, devices.stderr
    assert "* " in devices.stdout and "Meeting Speakers  (system:meeting)" in devices.stdout, devices.stdout

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "app", "caption", "system", "--target", "none", "--out", str(out)],
                            cwd=ROOT, env=pulse, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (out / "captions.jsonl").exists() or proc.poll() is not None, 60, "capture to start")
    subprocess.run(["paplay", "--device=meeting", str(shared / "asr" / "jfk.flac")], env=pulse, check=True, timeout=60)
    wait_for(lambda: "country" in (out / "source.srt").read_text().lower() if (out / "source.srt").exists()
              else proc.poll() is not None, 30, "the last sentence to be committed")
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    text = " ".join(line for line in (out / "source.srt").read_text().splitlines()
                    if line and "-->" not in line and not line.isdigit())
    reference = normalize_english((shared / "asr" / "jfk.txt").read_text())
    assert word_error_rate(reference, normalize_english(text)) <= 0.15, text


@pytest.mark.audio
def test_stop_after_ends_a_live_caption_run_with_everything_written(pulse, tmp_path):
    import json
    import sys

    from conftest import ROOT

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "app", "caption", "system", "--target", "none", "--quiet",
                           "--stop-after", "3", "--out", str(out)], cwd=ROOT, env=pulse, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["captions.jsonl", "source.srt", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "realtime" and summary["source"] == "System audio (Meeting Speakers)"
    assert 2.0 <= summary["audio_seconds"] <= 6.0, summary["audio_seconds"]
    bad = subprocess.run([sys.executable, "-m", "app", "caption", "system", "--stop-after", "soon"], cwd=ROOT,
                         env=pulse, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "expected a positive number of seconds, got 'soon'" in bad.stderr


@pytest.mark.audio
def test_level_meter_listens_to_the_system_audio(pulse):
    """The settings panel's meter on "system": silence while nothing plays, loud while a tone plays."""
    from core.audio.level import SILENCE_DB, LevelMonitor

    levels: list[float] = []
    errors: list[str] = []
    loud = threading.Event()

    def on_level(db: float) -> None:
        levels.append(db)
        if db > -20.0:
            loud.set()

    monitor = LevelMonitor("system", on_level, errors.append)
    try:
        wait_for(lambda: len(levels) >= 5, 10, "the first readings")
        quiet = list(levels)
        player = _play_tone(pulse, "meeting", 440.0, 2.0)
        assert loud.wait(10), (levels[-5:], errors)
        player.wait(10)
    finally:
        monitor.stop()
    assert not errors and not monitor.alive
    assert max(quiet) <= SILENCE_DB + 1, quiet


@pytest.mark.audio
@pytest.mark.qt
def test_first_run_welcome_listens_to_the_sound_chosen_checks_the_engine_and_starts(pulse, qtbot, tmp_path,
                                                                                   monkeypatch):
    """The desktop's first start: the welcome asks what to caption (each answer saved at once), its level
    meter hears a tone played to the speakers once "what the computer plays" is chosen, the engine
    calibration runs with progress and its choice is applied, and "Start captions" starts them."""
    from PySide6.QtWidgets import QRadioButton

    from app.controllers.app import AppController
    from core.asr.calibration import load_calibration
    from core.session.service import ServiceState
    from core.settings import load_settings

    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    c = AppController()  # no settings file: a first run, its windows shown (offscreen)
    try:
        welcome = c.welcome
        assert welcome is not None and welcome.view.isVisible()
        progress: list[str] = []
        c.calibration.progress.connect(lambda fraction, text: progress.append(text))
        welcome.view.findChild(QRadioButton, "source_system").click()
        assert load_settings().audio.source == "system"
        welcome.view.target.setCurrentIndex(welcome.view.target.findData("de"))
        assert load_settings().translation.target == "de"
        bar, _note = welcome.view._meters["mic"]
        assert not bar.isVisibleTo(welcome.view)  # only the sound chosen is metered
        player = _play_tone(pulse, "meeting", 440.0, 3.0)
        qtbot.waitUntil(lambda: welcome.view.level("system")[0] > -20, timeout=10_000)
        player.wait(10)
        qtbot.waitUntil(lambda: welcome.view.calibration_text.text().startswith("Done."), timeout=600_000)
        cal = load_calibration()
        assert cal is not None and cal.target == "de" and cal.choice, cal
        assert progress and welcome.view.calibration.value() == welcome.view.calibration.maximum() > 0
        saved = load_settings()
        assert all(saved.value(key) == value for key, value in cal.settings.items()), (cal.settings, saved)
        assert cal.reason in welcome.view.calibration_text.text()
        welcome.view.start.click()
        assert not welcome.view.isVisible()
        qtbot.waitUntil(lambda: c.service.state in (ServiceState.LOADING, ServiceState.RUNNING), timeout=10_000)
        c.toggle_start()
        qtbot.waitUntil(lambda: c.service.state == ServiceState.IDLE, timeout=120_000)
    finally:
        c.shutdown()
