"""What the captions show: stable finished lines, a partial line with mask-k.

:class:`CaptionPolicy` merges ASR updates and translation updates into a
:class:`CaptionView`. Display-only mask-k hides the last k tokens of a
non-final line on screen (the model still drafts from the whole text); an
unfinished line's translation is also shown only up to its first run of words
left untranslated; names, numbers, dates, URLs and code kept as they are do not count
(:func:`shown_translation`). On the
source line only unconfirmed (tentative) words are ever hidden, since committed
words never change, and by default by time rather than by count
(``source_mask = "heard"``): a tentative word is shown once ``source_hold_s`` of
speech has been heard after it. The words that change between decodes are the
ones at the edge of the audio, cut off mid-word or guessed; a word with speech
after it seldom changes, and three words (mask-3) are about a second of speech, so a
short hold brings a sentence's end to the screen sooner than mask-3 for a little more
flicker (``sotto bench masks`` compares the rules; figures in docs/BENCHMARKS.md).
``source_mask = "words"`` is mask-k on the source too.
None is hidden while the speaker pauses after them (``show_at_pause``): they were
decoded with silence after them, and waiting would keep a sentence's end off the
screen for the whole pause.
Every displayed state feeds the NE meters of the model output and of the
displayed text, for source and translation; the displayed source also feeds a
per-line meter (:func:`shown_lines`): a display shows each line on a row of its own,
so a word replaced in one line moves none of the lines under it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..stream import CaptionLine, CaptionView, PartialLine, TranscriptUpdate, TranslationUpdate, Word
from ..text import join_parts, joiner, tokenize
from .metrics import ErasureMeter, LineErasureMeter


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


# A partial translation is shown only up to its first run of this many ordinary words that its source says
# in a row: a stretch the model left untranslated (a copy of the speaker's words, which the source line
# above already shows), which the finished sentence's translation nearly always rewrites. Three words:
# two in a row are common in a correct translation (a shared word and a name, "in Berlin"), three
# ordinary ones seldom are. Its effect on NE shown is in docs/BENCHMARKS.md (`sotto bench translate`).
COPY_RUN = 3
_WORD = re.compile(r"\w+")
_CHUNK = re.compile(r"\S+")
_EDGE = "\"'“”„‘’‚«»‹›()[]{}<>.,;:!?¡¿…"  # punctuation around a word, not part of it
_SENTENCE_END = re.compile(r"[.!?…][\"'“”’»)\]]*$")
# a chunk that is a number, a date, a time, an amount, a URL, an e-mail address, a path or code
_KEPT = re.compile(r"\d|://|@|/|\\|::|_|\w\.\w|[a-z][A-Z]")
# units written apart from their number ("5 km"): part of the number
_UNITS = frozenset("""mm cm m km ft yd mi mg g kg t lb lbs oz ml l s ms min h hrs mph kmh kph hz khz mhz ghz
                    b kb mb gb tb w kw mw kwh v am pm""".split())


def _tokens(text: str) -> list[tuple[str, int, bool, bool]]:
    """The words of ``text`` for :func:`untranslated_start`: (word, start, kept, capitalised mid-sentence).

    Split at whitespace, not at every non-word character: ``\\w+`` would make "1,500,000",
    "10:30:00" and "os.path.join" three words each, a run in any translation that keeps them. A
    chunk that is a number (digits in any format, with a currency or unit), a date, a time, a URL, an
    e-mail address, a path or code (dotted, snake_case, camelCase, ``::``) is one *kept* word, as is a
    unit after a number; other chunks are split into ``\\w+`` words (hyphens, apostrophes)."""
    out: list[tuple[str, int, bool, bool]] = []
    starts_sentence = True
    after_number = False
    for chunk in _CHUNK.finditer(text):
        raw = chunk.group()
        core = raw.strip(_EDGE)
        offset = chunk.start() + raw.index(core) if core else chunk.start()
        if _KEPT.search(core):
            out.append((core.lower(), offset, True, False))
            after_number = any(c.isdigit() for c in core)
        else:
            for i, m in enumerate(_WORD.finditer(core)):
                word = m.group()
                unit = after_number and i == 0 and word.lower() in _UNITS
                capital = word[:1].isupper() and len(word) > 1 and not (starts_sentence and i == 0)
                out.append((word.lower(), offset + m.start(), unit, capital))
            after_number = False
        starts_sentence = bool(_SENTENCE_END.search(raw))
    return out


def untranslated_start(text: str, source: str, run: int = COPY_RUN) -> int:
    """Where in ``text`` its first run of ``run`` ordinary words (compared in lower case) that
    ``source`` also says in a row begins; ``len(text)`` where there is none (or ``run`` is 0).

    A translation keeps what is not to be translated: names ("Die New York Times berichtete"),
    numbers, amounts, dates and times ("1.500.000 Dollar", "10:30:00"), URLs, e-mail addresses,
    paths and code ("os.path.join"). None of these is an ordinary word, so none makes or joins a
    run: only a stretch of the source language's own words ("and then we went") is a stretch left
    untranslated. Numbers, dates, URLs and code are told by their form (:func:`_tokens`); a name is
    a word of two letters or more that the source capitalises where no sentence starts, or, where the
    source has it only at a sentence's start (and nowhere in lower case), that ``text`` capitalises
    there. A capitalised word of the translation alone does not make a name: German capitalises
    every noun, and a copied stretch may be in capitals."""
    if run <= 0 or not source:
        return len(text)
    said = _tokens(source)
    names = {w for w, _, _, capital in said if capital}
    lower = {w for w, start, _, _ in said if source[start].islower()}

    def ordinary(words: list[tuple[str, int, bool, bool]]) -> list[bool]:
        return [not kept and w not in names and not (capital and w not in lower) for w, _, kept, capital in words]

    runs = set()
    plain = ordinary(said)
    for i in range(len(said) - run + 1):
        if all(plain[i:i + run]):
            runs.add(tuple(w for w, *_ in said[i:i + run]))
    found = _tokens(text)
    plain = ordinary(found)
    for i in range(len(found) - run + 1):
        if all(plain[i:i + run]) and tuple(w for w, *_ in found[i:i + run]) in runs:
            return found[i][1]
    return len(text)


def shown_translation(text: str, source: str, k: int, lang: str | None = None, run: int = COPY_RUN) -> str:
    """What a display shows of an unfinished line's translation ``text`` of ``source``: without its
    last ``k`` tokens (display-only mask-k) and without anything from its first untranslated run
    of ``run`` ordinary words on (:func:`untranslated_start`), whichever hides more."""
    shown, _ = mask_tokens(text, k, lang)
    copied = text[:untranslated_start(text, source, run)].rstrip()
    return copied if len(copied) < len(shown) else shown


def shown_lines(view: CaptionView) -> dict[tuple[str, int], str]:
    """The source lines of ``view`` as a display lays them out, keyed by (speaker, the line's
    place among that speaker's lines): finished lines, then each stream's held lines and its
    partial line. A held line and the verified line that replaces it share a key, as does a
    partial line and the line it becomes."""
    out: dict[tuple[str, int], str] = {}
    count: dict[str, int] = {}
    for line in view.lines:
        n = count.get(line.sentence.speaker, 0)
        out[(line.sentence.speaker, n)] = line.sentence.text
        count[line.sentence.speaker] = n + 1
    for p in view.partials:
        n = count.get(p.speaker, 0)
        for i, text in enumerate((*p.held, p.shown_line)):
            out[(p.speaker, n + i)] = text
    return out


@dataclass
class _Partial:
    """One stream's partial sentence as the models gave it."""

    committed: str = ""
    tentative: str = ""
    translation: str = ""
    translated: str = ""  # the source ``translation`` translates
    paused: bool = False  # the speaker paused after the tentative words
    tentative_words: tuple[Word, ...] = ()  # the tentative words with their times
    audio_time: float = 0.0  # how far this stream's audio was heard when they were decoded
    held: tuple[str, ...] = ()  # finished lines waiting for verification
    drafts: bool = False  # held lines and the committed start are the drafter's, replaced when verified


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
    copy_run: int = COPY_RUN  # an unfinished translation shows nothing from its first untranslated run on (0: all)
    speakers: tuple[str, ...] = ("",)
    show_at_pause: bool = True  # no mask on the source while its speaker pauses
    source_mask: str = "heard"  # "heard": a tentative word shows after source_hold_s of speech; "words": mask-k
    source_hold_s: float = 0.3
    lines: list[CaptionLine] = field(default_factory=list)
    audio_time: float = 0.0

    def __post_init__(self) -> None:
        self.source_output = ErasureMeter(self.source_lang)
        self.source_display = ErasureMeter(self.source_lang)
        self.source_display_lines = LineErasureMeter(self.source_lang)
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
            shown = shown_translation(partial.translation, partial.translated, self._translation_k(),
                                      self.target_lang, self.copy_run)
            pending = CaptionLine(update.sentences[0], provisional=shown or None)
            partial.translation = partial.translated = ""
        else:
            pending = None
        for sentence in update.sentences:
            line = pending if pending is not None and pending.sentence is sentence else CaptionLine(sentence)
            self.lines.append(line)
            self._by_index[sentence.index] = line
        partial.committed = update.committed
        partial.tentative = update.tentative
        partial.paused = update.paused
        partial.tentative_words = update.tentative_words
        partial.held = update.held
        partial.drafts = update.drafts
        partial.audio_time = update.audio_time
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
        if update.partial:
            partial = self._partials.setdefault(update.speaker, _Partial())
            partial.translation, partial.translated = update.partial_translation, update.partial_source
        self._record_translation()
        return self.view()

    def on_voice(self, index: int, voice_id: int, voice: str) -> CaptionView:
        """Label the committed line ``index`` with its voice (its number and label); returns the new view."""
        line = self._by_index.get(index)
        if line is not None:
            line.voice_id, line.voice = voice_id, voice
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
            if final or (p.paused and self.show_at_pause):
                tentative, hidden = p.tentative, 0
            elif self.source_mask == "heard" and p.tentative_words:
                tentative, hidden = self._heard(p)
            else:
                tentative, hidden = mask_tokens(p.tentative, k, self.source_lang)
            translation = (p.translation if final else
                           shown_translation(p.translation, p.translated, k_tr, self.target_lang, self.copy_run))
            shown.append(PartialLine(p.committed, tentative, translation, hidden, speaker, p.held, p.drafts))
        return CaptionView(list(self.lines), shown, self.audio_time)

    def _heard(self, p: _Partial) -> tuple[str, int]:
        """The tentative words with at least ``source_hold_s`` of speech heard after them (a prefix:
        a word is never shown before the words it follows), and how many tokens are hidden."""
        n = 0
        for word in p.tentative_words:
            if p.audio_time - word.end < self.source_hold_s - 1e-6:
                break
            n += 1
        if n == len(p.tentative_words):
            return p.tentative, 0
        shown = "".join(w.text for w in p.tentative_words[:n]).rstrip()
        if not p.tentative[:1].isspace():
            shown = shown.lstrip()
        total = len(tokenize(p.tentative, self.source_lang))
        return shown, total - len(tokenize(shown, self.source_lang))

    # -- metrics -------------------------------------------------------------------------
    def _finished_source(self) -> str:
        return join_parts(*(line.sentence.text for line in self.lines))

    def _record_source(self, final: bool = False) -> None:
        done = self._finished_source()
        self.source_output.add(join_parts(done, *(join_parts(*p.held, p.committed, p.tentative)
                                                  for p in self._partials.values())))
        view = self.view(final=final)
        self.source_display.add(join_parts(done, *(p.shown_source for p in view.partials)))
        self.source_display_lines.add(shown_lines(view))

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
            partial.held = ()
        self._record_source(final=True)
        if self.target_lang:
            self._record_translation()

    def metrics(self) -> dict[str, float]:
        """NE of model output and displayed text, for source and translation."""
        out = {
            "ne_source_output": round(self.source_output.value, 4),
            "ne_source_display": round(self.source_display.value, 4),
            "ne_source_display_lines": round(self.source_display_lines.value, 4),
        }
        if self.target_lang:
            out["ne_translation_output"] = round(self.translation_output.value, 4)
            out["ne_translation_display"] = round(self.translation_display.value, 4)
        return out
