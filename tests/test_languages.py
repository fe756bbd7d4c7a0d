"""A spoken language other than English, from the first run: the welcome (and Settings) choose a
multilingual speech model with it and say so, the combination check covers every model a session
runs, and real Spanish speech captioned with what the welcome chose comes out in Spanish.

The speech is ../shared/data/gathered/lang/fleurs_es.flac: two FLEURS recordings with their human
transcripts (source and licence in that folder's README.md). Data from public repositories is kept in
the shared folder, never in the project; where a machine does not have it yet, the speech test is
skipped and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, Recorder

from core.captions.metrics import normalize_english, word_error_rate
from core.errors import SettingsError
from core.settings import Settings, check_combination, english_only, load_settings

SPANISH = ROOT.parent / "shared" / "data" / "gathered" / "lang" / "fleurs_es.flac"
# base alone hears this recording with a few wrong words; tiny.en, the English default, writes English for
# it (nearly every word wrong): the bound sits far from both
WER_BOUND = 0.30


def _multilingual(settings: Settings) -> bool:
    """Whether every speech model the settings run understands more than English."""
    asr = settings.asr
    models = [asr.verifier] if asr.engine == "speculative" else [asr.model] + ([asr.verifier] if asr.verify_lines
                                                                             else [])
    return not any(english_only(m) for m in models)


@pytest.fixture()
def app_dirs(tmp_path: Path, monkeypatch) -> Path:
    """Private settings and data directories: no settings file, so the app's start is a first run."""
    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


def test_the_combination_check_covers_the_verifier():
    spanish = Settings().with_value("translation.target", "de")
    base = spanish.with_value("asr.model", "whisper-base")
    check_combination(base.with_value("asr.language", "es"))  # base streaming, base verifying
    check_combination(base.with_value("asr.verify_lines", False).with_value("asr.verifier", "whisper-small.en")
                      .with_value("asr.language", "es"))  # the verifier is not run
    with pytest.raises(SettingsError, match=r"^The line verifier whisper-small\.en understands English only and "
                                            r"would write Spanish as English; .*\.$"):
        check_combination(base.with_value("asr.verifier", "whisper-small.en").with_value("asr.language", "es"))
    # the default pair: tiny.en drafting for a multilingual verifier would show English until each line is verified
    with pytest.raises(SettingsError, match=r"^The streaming model whisper-tiny\.en understands English only: "
                                            r"with whisper-base verifying, Spanish would still show as English"):
        check_combination(spanish.with_value("asr.language", "es"))
    with pytest.raises(SettingsError, match="whisper-tiny.en understands English only"):
        check_combination(spanish.with_value("asr.verify_lines", False).with_value("asr.language", "es"))
    speculative = spanish.with_value("asr.engine", "speculative")  # its transcript is the verifier's
    check_combination(speculative.with_value("asr.language", "es"))
    with pytest.raises(SettingsError, match="whisper-medium.en understands English only"):
        check_combination(speculative.with_value("asr.verifier", "whisper-medium.en").with_value("asr.language", "es"))
    check_combination(Settings().with_value("asr.verifier", "whisper-small.en"))  # English: anything goes


@pytest.mark.qt
def test_the_welcome_chooses_a_multilingual_model_for_spanish_and_says_so(qtbot, app_dirs, store):
    """A first run: Spanish chosen in the welcome brings a multilingual speech model, said in the dialog in
    one sentence, and the saved settings pass the combination check; English restores the English
    default; a language the check refuses is refused in the dialog; Settings does the same."""
    from app.controllers.app import AppController
    from core.session.engines import installed_in

    c = AppController(preload=False)  # no settings file: the welcome opens (offscreen)
    try:
        welcome = c.welcome
        assert welcome is not None and welcome.view.isVisible()
        view = welcome.view
        shown_before = c.window.message.text()
        view.spoken.setCurrentIndex(view.spoken.findData("es"))
        saved = load_settings()
        assert saved.asr.language == "es" and _multilingual(saved), saved.asr
        check_combination(saved)
        expected = "Whisper tiny streaming and Whisper base" if installed_in(store)("whisper-tiny") else \
            "Whisper base streaming alone"
        note = view.language_note.text()
        assert note.startswith(f"Spanish needs a multilingual speech model: Sotto will use {expected}"), note
        assert note.count(".") == 1 and view.language_note.isVisible()
        assert view.height() >= view.layout().totalHeightForWidth(view.width())  # nothing cut off
        assert c.window.message.text() == shown_before  # nothing refused in the control window

        view.spoken.setCurrentIndex(view.spoken.findData("en"))
        english = load_settings()
        default = Settings()
        assert (english.asr.language, english.asr.model, english.asr.verify_lines, english.asr.verifier) == (
            "en", default.asr.model, default.asr.verify_lines, default.asr.verifier)
        assert view.language_note.text().startswith("English: Sotto uses Whisper tiny.en streaming")

        # German spoken while translating into German: refused in the dialog, English stays chosen
        view.spoken.setCurrentIndex(view.spoken.findData("de"))
        assert view.language_note.text() == ("The translation language is the spoken language; choose another one, "
                                             "or 'none'.")
        assert view.spoken.currentData() == "en" and load_settings().asr.language == "en"
        assert c.window.message.text() == shown_before

        # Settings › Models: the spoken language there does the same, said in the panel
        welcome.close()
        panel = c.show_settings()
        assert c.apply_setting("asr.language", "fr")
        assert panel.message.text().startswith("French needs a multilingual speech model: Sotto will use"), \
            panel.message.text()
        assert _multilingual(c.settings) and load_settings().asr.language == "fr"
    finally:
        c.shutdown()


def test_spanish_speech_is_captioned_in_spanish_with_the_welcomes_choice(store, tmp_path):
    """Real Spanish speech through the pipeline (fast mode) with the speech models the welcome chooses
    for Spanish: Spanish text, within WER_BOUND of the human transcript."""
    if not SPANISH.exists():
        pytest.skip(f"needs the gathered Spanish speech {SPANISH} (data from public repositories is kept in the "
                    "shared folder, not in the project)")
    from core.audio import FileSource
    from core.session import CaptionPipeline, create_asr_engine
    from core.session.engines import engines_for_language, installed_in

    start = Settings().with_value("translation.target", "none")
    settings = engines_for_language(start, "es", installed_in(store)).apply_to(start)
    check_combination(settings)
    rec = Recorder()
    pipe = CaptionPipeline(settings, create_asr_engine(settings, store), None, rec, tmp_path)
    summary = pipe.run(FileSource(SPANISH))
    assert summary.completed
    heard = normalize_english(" ".join(line.sentence.text for line in rec.views[-1].lines))
    reference = normalize_english(SPANISH.with_suffix(".txt").read_text(encoding="utf-8"))
    wer = word_error_rate(reference, heard)
    assert wer < WER_BOUND, (wer, heard)
