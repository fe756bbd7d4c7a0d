"""Flicker metrics: normalized erasure (NE) over a stream of displayed texts.

NE (Arivazhagan et al., 2020; used by the SSBD paper): for consecutive outputs
o_{i-1}, o_i the erasure is |o_{i-1}| − |LCP(o_{i-1}, o_i)| tokens; NE is the
sum over the stream divided by the length of the final output. Tokens are
whitespace words, except for Chinese, Japanese and Korean, which are counted
per character (the SSBD paper counts sacrebleu's flores101 SentencePiece
tokens; that model is downloaded at run time, which Sotto cannot do offline,
so characters, sacrebleu's own Chinese tokenisation, stand in for it).
"""

from __future__ import annotations

import re
from itertools import pairwise

from ..text import common_prefix_len, tokenize


def erasure(previous: list[str], current: list[str]) -> int:
    """Tokens of ``previous`` that ``current`` erased."""
    return len(previous) - common_prefix_len(previous, current)


def normalized_erasure(outputs: list[list[str]]) -> float:
    """NE of a stream of tokenised outputs (0 when the final output is empty)."""
    if not outputs or not outputs[-1]:
        return 0.0
    total = sum(erasure(prev, cur) for prev, cur in pairwise(outputs))
    return total / len(outputs[-1])


class ErasureMeter:
    """Accumulates NE incrementally (without keeping every state)."""

    def __init__(self, lang: str | None = None) -> None:
        self.lang = lang
        self._previous: list[str] = []
        self.erased = 0
        self.updates = 0

    def add(self, text: str) -> None:
        """Record the next displayed text."""
        tokens = tokenize(text, self.lang)
        if self.updates:
            self.erased += erasure(self._previous, tokens)
        self._previous = tokens
        self.updates += 1

    @property
    def final_length(self) -> int:
        """Tokens in the latest text."""
        return len(self._previous)

    @property
    def value(self) -> float:
        """NE so far (relative to the latest text)."""
        return self.erased / self.final_length if self.final_length else 0.0


class LineErasureMeter:
    """NE of a display that shows lines on rows of their own: each state is a mapping from a
    line's key to its text, and a line's erasure is counted within that line (a line that
    disappears erases all its tokens); divided, like NE, by the tokens of the latest state."""

    def __init__(self, lang: str | None = None) -> None:
        self.lang = lang
        self._previous: dict = {}
        self.erased = 0
        self.updates = 0

    def add(self, lines: dict) -> None:
        """Record the next displayed state (``{key: text}``)."""
        tokens = {key: tokenize(text, self.lang) for key, text in lines.items()}
        self.erased += sum(erasure(prev, tokens.get(key, [])) for key, prev in self._previous.items())
        self._previous = tokens
        self.updates += 1

    @property
    def final_length(self) -> int:
        """Tokens in the latest state."""
        return sum(len(t) for t in self._previous.values())

    @property
    def value(self) -> float:
        """NE so far, per line (relative to the latest state)."""
        return self.erased / self.final_length if self.final_length else 0.0


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER of two already-normalised strings (word-level Levenshtein / reference length)."""
    ref, hyp = reference.split(), hypothesis.split()
    if not ref:
        return 0.0 if not hyp else 1.0
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1] / len(ref)


_NUMBERS = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six",
            "7": "seven", "8": "eight", "9": "nine", "10": "ten"}


def normalize_english(text: str) -> str:
    """Lower case, no punctuation, hyphens split, small numbers spelled: for comparing transcripts."""
    text = text.lower().replace("’", "'")
    text = re.sub(r"[-‐–—/]", " ", text)
    text = re.sub(r"[^\w\s']", " ", text)
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)
    words = [_NUMBERS.get(w, w) for w in text.split()]
    return " ".join(words)
