"""Text facts used by every stage, one home each: languages, CJK scripts, tokens for NE
and mask-k, common prefixes.

Nothing here imports another part of Sotto.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

# Languages Sotto knows by name: what can be spoken (and recognised by a multilingual
# Whisper) and what can be translated into.
LANGUAGE_NAMES = {
    "en": "English",
    "de": "German",
    "ja": "Japanese",
    "zh": "Chinese",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "ko": "Korean",
    "ru": "Russian",
}
SPOKEN_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "ja", "zh", "ko", "ru")
TARGET_LANGUAGES = ("none", "de", "ja", "zh", "fr", "es", "it", "pt", "nl", "ko", "ru")  # none: no translation

# Chinese, Japanese and Korean: counted per character for NE and mask-k, wrapped per character.
CJK_LANGUAGES = frozenset({"ja", "zh", "ko"})
# Languages written without spaces between words (sentences join with nothing between them).
UNSPACED_LANGUAGES = frozenset({"ja", "zh"})

_CJK_CHARS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
CJK_CHAR = re.compile(f"[{_CJK_CHARS}]")
_TOKEN = re.compile(f"[{_CJK_CHARS}]|[^\\s{_CJK_CHARS}]+")


_SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’)\]]*$")


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends a sentence: its last mark, closing quotes and brackets aside, is . ! ? …
    (or a CJK full stop, exclamation or question mark)."""
    return bool(_SENTENCE_END.search(text.rstrip()))


def language_name(code: str) -> str:
    """English name of a language code (the code itself if unknown)."""
    return LANGUAGE_NAMES.get(code, code)


def has_cjk(text: str) -> bool:
    """True when ``text`` contains a Chinese, Japanese or Korean character."""
    return CJK_CHAR.search(text) is not None


def joiner(lang: str | None) -> str:
    """What goes between two sentences in ``lang``: nothing for Chinese and Japanese, else a space."""
    return "" if lang in UNSPACED_LANGUAGES else " "


def tokenize(text: str, lang: str | None = None) -> list[str]:
    """Tokens for NE and mask-k: CJK characters one by one, other text by whitespace."""
    if lang in CJK_LANGUAGES or has_cjk(text):
        return _TOKEN.findall(text)
    return text.split()


def common_prefix_len(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common prefix of two token sequences (words or token ids)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def join_parts(*parts: str) -> str:
    """Non-empty parts, stripped, joined by single spaces."""
    return " ".join(p.strip() for p in parts if p and p.strip())
