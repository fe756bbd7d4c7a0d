"""Speaker labels for committed lines, found off the caption thread (issue #50).

The pipeline shows a committed line at once; :class:`VoiceLabeler` then embeds that line's audio
and asks the :class:`~core.speakers.SpeakerTracker` whose voice it is, and the label follows the
line (``on_label``): at once in fast mode (a file, every step in order, so results repeat), on a
worker thread in real time, so labelling never delays a caption on screen. The labeler keeps the
last :data:`KEEP_S` of each labelled stream's audio to cut a line's audio from; a line older than that
when its turn comes (a worker far behind) is labelled from what is left of it, or not at all.

The labeler takes no turn at the compute gate: the encoder is numpy on one thread, a few
hundredths of a CPU-second per second of speech (``sotto bench speakers``), so it runs beside a
decode instead of making one wait.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable

import numpy as np

from .. import logger
from ..speakers import SpeakerTracker
from ..speakers.tracker import SpeakerAssignment
from ..stream import Sentence
from ..threads import JobThread

SAMPLE_RATE = 16000
KEEP_S = 120.0  # the audio kept per stream for lines still to be labelled

LabelCallback = Callable[[int, SpeakerAssignment], None]
"""Called with a line's index and whose it is: once when it is labelled, and again for each line of a speaker
found to be another's voice (merged: the tracker's docstring says when)."""


class _StreamAudio:
    """The newest KEEP_S (or a little more) of one stream's audio, as the chunks it came in, with stream time."""

    def __init__(self) -> None:
        self.start = 0  # stream sample of the first chunk's first sample
        self.chunks: collections.deque[np.ndarray] = collections.deque()
        self.size = 0

    def add(self, chunk: np.ndarray) -> None:
        self.chunks.append(np.asarray(chunk, np.float32).reshape(-1))
        self.size += len(self.chunks[-1])
        while self.size - len(self.chunks[0]) >= KEEP_S * SAMPLE_RATE:
            first = self.chunks.popleft()
            self.size -= len(first)
            self.start += len(first)

    def cut(self, start_s: float, end_s: float) -> np.ndarray:
        a = max(int(start_s * SAMPLE_RATE) - self.start, 0)
        b = min(int(end_s * SAMPLE_RATE) - self.start, self.size)
        if b <= a:
            return np.zeros(0, np.float32)
        pieces, offset = [], 0
        for chunk in self.chunks:  # only the chunks the line overlaps are copied
            lo, hi = max(a - offset, 0), min(b - offset, len(chunk))
            if lo < hi:
                pieces.append(chunk[lo:hi])
            offset += len(chunk)
            if offset >= b:
                break
        return np.concatenate(pieces)


class VoiceLabeler:
    """Labels the committed lines of the streams in ``streams`` (their speakers; "" for a single stream)."""

    def __init__(self, tracker: SpeakerTracker, streams: tuple[str, ...], on_label: LabelCallback,
                 threaded: bool) -> None:
        self.tracker = tracker
        self._audio = {s: _StreamAudio() for s in streams}
        self._on_label = on_label
        self._voice: dict[int, int] = {}  # sentence index → speaker number
        self._lock = threading.Lock()
        self._worker = JobThread("voice-labels", lambda job: self._label(*job)) if threaded else None

    def labels(self, stream: str) -> bool:
        """Whether ``stream``'s lines are labelled."""
        return stream in self._audio

    def feed(self, stream: str, chunk: np.ndarray) -> None:
        """The audio of ``stream`` as the transcriber gets it (in order; ignored for a stream not labelled)."""
        audio = self._audio.get(stream)
        if audio is not None:
            with self._lock:
                audio.add(chunk)

    def submit(self, sentence: Sentence) -> None:
        """Label a committed line of a labelled stream (its audio must have been fed)."""
        audio = self._audio.get(sentence.speaker)
        if audio is None:
            return
        with self._lock:
            piece = audio.cut(sentence.start, sentence.end)
        if self._worker is None:
            self._label(sentence, piece)
        else:
            self._worker.submit((sentence, piece))

    def voices(self, speaker: int) -> list[int]:
        """The indices of the lines labelled so far as speaker number ``speaker``."""
        with self._lock:
            return [i for i, v in self._voice.items() if v == speaker]

    def close(self) -> None:
        """Label what is queued, then stop the worker."""
        if self._worker is not None:
            self._worker.close(timeout=None)
            self._worker = None

    def _label(self, sentence: Sentence, piece: np.ndarray) -> None:
        if len(piece) < SAMPLE_RATE // 10:  # under 0.1 s: no voice to go on (or the audio is long gone)
            return
        try:
            assignment = self.tracker.assign(piece)
        except Exception:  # a failed label loses nothing but the label
            logger.exception("speaker label of line %d failed", sentence.index)
            return
        moved: list[int] = []
        with self._lock:
            self._voice[sentence.index] = assignment.speaker
            if assignment.merged is not None:
                gone, kept = assignment.merged
                moved = [i for i, v in self._voice.items() if v == gone]
                self._voice.update(dict.fromkeys(moved, kept))
        self._on_label(sentence.index, assignment)
        for index in moved:  # relabelled as the voice they proved to be
            self._on_label(index, dataclasses.replace(assignment, speaker=assignment.merged[1], new=False))
