"""Caption history: every session's journal on disk, read back for browsing, search and export.

Each caption session writes its :class:`~core.session.journal.CaptionJournal`
into its own folder under ``<data dir>/history``. The journal's
``captions.jsonl`` is appended line by line as captions are produced, so after
a crash (even ``kill -9``) everything committed is there; a half-written last
line is skipped when reading. Only the unfinished (tentative) line can be lost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..captions.subtitles import marked_unverified, to_srt, to_vtt, write_text_atomic
from ..errors import SottoError
from ..paths import data_dir
from ..stream import line_label
from .journal import JOURNAL_FILE, RENAME, SESSION, TRANSCRIPT, TRANSLATION, VOICE, append_rename, read_records

EXPORT_FORMATS = ("srt", "vtt", "txt")
UNVERIFIED_NOTE = "(unverified)"  # after a line kept as the drafter heard it, in text exports and the History


@dataclass
class HistoryEntry:
    """One committed caption: a finished sentence and its translation (None if none arrived)."""

    index: int
    start: float  # seconds from the start of the session's audio
    end: float
    source: str
    translation: str | None = None
    speaker: str = ""  # "me" or "them" when the session captioned several streams
    verified: bool | None = None  # False: kept as the drafter heard it (None: nothing verified lines)
    voice: str = ""  # who said it, where speaker labels were on ("Them 2", or the name it was given)
    voice_id: int = 0  # that voice's number in its session (0: none)

    @property
    def label(self) -> str:
        """What is written before it: its voice, else its stream's speaker ("" for a single stream)."""
        return line_label(self.speaker, self.voice)


@dataclass
class HistorySession:
    """One caption session read back from disk."""

    path: Path
    started: float  # Unix time
    source: str = "?"
    target: str | None = None
    entries: list[HistoryEntry] = field(default_factory=list)
    damaged_lines: int = 0  # lines that could not be read (a crash mid-write leaves at most one)

    @property
    def voices(self) -> dict[int, str]:
        """The voices its lines were labelled with (speaker labels on): number → label now."""
        return {e.voice_id: e.voice for e in self.entries if e.voice_id}

    @property
    def name(self) -> str:
        """The folder name (unique, sortable by start time)."""
        return self.path.name

    @property
    def title(self) -> str:
        """A line for lists: date, time and what was captioned."""
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started))
        what = Path(self.source).name if self.source not in ("?", "") else "captions"
        return f"{stamp} — {what}" + (f" → {self.target}" if self.target else "")


def read_session(path: Path) -> HistorySession:
    """Read one session folder's ``captions.jsonl`` (tolerates a truncated last line)."""
    path = Path(path)
    journal = path / JOURNAL_FILE
    session = HistorySession(path, started=journal.stat().st_mtime if journal.exists() else 0.0)
    if not journal.exists():
        return session
    by_index: dict[int, HistoryEntry] = {}
    names: dict[int, str] = {}  # voice number → the name it was given
    records, session.damaged_lines = read_records(journal)
    for event in records:
        kind = event.get("kind")
        if kind == SESSION:
            session.started = float(event.get("started", session.started))
            session.source = str(event.get("source", "?"))
            session.target = event.get("target")
        elif kind == TRANSCRIPT:
            for s in event.get("sentences", []):
                verified = s.get("verified")
                entry = HistoryEntry(int(s["index"]), float(s["start"]), float(s["end"]), str(s["text"]).strip(),
                                     speaker=str(s.get("speaker", "")),
                                     verified=None if verified is None else bool(verified))
                by_index[entry.index] = entry
                session.entries.append(entry)
        elif kind == VOICE:
            entry = by_index.get(int(event.get("index", -1)))
            if entry is not None:
                entry.voice_id = int(event.get("voice", 0))
                entry.voice = names.get(entry.voice_id) or str(event.get("label", ""))
        elif kind == RENAME:  # the name holds for every line of that voice, before the rename too
            voice, label = int(event.get("voice", 0)), str(event.get("label", ""))
            names[voice] = label
            for entry in session.entries:
                if entry.voice_id == voice:
                    entry.voice = label
        elif kind == TRANSLATION:
            for fr in event.get("frozen", []):
                entry = by_index.get(int(fr["index"]))
                if entry is not None:
                    entry.translation = str(fr["text"]).strip()
    return session


def rename_voice(path: Path, voice: int, name: str) -> HistorySession:
    """Call voice number ``voice`` of the saved session in ``path`` ``name``, in every line of it: the journal
    records it, and the session's subtitle files are written again with the new label. Returns the session
    read back. Raises :class:`SottoError` in one sentence (no such voice, an empty name, a file not writable)."""
    session = read_session(path)
    if voice not in session.voices:
        raise SottoError(f"This session has no speaker number {voice}; its speakers are "
                         f"{', '.join(f'{n} ({label})' for n, label in sorted(session.voices.items())) or 'none'}.")
    if not name.strip():
        raise SottoError("A speaker's new name cannot be empty.")
    try:
        append_rename(path, voice, name.strip())
        session = read_session(path)
        for which in ("source", "translation"):
            if (Path(path) / f"{which}.srt").exists():
                export_entries(session.entries, Path(path) / f"{which}.srt", "srt", which)
    except OSError as exc:
        raise SottoError(f"Could not rename the speaker in {path} ({exc.strerror or exc}).") from exc
    return session


class CaptionHistory:
    """The folder of all sessions: create new ones, list, search and export them."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else data_dir() / "history"

    def new_session_dir(self) -> Path:
        """A fresh, unique folder for a session starting now."""
        self.root.mkdir(parents=True, exist_ok=True)
        base = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1000):
            path = self.root / (base if n == 0 else f"{base}-{n}")
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
        raise SottoError(f"Could not create a history folder in {self.root}.")

    def sessions(self) -> list[HistorySession]:
        """All sessions, newest first (empty ones left out)."""
        if not self.root.is_dir():
            return []
        out = [read_session(p) for p in sorted(self.root.iterdir(), reverse=True) if p.is_dir()]
        return [s for s in out if s.entries]

    def search(self, query: str) -> list[tuple[HistorySession, HistoryEntry]]:
        """Entries whose source or translation contains ``query`` (case-insensitive), newest session first."""
        q = query.casefold().strip()
        hits = []
        for session in self.sessions():
            for entry in session.entries:
                if not q or q in entry.source.casefold() or q in (entry.translation or "").casefold():
                    hits.append((session, entry))
        return hits


def export_entries(entries: list[HistoryEntry], path: Path, fmt: str | None = None, which: str = "both") -> Path:
    """Write ``entries`` as SRT, VTT or plain text (``fmt`` defaults to the file's suffix).

    ``which`` picks the lines: ``source``, ``translation`` or ``both`` (translation
    under the source in each cue). A line that was not verified is in italics in SRT and VTT and
    followed by :data:`UNVERIFIED_NOTE` in text. Returns the path written.
    """
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt not in EXPORT_FORMATS:
        raise SottoError(f"Captions can be exported as {', '.join(EXPORT_FORMATS).upper()}, not '{fmt}'.")
    if which not in ("source", "translation", "both"):
        raise SottoError(f"Export 'source', 'translation' or 'both', not '{which}'.")

    def text(e: HistoryEntry) -> str:
        parts = []
        if which in ("source", "both"):
            parts.append(e.source)
        if which in ("translation", "both") and e.translation:
            parts.append(e.translation)
        said = "\n".join(parts)
        said = f"{e.label}: {said}" if e.label and said else said
        if e.verified is False and said:
            said = marked_unverified(said) if fmt != "txt" else f"{said} {UNVERIFIED_NOTE}"
        return said

    cues = [(e.start, e.end, text(e)) for e in entries]
    if fmt == "srt":
        body = to_srt(cues)
    elif fmt == "vtt":
        body = to_vtt(cues)
    else:
        body = "".join(f"{c[2]}\n\n" if which == "both" else f"{c[2]}\n" for c in cues if c[2].strip())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, body)
    except OSError as exc:
        raise SottoError(f"Could not write {path} ({exc.strerror or exc}).") from exc
    return path
