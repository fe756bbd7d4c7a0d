"""Meeting audio: the microphone as "me" and what the computer plays as "them", in one run.

The echo gate is tested on its own with real speech mixed as a laptop would hear
it; the whole thing end to end through `sotto caption both` against a private
PulseAudio server whose null sink ``meeting`` is the speakers and whose default
source ``fakemic`` is fed by a second null sink ``micsink``: a recording played
into ``meeting`` is what the others say, one played into ``micsink`` is the user.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, SHARED, wait_for

from core.audio import decode_file
from core.audio.echo import EchoGate
from core.captions import normalize_english, word_error_rate

RATE = 16000
THEM_CLIP, ME_CLIP = "jfk.flac", "librispeech_1089-134686-0000.flac"
# tiny.en int8 on THEM_CLIP through the speakers: 0.0-0.09 with AVX-512 VNNI; with oneDNN's AVX2 kernels it
# hears "And so am I fellow Americans ... Thank you." (0.18, a "Thank you." made up after the clip; issue
# #27). A stream lost or cut loses half of the clip or more.
THEM_WER = 0.25


# -- the echo gate, with real speech ------------------------------------------------------------

def _speech(name: str, seconds: float = 10.0) -> np.ndarray:
    audio = decode_file(SHARED / "asr" / name)[: int(seconds * RATE)]
    return np.pad(audio, (0, int(seconds * RATE) - audio.size))


def _through(gate: EchoGate, reference: np.ndarray, mic: np.ndarray, chunk: float = 0.37) -> np.ndarray:
    """Feed both streams in live-sized chunks (system first, as the pipeline reads them)."""
    n, out = int(chunk * RATE), []
    for i in range(0, mic.size, n):
        gate.reference(reference[i:i + n])
        out.append(gate.filter(mic[i:i + n]))
    return np.concatenate(out)


def _speech_energy(audio: np.ndarray) -> float:
    return float(np.sum(audio.astype(np.float64) ** 2))


def _delayed(audio: np.ndarray, seconds: float, gain: float) -> np.ndarray:
    shift = int(seconds * RATE)
    return gain * np.concatenate([np.zeros(shift, np.float32), audio[: audio.size - shift]])


def test_echo_from_the_speakers_is_silenced(tiny_engine):
    them = _speech(THEM_CLIP)
    noise = np.random.default_rng(1).normal(0, 1e-3, them.size).astype(np.float32)
    mic = _delayed(them, 0.12, 0.5) + noise  # the laptop's microphone hears the speakers, 120 ms late
    gate = EchoGate()
    out = _through(gate, them, mic)
    assert 0 <= mic.size - out.size <= int(2.9 * RATE), "at most the last seconds wait for their reference"
    assert abs(gate.lag * 0.02 - 0.12) <= 0.04, gate.lag
    kept = _speech_energy(out) / _speech_energy(mic)
    heard = tiny_engine.transcribe(out).text
    print(f"echo only: {kept:.3f} of the energy kept, lag {gate.lag * 20} ms, gain {gate.gain:.3f}, heard {heard!r}")
    assert kept < 0.1, kept
    assert len(heard.split()) <= 2 and "country" not in heard.lower(), heard


def test_the_first_word_of_an_echo_the_system_audio_delivers_late_is_silenced():
    """On a real sound server the microphone heard the speakers 0.46 s before the system stream delivered
    what they played (the gate's lag: -23 frames), from the first second of a meeting on. Judged before
    the two streams held enough sound in common to estimate the echo, "And" was captioned as the user."""
    them = _delayed(_speech(THEM_CLIP), 0.5, 1.0)  # half a second of the meeting's silence first
    noise = np.random.default_rng(2).normal(0, 1e-3, them.size).astype(np.float32)
    reference = _delayed(them, 0.46, 1.0)  # what the speakers played, as the system stream delivers it
    mic = 0.5 * them + noise
    gate = EchoGate()
    out = _through(gate, reference, mic)
    assert abs(gate.lag * 0.02 + 0.46) <= 0.04, gate.lag
    first = slice(0, int(2.0 * RATE))  # "And so my fellow" (0.6 of its energy came through before)
    kept = _speech_energy(out[first]) / _speech_energy(mic[first])
    assert kept < 0.1, kept
    assert _speech_energy(out) / _speech_energy(mic[: out.size]) < 0.1


def test_double_talk_comes_through_and_headphones_are_untouched(tiny_engine):
    """The others speak alone for 3 s (the gate learns the echo), then the user talks over them."""
    them = _speech(THEM_CLIP, 14)
    me = np.concatenate([np.zeros(3 * RATE, np.float32), _speech(ME_CLIP, 11)])
    mic = _delayed(them, 0.12, 0.3) + me
    gate = EchoGate()
    out = _through(gate, them, mic)
    gated = _wer(ME_CLIP, tiny_engine.transcribe(out[3 * RATE:]).text)
    raw = _wer(ME_CLIP, tiny_engine.transcribe(mic[3 * RATE:]).text)
    print(f"double talk: WER of the user's words {gated:.3f} through the gate, {raw:.3f} without it")
    assert gated <= 0.3 and gated <= raw + 0.1, (gated, raw)
    assert len(tiny_engine.transcribe(out[: 3 * RATE]).text.split()) <= 2, "the others alone: gated"
    # headphones: the microphone hears only the user, and nothing of it is touched
    gate = EchoGate()
    out = _through(gate, them, me)
    mine = me[: out.size]
    assert _speech_energy(mine * (out != 0)) / _speech_energy(mine) > 0.98
    assert gate.gated_seconds < 0.5, gate.gated_seconds


# -- end to end on a real sound server ----------------------------------------------------------

def _pactl(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["pactl", *args], env=env, check=True, capture_output=True, text=True)


@pytest.fixture()
def meeting(tmp_path):
    """A private PulseAudio server: speakers ``meeting`` (default sink), microphone ``fakemic`` fed
    by ``micsink``; settings point the microphone at it."""
    if not shutil.which("pulseaudio") or not shutil.which("paplay"):
        pytest.fail("PulseAudio is not installed; the test command's setup installs it (packaging/setup.sh test)")
    runtime = Path(tempfile.mkdtemp(prefix="sotto-meeting-"))
    runtime.chmod(0o700)
    env = {k: v for k, v in os.environ.items() if k not in ("PULSE_SERVER", "PULSE_SOURCE", "PULSE_SINK")}
    env.update(XDG_RUNTIME_DIR=str(runtime), PULSE_RUNTIME_PATH=str(runtime / "pulse"),
               SOTTO_CONFIG_DIR=str(tmp_path / "config"), SOTTO_DATA_DIR=str(tmp_path / "data"))
    subprocess.run(["pulseaudio", "-D", "-n", "--exit-idle-time=-1", "--load=module-native-protocol-unix",
                    "--load=module-null-sink sink_name=meeting", "--load=module-null-sink sink_name=micsink"],
                   env=env, check=True, capture_output=True)
    wait_for(lambda: subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0, 10,
             "pulseaudio")
    _pactl(env, "set-default-sink", "meeting")
    _pactl(env, "load-module", "module-remap-source", "master=micsink.monitor", "source_name=fakemic")
    _pactl(env, "set-default-source", "fakemic")
    subprocess.run([sys.executable, "-m", "app", "settings", "set", "audio.device", "pulse"], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    yield env
    subprocess.run(["pulseaudio", "--kill"], env=env, capture_output=True)
    # --kill only signals the daemon: removed before it has exited, its runtime folder comes back (pid file)
    wait_for(lambda: subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode != 0, 10,
             "pulseaudio to exit")
    shutil.rmtree(runtime, ignore_errors=True)


def _caption_both(env: dict, out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "app", "caption", "both", "--target", "none", "--out", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (out / "captions.jsonl").exists() or proc.poll() is not None, 90, "capture to start")
    assert proc.poll() is None, proc.communicate()
    return proc


def _said(out: Path) -> dict[str, str]:
    """What source.srt says per speaker."""
    said: dict[str, list[str]] = {"Me": [], "Them": []}
    srt = out / "source.srt"
    for line in (srt.read_text().splitlines() if srt.exists() else []):
        speaker, sep, text = line.partition(": ")
        if sep and speaker in said:
            said[speaker].append(text)
    return {k: " ".join(v) for k, v in said.items()}


def _said_to_the_end(out: Path) -> bool:
    """Whether Them's captions reach the clip's last word: JFK says "country" twice, and a line may
    end after the first ("… ask not what your country can do for you")."""
    return _said(out)["Them"].lower().count("country") >= 2


def _wer(clip: str, text: str) -> float:
    reference = normalize_english((SHARED / "asr" / clip).with_suffix(".txt").read_text())
    return word_error_rate(reference, normalize_english(text))


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr


@pytest.mark.audio
def test_both_captions_me_and_them_each_with_its_label(meeting, tmp_path):
    out = tmp_path / "out"
    proc = _caption_both(meeting, out)
    players = [subprocess.Popen(["paplay", "--device=meeting", str(SHARED / "asr" / THEM_CLIP)], env=meeting),
               subprocess.Popen(["paplay", "--device=micsink", str(SHARED / "asr" / ME_CLIP)], env=meeting)]
    for p in players:
        assert p.wait(60) == 0
    wait_for(lambda: _said_to_the_end(out) and "sauce" in _said(out)["Me"].lower()
             or proc.poll() is not None, 60, "both speakers' last sentences")
    _stop(proc)
    said = _said(out)
    print(said)
    assert _wer(THEM_CLIP, said["Them"]) <= THEM_WER, said["Them"]
    # tiny.en in int8 (asr.compute_dtype auto) gets 5 of this clip's 28 words wrong even offline
    # (streaming WER 0.179; 0.143 in float32): 0.2 still fails a stream lost or cut
    assert _wer(ME_CLIP, said["Me"]) <= 0.2, said["Me"]
    # the journal and the history carry the speakers
    from core.session.history import read_session

    speakers = {e.speaker for e in read_session(out).entries}
    assert speakers == {"me", "them"}


@pytest.mark.audio
def test_the_meeting_leaking_into_the_microphone_is_captioned_once_as_them(meeting, tmp_path):
    # laptop speakers: what the meeting says reaches the microphone at half volume
    _pactl(meeting, "load-module", "module-loopback", "source=meeting.monitor", "sink=micsink", "latency_msec=30")
    inputs = _pactl(meeting, "list", "short", "sink-inputs").stdout.split()
    _pactl(meeting, "set-sink-input-volume", inputs[0], "50%")
    out = tmp_path / "out"
    proc = _caption_both(meeting, out)
    assert subprocess.run(["paplay", "--device=meeting", str(SHARED / "asr" / THEM_CLIP)], env=meeting,
                          timeout=60).returncode == 0
    wait_for(lambda: _said_to_the_end(out) or proc.poll() is not None, 60, "the last sentence")
    _stop(proc)
    said = _said(out)
    print(said)
    assert _wer(THEM_CLIP, said["Them"]) <= THEM_WER, said["Them"]
    assert said["Me"] == "", f"the echo was captioned as me: {said['Me']!r}"


@pytest.mark.audio
@pytest.mark.qt
def test_settings_panel_meters_both_streams(qtbot, meeting, monkeypatch):
    """Caption from "Meeting": the Audio tab shows a level for the microphone and one for the
    system audio, each following its own sound."""
    for key in ("XDG_RUNTIME_DIR", "PULSE_RUNTIME_PATH", "SOTTO_CONFIG_DIR", "SOTTO_DATA_DIR"):
        monkeypatch.setenv(key, meeting[key])
    import sounddevice

    from app.controllers.app import AppController

    # PortAudio lists its devices once per process: start it afresh against this test's sound server
    sounddevice._terminate()
    sounddevice._initialize()
    controller = AppController(show_windows=False, preload=False)
    try:
        assert controller.apply_setting("audio.source", "both")
        panel = controller.show_settings()
        qtbot.addWidget(panel)
        panel.tabs.setCurrentIndex(next(i for i in range(panel.tabs.count()) if panel.tabs.tabText(i) == "Audio"))
        qtbot.wait(1500)  # both meters open their streams and read silence
        assert panel.level("mic")[0] <= -59 and panel.level("system")[0] <= -59
        player = subprocess.Popen(["paplay", "--device=meeting", str(SHARED / "asr" / THEM_CLIP)], env=meeting)
        qtbot.waitUntil(lambda: panel.level("system")[0] > -40 or bool(panel.level("system")[1]), timeout=40_000)
        assert panel.level("system")[0] > -40, panel.level("system")
        assert panel.level("mic")[0] <= -59, "nothing plays into the microphone"
        player.terminate()
        player.wait(10)
        mic_player = subprocess.Popen(["paplay", "--device=micsink", str(SHARED / "asr" / ME_CLIP)], env=meeting)
        qtbot.waitUntil(lambda: panel.level("mic")[0] > -40 or bool(panel.level("mic")[1]), timeout=40_000)
        assert panel.level("mic")[0] > -40, panel.level("mic")
        mic_player.terminate()
        mic_player.wait(10)
        assert not any(note for _, note in (panel.level("mic"), panel.level("system")))
    finally:
        controller.shutdown()
    assert not [t.name for t in threading.enumerate() if t.name == "sotto-level"]
