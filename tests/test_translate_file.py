"""`sotto translate FILE --target LANG`: a text file line by line and subtitles cue by cue, through the
real command with the bundled translation model; bad input is one sentence."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SHARED
from test_cli import _one_sentence, sotto

from core.translate.quality import is_copy

NTREX_SRC = SHARED / "mt" / "ntrex128" / "newstest2019-src.eng.txt"

SRT = """1
00:00:01,000 --> 00:00:03,500
Good morning, everyone,
and thank you for coming.

2
00:00:04,000 --> 00:00:05,200
<i>Where is the train station?</i>

7
00:01:00,000 --> 00:01:02,000
2024
"""

VTT = """WEBVTT

NOTE written for the test

intro
00:00:01.000 --> 00:00:02.500 align:start
Thank you very much.

00:00:03.000 --> 00:00:04.000
I would like a cup of coffee.
"""


def _ntrex(*index: int) -> list[str]:
    if not NTREX_SRC.is_file():
        pytest.skip(f"NTREX-128 is missing at {NTREX_SRC}")
    lines = NTREX_SRC.read_text(encoding="utf-8").splitlines()
    return [lines[i] for i in index]


def _german(text: str) -> bool:
    return bool(re.search(r"\b(der|die|das|und|ist|ein|eine|den|zu|sich|nicht|Ich|Sie)\b", text, re.I))


def test_text_file_line_by_line_to_stdout(tmp_path: Path):
    lines = _ntrex(1, 2, 5)
    src = tmp_path / "talk.txt"
    src.write_text(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")
    proc = sotto("translate", str(src), "--target", "de")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split("\n")
    assert out[-1] == "" and len(out) == 5, proc.stdout  # four lines (one blank, kept), each ending in a newline
    assert out[1] == ""
    for source, translation in zip(lines, [out[0], out[2], out[3]], strict=True):
        assert translation and translation != source and _german(translation), (source, translation)
        assert not is_copy(source, translation), (source, translation)
    assert "Translating talk.txt into de" in proc.stderr


def test_subtitles_cue_by_cue_keep_numbers_and_timings(tmp_path: Path):
    src = tmp_path / "talk.srt"
    src.write_text(SRT, encoding="utf-8")
    out = tmp_path / "talk.de.srt"
    proc = sotto("translate", str(src), "--target", "de", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    blocks = out.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    assert [b.split("\n")[:2] for b in blocks] == [
        ["1", "00:00:01,000 --> 00:00:03,500"], ["2", "00:00:04,000 --> 00:00:05,200"],
        ["7", "00:01:00,000 --> 00:01:02,000"]]
    texts = [b.split("\n")[2:] for b in blocks]
    assert all(len(t) == 1 for t in texts), texts  # a two-line cue is translated as one sentence, one line
    assert "Morgen" in texts[0][0] and _german(texts[0][0])
    assert texts[1][0].startswith("<i>") and texts[1][0].endswith("</i>") and "Bahnhof" in texts[1][0]
    assert texts[2] == ["2024"]


def test_webvtt_header_notes_and_cue_settings_kept(tmp_path: Path):
    src = tmp_path / "talk.vtt"
    src.write_text(VTT, encoding="utf-8")
    proc = sotto("translate", str(src), "--target", "fr", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    blocks = proc.stdout.rstrip("\n").split("\n\n")
    assert blocks[0] == "WEBVTT" and blocks[1] == "NOTE written for the test"
    assert blocks[2].split("\n")[:2] == ["intro", "00:00:01.000 --> 00:00:02.500 align:start"]
    assert "merci" in blocks[2].lower()
    assert blocks[3].split("\n")[0] == "00:00:03.000 --> 00:00:04.000"
    assert "café" in blocks[3].lower()


@pytest.mark.parametrize(("name", "content", "says"), [
    ("none.txt", None, "does not exist"),
    ("empty.txt", b"\n  \n", "nothing to translate"),
    ("binary.txt", b"\xff\xfe\x00\x01\x80abc", "not a UTF-8 text file"),
    ("plain.srt", b"Hello there.\nNo cues here.\n", "no subtitle cues"),
])
def test_bad_file_is_one_sentence(tmp_path: Path, name: str, content: bytes | None, says: str):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    line = _one_sentence(sotto("translate", str(path), "--target", "de"))
    assert says in line


def test_unknown_language_is_one_sentence(tmp_path: Path):
    path = tmp_path / "a.txt"
    path.write_text("Hello.\n", encoding="utf-8")
    assert "translation.target must be one of" in _one_sentence(sotto("translate", str(path), "--target", "xx"))
    assert "needs a language" in _one_sentence(sotto("translate", str(path), "--target", "none"))


def test_ctrl_c_keeps_what_is_done(tmp_path: Path):
    lines = _ntrex(*range(1, 41))
    src = tmp_path / "long.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "long.de.txt"
    proc = subprocess.Popen([sys.executable, "-m", "app", "translate", str(src), "--target", "de", "--out", str(out)],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        for line in proc.stderr:  # the progress line comes once the first line is translated
            if line.startswith("Translating"):
                break
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 130, rest
    finally:
        proc.kill()
    kept = out.read_text(encoding="utf-8").splitlines()
    assert 1 <= len(kept) < len(lines)
    assert kept[0] != lines[0] and _german(kept[0])
    assert re.search(rf"Stopped: {len(kept)} of {len(lines)} lines translated, kept in ", rest), rest
