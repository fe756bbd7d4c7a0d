"""The microphone path for real: PulseAudio virtual source → ALSA → PortAudio → sounddevice → captions.

Each test starts its own PulseAudio server in a private runtime directory, with
a null sink ``feed`` whose monitor is remapped to the default source
``virtmic``; ``paplay --device=feed`` speaks a shared recording into it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, wait_for

from core.captions import normalize_english, word_error_rate

pytestmark = pytest.mark.audio




@pytest.fixture()
def pulse():
    if not shutil.which("pulseaudio") or not shutil.which("paplay"):
        pytest.fail("PulseAudio is not installed; the test command's setup installs it (packaging/setup.sh test)")
    runtime = Path(tempfile.mkdtemp(prefix="sotto-pulse-"))
    runtime.chmod(0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PULSE_RUNTIME_PATH": str(runtime / "pulse")}
    subprocess.run(
        ["pulseaudio", "-D", "-n", "--exit-idle-time=-1", "--load=module-native-protocol-unix",
         "--load=module-null-sink sink_name=feed"],
        env=env, check=True, capture_output=True,
    )
    wait_for(lambda: subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0, 10, "pulseaudio")
    subprocess.run(["pactl", "load-module", "module-remap-source", "master=feed.monitor", "source_name=virtmic"],
                   env=env, check=True, capture_output=True)
    subprocess.run(["pactl", "set-default-source", "virtmic"], env=env, check=True)
    yield env
    subprocess.run(["pulseaudio", "--kill"], env=env, capture_output=True)
    shutil.rmtree(runtime, ignore_errors=True)


def _start_caption(env: dict, out: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "caption", "mic:pulse", "--target", "none", "--out", str(out)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wait_for(lambda: (out / "captions.jsonl").exists() or proc.poll() is not None, 60, "recording to start")
    return proc


def test_devices_lists_the_pulse_input(pulse):
    proc = subprocess.run([sys.executable, "-m", "app", "devices"], cwd=ROOT, env=pulse,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "pulse" in proc.stdout


def test_microphone_captions_a_played_recording(pulse, shared, tmp_path: Path):
    out = tmp_path / "out"
    proc = _start_caption(pulse, out)
    time.sleep(1.0)  # let the stream settle before speaking into it
    subprocess.run(["paplay", "--device=feed", str(shared / "asr" / "jfk.flac")], env=pulse, check=True, timeout=60)
    time.sleep(3.0)  # the pause after speech ends the utterance
    proc.send_signal(signal.SIGTERM)  # a graceful stop: captions finished and files written
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "realtime" and summary["overflows"] == 0
    text = " ".join(line for line in (out / "source.srt").read_text().splitlines() if line and "-->" not in line
                    and not line.isdigit())
    ref = normalize_english((shared / "asr" / "jfk.txt").read_text())
    assert word_error_rate(ref, normalize_english(text)) <= 0.15, text
    assert summary["latency_seconds"]["lag"]["max"] < 10


def test_device_that_disappears_is_reported_and_captions_kept(pulse, shared, tmp_path: Path):
    out = tmp_path / "out"
    proc = _start_caption(pulse, out)
    time.sleep(1.0)
    subprocess.run(["paplay", "--device=feed", str(shared / "asr" / "jfk.flac")], env=pulse, check=True, timeout=60)
    time.sleep(2.5)
    subprocess.run(["pulseaudio", "--kill"], env=pulse, capture_output=True)  # the "device" is gone
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    line = [ln for ln in stderr.splitlines() if ln.startswith("sotto:")]
    assert line and ("stopped" in line[0] or "unplugged" in line[0]), stderr
    assert (out / "summary.json").exists()
    assert "country" in (out / "captions.jsonl").read_text().lower()


_LEVEL_SCRIPT = """
import sys, threading, time
from core.audio.level import LevelMonitor
t0 = time.monotonic()
done = threading.Event()
monitor = LevelMonitor("pulse", lambda db: print(f"{time.monotonic() - t0:.2f} {db:.1f}", flush=True),
                       lambda msg: (print("error", msg, flush=True), done.set()))
threading.Thread(target=lambda: (sys.stdin.readline(), done.set()), daemon=True).start()
done.wait(120)
monitor.stop()
print("alive", monitor.alive, flush=True)
"""


def test_level_meter_follows_the_microphone(pulse, shared):
    # Played only once the meter has read 1.5 s of the quiet input: a fixed wait raced the meter's
    # start-up (imports and the stream opening take longer on a busy machine), and the speech fell
    # into what the test took for the quiet part.
    proc = subprocess.Popen([sys.executable, "-c", _LEVEL_SCRIPT], cwd=ROOT, env=pulse, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before: list[str] = []
    while True:
        line = proc.stdout.readline()
        assert line and not line.startswith("error"), (line, before, proc.stderr.read() if not line else "")
        before.append(line)
        if float(line.split()[0]) >= 1.5:
            break
    played_at = float(before[-1].split()[0])  # the meter's clock when the speech starts to play
    subprocess.run(["paplay", "--device=feed", str(shared / "asr" / "jfk.flac")], env=pulse, check=True, timeout=60)
    stdout, stderr = proc.communicate("stop\n", timeout=60)
    assert proc.returncode == 0, stderr
    assert "error" not in stdout, stdout
    stdout = "".join(before) + stdout
    readings = [tuple(map(float, line.split())) for line in stdout.splitlines() if line[:1].isdigit()]
    quiet = [db for t, db in readings if t <= played_at]
    loud = [db for t, db in readings if played_at + 1.0 < t]
    assert quiet and loud and len(readings) > 40, stdout
    assert max(quiet) < -60 and max(loud) > -35, (quiet, loud)
    assert stdout.strip().endswith("alive False")
