"""The translation engine: a local GGUF model translating one sentence (or sentence prefix) at a time.

:class:`LlamaTranslator` decides what to decode: the prompt (:mod:`core.translate.prompting`), finished
text of several sentences sentence by sentence, a long sentence clause by clause with finished pieces
remembered (:mod:`core.translate.clauses`), a source too
long for the context in halves, an example the model gave back translated again without it. The
decoding itself, plain greedy (AR) or self-speculative biased decoding (SSBD) verifying the previous
translation as its draft, is :mod:`core.translate.decoding`'s. Each call evaluates the prompt (with
``reuse_prefix``, only past the part the KV cache already holds) and generates until a stop token, a
newline or a loop (:mod:`core.translate.loops`). Plain greedy decoding is the reference every faster
engine is measured against; at β = 0 SSBD gives exactly its tokens.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import logger
from ..compute import COMPUTE_GATE, SPEECH, TRANSLATION
from ..errors import Interrupted, ModelError, TranslationError
from ..text import ends_sentence, joiner
from .casing import as_written, first_upper
from .clauses import PieceMemo, clause_pieces, halves, sentence_parts
from .clock import clock_24h
from .copies import copy_bans, copy_start, word_starts
from .decoding import Decoder
from .hesitations import without_hesitations
from .llama_runner import LlamaRunner
from .loops import has_repeated_phrase, word_key
from .markers import markers_alone, split_markers, split_tail, with_markers, with_tail
from .numbers import invented_numbers, invented_start
from .prompting import Prompter
from .prompts import borrowed_example, needs_no_translation
from .quality import (
    adds_quotation,
    is_copy,
    is_fragment,
    keeps_enough,
    keeps_numbers,
    looks_english,
    phrase_loop,
    source_share,
)


@dataclass
class TranslatorOptions:
    """How the translator prompts and runs its model."""

    source_lang: str = "en"
    target_lang: str = "de"
    prompt_style: str = "auto"  # auto | few-shot | chat
    chat_prompt: str = "generic"  # a chat's wording: core.translate.prompts.CHAT_PROMPTS (the catalogue's)
    n_ctx: int = 2048
    n_threads: int = 0
    n_gpu_layers: int = 0
    max_new_tokens: int = 160
    beta: float | None = None  # None: plain greedy (AR); a number: SSBD with this bias
    reuse_prefix: bool = False  # keep the KV cache of the unchanged prompt prefix across calls
    lookup: bool = False  # guesses from the source and the draft (core.translate.lookup): same output, sooner
    draft_mask_k: int = 0  # SSBD "+mask-k": drop the last k draft tokens before verifying
    # Where the bias applies (β = 0 is exact greedy whatever these say):
    bias_final: bool = True  # False: a finished sentence's translation is exact greedy (the draft only speeds it)
    bias_floor: float = 0.0  # a draft token is favoured only where the model gives it at least this probability
    bias_holdback: int | None = None  # a number k: bias only the draft's share that translates the source
    #   words both updates share, less the last k of them (the rest is verified at β = 0)
    # few-shot prompts (small base models): a long sentence is translated clause by clause (core.translate.clauses)
    clause_pieces: bool = True
    # loops (core.translate.loops): a phrase of two or more words said twice is one too; after a loop is cut,
    # generation goes on from the cut with the token that began it banned there, this many times at most
    phrase_loops: bool = True
    loop_restarts: int = 2
    # a finished translation left in the source language (quality.is_copy) is decoded again, greedily, with
    # the word that began the copy banned where it began (core.translate.copies), this many times at most;
    # the first decode (greedy, or SSBD at any β) is untouched, so β = 0 still gives greedy's first result
    copy_retries: int = 3
    # a finished translation that is a fragment (quality.is_fragment) is decoded again once, greedily, with its
    # least sure token (the smallest gap between the two likeliest) banned where it was chosen: the model's
    # second choice there, where the short reading went wrong ("Sometime this evening after 5:00 p.m." →
    # "So, so." → "So, nach 5:00 Uhr am Abend."); kept only where it is not broken itself
    fragment_retry: bool = True
    # finished text beginning in lower case ("what type of crust would you like?": a transcript's line that
    # goes on from the one before, or typing) still left in the source language after the copy retry is
    # translated once more with its first letter capitalised (casing.first_upper): in lower case the small
    # model reads it as a fragment and goes on in English ("was kind of crust would you like?"). Only
    # what would be left broken is tried, so a line translated before is untouched
    capital_retry: bool = True
    # a finished translation of English that writes a number its source never says (core.translate.numbers: a year for
    # "A few years ago", "3000" for "300") is decoded again once, greedily, with the token where the made-up
    # number leaves the source's numbers banned there; kept only where it is not broken, keeps what the
    # first kept and makes up no number
    number_retry: bool = True
    # finished text still left in the source language after the copy retry, written in English all the
    # same (quality.looks_english) or cut to under half (quality.is_fragment), is translated again in two
    # halves cut where a reader would pause
    # (clauses.halves; halves of halves at most this deep): the small model translates shorter text
    split_broken: int = 2
    # discourse markers a line opens with ("Okay, …", "Yes, …") said from a word list and the rest translated
    # as a sentence of its own (core.translate.markers): after "Okay," the small model goes on in English
    markers: bool = True
    # set phrases of conversation ("See you later.", "Got it.", "…, thank you.") said from the phrasebook
    # (core.translate.phrasebook) at a line's start or end, with the markers: alone the model gives them back
    # in English or says something else
    phrases: bool = True
    # finished text of several sentences (a file's line) translated sentence by sentence, each as the app
    # translates a finished sentence: markers and set phrases read off each, no short sentence joined to another
    sentence_by_sentence: bool = True
    # English typed in lower case read as a transcript writes it (core.translate.casing)
    as_written: bool = True
    # English clock times with a.m./p.m. read as 24-hour times ("7:10 p.m." → "19:10", core.translate.clock):
    # the small model kept the hour and dropped the "p.m." ("at 3pm" → "um 3:00 Uhr")
    clock_24h: bool = True


# The fragment retry's decode may take at most this share of its words from the source (names and numbers
# aside), unless the fragment took more: German shares a few short words with English ("in", "was", "so").
FRAGMENT_RETRY_SOURCE_SHARE = 0.25
# a line the lower-case retry may write as a sentence: it opens with a word of two letters or more in lower case
_LOWER_WORD = re.compile(r"[a-z][a-z'’-]*[a-z]\b")


@dataclass
class TranslationResult:
    """One translation: text, its tokens, and what it cost."""

    source: str
    text: str
    tokens: list[int]
    prompt_tokens: int
    evaluated_tokens: int
    seconds: float
    draft_tokens: int = 0
    accepted_tokens: int = 0
    reused_tokens: int = 0
    gaps: list[float] = field(default_factory=list)  # top-1 minus top-2 logit of each output token
    unsteered: str | None = None  # the first decode's text, where the copy retry replaced it (for benchmarks)


def _open_end(source: str, text: str) -> str:
    """A half's translation as the sentence goes on after it: the full stop the model ends every
    translation with left out where its source half ends with none ("… ambassador. und will …")."""
    if text.endswith(".") and not text.endswith("..") and not ends_sentence(source):
        return text[:-1]
    return text


def _after_seam(first: str, second: str, most: int = 4) -> str:
    """The second half's translation without the words it repeats from the end of the first: each
    half was translated alone, and a half cut before "from the …" can end with "von der", which the
    next one begins with again ("… 30 Meter von der" + "von der Chelsea-Goal …"). Two words or more
    (one word twice is often meant: "die, die"), compared as the loop rules compare them."""
    if ends_sentence(first):  # said again after a sentence's end: meant ("… nach Hause. Nach Hause, sagte sie.")
        return second
    a, b = first.split(), second.split()
    for n in range(min(most, len(a), len(b) - 1), 1, -1):
        if [word_key(w) for w in a[-n:]] == [word_key(w) for w in b[:n]] and all(word_key(w) for w in b[:n]):
            return " ".join(b[n:])
    return second


def bias_rules(scope: str) -> dict:
    """The :class:`TranslatorOptions` fields of a named bias scope (see ``sotto bench bias``):
    ``paper`` (every draft token of every update), ``final-exact``, ``holdback-K``, ``floor-P``,
    or several joined with ``+``."""
    rules: dict = {"bias_final": True, "bias_floor": 0.0, "bias_holdback": None}
    for part in scope.split("+"):
        if part == "paper":
            continue
        if part == "final-exact":
            rules["bias_final"] = False
        elif m := re.fullmatch(r"holdback-(\d+)", part):
            rules["bias_holdback"] = int(m.group(1))
        elif m := re.fullmatch(r"floor-(0?\.\d+|0|1)", part):
            rules["bias_floor"] = float(m.group(1))
        else:
            raise ValueError(f"unknown bias scope {scope!r}")
    return rules


def _words(text: str) -> list[str]:
    return [w for w in (re.sub(r"[^\w']", "", t).lower() for t in text.split()) if w]


def bias_span(source: str, draft_source: str | None, draft_len: int, holdback: int | None) -> int:
    """How many leading draft tokens the bias applies to.

    Without ``holdback`` all of them. With it, the draft's share that translates the source words
    ``draft_source`` and ``source`` share, less the last ``holdback`` of them (a sentence's last
    words are where a prefix's translation is most often wrong: reordered, guessed or invented);
    the share is taken in proportion to length. An unknown ``draft_source`` biases nothing.
    """
    if holdback is None:
        return draft_len
    if not draft_source or draft_len == 0:
        return 0
    before, now = _words(draft_source), _words(source)
    shared = 0
    for a, b in zip(before, now, strict=False):
        if a != b:
            break
        shared += 1
    stable = max(0, shared - holdback)
    return round(draft_len * stable / max(len(before), 1))


class LlamaTranslator:
    """Translation with llama.cpp (greedy or SSBD); one owner thread."""

    def __init__(self, model_path: str | Path, options: TranslatorOptions | None = None) -> None:
        self.options = options or TranslatorOptions()
        self.runner = LlamaRunner(model_path, self.options.n_ctx, self.options.n_threads, self.options.n_gpu_layers)
        try:
            self.prompter = Prompter(self.runner, self.options.prompt_style, self.options.source_lang,
                                     self.options.target_lang, self.options.chat_prompt)
        except ModelError:
            self.runner.close()
            raise
        self.decoder = Decoder(self.runner)
        self.name = self._name()
        self._pieces = PieceMemo()  # translations of finished clause pieces
        logger.info("translator %s, prompt style %s", Path(model_path).name, self.style)

    @property
    def style(self) -> str:
        """The prompt style in use: ``few-shot`` or ``chat``."""
        return self.prompter.style

    def _name(self) -> str:
        kind = "ar" if self.options.beta is None else f"ssbd(beta={self.options.beta:g})"
        reuse = "+kv" if self.options.reuse_prefix else ""
        return f"llama-{kind}{reuse}:{self.runner.path.name}"

    def configure(self, beta: float | None, draft_mask_k: int | None = None, bias_scope: str | None = None) -> None:
        """Change the decoding knobs live (takes effect at the next call; thread-safe).

        ``beta`` None switches to plain greedy decoding; ``bias_scope`` names where β applies
        (:func:`bias_rules`). The options object is replaced whole, so a call running on another
        thread sees old or new, never a mix.
        """
        changes: dict = {"beta": beta}
        if draft_mask_k is not None:
            changes["draft_mask_k"] = draft_mask_k
        if bias_scope is not None:
            changes.update(bias_rules(bias_scope))
        self.options = dataclasses.replace(self.options, **changes)
        self.name = self._name()
        logger.info("translator reconfigured: %s, draft mask-k %d", self.name, self.options.draft_mask_k)

    def forget(self) -> None:
        """Drop the remembered translations of finished clause pieces (after changing the prompt, or
        so a benchmark charges every configuration for all its work)."""
        self._pieces.clear()

    def interrupt(self) -> None:
        """Stop a translation running on another thread at its next model call (it raises Interrupted)."""
        self.runner.interrupt.set()

    def clear_interrupt(self) -> None:
        """Allow translations again after :meth:`interrupt`."""
        self.runner.interrupt.clear()

    def prompt_text(self, source: str, leave_out: int | None = None) -> str:
        """The full prompt for ``source`` (the translation is generated after it); ``leave_out``: a
        few-shot example to leave out."""
        opts = self.options
        return self.prompter.text(source, opts.source_lang, opts.target_lang, leave_out)

    def prompt_tokens(self, source: str, leave_out: int | None = None) -> list[int]:
        """Tokens of the prompt for ``source`` (with BOS)."""
        text = self.prompt_text(source) if leave_out is None else self.prompt_text(source, leave_out)
        return self.prompter.tokens(text)

    def translate(self, source: str, draft: list[int] | None = None, final: bool = False,
                  draft_source: str | None = None) -> TranslationResult:
        """Translate one sentence (or sentence prefix).

        ``final``: the sentence is finished; its translation takes the compute gate at speech
        priority and runs to the end, where a partial one steps aside for each speech decode.
        ``draft_source``: the source ``draft`` translates (where the bias applies depends on it
        when ``options.bias_holdback`` is set).

        With ``options.beta`` None this is plain greedy decoding and ``draft`` is
        ignored; otherwise ``draft`` (usually the previous translation's tokens)
        is verified with self-speculative biased decoding (see :meth:`_generate_ssbd`).
        With a few-shot prompt and ``options.clause_pieces`` a long sentence goes clause by clause
        (:meth:`_translate_pieces`).
        """
        # Text that is not valid Unicode (lone surrogates from a bad decode) is repaired, not fatal.
        source = " ".join(source.encode("utf-8", "replace").decode("utf-8").split())
        if not source:
            return TranslationResult(source, "", [], 0, 0, 0.0)
        result = self._translate_text(source, draft, final, draft_source)
        if final and self.options.capital_retry:
            result = self._steer_from_lower_case(source, result)
        return result

    def _translate_text(self, source: str, draft: list[int] | None, final: bool,
                        draft_source: str | None) -> TranslationResult:
        """:meth:`translate` of ``source`` (non-empty, valid text), before the lower-case retry."""
        # hesitations are not translated ("Um, yeah." reads "Yeah."); a line of nothing else is shown as it is
        # and lower-case typing is read as a transcript writes it (core.translate.casing)
        lang = self.options.source_lang
        spoken = without_hesitations(source, lang)
        if draft_source:
            draft_source = without_hesitations(draft_source, lang) or draft_source
        if self.options.as_written:
            spoken = as_written(spoken, lang)
            draft_source = as_written(draft_source, lang) if draft_source else draft_source
        if self.options.clock_24h:
            target = self.options.target_lang
            spoken = clock_24h(spoken, lang, target)
            draft_source = clock_24h(draft_source, lang, target) if draft_source else draft_source
        if not spoken or needs_no_translation(spoken):  # "Hmm.", "1.", "2024", "…": shown as it is
            return TranslationResult(source, source, self.runner.tokenize(" " + source), 0, 0, 0.0)
        if final and not draft and self.options.sentence_by_sentence:
            parts = sentence_parts(spoken)
            if len(parts) > 1:  # "3 small pizzas. Meat Lovers. Is this correct?": each sentence as the app gets it
                return self._translate_sentences(source, parts)
        said, rest = split_markers(spoken, self.options.source_lang, self.options.target_lang,
                                   self.options.phrases)
        # "Okay, …": the markers said from a word list, the rest translated as a sentence of its own
        if said and self.options.markers:
            return self._after_markers(source, spoken, said, rest, draft, final, draft_source)
        if self.options.markers and self.options.phrases:
            head, tail = split_tail(spoken, self.options.source_lang, self.options.target_lang)
            if tail:  # "…, thank you.": the rest translated, then the tail said from the word list
                return self._before_tail(source, spoken, head, tail, draft, final, draft_source)
        source = spoken
        if self.style == "few-shot" and self.options.clause_pieces:
            # sentence ends cut only finished text with no draft (a file's line, a line never shown
            # unfinished): a growing line keeps the pieces its draft was made of, so the draft still fits
            pieces = clause_pieces(source, sentences=final and not draft)
            if len(pieces) > 1:
                return self._translate_pieces(source, pieces, draft, final, draft_source)
        return self._translate_one(source, draft, final, draft_source, steer=final)

    def _translate_sentences(self, source: str, parts: list[str]) -> TranslationResult:
        """Finished text of several sentences, each translated as a finished sentence of its own and
        joined as the target language joins sentences."""
        done = [self.translate(part, final=True) for part in parts]
        joined = joiner(self.options.target_lang).join
        return TranslationResult(
            source, joined(r.text for r in done if r.text), [t for r in done for t in r.tokens],
            sum(r.prompt_tokens for r in done), sum(r.evaluated_tokens for r in done), sum(r.seconds for r in done),
            reused_tokens=sum(r.reused_tokens for r in done), gaps=[g for r in done for g in r.gaps],
            unsteered=joined(r.unsteered or r.text for r in done if r.unsteered or r.text)
            if any(r.unsteered for r in done) else None)

    def _after_markers(self, source: str, spoken: str, said: list[str], rest: str, draft: list[int] | None,
                       final: bool, draft_source: str | None) -> TranslationResult:
        """``source`` opening with discourse markers (:mod:`core.translate.markers`): the rest translated,
        the markers before it. A draft made here translates the rest of its source, so that rest is
        the draft's source (:func:`bias_span`)."""
        target = self.options.target_lang
        if not rest:  # "Okay.", "Yes, yes."
            return TranslationResult(source, markers_alone(said, spoken, target), [], 0, 0, 0.0)
        drafted_rest = split_markers(draft_source, self.options.source_lang, target,
                                     self.options.phrases)[1] if draft_source else None
        result = self.translate(rest, draft, final, drafted_rest or None)
        unsteered = None if result.unsteered is None else with_markers(said, result.unsteered, spoken, target)
        return dataclasses.replace(result, source=source, text=with_markers(said, result.text, spoken, target),
                                   unsteered=unsteered)

    def _before_tail(self, source: str, spoken: str, head: str, tail: list[str], draft: list[int] | None,
                     final: bool, draft_source: str | None) -> TranslationResult:
        """``source`` ending with set phrases after a comma (:func:`~core.translate.markers.split_tail`): the
        text before them translated, then the phrases; as with markers, a draft made here is the head's."""
        target = self.options.target_lang
        drafted_head = split_tail(draft_source, self.options.source_lang, target)[0] if draft_source else None
        result = self.translate(head, draft, final, drafted_head)
        unsteered = None if result.unsteered is None else with_tail(result.unsteered, tail, spoken, target)
        return dataclasses.replace(result, source=source, text=with_tail(result.text, tail, spoken, target),
                                   unsteered=unsteered)

    def _translate_one(self, source: str, draft: list[int] | None, final: bool,
                       draft_source: str | None, exact: bool = False, steer: bool = False,
                       depth: int = 0) -> TranslationResult:
        """One piece of text, whole: SSBD or greedy, again without an example the model gave back.
        ``exact``: the draft only speeds greedy decoding (β applies nowhere). ``steer``: finished
        text; a copy left in the source language is decoded again (:meth:`_steer_from_copy`), and
        what is still broken then (:meth:`_broken`) is translated in halves (:meth:`_translate_halves`;
        ``depth``: how many times its text was halved already)."""
        if needs_no_translation(source):
            return TranslationResult(source, source, self.runner.tokenize(" " + source), 0, 0, 0.0)
        opts = self.options
        span = 0 if exact else bias_span(source, draft_source, len(draft or []), opts.bias_holdback)
        result = self._translate(source, draft, final, span)
        if self.style == "few-shot":
            echoed = borrowed_example(result.text, source, opts.source_lang, opts.target_lang)
            if echoed is not None:  # it repeated an example: once more without that example in view
                logger.info("translation of %r repeated example %d; translating again without it", source, echoed)
                again = self._translate(source, draft, final, span, leave_out=echoed)
                again.seconds += result.seconds
                again.evaluated_tokens += result.evaluated_tokens
                result = again
        if steer and opts.copy_retries and (is_copy(source, result.text, names_aside=False)
                                            or self._english(source, result.text)):
            result = self._steer_from_copy(source, result, final)
        if steer and opts.fragment_retry and is_fragment(source, result.text, opts.target_lang):
            result = self._steer_from_fragment(source, result, final)
        if steer and opts.number_retry and invented_numbers(source, result.text, opts.source_lang):
            result = self._steer_from_number(source, result, final)
        if steer and depth < opts.split_broken and self._broken(source, result.text):
            result = self._translate_halves(source, result, final, depth)
        return result

    def _steer_from_lower_case(self, source: str, first: TranslationResult) -> TranslationResult:
        """Finished ``source`` opening with a word in lower case (a transcript's line that goes on from the
        one before, or typing), whose translation ``first`` was left in the source language or written in
        English (the reader's copy rule, :func:`core.translate.quality.is_copy`, or
        :func:`core.translate.quality.looks_english`), translated again as a sentence: its first letter
        capitalised (:func:`core.translate.casing.first_upper`). In lower case the small model reads such a
        line as a fragment and goes on in English ("what type of crust would you like?" → "was kind of
        crust would you like?"). The retry replaces ``first`` only where it is not broken, keeps every
        quotation and number and nearly all names ``first`` kept (:func:`core.translate.quality.keeps_enough`)
        and takes fewer of the source's words, and adds no quotation (:func:`core.translate.quality.
        adds_quotation`: the prompt's quoted-speech frame, a speaker made up); either way the result
        carries both decodes' cost."""
        spoken = without_hesitations(source, self.options.source_lang)
        if not (is_copy(source, first.text) or self._english(source, first.text)) or not _LOWER_WORD.match(spoken):
            return first
        retry = self._translate_text(first_upper(spoken), None, True, None)
        seconds, evaluated = first.seconds + retry.seconds, first.evaluated_tokens + retry.evaluated_tokens
        if (self._broken(source, retry.text) or not keeps_enough(source, first.text, retry.text)
                or source_share(source, retry.text)[0] >= source_share(source, first.text)[0]
                or adds_quotation(source, retry.text)):
            return dataclasses.replace(first, seconds=seconds, evaluated_tokens=evaluated)
        logger.info("translation of %r was left in English (%r); as a sentence: %r", source, first.text, retry.text)
        return dataclasses.replace(retry, source=source, seconds=seconds, evaluated_tokens=evaluated,
                                   unsteered=first.unsteered or first.text)

    def _broken(self, source: str, text: str) -> bool:
        """Left in the source language (names counted, as the copy retry's trigger), written in English
        all the same (:func:`core.translate.quality.looks_english`), a fragment, or a phrase said twice
        where the source says none twice: two halves can meet in one ("… 30 Meter von der" + "von der
        Chelsea-Goal …"), where the loop rule of either decode does not see it."""
        return (is_copy(source, text, names_aside=False) or is_fragment(source, text, self.options.target_lang)
                or self._english(source, text) or (phrase_loop(text) is not None and phrase_loop(source) is None))

    def _english(self, source: str, text: str) -> bool:
        """An English source's translation written in English all the same (:func:`core.translate.quality.
        looks_english`), a short reply left as it was ("Yeah." → "Yeah.") too."""
        opts = self.options
        return opts.source_lang == "en" and opts.target_lang != "en" and looks_english(text, source)

    def _translate_halves(self, source: str, whole: TranslationResult, final: bool, depth: int) -> TranslationResult:
        """``source``, whose translation ``whole`` is still broken (:meth:`_broken`), translated as two
        halves (:func:`core.translate.clauses.halves`), each finished text steered like a sentence, and
        joined. The halves replace ``whole`` only where they are not broken themselves and keep every
        quotation and number ``whole`` kept and nearly all its names (:func:`core.translate.quality.
        keeps_enough`: a half alone can lose a quotation's context and translate it, or make up a
        name); either way the result
        carries every decode's cost."""
        parts = halves(source)
        if parts is None:
            return whole
        done = [self._translate_one(part, None, final, None, exact=True, steer=True, depth=depth + 1)
                for part in parts]
        seconds = whole.seconds + sum(r.seconds for r in done)
        evaluated = whole.evaluated_tokens + sum(r.evaluated_tokens for r in done)
        first, second = (_open_end(part, r.text) for part, r in zip(parts, done, strict=True))
        text = joiner(self.options.target_lang).join(t for t in (first, _after_seam(first, second)) if t)
        if self._broken(source, text) or not keeps_enough(source, whole.text, text):
            return dataclasses.replace(whole, seconds=seconds, evaluated_tokens=evaluated)
        logger.info("translation of %r was broken (%r); translated in halves: %r", source, whole.text, text)
        return TranslationResult(source, text, [t for r in done for t in r.tokens],
                                 whole.prompt_tokens + sum(r.prompt_tokens for r in done), evaluated, seconds,
                                 reused_tokens=sum(r.reused_tokens for r in done),
                                 gaps=[g for r in done for g in r.gaps], unsteered=whole.unsteered or whole.text)

    def _steer_from_copy(self, source: str, first: TranslationResult, final: bool) -> TranslationResult:
        """The copy retry: an explicit second greedy decode of ``source`` with the word that began the
        copied run banned where it began (:mod:`core.translate.copies`), again with the bans so far
        while it still copies (``options.copy_retries`` decodes at most). The first retry that is not
        broken (:meth:`_broken`) and keeps the numbers ``first`` kept
        (:func:`core.translate.quality.keeps_numbers`) is the translation (with every decode's cost); if
        none, ``first`` stays. A retry that dropped a number is not steered on from: the ban moves to
        the next word of the decode it came from, so the words before it, the number among them, stay."""
        opts = self.options
        banned: dict[int, set[int]] = {}
        base, seconds, evaluated = first, first.seconds, first.evaluated_tokens  # base: steered from
        leave_out = None
        moved_to = None  # where the ban goes instead, in base, after a retry that dropped a number
        for _ in range(opts.copy_retries):
            pieces = [self.runner.piece_of(t) for t in base.tokens]
            at = moved_to if moved_to is not None else copy_start(pieces, source)
            if at is None and looks_english(base.text, source):  # English, not the source's words: its start
                at = next(iter(word_starts(pieces)), None)
            if at is None:
                break
            tried = {k: set(v) for k, v in banned.items()}
            tried.setdefault(at, set()).update(copy_bans(base.tokens, pieces, at, self.runner.tokenize))
            result = self._translate(source, None, final, 0, leave_out=leave_out, banned=tried)
            seconds += result.seconds
            evaluated += result.evaluated_tokens
            if self.style == "few-shot" and leave_out is None:
                leave_out = borrowed_example(result.text, source, opts.source_lang, opts.target_lang)
                if leave_out is not None:  # it fell back on an example: the same decode without it in view
                    result = self._translate(source, None, final, 0, leave_out=leave_out, banned=tried)
                    seconds += result.seconds
                    evaluated += result.evaluated_tokens
            if not keeps_numbers(source, first.text, result.text):
                moved_to = next((i for i in word_starts(pieces) if i > at), None)
                if moved_to is None:
                    break
                continue
            if not self._broken(source, result.text):
                logger.info("translation of %r was left in the source language; decoded again: %r", source,
                            result.text)
                return dataclasses.replace(result, seconds=seconds, evaluated_tokens=evaluated, unsteered=first.text)
            base, banned, moved_to = result, tried, None
        return dataclasses.replace(first, seconds=seconds, evaluated_tokens=evaluated)

    def _steer_from_fragment(self, source: str, first: TranslationResult, final: bool) -> TranslationResult:
        """The fragment retry: ``first`` (a fragment) decoded again, greedily, with the token it was least
        sure of (the smallest top-two logit gap) banned where it was chosen, so that the model's second
        choice opens the rest. The retry is the translation where it is not broken (:meth:`_broken`), keeps
        the numbers, quotations and names ``first`` kept (:func:`core.translate.quality.keeps_enough`) and takes
        no larger share of the source's words than :data:`FRAGMENT_RETRY_SOURCE_SHARE` or ``first`` (a second
        choice can go on in English under the copy rule's share: "Was such a food did you want?"); else
        ``first`` stays. Either way the result carries both decodes' cost."""
        gaps = [(g, i) for i, g in enumerate(first.gaps[:len(first.tokens)]) if g == g]  # NaN: not known
        if not gaps:
            return first
        at = min(gaps)[1]
        result = self._translate(source, None, final, 0, banned={at: {first.tokens[at]}})
        seconds = first.seconds + result.seconds
        evaluated = first.evaluated_tokens + result.evaluated_tokens
        english = max(FRAGMENT_RETRY_SOURCE_SHARE, source_share(source, first.text)[0])
        if (self._broken(source, result.text) or not keeps_enough(source, first.text, result.text)
                or source_share(source, result.text)[0] > english):
            return dataclasses.replace(first, seconds=seconds, evaluated_tokens=evaluated)
        logger.info("translation of %r was a fragment (%r); decoded again: %r", source, first.text, result.text)
        return dataclasses.replace(result, seconds=seconds, evaluated_tokens=evaluated,
                                   unsteered=first.unsteered or first.text)

    def _steer_from_number(self, source: str, first: TranslationResult, final: bool) -> TranslationResult:
        """The number retry: ``first``, which writes a number ``source`` never says
        (:func:`core.translate.numbers.invented_numbers`), decoded again, greedily, with the token where that
        number leaves the source's numbers (:func:`core.translate.numbers.invented_start`) banned where it
        was written. The retry is the translation where it is not broken (:meth:`_broken`), keeps the
        numbers, quotations and names ``first`` kept (:func:`core.translate.quality.keeps_enough`), adds no
        quotation and makes up no number; else ``first`` stays. Either way the result carries both
        decodes' cost."""
        at = invented_start([self.runner.piece_of(t) for t in first.tokens], source)
        if at is None:
            return first
        result = self._translate(source, None, final, 0, banned={at: {first.tokens[at]}})
        seconds = first.seconds + result.seconds
        evaluated = first.evaluated_tokens + result.evaluated_tokens
        if (self._broken(source, result.text) or not keeps_enough(source, first.text, result.text)
                or adds_quotation(source, result.text)
                or invented_numbers(source, result.text)):
            return dataclasses.replace(first, seconds=seconds, evaluated_tokens=evaluated)
        logger.info("translation of %r made up a number (%r); decoded again: %r", source, first.text, result.text)
        return dataclasses.replace(result, seconds=seconds, evaluated_tokens=evaluated,
                                   unsteered=first.unsteered or first.text)

    def _translate_pieces(self, source: str, pieces: list[str], draft: list[int] | None, final: bool,
                          draft_source: str | None) -> TranslationResult:
        """``source`` clause by clause (see :mod:`core.translate.clauses`).

        Every piece but the last is finished text: translated greedily once (with the previous
        translation as a draft verified at β = 0, so exactly what greedy decoding gives whatever β)
        and remembered, so a growing sentence re-translates
        only its last piece. The last piece is translated like a whole sentence, with the share of
        ``draft`` (and of ``draft_source``) after the finished pieces' as its draft; where the draft
        does not start with their tokens it has none. The tokens are the pieces' tokens in order
        (the next draft), the text their texts joined as the target language joins sentences.
        """
        opts = self.options
        done = []
        for piece in pieces[:-1]:
            key = (opts.source_lang, opts.target_lang, piece)
            result = self._pieces.get(key)
            if result is None:
                # the previous translation, past the pieces before this one, drafts it at β = 0: it
                # usually began with this piece's words (it ended here before the sentence went on)
                before = [t for r in done for t in r.tokens]
                piece_draft = draft[len(before):] if draft and draft[:len(before)] == before else None
                result = self._translate_one(piece, piece_draft, final, None, exact=True, steer=True)
                self._pieces.put(key, result)
            else:  # nothing evaluated this time
                result = dataclasses.replace(result, prompt_tokens=0, evaluated_tokens=0, seconds=0.0,
                                             reused_tokens=0)
            done.append(result)
        before = [t for r in done for t in r.tokens]
        last_draft = None
        if draft and len(draft) > len(before) and draft[:len(before)] == before:
            last_draft = draft[len(before):]
        said = " ".join(pieces[:-1])
        last_source = None
        if last_draft is not None and draft_source and draft_source.startswith(said + " "):
            last_source = draft_source[len(said) + 1:]
        last = self._translate_one(pieces[-1], last_draft, final, last_source, steer=final)
        parts = done + [last]
        return TranslationResult(
            source, joiner(opts.target_lang).join(r.text for r in parts if r.text), before + last.tokens,
            sum(r.prompt_tokens for r in parts), sum(r.evaluated_tokens for r in parts),
            sum(r.seconds for r in parts), draft_tokens=last.draft_tokens, accepted_tokens=last.accepted_tokens,
            reused_tokens=sum(r.reused_tokens for r in parts), gaps=[g for r in parts for g in r.gaps],
            unsteered=joiner(opts.target_lang).join(r.unsteered or r.text for r in parts if r.unsteered or r.text)
            if any(r.unsteered for r in parts) else None,
        )

    def _translate(self, source: str, draft: list[int] | None, final: bool, span: int,
                   leave_out: int | None = None, banned: dict[int, set[int]] | None = None) -> TranslationResult:
        text = self.prompt_text(source) if leave_out is None else self.prompt_text(source, leave_out)
        prompt = self.prompter.tokens(text)
        # prompt tokens up to the end of the source: what the next update of a growing sentence can reuse
        at = text.rfind(source)
        source_end = None if at < 0 else len(self.prompter.tokens(text[:at + len(source)]))
        source_tokens = self.runner.tokenize(" " + source) if self.options.lookup else None
        budget = self.runner.n_ctx - len(prompt)
        max_new = min(self.options.max_new_tokens, 2 * len(self.runner.tokenize(source)) + 16)
        if budget < max_new + 1:
            return self._translate_long(source, time.perf_counter(), final)
        start_eval = self.runner.evaluated
        if self.runner.log is not None:
            self.runner.log.phase = "finished" if final else "unfinished"
        try:
            with COMPUTE_GATE.held(SPEECH if final else TRANSLATION):
                t0 = time.perf_counter()  # compute time only, not the waits for the gate
                opts = self.options
                exact = final and not opts.bias_final  # a finished sentence, read as greedy
                if banned:  # the copy retry: greedy, steered by its bans
                    opts = dataclasses.replace(opts, beta=None)
                step = self.decoder.decode(prompt, max_new, opts, draft, 0 if exact else span, partial=not final,
                                           cut_phrases=not has_repeated_phrase(source),
                                           source_tokens=source_tokens,
                                           source_end=source_end, banned=banned)
                seconds = time.perf_counter() - t0 - self.decoder.yielded
        except (ModelError, Interrupted):
            raise
        except Exception as exc:
            logger.exception("translation of %r failed", source)
            raise TranslationError(f"The translator failed ({exc}).") from exc
        text = self.runner.detokenize(step.tokens).strip()
        return TranslationResult(
            source, text, step.tokens, len(prompt), self.runner.evaluated - start_eval, seconds,
            draft_tokens=step.draft, accepted_tokens=step.accepted, reused_tokens=step.reused, gaps=step.gaps,
        )

    def _translate_long(self, source: str, t0: float, final: bool = False) -> TranslationResult:
        """A source too long for the context: translate it in halves and join (logged)."""
        words = source.split()
        if len(words) < 2:
            raise TranslationError("The text to translate is too long for the translation model's context.")
        logger.warning("source of %d words exceeds the translation context; translating it in two parts", len(words))
        mid = len(words) // 2
        for i in range(mid, len(words) - 1):  # prefer to split after punctuation near the middle
            if words[i].endswith((",", ";", ":", ".")):
                mid = i + 1
                break
        first = self.translate(" ".join(words[:mid]), final=final)
        second = self.translate(" ".join(words[mid:]), final=final)
        return TranslationResult(
            source,
            (first.text + joiner(self.options.target_lang) + second.text).strip(),
            first.tokens + second.tokens,
            first.prompt_tokens + second.prompt_tokens,
            first.evaluated_tokens + second.evaluated_tokens,
            time.perf_counter() - t0,
        )

    def close(self) -> None:
        """Free the model."""
        self.runner.close()


def measure_speed(path: str | Path, target: str = "de") -> tuple[int, float]:
    """Translate a few fixed sentences with the model at ``path``: (output tokens, model seconds)
    (for the model advice of core.models.advice)."""
    sentences = ("Good morning, everyone, and thank you for joining the call.",
                 "The second quarter was better than we expected, mostly because of the new customers in Europe.",
                 "Let's take questions at the end of the meeting.",
                 "If you cannot hear me, please write in the chat and I will repeat the last part.")
    translator = LlamaTranslator(path, TranslatorOptions(target_lang=target))
    try:
        translator.translate("Hello.")  # warm-up: first-call allocations
        tokens, seconds = 0, 0.0
        for sentence in sentences:
            result = translator.translate(sentence, final=True)
            tokens += len(result.tokens)
            seconds += result.seconds
    finally:
        translator.close()
    return tokens, seconds
