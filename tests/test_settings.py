"""Settings: typed, versioned, stored in the (temporary) config dir, invalid values refused by key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.errors import SettingsError
from core.settings import SETTINGS_VERSION, Settings, load_settings, save_settings, settings_path


def test_tests_never_use_the_users_directories():
    import platformdirs

    assert not str(settings_path()).startswith(platformdirs.user_config_dir("sotto"))
    assert os.environ["SOTTO_CONFIG_DIR"] in str(settings_path())


def test_defaults_and_round_trip(tmp_path: Path):
    s = Settings()
    assert s.captions.mask_k == 3 and s.translation.target == "de" and s.asr.model == "whisper-tiny.en"
    s = s.with_value("captions.mask_k", "5").with_value("translation.target", "ja").with_value("asr.vad", "off")
    path = save_settings(s, tmp_path / "settings.toml")
    text = path.read_text()
    assert f"version = {SETTINGS_VERSION}" in text
    loaded = load_settings(path)
    assert loaded == s and loaded.captions.mask_k == 5 and loaded.asr.vad is False


@pytest.mark.parametrize(
    "key,value,words",
    [
        ("captions.mask_k", 11, "captions.mask_k must be between 0 and 10"),
        ("captions.mask_k", "three", "captions.mask_k must be a whole number"),
        ("translation.target", "klingon", "translation.target must be one of"),
        ("asr.min_chunk_s", "fast", "asr.min_chunk_s must be a number"),
        ("asr.vad", "maybe", "asr.vad must be true or false"),
        ("captions.nonsense", 1, "Unknown setting 'captions.nonsense'"),
    ],
)
def test_invalid_values_are_refused_naming_the_key(key, value, words):
    s = Settings()
    with pytest.raises(SettingsError) as err:
        s.with_value(key, value)
    assert words in str(err.value)
    assert s == Settings()  # the original is untouched


def test_invalid_file_names_key_and_file(tmp_path: Path):
    path = tmp_path / "settings.toml"
    path.write_text("version = 1\n[captions]\nmask_k = 42\n")
    with pytest.raises(SettingsError, match=r"captions.mask_k must be between 0 and 10 .*settings.toml"):
        load_settings(path)
    path.write_text("this is = = not toml")
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings(path)
    path.write_text("version = 99\n")
    with pytest.raises(SettingsError, match="newer Sotto"):
        load_settings(path)


def test_unknown_keys_are_ignored_and_missing_file_gives_defaults(tmp_path: Path):
    path = tmp_path / "settings.toml"
    assert load_settings(path) == Settings()
    path.write_text("version = 1\n[captions]\nmask_k = 4\nold_key = 1\n[gone]\nx = 1\n")
    assert load_settings(path).captions.mask_k == 4


def test_a_version_3_file_takes_the_retuned_latency_defaults_but_keeps_a_users_choice(tmp_path: Path):
    path = tmp_path / "settings.toml"
    path.write_text("version = 3\n[asr]\nmin_chunk_s = 1.0\nbuffer_trim_s = 12.0\nlanguage = 'en'\n", encoding="utf-8")
    loaded = load_settings(path)
    assert loaded.asr.min_chunk_s == Settings().asr.min_chunk_s == 0.5  # the old default, saved with the file
    assert loaded.asr.buffer_trim_s == 12.0  # chosen by the user
    assert loaded.asr.clause_min_words == 6 and loaded.asr.max_line_words == 20
    save_settings(loaded, path)
    path.write_text(
        path.read_text(encoding="utf-8").replace("min_chunk_s = 0.5", "min_chunk_s = 1.0"), encoding="utf-8"
    )
    assert load_settings(path).asr.min_chunk_s == 1.0  # a version 4 file means it
