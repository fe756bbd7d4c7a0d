"""Draft sources: where the speculative decoder's drafts come from.

The verify loop in :mod:`.decoder` knows one interface, :class:`DraftSource`
(the part llama-cpp-python's ``LlamaDraftModel`` plays for ``generate()``):
each round it asks its sources in order for a draft (a :class:`DraftTree` of
verifier tokens), verifies the first one offered in one pass, and tells that
source what became of it. There are three sources, asked in this order:

- :class:`PreviousTranscript`: the previous update's verifier tokens, in chunks
  of ``max_verify``; after a mismatch, its rest as a guess; then up to
  ``lazy_drafter`` empty drafts (the verifier decodes alone) so that the
  drafter need not start for a few new tokens.
- :class:`RecycledTail`: the rest of a refused draft, when the drafter's next
  token re-joins it.
- :class:`DrafterSource`: the drafter itself (started on its first proposal),
  kept in step with the verified text; it always has a draft.

A source's kind (:class:`DraftKind`) says what :class:`DecodeStats` counts its
drafts under. The drafter source reads the two models through :class:`DraftModels`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from .options import SpeculativeOptions
from .runtime import DecoderState, WhisperRunner, _torch
from .tree import DraftTree


@dataclass(frozen=True)
class DraftModels:
    """What the drafter source reads of the decoder: the two models, whether they share a
    tokenizer (then drafts need no mapping through text), and the knobs."""

    drafter: WhisperRunner
    verifier: WhisperRunner
    same_tokenizer: bool
    options: SpeculativeOptions


class DraftKind(Enum):
    """Where a draft came from; the value is the prefix of its ``DecodeStats`` counts."""

    PREVIOUS = "previous"
    RECYCLED = "recycled"
    DRAFTER = "draft"


class DraftSource:
    """One source of drafts for the verify loop."""

    kind: DraftKind

    def propose(self, verified: list[int]) -> DraftTree | None:
        """A draft to follow the ``verified`` verifier tokens, or None when this source has nothing
        now (the next source is asked). An empty tree is a verifier pass without a draft."""
        raise NotImplementedError

    @property
    def chunked(self) -> bool:
        """True when the draft just proposed is one chunk of a longer one: if the verifier accepts
        all of it, the next chunk is checked against its last row (no bonus token in between)."""
        return False

    def accepted(self, path: list[int]) -> None:
        """The accepted nodes of this source's draft (after every pass over one of its drafts)."""

    def refused(self, tail: list[int], verified: list[int]) -> None:
        """The verifier corrected this source's draft and decoding goes on: ``tail`` is the drafted
        continuation it refused (from the mismatched token on; empty after a fully accepted draft),
        ``verified`` the transcript so far, the correction included."""


def first_draft(sources: Sequence[DraftSource], verified: list[int]) -> tuple[DraftSource, DraftTree]:
    """The first source that has a draft, and that draft."""
    for source in sources:
        draft = source.propose(verified)
        if draft is not None:
            return source, draft
    raise ValueError("no draft source has a draft (the drafter always has one)")


class PreviousTranscript(DraftSource):
    """Cross-update recycling: the previous transcript of this window is the first draft.

    It is verified in chunks of ``max_verify``. At a mismatch, before the drafter
    has started, its rest is guessed to go on after the correction as if that
    replaced one token (the pass yields the verifier's next token either way);
    after the first guess with no token accepted there is no more guessing. Once
    it is used up, the verifier decodes up to ``lazy_drafter`` tokens alone (empty
    drafts) before the drafter is asked, so a short update may never start it.
    """

    kind = DraftKind.PREVIOUS

    def __init__(self, tokens: list[int] | None, options: SpeculativeOptions) -> None:
        self.tokens = list(tokens or [])  # not yet verified
        self.max_verify = options.max_verify
        self.recycle = options.recycle
        self.lazy_left = options.lazy_drafter if self.tokens else 0  # empty drafts still to offer
        self.guessed = False  # the draft being verified is a guess
        self.guess_failed = False

    def propose(self, verified: list[int]) -> DraftTree | None:
        if self.tokens:
            chunk, self.tokens = self.tokens[: self.max_verify], self.tokens[self.max_verify:]
            return DraftTree.linear(chunk)
        if self.lazy_left > 0:
            self.lazy_left -= 1
            return DraftTree()  # the verifier's own next token, from its pass over the last correction
        return None

    @property
    def chunked(self) -> bool:
        return bool(self.tokens)

    def accepted(self, path: list[int]) -> None:
        self.guess_failed = self.guess_failed or (self.guessed and not path)
        self.guessed = False

    def refused(self, tail: list[int], verified: list[int]) -> None:
        rest, self.tokens = tail + self.tokens, []
        if self.recycle and len(rest) > 1 and not self.guess_failed:
            self.tokens, self.guessed = rest[1:], True


class RecycledTail(DraftSource):
    """Draft recycling: the rest of a refused draft, verified again when the drafter re-joins it
    (at most ``max_verify`` tokens of it; beyond that the drafter drafts anew)."""

    kind = DraftKind.RECYCLED

    def __init__(self, drafter: DrafterSource, options: SpeculativeOptions) -> None:
        self.drafter = drafter
        self.max_verify = options.max_verify
        self.recycle = options.recycle
        self.tokens: list[int] = []

    def propose(self, verified: list[int]) -> DraftTree | None:
        if not self.tokens:
            return None
        chunk, self.tokens = self.tokens[: self.max_verify], []
        return DraftTree.linear(chunk)

    def refused(self, tail: list[int], verified: list[int]) -> None:
        if self.recycle and len(tail) > 1:
            self.tokens = self.drafter.rejoin(verified, tail)


class DrafterSource(DraftSource):
    """The drafter: drafts greedily from the verified text (a linear draft, or with the sparse tree
    a trunk and one branch). Its encoder and prompt run on its first proposal; its cache is kept in
    step with the verified text (through text when the tokenizers differ). A refused tail of its
    drafts goes to :attr:`recycled`."""

    kind = DraftKind.DRAFTER

    def __init__(self, models: DraftModels, audio: np.ndarray | None, encoder_output,
                 previous_text: str, language: str | None) -> None:
        self.models = models
        self.audio = audio
        self.encoder_output = encoder_output
        self.previous_text = previous_text
        self.language = language
        self.state: DecoderState | None = None  # None until the first proposal
        self.prompt_len = 0
        self.logits = None  # predicts the token after state.tokens
        self.recycled = RecycledTail(self, models.options)
        self.seconds = 0.0  # decoder time: prompt, drafting, re-joining
        self.encoder_seconds = 0.0

    @property
    def steps(self) -> int:
        """The drafter's forward passes."""
        return self.state.passes if self.state is not None else 0

    def propose(self, verified: list[int]) -> DraftTree:
        if self.state is None:
            self._start()
        t0 = time.perf_counter()
        draft = self._draft(verified)
        self.seconds += time.perf_counter() - t0
        return draft

    def refused(self, tail: list[int], verified: list[int]) -> None:
        self.recycled.refused(tail, verified)

    def rejoin(self, verified: list[int], rejected: list[int]) -> list[int]:
        """The part of a rejected draft to verify again, if the drafter's next token re-joins it.

        ``rejected`` starts at the mismatched draft token. The verifier's correction
        replaced it (substitution: re-join at offset 1), came before it (insertion:
        offset 0) or replaced two tokens (offset 2).
        """
        if not rejected:
            return []
        t0 = time.perf_counter()
        try:
            return self._rejoin(verified, rejected)
        finally:
            self.seconds += time.perf_counter() - t0

    # -- the drafter's cache ----------------------------------------------------------------------
    def _start(self) -> None:
        d = self.models.drafter
        t0 = time.perf_counter()
        if self.encoder_output is None:
            if self.audio is None:
                raise ValueError("the drafter's encoder output or the audio is needed")
            self.encoder_output = d.encode(self.audio)
        self.encoder_seconds += time.perf_counter() - t0
        t0 = time.perf_counter()
        self.state = d.start(self.encoder_output)
        prompt = d.prompt(self.previous_text, self.language)
        self.logits = self.state.append(prompt)
        self.prompt_len = len(prompt)
        self.seconds += time.perf_counter() - t0

    def _target(self, verified: list[int]) -> list[int]:
        """Drafter tokens for the verified verifier tokens."""
        models = self.models
        if models.same_tokenizer:
            return list(verified)
        return models.drafter.encode_text(models.verifier.decode_text(verified)) if verified else []

    def sync(self, verified: list[int]) -> None:
        """Make the drafter's cache hold exactly the verified text."""
        target = self._target(verified)
        current = self.state.tokens[self.prompt_len:]
        common = 0
        for a, b in zip(current, target, strict=False):
            if a != b:
                break
            common += 1
        if common == len(current) == len(target):
            return
        if common == len(target):  # the target is a prefix of what is cached: re-feed its last token
            last = self.state.tokens[self.prompt_len + common - 1]
            self.state.truncate(self.prompt_len + common - 1)
            self.logits = self.state.append([last])
            return
        self.state.truncate(self.prompt_len + common)
        self.logits = self.state.append(target[common:])

    def _next(self, first_step: bool) -> tuple[int, float, int]:
        """The drafter's next token, its probability, and the runner-up token."""
        d = self.models.drafter
        torch = _torch()
        row = d.process(self.logits.clone(), first_step=first_step)
        probs = torch.softmax(row, dim=-1)
        top = probs.topk(2)
        return int(top.indices[0]), float(top.values[0]), int(top.indices[1])

    # -- drafting -------------------------------------------------------------------------------------
    def _extend(self, tokens: list[int], first_step: bool, limit: int, branch: bool) -> tuple[bool, tuple | None]:
        """Draft greedily onto ``tokens`` (and the cache) until the drafter is unsure or ``limit``.
        Returns (ended with end-of-text, (position, runner-up) of the first unsure token when
        ``branch``: drafting then goes on through it, and stops at the next unsure one)."""
        opts = self.models.options
        eot = self.models.drafter.special.eot
        fork = None
        while len(tokens) < limit:
            token, confidence, runner_up = self._next(first_step=first_step and not tokens)
            if opts.adaptive and confidence < opts.threshold:
                if branch and fork is None:
                    fork = (len(tokens), runner_up)
                elif tokens:
                    break
            if token == eot:
                return True, fork
            tokens.append(token)
            self.logits = self.state.append([token])
        return False, fork

    def _to_verifier(self, verified: list[int], verified_text: str, drafted: list[int], ends: bool) -> list[int]:
        """Drafter tokens after the verified text → verifier tokens (through text if needed)."""
        models = self.models
        d, v = models.drafter, models.verifier
        if models.same_tokenizer:
            draft = list(drafted)
        elif drafted:
            full = v.encode_text(verified_text + d.decode_text(drafted))
            draft = full[len(verified):] if full[: len(verified)] == verified else v.encode_text(
                d.decode_text(drafted))
        else:
            draft = []
        return draft + [v.special.eot] if ends else draft

    def _draft(self, verified: list[int]) -> DraftTree:
        """Draft from the verified text: adaptive length, mapped to verifier tokens. With the sparse
        tree on, the first unsure position also gets a branch: the drafter's runner-up token,
        continued greedily (the second drafting pass)."""
        models, opts = self.models, self.models.options
        d, v = models.drafter, models.verifier
        self.sync(verified)
        start = len(self.state.tokens)
        trunk: list[int] = []
        ends, fork = self._extend(trunk, not verified, opts.max_draft, branch=opts.sparse_tree)
        text = v.decode_text(verified) if not models.same_tokenizer else ""
        trunk_v = self._to_verifier(verified, text, trunk, ends)
        if fork is None:
            return DraftTree.linear(trunk_v)
        at, runner_up = fork
        branch = trunk[:at]
        if runner_up == d.special.eot:
            branch_ends = True
        else:
            self.state.truncate(start + at)
            branch.append(runner_up)
            self.logits = self.state.append([runner_up])
            branch_ends, _ = self._extend(branch, False, at + opts.branch_draft, branch=False)
        branch_v = self._to_verifier(verified, text, branch, branch_ends)
        return DraftTree.from_paths(trunk_v, [branch_v])

    def _rejoin(self, verified: list[int], rejected: list[int]) -> list[int]:
        self.sync(verified)
        token, _, _ = self._next(first_step=False)
        models = self.models
        if not models.same_tokenizer:
            text = models.drafter.decode_text([token]) if token != models.drafter.special.eot else None
            if text is None:
                return []
            mapped = models.verifier.encode_text(text)
            if not mapped:
                return []
            token = mapped[0]
        for offset in (1, 0, 2):
            if offset < len(rejected) and rejected[offset] == token:
                return rejected[offset:]
        return []
