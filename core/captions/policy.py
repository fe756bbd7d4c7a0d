"""What the captions show: stable finished lines, a partial line with mask-k.

:class:`CaptionPolicy` merges ASR updates and translation updates into a
:class:`CaptionView`. Display-only mask-k hides the last k tokens of a
non-final line on screen (the model still drafts from the whole text); for the
source line only unconfirmed (tentative) words are ever hidden, since
committed words never change, and none while the speaker pauses after them
(``show_at_pause``): they were decoded with silence after them, and waiting for
three more words would keep a sentence's end off the screen for the whole pause.
Every displayed state feeds the NE meters of the model output and of the
displayed text, for source and translation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stream import CaptionLine, CaptionView, PartialLine, TranscriptUpdate, TranslationUpdate
from ..text import join_parts, joiner, tokenize
from .metrics import ErasureMeter


def mask_tokens(text: str, k: int, lang: str | None = None) -> tuple[str, int]:
    """``text`` without its last ``k`` tokens, and how many were hidden."""
    if k <= 0 or not text:
        return text, 0
    tokens = tokenize(text, lang)
    if not tokens:
        return text, 0
    keep = max(0, len(tokens) - k)
    if keep == 0:
        return "", len(tokens)
    # Cut the original string after the keep-th token so spacing and punctuation are preserved.
    pos = 0
    for tok in tokens[:keep]:
        pos = text.index(tok, pos) + len(tok)
    return text[:pos].rstrip(), len(tokens) - keep


@dataclass
class _Partial:
    """One stream's partial sentence as the models gave it."""

    committed: str = ""
    tentative: str = ""
    translation: str = ""
    paused: bool = False  # the speaker paused after the tentative words


@dataclass
class CaptionPolicy:
    """Merges source and translation into what is shown, and measures its flicker.

    With several streams (``speakers``, e.g. ``("them", "me")``) each has its own
    partial line; finished lines of all streams are listed in the order they were
    committed.
    """

    mask_k: int = 3
    source_lang: str = "en"
    target_lang: str | None = None
    translation_mask_k: int | None = None  # None: same as mask_k; 0 when mask-k is applied in the draft
    speakers: tuple[str, ...] = ("",)
    show_at_pause: bool = True  # no mask on the source while its speaker pauses
    lines: list[CaptionLine] = field(default_factory=list)
    audio_time: float = 0.0

    def __post_init__(self) -> None:
        self.source_output = ErasureMeter(self.source_lang)
        self.source_display = ErasureMeter(self.source_lang)
        self.translation_output = ErasureMeter(self.target_lang)
        self.translation_display = ErasureMeter(self.target_lang)
        self._by_index: dict[int, CaptionLine] = {}
        self._translated_upto = 0  # lines[:n] all have final translations
        self._partials = {speaker: _Partial() for speaker in self.speakers}

    # -- inputs ------------------------------------------------------------------------
    def on_transcript(self, update: TranscriptUpdate) -> CaptionView:
        """Take a transcript update; returns the new view."""
        partial = self._partials.setdefault(update.speaker, _Partial())
        if update.sentences and partial.translation:
            # the partial translation on screen belonged to the sentence now finished: it stays with
            # that line (as shown, masked) until the final translation replaces it
            shown, _ = mask_tokens(partial.translation, self._translation_k(), self.target_lang)
            pending = CaptionLine(update.sentences[0], provisional=shown or None)
            partial.translation = ""
        else:
            pending = None
        for sentence in update.sentences:
            line = pending if pending is not None and pending.sentence is sentence else CaptionLine(sentence)
            self.lines.append(line)
            self._by_index[sentence.index] = line
        partial.committed = update.committed
        partial.tentative = update.tentative
        partial.paused = update.paused
        self.audio_time = max(self.audio_time, update.audio_time)
        final = update.final and len(self._partials) == 1  # with several streams the others stay masked
        self._record_source(final=final)
        return self.view(final=final)

    def on_translation(self, update: TranslationUpdate) -> CaptionView:
        """Take a translation update; returns the new view."""
        for frozen in update.frozen:
            line = self._by_index.get(frozen.sentence.index)
            if line is not None:
                line.translation = frozen.text
        while self._translated_upto < len(self.lines) and self.lines[self._translated_upto].translation is not None:
            self._translated_upto += 1
        self._partials.setdefault(update.speaker, _Partial()).translation = update.partial_translation
        self._record_translation()
        return self.view()

    # -- view ----------------------------------------------------------------------------
    def _translation_k(self) -> int:
        return self.mask_k if self.translation_mask_k is None else self.translation_mask_k

    def view(self, final: bool = False) -> CaptionView:
        """What to show now (``final``: nothing hidden)."""
        k = 0 if final else self.mask_k
        k_tr = 0 if final else self._translation_k()
        shown = []
        for speaker, p in self._partials.items():
            k_src = 0 if (p.paused and self.show_at_pause) else k
            tentative, hidden = mask_tokens(p.tentative, k_src, self.source_lang)
            translation, _ = mask_tokens(p.translation, k_tr, self.target_lang)
            shown.append(PartialLine(p.committed, tentative, translation, hidden, speaker))
        return CaptionView(list(self.lines), shown, self.audio_time)

    # -- metrics -------------------------------------------------------------------------
    def _finished_source(self) -> str:
        return join_parts(*(line.sentence.text for line in self.lines))

    def _record_source(self, final: bool = False) -> None:
        done = self._finished_source()
        self.source_output.add(join_parts(done, *(join_parts(p.committed, p.tentative)
                                                  for p in self._partials.values())))
        view = self.view(final=final)
        self.source_display.add(join_parts(done, *(p.shown_source for p in view.partials)))

    def _translation_text(self, partials: list[str]) -> str:
        sep = joiner(self.target_lang)
        finished = sep.join(line.translation or "" for line in self.lines[: self._translated_upto])
        return sep.join(t for t in (finished, *partials) if t).strip()

    def _record_translation(self) -> None:
        self.translation_output.add(self._translation_text([p.translation for p in self._partials.values()]))
        self.translation_display.add(self._translation_text([p.shown_translation for p in self.view().partials]))

    def finish(self) -> None:
        """Record the final state (nothing hidden)."""
        for partial in self._partials.values():
            partial.committed = partial.tentative = partial.translation = ""
        self._record_source(final=True)
        if self.target_lang:
            self._record_translation()

    def metrics(self) -> dict[str, float]:
        """NE of model output and displayed text, for source and translation."""
        out = {
            "ne_source_output": round(self.source_output.value, 4),
            "ne_source_display": round(self.source_display.value, 4),
        }
        if self.target_lang:
            out["ne_translation_output"] = round(self.translation_output.value, 4)
            out["ne_translation_display"] = round(self.translation_display.value, 4)
        return out
