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

import queue
import threading
from collections.abc import Callable

import numpy as np

from .. import logger
from ..speakers import SpeakerTracker
from ..speakers.tracker import SpeakerAssignment
from ..stream import Sentence

SAMPLE_RATE = 16000
KEEP_S = 120.0  # the audio kept per stream for lines still to be labelled

LabelCallback = Callable[[int, SpeakerAssignment], None]
"""Called with a line's index and whose it is."""


class _StreamAudio:
    """The newest KEEP_S of one stream's audio, with its stream time."""

    def __init__(self) -> None:
        self.start = 0  # stream sample of self.samples[0]
        self.samples = np.zeros(0, np.float32)

    def add(self, chunk: np.ndarray) -> None:
        self.samples = np.concatenate([self.samples, np.asarray(chunk, np.float32).reshape(-1)])
        extra = len(self.samples) - int(KEEP_S * SAMPLE_RATE)
        if extra > 0:
            self.samples = self.samples[extra:]
            self.start += extra

    def cut(self, start_s: float, end_s: float) -> np.ndarray:
        a = max(int(start_s * SAMPLE_RATE) - self.start, 0)
        b = min(int(end_s * SAMPLE_RATE) - self.start, len(self.samples))
        return self.samples[a:b].copy() if b > a else np.zeros(0, np.float32)


class VoiceLabeler:
    """Labels the committed lines of the streams in ``streams`` (their speakers; "" for a single stream)."""

    def __init__(self, tracker: SpeakerTracker, streams: tuple[str, ...], on_label: LabelCallback,
                 threaded: bool) -> None:
        self.tracker = tracker
        self._audio = {s: _StreamAudio() for s in streams}
        self._on_label = on_label
        self._voice: dict[int, int] = {}  # sentence index → speaker number
        self._lock = threading.Lock()
        self._jobs: queue.Queue | None = queue.Queue() if threaded else None
        self._thread: threading.Thread | None = None
        if self._jobs is not None:
            self._thread = threading.Thread(target=self._work, name="voice-labels", daemon=True)
            self._thread.start()

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
        if self._jobs is None:
            self._label(sentence, piece)
        else:
            self._jobs.put((sentence, piece))

    def voices(self, speaker: int) -> list[int]:
        """The indices of the lines labelled so far as speaker number ``speaker``."""
        with self._lock:
            return [i for i, v in self._voice.items() if v == speaker]

    def close(self) -> None:
        """Label what is queued, then stop the worker."""
        if self._jobs is not None and self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None

    def _work(self) -> None:
        assert self._jobs is not None
        while (job := self._jobs.get()) is not None:
            self._label(*job)

    def _label(self, sentence: Sentence, piece: np.ndarray) -> None:
        if len(piece) < SAMPLE_RATE // 10:  # under 0.1 s: no voice to go on (or the audio is long gone)
            return
        try:
            assignment = self.tracker.assign(piece)
        except Exception:  # a failed label loses nothing but the label
            logger.exception("speaker label of line %d failed", sentence.index)
            return
        with self._lock:
            self._voice[sentence.index] = assignment.speaker
        self._on_label(sentence.index, assignment)
