"""Hesitations (um, uh, er, hmm) left out of what the translator reads.

Subtitlers leave them out, and the bundled model gives them back in English ("Um, yeah." → "Um,
yeah."), or takes them for words. Backchannels that mean something ("mm-hmm", "uh-huh") stay.
"""

from __future__ import annotations

import re

# a hesitation as a word of its own (not "umbrella", not the parts of "uh-huh"), with the comma or
# dots that set it off
_HESITATION = re.compile(r"(?<![\w'’-])(?:u+m+|u+h+|u+h+m+|e+r+m*|h+m+)(?![\w'’-])\s*(?:,|\.\.\.|…)?\s*",
                         re.IGNORECASE)


def without_hesitations(source: str, source_lang: str = "en") -> str:
    """``source`` (English) without its hesitations, spaced and capitalised again ("So, um, what do
    you think?" → "So, what do you think?"; "Um, yeah." → "Yeah."); "" when nothing else is said."""
    if source_lang != "en" or not _HESITATION.search(source):
        return source
    text = _HESITATION.sub(" ", source)
    text = re.sub(r"\s+([,.!?;:…])", r"\1", " ".join(text.split()))
    text = re.sub(r"([,;:–—-])(?:\s*[,;:–—-])+", r"\1", text).strip(" ,;:–—-")
    if not any(ch.isalnum() for ch in text):
        return ""
    if source.lstrip()[:1].isupper() and text[:1].islower():
        text = text[0].upper() + text[1:]
    return text
