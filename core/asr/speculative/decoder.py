"""Speculative Whisper decoding: a small drafter proposes, a large verifier keeps only its own greedy output.

Per round the drafter (e.g. tiny.en) drafts tokens greedily until its
confidence in the next token falls below ``threshold`` (adaptive draft length,
SpecASR) or ``max_draft`` tokens; the verifier (e.g. base) scores the whole
draft in ONE forward pass over its KV cache, accepts the longest prefix that
equals its own argmax, takes its own token at the first mismatch and cuts its
cache back there. The output is therefore the verifier's greedy transcript.

Two ways of not drafting at all:

- **Draft recycling**: after a mismatch the rest of the rejected draft is kept;
  if the drafter's next token re-joins it (at the same or an adjacent
  position), the kept tail is verified again instead of being re-drafted.
- **Cross-update recycling**: in streaming, the previous update's verified
  transcript of the same (now longer) window is the first draft, so most of the
  window is verified in a few passes instead of being decoded token by token.
  What is left is usually a few new tokens: the verifier decodes up to
  ``lazy_drafter`` of them alone before the drafter (and its encoder, on a CPU
  the cost of about a dozen verifier steps) is started at all.

With ``sparse_tree`` the drafter's runner-up at its first unsure token is
continued as a branch (SpecASR's two-pass sparse tree); trunk and branch are
verified in one pass with a tree attention mask.

Drafter and verifier may use different tokenizers (tiny.en and base do): drafts
are mapped through text, and the drafter is re-synchronised to the verified text
after each round. Same-tokenizer pairs skip the mapping.

The code: the three kinds of draft (previous transcript, recycled tail, drafter)
are :class:`~.drafts.DraftSource` objects in :mod:`.drafts` (which knows the models only as
:class:`~.drafts.DraftModels`, not this decoder); the knobs are :mod:`.options`. The verify loop
(:meth:`SpeculativeDecoder._verify_loop`) takes the first draft one of them
offers, verifies it in one pass (:meth:`SpeculativeDecoder._verify`) and tells
the source which nodes were accepted and what tail was refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .drafts import DrafterSource, DraftKind, DraftModels, DraftSource, PreviousTranscript, first_draft
from .options import SpeculativeOptions
from .runtime import DecoderState, WhisperRunner
from .tree import DraftTree

NEAR_TIE = 0.05  # top-2 logit gaps below this are near-ties: batched and single passes may order them differently
# The near-tie tolerance per verifier dtype (the losslessness contract in engine.py). A batched pass and a
# one-token pass add up the same numbers in another order; in half precision each rounds to its own result.
# Largest change of the top-2 gap between them measured on this project's CPU (base, 6 shared clips, passes
# of 8 tokens and of the whole transcript): float32 0.0001, float16 0.027, bfloat16 0.114; issue #13 reports an
# H100 (running the code before the dtype work) flipping a float16 tie at a gap of 0.0625. Tolerances: about 4×
# the CPU figure, 2× that flip. The bfloat16 tree pass against plain passes with AVX2 kernels: 0.16 (test_dtype).
NEAR_TIES = {"float32": NEAR_TIE, "float16": 0.125, "bfloat16": 0.5}


def near_tie(runner: WhisperRunner) -> float:
    """The top-2 gap below which ``runner``'s batched and one-token passes may pick different tokens."""
    return NEAR_TIES[runner.dtype_name]


@dataclass
class DecodeStats:
    """What one decode cost and how the drafts fared."""

    verifier_passes: int = 0
    drafter_steps: int = 0
    draft_proposed: int = 0
    draft_accepted: int = 0
    recycled_proposed: int = 0
    recycled_accepted: int = 0
    previous_proposed: int = 0
    previous_accepted: int = 0
    branch_proposed: int = 0  # sparse-tree nodes off the trunk
    branch_accepted: int = 0
    tree_rounds: int = 0  # rounds whose draft had a branch
    rounds: int = 0
    encoder_seconds: float = 0.0
    drafter_seconds: float = 0.0
    verifier_seconds: float = 0.0

    @property
    def decoder_seconds(self) -> float:
        """Decoder time (drafter + verifier passes, without the encoders)."""
        return self.drafter_seconds + self.verifier_seconds

    def add(self, other: DecodeStats) -> None:
        """Accumulate another decode's stats."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class DecodeResult:
    """A transcript in verifier tokens, with the top-2 logit gap behind each token."""

    tokens: list[int]
    text: str
    gaps: list[float] = field(default_factory=list)
    stats: DecodeStats = field(default_factory=DecodeStats)


def _top2_gap(logits) -> float:
    top = logits.topk(2).values
    return float(top[0] - top[1])


def greedy_decode(runner: WhisperRunner, audio: np.ndarray, previous_text: str = "", language: str | None = "en",
                  max_new_tokens: int = 220, encoder_output=None) -> DecodeResult:
    """The model's own greedy transcript, one token per forward pass (the reference)."""
    stats = DecodeStats()
    t0 = time.perf_counter()
    enc = runner.encode(audio) if encoder_output is None else encoder_output
    stats.encoder_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = runner.start(enc)
    logits = state.append(runner.prompt(previous_text, language))
    out: list[int] = []
    gaps: list[float] = []
    limit = min(max_new_tokens, runner.max_target_positions - len(state) - 1)
    while len(out) < limit:
        row = runner.process(logits.clone(), first_step=not out)
        token = int(row.argmax())
        gaps.append(_top2_gap(row))
        if token == runner.special.eot:
            break
        out.append(token)
        logits = state.append([token])
    stats.verifier_passes = state.passes
    stats.verifier_seconds = time.perf_counter() - t0
    return DecodeResult(out, runner.decode_text(out), gaps, stats)


@dataclass
class _Verdict:
    """What one verifier pass made of a draft."""

    path: list[int]  # accepted draft nodes, in order
    correction: int | None  # the verifier's token after them (at a mismatch, or a bonus token); None: none taken
    finished: bool  # end of text was accepted
    refused: list[int]  # the drafted continuation refused at the mismatch (down its first children)
    logits: object  # raw logits after the path: the next chunk of a chunked draft is checked against them


class SpeculativeDecoder:
    """Drafter + verifier decoding whose output equals the verifier's greedy decoding."""

    def __init__(
        self, drafter: WhisperRunner, verifier: WhisperRunner, options: SpeculativeOptions | None = None
    ) -> None:
        self.drafter = drafter
        self.verifier = verifier
        self.options = options or SpeculativeOptions()
        self.same_tokenizer = (drafter.vocab_size == verifier.vocab_size
                               and drafter.tokenizer.to_str() == verifier.tokenizer.to_str())

    # -- the public call ------------------------------------------------------------------------
    def encode(self, audio: np.ndarray) -> tuple:
        """Both encoders' outputs for one window (to share between decodes of the same audio)."""
        return self.verifier.encode(audio), self.drafter.encode(audio)

    def decode(self, audio: np.ndarray | None, previous_text: str = "", language: str | None = "en",
               previous_tokens: list[int] | None = None, encoder_outputs: tuple | None = None) -> DecodeResult:
        """Transcribe one window. ``previous_tokens`` (verifier tokens of the last transcript of this
        window's audio, e.g. the previous streaming update) is verified first as a free draft.
        ``encoder_outputs`` (from :meth:`encode`) skips the encoders; its drafter part may be None,
        and the drafter's encoder then runs on ``audio`` only if drafting is needed (see
        ``SpeculativeOptions.lazy_drafter``)."""
        opts, v = self.options, self.verifier
        stats = DecodeStats()
        t0 = time.perf_counter()
        venc, denc = encoder_outputs if encoder_outputs is not None else (v.encode(audio), None)
        stats.encoder_seconds = time.perf_counter() - t0
        state = v.start(venc)
        t0 = time.perf_counter()
        prompt = v.prompt(previous_text, language)
        logits = state.append(prompt)
        stats.verifier_seconds += time.perf_counter() - t0

        previous = PreviousTranscript(previous_tokens if opts.reuse_previous else None, opts)
        models = DraftModels(self.drafter, self.verifier, self.same_tokenizer, opts)
        drafter = DrafterSource(models, audio, denc, previous_text, language)
        limit = min(opts.max_new_tokens, v.max_target_positions - len(prompt) - 1)
        out, gaps = self._verify_loop(state, logits, (previous, drafter.recycled, drafter), limit, stats)
        stats.verifier_passes = state.passes
        stats.drafter_steps = drafter.steps
        stats.drafter_seconds += drafter.seconds
        stats.encoder_seconds += drafter.encoder_seconds
        return DecodeResult(out, v.decode_text(out), gaps, stats)

    # -- the verify loop ------------------------------------------------------------------------
    def _verify_loop(self, state: DecoderState, logits, sources: tuple[DraftSource, ...], limit: int,
                     stats: DecodeStats) -> tuple[list[int], list[float]]:
        """Round after round, the first source with a draft proposes it, one verifier pass keeps the
        verifier's own tokens, and the source learns what became of its draft. ``logits`` are the
        verifier's raw logits after its cache. Returns the tokens and their top-2 gaps."""
        out: list[int] = []
        gaps: list[float] = []
        carry: list[int] = []  # accepted tokens not yet in the verifier's cache (the last correction)
        while len(out) < limit:
            stats.rounds += 1
            source, draft = first_draft(sources, out)
            draft = draft.clip(max(0, limit - len(out)))
            t0 = time.perf_counter()
            verdict = self._verify(state, carry, logits, draft, out, gaps, limit, source.chunked)
            stats.verifier_seconds += time.perf_counter() - t0
            self._count(stats, source.kind, draft, verdict.path)
            source.accepted(verdict.path)
            if verdict.finished or verdict.correction == self.verifier.special.eot or len(out) >= limit:
                break
            if verdict.correction is None:  # a chunk accepted whole: the next one is checked against its last row
                logits, carry = verdict.logits, []
                continue
            out.append(verdict.correction)
            logits, carry = None, [verdict.correction]
            source.refused(verdict.refused, out)
        return out, gaps

    def _verify(self, state: DecoderState, carry: list[int], logits, draft: DraftTree, out: list[int],
                gaps: list[float], limit: int, chunked: bool) -> _Verdict:
        """One verifier pass over ``carry`` and every draft node; follows the verifier's argmax down
        the tree, appending accepted tokens to ``out`` and every judged row's gap to ``gaps``, and
        cuts the cache back to carry + the accepted path. After a fully accepted ``chunked`` draft
        no bonus token is taken (the draft's next chunk is checked against that row instead)."""
        v = self.verifier
        cached = len(state)
        if carry or len(draft):
            parents = None  # a plain causal pass
            if not draft.is_linear:  # carry is a chain; the tree's roots hang from its last token
                parents = list(range(-1, len(carry) - 1)) + [
                    p + len(carry) if p >= 0 else len(carry) - 1 for p in draft.parents]
            rows = state.append(carry + draft.tokens, logits_from=0, parents=parents)
            root_row = logits if not carry else rows[len(carry) - 1]
        else:
            rows, root_row = None, logits
        children = draft.children()
        path: list[int] = []  # accepted nodes
        node = -1
        correction = None
        finished = False
        while True:
            row = v.process((root_row if node < 0 else rows[len(carry) + node]).clone(), first_step=not out)
            best = int(row.argmax())
            follow = children.get(node, {}).get(best)
            if follow is None:
                if children.get(node) or not chunked:
                    correction = best  # a mismatch, or the bonus token after a fully accepted path
                    gaps.append(_top2_gap(row))
                break
            gaps.append(_top2_gap(row))
            path.append(follow)
            node = follow
            if best == v.special.eot:
                finished = True
                break
            out.append(best)
            if len(out) >= limit:
                break
        mismatched = children.get(node)
        refused = draft.chain(next(iter(mismatched.values()))) if mismatched else []
        state.keep(cached + len(carry), path)
        return _Verdict(path, correction, finished, refused, root_row if node < 0 else rows[len(carry) + node])

    @staticmethod
    def _count(stats: DecodeStats, kind: DraftKind, draft: DraftTree, path: list[int]) -> None:
        proposed = draft.trunk_size
        accepted = sum(1 for node in path if node < draft.trunk_size)
        if not draft.is_linear:
            stats.tree_rounds += 1
            stats.branch_proposed += len(draft) - draft.trunk_size
            stats.branch_accepted += len(path) - accepted
        if kind is DraftKind.PREVIOUS:
            stats.previous_proposed += proposed
            stats.previous_accepted += accepted
        elif kind is DraftKind.RECYCLED:
            stats.recycled_proposed += proposed
            stats.recycled_accepted += accepted
        else:
            stats.draft_proposed += proposed
            stats.draft_accepted += accepted
