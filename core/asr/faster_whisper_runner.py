"""faster-whisper, the library behind the baseline speech engine, run the way streaming needs.

The only file that overrides faster-whisper's internals: :func:`one_pass_model_class` is its
``WhisperModel`` with ``generate_segments`` and ``encode`` (the steps inside ``transcribe``)
replaced, so that a decode can stop after the first pass over a window and the encoder can read
fewer feature frames than Whisper's 3000. When to stop and how many frames to read are decided by
:class:`~core.asr.engine.FasterWhisperEngine`, which sets the two hooks.
"""

from __future__ import annotations

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
    """
    from faster_whisper import WhisperModel

    class OnePassWhisperModel(WhisperModel):
        another_pass = None  # None: every pass faster-whisper makes; else asked before each further one
        encoder_frames = None  # None: Whisper's 3000 frames; else features → how many frames to read
        _passes = 0

        def generate_segments(self, features, tokenizer, options, log_progress, encoder_output=None):
            # the first pass may reuse the encoding made to detect the language
            self._passes = 0 if encoder_output is None else 1
            yield from super().generate_segments(features, tokenizer, options, log_progress, encoder_output)

        def encode(self, features: np.ndarray):
            if self._passes and self.another_pass is not None and not self.another_pass():
                raise SecondPass()
            self._passes += 1
            if self.encoder_frames is not None:
                features = features[..., :self.encoder_frames(features)]
            return super().encode(features)

    return OnePassWhisperModel
