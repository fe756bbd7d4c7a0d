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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .runtime import DecoderState, WhisperRunner, _torch
from .tree import DraftTree

NEAR_TIE = 0.05  # top-2 logit gaps below this are near-ties: batched and single passes may order them differently


@dataclass
class SpeculativeOptions:
    """Knobs of :class:`SpeculativeDecoder`."""

    threshold: float = 0.4  # stop drafting at a token the drafter is less sure of than this
    max_draft: int = 24
    adaptive: bool = True  # False: always draft max_draft tokens
    recycle: bool = True  # re-use the rejected draft's tail when the drafter re-joins it
    reuse_previous: bool = True  # cross-update recycling: the previous transcript is the first draft
    max_verify: int = 48  # most tokens of a recycled draft verified in one pass
    sparse_tree: bool = False  # also draft the runner-up at the first unsure position; verify both in one pass
    branch_draft: int = 8  # most tokens on that branch
    lazy_drafter: int = 8  # with a previous transcript, tokens the verifier decodes alone before drafting starts
    max_new_tokens: int = 220


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

    def add(self, other: "DecodeStats") -> None:
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


class SpeculativeDecoder:
    """Drafter + verifier decoding whose output equals the verifier's greedy decoding."""

    def __init__(self, drafter: WhisperRunner, verifier: WhisperRunner, options: SpeculativeOptions | None = None) -> None:
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
        opts = self.options
        v = self.verifier
        stats = DecodeStats()
        t0 = time.perf_counter()
        venc, denc = encoder_outputs if encoder_outputs is not None else (v.encode(audio), None)
        stats.encoder_seconds = time.perf_counter() - t0

        vstate = v.start(venc)
        t0 = time.perf_counter()
        vprompt = v.prompt(previous_text, language)
        vlogits = vstate.append(vprompt)
        stats.verifier_seconds += time.perf_counter() - t0
        pending = list(previous_tokens or []) if opts.reuse_previous else []
        drafter: _DrafterSync | None = None
        # with a previous transcript to verify, the drafter (its encoder, its prompt) starts only once
        # the verifier has decoded lazy_drafter tokens beyond it by itself
        verifier_only = opts.lazy_drafter if pending else 0
        guessed = guess_failed = False  # the pending tail is a guess (recycled without the drafter's check)

        def start_drafter() -> _DrafterSync:
            nonlocal denc
            d = self.drafter
            t0 = time.perf_counter()
            if denc is None:
                if audio is None:
                    raise ValueError("the drafter's encoder output or the audio is needed")
                denc = d.encode(audio)
            stats.encoder_seconds += time.perf_counter() - t0
            t0 = time.perf_counter()
            dstate = d.start(denc)
            dprompt = d.prompt(previous_text, language)
            dlogits = dstate.append(dprompt)
            stats.drafter_seconds += time.perf_counter() - t0
            return _DrafterSync(self, dstate, len(dprompt), dlogits)

        out: list[int] = []
        gaps: list[float] = []
        carry: list[int] = []  # accepted tokens not yet in the verifier's cache (the last correction)
        limit = min(opts.max_new_tokens, v.max_target_positions - len(vprompt) - 1)
        pending_kind = "previous" if pending else ""
        finished = False
        while len(out) < limit and not finished:
            stats.rounds += 1
            # 1. the draft: recycled tokens if there are any, else the drafter's proposal (a sparse tree)
            if pending:
                chunk, kind = pending[: opts.max_verify], pending_kind
                pending = pending[opts.max_verify:] if kind == "previous" else []
                draft = DraftTree.linear(chunk)
            elif drafter is None and verifier_only > 0:
                verifier_only -= 1  # the verifier's own next token, from the pass over the carry
                draft, kind = DraftTree(), "draft"
            else:
                drafter = drafter or start_drafter()
                t0 = time.perf_counter()
                draft = drafter.propose(out)
                stats.drafter_seconds += time.perf_counter() - t0
                kind = "draft"
            draft = draft.clip(max(0, limit - len(out)))
            # 2. one verifier pass over carry + every draft node
            t0 = time.perf_counter()
            cached = len(vstate)
            if carry or len(draft):
                parents = None  # a plain causal pass
                if not draft.is_linear:  # carry is a chain; the tree's roots hang from its last token
                    parents = list(range(-1, len(carry) - 1)) + [
                        p + len(carry) if p >= 0 else len(carry) - 1 for p in draft.parents]
                rows = vstate.append(carry + draft.tokens, logits_from=0, parents=parents)
                root_row = vlogits if not carry else rows[len(carry) - 1]
            else:
                rows, root_row = None, vlogits
            children = draft.children()
            path: list[int] = []  # accepted nodes
            node = -1
            correction = None
            while True:
                row = v.process((root_row if node < 0 else rows[len(carry) + node]).clone(), first_step=not out)
                best = int(row.argmax())
                follow = children.get(node, {}).get(best)
                if follow is None:
                    if children.get(node) or kind != "previous" or not pending:
                        correction = best  # a mismatch, or the bonus token after a fully accepted path
                        gaps.append(_top2_gap(row))
                    break  # else the previous transcript's next chunk is checked against this row
                gaps.append(_top2_gap(row))
                path.append(follow)
                node = follow
                if best == v.special.eot:
                    finished = True
                    break
                out.append(best)
                if len(out) >= limit:
                    break
            self._count(stats, kind, draft, path)
            guess_failed = guess_failed or (guessed and not path)  # one wrong guess: no more guessing
            guessed = False
            if finished:
                break
            if correction is None and kind == "previous" and pending and len(out) < limit:
                # the previous transcript goes on: its next chunk is checked against the last row
                vstate.keep(cached + len(carry), path)
                vlogits = rows[len(carry) + node]
                carry = []
                stats.verifier_seconds += time.perf_counter() - t0
                continue
            rejected_tail: list[int] = []
            mismatched = children.get(node)
            if mismatched:  # the drafted continuation the verifier refused, for recycling
                rejected_tail = draft.chain(next(iter(mismatched.values())))
                if kind == "previous":
                    rejected_tail += pending
                    pending = []
            vstate.keep(cached + len(carry), path)
            carry = []
            stats.verifier_seconds += time.perf_counter() - t0
            if correction is None or correction == v.special.eot or len(out) >= limit:
                break
            out.append(correction)
            carry = [correction]
            vlogits = None
            # 3. recycling: does the drafter re-join the rejected draft? (Without a drafter yet, the
            # previous transcript's tail is tried as if the correction replaced one token: the pass
            # yields the verifier's next token either way.)
            if opts.recycle and len(rejected_tail) > 1:
                if drafter is None:
                    if not guess_failed:
                        pending, pending_kind, guessed = rejected_tail[1:], "previous", True
                    continue
                t0 = time.perf_counter()
                joined = drafter.rejoin(out, rejected_tail)
                stats.drafter_seconds += time.perf_counter() - t0
                if joined:
                    pending, pending_kind = joined, ("previous" if kind == "previous" else "recycled")
        stats.verifier_passes = vstate.passes
        stats.drafter_steps = drafter.state.passes if drafter else 0
        return DecodeResult(out, v.decode_text(out), gaps, stats)

    @staticmethod
    def _count(stats: DecodeStats, kind: str, draft: DraftTree, path: list[int]) -> None:
        proposed = draft.trunk_size
        accepted = sum(1 for node in path if node < draft.trunk_size)
        if not draft.is_linear:
            stats.tree_rounds += 1
            stats.branch_proposed += len(draft) - draft.trunk_size
            stats.branch_accepted += len(path) - accepted
        if kind == "previous":
            stats.previous_proposed += proposed
            stats.previous_accepted += accepted
        elif kind == "recycled":
            stats.recycled_proposed += proposed
            stats.recycled_accepted += accepted
        else:
            stats.draft_proposed += proposed
            stats.draft_accepted += accepted


class _DrafterSync:
    """The drafter's cache, kept in step with the verified text (through text when tokenizers differ)."""

    def __init__(self, decoder: SpeculativeDecoder, state: DecoderState, prompt_len: int, logits) -> None:
        self.decoder = decoder
        self.state = state
        self.prompt_len = prompt_len
        self.logits = logits  # predicts the token after state.tokens

    def _target(self, verified: list[int]) -> list[int]:
        """Drafter tokens for the verified verifier tokens."""
        dec = self.decoder
        if dec.same_tokenizer:
            return list(verified)
        return dec.drafter.encode_text(dec.verifier.decode_text(verified)) if verified else []

    def sync(self, verified: list[int]) -> None:
        """Make the drafter's cache hold exactly the verified text."""
        target = self._target(verified)
        current = self.state.tokens[self.prompt_len:]
        common = 0
        for a, b in zip(current, target):
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
        d = self.decoder.drafter
        torch = _torch()
        row = d.process(self.logits.clone(), first_step=first_step)
        probs = torch.softmax(row, dim=-1)
        top = probs.topk(2)
        return int(top.indices[0]), float(top.values[0]), int(top.indices[1])

    def _extend(self, tokens: list[int], first_step: bool, limit: int, branch: bool) -> tuple[bool, tuple | None]:
        """Draft greedily onto ``tokens`` (and the cache) until the drafter is unsure or ``limit``.
        Returns (ended with end-of-text, (position, runner-up) of the first unsure token when
        ``branch``: drafting then goes on through it, and stops at the next unsure one)."""
        opts = self.decoder.options
        eot = self.decoder.drafter.special.eot
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
        dec = self.decoder
        d, v = dec.drafter, dec.verifier
        if dec.same_tokenizer:
            draft = list(drafted)
        elif drafted:
            full = v.encode_text(verified_text + d.decode_text(drafted))
            draft = full[len(verified):] if full[: len(verified)] == verified else v.encode_text(
                d.decode_text(drafted))
        else:
            draft = []
        return draft + [v.special.eot] if ends else draft

    def propose(self, verified: list[int]) -> DraftTree:
        """Draft from the verified text: adaptive length, mapped to verifier tokens. With the sparse
        tree on, the first unsure position also gets a branch: the drafter's runner-up token,
        continued greedily (the second drafting pass)."""
        dec, opts = self.decoder, self.decoder.options
        d, v = dec.drafter, dec.verifier
        self.sync(verified)
        start = len(self.state.tokens)
        trunk: list[int] = []
        ends, fork = self._extend(trunk, not verified, opts.max_draft, branch=opts.sparse_tree)
        text = v.decode_text(verified) if not dec.same_tokenizer else ""
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

    def rejoin(self, verified: list[int], rejected: list[int]) -> list[int]:
        """The part of a rejected draft to verify again, if the drafter's next token re-joins it.

        ``rejected`` starts at the mismatched draft token. The verifier's correction
        replaced it (substitution: re-join at offset 1), came before it (insertion:
        offset 0) or replaced two tokens (offset 2).
        """
        if not rejected:
            return []
        self.sync(verified)
        token, _, _ = self._next(first_step=False)
        dec = self.decoder
        if not dec.same_tokenizer:
            text = dec.drafter.decode_text([token]) if token != dec.drafter.special.eot else None
            if text is None:
                return []
            mapped = dec.verifier.encode_text(text)
            if not mapped:
                return []
            token = mapped[0]
        for offset in (1, 0, 2):
            if offset < len(rejected) and rejected[offset] == token:
                return rejected[offset:]
        return []
