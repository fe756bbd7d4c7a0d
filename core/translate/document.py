"""A whole file translated afterwards (``sotto translate``): a text file line by line, or an SRT or
WebVTT file cue by cue, each line or cue translated as the app translates a finished sentence.

Reading splits the file into :class:`Unit` s: text to translate with what surrounds it kept as it
was (a cue's number and timing line, a WebVTT header or NOTE, blank lines). A cue of several lines is
one sentence to the translator, joined with spaces; its translation is one line. Formatting tags
(``<i>`` …) are left out of what the model reads; a cue wholly in italics stays in italics.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SottoError
from ..stream import Sentence
from .streaming import StreamingTranslator

_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_TIMING = "-->"
SUBTITLE_SUFFIXES = (".srt", ".vtt")


@dataclass
class Unit:
    """One piece of the file: ``head`` lines kept as they are, then ``text`` to translate (may be
    empty: a blank line, a header); ``italic``: the cue was wholly in italics."""

    head: list[str]
    text: str
    italic: bool = False
    translation: str | None = None  # None until translated


@dataclass
class Document:
    """A file split into units, and how to write it back."""

    path: Path
    subtitles: bool  # SRT/WebVTT (blocks separated by blank lines) or plain text (one unit per line)
    units: list[Unit] = field(default_factory=list)

    @property
    def to_translate(self) -> list[Unit]:
        """The units with text."""
        return [u for u in self.units if u.text]

    def render(self, done_only: bool = False) -> str:
        """The file with each unit's translation in place of its text; ``done_only``: up to the last
        translated unit (what is kept when a translation is stopped)."""
        units = self.units
        if done_only:
            last = max((i for i, u in enumerate(units) if u.translation is not None), default=-1)
            units = units[:last + 1]
        if not self.subtitles:
            return "".join((u.translation if u.translation is not None else u.text) + "\n" for u in units)
        blocks = []
        for u in units:
            text = u.translation if u.translation is not None else u.text
            if u.italic and text:
                text = f"<i>{text}</i>"
            blocks.append("\n".join(u.head + ([text] if text else [])))
        return "\n\n".join(blocks) + ("\n" if blocks else "")


def read_document(path: str | Path) -> Document:
    """Split ``path`` into units (by its suffix: ``.srt``/``.vtt`` cue by cue, anything else line by
    line). A missing, unreadable, non-UTF-8 or empty file, or subtitles without a cue, is one
    :class:`SottoError` sentence."""
    path = Path(path)
    if not path.exists():
        raise SottoError(f"{path} does not exist.")
    if not path.is_file():
        raise SottoError(f"{path} is not a file.")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SottoError(f"{path} could not be read ({exc.strerror or exc}).") from exc
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SottoError(f"{path} is not a UTF-8 text file.") from None
    if "\x00" in content:
        raise SottoError(f"{path} is not a text file.")
    content = content.replace("\r\n", "\n").replace("\r", "\n")
    if not content.strip():
        raise SottoError(f"{path} is empty: there is nothing to translate.")
    subtitles = path.suffix.lower() in SUBTITLE_SUFFIXES
    doc = Document(path, subtitles)
    if not subtitles:
        doc.units = [Unit([], line.strip()) for line in content.rstrip("\n").split("\n")]
        return doc
    for block in re.split(r"\n\s*\n", content.strip("\n")):
        lines = block.split("\n")
        at = next((i for i, line in enumerate(lines) if _TIMING in line), None)
        if at is None:  # a WebVTT header, NOTE, STYLE or REGION block
            doc.units.append(Unit(lines, ""))
            continue
        cue = [line.strip() for line in lines[at + 1:] if line.strip()]
        italic = bool(cue) and all(re.fullmatch(r"<i>.*</i>", line) for line in cue)
        text = " ".join(_TAG.sub("", line).strip() for line in cue).strip()
        doc.units.append(Unit(lines[:at + 1], " ".join(text.split()), italic))
    if not any(_TIMING in line for u in doc.units for line in u.head):
        raise SottoError(f"{path} has no subtitle cues (no line with '-->'); is it a subtitle file?")
    return doc


Progress = Callable[[int, int], None]


def translate_document(doc: Document, translator: StreamingTranslator, on_progress: Progress | None = None,
                       stop: threading.Event | None = None) -> bool:
    """Translate ``doc``'s units in order, in place, each as a finished sentence of one stream (the
    app's path: :meth:`StreamingTranslator.translate`). A unit the translator returns nothing for
    keeps its text. ``stop`` set ends the work after the unit under way; returns False when stopped
    before the end. Stopping (either way, or KeyboardInterrupt) leaves the units done so far translated."""
    units = doc.to_translate
    for n, unit in enumerate(units):
        if stop is not None and stop.is_set():
            return False
        update = translator.translate([Sentence(n, unit.text, 0.0, 0.0)], "", 0.0)
        frozen = update.frozen[0].text if update is not None and update.frozen else ""
        unit.translation = frozen or unit.text
        if on_progress is not None:
            on_progress(n + 1, len(units))
    return True
