"""The knobs of the speculative decoder, read by its verify loop (:mod:`.decoder`) and its draft
sources (:mod:`.drafts`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SpeculativeOptions:
    """Knobs of :class:`~.decoder.SpeculativeDecoder`."""

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
