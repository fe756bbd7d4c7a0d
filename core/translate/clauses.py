"""Clause pieces: a long sentence cut where it pauses (after , ; : and after a sentence's end inside
a line), for a small model to translate piece by piece.

The bundled 270M base model copies long English sentences untranslated but translates their
clauses, so translating the clauses one by one gives better translations and fewer sentences left
in English (``sotto bench prompts``, docs/BENCHMARKS.md). A cut is made
only where both sides have at least :data:`MIN_WORDS` words, so a piece is never a lone "he
said" or a number, and the last piece of a growing sentence always has that many words.
"""

from __future__ import annotations

import re
from collections import OrderedDict

MIN_WORDS = 4
_CUT = re.compile(r"(?<=[,;:])\s+")
# a sentence's end inside the text (. ! ? … with closing quotes or brackets, then a space): a line of
# several sentences ("Yeah. Okay, so let's go." or a paragraph of a transcript) is cut there too
_SENTENCE_CUT = re.compile(r"[.!?…][\"'”’»)\]]*\s+")
# a full stop that ends no sentence: a title or Latin abbreviation, an initial ("J."), an initialism ("U.S.")
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st jr sr mt vs etc approx no fig e.g i.e cf".split())


def _sentence_parts(text: str) -> list[str]:
    """``text`` cut after each sentence end that is not an abbreviation's full stop."""
    parts, start = [], 0
    for m in _SENTENCE_CUT.finditer(text):
        if _in_quotation(text[:m.end()]):  # 'you're thinking, "Yeah! Give me …"' is one sentence
            continue
        if m.group(0)[0] == ".":
            word = text[start:m.start()].split()[-1:] or [""]
            word = word[0].lstrip("\"'“‘„«([").lower()
            if word in _ABBREVIATIONS or len(word) == 1 or "." in word:
                continue
        parts.append(text[start:m.end()].strip())
        start = m.end()
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def sentence_parts(text: str) -> list[str]:
    """``text`` cut into its sentences (:func:`_sentence_parts`)."""
    return _sentence_parts(" ".join(text.split()))


def _in_quotation(text: str) -> bool:
    """Whether ``text`` ends inside a quotation: an odd number of straight double quotes, or more
    opening curly or angle quotes than closing ones."""
    return text.count('"') % 2 == 1 or text.count("“") + text.count("«") > text.count("”") + text.count("»")


def clause_pieces(source: str, min_words: int = MIN_WORDS, sentences: bool = True) -> list[str]:
    """``source`` cut after each sentence end (``sentences``) and after each comma, semicolon or colon,
    where both sides have at least ``min_words`` words (a short part joins the piece before it); one
    piece if none."""
    pieces: list[str] = []
    parts = _sentence_parts(source.strip()) if sentences else [source.strip()]
    for part in (p for sentence in parts for p in _CUT.split(sentence)):
        if pieces and (len(pieces[-1].split()) < min_words or len(part.split()) < min_words):
            pieces[-1] = f"{pieces[-1]} {part}"
        else:
            pieces.append(part)
    return pieces or [source]


# words a clause often begins with: a sentence with no clause mark near its middle is cut before one
_OPENERS = frozenset(("and", "but", "or", "so", "because", "although", "though", "while", "when", "where",
                      "which", "who", "whom", "whose", "that", "if", "after", "before", "since", "until",
                      "as", "than", "with", "without", "for", "from", "to", "in", "on", "at", "by"))


def halves(source: str, min_words: int = MIN_WORDS) -> tuple[str, str] | None:
    """``source`` cut in two where a reader would pause, for a small model that left it in English or
    dropped most of it: each half has at least ``min_words`` words, and the cut is made in the middle
    half of the sentence after a clause mark, else before a word that begins a clause, else in the
    middle but not inside a name. None for a sentence too short to cut."""
    words = source.split()
    n = len(words)
    if n < 2 * min_words:
        return None
    cuts = range(min_words, n - min_words + 1)  # words[:i] | words[i:]
    middle = [i for i in cuts if n / 4 <= i <= 3 * n / 4] or list(cuts)

    def rank(i: int) -> tuple[int, float]:
        if words[i - 1].endswith((",", ";", ":")) or words[i - 1] in ("-", "–", "—"):
            kind = 0
        elif words[i].lower().strip("\"'“”‘’(") in _OPENERS:
            kind = 1
        elif words[i - 1][:1].isupper() and words[i][:1].isupper():
            kind = 3  # inside a name ("Holly | Willoughby")
        else:
            kind = 2
        return kind, abs(i - n / 2)

    i = min(middle, key=rank)
    return " ".join(words[:i]), " ".join(words[i:])


class PieceMemo:
    """The translations of finished pieces (every piece of a sentence but its last), so a growing
    sentence re-translates only its last piece. Keyed by languages and text; the oldest go first."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str, str], object] = OrderedDict()

    def get(self, key: tuple[str, str, str]):
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    def put(self, key: tuple[str, str, str], value) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
