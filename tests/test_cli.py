"""The `sotto` command end to end: files written, bad input answered in one sentence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT


def sotto(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def _one_sentence(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("sotto:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_caption_jfk_to_german_writes_four_files(shared, tmp_path: Path):
    out = tmp_path / "out"
    proc = sotto("caption", str(shared / "asr" / "jfk.flac"), "--target", "de", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["captions.jsonl", "source.srt", "summary.json", "translation.srt"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["audio_seconds"] == pytest.approx(11.0, abs=0.05)
    assert summary["completed"] and summary["sentences"] >= 1 and summary["translation"]["target"] == "de"
    for key in ("ne_source_output", "ne_source_display", "ne_translation_output", "ne_translation_display"):
        assert key in summary["normalized_erasure"]
    assert set(summary["stage_seconds"]) == {"vad", "asr", "translate"} and summary["stage_seconds"]["asr"] > 0
    assert summary["real_time_factor"] > 0
    records = [json.loads(line) for line in (out / "captions.jsonl").read_text().splitlines()]
    assert records[0]["kind"] == "session" and records[0]["target"] == "de" and records[0]["started"] > 0
    assert {r["kind"] for r in records[1:]} == {"source", "translation"}
    assert all("wall" in r and "audio_time" in r for r in records[1:])
    srt = (out / "source.srt").read_text()
    assert "-->" in srt and "country" in srt.lower()
    assert (out / "translation.srt").read_text().count("-->") == srt.count("-->")
    # the live display printed finished lines and their translations, and said which model translated
    assert "country" in proc.stdout.lower()
    assert proc.stdout.count("Translations by gemma-3-270m, the small bundled model") == 1, proc.stdout


def test_caption_without_translation(shared, tmp_path: Path):
    out = tmp_path / "o"
    proc = sotto("caption", str(shared / "asr" / "librivox_sense_and_sensibility_01_austen_64kb-0870.wav"),
                 "--target", "none", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert not (out / "translation.srt").exists()
    assert json.loads((out / "summary.json").read_text())["translation"] is None


def test_silent_file_says_no_speech(tmp_path: Path):
    import numpy as np
    from conftest import write_wav

    path = write_wav(tmp_path / "silence.wav", np.zeros(16000 * 4, dtype=np.float32))
    proc = sotto("caption", str(path), "--target", "none", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0
    assert "No speech was detected" in proc.stderr
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["no_speech"] is True


@pytest.mark.parametrize("content", [b"", b"\x00\x01garbage" * 500])
def test_bad_audio_is_one_sentence_and_exit_1(tmp_path: Path, content: bytes):
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    line = _one_sentence(sotto("caption", str(path), "--target", "none"))
    assert "bad.wav" in line


def test_missing_file(tmp_path: Path):
    line = _one_sentence(sotto("caption", str(tmp_path / "none.wav")))
    assert "does not exist" in line


def test_missing_model_names_command(shared):
    line = _one_sentence(sotto("caption", str(shared / "asr" / "jfk.flac"), "--model", "whisper-medium"))
    assert "sotto models get whisper-medium" in line


def test_broken_gguf(shared, tmp_path: Path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + os.urandom(4096))
    line = _one_sentence(sotto("caption", str(shared / "asr" / "jfk.flac"), "--translator", str(bad)))
    assert "could not be loaded" in line


def test_invalid_setting_value():
    line = _one_sentence(sotto("settings", "set", "captions.mask_k", "12"))
    assert "captions.mask_k must be between 0 and 10" in line


def test_settings_set_and_show():
    proc = sotto("settings", "set", "translation.target", "ja")
    assert proc.returncode == 0, proc.stderr
    assert 'target = "ja"' in sotto("settings").stdout
    assert sotto("settings", "set", "translation.target", "de").returncode == 0


def test_models_list():
    proc = sotto("models")
    assert proc.returncode == 0
    for name in ("whisper-tiny.en", "whisper-base", "gemma-3-270m", "whisper-medium"):
        assert name in proc.stdout
    assert "ready" in proc.stdout and "not downloaded" in proc.stdout


def test_unexpected_error_is_one_sentence_pointing_to_log():
    # `models path` of an hf: reference that has no files yet is a clean ModelNotFound, not a crash
    line = _one_sentence(sotto("models", "path", "hf:someone/some-model/file.gguf"))
    assert "sotto models get hf:someone/some-model/file.gguf" in line


def test_screenshot_into_an_unwritable_place_is_one_sentence(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    line = _one_sentence(sotto("screenshot", str(blocker / "shots")))
    assert "Could not create" in line and "shots" in line


def test_the_gpu_benchmarks_run_from_sotto_bench():
    """`sotto bench gpu` and `sotto bench gpu-stream` reach bench/gpu.py and bench/gpu_stream.py (a
    device machine without Sotto set up runs them as `python -m bench.gpu`)."""
    for which, prog in (("gpu", "python -m bench.gpu"), ("gpu-stream", "python -m bench.gpu_stream")):
        proc = sotto("bench", which, "--help")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"usage: {prog}") and "--device" in proc.stdout
