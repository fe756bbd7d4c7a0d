"""English clock times with a.m. or p.m. written as 24-hour times before the translator reads them
("7:10 p.m." → "19:10", "8pm" → "20:00", "9 a.m." → "9:00").

German, French, Spanish and most languages a reader translates into write the day's hours from 0 to 23,
and the bundled 270M model does not count twelve on: it kept the hour and dropped the "p.m." ("at 3pm" →
"um 3:00 Uhr", three at night to a German reader), or left the line in English around it ("Yes, 7:10 p.m."
→ "Ja, 7:10 p.m."). Written as 24-hour times the hours are digits it copies as they are. The caption shows
what was said; only the translator's input is written so.
"""

from __future__ import annotations

import re

# an hour (1–12), its minutes, then a.m. or p.m. in any of the ways transcripts and typing write them
# ("7pm", "7 pm", "7:10 p.m.", "7.10PM"); not inside a longer number or a word ("9 amazing")
CLOCK = re.compile(r"(?<![\w:.,])(\d{1,2})(?:[:.](\d{2}))?\s?([ap])(\.?)\s?m\b(\.?)", re.IGNORECASE)
# "5-7pm", "5 to 7 p.m.": the first hour has no a.m./p.m. of its own, so the range is left as said
_RANGE_BEFORE = re.compile(r"\d\s*(?:-|–|to)\s*$")


def clock_times(text: str) -> list[re.Match]:
    """The clock times with a.m. or p.m. in ``text`` that read as times (hour 1–12, minutes 0–59)."""
    return [m for m in CLOCK.finditer(text)
            if 1 <= int(m.group(1)) <= 12 and (m.group(2) is None or int(m.group(2)) < 60)]


def hour_24(time: re.Match) -> int:
    """The hour of a clock time found by :func:`clock_times` on the 24-hour clock ("12 a.m." is 0)."""
    return int(time.group(1)) % 12 + (12 if time.group(3).lower() == "p" else 0)


def clock_24h(text: str, source_lang: str = "en", target_lang: str = "de") -> str:
    """``text`` (English) with each clock time with a.m. or p.m. written as a 24-hour time
    (:func:`clock_times`; "12 a.m." is "0:00", "12 p.m." "12:00"); a time ending a sentence keeps the
    sentence's full stop ("… at 9 p.m." → "… at 21:00."). Other languages, a range whose first hour has
    no a.m./p.m. of its own, and English targets are left as they are."""
    if source_lang != "en" or target_lang == "en":
        return text
    out, at = [], 0
    for m in clock_times(text):
        if _RANGE_BEFORE.search(text[:m.start()]):
            continue
        time = f"{hour_24(m)}:{m.group(2) or '00'}"
        rest = text[m.end():]
        # a full stop after "pm" ends a sentence; after "p.m." it may be the abbreviation's alone
        if m.group(5) and (not m.group(4) or not rest.strip() or re.match(r"\s+[\"“„'‘(]?[A-Z]", rest)):
            time += "."
        out += [text[at:m.start()], time]
        at = m.end()
    return "".join(out) + text[at:]
