"""Discourse markers at the start of a line ("Okay, …", "Yes, …", "So, …") said in the target language.

In conversation a line often opens with one. After "Okay," the bundled model tends to go on in
English ("Okay, and I have two options for you." came back unchanged) or to borrow the quoted-speech
example ("„Okay, …“, sagte der Minister"). So the markers are read off the line, said from a short
word list, and the model translates the rest as a sentence of its own. A marker needs its comma or
full stop (or "!", "?") to count: "So there is …" and "Well done." are left whole.
"""

from __future__ import annotations

import re

# English marker (lower case) → the target language's. Only markers whose sense at a line's start is
# plain: "right" ("Right, …" / "right now"), "like" and "actually" are not read off.
MARKERS: dict[str, dict[str, str]] = {
    "de": {"okay": "Okay", "ok": "Okay", "alright": "Alles klar", "all right": "Alles klar", "yes": "Ja",
           "yeah": "Ja", "yep": "Ja", "no": "Nein", "sure": "Klar", "so": "Also", "well": "Nun", "oh": "Oh",
           "hi": "Hallo", "hello": "Hallo"},
    "fr": {"okay": "D'accord", "ok": "D'accord", "alright": "Très bien", "all right": "Très bien", "yes": "Oui",
           "yeah": "Oui", "yep": "Oui", "no": "Non", "sure": "Bien sûr", "so": "Alors", "well": "Eh bien",
           "oh": "Oh", "hi": "Bonjour", "hello": "Bonjour"},
    "es": {"okay": "Vale", "ok": "Vale", "alright": "Muy bien", "all right": "Muy bien", "yes": "Sí", "yeah": "Sí",
           "yep": "Sí", "no": "No", "sure": "Claro", "so": "Entonces", "well": "Bueno", "oh": "Oh", "hi": "Hola",
           "hello": "Hola"},
    "it": {"okay": "Va bene", "ok": "Va bene", "alright": "Va bene", "all right": "Va bene", "yes": "Sì",
           "yeah": "Sì", "yep": "Sì", "no": "No", "sure": "Certo", "so": "Allora", "well": "Beh", "oh": "Oh",
           "hi": "Ciao", "hello": "Ciao"},
    "pt": {"okay": "Está bem", "ok": "Está bem", "alright": "Tudo bem", "all right": "Tudo bem", "yes": "Sim",
           "yeah": "Sim", "yep": "Sim", "no": "Não", "sure": "Claro", "so": "Então", "well": "Bem", "oh": "Oh",
           "hi": "Olá", "hello": "Olá"},
    "nl": {"okay": "Oké", "ok": "Oké", "alright": "Goed", "all right": "Goed", "yes": "Ja", "yeah": "Ja",
           "yep": "Ja", "no": "Nee", "sure": "Zeker", "so": "Dus", "well": "Nou", "oh": "O", "hi": "Hallo",
           "hello": "Hallo"},
    "ru": {"okay": "Хорошо", "ok": "Хорошо", "alright": "Ладно", "all right": "Ладно", "yes": "Да", "yeah": "Да",
           "yep": "Да", "no": "Нет", "sure": "Конечно", "so": "Итак", "well": "Ну", "oh": "О", "hi": "Привет",
           "hello": "Здравствуйте"},
    "ja": {"okay": "わかりました", "ok": "わかりました", "alright": "わかりました", "all right": "わかりました",
           "yes": "はい", "yeah": "うん", "yep": "うん", "no": "いいえ", "sure": "もちろん", "so": "それで",
           "well": "ええと", "oh": "あっ", "hi": "こんにちは", "hello": "こんにちは"},
    "zh": {"okay": "好的", "ok": "好的", "alright": "好吧", "all right": "好吧", "yes": "是的", "yeah": "是的",
           "yep": "是的", "no": "不", "sure": "当然", "so": "所以", "well": "嗯", "oh": "哦", "hi": "你好",
           "hello": "你好"},
    "ko": {"okay": "네", "ok": "네", "alright": "좋아요", "all right": "좋아요", "yes": "네", "yeah": "네",
           "yep": "네", "no": "아니요", "sure": "물론이죠", "so": "그래서", "well": "글쎄요", "oh": "아",
           "hi": "안녕하세요", "hello": "안녕하세요"},
}
# the comma that joins a marker to what follows, and the full stop of a line of markers alone
_COMMA = {"ja": "、", "zh": "，"}
_STOP = {"ja": "。", "zh": "。"}
_MARKER = re.compile(r"(okay|ok|alright|all right|yes|yeah|yep|no|sure|so|well|oh|hi|hello)\s*([,.!?]+)(?:\s+|$)",
                     re.IGNORECASE)
# German words that begin a sentence with a capital only because they begin it (after "Ja, " they do not)
_DE_LOWER = frozenset(
    "der die das den dem des ein eine einen einem einer eines es er ich du wir ihr man wie was wo wann warum "
    "welche welcher welches wer wen wem dann da hier dort so und aber oder denn doch nicht kein keine jetzt "
    "bitte gerne gern natürlich danke vielen sehr auch noch schon nur mal ist sind war hat haben habe kann "
    "können könnte möchte möchten will wollen muss müssen soll sollen darf gibt geht gut genau".split())


def split_markers(source: str, source_lang: str, target_lang: str) -> tuple[list[str], str]:
    """The target language's words for the markers ``source`` opens with, and the rest of ``source``
    (capitalised, as the sentence it now is); ``([], source)`` where it opens with none or the target
    has no word list. "Okay, and I have two options." → (["Okay"], "And I have two options.")."""
    words = MARKERS.get(target_lang)
    if source_lang != "en" or not words:
        return [], source
    said, at = [], 0
    while (m := _MARKER.match(source, at)) is not None:
        said.append(words[" ".join(m.group(1).lower().split())])
        at = m.end()
    rest = source[at:].strip()
    if not said:
        return [], source
    return said, rest[:1].upper() + rest[1:]


def markers_alone(said: list[str], source: str, target_lang: str) -> str:
    """A line of markers only ("Okay, okay.", "Yes?"), said in the target language with the line's own
    end ("Okay, okay." → "Okay, okay."; "Yes?" → "Ja?")."""
    end = source.rstrip()[-1:]
    return _lead(said, target_lang) + (end if end in "?!" else _STOP.get(target_lang, "."))


def with_markers(said: list[str], text: str, source: str, target_lang: str) -> str:
    """The translation ``text`` of the rest of ``source`` after its markers, its first word in lower case
    where it was capitalised only for beginning the sentence (not a name ``source`` writes with a
    capital, nor a German noun)."""
    if not text:
        return markers_alone(said, source, target_lang)
    first = text.split(maxsplit=1)[0]
    bare = first.strip("„“\"'«»¿¡,.!?")
    names = {w for w in re.findall(r"[\w'’-]+", source)[1:] if w[:1].isupper()}
    lower = bare[:1].isupper() and not bare.isupper() and bare not in names
    if target_lang == "de":
        lower = lower and bare.lower() in _DE_LOWER
    elif target_lang not in {"fr", "es", "it", "pt", "nl", "ru"}:
        lower = False
    if lower:
        i = text.index(bare[0])
        text = text[:i] + bare[0].lower() + text[i + 1:]
    return _lead(said, target_lang) + _COMMA.get(target_lang, ", ") + text


def _lead(said: list[str], target_lang: str) -> str:
    """The markers joined, each after the first in lower case where the language writes it so
    ("Okay, okay")."""
    later = said[1:] if target_lang in {"ja", "zh", "ko"} else [w[:1].lower() + w[1:] for w in said[1:]]
    return _COMMA.get(target_lang, ", ").join(said[:1] + later)

