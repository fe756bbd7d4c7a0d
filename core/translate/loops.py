"""Loops in a translation being generated: where greedy decoding of a small model repeats itself.

Small models fall into loops under greedy decoding ("你所做的事情，你所做的事情，…", "so so so so",
"in thine own bud, in thine own bud,"). Generation stops at a loop and keeps its first occurrence.
Every rule here is deterministic and sees only the tokens already produced, so every engine that
applies it (greedy, SSBD at any β) still reproduces the same greedy output.
"""

from __future__ import annotations

import re

# A phrase repeated back to back is a loop from this many words on (one word twice is often
# meant: "very very", "ja, ja"); three times for one word is :func:`repeated_word`'s rule.
PHRASE_MIN_WORDS = 2
PHRASE_MAX_TOKENS = 32

_NOT_WORD = re.compile(r"[^\w]+")


def repetition_span(tokens: list[int], repeats: int = 3, max_span: int = 16) -> int:
    """Length L of a span the tail repeats ``repeats`` times in a row (0 if none).

    One token counts only after six in a row ("…" or "!!!" is not a loop)."""
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


def word_key(piece: str) -> str:
    """What a token's text is compared by: lower case, without spaces and punctuation (digits kept,
    so "page 12 of it, page 13 of it" is no loop; "bud," and "bud." are the same words)."""
    return _NOT_WORD.sub("", piece).lower().replace("_", "")


def _words_in(pieces: list[str]) -> int:
    """How many words the token texts ``pieces`` start: a token with a letter or digit that begins
    with a space, and the first one. Scripts written without spaces (Chinese, Japanese) count as
    one word, so their reduplications ("一步一步", "看看") are never cut by this rule."""
    count = 0
    for i, piece in enumerate(pieces):
        if word_key(piece) and (i == 0 or piece[:1].isspace()):
            count += 1
    return count


def repeated_phrase(pieces: list[str], min_words: int = PHRASE_MIN_WORDS,
                    max_tokens: int = PHRASE_MAX_TOKENS) -> int:
    """Number of tail tokens that repeat, back to back, the same number of tokens before them, where
    that span holds at least ``min_words`` words (0 if none). ``pieces`` are the output tokens'
    texts, leading spaces included (:meth:`LlamaRunner.piece_of`). Found on a Shakespeare sonnet:
    "within thine own bud buriest thy content" came out as "in thine own bud, in thine own bud,",
    a loop that the word and token rules (three times) let through."""
    keys = [word_key(p) for p in pieces]
    n = len(keys)
    for span in range(2, min(max_tokens, n // 2) + 1):
        if keys[n - span:] != keys[n - 2 * span:n - span]:
            continue
        if _words_in(pieces[n - span:]) >= min_words:
            return span
    return 0


def has_repeated_phrase(text: str, min_words: int = PHRASE_MIN_WORDS) -> bool:
    """Whether ``text`` (a source sentence) itself repeats a phrase of ``min_words`` or more words
    back to back ("New York, New York"): its translation may then say it twice too."""
    words = [w for w in (word_key(t) for t in text.split()) if w]
    for span in range(min_words, len(words) // 2 + 1):
        for end in range(2 * span, len(words) + 1):
            if words[end - span:end] == words[end - 2 * span:end - span]:
                return True
    return False


def holds_phrase_loop(pieces: list[str]) -> bool:
    """Whether a finished output holds a phrase loop anywhere (for benchmarks): a prefix at which
    :func:`repeated_phrase` would have cut generation."""
    return any(repeated_phrase(pieces[:end]) for end in range(4, len(pieces) + 1))
