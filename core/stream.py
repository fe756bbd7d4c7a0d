"""The data that flows between the stages, each concept with one name.

audio → :class:`TranscriptUpdate` (speech recognition) → :class:`TranslationUpdate`
(translation) → :class:`CaptionView` (what a display paints), with
:class:`Progress` beside them. The words used throughout:

- a **sentence** is finished: committed by the recogniser, never changed again;
- the **partial** line is the sentence still being spoken; its **committed** start
  never changes, its **tentative** rest may;
- **shown** means after display-only mask-k (what the screen has), everything else
  is the model's output;
- a **speaker** names the stream a sentence came from when there are several
  (``me``: the microphone, ``them``: what the computer plays); "" when there is one;
- a **voice** is who in a stream said a line, when speaker labels are on (:mod:`core.speakers`):
  its label ("Them 2", "Speaker 1", or the name the user gave), found just after the line is committed.

Nothing here imports another part of Sotto but :mod:`core.text`, so every stage can depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .text import join_parts


@dataclass(frozen=True)
class Word:
    """A recognised word with absolute audio times (seconds since stream start).

    ``text`` keeps Whisper's leading space, so words join by concatenation.
    """

    start: float
    end: float
    text: str
    probability: float = 1.0

    def shifted(self, offset: float) -> Word:
        """The same word moved by ``offset`` seconds."""
        return Word(self.start + offset, self.end + offset, self.text, self.probability)


ME, THEM = "me", "them"  # the speakers of a meeting: the microphone, and what the computer plays


def speaker_label(speaker: str) -> str:
    """How a speaker is written before a caption ("Me", "Them"; "" for a single stream)."""
    return speaker.capitalize()


def line_label(speaker: str, voice: str = "") -> str:
    """What is written before a committed line: its voice's label where known, else its stream's ("" for none)."""
    return voice or speaker_label(speaker)


@dataclass(frozen=True)
class Sentence:
    """A committed, finished sentence: what the translator freezes and the SRT lists."""

    index: int
    text: str
    start: float  # seconds of its stream's audio (each stream counts its own samples)
    end: float
    speaker: str = ""
    # where lines are verified (core.asr.verified): True for the verifier's words, False for a line kept as
    # the drafter heard it (Stop came first, or the verifier failed or looped); None where nothing verifies
    verified: bool | None = None


@dataclass
class StageTimings:
    """Seconds spent per stage for one update (summed over the stream in summaries)."""

    vad: float = 0.0
    asr: float = 0.0
    translate: float = 0.0

    def add(self, other: StageTimings) -> None:
        """Accumulate another update's timings."""
        self.vad += other.vad
        self.asr += other.asr
        self.translate += other.translate


@dataclass
class TranscriptUpdate:
    """One streaming update of the transcript.

    ``sentences`` are the sentences finished by this update (never repeated);
    ``committed`` is the committed start of the partial sentence and
    ``tentative`` the unconfirmed rest of the hypothesis, whose words (with their
    times) are ``tentative_words``. ``paused``: the speaker paused after it (voice
    activity ended), so the tentative words were decoded with silence after them
    rather than cut off mid-speech. ``held``: lines the streaming model finished that wait
    for their verification (:mod:`core.asr.verified`); they are shown as lines of their own,
    replaced in place once verified, and are part of the partial sentence for translation.
    ``drafts``: the lines of this stream are verified, so its held lines and the committed start
    of its partial line are drafts that verification may still replace.
    """

    sentences: list[Sentence]
    committed: str
    tentative: str
    audio_time: float
    window_seconds: float
    timings: StageTimings = field(default_factory=StageTimings)
    final: bool = False
    speaker: str = ""
    paused: bool = False
    tentative_words: tuple[Word, ...] = ()
    held: tuple[str, ...] = ()
    drafts: bool = False

    @property
    def partial(self) -> str:
        """The partial sentence as recognised so far (held lines, committed, tentative)."""
        return join_parts(*self.held, (self.committed + self.tentative).strip())


@dataclass
class FrozenTranslation:
    """The final translation of a finished sentence."""

    sentence: Sentence
    text: str


@dataclass
class TranslationUpdate:
    """Finished sentences translated by this update, and the partial sentence's translation.

    ``partial_source`` is the partial sentence exactly as it was translated (unmasked). An update with
    ``partial`` False carries finished sentences only (sent before the partial is translated again): the
    partial fields then repeat the last translation and say nothing new.
    """

    frozen: list[FrozenTranslation]
    partial_source: str
    partial_translation: str
    audio_time: float
    seconds: float = 0.0
    speaker: str = ""  # whose partial sentence ``partial_source`` is
    partial: bool = True


@dataclass
class CaptionLine:
    """One finished sentence and its translation (None until it arrives)."""

    sentence: Sentence
    translation: str | None = None
    provisional: str | None = None  # the partial translation last shown for it, until the final one arrives
    voice: str = ""  # who said it (its speaker label), once known; "" where speaker labels are off
    voice_id: int = 0  # that voice's number in the session (0: not known), e.g. to give it a colour

    @property
    def label(self) -> str:
        """What is written before it: its voice, else its stream's speaker ("" for a single stream)."""
        return line_label(self.sentence.speaker, self.voice)


@dataclass
class PartialLine:
    """One stream's partial sentence as shown."""

    committed: str = ""  # committed start of the partial sentence (always shown whole)
    shown_tentative: str = ""  # the part of its tentative words left after mask-k
    shown_translation: str = ""  # the part of its translation left after mask-k and untranslated runs
    hidden_tokens: int = 0  # tentative source tokens hidden by mask-k
    speaker: str = ""
    held: tuple[str, ...] = ()  # finished lines waiting for verification, each shown as a line of its own
    drafts: bool = False  # held lines and ``committed`` may still be replaced by verification

    @property
    def shown_source(self) -> str:
        """The partial source as shown, as one text (held lines, then the partial line)."""
        return join_parts(*self.held, self.committed, self.shown_tentative)

    @property
    def shown_line(self) -> str:
        """The partial line alone as shown (without the held lines above it)."""
        return join_parts(self.committed, self.shown_tentative)


@dataclass
class CaptionView:
    """Everything a display needs for one frame: the finished lines in the order they were
    committed, and each stream's partial line (one for a single stream)."""

    lines: list[CaptionLine]
    partials: list[PartialLine] = field(default_factory=lambda: [PartialLine()])
    audio_time: float = 0.0

    @property
    def partial(self) -> PartialLine:
        """The first stream's partial line (the only one with a single stream)."""
        return self.partials[0] if self.partials else PartialLine()

    def partial_of(self, speaker: str) -> PartialLine:
        """The partial line of ``speaker``'s stream (an empty one if it has none)."""
        return next((p for p in self.partials if p.speaker == speaker), PartialLine(speaker=speaker))


@dataclass
class Progress:
    """Where a run stands: audio done, speed and lag."""

    audio_time: float
    duration: float | None
    wall: float
    lag: float | None  # real time only: seconds between speech and screen for the newest audio
    window_seconds: float

    @property
    def rtf(self) -> float:
        """Wall seconds per audio second so far."""
        return self.wall / self.audio_time if self.audio_time > 0 else 0.0
