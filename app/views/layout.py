"""Caption layout for the overlay (part of its view): greedy line wrapping that never reflows
committed text.

Text is broken into visual lines greedily, word by word (character by
character for Chinese, Japanese and Korean), so where a paragraph's first words wrap
depends on those words only: appending or changing the words after them never
moves them. Committed text is always a prefix of its paragraph, hence an
update never reflows committed lines; the overlay only scrolls when a track is
full.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from core.text import CJK_CHAR

# HELD: a draft waiting for its verification (core.asr.verified), drawn dimmed in the committed font; it may
# still be replaced once, in place, by its verified words
COMMITTED, HELD, TENTATIVE = "committed", "held", "tentative"


@dataclass(frozen=True)
class Run:
    """A piece of one visual line in one style."""

    text: str
    style: str  # COMMITTED, HELD or TENTATIVE


VisualLine = tuple[Run, ...]


def _units(text: str) -> list[str]:
    """Breakable units with their leading space: words, or single CJK characters."""
    units: list[str] = []
    for m in re.finditer(r"\s*\S+", text):
        piece = m.group(0)
        if CJK_CHAR.search(piece):
            lead = piece[: len(piece) - len(piece.lstrip())]
            chars = list(piece.lstrip())
            if chars:
                chars[0] = lead + chars[0]
            units.extend(chars)
        else:
            units.append(piece)
    return units


def wrap_paragraph(parts: list[tuple[str, str]], width: float,
                   measure: Callable[[str, str], float]) -> list[VisualLine]:
    """Wrap styled ``parts`` [(text, style), …] into visual lines no wider than ``width``.

    ``measure(text, style)`` gives the drawn width. Greedy: a unit goes on the current line if it fits, else
    starts the next one (a unit wider than a line gets a line of its own). Leading spaces are
    dropped at line starts.
    """
    lines: list[VisualLine] = []
    current: list[Run] = []
    used = 0.0
    for text, style in parts:
        if not text:
            continue
        if current or lines:
            if not text[:1].isspace() and not CJK_CHAR.match(text[:1]):
                text = " " + text
        for unit in _units(text):
            piece = unit if current else unit.lstrip()
            w = measure(piece, style)
            if current and used + w > width:
                lines.append(tuple(current))
                current, used = [], 0.0
                piece = unit.lstrip()
                w = measure(piece, style)
            if current and current[-1].style == style:
                current[-1] = Run(current[-1].text + piece, style)
            else:
                current.append(Run(piece, style))
            used += w
    if current:
        lines.append(tuple(current))
    return lines


def line_text(line: VisualLine) -> str:
    """The plain text of a visual line."""
    return "".join(r.text for r in line)
