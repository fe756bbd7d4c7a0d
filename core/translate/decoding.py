"""Decoding with a llama.cpp model: plain greedy (AR) and self-speculative biased decoding (SSBD).

:class:`Decoder` turns a prompt (and, for SSBD, a draft: the previous translation's tokens) into
output tokens; :class:`~core.translate.translator.LlamaTranslator` decides what to decode. SSBD
sits beside plain greedy decoding as core/asr/speculative/decoder.py sits beside the speech engine:
at β = 0 it gives greedy decoding's tokens exactly. Loops are cut by the rules of
:mod:`core.translate.loops`, in both alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..compute import COMPUTE_GATE, TRANSLATION
from ..text import common_prefix_len
from .llama_runner import PROMPT_CHUNK, SMALL_CHUNK, LlamaRunner
from .lookup import lookup_guess
from .loops import PHRASE_MAX_TOKENS, repeated_phrase, repeated_word, repetition_span


@dataclass
class Step:
    """What one decoding produced, what it reused, and the loops it cut."""

    tokens: list[int] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    reused: int = 0
    draft: int = 0
    accepted: int = 0
    phrase_loops: bool = True  # a phrase said twice in a row is a loop (not when the source says it twice)
    prompt_len: int = 0
    first_logits: np.ndarray | None = None  # what follows the prompt
    banned: dict[int, set[int]] = field(default_factory=dict)  # position → tokens a cut loop began with there
    loops: int = 0  # loops cut so far


def _top2_gap(logits: np.ndarray) -> float:
    """Difference between the two largest logits (small = a near-tie)."""
    top = np.partition(logits, -2)[-2:]
    return float(top[1] - top[0])


UNCHECKED_BETA = 0.5  # from this bias on, with no floor, SSBD keeps its draft without checking it


def keeps_draft_unchecked(beta: float | None, floor: float = 0.0) -> bool:
    """True where SSBD's biased acceptance takes every draft token whatever the model says, so the
    draft is kept unchecked (not verified): from β = 0.5 with no floor, (1-β)·p(draft) + β ≥
    (1-β)·p(top) for every distribution p. Below it (0 < β < 0.5) the model can still refuse a token."""
    return beta is not None and beta >= UNCHECKED_BETA and floor <= 0.0


def accepts(logits: np.ndarray, draft_token: int, beta: float, floor: float = 0.0) -> bool:
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


class Decoder:
    """Greedy decoding and SSBD on one :class:`LlamaRunner`, called from the translator's thread."""

    def __init__(self, runner: LlamaRunner) -> None:
        self.runner = runner
        self.options = None  # the translator's options of the current call (TranslatorOptions)
        self.yielded = 0.0  # seconds the current decoding stood aside for speech
        self._steps_aside = True  # the current decoding is of a partial translation
        self._cut_phrases = True  # the current source says no phrase twice in a row
        self._pools: list[list[int]] = []  # where lookup guesses come from (the source's tokens, the draft)
        self._source_end = 0  # prompt tokens up to the end of the source text (what the next update may reuse)
        self.guessed = 0  # lookup tokens evaluated since the translator was made (for metrics)
        self.guessed_kept = 0  # ... and kept
        self.forced = 0  # draft tokens taken without their logits (β ≥ 0.5), likewise

    def decode(self, prompt: list[int], max_new: int, options, draft: list[int] | None, span: int,
               partial: bool, cut_phrases: bool, source_tokens: list[int] | None = None,
               source_end: int | None = None, banned: dict[int, set[int]] | None = None) -> Step:
        """Decode after ``prompt``: greedy when ``options.beta`` is None, else SSBD verifying ``draft``
        with β on its first ``span`` tokens. ``partial``: steps aside for a waiting speech decode
        between model calls. ``cut_phrases``: a phrase said twice is a loop (False when the source
        itself says one twice). ``banned``: position → tokens greedy decoding may not pick there
        (a second decode steering away from a copy, core.translate.copies; greedy only)."""
        self.options, self.yielded = options, 0.0
        self._steps_aside, self._cut_phrases = partial, cut_phrases
        self._pools = [p for p in (source_tokens, draft) if p]
        self._source_end = len(prompt) if source_end is None else source_end
        if banned:
            assert options.beta is None, "bans steer greedy decoding only"
            return self._generate_ar(prompt, max_new, banned)
        if options.beta is None:
            return self._generate_ar(prompt, max_new)
        return self._generate_ssbd(prompt, max_new, list(draft or []), span)

    def _start(self, prompt: list[int]) -> tuple[np.ndarray, int]:
        """Put ``prompt`` in the cache, reusing the cached common prefix if enabled.

        Returns the logits of the last prompt token and how many prompt tokens
        were reused. Prompts go in aligned chunks (see ``llama_runner``), so the
        logits are bit-identical to evaluating the prompt from scratch.
        """
        keep = self._reuse(prompt)
        return self.runner.eval(prompt[keep:], chunk=PROMPT_CHUNK), keep

    def _reuse(self, prompt: list[int]) -> int:
        """Roll the cache back to the part of ``prompt`` it may keep (whole prompt chunks in common with
        it, with ``reuse_prefix``; at least the last prompt token is run again, for its logits) and
        return that part's length."""
        runner = self.runner
        keep = 0
        if self.options.reuse_prefix:
            keep = runner.exact_reuse(min(common_prefix_len(runner.tokens, prompt), len(prompt) - 1))
        runner.truncate(keep)
        return keep

    def _generate_ar(self, prompt: list[int], max_new: int, banned: dict[int, set[int]] | None = None) -> Step:
        """Plain greedy decoding: argmax until a stop token, a newline or a loop."""
        logits, reused = self._start(prompt)
        step = self._new_step(prompt, logits, reused=reused)
        step.banned = {at: set(tokens) for at, tokens in (banned or {}).items()}
        self._greedy(logits, step, max_new)
        return step

    def _new_step(self, prompt: list[int], logits: np.ndarray | None, **counts) -> Step:
        return Step(phrase_loops=self.options.phrase_loops and self._cut_phrases, prompt_len=len(prompt),
                     first_logits=logits, **counts)

    @staticmethod
    def _pick(logits: np.ndarray, step: Step) -> int:
        """The greedy token at the next position, less any token a loop began with there."""
        banned = step.banned.get(len(step.tokens))
        if not banned:
            return int(np.argmax(logits))
        logits = logits.copy()
        logits[list(banned)] = -np.inf
        return int(np.argmax(logits))

    def _greedy(self, logits: np.ndarray, step: Step, max_new: int) -> None:
        """Continue greedily from ``logits`` (the cache holds everything before them); after a loop,
        from its cut (:meth:`_resume`). With ``options.lookup`` each evaluated token takes along a
        guess of what follows it (:func:`~core.translate.lookup.lookup_guess`) in the same call of at
        most SMALL_CHUNK tokens, whose rows are bit-identical to one-by-one decoding; a guessed token
        is kept only where it is the greedy pick, so the output is greedy decoding's."""
        while len(step.tokens) < max_new:
            token = self._pick(logits, step)
            if self.runner.is_stop(token):
                return
            if not self._append(step, token, logits):
                resumed = self._resume(step)
                if resumed is None:
                    return
                logits = resumed
                continue
            if len(step.tokens) >= max_new:
                return
            self._step_aside()
            guess = self._guess(step, max_new)
            if not guess:
                logits = self.runner.eval([token])
                continue
            rows = self.runner.eval([token, *guess], logits_from=0, chunk=SMALL_CHUNK)
            self.guessed += len(guess)
            logits = rows[0]
            for i, g in enumerate(guess):
                if self._pick(logits, step) != g:  # greedy says otherwise (a stop token included)
                    break
                self.guessed_kept += 1
                if not self._append(step, g, logits):  # the guess closed a loop: on from its cut
                    resumed = self._resume(step)
                    if resumed is None:
                        return
                    logits = resumed
                    break
                logits = rows[i + 1]
            self.runner.truncate(step.prompt_len + len(step.tokens))  # drop the guesses greedy did not make

    def _guess(self, step: Step, max_new: int) -> list[int]:
        """Lookup tokens to evaluate after the last output token (none without ``options.lookup``)."""
        if not self.options.lookup or not self._pools:
            return []
        room = min(SMALL_CHUNK - 1, max_new - len(step.tokens), self.runner.n_ctx - step.prompt_len
                   - len(step.tokens) - 1)
        return [t for t in lookup_guess(step.tokens, self._pools, max_guess=room)
                if 0 <= t < self.runner.n_vocab][:room]

    def _resume(self, step: Step) -> np.ndarray | None:
        """After a loop was cut: roll the cache back to the cut and give the logits there (the last
        kept token evaluated again, as one-by-one decoding did), or None when the translation ends at
        the cut (``options.loop_restarts`` loops already).

        Found on the shared reading: the bundled model looped "so weit, so weit, …" half-way through
        a sentence, and ending at the cut left "mehr oder weniger so weit," for twelve words; going on
        with "so" banned after the first "so weit," translated the rest. The rule is deterministic
        and sees only the output so far, so SSBD at β = 0 still gives greedy decoding's tokens."""
        if step.loops > self.options.loop_restarts:
            self.runner.truncate(step.prompt_len + len(step.tokens))
            return None
        if not step.tokens:
            if step.first_logits is None:  # the prompt was evaluated with forced draft tokens after it
                last = self.runner.tokens[step.prompt_len - 1]
                self.runner.truncate(step.prompt_len - 1)
                step.first_logits = self.runner.eval([last])
            self.runner.truncate(step.prompt_len)
            return step.first_logits
        self.runner.truncate(step.prompt_len + len(step.tokens) - 1)
        self._step_aside()
        return self.runner.eval([step.tokens[-1]])

    def _step_aside(self) -> None:
        """Between two model calls of a partial translation: let a waiting speech decode run first
        (the cache stays as is)."""
        if self._steps_aside:
            self.yielded += COMPUTE_GATE.yield_to_speech(TRANSLATION)

    def _append(self, step: Step, token: int, logits: np.ndarray | None) -> bool:
        """Add an output token; False when it closed a repetition loop (which is cut off, its first
        occurrence kept): a span of tokens three times (:func:`repetition_span`), one word three
        times (:func:`repeated_word`) or a phrase of two or more words twice (:func:`repeated_phrase`)."""
        step.tokens.append(token)
        step.gaps.append(float("nan") if logits is None else _top2_gap(logits))
        keep = len(step.tokens)
        if span := repetition_span(step.tokens):
            keep -= 2 * span
        elif repeated_word([self.runner.word_of(t) for t in step.tokens[-3:]]):
            keep -= 2
        elif step.phrase_loops:
            keep -= repeated_phrase([self.runner.piece_of(t) for t in step.tokens[-2 * PHRASE_MAX_TOKENS:]])
        if keep < len(step.tokens):
            step.banned.setdefault(keep, set()).add(step.tokens[keep])
            step.loops += 1
            del step.tokens[keep:]
            del step.gaps[keep:]
            step.accepted = min(step.accepted, keep)
            return False
        return True

    def _generate_ssbd(self, prompt: list[int], max_new: int, draft: list[int], span: int) -> Step:
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
        beta, floor = float(opts.beta or 0.0), opts.bias_floor
        forced = self._forced(prompt, draft, beta, floor, span)
        if forced is not None:
            step, logits = forced
            if step.loops:  # the draft looped: greedy from its cut
                self._greedy(logits, step, max_new)
                return step
            pos = len(step.tokens)
        else:
            logits, reused = self._start(prompt)  # predicts draft[0]
            step = self._new_step(prompt, logits, reused=reused, draft=len(draft))
            pos = 0
        # Verify chunk by chunk (at most SMALL_CHUNK tokens per pass, bit-identical to one-by-one
        # decoding); a chunk is evaluated only once its first token is accepted, and verification
        # stops at the first rejection, so no pass is spent on a draft tail already refuted.
        while pos < len(draft):
            if not accepts(logits, draft[pos], beta if pos < span else 0.0, floor):
                break
            chunk = draft[pos:pos + SMALL_CHUNK]
            self._step_aside()
            rows = self.runner.eval(chunk, logits_from=0, chunk=SMALL_CHUNK)  # rows[i] follows chunk[i]
            rejected = False
            for i, d in enumerate(chunk):
                row = logits if i == 0 else rows[i - 1]
                if i > 0 and not accepts(row, d, beta if pos + i < span else 0.0, floor):
                    logits, rejected = row, True
                    break
                step.accepted += 1
                if not self._append(step, d, row):  # a loop in the draft: greedy from its cut
                    resumed = self._resume(step)
                    if resumed is not None:
                        self._greedy(resumed, step, max_new)
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
        self._greedy(next_logits, step, max_new)
        return step

    def _forced(self, prompt: list[int], draft: list[int], beta: float, floor: float,
                span: int) -> tuple[Step, np.ndarray] | None:
        """At β ≥ 0.5 (and no floor) the bias accepts every draft token of its span whatever the model
        says: (1-β)·p(draft) + β ≥ (1-β)·p(top) for every p. Those tokens need no logits, so they go
        into the cache with the prompt's tail in one call (instead of one call per 7 tokens with a
        262k-entry row per token). Returns the step holding them (cut at a loop, as
        one by one) and the logits after the last, or None where nothing is forced (β < 0.5, a floor,
        an empty span). Positions reused later are still only whole chunks of prompt: the chunk that
        holds the prompt's end is never reused (:meth:`LlamaRunner.exact_reuse`)."""
        n = min(span, len(draft))
        if not keeps_draft_unchecked(beta, floor) or n <= 0:
            return None
        step = self._new_step(prompt, None, draft=len(draft))
        for token in draft[:n]:
            step.accepted += 1
            if not self._append(step, token, None):
                break
        if not step.tokens:
            return None
        runner = self.runner
        keep = self._reuse(prompt)
        self.forced += len(step.tokens)
        step.reused = keep
        # whole prompt chunks before the end of the source go in as usual (the next update, whose source
        # goes on from there, reuses them); the rest in one call (a call costs a fixed overhead plus a
        # little per token, so one call beats two), and none of those positions is reused
        end = min(self._source_end, len(prompt))
        whole = end - end % PROMPT_CHUNK
        if keep < whole:
            runner.eval(prompt[keep:whole], chunk=PROMPT_CHUNK)
        logits = runner.eval(prompt[max(keep, whole):] + step.tokens)
        return step, logits

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
