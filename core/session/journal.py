"""A session's caption files, written as captions are produced so nothing is lost.

``captions.jsonl`` gets one record per update (flushed at once); each finished sentence carries
``verified`` where lines are verified (``false``: kept as the drafter heard it); ``source.srt``,
``translation.srt`` and ``summary.json`` are rewritten atomically when a
sentence is finished and at the end, so a crash loses at most the unfinished line.

The journal owns its record schema: :meth:`CaptionJournal.transcript` and
:meth:`CaptionJournal.translation` write the records, :func:`read_records` reads
them back (for the history), skipping a half-written last line.

It also owns its disk's failures: when a write fails (the disk is full, the folder
vanished or turned read-only), it stops writing, keeps what was written, and reports
one sentence once (:attr:`CaptionJournal.problem`, the ``on_problem`` callback); it
never raises into the caption loop, which goes on captioning without saving.
"""

from __future__ import annotations

import contextlib
import errno
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import logger
from ..captions.subtitles import marked_unverified, to_srt, write_text_atomic
from ..stream import TranscriptUpdate, TranslationUpdate, line_label

JOURNAL_FILE = "captions.jsonl"
# Record kinds: the session header, a transcript update, a translation update, a line's voice (its
# speaker label, found after the line), a voice renamed (for every line of it, before and after).
SESSION, TRANSCRIPT, TRANSLATION, VOICE, RENAME = "session", "source", "translation", "voice", "rename"


class CaptionJournal:
    """Writes one run's caption files into a directory."""

    def __init__(self, directory: Path, translate: bool, meta: dict[str, Any] | None = None,
                 on_problem: Callable[[str], None] | None = None) -> None:
        self.directory = Path(directory)
        self.translate = translate
        self.problem: str | None = None  # why writing stopped (one sentence), once it has
        self._on_problem = on_problem
        self._jsonl = None
        self.source_cues: dict[int, tuple[float, float, str]] = {}
        self.translation_cues: dict[int, tuple[float, float, str]] = {}
        self._lines: dict[int, tuple[str, bool | None, str]] = {}  # index → speaker, verified, source text
        self._translations: dict[int, str] = {}
        self._voice_of: dict[int, int] = {}  # index → voice number
        self._voice_labels: dict[int, str] = {}  # voice number → its label now
        self._write(self._open)
        self._record({"kind": SESSION, "started": round(time.time(), 3), **(meta or {})})

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        # errors: a source whose name is not valid UTF-8 (surrogates from the file system) is still journaled
        self._jsonl = open(self.directory / JOURNAL_FILE, "w", encoding="utf-8", errors="backslashreplace",
                           buffering=1)

    def _write(self, write: Callable[..., None], *args: Any) -> None:
        """Run one write unless writing has stopped; a failed write stops all writing."""
        if self.problem is not None:
            return
        try:
            write(*args)
        except OSError as exc:
            self._stop_writing(exc)

    def _stop_writing(self, exc: OSError) -> None:
        logger.error("journal in %s stopped writing: %s", self.directory, exc, exc_info=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            self.problem = (f"The disk holding {self.directory} is full, so captions are no longer saved "
                            "(what was saved is kept); captioning goes on without saving.")
        else:
            self.problem = (f"Captions can no longer be saved to {self.directory} ({exc.strerror or exc}); "
                            "what was saved is kept and captioning goes on without saving.")
        if self._jsonl is not None:
            with contextlib.suppress(OSError):  # the file is closed even when its last flush fails
                self._jsonl.close()
        if self._on_problem is not None:
            self._on_problem(self.problem)

    def _record(self, event: dict[str, Any]) -> None:
        if self._jsonl is None or self._jsonl.closed:
            return
        self._write(self._jsonl.write, json.dumps(event, ensure_ascii=False) + "\n")

    def transcript(self, wall: float, update: TranscriptUpdate, shown: str) -> None:
        """Journal a transcript update (``shown``: the partial line as displayed); finished
        sentences also go into ``source.srt``."""
        for s in update.sentences:
            self._lines[s.index] = (s.speaker, s.verified, s.text)
            self.source_cues[s.index] = (s.start, s.end, _cue(s.speaker, s.text, s.verified))
        if update.sentences:
            self._write_source()
        self._record({
            "kind": TRANSCRIPT,
            "wall": round(wall, 3),
            "audio_time": round(update.audio_time, 3),
            "sentences": [asdict(s) for s in update.sentences],
            "committed": update.committed,
            "tentative": update.tentative,
            **({"held": list(update.held)} if update.held else {}),
            "shown": shown,
            "final": update.final,
            **({"speaker": update.speaker} if update.speaker else {}),
            "asr_s": round(update.timings.asr, 4),
        })

    def translation(self, wall: float, update: TranslationUpdate, shown: str) -> None:
        """Journal a translation update (``shown``: the partial translation as displayed); frozen
        translations also go into ``translation.srt``."""
        for f in update.frozen:
            s = f.sentence
            self._translations[s.index] = f.text
            self.translation_cues[s.index] = (s.start, s.end, _cue(s.speaker, f.text, s.verified,
                                                                   self._voice_label(s.index)))
        if update.frozen:
            self._write_translation()
        self._record({
            "kind": TRANSLATION,
            "wall": round(wall, 3),
            "audio_time": round(update.audio_time, 3),
            "frozen": [{"index": f.sentence.index, "source": f.sentence.text, "text": f.text} for f in update.frozen],
            # an update of finished sentences alone says nothing about the partial
            **({"partial_source": update.partial_source, "partial_translation": update.partial_translation}
               if update.partial else {}),
            "shown": shown,
            "translate_s": round(update.seconds, 4),
            **({"speaker": update.speaker} if update.speaker else {}),
        })

    def voice(self, wall: float, index: int, voice: int, label: str, similarity: float, mixed: bool) -> None:
        """Journal line ``index``'s voice (number and label); its cues in the subtitle files get the label."""
        self._voice_of[index] = voice
        self._voice_labels[voice] = label
        self._relabel([index])
        self._record({"kind": VOICE, "wall": round(wall, 3), "index": index, "voice": voice, "label": label,
                      "similarity": similarity, **({"mixed": True} if mixed else {})})

    def rename(self, wall: float, voice: int, label: str) -> None:
        """Journal that voice number ``voice`` is called ``label`` now; every line of it is relabelled."""
        self._voice_labels[voice] = label
        self._relabel([i for i, v in self._voice_of.items() if v == voice])
        self._record({"kind": RENAME, "wall": round(wall, 3), "voice": voice, "label": label})

    def _voice_label(self, index: int) -> str:
        voice = self._voice_of.get(index)
        return self._voice_labels.get(voice, "") if voice is not None else ""

    def _relabel(self, indices: list[int]) -> None:
        for index in indices:
            if index not in self._lines:
                continue
            speaker, verified, text = self._lines[index]
            label = self._voice_label(index)
            start, end, _ = self.source_cues[index]
            self.source_cues[index] = (start, end, _cue(speaker, text, verified, label))
            if index in self._translations:
                self.translation_cues[index] = (start, end, _cue(speaker, self._translations[index], verified, label))
        if indices:
            self._write_source()
            self._write_translation()

    def _write_source(self) -> None:
        cues = [self.source_cues[i] for i in sorted(self.source_cues)]
        self._write(write_text_atomic, self.directory / "source.srt", to_srt(cues))

    def _write_translation(self) -> None:
        if self.translate:
            cues = [self.translation_cues[i] for i in sorted(self.translation_cues)]
            self._write(write_text_atomic, self.directory / "translation.srt", to_srt(cues))

    def close(self, summary: dict[str, Any]) -> None:
        """Write the final files and ``summary.json`` (nothing once writing has stopped)."""
        self._write_source()
        self._write_translation()
        self._write(write_text_atomic, self.directory / "summary.json",
                    json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        if self._jsonl is not None and not self._jsonl.closed:
            self._write(self._jsonl.close)


def _cue(speaker: str, text: str, verified: bool | None, voice: str = "") -> str:
    """A caption for the subtitle files, after its voice's label or its speaker's name when there are
    several streams, in italics when its line was not verified (:func:`~core.captions.subtitles.marked_unverified`)."""
    label = line_label(speaker, voice)
    said = f"{label}: {text.strip()}" if label else text
    return marked_unverified(said) if verified is False else said


def append_rename(directory: Path, voice: int, label: str) -> None:
    """Add to a finished session's journal that voice number ``voice`` is called ``label`` (raises ``OSError``)."""
    with open(Path(directory) / JOURNAL_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": RENAME, "wall": None, "voice": voice, "label": label}, ensure_ascii=False) + "\n")


def read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The records of a journal file, and how many lines could not be read (a crash
    mid-write leaves at most one)."""
    records: list[dict[str, Any]] = []
    damaged = 0
    for line in _lines(path):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            damaged += 1
    return records, damaged


def _lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                yield line
