"""The first-run welcome (a view, layout only): what to caption, the spoken and target languages,
a live level meter for the sound chosen, and the engine calibration's progress.
:mod:`app.controllers.welcome` decides what each choice does."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
)

from core.text import SPOKEN_LANGUAGES, TARGET_LANGUAGES, language_name

from .widgets import level_meter, show_fraction

SOURCES = (("mic", "My microphone"), ("system", "What the computer plays (videos, calls, talks)"),
           ("both", "Both: a meeting (the microphone is me, the computer's sound is them)"))
METERS = (("mic", "Microphone"), ("system", "Computer sound"))
# wide enough for a device message (e.g. "No sound server (PulseAudio or PipeWire) is running, …") on two lines
MIN_WIDTH = 640


class WelcomeDialog(QDialog):
    """Asks what to caption and in which languages, shows the level of that sound, and how far the
    check of this computer's speed has come. Emits each choice as it is made."""

    source_chosen = Signal(str)  # "mic", "system" or "both"
    language_chosen = Signal(str, str)  # setting key, value
    start_requested = Signal()

    def __init__(self, icon: QIcon | None, source: str, spoken: str, target: str) -> None:
        super().__init__()
        self.setWindowTitle("Welcome to Sotto")
        self.setObjectName("welcomeDialog")
        if icon is not None:
            self.setWindowIcon(icon)
        layout = QVBoxLayout(self)
        intro = QLabel("Sotto captions speech live and translates it, on this computer only: nothing is sent "
                       "anywhere. Three questions, and it is ready.")
        intro.setWordWrap(True)
        layout.addWidget(intro)

        layout.addWidget(QLabel("<b>What should Sotto caption?</b>"))
        self.sources = QButtonGroup(self)
        for key, text in SOURCES:
            button = QRadioButton(text)
            button.setObjectName(f"source_{key}")
            button.setProperty("source", key)
            self.sources.addButton(button)
            layout.addWidget(button)
            button.setChecked(key == source)
        self.sources.buttonToggled.connect(
            lambda button, on: self.source_chosen.emit(button.property("source")) if on else None)

        form = QFormLayout()
        self.spoken = _combo([(c, language_name(c)) for c in SPOKEN_LANGUAGES], spoken)
        self.target = _combo([(c, "No translation" if c == "none" else language_name(c)) for c in TARGET_LANGUAGES],
                             target)
        form.addRow("Spoken language", self.spoken)
        form.addRow("Translate into", self.target)
        self.spoken.currentIndexChanged.connect(
            lambda: self.language_chosen.emit("asr.language", self.spoken.currentData()))
        self.target.currentIndexChanged.connect(
            lambda: self.language_chosen.emit("translation.target", self.target.currentData()))
        # which speech models the spoken language needs, in a sentence (hidden while there is none)
        self.language_note = QLabel()
        self.language_note.setObjectName("languageNote")
        self.language_note.setWordWrap(True)
        self.language_note.hide()
        form.addRow(self.language_note)
        self._meters: dict[str, tuple[QProgressBar, QLabel]] = {}
        for stream, label in METERS:
            bar, note = level_meter(f"{stream}WelcomeMeter")
            form.addRow(f"{label} level", bar)
            form.addRow(note)  # the whole width: a device's message is a sentence or two
            self._meters[stream] = (bar, note)
        layout.addLayout(form)

        layout.addWidget(QLabel("<b>Which speech engine suits this computer?</b>"))
        self.calibration = QProgressBar()
        self.calibration.setObjectName("calibrationProgress")
        self.calibration.setRange(0, 1000)
        self.calibration_text = QLabel("Waiting to start…")
        self.calibration_text.setObjectName("calibrationText")
        self.calibration_text.setWordWrap(True)
        layout.addWidget(self.calibration)
        layout.addWidget(self.calibration_text)

        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.start = QPushButton("Start captions")
        self.start.setObjectName("welcomeStart")
        self.start.setDefault(True)
        self.start.clicked.connect(self.start_requested.emit)
        buttons.addWidget(self.start)
        layout.addLayout(buttons)
        # the dialog grows with what its labels come to say (a device's message, the language's note,
        # the calibration's reason): never smaller than its layout needs, so no sentence is cut off
        layout.setSizeConstraint(QLayout.SizeConstraint.SetMinimumSize)
        self.setMinimumWidth(MIN_WIDTH)
        self.resize(MIN_WIDTH, self.sizeHint().height())

    # -- what the controller shows ----------------------------------------------------------------
    def source(self) -> str:
        """The sound chosen."""
        button = self.sources.checkedButton()
        return button.property("source") if button is not None else "mic"

    def show_meters(self, streams: tuple[str, ...]) -> None:
        """Show the level meters of ``streams`` only."""
        for stream, (bar, note) in self._meters.items():
            bar.setVisible(stream in streams)
            note.setVisible(stream in streams)
            bar.setValue(-60)
            note.setText("")

    def show_level(self, stream: str, dbfs: float) -> None:
        bar, note = self._meters[stream]
        bar.setValue(max(-60, min(0, round(dbfs))))
        if note.text():
            note.setText("")

    def show_level_error(self, stream: str, text: str) -> None:
        self._meters[stream][1].setText(text)
        self._fit()

    def show_language_note(self, text: str) -> None:
        """What the spoken language chosen needs (or why it was refused), in a sentence; "" hides it."""
        self.language_note.setText(text)
        self.language_note.setVisible(bool(text))
        self._fit()

    def set_spoken(self, language: str) -> None:
        """Show ``language`` as the spoken language without emitting a choice (a refused one is undone)."""
        with QSignalBlocker(self.spoken):
            self.spoken.setCurrentIndex(max(0, self.spoken.findData(language)))

    def _fit(self) -> None:
        """Grow to the height the labels need at the current width (word-wrapped labels ask for their
        height only for a given width, which a window's minimum size alone does not)."""
        layout = self.layout()
        layout.activate()
        needed = layout.totalHeightForWidth(self.width()) if layout.hasHeightForWidth() else layout.sizeHint().height()
        if needed > self.height():
            self.resize(self.width(), needed)

    def level(self, stream: str) -> tuple[int, str]:
        """A meter's reading and note (for tests)."""
        bar, note = self._meters[stream]
        return bar.value(), note.text()

    def show_calibration(self, fraction: float | None, text: str) -> None:
        """The calibration's progress (``fraction`` None: busy without a known end)."""
        show_fraction(self.calibration, fraction)
        self.calibration_text.setText(text)
        self._fit()

    def calibration_done(self, text: str) -> None:
        show_fraction(self.calibration, 1.0)
        self.calibration_text.setText(text)
        self._fit()


def _combo(items: list[tuple[str, str]], current: str) -> QComboBox:
    box = QComboBox()
    for key, text in items:
        box.addItem(text, key)
    index = box.findData(current)
    box.setCurrentIndex(max(0, index))
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    box.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    return box
