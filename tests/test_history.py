"""Caption history, settings v2 and model references: fast tests of the pieces the app relies on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ModelError, SettingsError, SottoError
from core.session.history import CaptionHistory, export_entries, read_session
from core.session.journal import CaptionJournal
from core.settings import Settings, check_combination, load_settings
from core.stream import FrozenTranslation, Sentence, TranscriptUpdate, TranslationUpdate


def _journal(directory: Path) -> None:
    """A session journaled through the real writer: two sentences, the first one translated."""
    first = Sentence(0, " Hello there.", 0.5, 2.0)
    second = Sentence(1, "Good news today.", 2.5, 4.25)
    j = CaptionJournal(directory, translate=True, meta={"source": "talk.wav", "target": "de"})
    j.transcript(1.0, TranscriptUpdate([first], "", "", 2.0, 2.0), "")
    j.translation(1.5, TranslationUpdate([FrozenTranslation(first, "Hallo.")], "", "", 2.0), "")
    j.transcript(2.0, TranscriptUpdate([second], "", "", 4.5, 2.0), "")
    j.close({"done": True})


def test_sessions_read_back_search_and_export(tmp_path: Path):
    history = CaptionHistory(tmp_path / "history")
    first, second = history.new_session_dir(), history.new_session_dir()
    assert first != second and first.parent == second.parent
    _journal(first)
    session = read_session(first)
    assert session.source == "talk.wav" and session.target == "de" and session.started > 0
    assert [(e.index, e.source, e.translation) for e in session.entries] == [
        (0, "Hello there.", "Hallo."), (1, "Good news today.", None)]
    assert [s.name for s in history.sessions()] == [first.name]  # the empty session is left out
    assert [e.source for _, e in history.search("GOOD")] == ["Good news today."]
    assert [e.source for _, e in history.search("hallo")] == ["Hello there."]

    srt = export_entries(session.entries, tmp_path / "x.srt", which="both").read_text()
    assert srt.startswith("1\n00:00:00,500 --> 00:00:02,000\nHello there.\nHallo.\n")
    assert "2\n00:00:02,500 --> 00:00:04,250\nGood news today.\n" in srt
    vtt = export_entries(session.entries, tmp_path / "x.vtt", which="translation").read_text()
    assert vtt.startswith("WEBVTT\n") and "Hallo." in vtt and "Good news" not in vtt
    txt = export_entries(session.entries, tmp_path / "x.txt", which="source").read_text()
    assert txt == "Hello there.\nGood news today.\n"
    with pytest.raises(SottoError, match="not 'pdf'"):
        export_entries(session.entries, tmp_path / "x.pdf")


def test_a_torn_last_line_is_skipped(tmp_path: Path):
    _journal(tmp_path)
    with open(tmp_path / "captions.jsonl", "a", encoding="utf-8") as f:
        f.write('{"kind": "translation", "frozen": [{"ind')
    session = read_session(tmp_path)
    assert session.damaged_lines == 1 and len(session.entries) == 2
    assert json.loads((tmp_path / "captions.jsonl").read_text().splitlines()[0])["kind"] == "session"


def test_overlay_settings_are_validated_and_version_1_files_load(tmp_path: Path):
    s = Settings().with_value("overlay.text_color", "#00ff00").with_value("overlay.lines", "4")
    assert s.overlay.text_color == "#00ff00" and s.overlay.lines == 4
    with pytest.raises(SettingsError, match="overlay.text_color must be a colour like #ffcc00"):
        s.with_value("overlay.text_color", "green")
    with pytest.raises(SettingsError, match="overlay.lines must be between 1 and 8"):
        s.with_value("overlay.lines", 0)
    path = tmp_path / "settings.toml"
    path.write_text("version = 1\n[captions]\nmask_k = 4\n")
    old = load_settings(path)
    assert old.captions.mask_k == 4 and old.overlay.font_size == Settings().overlay.font_size


def test_settings_that_do_not_fit_together_are_refused():
    check_combination(Settings())
    with pytest.raises(SettingsError, match="English only"):
        check_combination(Settings().with_value("asr.language", "fr"))
    check_combination(Settings().with_value("asr.model", "whisper-base").with_value("asr.language", "fr"))
    with pytest.raises(SettingsError, match="spoken language"):
        check_combination(Settings().with_value("translation.target", "fr").with_value("asr.model", "whisper-base")
                          .with_value("asr.language", "fr"))


def test_model_references_are_checked_by_kind(tmp_path: Path):
    from core.models.store import check_reference

    check_reference("whisper-tiny.en", "whisper-ct2")
    check_reference("gemma-3-270m", "gguf")
    check_reference("hf:owner/repo/model.gguf", "gguf")
    with pytest.raises(ModelError, match="speech model"):
        check_reference("whisper-base", "gguf")
    with pytest.raises(ModelError, match="There is no model at"):
        check_reference(str(tmp_path / "nothing.gguf"), "gguf")
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.bin").write_bytes(b"x")
    (folder / "config.json").write_text("{}")
    check_reference(str(folder), "whisper-ct2")
    with pytest.raises(ModelError, match="needs a .gguf file"):
        check_reference(str(folder), "gguf")


def test_restart_needed_names_only_what_waits_for_the_next_start():
    from core.session.service import restart_needed, source_spec

    base = Settings()
    new = base.with_value("translation.beta", 0.7).with_value("captions.mask_k", 1).with_value("overlay.lines", 3)
    assert restart_needed(base, new) == []
    new = new.with_value("asr.model", "whisper-base").with_value("audio.source", "demo")
    assert restart_needed(base, new) == ["asr.model", "audio.source"]
    assert source_spec(base) == ("mic", True)
    assert source_spec(base.with_value("audio.device", "USB")) == ("mic:USB", True)
    spec, live = source_spec(new)
    assert spec.endswith("jfk.flac") and not live


def test_level_of_silence_and_of_a_full_scale_tone():
    import numpy as np

    from core.audio.level import SILENCE_DB, level_dbfs

    assert level_dbfs(np.zeros(1600, dtype=np.float32)) == SILENCE_DB
    tone = np.sin(np.linspace(0, 2 * np.pi * 440, 16000)).astype(np.float32)
    assert level_dbfs(tone) == pytest.approx(-3.01, abs=0.05)
    assert level_dbfs(np.zeros(0, dtype=np.float32)) == SILENCE_DB
