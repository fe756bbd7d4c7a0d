"""Where a translation left in the source language (:func:`core.translate.quality.is_copy`) began
copying, and which tokens its second decode bans there.

The bundled 270M model copies short, informal sentences whole ("Cheers, y'all.", "Hold on a
second.", "Welcome to CSA in Italy.") and some news sentences from their first word on. Greedy
decoding, once it has written the source's first word, goes on copying; banned from writing that
word there, it usually translates ("Hold on a second." → "Warte einen Moment."). Only the word that
begins the copied run is banned, at that one position, so a name or a number elsewhere (or a
copy-free translation that starts with the same name) is untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def word_starts(pieces: list[str]) -> list[int]:
    """Positions of the tokens (given as their texts) that begin a word: a leading space, the
    first token with a letter or digit, or a letter after punctuation (not after an apostrophe)."""
    starts = []
    for i, piece in enumerate(pieces):
        if not any(ch.isalnum() for ch in piece):
            continue
        before = pieces[i - 1][-1:] if i else ""
        if piece[:1].isspace() or not starts or (not before.isalnum() and before not in "'’"):
            starts.append(i)
    return starts


def copy_start(pieces: list[str], source: str) -> int | None:
    """The position of the token that begins the first copied run of the output (given as its tokens'
    texts): the first word that is a word of ``source``, not a number, and is followed by another
    word of ``source`` (or ends the output), so a name alone at the start of a translation does not
    count. None if there is none."""
    said = set(_words(source))
    starts = word_starts(pieces)
    words = []
    for k, i in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(pieces)
        found = _words("".join(pieces[i:end]))
        words.append(found[0] if found else "")
    for k, i in enumerate(starts):
        # a number is kept where it is ("2 tickets to …" begins copying at "tickets"): banned, the model
        # writes another number ("3 tickets …"), and the retry is spent
        if words[k] in said and not _NUMBER.search(words[k]) and (k + 1 == len(words) or words[k + 1] in said):
            return i
    return None


def copy_bans(tokens: list[int], pieces: list[str], at: int, tokenize: Callable[[str], list[int]]) -> set[int]:
    """The tokens banned at ``at``, where a copied run began: the token there and every single token
    spelling the start of the same word (two letters or more, the same leading space), so the model
    cannot write the word again in other pieces (" Che" + "ers" for " Cheers")."""
    banned = {tokens[at]}
    starts = [i for i in word_starts(pieces) if i > at]
    text = "".join(pieces[at:starts[0] if starts else len(pieces)])
    space = text[:len(text) - len(text.lstrip())]
    word = _WORD.match(text.lstrip())
    if word is None:
        return banned
    for k in range(2, len(word.group(0)) + 1):
        found = tokenize(space + word.group(0)[:k])
        if len(found) == 1:
            banned.add(found[0])
    return banned
