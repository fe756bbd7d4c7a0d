"""Result and option dataclasses of the streaming ASR."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Word:
    """A recognised word with absolute audio times (seconds since stream start).

    ``text`` keeps Whisper's leading space, so words join by concatenation.
    """

    start: float
    end: float
    text: str
    probability: float = 1.0

    def shifted(self, offset: float) -> "Word":
        """The same word moved by ``offset`` seconds."""
        return Word(self.start + offset, self.end + offset, self.text, self.probability)


@dataclass(frozen=True)
class Sentence:
    """A committed, finished sentence: what the translator freezes and the SRT lists."""

    index: int
    text: str
    start: float
    end: float


@dataclass
class StageTimings:
    """Seconds spent per stage for one update (summed over the stream in summaries)."""

    vad: float = 0.0
    asr: float = 0.0
    translate: float = 0.0

    def add(self, other: "StageTimings") -> None:
        """Accumulate another update's timings."""
        self.vad += other.vad
        self.asr += other.asr
        self.translate += other.translate


@dataclass
class CaptionUpdate:
    """One streaming update of the transcript.

    ``sentences`` are the sentences finished by this update (never repeated);
    ``current`` is the committed start of the unfinished sentence and
    ``tentative`` the unconfirmed rest of the hypothesis.
    """

    sentences: list[Sentence]
    current: str
    tentative: str
    audio_time: float
    buffer_seconds: float
    timings: StageTimings = field(default_factory=StageTimings)
    final: bool = False
    speech: bool = True

    @property
    def partial(self) -> str:
        """The unfinished sentence as recognised so far (committed + tentative)."""
        return (self.current + self.tentative).strip()


@dataclass
class StreamingOptions:
    """Knobs of :class:`~core.asr.streaming.StreamingTranscriber`."""

    language: str | None = "en"
    min_chunk_s: float = 1.0
    buffer_trim_s: float = 15.0
    max_buffer_s: float = 29.0
    prompt_chars: int = 200
    use_vad: bool = True
    vad_threshold: float = 0.5
    vad_min_silence_s: float = 0.5
    utterance_end_s: float = 2.0
    pre_roll_s: float = 0.4
