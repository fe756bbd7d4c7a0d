"""The speculative ASR as a streaming engine: drafter + verifier decoding with word timestamps."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from ...compute import COMPUTE_GATE
from ...errors import Interrupted
from ...stream import Word
from ..engine import WHISPER_SECONDS, ASREngine, Hypothesis
from .alignment import word_timestamps
from .decoder import DecodeStats, SpeculativeDecoder, SpeculativeOptions
from .runtime import WhisperRunner


class SpeculativeEngine(ASREngine):
    """:class:`~core.asr.engine.ASREngine` whose transcript is the verifier's greedy output, decoded faster.

    Each call decodes one window speculatively; ``previous_transcript`` (the previous
    update's transcript of the words still in the window) is verified first, so a
    growing window is mostly verified in a few passes rather than decoded again.
    Word times come from the verifier's cross-attention.

    **Losslessness, per dtype** (``asr.compute_dtype``; the verifier's dtype decides, the
    drafter's never changes the output):

    - ``float32``: exactly the verifier's own greedy output (one token per pass), token for
      token (``sotto bench asr`` on the CPU and ``bench/gpu.py`` on a GPU check every decode).
    - ``float16`` / ``bfloat16``: the same greedy output *of the verifier in that dtype*,
      except at near-ties: a batched verification pass and a one-token pass round differently,
      so where the verifier's top-2 logits are closer than the tolerance
      (:data:`~.decoder.NEAR_TIES`: float16 0.125, bfloat16 0.5, about 4× the largest gap change
      measured between the two kinds of pass) the two may pick different tokens, and the rest of
      the transcript follows that choice. A divergence at a larger gap is a bug (the tree mask in
      float32 was one); ``tests/test_dtype.py`` and ``bench/gpu.py`` report every divergence
      with its gap.
    """

    def __init__(self, drafter_path: str | Path, verifier_path: str | Path,
                 options: SpeculativeOptions | None = None, device: str = "cpu",
                 calibrate_on: Path | None = None, dtype: str = "auto",
                 encoder_seconds: float = WHISPER_SECONDS) -> None:
        """Load both models on ``device`` (``auto``: CUDA, then MPS, then the CPU) in ``dtype``
        (``auto``: float32 on the CPU, float16 on a GPU). On the CPU the drafter stays float32
        with int8 linear layers (faster there, and its tokens are only proposals). With
        ``calibrate_on`` (a recording), the threshold, longest draft and lazy drafter come from
        this machine's stored calibration, measured on it the first time. Both encoders read the
        window plus 2 s, at least ``encoder_seconds`` (``asr.speculative_encoder_seconds``; 30, the
        default: Whisper's 30 s);
        the transcript is the verifier's greedy output with that encoder."""
        from ...compute import torch_device

        on_cpu = torch_device(device).startswith("cpu")
        self.drafter = WhisperRunner(drafter_path, device=device, quantize=True,
                                     dtype="float32" if on_cpu else dtype, encoder_seconds=encoder_seconds)
        self.verifier = WhisperRunner(verifier_path, device=device, dtype=dtype, encoder_seconds=encoder_seconds)
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
