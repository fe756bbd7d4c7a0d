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

Drafter and verifier may use different tokenizers (tiny.en and base do): drafts
are mapped through text, and the drafter is re-synchronised to the verified text
after each round. Same-tokenizer pairs skip the mapping.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .runtime import DecoderState, WhisperRunner, _torch

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
        ``encoder_outputs`` (from :meth:`encode`) skips the encoders."""
        opts = self.options
        v, d = self.verifier, self.drafter
        stats = DecodeStats()
        t0 = time.perf_counter()
        venc, denc = encoder_outputs if encoder_outputs is not None else self.encode(audio)
        stats.encoder_seconds = time.perf_counter() - t0

        vstate = v.start(venc)
        t0 = time.perf_counter()
        vprompt = v.prompt(previous_text, language)
        vlogits = vstate.append(vprompt)
        stats.verifier_seconds += time.perf_counter() - t0
        dstate = d.start(denc)
        t0 = time.perf_counter()
        dprompt = d.prompt(previous_text, language)
        dlogits = dstate.append(dprompt)
        stats.drafter_seconds += time.perf_counter() - t0
        drafter = _DrafterSync(self, dstate, len(dprompt), dlogits)

        out: list[int] = []
        gaps: list[float] = []
        carry: list[int] = []  # accepted tokens not yet in the verifier's cache (the last correction)
        limit = min(opts.max_new_tokens, v.max_target_positions - len(vprompt) - 1)
        pending = list(previous_tokens or []) if opts.reuse_previous else []
        pending_kind = "previous" if pending else ""
        finished = False
        while len(out) < limit and not finished:
            stats.rounds += 1
            # 1. the draft: recycled tokens if there are any, else the drafter's proposal
            if pending:
                draft, kind = pending[: opts.max_verify], pending_kind
                pending = pending[opts.max_verify:] if kind == "previous" else []
            else:
                t0 = time.perf_counter()
                draft = drafter.propose(out)
                stats.drafter_seconds += time.perf_counter() - t0
                kind = "draft"
            draft = draft[: max(0, limit - len(out))]
            # 2. one verifier pass over carry + draft
            t0 = time.perf_counter()
            feed = carry + draft
            if feed:
                rows = vstate.append(feed, logits_from=0)
                rows_for_draft = [vlogits if not carry else rows[len(carry) - 1]] + [
                    rows[len(carry) + i] for i in range(len(draft))]
            else:
                rows_for_draft = [vlogits]
            carry = []
            accepted = 0
            correction = None
            for i, token in enumerate(draft):
                row = v.process(rows_for_draft[i].clone(), first_step=not out)
                best = int(row.argmax())
                gaps.append(_top2_gap(row))
                if best != token:
                    correction = best
                    break
                accepted += 1
                if token == v.special.eot:
                    finished = True
                    break
                out.append(token)
            self._count(stats, kind, len(draft), accepted)
            if finished:
                break
            if correction is None and accepted == len(draft) and kind == "previous" and pending:
                # the previous transcript goes on: its next chunk is checked against the last row
                vlogits = rows_for_draft[len(draft)]
                stats.verifier_seconds += time.perf_counter() - t0
                continue
            if correction is None and accepted == len(draft):
                # everything accepted: the last row predicts the next token
                row = v.process(rows_for_draft[len(draft)].clone(), first_step=not out)
                correction = int(row.argmax())
                gaps.append(_top2_gap(row))
            else:
                rejected_tail = draft[accepted + 1:]
                if kind == "previous":
                    rejected_tail = rejected_tail + pending
                    pending = []
            vstate.truncate(len(vprompt) + len(out))
            stats.verifier_seconds += time.perf_counter() - t0
            if correction == v.special.eot:
                break
            out.append(correction)
            carry = [correction]
            vlogits = None
            # 3. recycling: does the drafter re-join the rejected tail?
            if opts.recycle and accepted < len(draft) and rejected_tail:
                t0 = time.perf_counter()
                joined = drafter.rejoin(out, draft[accepted:accepted + 1] + rejected_tail)
                stats.drafter_seconds += time.perf_counter() - t0
                if joined:
                    pending, pending_kind = joined, ("previous" if kind == "previous" else "recycled")
        stats.verifier_passes = vstate.passes
        stats.drafter_steps = dstate.passes
        return DecodeResult(out, v.decode_text(out), gaps, stats)

    @staticmethod
    def _count(stats: DecodeStats, kind: str, proposed: int, accepted: int) -> None:
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

    def _next(self, first_step: bool):
        d = self.decoder.drafter
        torch = _torch()
        row = d.process(self.logits.clone(), first_step=first_step)
        probs = torch.softmax(row, dim=-1)
        token = int(row.argmax())
        return token, float(probs[token])

    def propose(self, verified: list[int]) -> list[int]:
        """Draft greedily from the verified text: adaptive length, mapped to verifier tokens."""
        dec, opts = self.decoder, self.decoder.options
        d, v = dec.drafter, dec.verifier
        self.sync(verified)
        start = len(self.state.tokens)
        drafted: list[int] = []
        ends = False
        while len(drafted) < opts.max_draft:
            token, confidence = self._next(first_step=not verified and not drafted)
            if opts.adaptive and drafted and confidence < opts.threshold:
                break
            if token == d.special.eot:
                ends = True
                break
            drafted.append(token)
            self.logits = self.state.append([token])
        if dec.same_tokenizer:
            draft = list(drafted)
        elif drafted:
            text = v.decode_text(verified)
            full = v.encode_text(text + d.decode_text(self.state.tokens[start:]))
            draft = full[len(verified):] if full[: len(verified)] == verified else v.encode_text(
                d.decode_text(self.state.tokens[start:]))
        else:
            draft = []
        if ends:
            draft.append(v.special.eot)
        return draft

    def rejoin(self, verified: list[int], rejected: list[int]) -> list[int]:
        """The part of a rejected draft to verify again, if the drafter's next token re-joins it.

        ``rejected`` starts at the mismatched draft token. The verifier's correction
        replaced it (substitution: re-join at offset 1), came before it (insertion:
        offset 0) or replaced two tokens (offset 2).
        """
        if not rejected:
            return []
        self.sync(verified)
        token, _ = self._next(first_step=False)
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
