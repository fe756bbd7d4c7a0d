"""Streaming translation: re-translate the growing sentence, freeze finished ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..stream import FrozenTranslation, Sentence, TranscriptUpdate, TranslationUpdate
from .translator import TranslationResult


class TranslationEngine(Protocol):
    """What :class:`StreamingTranslator` needs from a translation engine (e.g. ``LlamaTranslator``)."""

    name: str

    def translate(self, source: str, draft: list[int] | None = None, final: bool = False,
                  draft_source: str | None = None) -> TranslationResult: ...

    def interrupt(self) -> None: ...

    def clear_interrupt(self) -> None: ...


@dataclass
class _PartialState:
    """What one stream's partial sentence was last translated as."""

    source: str = ""
    translation: str = ""
    draft: list[int] = field(default_factory=list)  # the tokens of ``translation``: the next draft


class StreamingTranslator:
    """Keeps one partial translation per unfinished sentence; freezes finished ones.

    The previous translation of the growing sentence is passed as the draft of
    the next one (SSBD verifies it; the plain AR engine ignores it), and the
    last partial translation of a sentence is the draft of its final one. With
    several streams (speakers) each partial sentence has its own draft.
    """

    def __init__(self, engine: TranslationEngine) -> None:
        self.engine = engine
        self._partials: dict[str, _PartialState] = {}
        self.calls = 0
        self.draft_tokens = 0
        self.accepted_tokens = 0
        self.output_tokens = 0

    def _run(self, source: str, state: _PartialState, final: bool = False) -> TranslationResult:
        """Translate ``source`` with ``state``'s last translation as the draft (and its source)."""
        result = self.engine.translate(source, state.draft, final=final, draft_source=state.source)
        self.calls += 1
        self.draft_tokens += result.draft_tokens
        self.accepted_tokens += result.accepted_tokens
        self.output_tokens += len(result.tokens)
        return result

    def _state(self, speaker: str) -> _PartialState:
        return self._partials.setdefault(speaker, _PartialState())

    def last_partial(self, speaker: str = "") -> tuple[str, str]:
        """``speaker``'s partial sentence last translated, and its translation."""
        state = self._state(speaker)
        return state.source, state.translation

    def update(self, asr: TranscriptUpdate) -> TranslationUpdate | None:
        """Translate what changed in ``asr``; None if nothing did."""
        return self.translate(asr.sentences, asr.partial, asr.audio_time, asr.speaker)

    def translate(self, sentences: list[Sentence], partial_source: str | None, audio_time: float,
                  speaker: str = "") -> TranslationUpdate | None:
        """Freeze ``sentences`` (all of them, in order) and re-translate ``speaker``'s ``partial_source``
        if it changed (None: leave the partial for a later call; the update says so)."""
        frozen: list[FrozenTranslation] = []
        seconds = 0.0  # model time, without waits for the compute gate
        for sentence in sentences:
            state = self._state(sentence.speaker)
            result = self._run(sentence.text, state, final=True)
            state.draft = []  # the next sentence starts without a draft
            seconds += result.seconds
            frozen.append(FrozenTranslation(sentence, result.text))
        state = self._state(speaker)
        if partial_source is None:
            if not frozen:
                return None
            return TranslationUpdate(frozen, state.source, state.translation, audio_time, seconds, speaker,
                                     partial=False)
        partial_changed = partial_source != state.source
        if partial_changed:
            if partial_source:
                result = self._run(partial_source, state)
                state.draft = result.tokens
                state.translation = result.text
                seconds += result.seconds
            else:
                state.translation = ""
                state.draft = []
            state.source = partial_source
        if not frozen and not partial_changed:
            return None
        return TranslationUpdate(frozen, partial_source, state.translation, audio_time, seconds, speaker)
