"""Numbers a translation makes up: digits the source never says, in digits or in words.

The bundled 270M model now and then writes a number of its own into a finished translation: a year
for "A few years ago" ("1998, Ich habe …"), an hour for "around midnight" ("um 11:00"), a list for
"TBC, to be continued." ("2019, 2020, 2021, …"), a digit more ("one in 300" → "ein in 3000"). In a
meeting a reader acts on numbers (times, prices, phone numbers), so such a translation is decoded
again with the made-up number's first wrong token banned where it was written
(:meth:`core.translate.translator.LlamaTranslator._steer_from_number`).
"""

from __future__ import annotations

import re

from .clock import clock_times, hour_24
from .quality import afternoon_hours, numbers_in

_WORD = re.compile(r"\w+")

# English number words and what a translation may write for them in digits ("five percent" → "5%",
# "the first" → "der 1.", "midnight" → "0 Uhr"): a digit so written is no number made up.
_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINALS = ("zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
             "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth").split()
_SPELLED: dict[str, set[str]] = {w: {str(i)} for i, w in enumerate(_UNITS)}
_SPELLED |= {w: {str(i)} for i, w in enumerate(_ORDINALS)}
_SPELLED |= {w: {str(20 + 10 * i)} for i, w in enumerate(_TENS)}
_SPELLED |= {w[:-1] + "ieth": {str(20 + 10 * i)} for i, w in enumerate(_TENS)}
_SPELLED |= {w[:-1] + "ies": {str(20 + 10 * i)} for i, w in enumerate(_TENS)}  # the nineties → die 90er
_SPELLED |= {"hundred": {"100", "00"}, "thousand": {"1000", "000"}, "hundreds": {"100", "00"},
             "thousands": {"1000", "000"}, "million": {"1", "000"},
             "billion": {"1", "000"}, "dozen": {"12"}, "half": {"30", "50", "2"}, "quarter": {"15", "45", "4"},
             "midnight": {"0", "00", "12", "24"}, "noon": {"12", "00"}, "midday": {"12", "00"},
             "once": {"1"}, "twice": {"2"}, "single": {"1"}, "double": {"2"}, "pair": {"2"}, "couple": {"2"}}
_HYPHENED = re.compile(r"\b(" + "|".join(_TENS) + r")[- ](" + "|".join(_UNITS[1:10] + _ORDINALS[1:10]) + r")\b",
                       re.IGNORECASE)


def numbers_said(source: str) -> set[str]:
    """The numbers a translation of ``source`` may write in digits: its own (:func:`numbers_in`), its
    hours with p.m. in 24-hour form, the minutes of an hour with a.m. or p.m. ("8pm" → "20:00"), and its
    number words ("five", "twenty-one", "third", "midnight") as digits."""
    said = numbers_in(source) | set(afternoon_hours(source).values())
    for time in clock_times(source):
        said |= {"00", str(hour_24(time))}
    for word in (w.lower() for w in _WORD.findall(source)):
        said |= _SPELLED.get(word, set())
    for tens, unit in _HYPHENED.findall(source):
        value = 20 + 10 * _TENS.index(tens.lower())
        unit = unit.lower()
        said.add(str(value + (_UNITS.index(unit) if unit in _UNITS else _ORDINALS.index(unit))))
    return said


def invented_numbers(source: str, translation: str, source_lang: str = "en") -> list[str]:
    """The numbers of ``translation`` that ``source`` never says, in digits or in words
    (:func:`numbers_said`), in the order they are written: the small model makes up a year for "A few
    years ago" ("1998, Ich habe …"), an hour for "midnight" ("um 11:00"), a list for "TBC" ("2019,
    2020, …") or a digit more ("300" → "3000"). Where it also says every number of the source, a number
    of the source's run together with another is not counted ("1,000" written "1000"). None for a
    source in another language than English (``source_lang``): the number words known are English
    ones, and "cinco" → "5" is no number made up."""
    if source_lang != "en":
        return []
    said = numbers_said(source)
    joined = {a + b for a in said for b in said}
    return [n for n in re.findall(r"\d+", translation) if n not in said and n not in joined]


def invented_start(pieces: list[str], source: str) -> int | None:
    """The position of the token (given as the tokens' texts) where the translation's first made-up
    number (:func:`invented_numbers`) leaves every number the source says: for a number of its own its
    first digit ("1998"), or the space token before it where the tokenizer writes one; for one run on
    from the source's number the digit after it ("300" → "3000": the last "0"). ``None`` where no
    number is made up."""
    text = "".join(pieces)
    made_up = set(invented_numbers(source, text))
    said = numbers_said(source)
    for match in re.finditer(r"\d+", text):
        number = match.group()
        if number not in made_up:
            continue
        kept = max((k for k in range(len(number)) if any(s.startswith(number[:k]) for s in said)), default=0)
        offset, end = match.start() + kept, 0
        for i, piece in enumerate(pieces):
            end += len(piece)
            if offset < end:
                # a tokenizer that writes digits one by one (Gemma's) has a space of its own before a
                # number: banned in its place, the model's next choice is another number ("2000,"), so
                # the space that opens it is banned instead and the model writes a word there
                return i - 1 if kept == 0 and i and pieces[i - 1].isspace() else i
        return None
    return None
