"""Online speaker labels: each committed line's voice against the speakers heard so far.

A line's embedding (:class:`~core.speakers.encoder.VoiceEncoder`) is compared with the centroid of each
speaker so far (the mean of their lines' embeddings, each weighted by its length up to ``weigh_s``).
Voices heard through one channel (a call, a meeting app's codec) share much of their embeddings: two
people's lines are often as close in plain cosine as one person's. So once there are two speakers the
comparison is *contrastive*: the line and the centroids are taken relative to the session's mean voice
(the running mean of every line so far), where two voices point apart. A line joins the nearest speaker
unless it is far from all of them, both in plain cosine (below ``threshold``) and relative to the mean
(below ``contrast``); then it opens a new speaker, unless ``max_speakers`` are open already or the line is
shorter than ``min_new_s`` (too little voice to found a speaker on). With one speaker so far only the
plain cosine can tell, and on clean audio two short lines of one voice can fall below ``threshold``: the
voice is then split in two. Once a third speaker shows where the voices lie, two speakers whose centroids
point the same way relative to the speakers' mean (cosine at least ``merge``) and are close in plain cosine
(at least ``threshold``) are one voice: the later is merged into the earlier, and the assignment names
both, so the lines so far can be relabelled (a number merged away is not used again). Tuned on real calls
(``sotto bench speakers``, tune split).

A line that holds two voices gets the label of its majority: its embedding is the mean of its 1.6 s
windows, so the voice with more of the line dominates it. The line is not split, because the words'
times are not known here and a split would need them to divide the text; the assignment says ``mixed``
when the line's windows disagree about the nearest speaker, so a front end can mark it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .encoder import VoiceEncoder


@dataclass(frozen=True)
class TrackerOptions:
    """How lines are grouped into speakers, and how the speakers are named."""

    threshold: float = 0.77  # plain cosine to every centroid below which a line may be a new voice
    contrast: float = -0.4  # cosine relative to the session's mean voice below which it is (two speakers on)
    max_speakers: int = 0  # the expected number of speakers, a cap (0: unknown)
    min_new_s: float = 1.5  # a line shorter than this never opens a new speaker (unless it is the first)
    merge: float = 0.2  # two of three or more speakers this alike relative to their mean are one (0: never)
    weigh_s: float = 4.0  # a line's weight in its speaker's centroid: its seconds, up to this
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
    merged: tuple[int, int] | None = None  # (gone, kept): speaker ``gone`` proved to be ``kept``; its lines are now


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


class SpeakerTracker:
    """Speaker numbers for a session's lines, in the order they were said (thread-safe)."""

    def __init__(self, encoder: VoiceEncoder | None, options: TrackerOptions | None = None) -> None:
        self.encoder = encoder
        self.options = options or TrackerOptions()
        self._sums: list[np.ndarray | None] = []  # per speaker number - 1: their lines' weighted sum (None: merged)
        self._total = np.zeros(0, np.float32)  # the weighted sum of every line's embedding
        self._weight = 0.0  # and the sum of their weights
        self._names: dict[int, str] = {}
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """How many speakers have been heard (those merged into another not counted)."""
        return len(self._alive())

    def _alive(self) -> list[int]:
        return [i for i, total in enumerate(self._sums) if total is not None]

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
        return self.assign_embedding(windows.mean(axis=0), len(audio) / sample_rate, windows)

    def assign_embedding(self, embedding: np.ndarray, seconds: float,
                         windows: np.ndarray | None = None) -> SpeakerAssignment:
        """The speaker of a line from its embedding and length (and its windows' embeddings, for ``mixed``)."""
        vector = _unit(np.asarray(embedding, dtype=np.float32))
        opts = self.options
        weight = min(seconds, opts.weigh_s) if opts.weigh_s else 1.0
        with self._lock:
            self._total = self._total + vector * weight if len(self._total) else vector * weight
            self._weight += weight
            plain = self._plain(vector)
            alive = self._alive()
            if not alive:
                best, far = -1, True
            elif len(alive) == 1:
                best, far = alive[0], plain[alive[0]] < opts.threshold
            else:
                relative = self._relative(vector)
                best = int(np.argmax(relative))
                far = relative[best] < opts.contrast and plain.max() < opts.threshold
            capped = bool(opts.max_speakers) and len(alive) >= opts.max_speakers
            opens = best < 0 or (far and not capped and seconds >= opts.min_new_s)
            if opens:
                self._sums.append(vector * weight)
                index, similarity, mixed = len(self._sums) - 1, 1.0, False
            else:
                index, similarity = best, float(plain[best])
                mixed = self._mixed(windows, index)
                self._sums[index] = self._sums[index] + vector * weight
            merged = self._merge()
            if merged is not None and index == merged[0] - 1:
                index = merged[1] - 1
            speaker = index + 1
            label = self._names.get(speaker) or f"{opts.prefix} {speaker}"
        return SpeakerAssignment(speaker, label, round(similarity, 4), opens, mixed, merged)

    def _merge(self) -> tuple[int, int] | None:
        """The two most alike speakers merged (the later into the earlier) if there are three or more and their
        centroids, relative to the speakers' mean, are within ``merge``: (gone, kept) speaker numbers."""
        alive = self._alive()
        if not self.options.merge or len(alive) < 3:
            return None
        units = {i: _unit(self._sums[i]) for i in alive}
        mean = np.mean(list(units.values()), axis=0)
        relative = {i: _unit(u - mean) for i, u in units.items()}
        score, keep, gone = max((float(relative[a] @ relative[b]), a, b) for n, a in enumerate(alive)
                                for b in alive[n + 1:])
        if score < self.options.merge or float(units[keep] @ units[gone]) < self.options.threshold:
            return None
        self._sums[keep] = self._sums[keep] + self._sums[gone]
        self._sums[gone] = None
        return gone + 1, keep + 1

    def _plain(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of ``vector`` to each speaker's centroid (-inf for one merged away)."""
        return np.array([-np.inf if total is None else float(_unit(total) @ vector) for total in self._sums],
                        np.float32)

    def _relative(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of ``vector`` to each centroid, both taken relative to the session's mean voice (-inf: merged)."""
        mean = self._total / self._weight
        line = _unit(vector - mean)
        return np.array([-np.inf if total is None else float(_unit(_unit(total) - mean) @ line)
                         for total in self._sums], np.float32)

    def _mixed(self, windows: np.ndarray | None, index: int) -> bool:
        if windows is None or len(windows) < 2 or self.count < 2:
            return False
        nearest = {int(np.argmax(self._relative(_unit(w)))) for w in windows}
        return nearest != {index}
