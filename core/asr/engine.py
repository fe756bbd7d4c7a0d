"""ASR engines: one model, one ``transcribe(audio, prompt)`` call returning timed words.

The baseline :class:`FasterWhisperEngine` runs faster-whisper (CTranslate2)
greedy decoding; it decides when a window gets a second pass and how many feature
frames the encoder reads, and :mod:`core.asr.faster_whisper_runner` makes
faster-whisper do so. Later engines (the speculative drafter/verifier pair) offer
the same method, so :class:`~core.asr.streaming.StreamingTranscriber` takes either.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .. import logger
from ..compute import COMPUTE_GATE, NO_CUDA_GPU, ct2_compute_type, ct2_cuda_problem, cuda_available
from ..errors import Interrupted, ModelMemoryError, out_of_memory
from ..stream import Word
from .faster_whisper_runner import SecondPass, one_pass_model_class


@dataclass
class Hypothesis:
    """One decoding of an audio window: words with times relative to the window start."""

    words: list[Word]
    text: str
    decode_seconds: float = 0.0
    model: str = ""  # the engine whose greedy decode this is, where a decode may come from either of two
    # stopped at the most tokens its audio can hold (:func:`token_limit`), not at its end: a loop, as
    # :func:`~core.asr.streaming.degenerate` text is; its words up to there are the decode's own
    runaway: bool = False


class ASREngine(Protocol):
    """What the streaming transcriber needs from an engine."""

    name: str

    def transcribe(self, audio: np.ndarray, prompt: str = "", language: str | None = None,
                   abort: threading.Event | None = None, previous_transcript: str = "") -> Hypothesis: ...

    def interrupt(self) -> None:
        """Wake a caller waiting for a decode so it can see its abort signal (a no-op where
        decodes run on the caller's thread)."""


def default_threads() -> int:
    """Threads for inference: the machine's cores (at least 1)."""
    return max(1, os.cpu_count() or 1)


# The speech encoder reads a window padded to at least ENCODER_SECONDS, with at least
# ENCODER_PAD_S of padding after the audio, instead of Whisper's 30 s (30 = Whisper's own): the
# attention over 1500 positions is most of an encoder pass, and a short window with this padding is
# heard as well (`sotto bench encoder`). The floor is needed: with only the window and a little
# padding Whisper loops, having been trained on windows that end in padding. The speculative engine's
# PyTorch runner can read the same frames (core.asr.speculative.runtime.WhisperRunner.encode), but by
# default reads 30 s: with base as its verifier the floor cost accuracy (`sotto bench encoder
# --engine speculative`).
ENCODER_SECONDS = 10.0
ENCODER_PAD_S = 2.0
FRAMES_PER_SECOND = 100  # Whisper's feature frames (10 ms hop); the encoder halves them
WHISPER_FRAMES = 3000
WHISPER_SECONDS = 30.0


def encoder_frames_rule(seconds: float):
    """How many feature frames the encoder reads for a segment of ``content`` frames: the content
    plus ENCODER_PAD_S of padding, at least ``seconds`` worth, at most Whisper's 3000; an even
    count (the encoder's stride-2 convolution). ``None`` (``seconds`` ≥ 30): always 3000."""
    if seconds >= WHISPER_FRAMES / FRAMES_PER_SECOND:
        return None
    low, pad = int(seconds * FRAMES_PER_SECOND), int(ENCODER_PAD_S * FRAMES_PER_SECOND)

    def frames(content: int) -> int:
        n = max(low, content + pad)
        return min(WHISPER_FRAMES, n + n % 2)

    return frames


def content_frames(features: np.ndarray) -> int:
    """Frames of a padded segment up to its last frame that is not all zeros: faster-whisper pads
    a segment to 3000 frames with exact zeros, and trailing all-zero frames of the audio itself
    (if any) are the same input as that padding."""
    filled = np.flatnonzero(np.any(features.reshape(-1, features.shape[-1]) != 0, axis=0))
    return int(filled[-1]) + 1 if filled.size else 0


class FasterWhisperEngine(ASREngine):
    """faster-whisper greedy decoding with word timestamps (the baseline engine); ``compute_type``
    is ``asr.compute_dtype`` (``auto``: :func:`core.compute.ct2_compute_type`). With
    ``stop_runaways`` a decode stops once it holds more tokens than its audio can
    (:func:`token_limit`) and is marked ``Hypothesis.runaway``: a loop, whose tokens past there
    would cost seconds on two cores and be refused anyway."""

    def __init__(
        self,
        model_path: str | Path,
        device: str = "cpu",
        compute_type: str = "auto",
        cpu_threads: int = 0,
        one_pass: bool = True,
        encoder_seconds: float = ENCODER_SECONDS,
        stop_runaways: bool = True,
    ) -> None:

        if device == "auto":
            device = "cuda" if cuda_available() else "cpu"
            if device == "cpu" and ct2_cuda_problem() != NO_CUDA_GPU:  # a GPU is here but unusable: say why
                logger.warning("speech on the CPU: %s", ct2_cuda_problem())
        elif device.split(":")[0] == "cuda" and ct2_cuda_problem() is not None:
            from ..errors import ModelError

            # CTranslate2 would load and then fail at the first decode: say why now, in one sentence
            raise ModelError(f"{ct2_cuda_problem()} Set Settings › Compute to CPU or Automatic.")
        try:
            compute_type = ct2_compute_type(compute_type, device)
        except ValueError as exc:
            from ..errors import ModelError

            raise ModelError(str(exc)) from exc
        self.name = f"faster-whisper:{Path(model_path).name}"
        self.model_name = Path(model_path).name  # the store folder's name is the model's
        self.compute_type = compute_type
        try:
            self.model = one_pass_model_class()(
                str(model_path),
                device=device,
                compute_type=compute_type,
                cpu_threads=cpu_threads or default_threads(),
                local_files_only=True,
            )
        except Exception as exc:  # CTranslate2: RuntimeError / ValueError for bad files, "failed to allocate"
            from ..models.store import load_failure

            logger.exception("loading Whisper model from %s failed", model_path)
            raise load_failure(model_path, "whisper-ct2", exc) from exc
        self.multilingual = self.model.model.is_multilingual
        self._decoded: np.ndarray | None = None  # the audio of the last decode
        self.one_pass = one_pass
        self.stop_runaways = stop_runaways  # a decode past the tokens its audio can hold stops (token_limit)
        rule = encoder_frames_rule(encoder_seconds)
        self.model.encoder_frames = None if rule is None else lambda features: rule(content_frames(features))

    def transcribe(self, audio: np.ndarray, prompt: str = "", language: str | None = None,
                   abort: threading.Event | None = None, previous_transcript: str = "") -> Hypothesis:
        """Greedy transcription of one window (≤ 30 s) with word timestamps.

        If ``abort`` is set by the time the compute gate is free, nothing is
        decoded and :class:`~core.errors.Interrupted` is raised (a quick stop).
        ``previous_transcript`` (the last transcript of this window's audio) is for speculative engines; ignored here.
        """
        with COMPUTE_GATE:
            if abort is not None and abort.is_set():
                raise Interrupted("Recognition was stopped.")
            try:
                return self._transcribe(audio, prompt, language)
            except (RuntimeError, MemoryError) as exc:  # CTranslate2: "mkl_malloc: failed to allocate memory"
                if not out_of_memory(exc):
                    raise
                from ..models.store import memory_message

                logger.exception("decoding with %s ran out of memory", self.name)
                raise ModelMemoryError(memory_message(self.model_name, "whisper-ct2", "run")) from exc

    def text_log_probs(self, audio: np.ndarray, text: str, language: str | None = None) -> list[float]:
        """The log-probability of each token of ``text`` as this model hears it in ``audio`` (one
        window, ≤ 30 s): forced, without a prompt, as Whisper scores a decode's words. Reuses the
        encoding of this engine's last decode where that was of the same ``audio`` array."""
        with COMPUTE_GATE:
            encoding = self.model.first_encoding if self._decoded is audio else None
            if encoding is None:
                encoding = self.model.encode_window(audio)
                self._decoded = audio
            return self.model.text_log_probs(encoding, text, (language if self.multilingual else "en") or "en")

    def _transcribe(self, audio: np.ndarray, prompt: str, language: str | None) -> Hypothesis:
        import time

        t0 = time.perf_counter()
        self._decoded = audio  # (its first window's encoding stays with the model: text_log_probs)
        heard_until = [0.0]  # end of the last word so far (window seconds)
        window_s = audio.shape[0] / 16000
        # a second pass only for a real tail: at least TAIL_S of audio after the last word
        self.model.another_pass = (None if not self.one_pass
                                   else lambda: window_s - heard_until[0] >= TAIL_S)
        self.model.token_limit = (token_limit(window_s, language if self.multilingual else "en")
                                  if self.stop_runaways else None)
        segments, _info = self.model.transcribe(
            audio,
            language=(language if self.multilingual else "en") or None,
            beam_size=1,
            best_of=1,
            temperature=0.0,
            condition_on_previous_text=False,
            initial_prompt=prompt or None,
            word_timestamps=True,
            vad_filter=False,
            without_timestamps=False,
        )
        words: list[Word] = []
        texts: list[str] = []
        try:
            for seg in segments:
                texts.append(seg.text)
                for w in seg.words or ():
                    words.append(Word(w.start, w.end, w.word, w.probability))
                    heard_until[0] = max(heard_until[0], w.end)
        except SecondPass:
            pass
        return Hypothesis(words, "".join(texts).strip(), time.perf_counter() - t0, runaway=self.model.runaway)


# The most tokens a second of English speech holds in a decode, and a few more for any window. Fast
# speech is about 4.5 words a second, 1.3 tokens a word, with two timestamps for every few seconds:
# under 7 tokens a second; numbers and names spelt in pieces take more, hence the margin. Other
# languages (characters or bytes as tokens) get twice the rate, which for most windows leaves
# faster-whisper's own limit (224) in force.
TOKENS_PER_S_ENGLISH = 10.0
TOKENS_PER_S_OTHER = 20.0
TOKENS_EXTRA = 16


def token_limit(window_s: float, language: str | None) -> int:
    """The most tokens a decode of ``window_s`` seconds of speech in ``language`` (None: not known
    yet) can hold; a decode still going past them is a loop (``Hypothesis.runaway``)."""
    rate = TOKENS_PER_S_ENGLISH if language == "en" else TOKENS_PER_S_OTHER
    return int(math.ceil(rate * window_s)) + TOKENS_EXTRA


# A window's audio after the last word is decoded again (a second pass) only when it is at least
# this long: a shorter tail holds at most a word that the next update hears anyway.
TAIL_S = 1.0
