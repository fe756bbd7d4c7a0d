"""The settings panel (a view, layout only): every knob, applied live through its controller.

Each edit becomes ``change_requested(key, value)``; :mod:`app.controllers.settings`
validates and saves it and answers with :meth:`SettingsPanel.show_result` (the control
snaps back to the saved value if the change was refused). Model downloads and the level
meter are driven by that controller too; the panel only shows their progress.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QColorDialog,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFontComboBox,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QKeySequenceEdit,
    QLabel,
    QProgressBar,
    QPushButton,
    QSlider,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.hotkeys import ACTIONS as HOTKEY_ACTIONS
from core.models.store import ModelStatus, human_size
from core.settings import ASREngineKind, Settings, value_range
from core.text import SPOKEN_LANGUAGES, TARGET_LANGUAGES, language_name

from .widgets import level_meter, show_fraction

BETA_HELP = ("β biases each re-translation toward the previous one: higher is steadier and faster, "
             "a little less accurate; 0 gives exactly plain greedy decoding. From 0.5 on, the unfinished line's "
             "previous translation is kept unchecked and only extended. Finished sentences are always checked "
             "(translated at β = 0).")
MASK_HELP = ("Hides the last k words of an unfinished line until they settle. Display only: the translator "
             "still sees them; in the draft: they are also left out of the translator's draft. Spoken words "
             "not yet confirmed are shown once a little speech has been heard after them (or, if you choose, "
             "the last k are hidden too).")


def _ints(bounds: tuple[float, float]) -> tuple[int, int]:
    """A setting's range for a spin box."""
    return int(bounds[0]), int(bounds[1])


def _percent(bounds: tuple[float, float]) -> tuple[int, int]:
    """A 0–1 setting's range for a slider in hundredths."""
    return round(100 * bounds[0]), round(100 * bounds[1])


def _combo(items: list[tuple[str, str]]) -> QComboBox:
    box = QComboBox()
    for value, label in items:
        box.addItem(label, value)
    return box


def _select(box: QComboBox, value: str) -> None:
    i = box.findData(value)
    if i < 0:
        box.addItem(value, value)
        i = box.count() - 1
    box.blockSignals(True)
    box.setCurrentIndex(i)
    box.blockSignals(False)


class ModelRow(QWidget):
    """A model picker with its status, size, download progress, cancel and 'local file' button."""

    download_requested = Signal(str)
    cancel_requested = Signal(str)
    choose_local = Signal()

    def __init__(self, choices: list[ModelStatus]) -> None:
        super().__init__()
        self._labels = {m.name: f"{m.name} — {m.description}" for m in choices}
        self.combo = _combo(list(self._labels.items()))
        self.status = QLabel()
        self.status.setObjectName("modelStatus")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setVisible(False)
        self.download = QPushButton("Download")
        self.cancel = QPushButton("Cancel")
        self.cancel.setVisible(False)
        self.local = QPushButton("Local file…")
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.combo, 0, 0, 1, 3)
        grid.addWidget(self.local, 0, 3)
        grid.addWidget(self.status, 1, 0)
        grid.addWidget(self.progress, 1, 1)
        grid.addWidget(self.download, 1, 2)
        grid.addWidget(self.cancel, 1, 3)
        self.download.clicked.connect(lambda: self.download_requested.emit(self.combo.currentData()))
        self.cancel.clicked.connect(lambda: self.cancel_requested.emit(self.combo.currentData()))
        self.local.clicked.connect(self.choose_local.emit)

    def show_status(self, status: ModelStatus | None, name: str, fit: str = "") -> None:
        """Show a model's state and size (and ``fit``: whether it keeps up here); Download only where it helps."""
        if status is None:
            self.status.setText(f"local file: {name}")
            self.download.setVisible(False)
            return
        self.status.setText(f"{status.state_words} · {human_size(status.size)}" + (f" · {fit}" if fit else ""))
        self.download.setVisible(status.downloadable and not self.cancel.isVisible())

    def show_notes(self, notes: dict[str, str]) -> None:
        """Add a few words to each model's entry in the list (model name → words; none: its description alone)."""
        for i in range(self.combo.count()):
            name = self.combo.itemData(i)
            if name in self._labels:
                note = notes.get(name)
                self.combo.setItemText(i, self._labels[name] + (f" · {note}" if note else ""))

    def show_progress(self, fraction: float | None, text: str) -> None:
        """Download progress (``fraction`` None: size unknown)."""
        self.progress.setVisible(True)
        self.cancel.setVisible(True)
        self.download.setVisible(False)
        show_fraction(self.progress, fraction)
        self.progress.setFormat(text)
        self.progress.setTextVisible(True)

    def end_progress(self) -> None:
        """The download ended (done, failed or cancelled)."""
        self.progress.setVisible(False)
        self.cancel.setVisible(False)


class SettingsPanel(QDialog):
    """All user settings in tabs; changes are requested, not applied, here."""

    change_requested = Signal(str, object)  # key, value
    download_requested = Signal(str)  # model name
    cancel_download = Signal(str)
    advice_accepted = Signal(str)  # the advised translation model: download it if needed, then use it
    meter_wanted = Signal(bool)  # the Audio tab is shown / hidden
    hotkey_recording = Signal(bool)  # a hotkey box has the focus: the keys pressed are for it, not global hotkeys
    calibrate_requested = Signal()  # "Check again": measure which speech engine keeps up here

    def __init__(self, settings: Settings, models: list[ModelStatus], devices: list[tuple[str, str]],
                 cuda_available: bool, outputs: list[tuple[str, str]] | None = None,
                 parent: QWidget | None = None, cuda_problem: str | None = None) -> None:
        """``cuda_problem``: why the GPU cannot be chosen (``core.compute.ct2_cuda_problem``), shown on it."""
        super().__init__(parent)
        self.setWindowTitle("Sotto settings")
        self.setObjectName("settingsPanel")
        self.resize(620, 470)
        self._models = {m.name: m for m in models}
        self._fits: dict[str, str] = {}
        self._speeds: dict[str, str] = {}  # translation model → its expected speed here, in words
        self.tabs = QTabWidget()
        self.tabs.addTab(self._captions_tab(), "Captions")
        self.tabs.addTab(self._languages_tab(), "Languages")
        self.tabs.addTab(self._models_tab(models), "Models")
        self.tabs.addTab(self._audio_tab(devices, outputs or []), "Audio")
        self.tabs.addTab(self._display_tab(), "Display")
        self.tabs.addTab(self._compute_tab(cuda_available, cuda_problem), "Compute")
        self.tabs.addTab(self._hotkeys_tab(), "Hotkeys")
        self.tabs.currentChanged.connect(self._tab_changed)
        self.message = QLabel()
        self.message.setObjectName("settingsMessage")
        self.message.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.message)
        layout.addWidget(buttons)
        self.load(settings)

    # -- tabs ------------------------------------------------------------------------------------
    def _captions_tab(self) -> QWidget:
        w = QWidget()
        form = QFormLayout(w)
        self.beta = QSlider(Qt.Orientation.Horizontal)
        self.beta.setRange(*_percent(value_range("translation.beta")))
        self.beta.setPageStep(5)
        self.beta_value = QLabel()
        row = QHBoxLayout()
        row.addWidget(self.beta)
        row.addWidget(self.beta_value)
        form.addRow("Bias β", row)
        help_label = QLabel(BETA_HELP)
        help_label.setWordWrap(True)
        form.addRow("", help_label)
        self.bias_scope = _combo([
            ("final-exact", "The unfinished line only: finished sentences exactly as plain decoding"),
            ("paper", "Every update, finished sentences too (as in the SSBD paper)"),
            ("holdback-1", "Only what translates words both updates share, less the last one"),
            ("holdback-1+final-exact", "Shared words only, and finished sentences exact")])
        form.addRow("β applies to", self.bias_scope)
        self.engine = _combo([("ssbd", "Self-speculative (SSBD, uses β)"), ("ar", "Plain re-translation")])
        form.addRow("Translation engine", self.engine)
        self.mask_k = QSpinBox()
        self.mask_k.setRange(*_ints(value_range("captions.mask_k")))
        form.addRow("Mask-k (hidden unstable words)", self.mask_k)
        self.mask_mode = _combo([("display", "Display only"), ("draft", "Also in the translator's draft")])
        form.addRow("Mask mode", self.mask_mode)
        self.source_mask = _combo([("heard", "Shown once speech is heard after them"),
                                   ("words", "The last k hidden, like the translation")])
        form.addRow("Unconfirmed spoken words", self.source_mask)
        self.source_hold = QDoubleSpinBox()
        self.source_hold.setRange(*value_range("captions.source_hold_s"))
        self.source_hold.setSingleStep(0.1)
        self.source_hold.setDecimals(1)
        self.source_hold.setSuffix(" s")
        form.addRow("Speech heard after a word", self.source_hold)
        self.show_at_pause = QCheckBox("Show the whole line when the speaker pauses")
        form.addRow("", self.show_at_pause)
        mask_help = QLabel(MASK_HELP)
        mask_help.setWordWrap(True)
        form.addRow("", mask_help)
        self.beta.valueChanged.connect(lambda v: self.beta_value.setText(f"{v / 100:.2f}"))
        self.beta.sliderReleased.connect(
            lambda: self.change_requested.emit("translation.beta", self.beta.value() / 100)
        )
        self.beta.actionTriggered.connect(self._beta_action)
        self.engine.currentIndexChanged.connect(
            lambda: self.change_requested.emit("translation.engine", self.engine.currentData()))
        self.bias_scope.currentIndexChanged.connect(
            lambda: self.change_requested.emit("translation.bias_scope", self.bias_scope.currentData()))
        self.mask_k.valueChanged.connect(lambda v: self.change_requested.emit("captions.mask_k", v))
        self.mask_mode.currentIndexChanged.connect(
            lambda: self.change_requested.emit("captions.mask_mode", self.mask_mode.currentData()))
        self.show_at_pause.toggled.connect(lambda on: self.change_requested.emit("captions.show_at_pause", on))
        self.source_mask.currentIndexChanged.connect(
            lambda: self.change_requested.emit("captions.source_mask", self.source_mask.currentData()))
        self.source_hold.valueChanged.connect(
            lambda v: self.change_requested.emit("captions.source_hold_s", round(v, 1)))
        return w

    def _beta_action(self, action: int) -> None:
        # keyboard and page steps apply at once; dragging applies on release
        if not self.beta.isSliderDown():
            self.change_requested.emit("translation.beta", self.beta.sliderPosition() / 100)

    def _languages_tab(self) -> QWidget:
        w = QWidget()
        form = QFormLayout(w)
        self.spoken = _combo([(c, language_name(c)) for c in SPOKEN_LANGUAGES])
        self.target = _combo([(c, "No translation" if c == "none" else language_name(c)) for c in TARGET_LANGUAGES])
        form.addRow("Spoken language", self.spoken)
        form.addRow("Translate into", self.target)
        self.spoken.currentIndexChanged.connect(
            lambda: self.change_requested.emit("asr.language", self.spoken.currentData()))
        self.target.currentIndexChanged.connect(
            lambda: self.change_requested.emit("translation.target", self.target.currentData()))
        return w

    def _models_tab(self, models: list[ModelStatus]) -> QWidget:
        w = QWidget()
        form = QFormLayout(w)
        self._models_form = form
        speech = [m for m in models if m.kind == "whisper-ct2"]
        self.asr_engine = _combo([("faster-whisper", "One model (fastest)"),
                                  ("speculative", "Speculative: a small drafter, a large verifier (more accurate)")])
        form.addRow("Speech engine", self.asr_engine)
        self.asr_model = ModelRow(speech)
        self.drafter_model = ModelRow(speech)
        self.verifier_model = ModelRow(speech)
        self.translation_model = ModelRow([m for m in models if m.kind == "gguf"])
        form.addRow("Speech model", self.asr_model)
        self.verify_lines = QCheckBox("Verify each finished line with the verifier below (more accurate: "
                                      "the verifier's words are kept; a second later, more CPU)")
        form.addRow("", self.verify_lines)
        self.verify_lines.toggled.connect(lambda on: self.change_requested.emit("asr.verify_lines", on))
        self.verify_lookahead = QDoubleSpinBox()
        self.verify_lookahead.setRange(*value_range("asr.verify_lookahead_s"))
        self.verify_lookahead.setSingleStep(0.1)
        self.verify_lookahead.setDecimals(1)
        self.verify_lookahead.setSuffix(" s")
        self.verify_lookahead.setToolTip("How much speech after a finished line the verifier hears before it "
                                         "confirms the line. Longer hears conversation better, but each line is "
                                         "confirmed and translated that much later.")
        form.addRow("Verify after", self.verify_lookahead)
        self.verify_lookahead.valueChanged.connect(
            lambda v: self.change_requested.emit("asr.verify_lookahead_s", round(v, 1)))
        self.verify_recheck = QDoubleSpinBox()
        self.verify_recheck.setRange(*value_range("asr.verify_recheck_s"))
        self.verify_recheck.setSingleStep(0.5)
        self.verify_recheck.setDecimals(1)
        self.verify_recheck.setSuffix(" s")
        self.verify_recheck.setSpecialValueText("Off")  # shown at 0
        self.verify_recheck.setToolTip("A line the verifier hears otherwise than the speech model is decoded "
                                       "again once this much speech after it has been heard. Conversation is "
                                       "heard better, but such lines are confirmed and translated later, and "
                                       "it costs CPU.")
        form.addRow("Recheck after", self.verify_recheck)
        self.verify_recheck.valueChanged.connect(
            lambda v: self.change_requested.emit("asr.verify_recheck_s", round(v, 1)))
        self.cross_check = QCheckBox("Cross-check: the speech model also decodes each line the verifier is unsure "
                                     "of, and the decode both models find likelier is kept (more CPU)")
        form.addRow("", self.cross_check)
        self.cross_check.toggled.connect(lambda on: self.change_requested.emit("asr.cross_check", on))
        self.whole_sentences = QCheckBox("Whole sentences: a line the verifier hears going on is confirmed "
                                         "with the next one, so it is translated as one sentence")
        form.addRow("", self.whole_sentences)
        self.whole_sentences.toggled.connect(
            lambda on: self.change_requested.emit("asr.verify_whole_sentences", on))
        form.addRow("Drafter", self.drafter_model)
        form.addRow("Verifier", self.verifier_model)
        self.draft_threshold = QSlider(Qt.Orientation.Horizontal)
        self.draft_threshold.setRange(*_percent(value_range("asr.draft_threshold")))
        self.draft_threshold_value = QLabel()
        row = QHBoxLayout()
        row.addWidget(self.draft_threshold)
        row.addWidget(self.draft_threshold_value)
        form.addRow("Draft confidence", row)
        self.max_draft = QSpinBox()
        self.max_draft.setRange(*_ints(value_range("asr.max_draft")))
        form.addRow("Longest draft (tokens)", self.max_draft)
        self._draft_row = row
        self.sparse_tree = QCheckBox("Sparse tree: also check the drafter's second guess where it is unsure")
        form.addRow("", self.sparse_tree)
        self.sparse_tree.toggled.connect(lambda on: self.change_requested.emit("asr.sparse_tree", on))
        self.calibrate = QCheckBox("Tune confidence and draft length for this machine (measured once)")
        form.addRow("", self.calibrate)
        self.calibrate.toggled.connect(lambda on: self.change_requested.emit("asr.calibrate", on))
        spec_note = QLabel("The speculative engine's transcript is exactly the verifier's own; the drafter only "
                           "makes it faster. The drafter stops at a word it is less sure of than the confidence above.")
        spec_note.setWordWrap(True)
        form.addRow("", spec_note)
        self._spec_note = spec_note
        form.addRow("Translation model", self.translation_model)
        self.advice = QLabel()
        self.advice.setObjectName("modelAdvice")
        self.advice.setWordWrap(True)
        self.use_advised = QPushButton("Use it")
        self.use_advised.setVisible(False)
        advice_row = QHBoxLayout()
        advice_row.addWidget(self.advice, 1)
        advice_row.addWidget(self.use_advised)
        form.addRow("For this machine", advice_row)
        self._advised = ""
        self.use_advised.clicked.connect(lambda: self.advice_accepted.emit(self._advised))
        self.asr_engine.currentIndexChanged.connect(
            lambda: self.change_requested.emit("asr.engine", self.asr_engine.currentData()))
        self.draft_threshold.valueChanged.connect(lambda v: self.draft_threshold_value.setText(f"{v / 100:.2f}"))
        self.draft_threshold.sliderReleased.connect(
            lambda: self.change_requested.emit("asr.draft_threshold", self.draft_threshold.value() / 100))
        self.max_draft.valueChanged.connect(lambda v: self.change_requested.emit("asr.max_draft", v))
        note = QLabel("Bundled models work offline at once. Bigger models are more accurate and need more "
                      "memory and time; downloads resume where they stopped and are checked before use.")
        note.setWordWrap(True)
        form.addRow("", note)
        for key, row, kind in (("asr.model", self.asr_model, "speech"), ("asr.drafter", self.drafter_model, "speech"),
                               ("asr.verifier", self.verifier_model, "speech"),
                               ("translation.model", self.translation_model, "translation")):
            row.combo.currentIndexChanged.connect(
                lambda _=0, k=key, r=row: self.change_requested.emit(k, r.combo.currentData())
            )
            row.download_requested.connect(self.download_requested.emit)
            row.cancel_requested.connect(self.cancel_download.emit)
            row.choose_local.connect(lambda k=key, kd=kind: self._choose_local(k, kd))
        return w

    def _choose_local(self, key: str, kind: str) -> None:
        if kind == "speech":
            path = QFileDialog.getExistingDirectory(self, "A faster-whisper (CTranslate2) model folder")
        else:
            path, _ = QFileDialog.getOpenFileName(self, "A GGUF translation model", "", "GGUF models (*.gguf)")
        if path:
            self.change_requested.emit(key, path)

    def _audio_tab(self, devices: list[tuple[str, str]], outputs: list[tuple[str, str]]) -> QWidget:
        """``devices``: (name, label) of the inputs; ``outputs``: (source, label) of the outputs whose
        sound can be captured."""
        w = QWidget()
        form = QFormLayout(w)
        self.source = _combo([("mic", "Microphone"), ("system", "System audio (what the computer plays)"),
                              *outputs, ("both", "Meeting: microphone (me) and system audio (them)"),
                              ("demo", "Demo recording (JFK, 11 s)")])
        self.choose_file = QPushButton("Audio file…")
        row = QHBoxLayout()
        row.addWidget(self.source, 1)
        row.addWidget(self.choose_file)
        form.addRow("Caption from", row)
        self.device = _combo([("", "System default"), *devices])
        form.addRow("Input device", self.device)
        self._meters: dict[str, tuple[QProgressBar, QLabel]] = {}
        for stream, label in (("mic", "Microphone level"), ("system", "System audio level")):
            bar, note = level_meter(f"{stream}LevelMeter")
            form.addRow(label, bar)
            form.addRow("", note)
            self._meters[stream] = (bar, note)
        self.channel = _combo([("mix", "Mix all channels"), ("left", "Left"), ("right", "Right")])
        form.addRow("Channel", self.channel)
        self.source.currentIndexChanged.connect(
            lambda: self.change_requested.emit("audio.source", self.source.currentData()))
        self.device.currentIndexChanged.connect(
            lambda: self.change_requested.emit("audio.device", self.device.currentData()))
        self.channel.currentIndexChanged.connect(
            lambda: self.change_requested.emit("audio.channel", self.channel.currentData()))
        self.choose_file.clicked.connect(self._choose_file)
        return w

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "An audio or video file",
            "",
            "Audio and video (*.wav *.flac *.mp3 *.m4a *.ogg *.opus *.mp4 *.mkv *.webm);;All files (*)",
        )
        if path:
            self.change_requested.emit("audio.source", path)

    def _display_tab(self) -> QWidget:
        w = QWidget()
        form = QFormLayout(w)
        self.show_which = _combo([("both", "Speech and translation"), ("source", "Speech only"),
                                  ("translation", "Translation only")])
        form.addRow("Show", self.show_which)
        self.speakers = _combo([("both", "Everyone"), ("them", "Only the others (them)"), ("me", "Only me")])
        form.addRow("In meetings, show", self.speakers)
        self.speaker_labels = QCheckBox("Tell the others apart: label their lines Them 1, Them 2, … by voice")
        form.addRow("", self.speaker_labels)
        self.speakers_expected = QSpinBox()
        self.speakers_expected.setRange(*_ints(value_range("speakers.expected")))
        self.speakers_expected.setSpecialValueText("not known")
        form.addRow("How many others", self.speakers_expected)
        self.speaker_style = _combo([("label", "Their label before each line"),
                                     ("colour", "A colour per speaker"), ("none", "Nothing")])
        form.addRow("A speaker change shows as", self.speaker_style)
        self.lines = QSpinBox()
        self.lines.setRange(*_ints(value_range("overlay.lines")))
        form.addRow("Lines per language", self.lines)
        self.font = QFontComboBox()
        form.addRow("Font", self.font)
        self.font_size = QSpinBox()
        self.font_size.setRange(*_ints(value_range("overlay.font_size")))
        form.addRow("Font size", self.font_size)
        self.translation_font_size = QSpinBox()
        self.translation_font_size.setRange(*_ints(value_range("overlay.translation_font_size")))
        self.translation_font_size.setSpecialValueText("same as speech")
        form.addRow("Translation font size", self.translation_font_size)
        self.outline = _combo([("none", "None"), ("outline", "Dark outline"), ("shadow", "Drop shadow")])
        form.addRow("Text outline (for bright video)", self.outline)
        self.reading_mode = QCheckBox("Reading mode: show only finished words (calmer, a second or so later)")
        form.addRow("", self.reading_mode)
        self.colours: dict[str, QPushButton] = {}
        for key, label in (("text_color", "Text"), ("tentative_color", "Unconfirmed words"),
                           ("translation_color", "Translation"), ("background_color", "Background")):
            button = QPushButton()
            button.setObjectName(f"colour_{key}")
            button.clicked.connect(lambda _=False, k=key: self._pick_colour(k))
            self.colours[key] = button
            form.addRow(label, button)
        self.opacity = QSlider(Qt.Orientation.Horizontal)
        self.opacity.setRange(*_percent(value_range("overlay.opacity")))
        form.addRow("Background opacity", self.opacity)
        self.show_which.currentIndexChanged.connect(
            lambda: self.change_requested.emit("overlay.show", self.show_which.currentData()))
        self.speakers.currentIndexChanged.connect(
            lambda: self.change_requested.emit("overlay.speakers", self.speakers.currentData()))
        self.speaker_labels.toggled.connect(lambda on: self.change_requested.emit("speakers.labels", on))
        self.speakers_expected.valueChanged.connect(lambda v: self.change_requested.emit("speakers.expected", v))
        self.speaker_style.currentIndexChanged.connect(
            lambda: self.change_requested.emit("overlay.speaker_style", self.speaker_style.currentData()))
        self.lines.valueChanged.connect(lambda v: self.change_requested.emit("overlay.lines", v))
        self.font.currentFontChanged.connect(lambda f: self.change_requested.emit("overlay.font_family", f.family()))
        self.font_size.valueChanged.connect(lambda v: self.change_requested.emit("overlay.font_size", v))
        self.translation_font_size.valueChanged.connect(
            lambda v: self.change_requested.emit("overlay.translation_font_size", v))
        self.outline.currentIndexChanged.connect(
            lambda: self.change_requested.emit("overlay.outline", self.outline.currentData()))
        self.reading_mode.toggled.connect(lambda on: self.change_requested.emit("overlay.reading_mode", on))
        self.opacity.valueChanged.connect(lambda v: self.change_requested.emit("overlay.opacity", v / 100))
        return w

    def _pick_colour(self, key: str) -> None:
        current = QColor(self.colours[key].property("colour") or "#ffffff")
        colour = QColorDialog.getColor(current, self, "Choose a colour")
        if colour.isValid():
            self.change_requested.emit(f"overlay.{key}", colour.name())

    def _compute_tab(self, cuda_available: bool, cuda_problem: str | None = None) -> QWidget:
        w = QWidget()
        form = QFormLayout(w)
        self.compute = _combo([("cpu", "CPU"), ("cuda", "NVIDIA GPU (CUDA)"), ("auto", "Automatic")])
        cuda_item = self.compute.model().item(1)
        if not cuda_available and cuda_item is not None:
            cuda_item.setEnabled(False)
            cuda_item.setToolTip(cuda_problem or "No CUDA GPU was found on this machine.")
        form.addRow("Speech model runs on", self.compute)
        self.engine_choice = QLabel("")
        self.engine_choice.setObjectName("engineChoice")
        self.engine_choice.setWordWrap(True)
        self.check_again = QPushButton("Check again")
        self.check_again.setObjectName("calibrateButton")
        self.check_again.setToolTip("Measures which speech engine keeps up with live speech on this computer, with "
                                    "the translation chosen, and uses the most accurate one that does (about a "
                                    "minute; the first time a little longer).")
        self.calibration_bar = QProgressBar()
        self.calibration_bar.setObjectName("calibrationBar")
        self.calibration_bar.setRange(0, 100)
        self.calibration_bar.setVisible(False)
        row = QHBoxLayout()
        row.addWidget(self.calibration_bar, 1)
        row.addWidget(self.check_again)
        form.addRow("Speech engine for this computer", self.engine_choice)
        form.addRow("", row)
        self.check_again.clicked.connect(self.calibrate_requested.emit)
        self.gpu_layers = QSpinBox()
        self.gpu_layers.setRange(*_ints(value_range("translation.n_gpu_layers")))
        self.gpu_layers.setSpecialValueText("all (-1)")
        form.addRow("Translator layers on the GPU", self.gpu_layers)
        note = QLabel("Apple GPUs: the translator uses Metal when llama.cpp is built with it (set layers on "
                      "the GPU above); the current speech engine runs on the CPU on a Mac.")
        note.setWordWrap(True)
        form.addRow("", note)
        self.encoder_seconds = QSpinBox()
        self.encoder_seconds.setRange(*_ints(value_range("asr.encoder_seconds")))
        self.encoder_seconds.setSuffix(" s")
        form.addRow("Speech model listens to at least", self.encoder_seconds)
        self.partial_share = QSpinBox()
        self.partial_share.setRange(*_percent(value_range("translation.partial_share")))
        self.partial_share.setSingleStep(10)
        self.partial_share.setSuffix(" %")
        form.addRow("Translator time for unfinished lines", self.partial_share)
        speed = QLabel("The one-model speech engine reads what was said plus 2 s of quiet, at least the seconds "
                       "above: 10 s puts words on screen soonest, 30 s is Whisper's own window (the speculative "
                       "engine reads 30 s, where it hears best). Unfinished lines are "
                       "translated again only in that share of the time; finished sentences never wait. "
                       "Less uses less CPU and flickers less; 100% re-translates whenever the translator is free.")
        speed.setWordWrap(True)
        form.addRow("", speed)
        self.encoder_seconds.valueChanged.connect(
            lambda v: self.change_requested.emit("asr.encoder_seconds", float(v)))
        self.partial_share.valueChanged.connect(
            lambda v: self.change_requested.emit("translation.partial_share", v / 100))
        self.compute.currentIndexChanged.connect(
            lambda: self.change_requested.emit("asr.compute_device", self.compute.currentData()))
        self.gpu_layers.valueChanged.connect(lambda v: self.change_requested.emit("translation.n_gpu_layers", v))
        return w

    def _hotkeys_tab(self) -> QWidget:
        w = QWidget()
        form = QFormLayout(w)
        note = QLabel("These keys work while another program has focus. Click a box and press the new keys; "
                      "Clear turns a hotkey off.")
        note.setWordWrap(True)
        form.addRow(note)
        self.hotkey_edits: dict[str, QKeySequenceEdit] = {}
        self.hotkey_problems: dict[str, QLabel] = {}
        for action, label in HOTKEY_ACTIONS.items():
            edit = QKeySequenceEdit()
            edit.setObjectName(f"hotkey_{action}")
            edit.setMaximumSequenceLength(1)
            clear = QPushButton("Clear")
            clear.setObjectName(f"hotkeyClear_{action}")
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            row.addWidget(clear)
            problem = QLabel("")
            problem.setObjectName(f"hotkeyProblem_{action}")
            problem.setWordWrap(True)
            problem.setStyleSheet("color: #c0392b;")
            problem.setVisible(False)
            form.addRow(label, row)
            form.addRow("", problem)
            self.hotkey_edits[action] = edit
            edit.installEventFilter(self)
            self.hotkey_problems[action] = problem
            key = f"hotkeys.{action}"
            edit.editingFinished.connect(lambda k=key, e=edit: self.change_requested.emit(
                k, e.keySequence().toString(QKeySequence.SequenceFormat.PortableText)))
            clear.clicked.connect(lambda _=False, k=key, e=edit: (e.clear(), self.change_requested.emit(k, "")))
        return w

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched in self.hotkey_edits.values() and event.type() in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
            self.hotkey_recording.emit(event.type() == QEvent.Type.FocusIn)
        return super().eventFilter(watched, event)

    def show_hotkey_problems(self, problems: dict[str, str]) -> None:
        """The hotkeys not in force, one sentence each under its row (none: all are)."""
        for action, label in self.hotkey_problems.items():
            label.setText(problems.get(action, ""))
            label.setVisible(action in problems)

    def hotkey_problem(self, action: str) -> str:
        """The sentence shown under an action's hotkey ("" when it is in force)."""
        return self.hotkey_problems[action].text()

    def _tab_changed(self, index: int) -> None:
        self.meter_wanted.emit(self.isVisible() and self.tabs.tabText(index) == "Audio")

    # -- showing state -------------------------------------------------------------------------
    def load(self, settings: Settings) -> None:
        """Show ``settings`` in every control (without emitting change requests)."""
        for widget in self.findChildren(QWidget):
            widget.blockSignals(True)
        try:
            self.beta.setValue(round(settings.translation.beta * 100))
            self.beta_value.setText(f"{settings.translation.beta:.2f}")
            _select(self.engine, settings.translation.engine)
            self.mask_k.setValue(settings.captions.mask_k)
            _select(self.mask_mode, settings.captions.mask_mode)
            self.show_at_pause.setChecked(settings.captions.show_at_pause)
            _select(self.source_mask, settings.captions.source_mask)
            self.source_hold.setValue(settings.captions.source_hold_s)
            _select(self.bias_scope, settings.translation.bias_scope)
            _select(self.spoken, settings.asr.language)
            _select(self.target, settings.translation.target)
            _select(self.asr_model.combo, settings.asr.model)
            _select(self.asr_engine, settings.asr.engine)
            _select(self.drafter_model.combo, settings.asr.drafter)
            _select(self.verifier_model.combo, settings.asr.verifier)
            self.draft_threshold.setValue(round(settings.asr.draft_threshold * 100))
            self.draft_threshold_value.setText(f"{settings.asr.draft_threshold:.2f}")
            self.max_draft.setValue(settings.asr.max_draft)
            self.sparse_tree.setChecked(settings.asr.sparse_tree)
            self.calibrate.setChecked(settings.asr.calibrate)
            for tuned in (self.draft_threshold, self.max_draft):
                tuned.setEnabled(not settings.asr.calibrate)
            spec = settings.asr.engine == ASREngineKind.SPECULATIVE
            form = self._models_form
            form.setRowVisible(self.asr_model, not spec)
            form.setRowVisible(self.verify_lines, not spec)
            self.verify_lines.setChecked(settings.asr.verify_lines)
            self.verify_lookahead.setValue(settings.asr.verify_lookahead_s)
            form.setRowVisible(self.verify_lookahead, not spec and settings.asr.verify_lines)
            self.verify_recheck.setValue(settings.asr.verify_recheck_s)
            form.setRowVisible(self.verify_recheck, not spec and settings.asr.verify_lines)
            self.cross_check.setChecked(settings.asr.cross_check)
            form.setRowVisible(self.cross_check, not spec and settings.asr.verify_lines)
            self.whole_sentences.setChecked(settings.asr.verify_whole_sentences)
            form.setRowVisible(self.whole_sentences, not spec and settings.asr.verify_lines)
            for widget in (self.drafter_model, self._draft_row, self.max_draft, self.sparse_tree,
                           self.calibrate, self._spec_note):
                form.setRowVisible(widget, spec)
            form.setRowVisible(self.verifier_model, spec or settings.asr.verify_lines)
            _select(self.translation_model.combo, settings.translation.model)
            _select(self.source, settings.audio.source)
            _select(self.device, settings.audio.device)
            _select(self.channel, settings.audio.channel)
            ov = settings.overlay
            _select(self.show_which, ov.show)
            _select(self.speakers, ov.speakers)
            self.speaker_labels.setChecked(settings.speakers.labels)
            self.speakers_expected.setValue(settings.speakers.expected)
            _select(self.speaker_style, ov.speaker_style)
            self.lines.setValue(ov.lines)
            if ov.font_family:
                self.font.setCurrentFont(ov.font_family)
            self.font_size.setValue(ov.font_size)
            self.translation_font_size.setValue(ov.translation_font_size)
            _select(self.outline, ov.outline)
            self.reading_mode.setChecked(ov.reading_mode)
            for key, button in self.colours.items():
                value = getattr(ov, key)
                button.setProperty("colour", value)
                button.setText(value)
                button.setStyleSheet(f"background-color: {value}; color: {_contrast(value)};")
            self.opacity.setValue(round(ov.opacity * 100))
            _select(self.compute, settings.asr.compute_device)
            self.gpu_layers.setValue(settings.translation.n_gpu_layers)
            self.encoder_seconds.setValue(round(settings.asr.encoder_seconds))
            self.partial_share.setValue(round(settings.translation.partial_share * 100))
            for action, edit in self.hotkey_edits.items():
                edit.setKeySequence(QKeySequence.fromString(getattr(settings.hotkeys, action),
                                                            QKeySequence.SequenceFormat.PortableText))
        finally:
            for widget in self.findChildren(QWidget):
                widget.blockSignals(False)
        self.show_model_status(self._models)

    def show_advice(self, model: str, reason: str, languages: str, in_use: bool, ready: bool) -> None:
        """Which translation model suits this machine, and why; a button to get and use it."""
        self._advised = model
        self.advice.setText(f"<b>{model}</b>{' (in use)' if in_use else ''}: {reason} Languages: {languages}.")
        self.use_advised.setText("Use it" if ready else "Download and use it")
        self.use_advised.setVisible(not in_use)

    def show_model_status(self, statuses: dict[str, ModelStatus]) -> None:
        """Refresh the models' state and size."""
        self._models = statuses
        for row in self._model_rows():
            name = row.combo.currentData()
            notes = self._fits if row is self.verifier_model else self._speeds if row is self.translation_model else {}
            row.show_status(statuses.get(name), name, notes.get(name, ""))

    def show_translator_speeds(self, notes: dict[str, str]) -> None:
        """Each translation model's expected speed here (model name → a few words): in the translation
        model's list, beside every model, and under the one chosen."""
        self._speeds = dict(notes)
        self.translation_model.show_notes(self._speeds)
        self.show_model_status(self._models)

    def show_verifier_fit(self, fits: dict[str, str]) -> None:
        """What the engine check says of each verifier on this machine (model name → a few words): in
        the verifier's list, beside every model, and under the one chosen."""
        self._fits = dict(fits)
        self.verifier_model.show_notes(self._fits)
        self.show_model_status(self._models)

    def _model_rows(self) -> list[ModelRow]:
        """Every model picker."""
        return [self.asr_model, self.drafter_model, self.verifier_model, self.translation_model]

    def _row_for_model(self, name: str) -> ModelRow | None:
        """The picker showing model ``name`` (else the first that offers it), or None."""
        rows = [r for r in self._model_rows() if r.combo.findData(name) >= 0]
        current = [r for r in rows if r.combo.currentData() == name]
        return (current or rows or [None])[0]

    def show_download_progress(self, name: str, fraction: float | None, text: str) -> None:
        """Progress of the download of model ``name`` (``fraction`` None: size unknown)."""
        row = self._row_for_model(name)
        if row is not None:
            row.show_progress(fraction, text)

    def end_download(self, name: str) -> None:
        """The download of model ``name`` ended (done, failed or cancelled)."""
        row = self._row_for_model(name)
        if row is not None:
            row.end_progress()

    def show_calibration(self, summary: str, problem: str = "") -> None:
        """The saved engine calibration (its choice and why), and a problem of the last run."""
        self.calibration_bar.setVisible(False)
        self.check_again.setEnabled(True)
        self.engine_choice.setText(f"{problem} {summary}".strip() if problem else summary)

    def show_calibration_progress(self, fraction: float | None, text: str) -> None:
        self.calibration_bar.setVisible(True)
        self.check_again.setEnabled(False)
        show_fraction(self.calibration_bar, fraction)
        self.engine_choice.setText(text)

    def show_result(self, ok: bool, text: str) -> None:
        """The controller's answer to the last change: refused (red) or a note."""
        self.message.setProperty("refused", not ok)
        self.message.setStyleSheet("color: #c0392b;" if not ok else "color: palette(text);")
        self.message.setText(text)

    def show_level(self, stream: str, dbfs: float) -> None:
        """A reading of a level meter (``stream``: ``mic`` or ``system``)."""
        bar, note = self._meters[stream]
        bar.setValue(int(max(-60.0, min(0.0, dbfs))))
        note.setText("")

    def show_level_error(self, stream: str, text: str) -> None:
        """A level meter cannot read its sound (``stream``: ``mic`` or ``system``), or is idle."""
        bar, note = self._meters[stream]
        bar.setValue(-60)
        note.setText(text)

    def level(self, stream: str) -> tuple[int, str]:
        """What a level meter shows: its value in dB and its note."""
        bar, note = self._meters[stream]
        return bar.value(), note.text()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self._tab_changed(self.tabs.currentIndex())

    def hideEvent(self, event) -> None:  # noqa: N802
        super().hideEvent(event)
        self.meter_wanted.emit(False)


def _contrast(colour: str) -> str:
    c = QColor(colour)
    return "#000000" if (0.299 * c.red() + 0.587 * c.green() + 0.114 * c.blue()) > 140 else "#ffffff"
