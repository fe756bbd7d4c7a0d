"""Lookup drafts: guesses for the tokens greedy decoding is about to produce, read from text it has
seen (prompt lookup decoding, as in llama.cpp's ``lookup`` example and SSBD's future work).

Where a translation goes past the end of its draft (the previous translation) it translates the
words the source just gained; names, numbers and words a small model leaves in English are copied
from the source, token for token ("Welsh Parliament", "MW|Ps", "Yorkshire"). The last tokens
written are looked up in the source's tokens and in the draft; what followed them there is the
guess. The guess is checked like any draft, at β = 0 (kept only where greedy decoding agrees), so
it changes the speed of decoding, never its output.
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_MATCH = 2  # tokens of context that must match (measured on NTREX: one token guesses wrong too often)
MAX_MATCH = 3
MAX_GUESS = 6  # with the token being evaluated, one call of at most SMALL_CHUNK (7) tokens


def lookup_guess(written: Sequence[int], pools: Sequence[Sequence[int]], max_guess: int = MAX_GUESS,
                 min_match: int = MIN_MATCH, max_match: int = MAX_MATCH) -> list[int]:
    """What followed the longest tail of ``written`` (``max_match`` down to ``min_match`` tokens)
    in the first pool holding it, at its last occurrence there: up to ``max_guess`` tokens, or []."""
    if max_guess <= 0:
        return []
    for n in range(min(max_match, len(written)), min_match - 1, -1):
        tail = list(written[-n:])
        for pool in pools:
            for start in range(len(pool) - n - 1, -1, -1):  # the last occurrence with something after it
                if pool[start] == tail[0] and list(pool[start:start + n]) == tail:
                    return list(pool[start + n:start + n + max_guess])
    return []
