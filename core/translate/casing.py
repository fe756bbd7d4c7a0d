"""English typed in lower case ("anything else i can help with today?", a chat log or subtitles) written
as a transcript writes it before the translator reads it: each sentence's first letter and the pronoun
"I" capitalised, where the text shows it was typed so (:func:`typed_in_lower_case`).

Whisper writes sentences so, and so do the prompt's examples. In lower case the bundled 270M model
reads a sentence as a fragment and goes on in English ("anything else i can help with today?" → "was
else can i help with today?"; written as a sentence: "Was kann ich noch tun?"). Nothing else is
changed: a name written in lower case stays so.
"""

from __future__ import annotations

import re

from .clauses import sentence_parts

_PRONOUN = re.compile(r"(?<![\w'’-])i(?=$|[\s'’,.!?;:])")


def as_written(source: str, source_lang: str = "en") -> str:
    """``source`` (English) with each sentence's first letter and the pronoun "i" ("i", "i'm", "i'll")
    capitalised; other languages as they are."""
    if source_lang != "en" or not typed_in_lower_case(source):
        return source
    text = _PRONOUN.sub(lambda m: m.group(0) if _spelled(source, m.start()) else "I", source)
    parts = sentence_parts(text)
    return " ".join(first_upper(p) for p in parts) if parts else text


def typed_in_lower_case(text: str) -> bool:
    """``text`` shows it was typed in lower case, as a transcript never writes it: the pronoun "i" in
    lower case, or a sentence after the first beginning in lower case ("ok. let me look"). A line that
    merely begins in lower case does not: a transcript's line can go on from the one before it ("and
    I have two options for you.")."""
    if any(not _spelled(text, m.start()) for m in _PRONOUN.finditer(text)):
        return True
    return any(first_upper(p) != p for p in sentence_parts(text)[1:])


def _spelled(text: str, at: int) -> bool:
    """The letter at ``at`` is one of a word spelled out letter by letter ("s m i t h"): a letter alone
    next to it."""
    before, after = text[:at].split()[-1:], text[at + 1:].split()[:1]
    return any(len(w.strip(".,!?")) == 1 and w.strip(".,!?").isalpha() for w in before + after)


def first_upper(sentence: str) -> str:
    """``sentence`` with its first letter (after quotes or brackets) in upper case where its first word
    is all in lower case ("iPhone" stays)."""
    for i, ch in enumerate(sentence):
        if ch.isalpha():
            word = re.match(r"[\w'’-]+", sentence[i:]).group(0)
            return sentence[:i] + ch.upper() + sentence[i + 1:] if word.islower() else sentence
        if ch.isdigit():
            return sentence
    return sentence
