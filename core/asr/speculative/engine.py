"""The speculative ASR as a streaming engine: drafter + verifier decoding with word timestamps."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from ...compute import COMPUTE_GATE
from ...errors import Interrupted
from ..engine import ASREngine, Hypothesis
from ...stream import Word
from .alignment import word_timestamps
from .decoder import DecodeStats, SpeculativeDecoder, SpeculativeOptions
from .runtime import WhisperRunner


class SpeculativeEngine(ASREngine):
    """:class:`~core.asr.engine.ASREngine` whose transcript is the verifier's greedy output, decoded faster.

    Each call decodes one window speculatively; ``previous_transcript`` (the previous
    update's transcript of the words still in the window) is verified first, so a
    growing window is mostly verified in a few passes rather than decoded again.
    Word times come from the verifier's cross-attention.
    """

    def __init__(self, drafter_path: str | Path, verifier_path: str | Path,
                 options: SpeculativeOptions | None = None, device: str = "cpu",
                 calibrate_on: Path | None = None) -> None:
        """Load both models. With ``calibrate_on`` (a recording), the threshold, longest draft
        and lazy drafter come from this machine's stored calibration, measured on it the first time."""
        self.drafter = WhisperRunner(drafter_path, device=device, quantize=True)
        self.verifier = WhisperRunner(verifier_path, device=device)
        options = options or SpeculativeOptions()
        self.calibration = None
        if calibrate_on is not None:
            from dataclasses import replace

            from .calibration import calibrated

            self.calibration = calibrated(self.drafter, self.verifier, calibrate_on)
            options = replace(options, threshold=self.calibration.threshold, max_draft=self.calibration.max_draft,
                              lazy_drafter=self.calibration.lazy_drafter)
        self.decoder = SpeculativeDecoder(self.drafter, self.verifier, options)
        self.name = f"speculative:{Path(drafter_path).name}->{Path(verifier_path).name}"
        self.multilingual = self.verifier.multilingual
        self.stats = DecodeStats()
        self._lock = threading.Lock()

    def transcribe(self, audio: np.ndarray, prompt: str = "", language: str | None = None,
                   abort: threading.Event | None = None, previous_transcript: str = "") -> Hypothesis:
        """Decode one window (≤ 30 s) with word timestamps; see the class docstring."""
        with COMPUTE_GATE:
            if abort is not None and abort.is_set():
                raise Interrupted("Recognition was stopped.")
            t0 = time.perf_counter()
            language = (language if self.multilingual else "en") or "en"
            v = self.verifier
            previous = v.encode_text(" " + previous_transcript.strip()) if previous_transcript.strip() else None
            encoder_output = v.encode(audio)  # the drafter's encoder runs only if drafting is needed
            result = self.decoder.decode(audio, prompt, language, previous_tokens=previous,
                                         encoder_outputs=(encoder_output, None))
            timed = word_timestamps(v, encoder_output, v.prompt(prompt, language), result.tokens, len(audio))
            seconds = time.perf_counter() - t0
        with self._lock:
            self.stats.add(result.stats)
        words = [Word(w.start, w.end, w.text, w.probability) for w in timed]
        return Hypothesis(words, result.text.strip(), seconds)
