"""The desktop app with pytest-qt, offscreen, driving real models on shared recordings.

Each test gets its own settings and history directories. The controller's
caption service loads the bundled models on its own threads, as in the app.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from itertools import pairwise
from pathlib import Path

import pytest
from conftest import ROOT
from PySide6.QtCore import Qt

pytestmark = pytest.mark.qt


@pytest.fixture()
def app_dirs(tmp_path: Path, monkeypatch) -> Path:
    """Private settings and data directories for one test."""
    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture()
def controller(qtbot, app_dirs):
    from app.controllers.app import AppController

    c = AppController(show_windows=False)
    yield c
    c.shutdown()


def _wait_models(qtbot, controller) -> None:
    qtbot.waitUntil(
        lambda: (
            controller.service.asr_engine is not None
            and (controller.service.translation_engine is not None or controller.settings.translation.target == "none")
        ),
        timeout=120_000,
    )


def _sotto_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("sotto-") and t.is_alive()]


def test_overlay_shows_a_real_pipeline_run_and_never_reflows_committed_lines(qtbot, controller, shared):
    from app.views.layout import COMMITTED, HELD, line_text
    from core.session.history import read_session

    lines_shown = 8  # the most the overlay shows: jfk takes about 7 at the width below, so it seldom scrolls
    assert controller.apply_setting("overlay.lines", lines_shown)
    assert controller.apply_setting("audio.source", str(shared / "asr" / "jfk.flac"))
    controller.overlay.show()
    qtbot.waitExposed(controller.overlay)
    controller.overlay.resize(380, controller.overlay.height())  # narrowed by the user: two or three lines a sentence
    controller.toggle_start()
    qtbot.waitUntil(lambda: controller.service.state == "running", timeout=120_000)
    assert controller.window.start.text() == "Stop"
    qtbot.waitUntil(lambda: controller.service.state == "idle", timeout=120_000)
    qtbot.waitUntil(lambda: bool(controller.overlay.painted) and "country" in controller.overlay.painted[-1][0].lower(),
                    timeout=10_000)

    overlay = controller.overlay
    source_painted, translation_painted = overlay.painted[-1]
    assert "country" in source_painted.lower()
    assert translation_painted.strip(), "the German translation was painted"
    ne = overlay.displayed_ne()
    assert set(ne) == {"ne_source_painted", "ne_translation_painted"} and ne["ne_source_painted"] >= 0
    # the journal of the session holds the committed caption and its translation
    session = read_session(controller.service.last_session.directory)
    # (where the lines break depends on when decodes land: a loaded machine once made "you." a line of its own)
    assert any("country" in entry.source.lower() for entry in session.entries), session.entries
    assert all(entry.translation for entry in session.entries), session.entries

    # committed text never reflows, read from what the overlay laid out and painted: a visual line of
    # committed text only, followed by a line that starts with committed text (so the words after it
    # no longer fit on it), is painted again unchanged, at the same place, in the next frame (frames
    # of all the lines the overlay shows are left out: there, a scroll may have moved lines up)
    # With verified lines (the default) a finished line's draft is drawn HELD (dimmed, in the committed font)
    # until it is verified and may be replaced then, once: a changed line is allowed only where it was held.
    # (Its text says nothing: the draft's "your country can do" is in the verified text, and was replaced.)
    frames = [src for src, _tr in overlay.painted_lines]
    assert ["\n".join(line_text(x) for x in src) for src in frames] == [p[0] for p in overlay.painted]
    checked, unfinished, replaced = 0, 0, 0
    for n, (before, after) in enumerate(pairwise(frames)):
        if len(before) >= lines_shown or len(after) >= lines_shown:
            continue
        for i, (line, following) in enumerate(pairwise(before)):
            if all(run.style in (COMMITTED, HELD) for run in line) and following[0].style in (COMMITTED, HELD):
                now = line_text(after[i]) if i < len(after) else None
                if now != line_text(line) and any(run.style == HELD for run in line):
                    replaced += 1  # the drafter's words, replaced by the verifier's
                    continue
                assert now == line_text(line), (
                    f"painted frame {n + 2} reflowed committed line {i + 1} {line_text(line)!r}: "
                    f"{[line_text(x) for x in before]} then {[line_text(x) for x in after]}")
                checked += 1
                # tentative words painted after it: the unfinished sentence, where a reflow would start
                unfinished += any(run.style != COMMITTED for x in before[i + 1:] for run in x)
    print(f"{len(frames)} frames painted; {checked} committed lines seen painted again unchanged, "
          f"{unfinished} of them with tentative words after them; {replaced} replaced by the verifier's words")
    assert checked >= 3 and unfinished >= 1, [p[0] for p in overlay.painted]


def test_committed_lines_keep_their_wrapping_as_text_grows(qtbot):
    from app.views.layout import COMMITTED, TENTATIVE, line_text, wrap_paragraph
    from app.views.overlay import CaptionOverlay
    from core.settings import OverlaySettings

    overlay = CaptionOverlay(OverlaySettings())
    qtbot.addWidget(overlay)
    words = ("ask not what your country can do for you ask what you can do for your country "
             "my fellow citizens of the world ask not what America will do for you").split()
    for width in (180.0, 260.0, 420.0):
        previous: list[str] | None = None
        for n in range(1, len(words) + 1):
            committed = " ".join(words[: max(0, n - 3)])
            tentative = " ".join(words[max(0, n - 3): n])
            lines = wrap_paragraph([(committed, COMMITTED), (tentative, TENTATIVE)], width, overlay._measure)
            assert all(overlay._measure(line_text(x), COMMITTED) <= width + 1 or len(line_text(x).split()) == 1
                       for x in lines)
            committed_lines = [line_text(x) for x in wrap_paragraph([(committed, COMMITTED)], width, overlay._measure)]
            if previous:
                assert committed_lines[: len(previous) - 1] == previous[:-1]
            previous = committed_lines
    # Chinese and Japanese wrap between characters
    cjk = wrap_paragraph([("我们今天讨论的是本地实时字幕和翻译的问题", COMMITTED)], 120.0, overlay._measure)
    assert len(cjk) > 1 and "".join(line_text(x) for x in cjk) == "我们今天讨论的是本地实时字幕和翻译的问题"


def test_beta_change_in_settings_reaches_the_translator(qtbot, controller):
    from core.settings import load_settings

    _wait_models(qtbot, controller)
    translator = controller.service.translation_engine
    panel = controller.show_settings()
    qtbot.waitExposed(panel)
    panel.tabs.setCurrentIndex(0)
    panel.beta.setFocus()
    qtbot.keyClick(panel.beta, Qt.Key.Key_End)  # β = 1.0
    assert controller.settings.translation.beta == 1.0
    assert load_settings().translation.beta == 1.0
    assert translator.options.beta == 1.0
    # and it changes what the real model does: with β = 1 any draft is accepted whole (a sentence the model
    # translates: a set phrase such as "Good morning." is said from the phrasebook)
    draft = translator.runner.tokenize(" Katze Fahrrad Himmel")
    result = translator.translate("The meeting starts at nine.", draft)
    assert result.accepted_tokens == len(draft) and result.draft_tokens == len(draft)
    qtbot.keyClick(panel.beta, Qt.Key.Key_Home)  # β = 0: plain greedy decoding
    assert translator.options.beta == 0.0 and load_settings().translation.beta == 0.0
    result = translator.translate("The meeting starts at nine.", draft)
    assert result.accepted_tokens < len(draft)
    # where β applies reaches it too: with "final-exact" (the default) a finished sentence ignores β = 1
    qtbot.keyClick(panel.beta, Qt.Key.Key_End)
    assert translator.options.bias_final is False, "the default scope: finished sentences are exact"
    final = translator.translate("The meeting starts at nine.", draft, final=True)
    assert final.accepted_tokens < len(draft) and final.text == translator.translate("The meeting starts at nine.").text
    panel.bias_scope.setCurrentIndex(panel.bias_scope.findData("paper"))
    assert translator.options.bias_final is True and load_settings().translation.bias_scope == "paper"
    assert translator.translate("The meeting starts at nine.", draft, final=True).accepted_tokens == len(draft)
    # the engine choice reaches it too: plain re-translation means no bias at all
    panel.engine.setCurrentIndex(panel.engine.findData("ar"))
    assert translator.options.beta is None


def test_click_through_and_stay_on_top_flags_are_set_and_cleared(qtbot, controller):
    from core.settings import load_settings

    overlay = controller.overlay
    controller.set_overlay_visible(True)
    qtbot.waitExposed(overlay)
    flags = overlay.windowFlags()
    assert flags & Qt.WindowType.WindowStaysOnTopHint and flags & Qt.WindowType.FramelessWindowHint
    assert overlay.testAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
    assert not overlay.click_through
    controller.window.click_through.click()  # the control window's check box
    assert overlay.click_through and overlay.windowFlags() & Qt.WindowType.WindowTransparentForInput
    assert overlay.isVisible(), "changing flags must not hide the overlay"
    assert load_settings().overlay.click_through is True
    controller.window.click_through.click()
    assert not overlay.windowFlags() & Qt.WindowType.WindowTransparentForInput
    assert load_settings().overlay.click_through is False
    overlay.set_stay_on_top(False)
    assert not overlay.windowFlags() & Qt.WindowType.WindowStaysOnTopHint
    overlay.set_stay_on_top(True)
    assert overlay.stays_on_top and overlay.isVisible()
    controller.window.overlay.click()  # hide from the control window
    assert not overlay.isVisible() and load_settings().overlay.visible is False


def test_overlay_geometry_and_style_are_remembered(qtbot, app_dirs):
    from app.controllers.app import AppController
    from core.settings import load_settings

    c = AppController(show_windows=False)
    try:
        c.overlay.setGeometry(123, 77, 640, 150)
        c.overlay_controller.save_geometry()
        assert c.apply_setting("overlay.font_size", 30)
        assert c.apply_setting("overlay.lines", 3)
    finally:
        c.shutdown()
    saved = load_settings().overlay
    assert (saved.x, saved.y, saved.width) == (123, 77, 640) and saved.font_size == 30 and saved.lines == 3
    c2 = AppController(show_windows=False)
    try:
        g = c2.overlay.geometry()
        assert (g.x(), g.y(), g.width()) == (123, 77, 640)
        assert g.height() >= c2.overlay.content_height()
    finally:
        c2.shutdown()


# Two runs of the app on Qt's offscreen platform with the screens of a JSON file (Qt's own "configfile"
# option): the overlay is put on each screen in turn and the screens it knows are printed.
SCREENS_APP = textwrap.dedent("""
    import json, sys
    from PySide6.QtWidgets import QApplication
    from app.controllers.app import AppController

    qt = QApplication([])
    c = AppController(show_windows=True, preload=False, welcome=False)
    print("SCREENS", json.dumps([s.name() for s in qt.screens()]), flush=True)
    g = c.overlay.geometry()
    print("AT", c.overlay.screen().name(), g.x(), g.y(), g.width(), flush=True)
    for name, x, y, w in json.loads(sys.argv[1]):  # put it there as a drag would, then save as the timer does
        c.overlay.setGeometry(x, y, w, 160)
        qt.processEvents()
        print("MOVED", c.overlay.screen().name(), flush=True)
        c.overlay_controller.save_geometry()
    c.shutdown()
""")


def _screens(tmp_path: Path, screens: list[tuple[str, int, int, int, int]]) -> str:
    config = tmp_path / f"screens-{len(screens)}.json"
    config.write_text(json.dumps({"screens": [
        {"name": n, "x": x, "y": y, "width": w, "height": h, "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}
        for n, x, y, w, h in screens]}), encoding="utf-8")
    return f"offscreen:configfile={config}"


def test_the_overlay_remembers_its_place_on_each_screen(app_dirs):
    """A laptop with a monitor: the overlay is placed on the monitor, then on the laptop's screen. Unplugged
    (only the monitor left... then only the laptop), it comes back where it was on the screen that is there."""
    both = _screens(app_dirs, [("LAPTOP", 0, 0, 1280, 800), ("MONITOR", 1280, 0, 1920, 1080)])
    env = {**os.environ, "SOTTO_CONFIG_DIR": str(app_dirs / "config"), "SOTTO_DATA_DIR": str(app_dirs / "data")}

    def run(platform: str, moves: list) -> list[str]:
        proc = subprocess.run([sys.executable, "-c", SCREENS_APP, json.dumps(moves)], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, env={**env, "QT_QPA_PLATFORM": platform})
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [line for line in proc.stdout.splitlines() if line.startswith(("SCREENS", "AT", "MOVED"))]

    out = run(both, [["MONITOR", 1500, 850, 700], ["LAPTOP", 100, 600, 800]])
    assert out[0] == 'SCREENS ["LAPTOP", "MONITOR"]' and out[2:] == ["MOVED MONITOR", "MOVED LAPTOP"], out
    from core.settings import load_settings, overlay_places

    saved = load_settings().overlay
    assert saved.screen == "LAPTOP" and overlay_places(saved.places) == {
        "MONITOR": (220, 850, 700, 160), "LAPTOP": (100, 600, 800, 160)}, saved  # from each screen's corner
    # the laptop's screen gone (the monitor is now the desktop's left edge): where it was on the monitor
    assert run(_screens(app_dirs, [("MONITOR", 0, 0, 1920, 1080)]), [])[1] == "AT MONITOR 220 850 700"
    assert run(both, [])[1] == "AT LAPTOP 100 600 800"  # both again: the screen it was last on


def test_the_welcome_fits_its_device_messages_at_its_default_size(qtbot):
    """The level meters' notes (why a sound cannot be heard) are whole sentences: at the welcome's own size
    each gets the height its words need at its width, and so do the language's note and the calibration's."""
    from app.views.welcome import WelcomeDialog

    view = WelcomeDialog(None, "both", "en", "de")
    qtbot.addWidget(view)
    view.show_meters(("mic", "system"))
    view.show()
    qtbot.waitExposed(view)
    view.show_level_error("mic", "No audio input device was found; connect a microphone or check the sound settings.")
    view.show_level_error("system", "No sound server (PulseAudio or PipeWire) is running, so the system audio "
                                    "cannot be captured.")
    view.show_language_note("Spanish needs a multilingual speech model: Sotto will use Whisper base streaming alone "
                            "(bundled, and fast enough for live captions on two CPU cores).")
    view.show_calibration(0.3, "Building random-weight models of each verifier's shape (once; kept in the model "
                               "cache)")
    notes = [view._meters["mic"][1], view._meters["system"][1], view.language_note, view.calibration_text]

    def whole(note) -> bool:
        return (note.isVisible() and note.height() >= note.heightForWidth(note.width())
                and note.mapTo(view, note.rect().bottomLeft()).y() < view.height())

    qtbot.waitUntil(lambda: all(whole(note) for note in notes), timeout=5_000)  # (geometry comes from the event loop)


def test_invalid_settings_are_refused_with_a_message(qtbot, controller, app_dirs):
    from core.settings import Settings, settings_path

    panel = controller.show_settings()
    assert controller.apply_setting("captions.mask_k", 5)
    saved = settings_path().read_text()
    assert not controller.apply_setting("translation.beta", 1.5)
    assert "translation.beta must be between 0.0 and 1.0" in panel.message.text()
    assert panel.message.property("refused") is True
    assert not controller.apply_setting("translation.model", str(app_dirs / "missing.gguf"))
    assert "There is no model at" in panel.message.text()
    assert not controller.apply_setting("asr.model", "gemma-3-270m")
    assert "translation model" in panel.message.text()
    assert not controller.apply_setting("overlay.text_color", "red-ish")
    # through the panel itself: German spoken while translating into German; the combo snaps back to English
    panel.spoken.setCurrentIndex(panel.spoken.findData("de"))
    assert "The translation language is the spoken language" in panel.message.text()
    assert panel.spoken.currentData() == "en"
    assert settings_path().read_text() == saved, "refused changes are not saved"
    assert controller.settings.captions.mask_k == 5
    assert controller.settings.translation.beta == Settings().translation.beta


def test_a_session_that_fails_keeps_its_error_on_the_overlay(qtbot, controller, app_dirs):
    """A recording that disappeared: the error stays on the overlay after the session ends,
    until captions start again."""
    gone = app_dirs / "talk.wav"
    gone.write_bytes(b"")
    assert controller.apply_setting("audio.source", str(gone))
    gone.unlink()
    controller.toggle_start()
    qtbot.waitUntil(lambda: controller.service.state == "idle" and "does not exist" in controller.overlay.placeholder,
                    timeout=120_000)
    qtbot.wait(200)  # the idle state arrives after the error: it must not replace it
    assert "does not exist" in controller.overlay.placeholder
    assert "does not exist" in controller.window.message.text()


def test_stop_is_quick_keeps_what_was_shown_and_leaves_no_threads(qtbot, controller, shared, monkeypatch):
    """What makes Stop quick, checked by what the models are asked to do after it rather than by a
    clock: no speech decode (drafter or verifier) and no translation model call starts once Stop has
    been pressed (one already running finishes; a normal stop would decode the buffered audio and
    translate what is queued). What was shown stays: every line shown before Stop is kept as it was,
    and the unfinished line is committed."""
    views = []
    controller.bridge.view_changed.connect(views.append)
    controller.apply_setting("audio.source", str(shared / "asr" / "librivox_shakespeare_sonnet001.wav"))
    _wait_models(qtbot, controller)
    stopped = threading.Event()
    ran: list[tuple[str, bool]] = []  # each model call that ran to its end: (model, started after Stop)

    def noted(name, call):
        def run(*args, **kwargs):
            after = stopped.is_set()
            result = call(*args, **kwargs)  # a stopped decode raises Interrupted: not noted
            ran.append((name, after))
            return result
        return run

    engine = controller.service.asr_engine.engine  # the ThreadedEngine's own engine
    verified = getattr(engine, "verifies_lines", False)
    models = {"drafter": engine.drafter, "verifier": engine.verifier} if verified else {"asr": engine}
    for name, model in models.items():
        monkeypatch.setattr(model, "transcribe", noted(name, model.transcribe))
    runner = controller.service.translation_engine.runner
    monkeypatch.setattr(runner, "eval", noted("translator", runner.eval))

    controller.toggle_start()
    # Stop while a line is unfinished, once each model has been at work (so the counting sees them)
    qtbot.waitUntil(lambda: {name for name, _after in ran} >= {*models, "translator"}
                    and bool(views and views[-1].partial.shown_source), timeout=120_000)
    before = views[-1]
    controller.toggle_start()  # Stop
    stopped.set()  # (once Stop has returned: a call begun while it ran counts as begun before it)
    qtbot.waitUntil(lambda: controller.service.state == "idle", timeout=30_000)
    shown = views[-1]
    print(f"before Stop: {len(before.lines)} lines and {before.partial.shown_source!r}; "
          f"after it: {[line.sentence.text for line in shown.lines[len(before.lines):]]}")
    assert [(name, after) for name, after in ran if after] == [], "a model call started after Stop"
    assert [line.sentence.text for line in shown.lines[:len(before.lines)]] == \
        [line.sentence.text for line in before.lines], "a line shown before Stop changed"
    assert len(shown.lines) > len(before.lines) and not shown.partial.shown_source, \
        "the unfinished line was committed at Stop"
    session = controller.service.last_session
    assert session is not None and session.summary.completed is False
    controller.shutdown()
    assert controller.service.threads_alive == []
    assert _sotto_threads() == []


def test_pause_commits_the_line_captions_nothing_while_paused_and_resume_continues(qtbot, controller, shared):
    """A reading played in real time: pausing commits the unfinished line; the recording plays on
    (the audio clock keeps running) but while paused no line is committed and no partial is shown;
    after resuming, captions of what is said next appear."""
    views, progress = [], []
    controller.bridge.view_changed.connect(views.append)
    controller.bridge.progress_changed.connect(progress.append)
    controller.apply_setting("audio.source", str(shared / "asr" / "librivox_shakespeare_sonnet001.wav"))
    controller.toggle_start()
    qtbot.waitUntil(lambda: any(v.partial.shown_source for v in views), timeout=120_000)

    def heard() -> float:
        return progress[-1].audio_time if progress else 0.0

    controller.window.pause.click()
    qtbot.waitUntil(lambda: controller.service.state == "paused", timeout=5_000)
    at_pause = heard()
    # the read under way at the click may still have been captioned; a later one is read paused,
    # and the first paused read commits the unfinished line
    qtbot.waitUntil(lambda: heard() >= at_pause + 4.0 and bool(views[-1].lines and not views[-1].partial.shown_source),
                    timeout=30_000)
    committed, seen, paused_from = len(views[-1].lines), len(views), heard()
    # 6 s more of the reading while paused: heard (the audio clock runs) but not captioned
    qtbot.waitUntil(lambda: heard() >= paused_from + 6.0, timeout=30_000)
    assert controller.service.state == "paused"
    while_paused = views[seen:]
    assert all(len(v.lines) == committed for v in while_paused), (
        "a line was committed while paused: "
        f"{[line.sentence.text for v in while_paused for line in v.lines[committed:]]}")
    assert not [v.partial.shown_source for v in while_paused if v.partial.shown_source], \
        "a partial was shown while paused"
    resumed_at = heard()

    controller.window.pause.click()  # resume
    qtbot.waitUntil(lambda: controller.service.state == "running", timeout=5_000)
    qtbot.waitUntil(lambda: len(views[-1].lines) > committed or bool(views[-1].partial.shown_source), timeout=60_000)
    # what is captioned now was said after the pause (the first read after resuming may reach back one read)
    new_lines = views[-1].lines[committed:]
    assert all(line.sentence.start >= paused_from for line in new_lines), \
        [(line.sentence.start, line.sentence.text) for line in new_lines]
    print(f"paused at {at_pause:.1f} s of audio, captioned nothing from {paused_from:.1f} s to {resumed_at:.1f} s, "
          f"{len(while_paused)} frames while paused; resumed")
    controller.toggle_start()
    qtbot.waitUntil(lambda: controller.service.state == "idle", timeout=30_000)


_CRASH_SCRIPT = textwrap.dedent("""
    import sys
    from core.session.service import CaptionService
    from core.settings import Settings

    class Listener:
        def on_view(self, view): pass
        def on_progress(self, progress): pass
        def on_message(self, level, text): print(level, text, flush=True)
        def on_state(self, state, detail): print("state", state, flush=True)
        def on_status(self, message, fraction): pass

    service = CaptionService(Settings().with_value("audio.source", sys.argv[1]), Listener())
    service.start()
    service.wait_idle()
""")


def _parse_srt(text: str) -> list[tuple[int, str, str, str]]:
    cues = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        m = re.fullmatch(r"(\d\d):(\d\d):(\d\d),(\d{3}) --> (\d\d):(\d\d):(\d\d),(\d{3})", lines[1])
        assert lines[0].isdigit() and m, block
        cues.append((int(lines[0]), lines[1].split(" --> ")[0], lines[1].split(" --> ")[1], "\n".join(lines[2:])))
    return cues


def _parse_vtt(text: str) -> list[tuple[str, str, str]]:
    assert text.startswith("WEBVTT\n")
    cues = []
    for block in text.split("\n\n")[1:]:
        if not block.strip():
            continue
        lines = block.strip().splitlines()
        assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}", lines[0]), block
        start, end = lines[0].split(" --> ")
        assert start < end
        cues.append((start, end, "\n".join(lines[1:])))
    return cues


def test_history_survives_a_crash_and_exports_parse(qtbot, controller, app_dirs, shared):
    from core.session.history import CaptionHistory, read_session

    env = {**os.environ, "SOTTO_DATA_DIR": str(app_dirs / "data"), "PYTHONPATH": str(ROOT)}
    recording = shared / "asr" / "librivox_shakespeare_sonnet001.wav"
    proc = subprocess.Popen([sys.executable, "-c", _CRASH_SCRIPT, str(recording)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    history = CaptionHistory(app_dirs / "data" / "history")
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:  # polling another process's file; nothing to wait on
            dirs = list(history.root.glob("*")) if history.root.exists() else []
            if dirs and len(read_session(dirs[0]).entries) >= 2:
                break
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.2)
        else:
            raise AssertionError("no captions were journaled")
        before = read_session(dirs[0])
        proc.send_signal(signal.SIGKILL)  # a crash: no chance to flush or close anything
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    after = read_session(dirs[0])
    assert len(after.entries) >= len(before.entries) >= 2
    assert [e.source for e in after.entries[: len(before.entries)]] == [e.source for e in before.entries]
    assert not (dirs[0] / "summary.json").exists(), "the process really died before finishing"
    # a write torn mid-line is skipped, not fatal
    with open(dirs[0] / "captions.jsonl", "a", encoding="utf-8") as f:
        f.write('{"kind": "source", "sentences": [{"index": 99, "sta')
    torn = read_session(dirs[0])
    assert torn.damaged_lines == 1 and len(torn.entries) == len(after.entries)

    # the history window lists it, searches it and exports it
    window = controller.show_history()
    qtbot.waitExposed(window)
    assert window.sessions.count() == 1 and window.table.rowCount() == len(after.entries)
    word = after.entries[0].source.split()[-1].strip(",.;")
    window.search.setText(word.upper())
    assert window.table.rowCount() >= 1 and word.lower() in window.table.item(0, 1).text().lower()
    window.search.setText("")
    window.sessions.setCurrentRow(0)
    out = app_dirs / "export"
    srt = controller.export_history(str(out / "c.srt"), "srt", "both")
    vtt = controller.export_history(str(out / "c.vtt"), "vtt", "source")
    txt = controller.export_history(str(out / "c.txt"), "txt", "translation")
    cues = _parse_srt(srt.read_text())
    assert [c[0] for c in cues] == list(range(1, len(after.entries) + 1))
    assert all(c[1] < c[2] for c in cues) and [c[1] for c in cues] == sorted(c[1] for c in cues)
    assert cues[0][3].splitlines()[0] == after.entries[0].source
    vcues = _parse_vtt(vtt.read_text())
    assert [c[2] for c in vcues] == [e.source for e in after.entries]
    assert txt.read_text().splitlines() == [e.translation for e in after.entries if e.translation]
    assert controller.export_history(str(out / "c.doc"), "doc", "both") is None
    assert "not 'doc'" in window.status.text()


def test_screenshot_renders_real_captions(qtbot, tmp_path, shared):
    from PySide6.QtGui import QImage

    from app.screenshot import screenshot

    overlay_png, settings_png = screenshot(tmp_path, shared / "asr" / "jfk.flac")
    image = QImage(str(overlay_png))
    assert image.width() > 600 and image.height() > 100
    # the backdrop and the overlay's background are dark: bright pixels are caption text (white speech,
    # light yellow translation)
    pixels = [image.pixelColor(x, y) for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)]
    white = sum(1 for c in pixels if min(c.red(), c.green(), c.blue()) > 220)
    yellow = sum(1 for c in pixels if c.red() > 220 and c.green() > 200 and c.blue() < 190)
    assert white > 100 and yellow > 20, (white, yellow)
    assert QImage(str(settings_png)).width() > 400


def test_run_without_a_display_falls_back_to_terminal_captions(shared):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    clip = shared / "asr" / "librispeech_1089-134686-0001.flac"
    proc = subprocess.run([sys.executable, "-m", "app", "run", "--source", str(clip), "--target", "none"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "No display was found" in proc.stderr and "terminal instead" in proc.stderr
    assert proc.stdout.strip(), "captions were printed"


def test_desktop_entry_points_at_the_run_command(tmp_path, monkeypatch):
    from app.main import desktop_entry, install_desktop_entry

    text = desktop_entry()
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    icon_line = next(line for line in text.splitlines() if line.startswith("Icon="))
    assert str(ROOT / "packaging" / "run.sh") in exec_line
    assert Path(icon_line[5:]).is_file()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    path = install_desktop_entry()
    assert path == tmp_path / "applications" / "sotto.desktop" and path.read_text() == text


def test_model_download_with_progress_cancel_and_resume(qtbot, app_dirs, monkeypatch):
    import hashlib

    from test_download import _Server

    from app.controllers.app import AppController
    from core.models.registry import MODELS, ModelFile, ModelSpec

    payload = os.urandom(1_000_000)
    server = _Server()
    server.files = {"big.gguf": payload}
    server.pace = __import__("threading").Event()
    spec = ModelSpec("test-translator", "gguf", "a test GGUF", len(payload),
                     (ModelFile("big.gguf", sha256=hashlib.sha256(payload).hexdigest()),), hub_repo="org/repo")
    monkeypatch.setitem(MODELS, spec.name, spec)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("SOTTO_MODELS_DIR", str(app_dirs / "models"))
    c = AppController(show_windows=False, preload=False)
    try:
        panel = c.show_settings()
        row = panel.translation_model
        row.combo.setCurrentIndex(row.combo.findData("test-translator"))
        assert c.settings.translation.model == "test-translator"
        assert "not downloaded" in row.status.text() and "1 MB" in row.status.text()
        assert not row.download.isHidden()
        progress = []
        c.downloads.progress.connect(lambda name, fraction, text: progress.append(fraction))
        row.download.click()
        qtbot.waitUntil(lambda: any(f and f > 0.1 for f in progress), timeout=30_000)
        assert not row.progress.isHidden() and not row.cancel.isHidden() and row.download.isHidden()
        with qtbot.waitSignal(c.downloads.failed, timeout=30_000):
            row.cancel.click()
        assert "paused" in panel.message.text() and "partly downloaded" in row.status.text()
        kept = (app_dirs / "models" / "test-translator" / "big.gguf.part").stat().st_size
        assert 0 < kept < len(payload)
        server.pace.set()  # full speed now
        with qtbot.waitSignal(c.downloads.finished, timeout=30_000):
            row.download.click()
        assert server.requests[-1] == f"bytes={kept}-", "resumed where it stopped"
        assert "ready" in row.status.text() and row.progress.isHidden()
        assert (app_dirs / "models" / "test-translator" / "big.gguf").read_bytes() == payload
    finally:
        c.shutdown()
        server.close()


def test_a_download_starts_again_as_soon_as_its_cancel_is_reported(qtbot, app_dirs, monkeypatch):
    """Download clicked right after Cancel starts at once (and resumes): the job is over when
    ``failed`` is emitted. In a full test run the download thread was still winding down when the
    settings panel showed the cancel, and the next click was ignored."""
    import hashlib
    import threading

    from PySide6.QtCore import Qt
    from test_download import _Server

    from app.controllers.downloads import ModelDownloads
    from core.models import ModelStore
    from core.models.registry import MODELS, ModelFile, ModelSpec

    payload = os.urandom(1_000_000)
    server = _Server()
    server.files = {"big.gguf": payload}
    server.pace = threading.Event()
    spec = ModelSpec("test-translator", "gguf", "a test GGUF", len(payload),
                     (ModelFile("big.gguf", sha256=hashlib.sha256(payload).hexdigest()),), hub_repo="org/repo")
    monkeypatch.setitem(MODELS, spec.name, spec)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("SOTTO_MODELS_DIR", str(app_dirs / "models"))
    downloads = ModelDownloads(ModelStore())
    started, restarted = threading.Event(), []
    downloads.progress.connect(lambda *_: started.set(), Qt.ConnectionType.DirectConnection)
    # run in the download thread at the moment it reports the cancel, as a click would come right after
    downloads.failed.connect(lambda name, _: restarted.append(downloads.start(name)),
                             Qt.ConnectionType.DirectConnection)
    try:
        assert downloads.start("test-translator")
        assert started.wait(30)
        with qtbot.waitSignal(downloads.finished, timeout=30_000):
            downloads.cancel("test-translator")
            server.pace.set()
        assert restarted == [True]
        assert server.requests[-1] is not None and server.requests[-1].startswith("bytes="), "resumed"
        assert (app_dirs / "models" / "test-translator" / "big.gguf").read_bytes() == payload
    finally:
        downloads.shutdown()
        server.close()


def test_signals_from_worker_threads_keep_reference_counts(qtbot):
    """PySide6 6.12.0 on Python 3.11 lost a reference to True (or None) on every signal emit and
    crashed the app after a few thousand caption updates; the pinned Qt binding must not."""
    from app.controllers.bridge import ServiceBridge

    bridge = ServiceBridge()
    received = [0]

    def count(message, fraction) -> None:
        received[0] += 1

    bridge.status.connect(count)
    before_true, before_none = sys.getrefcount(True), sys.getrefcount(None)

    def emit_many() -> None:
        for i in range(20_000):
            bridge.on_status("loading", None if i % 2 else 0.5)

    worker = threading.Thread(target=emit_many, name="emitter")
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: received[0] == 20_000, timeout=30_000)
    assert abs(sys.getrefcount(True) - before_true) < 100
    assert abs(sys.getrefcount(None) - before_none) < 100


def test_the_app_quits_cleanly_on_sigterm(app_dirs):
    logs = app_dirs / "logs"
    env = {**os.environ, "SOTTO_LOG_DIR": str(logs), "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([sys.executable, "-m", "app", "app"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # polling another process's log; nothing to wait on
            log = logs / "sotto.log"
            if log.exists() and "translator gemma" in log.read_text():
                break
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "Traceback" not in out


def test_speculative_engine_rows_and_the_sparse_tree_switch(qtbot, app_dirs):
    """The drafter/verifier rows appear with the speculative engine; the knobs calibration
    tunes (confidence, longest draft) are editable only with calibration off; the sparse tree
    is a switch of its own."""
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    settings = Settings()
    panel = SettingsPanel(settings, ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    form = panel._models_form
    assert form.isRowVisible(panel.asr_model) and not form.isRowVisible(panel.sparse_tree)
    settings = settings.with_value("asr.engine", "speculative")
    panel.load(settings)
    assert not form.isRowVisible(panel.asr_model)
    assert all(form.isRowVisible(w) for w in (panel.drafter_model, panel.verifier_model, panel.sparse_tree))
    assert not panel.max_draft.isEnabled() and not panel.draft_threshold.isEnabled(), "calibration chooses"
    assert panel.sparse_tree.isEnabled() and not panel.sparse_tree.isChecked()
    panel.load(settings.with_value("asr.calibrate", False))
    assert panel.max_draft.isEnabled() and panel.draft_threshold.isEnabled()
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.sparse_tree.setChecked(True)
    assert blocker.args == ["asr.sparse_tree", True]


def test_show_at_pause_switch_shows_the_setting_and_asks_to_change_it(qtbot, app_dirs):
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    assert panel.show_at_pause.isChecked()
    panel.load(Settings().with_value("captions.show_at_pause", False))
    assert not panel.show_at_pause.isChecked()
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.show_at_pause.setChecked(True)
    assert blocker.args == ["captions.show_at_pause", True]


def test_the_gpu_choice_says_why_it_cannot_be_chosen(qtbot, app_dirs):
    """Settings › Compute: without a usable GPU the CUDA entry is greyed out and its tooltip is the
    sentence ``core.compute.ct2_cuda_problem`` gives (e.g. CUDA 12's cuBLAS missing), not a guess."""
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    why = "An NVIDIA GPU is here, but CTranslate2 needs libcublas.so.12 (CUDA 12's cuBLAS), which is not installed."
    for problem, tip in ((why, why), (None, "No CUDA GPU was found on this machine.")):
        panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False,
                              cuda_problem=problem)
        qtbot.addWidget(panel)
        item = panel.compute.model().item(panel.compute.findData("cuda"))
        assert not item.isEnabled() and item.toolTip() == tip
    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=True)
    qtbot.addWidget(panel)
    assert panel.compute.model().item(panel.compute.findData("cuda")).isEnabled()


def test_source_mask_controls_show_the_settings_and_ask_to_change_them(qtbot, app_dirs):
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    assert panel.source_mask.currentData() == "heard" and panel.source_hold.value() == 0.3
    panel.load(Settings().with_value("captions.source_mask", "words").with_value("captions.source_hold_s", 0.8))
    assert panel.source_mask.currentData() == "words" and panel.source_hold.value() == 0.8
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.source_mask.setCurrentIndex(panel.source_mask.findData("heard"))
    assert blocker.args == ["captions.source_mask", "heard"]
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.source_hold.setValue(0.5)
    assert blocker.args == ["captions.source_hold_s", 0.5]


def test_the_verification_wait_shows_the_setting_and_asks_to_change_it(qtbot, app_dirs):
    """asr.verify_lookahead_s is on the Models tab while lines are verified, hidden when they are not."""
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    assert panel.verify_lookahead.value() == Settings().asr.verify_lookahead_s
    assert panel._models_form.isRowVisible(panel.verify_lookahead)
    panel.load(Settings().with_value("asr.verify_lookahead_s", 2.5))
    assert panel.verify_lookahead.value() == 2.5
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.verify_lookahead.setValue(1.2)
    assert blocker.args == ["asr.verify_lookahead_s", 1.2]
    panel.load(Settings().with_value("asr.verify_lines", False))
    assert not panel._models_form.isRowVisible(panel.verify_lookahead)


def test_the_recheck_shows_the_setting_off_by_default_and_asks_to_change_it(qtbot, app_dirs):
    """asr.verify_recheck_s is on the Models tab while lines are verified, "Off" at 0 (the default)."""
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    assert Settings().asr.verify_recheck_s == 0.0 and panel.verify_recheck.text() == "Off"
    assert panel._models_form.isRowVisible(panel.verify_recheck)
    panel.load(Settings().with_value("asr.verify_recheck_s", 2.5))
    assert panel.verify_recheck.value() == 2.5 and panel.verify_recheck.text() == "2.5 s"
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.verify_recheck.setValue(3.0)
    assert blocker.args == ["asr.verify_recheck_s", 3.0]
    panel.load(Settings().with_value("asr.verify_lines", False))
    assert not panel._models_form.isRowVisible(panel.verify_recheck)


def test_cross_checking_shows_the_setting_and_asks_to_change_it(qtbot, app_dirs):
    """asr.cross_check and asr.verify_whole_sentences are on the Models tab while lines are verified, hidden
    when they are not."""
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    assert panel.cross_check.isChecked() == Settings().asr.cross_check
    assert panel._models_form.isRowVisible(panel.cross_check)
    panel.load(Settings().with_value("asr.cross_check", False))
    assert not panel.cross_check.isChecked()
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.cross_check.setChecked(True)
    assert blocker.args == ["asr.cross_check", True]
    # whole sentences (a line the verifier hears going on waits for the next): off by default, beside it
    assert not panel.whole_sentences.isChecked() and not Settings().asr.verify_whole_sentences
    assert panel._models_form.isRowVisible(panel.whole_sentences)
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.whole_sentences.setChecked(True)
    assert blocker.args == ["asr.verify_whole_sentences", True]
    panel.load(Settings().with_value("asr.verify_lines", False))
    assert not panel._models_form.isRowVisible(panel.cross_check)
    assert not panel._models_form.isRowVisible(panel.whole_sentences)


def test_speed_controls_show_the_settings_and_ask_to_change_them(qtbot, app_dirs):
    """The Compute tab shows asr.encoder_seconds and translation.partial_share; changing them asks
    for the setting (seconds as a float, the share as a fraction)."""
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    assert panel.encoder_seconds.value() == 10 and panel.partial_share.value() == 20
    assert (panel.encoder_seconds.minimum(), panel.encoder_seconds.maximum()) == (10, 30)
    assert (panel.partial_share.minimum(), panel.partial_share.maximum()) == (10, 100)
    panel.load(Settings().with_value("asr.encoder_seconds", 30.0).with_value("translation.partial_share", 1.0))
    assert panel.encoder_seconds.value() == 30 and panel.partial_share.value() == 100
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.encoder_seconds.setValue(15)
    assert blocker.args == ["asr.encoder_seconds", 15.0]
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.partial_share.setValue(50)
    assert blocker.args == ["translation.partial_share", 0.5]

def test_audio_tab_offers_system_audio_and_each_output(qtbot, app_dirs):
    """Caption from: the microphone, the default output's sound, each output the controller listed,
    the demo; choosing one asks for that `audio.source`, and a saved one is shown again."""
    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    outputs = [("system:meeting", "System audio: Meeting Speakers"), ("system:other", "System audio: Null Output")]
    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], False, outputs)
    qtbot.addWidget(panel)
    assert [panel.source.itemData(i) for i in range(panel.source.count())] == [
        "mic", "system", "system:meeting", "system:other", "both", "demo"]
    with qtbot.waitSignal(panel.change_requested) as blocker:
        panel.source.setCurrentIndex(panel.source.findData("system:other"))
    assert blocker.args == ["audio.source", "system:other"]
    panel.load(Settings().with_value("audio.source", "system:meeting"))
    assert panel.source.currentData() == "system:meeting"


def test_overlay_labels_meeting_captions_and_shows_whom_the_user_chose(qtbot):
    """A meeting's captions carry "Me:" / "Them:"; overlay.speakers keeps one side only. A single
    stream's captions have no label and are always shown."""
    from app.views.layout import line_text
    from app.views.overlay import CaptionOverlay
    from core.settings import OverlaySettings
    from core.stream import CaptionLine, CaptionView, PartialLine, Sentence

    view = CaptionView(
        [CaptionLine(Sentence(0, "We start at nine.", 0.0, 1.0, "them"), "Wir beginnen um neun."),
         CaptionLine(Sentence(1, "Sounds good.", 1.0, 2.0, "me"), "Klingt gut.")],
        [PartialLine("And then", " we", "Und dann", speaker="them"), PartialLine(speaker="me")])
    shown = {}
    for speakers in ("both", "them", "me"):
        overlay = CaptionOverlay(OverlaySettings(lines=6, speakers=speakers), "en", "de")
        qtbot.addWidget(overlay)
        overlay.resize(900, 300)
        overlay.show_view(view)
        src, tr = overlay.visible_lines()
        shown[speakers] = ([line_text(x) for x in src], [line_text(x) for x in tr])
    assert shown["both"][0] == ["Them: We start at nine.", "Me: Sounds good.", "Them: And then we"]
    assert shown["both"][1] == ["Them: Wir beginnen um neun.", "Me: Klingt gut.", "Them: Und dann"]
    assert shown["them"][0] == ["Them: We start at nine.", "Them: And then we"]
    assert shown["me"] == (["Me: Sounds good."], ["Me: Klingt gut."])
    single = CaptionOverlay(OverlaySettings(speakers="them"), "en", "de")
    qtbot.addWidget(single)
    single.resize(900, 300)
    single.show_view(CaptionView([CaptionLine(Sentence(0, "Hello.", 0.0, 1.0), "Hallo.")]))
    assert [line_text(x) for x in single.visible_lines()[0]] == ["Hello."]


def _frame():
    from core.stream import CaptionLine, CaptionView, PartialLine, Sentence

    return CaptionView(
        [CaptionLine(Sentence(0, "We start at nine.", 0.0, 1.0), "Wir beginnen um neun."),
         CaptionLine(Sentence(1, "The room is booked.", 1.0, 2.0), None, provisional="Der Raum ist")],
        [PartialLine("And then", " we go", "Und dann gehen", held=("It has a view.",))])


def test_reading_mode_shows_only_finished_words_and_is_switched_from_the_overlay(qtbot, app_dirs):
    """Reading mode: the committed part of the speech and frozen translations only; the unconfirmed
    words, a finished line still waiting for its verification (shown otherwise on a row of its own),
    a provisional translation and the partial line's translation are not painted. The
    overlay's menu switch reaches the settings (saved) and the overlay."""
    from app.controllers.app import AppController
    from app.views.layout import COMMITTED, HELD, line_text
    from core.settings import load_settings

    c = AppController(show_windows=False)
    try:
        c.overlay.resize(900, 400)
        assert c.apply_setting("overlay.lines", 6)
        c.overlay_controller.show_captions(_frame())
        src, tr = c.overlay.visible_lines()
        assert [line_text(x) for x in src] == ["We start at nine.", "The room is booked.", "It has a view.",
                                               "And then we go"]
        # the held line is drawn as committed text but kept apart: it may still be replaced once
        assert [x[0].style for x in src] == [COMMITTED, COMMITTED, HELD, COMMITTED]
        assert [line_text(x) for x in tr] == ["Wir beginnen um neun.", "Der Raum ist", "Und dann gehen"]
        c.overlay.reading_mode_requested.emit(True)  # the overlay menu's check box
        assert c.settings.overlay.reading_mode and load_settings().overlay.reading_mode
        src, tr = c.overlay.visible_lines()
        assert [line_text(x) for x in src] == ["We start at nine.", "The room is booked.", "And then"]
        assert [line_text(x) for x in tr] == ["Wir beginnen um neun."]
        c.overlay.reading_mode_requested.emit(False)
        assert [line_text(x) for x in c.overlay.visible_lines()[1]][-1] == "Und dann gehen"
    finally:
        c.shutdown()


def test_ctrl_wheel_sizes_the_text_and_copy_puts_the_last_lines_on_the_clipboard(qtbot, app_dirs):
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QGuiApplication, QWheelEvent
    from PySide6.QtWidgets import QApplication

    from app.controllers.app import AppController

    c = AppController(show_windows=False)
    try:
        assert c.apply_setting("overlay.font_size", 22) and c.apply_setting("overlay.translation_font_size", 30)
        height = c.overlay.content_height()

        def wheel(dy: int, modifiers) -> None:
            event = QWheelEvent(QPointF(50, 20), QPointF(50, 20), QPoint(0, 0), QPoint(0, dy),
                                Qt.MouseButton.NoButton, modifiers, Qt.ScrollPhase.NoScrollPhase, False)
            QApplication.sendEvent(c.overlay, event)

        wheel(120, Qt.KeyboardModifier.ControlModifier)
        wheel(120, Qt.KeyboardModifier.ControlModifier)
        assert (c.settings.overlay.font_size, c.settings.overlay.translation_font_size) == (24, 32)
        assert c.overlay.content_height() > height
        wheel(-120, Qt.KeyboardModifier.ControlModifier)
        wheel(-120, Qt.KeyboardModifier.NoModifier)  # a plain wheel changes nothing
        assert c.settings.overlay.font_size == 23
        for _ in range(200):  # never past the setting's range
            wheel(120, Qt.KeyboardModifier.ControlModifier)
        assert c.settings.overlay.font_size == 96

        assert c.overlay_controller.copy_last_lines() == ""  # nothing to copy yet: the clipboard is left alone
        c.overlay_controller.show_captions(_frame())
        c.overlay.copy_requested.emit()
        assert QGuiApplication.clipboard().text() == (
            "We start at nine.\nWir beginnen um neun.\nThe room is booked.")
    finally:
        c.shutdown()


def test_outline_and_shadow_draw_dark_edges_that_keep_text_readable_on_white(qtbot):
    """On a white background with white text, plain text is invisible; an outline or a shadow paints
    dark pixels around the letters (counted in a grab of the overlay)."""
    from PySide6.QtGui import QColor

    from app.views.overlay import CaptionOverlay
    from core.settings import OverlaySettings

    dark = {}
    for style in ("none", "outline", "shadow"):
        look = OverlaySettings(outline=style, background_color="#ffffff", opacity=1.0, text_color="#ffffff",
                               translation_color="#ffffff", font_size=28)
        overlay = CaptionOverlay(look, "en", "de")
        qtbot.addWidget(overlay)
        overlay.resize(700, 200)
        overlay.show_view(_frame())
        image = overlay.grab().toImage()
        dark[style] = sum(1 for x in range(20, 680, 2) for y in range(16, 190, 2)
                          if QColor(image.pixel(x, y)).lightness() < 90)
    assert dark["none"] == 0, dark
    assert dark["outline"] > 200 and dark["shadow"] > 200, dark


def test_the_control_windows_shortcuts_follow_the_hotkeys_bindings(qtbot, app_dirs):
    """Rebinding a hotkey in Settings › Hotkeys moves the control window's own shortcut (and its tooltip) too:
    the new keys work in the window, the old ones no longer do."""
    from app.controllers.app import AppController

    c = AppController(show_windows=False, preload=False, welcome=False)
    try:
        c.window.show()
        qtbot.waitExposed(c.window)
        c.window.activateWindow()
        qtbot.waitUntil(c.window.isActiveWindow)  # shortcuts go to the active window
        ctrl_alt_shift = (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
                          | Qt.KeyboardModifier.ShiftModifier)
        assert c.window.shortcuts["overlay"].shortcut().toString() == "Ctrl+Alt+Shift+O"
        qtbot.keyClick(c.window, Qt.Key.Key_O, ctrl_alt_shift)
        assert c.settings.overlay.visible is False  # the default binding hides the captions
        assert c.apply_setting("hotkeys.overlay", "Ctrl+Alt+K")
        assert c.window.shortcuts["overlay"].shortcut().toString() == "Ctrl+Alt+K"
        assert "(Ctrl+Alt+K)" in c.window.overlay.toolTip()
        qtbot.keyClick(c.window, Qt.Key.Key_O, ctrl_alt_shift)  # the old keys: nothing
        assert c.settings.overlay.visible is False
        qtbot.keyClick(c.window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier)
        assert c.settings.overlay.visible is True
        assert c.apply_setting("hotkeys.overlay", "")  # no binding: no shortcut, a plain tooltip
        assert c.window.shortcuts["overlay"].shortcut().isEmpty() and "(" not in c.window.overlay.toolTip()
    finally:
        c.shutdown()


def test_the_control_windows_labels_show_the_default_hotkeys(qtbot):
    """Before the app binds the settings in force, the control window's shortcuts and tooltips are the
    settings' defaults (derived from them, not a copy that can drift)."""
    import dataclasses

    from PySide6.QtGui import QIcon

    from app.views.control import ControlWindow
    from core.settings import HotkeySettings

    window = ControlWindow(QIcon())
    qtbot.addWidget(window)
    defaults = dataclasses.asdict(HotkeySettings())
    assert {a: action.shortcut().toString() for a, action in window.shortcuts.items()} == defaults
    assert window.start.toolTip() == "Start or stop captions (Ctrl+Alt+Shift+Space)"
    assert window.click_through.toolTip() == f"Let the mouse pass through the overlay ({defaults['click_through']})"


def test_a_later_start_without_an_engine_check_runs_one_in_the_background_and_applies_it(qtbot, app_dirs):
    """A Sotto from before the engine check (a settings file, no calibration): the check runs at start with
    its progress in the control window, its choice replaces the saved engine, Settings › Compute says why,
    and the next start does not check again. Starting captions stops a check still running."""
    from app.controllers.app import AppController
    from core.asr.calibration import load_calibration
    from core.settings import Settings, load_settings, save_settings

    save_settings(Settings().with_value("asr.verify_lines", False).with_value("translation.target", "none")
                  .with_value("audio.source", "demo"))
    c = AppController(preload=False)
    try:
        assert c.calibration.running
        qtbot.waitUntil(lambda: c.window.progress.isVisibleTo(c.window), timeout=30_000)  # its progress
        c.toggle_start()  # captions first: the check stops
        qtbot.waitUntil(lambda: not c.calibration.running, timeout=60_000)
        assert load_calibration() is None
        if c.service.state != "idle":
            c.toggle_start()
        qtbot.waitUntil(lambda: c.service.state == "idle", timeout=60_000)
    finally:
        c.shutdown()
    c = AppController(preload=False)
    try:
        assert c.calibration.running
        qtbot.waitUntil(lambda: load_calibration() is not None, timeout=600_000)
        cal = load_calibration()
        qtbot.waitUntil(lambda: all(c.settings.value(k) == v for k, v in cal.settings.items()), timeout=10_000)
        assert cal.choice and all(load_settings().value(k) == v for k, v in cal.settings.items()), cal.settings
        assert load_settings().asr.verify_lines == (cal.settings["asr.verify_lines"])
        panel = c.show_settings()
        assert cal.reason in panel.engine_choice.text()
        base = next(r for r in cal.results if r.verifier == "whisper-base")
        assert panel.verifier_model.combo.currentData() == "whisper-base"
        assert f"{'keeps up' if base.keeps_up else 'too slow'} here as the verifier ({base.busy:.2f}" in \
            panel.verifier_model.status.text()  # said where the verifier is chosen (before any download)
    finally:
        c.shutdown()
    c = AppController(preload=False)
    try:
        assert not c.calibration.running  # checked on this machine already
    finally:
        c.shutdown()


def test_the_settings_panel_sets_up_without_a_qt_warning(qtbot, app_dirs):
    """Every row the Models tab shows or hides is a row of its form (a button of the Compute tab once took
    the name of the drafter's "tune for this machine" box, whose row then never hid: "QFormLayout::
    setRowVisible: Invalid widget"), and the box follows asr.calibrate."""
    from PySide6.QtCore import qInstallMessageHandler

    from app.views.settings_panel import SettingsPanel
    from core.models import ModelStore
    from core.settings import Settings

    messages: list[str] = []
    previous = qInstallMessageHandler(lambda mode, context, text: messages.append(text))
    try:
        panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
        qtbot.addWidget(panel)
        speculative = Settings().with_value("asr.engine", "speculative")
        panel.load(speculative)
        assert panel._models_form.isRowVisible(panel.calibrate) and panel.calibrate.isChecked()
        panel.load(speculative.with_value("asr.calibrate", False))
        assert not panel.calibrate.isChecked()
        panel.load(Settings())
        assert not panel._models_form.isRowVisible(panel.calibrate)
    finally:
        qInstallMessageHandler(previous)
    assert not [m for m in messages if "QFormLayout" in m], messages
