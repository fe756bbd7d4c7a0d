"""Online speaker labels: each committed line's voice against the speakers heard so far.

A line's embedding (:class:`~core.speakers.encoder.VoiceEncoder`) is compared by cosine with the
centroid of each speaker so far; the nearest one at or above ``threshold`` takes the line (and its
centroid moves towards it), otherwise a new speaker opens, unless ``max_speakers`` are open already
(then the nearest takes it) or the line is shorter than ``min_new_s`` (too little voice to found a
speaker on: the nearest takes it).

A line that holds two voices gets the label of its majority: its embedding is the mean of its
1.6 s windows, so the voice with more of the line's windows dominates it. The line is not split,
because the words' times are not known here and a split would need them to divide the text; the
assignment says ``mixed`` when the line's windows disagree about the nearest speaker, so a front end
can mark it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .encoder import VoiceEncoder


@dataclass(frozen=True)
class TrackerOptions:
    """How lines are grouped into speakers, and how the speakers are named."""

    threshold: float = 0.75  # cosine to a speaker's centroid at or above which a line is theirs
    max_speakers: int = 0  # the expected number of speakers, a cap (0: unknown)
    min_new_s: float = 1.0  # a line shorter than this never opens a new speaker (unless it is the first)
    prefix: str = "Speaker"  # labels are "<prefix> 1", "<prefix> 2", …


@dataclass(frozen=True)
class SpeakerAssignment:
    """Whose a line is: the speaker's number (from 1), its label now, the cosine to its centroid before
    the line joined it (1.0 for a speaker the line opened), and whether the line's windows disagree."""

    speaker: int
    label: str
    similarity: float
    new: bool
    mixed: bool = False


class SpeakerTracker:
    """Speaker numbers for a session's lines, in the order they were said (thread-safe)."""

    def __init__(self, encoder: VoiceEncoder | None, options: TrackerOptions | None = None) -> None:
        self.encoder = encoder
        self.options = options or TrackerOptions()
        self._sums: list[np.ndarray] = []
        self._names: dict[int, str] = {}
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """How many speakers have been heard."""
        return len(self._sums)

    def label(self, speaker: int) -> str:
        """The speaker's label: the name given by :meth:`rename`, else "<prefix> N"."""
        with self._lock:
            return self._names.get(speaker) or f"{self.options.prefix} {speaker}"

    def rename(self, speaker: int, name: str) -> None:
        """Call speaker ``speaker`` ``name`` from now on (an empty name restores the number)."""
        with self._lock:
            if name.strip():
                self._names[speaker] = name.strip()
            else:
                self._names.pop(speaker, None)

    def assign(self, audio: np.ndarray, sample_rate: int = 16000) -> SpeakerAssignment:
        """The speaker of a line's audio (mono float, 16 kHz)."""
        if self.encoder is None:
            raise RuntimeError("this tracker has no encoder; use assign_embedding")
        windows = self.encoder.forward(self.encoder.window_mels(audio))
        mean = windows.mean(axis=0)
        return self.assign_embedding(mean, len(audio) / sample_rate, windows)

    def assign_embedding(self, embedding: np.ndarray, seconds: float,
                         windows: np.ndarray | None = None) -> SpeakerAssignment:
        """The speaker of a line from its embedding and length (and its windows' embeddings, for ``mixed``)."""
        vector = np.asarray(embedding, dtype=np.float32)
        vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
        opts = self.options
        with self._lock:
            sims = self._similarities(vector)
            best = int(np.argmax(sims)) if len(sims) else -1
            capped = bool(opts.max_speakers) and len(self._sums) >= opts.max_speakers
            opens = best < 0 or (sims[best] < opts.threshold and not capped and seconds >= opts.min_new_s)
            if opens:
                self._sums.append(vector.copy())
                index, similarity = len(self._sums) - 1, 1.0
            else:
                index, similarity = best, float(sims[best])
                mixed = self._mixed(windows, index)
                self._sums[index] = self._sums[index] + vector
            speaker = index + 1
            label = self._names.get(speaker) or f"{opts.prefix} {speaker}"
        return SpeakerAssignment(speaker, label, round(similarity, 4), opens, False if opens else mixed)

    def _similarities(self, vector: np.ndarray) -> np.ndarray:
        if not self._sums:
            return np.zeros(0, np.float32)
        centroids = np.stack(self._sums)
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
        return centroids @ vector

    def _mixed(self, windows: np.ndarray | None, index: int) -> bool:
        if windows is None or len(windows) < 2 or len(self._sums) < 2:
            return False
        nearest = {int(np.argmax(self._similarities(w))) for w in windows}
        return nearest != {index}
