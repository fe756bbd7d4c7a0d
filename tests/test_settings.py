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


def test_a_version_5_file_turns_verified_lines_on_unless_saved_after_it(tmp_path: Path):
    path = tmp_path / "settings.toml"
    path.write_text("version = 5\n[asr]\nverify_lines = false\n", encoding="utf-8")
    assert load_settings(path).asr.verify_lines is True  # the old default, saved with the file
    path.write_text("version = 6\n[asr]\nverify_lines = false\n", encoding="utf-8")
    assert load_settings(path).asr.verify_lines is False  # turned off by the user (or the calibration)


def test_a_version_6_file_takes_the_new_beta_unless_saved_after_it(tmp_path: Path):
    path = tmp_path / "settings.toml"
    path.write_text("version = 6\n[translation]\nbeta = 0.2\n", encoding="utf-8")
    assert load_settings(path).translation.beta == Settings().translation.beta == 0.5  # the old default
    path.write_text("version = 6\n[translation]\nbeta = 0.3\n", encoding="utf-8")
    assert load_settings(path).translation.beta == 0.3  # chosen by the user
    path.write_text("version = 7\n[translation]\nbeta = 0.2\n", encoding="utf-8")
    assert load_settings(path).translation.beta == 0.2  # chosen after the change


# -- when a setting applies: one mark per field, and the builders read only what is marked so --------------------


class _Recorder:
    """Settings whose every read of ``section.name`` is noted in ``keys``."""

    def __init__(self, settings: Settings, keys: set[str]) -> None:
        self._settings, self._keys = settings, keys

    def __getattr__(self, section: str):
        obj = getattr(self._settings, section)
        keys = self._keys

        class _Section:
            def __getattr__(self, name: str):
                keys.add(f"{section}.{name}")
                return getattr(obj, name)

        return _Section()


def _reads(build, settings: Settings | None = None) -> set[str]:
    keys: set[str] = set()
    build(_Recorder(settings or Settings(), keys))
    return keys


def _start_builders():
    """What a session reads from settings when it starts: the engines' specs, the transcriber's
    options and the audio source."""
    from core.session.engines import ASREngineSpec, TranslatorSpec, streaming_options
    from core.session.service import source_spec

    return [ASREngineSpec.from_settings, TranslatorSpec.from_settings, streaming_options, source_spec]


def _live_builders():
    """What a running session takes from new settings (the pipeline's and the service's apply_settings)."""
    from core.session.engines import PolicyKnobs, TranslatorKnobs

    return [TranslatorKnobs.from_settings, PolicyKnobs.from_settings, lambda s: s.translation.partial_share]


def _misplaced(builders, when, marks) -> list[str]:
    """The keys the builders read (with both engines) that are not marked ``when``."""
    read: set[str] = set()
    for build in builders:
        for engine in ("faster-whisper", "speculative"):
            read |= _reads(build, Settings().with_value("asr.engine", engine))
    assert read, "the builders read settings"
    return sorted(key for key in read if marks(key) != when)


def test_every_setting_says_when_it_applies():
    import dataclasses

    from core.settings import LIVE_KEYS, NEXT_START_KEYS, Applies, applies

    keys = [f"{section}.{f.name}" for section in ("audio", "asr", "translation", "captions", "overlay", "hotkeys",
                                                 "speakers")
            for f in dataclasses.fields(getattr(Settings(), section))]
    assert all(isinstance(applies(key), Applies) for key in keys)
    assert sorted(NEXT_START_KEYS + LIVE_KEYS) == sorted(keys)
    assert "asr.clause_min_words" in NEXT_START_KEYS and "asr.max_line_words" in NEXT_START_KEYS
    assert "translation.beta" in LIVE_KEYS and "captions.mask_k" in LIVE_KEYS


def test_hotkeys_are_key_combinations_applied_live_and_refused_by_name(tmp_path: Path):
    from core.settings import LIVE, applies

    s = Settings()
    assert (s.hotkeys.start, s.hotkeys.pause, s.hotkeys.overlay, s.hotkeys.click_through) == (
        "Ctrl+Alt+Shift+Space", "Ctrl+Alt+Shift+P", "Ctrl+Alt+Shift+O", "Ctrl+Alt+Shift+X")
    assert all(applies(f"hotkeys.{name}") is LIVE for name in ("start", "pause", "overlay", "click_through"))
    for good in ("Ctrl+Alt+K", "Meta+F5", "F9", "Ctrl+Alt+,", "ctrl+shift+pgup", ""):
        assert s.with_value("hotkeys.overlay", good).hotkeys.overlay == good
    for bad in ("Ctrl+Bogus", "S", "Shift", "Ctrl+Shift+S, Ctrl+A", "Ctrl+"):
        with pytest.raises(SettingsError) as refused:
            s.with_value("hotkeys.overlay", bad)
        assert str(refused.value) == (f"hotkeys.overlay must be a key combination such as Ctrl+Alt+Shift+P "
                                      f"(modifiers and one key, or an F-key alone), or empty for none (got {bad!r}).")
    path = save_settings(s.with_value("hotkeys.start", ""), tmp_path / "settings.toml")
    assert load_settings(path).hotkeys.start == ""  # off, kept


def test_the_default_hotkeys_are_no_well_known_programs_shortcuts():
    """A global hotkey takes its keys from every program: the defaults are on none of the lists, and the
    old defaults (Ctrl+Shift+S/P/O/T), like every plain Ctrl+letter and the lists' macOS shortcuts, are."""
    import dataclasses

    from core.hotkeys import WELL_KNOWN, refusal, well_known_use
    from core.settings import HotkeySettings

    defaults = dataclasses.asdict(HotkeySettings())
    assert {action: refusal(text) for action, text in defaults.items()} == dict.fromkeys(defaults, "")
    assert len(set(defaults.values())) == 4  # four combinations, none bound twice
    for old in ("Ctrl+Shift+S", "Ctrl+Shift+P", "Ctrl+Shift+O", "Ctrl+Shift+T", "Ctrl+Alt+Shift+S", "Ctrl+Alt+Shift+T"):
        assert well_known_use(old) is not None, old
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        assert well_known_use(f"Ctrl+{letter}") is not None, letter
    # in any order and case, as a settings file may hold it
    assert well_known_use("shift+ctrl+t") == ("Ctrl+Shift+T", WELL_KNOWN["Ctrl+Shift+T"])
    assert well_known_use("Ctrl+Alt+Shift+F") is None and well_known_use("") is None


def test_a_hotkey_a_well_known_program_uses_is_refused_in_one_sentence():
    s = Settings()
    for combination, sentence in (
        ("Ctrl+Shift+T", "Ctrl+Shift+T reopens a closed tab in web browsers; choose another combination."),
        ("Ctrl+S", "Ctrl+S saves in nearly every program; choose another combination."),
        ("Ctrl+Shift+P", "Ctrl+Shift+P opens a private window in Firefox and the Command Palette in VS Code; "
                         "choose another combination."),
        ("Ctrl+Space", "Ctrl+Space opens Spotlight on macOS (⌘Space) and completes code in VS Code and JetBrains "
                       "IDEs; choose another combination."),
        ("shift+k", "Shift+K types a character in every program; choose another combination."),  # a whole family
        ("Alt+F", "Alt+F opens a menu by its underlined letter in most programs on Windows and Linux; choose "
                  "another combination."),
    ):
        with pytest.raises(SettingsError) as refused:
            s.with_value("hotkeys.pause", combination)
        assert str(refused.value) == sentence
    assert s == Settings()  # nothing changed


def test_a_file_with_the_old_default_hotkeys_takes_the_new_ones_and_keeps_a_users_choice(tmp_path: Path, caplog):
    path = tmp_path / "settings.toml"
    path.write_text('version = 7\n[hotkeys]\nstart = "Ctrl+Shift+S"\npause = "Ctrl+Shift+P"\n'
                    'overlay = "Ctrl+Shift+O"\nclick_through = "Ctrl+Shift+T"\n', encoding="utf-8")
    assert load_settings(path).hotkeys == Settings().hotkeys  # the old defaults, saved with the file
    # chosen by the user: kept, also a combination now refused (it is logged, and saved again as it is)
    path.write_text('version = 7\n[hotkeys]\nstart = ""\npause = "Ctrl+Alt+K"\noverlay = "Ctrl+Shift+S"\n'
                    'click_through = "Ctrl+Shift+T"\n', encoding="utf-8")
    with caplog.at_level("WARNING", logger="sotto"):
        loaded = load_settings(path)
    assert (loaded.hotkeys.start, loaded.hotkeys.pause, loaded.hotkeys.overlay) == ("", "Ctrl+Alt+K", "Ctrl+Shift+S")
    assert loaded.hotkeys.click_through == "Ctrl+Alt+Shift+X"  # the old default: moved
    assert "keeping hotkeys.overlay = 'Ctrl+Shift+S' as saved" in caplog.text
    save_settings(loaded, path)
    assert f"version = {SETTINGS_VERSION}" in path.read_text(encoding="utf-8")
    assert load_settings(path) == loaded
    path.write_text('version = 8\n[hotkeys]\nclick_through = "Ctrl+Shift+T"\n', encoding="utf-8")
    assert load_settings(path).hotkeys.click_through == "Ctrl+Shift+T"  # saved after the change: the user's


def test_settings_read_at_session_start_are_marked_next_start():
    from core.settings import NEXT_START, applies

    assert _misplaced(_start_builders(), NEXT_START, applies) == []


def test_settings_applied_live_are_marked_live():
    from core.settings import LIVE, applies

    assert _misplaced(_live_builders(), LIVE, applies) == []


def test_the_check_catches_a_start_setting_marked_live():
    """The drift this check is for: asr.clause_min_words and asr.max_line_words were read only when a
    session started, but a hand-kept list said they applied at once."""
    from core.settings import LIVE, NEXT_START, applies

    def drifted(key: str):
        return LIVE if key in ("asr.clause_min_words", "asr.max_line_words") else applies(key)

    assert _misplaced(_start_builders(), NEXT_START, drifted) == ["asr.clause_min_words", "asr.max_line_words"]


def test_restart_needed_follows_the_marks():
    from core.session.service import restart_needed

    base = Settings()
    assert restart_needed(base, base.with_value("asr.clause_min_words", 3)) == ["asr.clause_min_words"]
    assert restart_needed(base, base.with_value("asr.max_line_words", 12)) == ["asr.max_line_words"]
    new = base.with_value("translation.engine", "ar").with_value("captions.mask_mode", "draft")
    assert restart_needed(base, new) == []
    new = new.with_value("translation.model", "qwen2.5-1.5b-instruct").with_value("audio.channel", "left")
    assert restart_needed(base, new) == ["audio.channel", "translation.model"]


def test_engine_kinds_are_enums_stored_as_their_names(tmp_path: Path):
    from core.session.engines import TranslatorKnobs
    from core.settings import ASREngineKind, TranslationEngineKind

    s = Settings().with_value("asr.engine", "speculative").with_value("translation.engine", "ar")
    assert s.asr.engine is ASREngineKind.SPECULATIVE and s.asr.engine == "speculative"
    assert s.translation.engine is TranslationEngineKind.AR
    path = save_settings(s, tmp_path / "settings.toml")
    assert 'engine = "speculative"' in path.read_text() and 'engine = "ar"' in path.read_text()
    assert load_settings(path) == s
    assert s.value("asr.engine") == "speculative"
    with pytest.raises(SettingsError, match="asr.engine must be one of faster-whisper, speculative"):
        s.with_value("asr.engine", "whisper.cpp")
    assert TranslatorKnobs.from_settings(s) == TranslatorKnobs(beta=None, draft_mask_k=0, bias_scope="final-exact")
    draft = Settings().with_value("captions.mask_mode", "draft").with_value("captions.mask_k", 2)
    assert TranslatorKnobs.from_settings(draft) == TranslatorKnobs(beta=0.5, draft_mask_k=2, bias_scope="final-exact")
