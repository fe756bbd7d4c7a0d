"""Subtitle files (SRT, WebVTT) from finished sentences."""

from __future__ import annotations

from pathlib import Path

from ..paths import write_atomic


def _stamp(seconds: float, sep: str) -> str:
    ms = max(0, int(round(seconds * 1000)))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def _cue_text(text: str) -> str:
    """A cue's text without blank lines (a blank line ends a cue in SRT and WebVTT) and without
    the ``-->`` that marks a timing line."""
    lines = (line.strip().replace("-->", "→") for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def marked_unverified(text: str) -> str:
    """A cue's text marked as not verified (kept as the drafter heard it): in italics, line by line
    (``<i>``, which SRT and WebVTT players both show), so the subtitles stay clean to read and the
    mark still stands out."""
    return "\n".join(f"<i>{line}</i>" if line.strip() else line for line in text.splitlines())


def to_srt(cues: list[tuple[float, float, str]]) -> str:
    """SRT text for (start, end, text) cues."""
    blocks = []
    for i, (start, end, text) in enumerate(c for c in cues if _cue_text(c[2])):
        end = max(end, start + 0.2)
        blocks.append(f"{i + 1}\n{_stamp(start, ',')} --> {_stamp(end, ',')}\n{_cue_text(text)}\n")
    return "\n".join(blocks)


def to_vtt(cues: list[tuple[float, float, str]]) -> str:
    """WebVTT text for (start, end, text) cues."""
    blocks = ["WEBVTT\n"]
    for start, end, text in cues:
        if _cue_text(text):
            end = max(end, start + 0.2)
            blocks.append(f"{_stamp(start, '.')} --> {_stamp(end, '.')}\n{_cue_text(text)}\n")
    return "\n".join(blocks)


def last_lines_text(lines, count: int) -> str:
    """The last ``count`` finished caption lines as plain text (``CaptionLine``: each sentence, with
    its translation under it when it has one), for the clipboard."""
    out = []
    for line in list(lines)[-count:] if count > 0 else []:
        speaker = line.sentence.speaker
        label = f"{speaker.capitalize()}: " if speaker else ""
        out.append(label + line.sentence.text.strip())
        if line.translation:
            out.append(label + line.translation.strip())
    return "\n".join(out)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file so a crash (even ``kill -9``) never leaves it half-written (see
    :func:`core.paths.write_atomic`). Text that UTF-8 cannot hold (a file name that is not valid
    UTF-8) is written with backslash escapes, which JSON reads back as the same string."""
    write_atomic(path, text, errors="backslashreplace")
