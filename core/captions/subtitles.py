"""Subtitle files (SRT, WebVTT) from finished sentences."""

from __future__ import annotations

from pathlib import Path


def _stamp(seconds: float, sep: str) -> str:
    ms = max(0, int(round(seconds * 1000)))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def to_srt(cues: list[tuple[float, float, str]]) -> str:
    """SRT text for (start, end, text) cues."""
    blocks = []
    for i, (start, end, text) in enumerate(c for c in cues if c[2].strip()):
        end = max(end, start + 0.2)
        blocks.append(f"{i + 1}\n{_stamp(start, ',')} --> {_stamp(end, ',')}\n{text.strip()}\n")
    return "\n".join(blocks)


def to_vtt(cues: list[tuple[float, float, str]]) -> str:
    """WebVTT text for (start, end, text) cues."""
    blocks = ["WEBVTT\n"]
    for start, end, text in cues:
        if text.strip():
            end = max(end, start + 0.2)
            blocks.append(f"{_stamp(start, '.')} --> {_stamp(end, '.')}\n{text.strip()}\n")
    return "\n".join(blocks)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file so a crash never leaves it half-written."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
