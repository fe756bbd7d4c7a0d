"""faster-whisper, the library behind the baseline speech engine, run the way streaming needs.

The only file that overrides faster-whisper's internals: :func:`one_pass_model_class` is its
``WhisperModel`` with ``generate_segments`` and ``encode`` (the steps inside ``transcribe``)
replaced, so that a decode can stop after the first pass over a window and the encoder can read
fewer feature frames than Whisper's 3000; with a token limit on the first pass that tells a decode
run away into a loop from one that ended; and with a text's token log-probabilities read from a
window's encoding (CTranslate2's forced alignment), to tell which of two decodes a model finds
likelier. When to stop, how many frames to read and how many tokens the audio can hold are decided
by :class:`~core.asr.engine.FasterWhisperEngine`, which sets the hooks.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


class SecondPass(Exception):
    """Raised by the model instead of encoding the same window again (``another_pass`` said no)."""


def one_pass_model_class():
    """faster-whisper's model, able to stop after the first pass over a window.

    When a window's last segment does not end with a single timestamp, faster-whisper seeks to
    the end of the last word and runs the encoder and decoder again on the rest of the window
    (long-form transcription). In streaming those extra passes re-read tails of a fraction of a
    second that the next update decodes anyway, and cost as much as the first. With
    ``another_pass`` set, the encoder refuses a further pass (raising :class:`SecondPass`) unless
    it says the tail is long enough (so nothing is lost at the end of a stream); the segments of
    the first pass were already handed out by then. With ``encoder_frames`` set, the encoder reads
    only that many of a segment's feature frames.

    With ``token_limit`` set, the first pass stops soon after that many tokens (greedy decoding is
    causal: the tokens up to there are the unlimited decode's own), and where it made that many,
    ``runaway`` is set and no further pass is made: a decode still going past all the tokens its
    audio can hold is a loop (``words, words, words, …`` until faster-whisper's 224 tokens), and the
    tokens saved are seconds of CPU on two cores.
    """
    from faster_whisper import WhisperModel

    class OnePassWhisperModel(WhisperModel):
        another_pass = None  # None: every pass faster-whisper makes; else asked before each further one
        encoder_frames = None  # None: Whisper's 3000 frames; else features → how many frames to read
        _passes = 0
        token_limit = None  # None: faster-whisper's own limit; else at least this many tokens in the first pass
        runaway = False  # the last decode's first pass stopped at token_limit, not at its end

        first_encoding = None  # the encoder's output for the first pass of the last decode (text_log_probs)

        def generate_segments(self, features, tokenizer, options, log_progress, encoder_output=None):
            # the first pass may reuse the encoding made to detect the language
            self._passes = 0 if encoder_output is None else 1
            self.runaway = False
            self.first_encoding = encoder_output
            yield from super().generate_segments(features, tokenizer, options, log_progress, encoder_output)

        def generate_with_fallback(self, encoder_output, prompt, tokenizer, options):
            first = self._passes <= 1
            if first:
                self.runaway = False
            # CTranslate2 (4.8) can stop a Whisper decode with timestamps after as few as half of the new tokens
            # faster-whisper's max_new_tokens asks for: asking twice the limit stops at the limit or later
            limit = 2 * self.token_limit if first and self.token_limit is not None else None
            if limit is not None and len(prompt) + limit < self.max_length:
                options = dataclasses.replace(options, max_new_tokens=limit)
            else:
                limit = None
            result, *rest = super().generate_with_fallback(encoder_output, prompt, tokenizer, options)
            tokens = result.sequences_ids[0]
            if limit is not None and len(tokens) >= self.token_limit:
                self.runaway = True
            return (result, *rest)

        def encode(self, features: np.ndarray):
            if self._passes and (self.runaway or (self.another_pass is not None and not self.another_pass())):
                raise SecondPass()
            self._passes += 1
            if self.encoder_frames is not None:
                features = features[..., :self.encoder_frames(features)]
            output = super().encode(features)
            if self._passes == 1:
                self.first_encoding = output
            return output

        def encode_window(self, audio: np.ndarray):
            """The encoder's output for ``audio`` (≤ 30 s) as a decode's first pass reads it."""
            from faster_whisper.audio import pad_or_trim

            features = self.feature_extractor(audio)  # (with one frame of padding, which a decode leaves out)
            self._passes = 0
            self.encode(pad_or_trim(features[:, :min(features.shape[-1] - 1, 3000)]))
            return self.first_encoding

        def text_log_probs(self, encoding, text: str, language: str | None) -> list[float]:
            """The log-probability of each of ``text``'s tokens as this model reads them from
            ``encoding`` (a window's :meth:`encode_window`), forced, without a prompt and without
            the end of text: as faster-whisper scores a decode's words."""
            from faster_whisper.tokenizer import Tokenizer

            tokenizer = Tokenizer(self.hf_tokenizer, self.model.is_multilingual, task="transcribe",
                                  language=(language or "en") if self.model.is_multilingual else None)
            tokens = tokenizer.encode(" " + text.strip()) if text.strip() else []
            if not tokens:
                return []
            frames = int(encoding.shape[1]) * 2  # (the alignment's frames; the probabilities do not depend on them)
            result = self.model.align(encoding, tokenizer.sot_sequence, [tokens], frames)
            return [math.log(max(p, 1e-12)) for p in result[0].text_token_probs]

    return OnePassWhisperModel
