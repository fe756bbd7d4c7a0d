"""Streaming translation: re-translate the growing sentence, freeze finished ones."""

from __future__ import annotations

from typing import Protocol

from ..stream import FrozenTranslation, Sentence, TranscriptUpdate, TranslationUpdate
from .translator import TranslationResult


class TranslationEngine(Protocol):
    """What :class:`StreamingTranslator` needs from a translation engine (e.g. ``LlamaTranslator``)."""

    name: str

    def translate(self, source: str, draft: list[int] | None = None) -> TranslationResult: ...

    def interrupt(self) -> None: ...

    def clear_interrupt(self) -> None: ...


class StreamingTranslator:
    """Keeps one partial translation per unfinished sentence; freezes finished ones.

    The previous translation of the growing sentence is passed as the draft of
    the next one (SSBD verifies it; the plain AR engine ignores it), and the
    last partial translation of a sentence is the draft of its final one.
    """

    def __init__(self, engine: TranslationEngine) -> None:
        self.engine = engine
        self._last_partial_source = ""
        self._last_partial = ""
        self._draft: list[int] = []
        self.calls = 0
        self.draft_tokens = 0
        self.accepted_tokens = 0
        self.output_tokens = 0

    def _run(self, source: str) -> TranslationResult:
        result = self.engine.translate(source, self._draft)
        self.calls += 1
        self.draft_tokens += result.draft_tokens
        self.accepted_tokens += result.accepted_tokens
        self.output_tokens += len(result.tokens)
        return result

    @property
    def last_partial(self) -> tuple[str, str]:
        """The unfinished source sentence last translated, and its translation."""
        return self._last_partial_source, self._last_partial

    def update(self, asr: TranscriptUpdate) -> TranslationUpdate | None:
        """Translate what changed in ``asr``; None if nothing did."""
        return self.translate(asr.sentences, asr.partial, asr.audio_time)

    def translate(self, sentences: list[Sentence], partial_source: str, audio_time: float) -> TranslationUpdate | None:
        """Freeze ``sentences`` (all of them, in order) and re-translate ``partial_source`` if it changed."""
        frozen: list[FrozenTranslation] = []
        results: list[TranslationResult] = []
        for sentence in sentences:
            result = self._run(sentence.text)
            self._draft = []  # the next sentence starts without a draft
            results.append(result)
            frozen.append(FrozenTranslation(sentence, result.text))
        partial_changed = partial_source != self._last_partial_source
        if partial_changed:
            self._last_partial_source = partial_source
            if partial_source:
                result = self._run(partial_source)
                self._draft = result.tokens
                results.append(result)
                self._last_partial = result.text
            else:
                self._last_partial = ""
                self._draft = []
        if not frozen and not partial_changed:
            return None
        compute = sum(r.seconds for r in results)  # model time, without waits for the compute gate
        return TranslationUpdate(frozen, partial_source, self._last_partial, audio_time, compute)
