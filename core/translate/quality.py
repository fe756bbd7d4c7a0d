"""What a reader would call a broken translation, told from its text alone (for benchmarks and tests):
a phrase said twice in a row, a fragment that drops most of the sentence, a copy left in the source
language. None of these judges fluency; each flags a failure a user can see at a glance."""

from __future__ import annotations

import re

from ..text import UNSPACED_LANGUAGES

_WORD = re.compile(r"\w+")

# A finished translation shorter than this share of its source (in words, or characters for Chinese
# and Japanese) has dropped part of the sentence: German and French run about 1.1–1.3 times as many
# words as English, so half is far below any whole translation of a sentence of five words or more.
FRAGMENT_SHARE = 0.5
FRAGMENT_MIN_WORDS = 5
# A translation most of whose words are the source's own is a copy left in the source language.
COPY_SHARE = 0.6


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def phrase_loop(text: str, min_words: int = 2) -> str | None:
    """A run of at least ``min_words`` words repeated straight after itself, or None."""
    words = _words(text)
    for n in range(min_words, len(words) // 2 + 1):
        for i in range(len(words) - 2 * n + 1):
            if words[i:i + n] == words[i + n:i + 2 * n]:
                return " ".join(words[i:i + n])
    return None


def _length(text: str, target: str) -> int:
    if target in UNSPACED_LANGUAGES:
        return len(re.sub(r"\s|\W", "", text))
    return len(_words(text))


def is_fragment(source: str, translation: str, target: str) -> bool:
    """A translation of a sentence of :data:`FRAGMENT_MIN_WORDS` or more words that is shorter than
    :data:`FRAGMENT_SHARE` of it ("more or less closely those of the written character and they
    followed them very closely." → "mehr oder weniger so weit,"). For Chinese and Japanese, characters
    are counted against the source's words times 1.5 (a rough rate of an English word in them)."""
    n = len(_words(source))
    if n < FRAGMENT_MIN_WORDS:
        return False
    scale = 1.5 if target in UNSPACED_LANGUAGES else 1.0
    return _length(translation, target) < FRAGMENT_SHARE * n * scale


# A name or a code spelled out, letter by letter ("j e f f.", "J-O-H-N"): this many single characters in a row
SPELLED_RUN = 3


def _spelled_letters(text: str) -> list[list[str]]:
    """The runs of :data:`SPELLED_RUN` or more words of one character each (letters or digits) in ``text``,
    each as its words (lower case)."""
    runs, run = [], []
    for word in _words(text) + [""]:
        if len(word) == 1:
            run.append(word)
            continue
        if len(run) >= SPELLED_RUN:
            runs.append(run)
        run = []
    return runs


def spelled_out(text: str) -> bool:
    """``text`` does nothing but spell: every word one letter, or digits, with a run of :data:`SPELLED_RUN`
    single characters among them ("j e f f.", "J-O-H-N", "a b 4 2 7"). A caller spelling a name or a code says no
    sentence to translate; asked to, the bundled model wrote "1." for "j e f f." and a sentence of its own
    ("1999 So schön ist es, …") for "j o h n s m i p h."."""
    words = _words(text)
    return (bool(_spelled_letters(text)) and sum(w.isalpha() for w in words) >= 2
            and all(len(w) == 1 or w.isdigit() for w in words))


def kept_as_is(source: str) -> set[str]:
    """The source's words a translation keeps as they are (lower case): names (words capitalised where
    a sentence does not begin, acronyms such as "EU" too), the words of a quotation ("it rhymes with
    Twp and Pwp.", 'furious') and letters spelled out ("my name is j e f f"). A translation keeping
    them is not left in English for that."""
    kept: set[str] = {w for run in _spelled_letters(source) for w in run}
    for quote in _QUOTED.findall(source):
        kept.update(_words(next(q for q in quote if q)))
    for match in _WORD.finditer(source):
        word = match.group(0)
        before = source[:match.start()].rstrip(" \"'“”„‘’«»(")
        if word[:1].isupper() and before and before[-1] not in ".!?:;" and not word.isdigit():
            kept.add(word.lower())
    return kept


# common English words that German, French, Spanish or Italian text does not use ("in", "an", "so",
# "was", "will", "am", "die" are left out: German words too); "ll", "re", "ve" are the ends of "we'll" …
_ENGLISH = frozenset(
    "the and or but of to on at for with from by is are were be been being you he she it we they me him her us "
    "them my your his its our their this that these those what which who where when why how not yes do does "
    "did have has had would can could should shall may might must there here just very ll re ve "
    # what a speaker says alone (a reply, a goodbye): none of them a word of those languages either
    "yeah yep yup yes bye goodbye thanks thank please think know right sure well really".split())


def looks_english(translation: str, source: str = "") -> bool:
    """A translation written in English all the same, though not the source's words ("Cheers, y'all." →
    "We'll be back.") or the source's own ("Bye." → "Bye."): at least two common English words (one in
    a reply of one or two words: "Oh, bye."), making up a third of its words or more, names and
    quotations of ``source`` aside."""
    kept = kept_as_is(source) if source else set()
    words = [w for w in _words(translation) if w not in kept]
    english = sum(w in _ENGLISH for w in words)
    return english >= (1 if len(words) <= 2 else 2) and english >= len(words) / 3


def kept_in(source: str, translation: str) -> set[str]:
    """The source's names, quoted words and numbers (:func:`kept_as_is`, and words with a digit) that
    ``translation`` keeps as they are (lower case)."""
    keep = kept_as_is(source) | {w for w in _words(source) if any(ch.isdigit() for ch in w)}
    return keep & set(_words(translation))


def numbers_in(text: str) -> set[str]:
    """The runs of digits in ``text``: a number is kept when its digits are, whatever is written
    around them ("21st" → "21.", "£11million" → "11 Millionen", "2.30" → "2:30")."""
    return set(re.findall(r"\d+", text))


def afternoon_hours(source: str) -> dict[str, str]:
    """The hours of ``source`` written with p.m., each with its 24-hour number ("3 p.m." → "15 Uhr")."""
    return {m.group(1): str(int(m.group(1)) + 12) for m in _PM.finditer(source) if int(m.group(1)) < 12}


_PM = re.compile(r"\b(\d{1,2})(?:[:.]\d\d)?\s*p\.?\s?m\b", re.IGNORECASE)


def keeps_numbers(source: str, before: str, after: str) -> bool:
    """``after`` keeps every number of ``source`` that ``before`` kept (:func:`numbers_in`: "52",
    "2016", "11" of "£11million"; an hour with p.m. may be its 24-hour number). Names are not held
    to it: a country or a month is translated ("Italy" → "Italien", "June" → "Juni"), and a
    capitalised word is not always a name."""
    have = numbers_in(after)
    missing = numbers_in(source) & numbers_in(before) - have
    afternoon = afternoon_hours(source) if missing else {}
    return all(afternoon.get(n) in have for n in missing)


# Of the names a whole translation kept, the share its halves may lose: a sentence of many names is
# the one the small model leaves in English, and losing one of them ("ITV") costs a reader less than
# the whole sentence left untranslated; a name in a short sentence is most of what it says.
NAMES_LOST_SHARE = 0.25


# A capitalised word translated keeps its first letters ("Belgian" → "Belgier", "June" → "Juni",
# "Italy" → "Italien"); a made-up name does not ("Willoughby" → "Wulff").
STEM = 4


def keeps_enough(source: str, before: str, after: str) -> bool:
    """``after`` keeps every number (:func:`keeps_numbers`) and quoted word of ``source`` that
    ``before`` kept, and all but at most :data:`NAMES_LOST_SHARE` of its names (:func:`kept_as_is`);
    a name of more than :data:`STEM` letters counts as kept where a word of ``after`` begins as it
    does (translated: "Belgian" → "Belgier")."""
    if not keeps_numbers(source, before, after):
        return False
    quoted = {w for q in _QUOTED.findall(source) for w in _words(next(p for p in q if p))}
    had, has = kept_in(source, before), kept_in(source, after)
    if not (had & quoted) <= has:
        return False
    stems = {w[:STEM] for w in _words(after) if len(w) > STEM}
    lost = [w for w in had - has if len(w) <= STEM or w[:STEM] not in stems]
    return len(lost) <= NAMES_LOST_SHARE * len(had)


# a quotation: in double quotes of any kind, or in single quotes that do not touch a word ('furious', not y'all)
_QUOTED = re.compile(r"[\"“”„«»]([^\"“”„«»]+)[\"“”„«»]|(?<!\w)[‘'](.+?)[’'](?!\w)")
_QUOTE_MARK = re.compile(r"[\"“”„«»]|(?<!\w)[‘']")  # a quotation mark, one of a pair or alone


def adds_quotation(source: str, translation: str) -> bool:
    """``translation`` holds a quotation where ``source`` has no quotation mark at all: part of the
    quoted-speech example's frame (:func:`core.translate.prompts.speech_frame`), and the guard of a retry that
    may take no liberty ("sit-down restaurant in San Francisco." → "„Sitzplatzrestaurant in San Francisco“,
    sagte der Chef.")."""
    return bool(_QUOTED.search(translation)) and not _QUOTE_MARK.search(source)


def is_copy(source: str, translation: str, names_aside: bool = True) -> bool:
    """A translation at least :data:`COPY_SHARE` of whose words are words of the source (the source
    left wholly or mostly untranslated), numbers, names and quotations aside (:func:`kept_as_is`): it
    takes three other words or more. ``names_aside=False`` counts them too: the translator's trigger for its copy
    retry, so that a sentence left in English between its names is retried as well."""
    share, counted = source_share(source, translation, names_aside)
    return counted >= 3 and share >= COPY_SHARE


def source_share(source: str, translation: str, names_aside: bool = True) -> tuple[float, int]:
    """The share of a translation's words that are words of the source, and how many words were counted:
    numbers always aside, and with ``names_aside`` names and quotations too (:func:`kept_as_is`)."""
    said = set(_words(source))
    kept = kept_as_is(source) if names_aside else set()
    # numbers are kept by every translation ("Klar, es ist 9 1 6 4 9 8." is German), so they never count
    words = [w for w in _words(translation) if w not in kept and not any(ch.isdigit() for ch in w)]
    return (sum(w in said for w in words) / len(words) if words else 0.0), len(words)
