"""Discourse markers and set phrases at the start of a line ("Okay, …", "Yes, …", "Thanks, see you
tomorrow.") said in the target language.

In conversation a line often opens with a marker. After "Okay," the bundled model tends to go on in
English ("Okay, and I have two options for you." came back unchanged) or to borrow the quoted-speech
example ("„Okay, …“, sagte der Minister"). So the markers are read off the line, said from a short
word list, and the model translates the rest as a sentence of its own. A marker needs its comma or
full stop (or "!", "?", or the line's end) to count: "So there is …" and "Well done." are left whole.
Set phrases (:mod:`core.translate.phrasebook`) are read off the same way: a line made of them alone
("Got it.", "Thanks, everyone.") is said from the table with no model call.
"""

from __future__ import annotations

import re

from .phrasebook import ADDRESSES, PHRASES

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
for _said in MARKERS.values():  # the casual forms say what "no" and "yep" say
    _said["nope"], _said["yup"] = _said["no"], _said["yep"]
# the comma that joins a marker to what follows, and the full stop of a line of markers alone
_COMMA = {"ja": "、", "zh": "，"}
_STOP = {"ja": "。", "zh": "。"}
_WIDE = {"?": "？", "!": "！"}
_ENDS = frozenset(".!?。？！")

# "…, right?": a question tag, said as the language asks for agreement (the line becomes a question)
TAGS: dict[str, dict[str, str]] = {
    "right": {"de": "oder", "fr": "n'est-ce pas", "es": "¿verdad", "it": "vero", "pt": "certo", "nl": "toch",
              "ru": "не так ли", "zh": "对吧", "ko": "맞죠"}}
_TAIL_MARKERS = ("okay", "ok", "yeah", "yes")  # markers a line may end with ("…, okay?")


def _alternation(keys) -> str:
    """A regex alternation of English keys, longest first; a space matches any spacing, an apostrophe
    either form, and "mm-hmm" its spellings with and without the hyphen."""
    def one(key: str) -> str:
        return r"\s+".join(re.escape(w).replace("'", "['’]").replace(r"\-", "[- ]?") for w in key.split())
    return "|".join(one(k) for k in sorted(keys, key=len, reverse=True))


def _key(text: str) -> str:
    """English as the tables write it: lower case, straight apostrophes, words apart ("Mm hmm" = "mm-hmm")."""
    return " ".join(re.split(r"[\s-]+", text.lower().replace("’", "'").strip()))


_PHRASES = {_key(k): v for k, v in PHRASES.items()}
_ADDRESSES = {_key(k): v for k, v in ADDRESSES.items()}
# a marker, set phrase or address, then its comma or stop (or the line's end)
_END = r")\s*(?:([,.!?]+)(?:\s+|$)|$)"
_PIECE = re.compile(r"(" + _alternation([*MARKERS["de"], *PHRASES, *ADDRESSES]) + _END, re.IGNORECASE)
_MARKER = re.compile(r"(" + _alternation(MARKERS["de"]) + _END, re.IGNORECASE)  # without the set phrases
# what a line may end with after a comma ("…, thank you.", "…, please?", "…, sir.", "…, right?"), and the
# line's own end mark after it
_TAIL = re.compile(r",\s*(" + _alternation([*_TAIL_MARKERS, *PHRASES, *ADDRESSES, *TAGS]) + r")\s*([.!?]*)\s*$",
                   re.IGNORECASE)
# German words that begin a sentence with a capital only because they begin it (after "Ja, " they do not)
_DE_LOWER = frozenset(
    "der die das den dem des ein eine einen einem einer eines es er ich du wir ihr man wie was wo wann warum "
    "welche welcher welches wer wen wem dann da hier dort so und aber oder denn doch nicht kein keine jetzt "
    "bitte gerne gern natürlich danke vielen sehr auch noch schon nur mal ist sind war hat haben habe kann "
    "können könnte möchte möchten will wollen muss müssen soll sollen darf gibt geht gut genau".split())


def split_markers(source: str, source_lang: str, target_lang: str, phrases: bool = True) -> tuple[list[str], str]:
    """What ``source`` opens with said in the target language (its discourse markers, and the set
    phrases of :mod:`core.translate.phrasebook`), ready to be joined: the first capitalised, the others
    as inside a sentence; and the rest of ``source`` (capitalised, as the sentence it now is).
    ``([], source)`` where it opens with none or the target has no word list. "Okay, and I have two
    options." → (["Okay"], "And I have two options."); "Thanks, everyone." → (["Danke", "alle
    zusammen"], ""). ``phrases`` False: the markers alone."""
    words = MARKERS.get(target_lang)
    if source_lang != "en" or not words:
        return [], source
    said, stops, at = [], [], 0
    while (m := (_PIECE if phrases else _MARKER).match(source, at)) is not None:
        word = _say(_key(m.group(1)), target_lang, words, address=bool(said))  # an address follows what it is said to
        if word is None:
            break
        said.append(word)
        at = m.end()
        stops.append(next((ch for ch in m.group(2) or "" if ch in ".!?"), ""))
    rest = source[at:].strip()
    if not said:
        return [], source
    said[0] = said[0][:1].upper() + said[0][1:]
    for i, end in enumerate(stops[:len(said) if rest else len(said) - 1]):
        # "I got it. Thank you." / "Good morning, everyone. Let's start.": a sentence that ends in the
        # source ends in the translation too
        if end:
            said[i] += _STOP.get(target_lang, ".") if end == "." else _wide(end, target_lang)
            if i + 1 < len(said):
                said[i + 1] = said[i + 1][:1].upper() + said[i + 1][1:]
    return said, rest[:1].upper() + rest[1:]


def _say(key: str, target_lang: str, words: dict[str, str], address: bool) -> str | None:
    """A marker, set phrase or (where ``address``) address as said inside a sentence; None for another key."""
    if key in words:
        return _inside(words[key], target_lang)
    if key in _PHRASES:
        return _PHRASES[key][target_lang]
    if address and key in _ADDRESSES:
        return _ADDRESSES[key][target_lang]
    return None


def _inside(word: str, target_lang: str) -> str:
    """A marker as it reads inside a sentence: its capital dropped where the language writes it so."""
    return word if target_lang in {"ja", "zh", "ko"} else word[:1].lower() + word[1:]


def markers_alone(said: list[str], source: str, target_lang: str) -> str:
    """A line of markers only ("Okay, okay.", "Yes?"), said in the target language with the line's own
    end ("Okay, okay." → "Okay, okay."; "Yes?" → "Ja?")."""
    said = [*said[:-1], said[-1].rstrip("".join(_ENDS))]
    end = source.rstrip()[-1:]
    lead = "¿" + _lead(said, target_lang) if target_lang == "es" and end == "?" else _lead(said, target_lang)
    if end and end in "?!":
        return lead + _wide(end, target_lang)
    return lead + _STOP.get(target_lang, ".")


def _wide(mark: str, target_lang: str) -> str:
    """A question or exclamation mark as the language writes it."""
    return _WIDE.get(mark, mark) if target_lang in _STOP else mark


def with_markers(said: list[str], text: str, source: str, target_lang: str) -> str:
    """The translation ``text`` of the rest of ``source`` after its markers, its first word in lower case
    where it was capitalised only for beginning the sentence (not a name ``source`` writes with a
    capital, nor a German noun)."""
    if not text:
        return markers_alone(said, source, target_lang)
    if said[-1][-1:] in _ENDS:  # the markers were a sentence of their own: the rest begins another
        return _lead(said, target_lang) + ("" if target_lang in _STOP else " ") + text
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
    """The markers and phrases joined ("Okay, okay"; "Danke, alle zusammen"; "Verstanden. Danke")."""
    text = said[0]
    for before, word in zip(said, said[1:], strict=False):
        text += ("" if target_lang in _STOP else " ") if before[-1:] in _ENDS else _COMMA.get(target_lang, ", ")
        text += word
    return text


def split_tail(source: str, source_lang: str, target_lang: str) -> tuple[str, list[str]]:
    """``source`` without the markers, set phrases, addresses and question tags it ends with after a
    comma, and those said in the target language as inside a sentence: "That's all, thank you." →
    ("That's all.", ["danke"]); ``(source, [])`` where it ends with none. The text before them keeps
    the line's end mark."""
    words = MARKERS.get(target_lang)
    if source_lang != "en" or not words:
        return source, []
    said, head = [], source
    while (m := _TAIL.search(head)) is not None and m.start() > 0:
        key = _key(m.group(1))
        word = TAGS[key].get(target_lang) if key in TAGS else _say(key, target_lang, words, address=True)
        if word is None:
            break
        said.insert(0, word)
        head = head[:m.start()].rstrip()
    if not said or not any(ch.isalnum() for ch in head):
        return source, []
    end = source.rstrip()[-1:]
    if _tagged(said, target_lang):  # "It leaves at 9, right?": the tag asks, not what comes before it
        end = "."
    return head + (end if end in ".!?" else ""), said


def _tagged(said: list[str], target_lang: str) -> bool:
    """Whether ``said`` holds a question tag of ``target_lang``."""
    return any(tag.get(target_lang) in said for tag in TAGS.values())


def with_tail(text: str, said: list[str], source: str, target_lang: str) -> str:
    """The translation ``text`` of what ``source`` says before its tail, then the tail ``said`` with
    the line's own end mark (a question mark after a question tag)."""
    end = source.rstrip()[-1:]
    if _tagged(said, target_lang):
        end = "?"
    mark = "" if end not in ".!?" else (_STOP.get(target_lang, ".") if end == "." else _wide(end, target_lang))
    body = text.rstrip().rstrip(".!?。？！…").rstrip()
    if not body:
        lead = said[0][:1].upper() + said[0][1:]
        return _lead([lead, *said[1:]], target_lang) + mark
    return body + _COMMA.get(target_lang, ", ") + _lead(said, target_lang) + mark
