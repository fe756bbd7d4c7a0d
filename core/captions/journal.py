"""Caption output files, written as captions are produced so nothing is lost.

``captions.jsonl`` gets one line per update (flushed at once); ``source.srt``,
``translation.srt`` and ``summary.json`` are rewritten atomically when a
sentence is finished and at the end, so a crash loses at most the unfinished line.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .subtitles import to_srt, write_text_atomic


class CaptionJournal:
    """Writes one run's caption files into a directory."""

    def __init__(self, directory: Path, translate: bool, meta: dict[str, Any] | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.translate = translate
        self._jsonl = open(self.directory / "captions.jsonl", "w", encoding="utf-8", buffering=1)
        self.source_cues: list[tuple[float, float, str]] = []
        self.translation_cues: dict[int, tuple[float, float, str]] = {}
        self.record({"kind": "session", "started": round(time.time(), 3), **(meta or {})})

    def record(self, event: dict[str, Any]) -> None:
        """Append one update to ``captions.jsonl``."""
        if self._jsonl.closed:
            return
        self._jsonl.write(json.dumps(event, ensure_ascii=False) + "\n")

    def add_sentence(self, start: float, end: float, text: str) -> None:
        """A finished source sentence (rewrites ``source.srt``)."""
        self.source_cues.append((start, end, text))
        write_text_atomic(self.directory / "source.srt", to_srt(self.source_cues))

    def add_translation(self, index: int, start: float, end: float, text: str) -> None:
        """The final translation of sentence ``index`` (rewrites ``translation.srt``)."""
        self.translation_cues[index] = (start, end, text)
        self._write_translation()

    def _write_translation(self) -> None:
        if self.translate:
            cues = [self.translation_cues[i] for i in sorted(self.translation_cues)]
            write_text_atomic(self.directory / "translation.srt", to_srt(cues))

    def close(self, summary: dict[str, Any]) -> None:
        """Write the final files and ``summary.json``."""
        write_text_atomic(self.directory / "source.srt", to_srt(self.source_cues))
        self._write_translation()
        write_text_atomic(self.directory / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        self._jsonl.close()
