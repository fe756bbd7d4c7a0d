"""What the captions show: stable finished lines, a partial line with mask-k.

:class:`CaptionPolicy` merges ASR updates and translation updates into a
:class:`CaptionView`. Display-only mask-k hides the last k tokens of a
non-final line on screen (the model still drafts from the whole text); for the
source line only unconfirmed (tentative) words are ever hidden, since
committed words never change. Every displayed state feeds the NE meters of the
model output and of the displayed text, for source and translation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stream import CaptionLine, CaptionView, TranscriptUpdate, TranslationUpdate
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
class CaptionPolicy:
    """Merges source and translation into what is shown, and measures its flicker."""

    mask_k: int = 3
    source_lang: str = "en"
    target_lang: str | None = None
    translation_mask_k: int | None = None  # None: same as mask_k; 0 when mask-k is applied in the draft
    lines: list[CaptionLine] = field(default_factory=list)
    committed: str = ""
    tentative: str = ""
    partial_translation: str = ""
    audio_time: float = 0.0

    def __post_init__(self) -> None:
        self.source_output = ErasureMeter(self.source_lang)
        self.source_display = ErasureMeter(self.source_lang)
        self.translation_output = ErasureMeter(self.target_lang)
        self.translation_display = ErasureMeter(self.target_lang)
        self._by_index: dict[int, CaptionLine] = {}
        self._translated_upto = 0  # lines[:n] all have final translations

    # -- inputs ------------------------------------------------------------------------
    def on_transcript(self, update: TranscriptUpdate) -> CaptionView:
        """Take a transcript update; returns the new view."""
        if update.sentences and self.partial_translation:
            # the partial translation on screen belonged to the sentence now finished: it stays with
            # that line (as shown, masked) until the final translation replaces it
            shown, _ = mask_tokens(self.partial_translation, self._translation_k(), self.target_lang)
            pending = CaptionLine(update.sentences[0], provisional=shown or None)
            self.partial_translation = ""
        else:
            pending = None
        for sentence in update.sentences:
            line = pending if pending is not None and pending.sentence is sentence else CaptionLine(sentence)
            self.lines.append(line)
            self._by_index[sentence.index] = line
        self.committed = update.committed
        self.tentative = update.tentative
        self.audio_time = update.audio_time
        self._record_source(final=update.final)
        return self.view(final=update.final)

    def on_translation(self, update: TranslationUpdate) -> CaptionView:
        """Take a translation update; returns the new view."""
        for frozen in update.frozen:
            line = self._by_index.get(frozen.sentence.index)
            if line is not None:
                line.translation = frozen.text
        while self._translated_upto < len(self.lines) and self.lines[self._translated_upto].translation is not None:
            self._translated_upto += 1
        self.partial_translation = update.partial_translation
        self._record_translation()
        return self.view()

    # -- view ----------------------------------------------------------------------------
    def _translation_k(self) -> int:
        return self.mask_k if self.translation_mask_k is None else self.translation_mask_k

    def view(self, final: bool = False) -> CaptionView:
        """What to show now."""
        k = 0 if final else self.mask_k
        k_tr = 0 if final else self._translation_k()
        tentative, hidden = mask_tokens(self.tentative, k, self.source_lang)
        translation, _ = mask_tokens(self.partial_translation, k_tr, self.target_lang)
        return CaptionView(list(self.lines), self.committed, tentative, translation, hidden, self.audio_time)

    # -- metrics -------------------------------------------------------------------------
    def _finished_source(self) -> str:
        return join_parts(*(line.sentence.text for line in self.lines))

    def _record_source(self, final: bool = False) -> None:
        done = self._finished_source()
        self.source_output.add(join_parts(done, self.committed, self.tentative))
        view = self.view(final=final)
        self.source_display.add(join_parts(done, view.shown_partial))

    def _translation_text(self, partial: str) -> str:
        sep = joiner(self.target_lang)
        finished = sep.join(line.translation or "" for line in self.lines[: self._translated_upto])
        return (finished + sep + partial).strip() if partial else finished.strip()

    def _record_translation(self) -> None:
        self.translation_output.add(self._translation_text(self.partial_translation))
        self.translation_display.add(self._translation_text(self.view().shown_translation))

    def finish(self) -> None:
        """Record the final state (nothing hidden)."""
        self.partial_translation = ""
        self.committed = self.tentative = ""
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
