"""Greedy autoregressive translation with a local GGUF model (the baseline engine).

Every call translates from scratch: the KV cache is cleared, the prompt is
evaluated, and tokens are generated greedily until a newline or end of turn.
This is the reference every faster engine (SSBD) is measured against.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import logger
from ..compute import COMPUTE_GATE, SPEECH, TRANSLATION
from ..errors import Interrupted, ModelError, TranslationError
from ..text import common_prefix_len, joiner
from .clauses import PieceMemo, clause_pieces
from .llama_runner import PROMPT_CHUNK, SMALL_CHUNK, LlamaRunner
from .prompts import chat_messages, echoed_example, few_shot_prompt, needs_no_translation


@dataclass
class TranslatorOptions:
    """How the translator prompts and runs its model."""

    source_lang: str = "en"
    target_lang: str = "de"
    prompt_style: str = "auto"  # auto | few-shot | chat
    n_ctx: int = 2048
    n_threads: int = 0
    n_gpu_layers: int = 0
    max_new_tokens: int = 160
    beta: float | None = None  # None: plain greedy (AR); a number: SSBD with this bias
    reuse_prefix: bool = False  # keep the KV cache of the unchanged prompt prefix across calls
    draft_mask_k: int = 0  # SSBD "+mask-k": drop the last k draft tokens before verifying
    # Where the bias applies (β = 0 is exact greedy whatever these say):
    bias_final: bool = True  # False: a finished sentence's translation is exact greedy (the draft only speeds it)
    bias_floor: float = 0.0  # a draft token is favoured only where the model gives it at least this probability
    bias_holdback: int | None = None  # a number k: bias only the draft's share that translates the source
    #   words both updates share, less the last k of them (the rest is verified at β = 0)
    # few-shot prompts (small base models): a long sentence is translated clause by clause (core.translate.clauses)
    clause_pieces: bool = True


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


def repetition_span(tokens: list[int], repeats: int = 3, max_span: int = 16) -> int:
    """Length L of a span the tail repeats ``repeats`` times in a row (0 if none).

    Small models fall into loops under greedy decoding ("你所做的事情，你所做的事情，…");
    generation stops there. The rule is deterministic, so every engine that uses it
    still reproduces the same greedy output.
    """
    for span in range(1, max_span + 1):
        need = span * repeats
        if len(tokens) < need or (span == 1 and len(tokens) < 6):
            continue
        tail = tokens[-span:]
        if all(tokens[-(k + 1) * span:len(tokens) - k * span] == tail for k in range(1, repeats)):
            if span == 1 and not all(t == tail[0] for t in tokens[-6:]):
                continue
            return span
    return 0


def repeated_word(words: list[str], repeats: int = 3) -> bool:
    """Whether the last ``repeats`` tokens are one word over and over ("so so so", also when the
    first differs from the others only by its leading space, a different token): ``words`` are the
    tokens' texts as :meth:`LlamaRunner.word_of` gives them ("" for tokens without a letter, which
    never count). Found by the translation-quality test: a stuttered source ("so I I'll make …")
    came out as "so so so so", which the token rule (six equal tokens) let through."""
    tail = words[-repeats:]
    return len(tail) == repeats and tail[0] != "" and all(w == tail[0] for w in tail)


@dataclass
class _Step:
    """What one decoding produced and what it reused."""

    tokens: list[int] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    reused: int = 0
    draft: int = 0
    accepted: int = 0


def _top2_gap(logits: np.ndarray) -> float:
    """Difference between the two largest logits (small = a near-tie)."""
    top = np.partition(logits, -2)[-2:]
    return float(top[1] - top[0])


def _accepts(logits: np.ndarray, draft_token: int, beta: float, floor: float = 0.0) -> bool:
    """True when ``draft_token`` is the argmax of (1-β)·softmax(logits) + β·onehot(draft).

    ``floor``: the bias counts only where the model itself gives the draft token at least this
    probability (below it the token must be the argmax, as at β = 0).
    """
    if beta <= 0.0 or int(np.argmax(logits)) == draft_token:
        return int(np.argmax(logits)) == draft_token
    z = logits - logits.max()
    p = np.exp(z)
    p /= p.sum()
    if p[draft_token] < floor:
        return False
    if beta >= 1.0:
        return True
    p_draft = (1.0 - beta) * p[draft_token] + beta
    p[draft_token] = -1.0
    return p_draft >= (1.0 - beta) * p.max()


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


def _resolve_style(runner: LlamaRunner, style: str) -> str:
    if style != "auto":
        return style
    meta = {k: str(v).lower() for k, v in runner.metadata.items()}
    name = " ".join(meta.get(k, "") for k in ("general.name", "general.finetune", "general.basename"))
    if "tokenizer.chat_template" in meta and re.search(r"\b(it|instruct|chat)\b|-it\b|instruct", name):
        return "chat"
    return "few-shot"


class LlamaTranslator:
    """Greedy re-translation from scratch with llama.cpp; one owner thread."""

    def __init__(self, model_path: str | Path, options: TranslatorOptions | None = None) -> None:
        self.options = options or TranslatorOptions()
        self.runner = LlamaRunner(model_path, self.options.n_ctx, self.options.n_threads, self.options.n_gpu_layers)
        self.style = _resolve_style(self.runner, self.options.prompt_style)
        self.name = self._name()
        self._chat_formatter = None
        self._yielded = 0.0  # seconds the current translation stood aside for speech
        self._steps_aside = True  # the current translation is a partial one
        self._pieces = PieceMemo()  # translations of finished clause pieces
        if self.style == "chat":
            try:
                self._chat_formatter = self._make_chat_formatter()
            except ModelError as exc:
                if self.options.prompt_style == "chat":  # asked for explicitly: say why it cannot be
                    self.runner.close()
                    raise
                logger.warning("%s Using the few-shot prompt instead.", exc)
                self.style = "few-shot"
        logger.info("translator %s, prompt style %s", Path(model_path).name, self.style)

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

    def _make_chat_formatter(self):
        """The model's chat template, checked once: it must render a translation request and
        end it with the start of the model's reply (the generation prompt)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.runner.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError("This translation model has no chat template; set the prompt style to few-shot.")
        eos, bos = self.runner.special_token_texts()
        probe = chat_messages("Good morning.", self.options.source_lang, self.options.target_lang)
        try:
            formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
            asking = formatter(messages=probe).prompt
            told = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                       add_generation_prompt=False)(messages=probe).prompt
        except Exception as exc:  # a template is a program: syntax errors, raise_exception(), missing keys
            logger.exception("the chat template of %s failed", self.runner.path.name)
            raise ModelError(
                "This translation model's chat template could not be used; set the prompt style to few-shot."
            ) from exc
        if asking == told:
            raise ModelError(
                "This translation model's chat template does not start the model's reply; "
                "set the prompt style to few-shot."
            )
        return formatter

    def prompt_text(self, source: str, leave_out: int | None = None) -> str:
        """The full prompt for ``source`` (the translation is generated after it); ``leave_out``: a
        few-shot example to leave out."""
        opts = self.options
        if self.style == "chat":
            assert self._chat_formatter is not None
            result = self._chat_formatter(messages=chat_messages(source, opts.source_lang, opts.target_lang))
            return result.prompt
        return few_shot_prompt(source, opts.source_lang, opts.target_lang, leave_out)

    def prompt_tokens(self, source: str, leave_out: int | None = None) -> list[int]:
        """Tokens of the prompt for ``source`` (with BOS)."""
        text = self.prompt_text(source) if leave_out is None else self.prompt_text(source, leave_out)
        tokens = self.runner.tokenize(text, add_bos=True)
        bos = self.runner.bos
        if len(tokens) > 1 and tokens[0] == bos and tokens[1] == bos:  # chat templates often add BOS themselves
            tokens = tokens[1:]
        return tokens

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
        if needs_no_translation(source):  # "1.", "2024", "…": shown as it is (the draft is its tokens)
            return TranslationResult(source, source, self.runner.tokenize(" " + source), 0, 0, 0.0)
        if self.style == "few-shot" and self.options.clause_pieces:
            pieces = clause_pieces(source)
            if len(pieces) > 1:
                return self._translate_pieces(source, pieces, draft, final, draft_source)
        return self._translate_one(source, draft, final, draft_source)

    def _translate_one(self, source: str, draft: list[int] | None, final: bool,
                       draft_source: str | None) -> TranslationResult:
        """One piece of text, whole: SSBD or greedy, again without an example the model gave back."""
        if needs_no_translation(source):
            return TranslationResult(source, source, self.runner.tokenize(" " + source), 0, 0, 0.0)
        opts = self.options
        span = bias_span(source, draft_source, len(draft or []), opts.bias_holdback)
        result = self._translate(source, draft, final, span)
        if self.style == "few-shot":
            echoed = echoed_example(result.text, source, opts.source_lang, opts.target_lang)
            if echoed is not None:  # it repeated an example: once more without that example in view
                logger.info("translation of %r repeated example %d; translating again without it", source, echoed)
                again = self._translate(source, draft, final, span, leave_out=echoed)
                again.seconds += result.seconds
                again.evaluated_tokens += result.evaluated_tokens
                result = again
        return result

    def _translate_pieces(self, source: str, pieces: list[str], draft: list[int] | None, final: bool,
                          draft_source: str | None) -> TranslationResult:
        """``source`` clause by clause (see :mod:`core.translate.clauses`).

        Every piece but the last is finished text: translated greedily once (no draft, so exactly
        what greedy decoding gives whatever β) and remembered, so a growing sentence re-translates
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
                result = self._translate_one(piece, None, final, None)
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
        last = self._translate_one(pieces[-1], last_draft, final, last_source)
        parts = done + [last]
        return TranslationResult(
            source, joiner(opts.target_lang).join(r.text for r in parts if r.text), before + last.tokens,
            sum(r.prompt_tokens for r in parts), sum(r.evaluated_tokens for r in parts),
            sum(r.seconds for r in parts), draft_tokens=last.draft_tokens, accepted_tokens=last.accepted_tokens,
            reused_tokens=sum(r.reused_tokens for r in parts), gaps=[g for r in parts for g in r.gaps],
        )

    def _translate(self, source: str, draft: list[int] | None, final: bool, span: int,
                   leave_out: int | None = None) -> TranslationResult:
        prompt = self.prompt_tokens(source, leave_out)
        budget = self.runner.n_ctx - len(prompt)
        max_new = min(self.options.max_new_tokens, 2 * len(self.runner.tokenize(source)) + 16)
        if budget < max_new + 1:
            return self._translate_long(source, time.perf_counter(), final)
        start_eval = self.runner.evaluated
        try:
            with COMPUTE_GATE.held(SPEECH if final else TRANSLATION):
                t0 = time.perf_counter()  # compute time only, not the waits for the gate
                self._yielded = 0.0
                self._steps_aside = not final
                if self.options.beta is None:
                    step = self._generate_ar(prompt, max_new)
                else:
                    exact = final and not self.options.bias_final  # a finished sentence, read as greedy
                    step = self._generate_ssbd(prompt, max_new, list(draft or []), 0 if exact else span)
                seconds = time.perf_counter() - t0 - self._yielded
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

    # -- decoding ------------------------------------------------------------------------------
    def _start(self, prompt: list[int]) -> tuple[np.ndarray, int]:
        """Put ``prompt`` in the cache, reusing the cached common prefix if enabled.

        Returns the logits of the last prompt token and how many prompt tokens
        were reused. Prompts go in aligned chunks (see ``llama_runner``), so the
        logits are bit-identical to evaluating the prompt from scratch.
        """
        runner = self.runner
        keep = 0
        if self.options.reuse_prefix:
            # re-run at least the last prompt token, for its logits
            keep = runner.exact_reuse(min(common_prefix_len(runner.tokens, prompt), len(prompt) - 1))
        runner.truncate(keep)
        return runner.eval(prompt[keep:], chunk=PROMPT_CHUNK), keep

    def _generate_ar(self, prompt: list[int], max_new: int) -> _Step:
        """Plain greedy decoding: argmax until a stop token, a newline or a loop."""
        logits, reused = self._start(prompt)
        step = _Step(reused=reused)
        self._greedy(logits, step, max_new)
        return step

    def _greedy(self, logits: np.ndarray, step: _Step, max_new: int) -> None:
        """Continue greedily from ``logits`` (the cache holds everything before them)."""
        while len(step.tokens) < max_new:
            token = int(np.argmax(logits))
            if self.runner.is_stop(token) or not self._append(step, token, logits):
                return
            if len(step.tokens) < max_new:
                self._step_aside()
                logits = self.runner.eval([token])

    def _step_aside(self) -> None:
        """Between two model calls of a partial translation: let a waiting speech decode run first
        (the cache stays as is)."""
        if self._steps_aside:
            self._yielded += COMPUTE_GATE.yield_to_speech(TRANSLATION)

    def _append(self, step: _Step, token: int, logits: np.ndarray) -> bool:
        """Add an output token; False when it closed a repetition loop (which is cut off): a span of
        tokens repeated (:func:`repetition_span`) or one word three times (:func:`repeated_word`)."""
        step.tokens.append(token)
        step.gaps.append(_top2_gap(logits))
        loop = repetition_span(step.tokens)
        if not loop and repeated_word([self.runner.word_of(t) for t in step.tokens[-3:]]):
            loop = 1
        if loop:
            keep = len(step.tokens) - 2 * loop  # keep the first occurrence only
            del step.tokens[keep:]
            del step.gaps[keep:]
            step.accepted = min(step.accepted, keep)
            return False
        return True

    def _generate_ssbd(self, prompt: list[int], max_new: int, draft: list[int], span: int) -> _Step:
        """Self-speculative biased decoding (SSBD, Algorithm 1).

        The draft is appended to the prompt and verified in batched forward passes
        with logits for every draft position (one pass per chunk of 7 tokens, which
        keeps them bit-identical to one-by-one decoding). Position j is accepted while the draft
        token is the argmax of P' = (1-β)·softmax(logits) + β·onehot(draft_j).
        At the first disagreement the model's own token is taken (the argmax of
        P' is then the argmax of P), the KV cache is rolled back to just after the
        accepted prefix, and plain greedy decoding continues. β = 0 accepts exactly
        what greedy decoding would produce. Only the first ``span`` draft positions are biased;
        the rest are verified at β = 0 (accepted only where greedy decoding agrees).
        """
        opts = self.options
        draft = self._usable_draft(draft)
        if opts.draft_mask_k:
            draft = draft[: max(0, len(draft) - opts.draft_mask_k)]
        draft = draft[:max_new]
        if not draft:
            return self._generate_ar(prompt, max_new)
        logits, reused = self._start(prompt)  # predicts draft[0]
        step = _Step(reused=reused, draft=len(draft))
        beta, floor = float(opts.beta or 0.0), opts.bias_floor
        # Verify chunk by chunk (at most SMALL_CHUNK tokens per pass, bit-identical to one-by-one
        # decoding); a chunk is evaluated only once its first token is accepted, and verification
        # stops at the first rejection, so no pass is spent on a draft tail already refuted.
        pos = 0
        while pos < len(draft):
            if not _accepts(logits, draft[pos], beta if pos < span else 0.0, floor):
                break
            chunk = draft[pos:pos + SMALL_CHUNK]
            self._step_aside()
            rows = self.runner.eval(chunk, logits_from=0, chunk=SMALL_CHUNK)  # rows[i] follows chunk[i]
            rejected = False
            for i, d in enumerate(chunk):
                row = logits if i == 0 else rows[i - 1]
                if i > 0 and not _accepts(row, d, beta if pos + i < span else 0.0, floor):
                    logits, rejected = row, True
                    break
                step.accepted += 1
                if not self._append(step, d, row):
                    self.runner.truncate(len(prompt) + len(step.tokens))
                    return step
            if rejected:
                break
            logits = rows[len(chunk) - 1]
            pos += len(chunk)
        next_logits = logits
        # Roll the cache back to prompt + accepted prefix; what follows is plain greedy.
        self.runner.truncate(len(prompt) + len(step.tokens))
        if len(step.tokens) >= max_new:
            return step
        token = int(np.argmax(next_logits))
        if self.runner.is_stop(token) or not self._append(step, token, next_logits):
            return step
        if len(step.tokens) < max_new:
            self._step_aside()
            self._greedy(self.runner.eval([token]), step, max_new)
        return step

    def _usable_draft(self, draft: list[int]) -> list[int]:
        """The draft up to its first stop token (or a token not in the vocabulary).

        Generation ends before a stop token, so an output never holds one; a draft that does
        (end-of-turn, EOS, a template's control token) ends there rather than being accepted
        into the output.
        """
        runner = self.runner
        for i, token in enumerate(draft):
            if not 0 <= token < runner.n_vocab or runner.is_stop(token):
                return draft[:i]
        return draft

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
